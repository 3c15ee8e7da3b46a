"""The error map and the parameter map in the Panel app: the map component
(``static/layer_map.js``, the same as the Jupyter stepper's :class:`~widgets.stepper.MapView`)
as a Panel JSComponent. Kept out of :mod:`widgets.app`, which holds the app and its server."""

from __future__ import annotations

from pathlib import Path

import param
from panel.custom import JSComponent

from widgets.error_map import MAP_CSS


class MapPane(JSComponent):
    """A map of a trace (``html``: :mod:`widgets.error_map`); ``current`` is the step whose
    row is marked, ``pick`` what was clicked (``step``, ``node``)."""

    html = param.String(default="")
    current = param.Integer(default=-1)
    pick = param.Dict(default={})

    _esm = Path(__file__).parent / "static" / "layer_map.js"
    _stylesheets = [MAP_CSS + ":host{display:block;width:100%}"]


__all__ = ["MapPane"]
