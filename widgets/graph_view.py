"""GraphView: one step's graph as an anywidget (pan, zoom, search, click for details).

The SVG comes from :func:`widgets.render.graph_svg` (laid out by Graphviz on the Python side,
cached); the browser side (``static/graph_view.js``) only pans, zooms, searches, and reports a
clicked node through the ``selected`` traitlet. Double-clicking a collapsed group expands it:
the front end edits ``collapsed`` and the Python side draws the new view.
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

from widgets import render, views

_STATIC = Path(__file__).parent / "static"


class GraphView(anywidget.AnyWidget):
    """The graph of ``step`` (diff-coloured against ``baseline``); ``selected`` is the clicked
    node's id, ``collapsed`` the collapsed groups (``@name`` for functions)."""

    _esm = _STATIC / "graph_view.js"
    _css = _STATIC / "graph_view.css"

    svg = traitlets.Unicode("").tag(sync=True)
    details = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    collapsed = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(
        self, step, baseline=None, collapsed=None, max_boxes: int = render.MAX_BOXES, **kwargs
    ):
        self.step, self.baseline, self.max_boxes = step, baseline, max_boxes
        if collapsed is None:
            collapsed = render.default_collapsed(step, baseline, max_boxes)
        super().__init__(collapsed=sorted(collapsed), **kwargs)
        self._draw()

    @traitlets.observe("collapsed")
    def _on_collapsed(self, change) -> None:
        self._draw()

    def _draw(self) -> None:
        svg, self.details = views.graph_state(
            self.step, self.baseline, self.collapsed, self.max_boxes
        )
        self.svg = svg
        if self.selected and self.selected not in self.details:
            self.selected = ""

    @property
    def selected_details(self) -> dict:
        """The details of the selected node (empty when nothing is selected)."""
        return self.details.get(self.selected, {})

    def expand(self, group: str) -> None:
        """Show the nodes of a collapsed group (a module path, or ``@function``)."""
        self.collapsed = [g for g in self.collapsed if g != group]

    def collapse(self, group: str) -> None:
        """Draw a group (a module path, or ``@function``) as one box."""
        if group not in self.collapsed:
            self.collapsed = sorted([*self.collapsed, group])

    def __repr__(self) -> str:
        return f"<GraphView #{self.step.index} {self.step.name}: {len(self.details)} boxes>"


__all__ = ["GraphView"]
