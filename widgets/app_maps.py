"""The Panel app's components (Panel JSComponents), kept out of `widgets.app`, which holds
the app and its server: the graph component (`GraphPane`), the timeline
(`Timeline`), the tab bar (`TabBar`) and a view of the whole trace such as the
error map or the parameter map (`MapPane`). Each runs the same script as its Jupyter
twin of `widgets.stepper` (`static/timeline.js`, `static/tabs.js`,
`static/layer_map.js`) and the same graph component as the report."""

from __future__ import annotations

import param
from panel.custom import JSComponent

from widgets.boxes import MAX_BOXES
from widgets.error_map import MAP_CSS
from widgets.frame import FRAME_CSS, STATIC, tabs_esm
from widgets.graph_view import GraphState, graph_css, graph_data, graph_panel_esm, selected_stats
from widgets.tables_html import TABLE_CSS

# a component's host: as wide as its column. No ``display`` here: Bokeh hides a component
# (``visible=False``: a tab not shown) with ``:host{display:none}`` in a style sheet before
# these, which a ``display`` of ours would override (the graph then stayed on screen above
# the tab shown)
_HOST = ":host{width:100%}"


class GraphPane(GraphState, JSComponent):
    """A step's graph in the app: the graph component (diff-coloured against the previous
    step, before / after toggle, search, expand / collapse, details drawer). `selected` is
    the selected node's id, `collapsed` the collapsed groups, `mode` the side shown."""

    data = param.Dict(default={})
    selected = param.String(default="")
    query = param.String(default="")
    collapsed = param.List(default=[], item_type=str)
    mode = param.String(default="after")
    height = param.String(default="calc(100vh - 190px)")
    stats = param.Dict(default={})  # the selected weight's statistics, by id

    _esm = graph_panel_esm()
    _stylesheets = [graph_css() + _HOST]

    def __init__(self, max_boxes: int = MAX_BOXES, **params):
        self.max_boxes = max_boxes
        self.step = self.baseline = None
        super().__init__(**params)

    @param.depends("selected", "mode", watch=True)
    def _send_stats(self) -> None:
        self.stats = selected_stats(self)

    def show(self, step, baseline=None, report=None) -> None:
        """Draw `step` against `baseline` in its default view state."""
        self.step, self.baseline = step, baseline
        data = graph_data(step, baseline, report, self.max_boxes, stats=False)
        self._details = None
        self.visible = True
        self.param.update(
            selected="", mode="after", collapsed=list(data["after"]["collapsed"]), data=data
        )

    def clear(self) -> None:
        """Show nothing (a step whose graph is over its budget: the frame says why)."""
        self.step = self.baseline = None
        self._details = None
        self.param.update(selected="", data={})
        self.visible = False  # the browser keeps the last drawing otherwise


class Timeline(JSComponent):
    """The steps of a trace with their badges (`rows`: `views.timeline_row_html` of
    each step); `index` is the current step (a click or the arrow keys set it), `hidden` the
    steps not listed."""

    rows = param.String(default="")
    index = param.Integer(default=0)
    hidden = param.List(default=[], item_type=int)

    _esm = STATIC / "timeline.js"
    _stylesheets = [
        FRAME_CSS
        + TABLE_CSS
        + ".pl-timeline{font:13px/1.4 system-ui,sans-serif;outline:none;"
        "max-height:calc(100vh - 130px);overflow:auto;border:1px solid #ddd;padding:2px 0}"
    ]


class TabBar(JSComponent):
    """The tab bar (`html`: `widgets.frame.tab_bar_html`); `active` is the key of
    the tab shown (a click sets it)."""

    html = param.String(default="")
    active = param.String(default="")

    _esm = tabs_esm()
    _stylesheets = [FRAME_CSS + _HOST]


class MapPane(JSComponent):
    """A view of the whole trace (`html`: `widgets.error_map`'s maps); `current` is
    the step whose row is marked, `pick` what was clicked (`step`, `node`)."""

    html = param.String(default="")
    current = param.Integer(default=-1)
    pick = param.Dict(default={})

    _esm = STATIC / "layer_map.js"
    _stylesheets = [MAP_CSS + _HOST]


__all__ = ["GraphPane", "MapPane", "TabBar", "Timeline"]
