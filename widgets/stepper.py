"""PassStepper: step through a trace's passes in Jupyter.

The frame of every front end (:mod:`widgets.frame`): a timeline of steps with coloured badges
(changed, node delta, parameter-bytes delta, time, failed, findings; a click or the arrow keys
step through it) under a "hide unchanged passes" checkbox; beside it previous / next buttons
and the step's header, the tab bar and the pane of the tab shown. The tabs are the views of
:mod:`widgets.views`' registry: the step's graph (the graph component: diff coloured, before /
after toggle, search, expand / collapse), its IR, IR diff, parameters, shapes and numerics,
and the trace's error map (with a check report) and parameter map, whose cells open their step
with their node selected (``show_node``). The widget holds the state (``index``,
``hide_unchanged``) as traitlets; a tab is rendered when it is shown (a step is a light
descriptor until it is opened).

It takes the cell's whole width: the timeline is a column of 280 px and the step the rest;
where the cell is too narrow for both (under about 850 px), the step goes under the timeline,
which is then shorter.
"""

from __future__ import annotations

import anywidget
import ipywidgets as w
import traitlets

from widgets import views
from widgets.boxes import MAX_BOXES
from widgets.error_map import MAP_CSS
from widgets.frame import FRAME_CSS, STATIC, StepFrame, panel_esm, tabs_esm
from widgets.graph_view import GraphView
from widgets.tables_html import TABLE_CSS

# the frame's layout in a notebook: timeline (280 px) and step (at least 560 px) side by side,
# the step under the timeline where the cell is narrower than both (848 px: the container
# query on the frame's width; the timeline then as wide as the cell, and shorter)
LAYOUT_CSS = """
.pl-frame{container-type:inline-size}
.pl-frame-bar .pl-header{flex:1;min-width:0}
.pl-limit{color:#b3261e;font-size:12px;margin-top:2px}
.pl-frame-bar .widget-button{flex:none}
.pl-frame .pl-timeline{max-height:600px}
@container (max-width: 848px){.pl-frame .pl-timeline{max-height:170px}
.pl-frame .pl-frame-side{flex:1 1 100% !important}}
"""


class Timeline(anywidget.AnyWidget):
    """The steps of a trace with their coloured badges (``rows``: the HTML of
    :func:`views.timeline_row_html` for each step); ``index`` is the current step (a click or
    the arrow keys set it), ``hidden`` the steps not listed."""

    _esm = panel_esm((STATIC / "timeline.js").read_text())
    _css = (
        FRAME_CSS
        + TABLE_CSS
        + ".pl-timeline{font:13px/1.4 system-ui,sans-serif;outline:none;max-height:560px;"
        "overflow:auto;border:1px solid #ddd;padding:2px 0}"
    )
    rows = traitlets.Unicode("").tag(sync=True)
    index = traitlets.Int(0).tag(sync=True)
    hidden = traitlets.List(traitlets.Int()).tag(sync=True)
    key_scope = traitlets.Unicode("focus").tag(sync=True)  # arrow keys only when it has the focus


class TabBar(anywidget.AnyWidget):
    """The tab bar (``html``: :func:`widgets.frame.tab_bar_html`); ``active`` is the key of
    the tab shown (a click sets it)."""

    _esm = panel_esm(tabs_esm())
    _css = FRAME_CSS
    html = traitlets.Unicode("").tag(sync=True)
    active = traitlets.Unicode("").tag(sync=True)


class MapView(anywidget.AnyWidget):
    """A view of the whole trace, such as the error map or the parameter map (``html``:
    :mod:`widgets.error_map`); ``current`` is the step whose row is marked, ``pick`` what was
    clicked (``step``, ``node``)."""

    _esm = panel_esm((STATIC / "layer_map.js").read_text())
    _css = MAP_CSS
    html = traitlets.Unicode("").tag(sync=True)
    current = traitlets.Int(-1).tag(sync=True)
    pick = traitlets.Dict().tag(sync=True)


class PassStepper(StepFrame, w.VBox):
    """The timeline of a trace's steps and the current step's views (see the module
    docstring); ``index`` is the current step, ``hide_unchanged`` hides unchanged passes."""

    index = traitlets.Int(0)
    hide_unchanged = traitlets.Bool(False)

    def __init__(self, trace, report=None, max_boxes: int = MAX_BOXES, **kwargs):
        self.max_boxes = max_boxes
        self.graph = GraphView(max_boxes=max_boxes, layout=w.Layout(width="100%"))

        def trace_pane(view):
            pane = MapView()
            pane.observe(lambda change: self._open_pick(change["new"]), "pick")
            return pane

        self._frame_views(trace, report, lambda view: w.HTML(), trace_pane)
        self.timeline = Timeline(rows=self.timeline_rows(), layout=w.Layout(width="100%"))
        self.tab_bar = TabBar(html=self.tab_bar_html(), active=self.views[0].key)
        self.hide_box = w.Checkbox(description="hide unchanged passes", indent=False)
        self.prev_button = w.Button(description="◀ prev", layout=w.Layout(width="80px"))
        self.next_button = w.Button(description="next ▶", layout=w.Layout(width="80px"))
        self.header = w.HTML(layout=w.Layout(flex="1", min_width="0"))
        self.stack = w.Stack(
            children=[self.panes[t] for t in self.tab_names],
            selected_index=0,
            layout=w.Layout(width="100%"),
        )
        bar = w.HBox(
            [self.prev_button, self.next_button, self.header],
            layout=w.Layout(width="100%", align_items="flex-start"),
        )
        bar.add_class("pl-frame-bar")
        side = w.VBox([self.hide_box, self.timeline], layout=w.Layout(flex="0 0 280px"))
        side.add_class("pl-frame-side")
        main = w.VBox(
            [bar, self.tab_bar, self.stack], layout=w.Layout(flex="1 1 560px", min_width="0")
        )
        main.add_class("pl-frame-main")
        frame = w.Box(
            [side, main], layout=w.Layout(width="100%", flex_flow="row wrap", grid_gap="0 8px")
        )
        frame.add_class("pl-frame")
        super().__init__(
            [w.HTML(f"<style>{TABLE_CSS}{LAYOUT_CSS}</style>"), frame],
            layout=w.Layout(width="100%"),
            **kwargs,
        )
        self.prev_button.on_click(lambda _b: self.prev())
        self.next_button.on_click(lambda _b: self.next())
        w.link((self.hide_box, "value"), (self, "hide_unchanged"))
        self.timeline.observe(lambda change: self._on_pick(change["new"]), "index")
        self.tab_bar.observe(lambda change: self._on_tab_key(change["new"]), "active")
        start = views.start_index(trace, first_change=False)
        self._fill_timeline()
        if start != self.index:
            self.index = start
        else:
            self._show()

    # ----- what the frame asks of a toolkit -----------------------------------------------
    def _set_html(self, pane, html: str) -> None:
        pane.value = html

    def _show_pane(self, k: int) -> None:
        self.stack.selected_index = k

    @traitlets.validate("index")
    def _valid_index(self, proposal):
        i = proposal["value"]
        if not 0 <= i < len(self.trace.steps):
            raise traitlets.TraitError(f"no step {i}: the trace has {len(self.trace.steps)}")
        return i

    @traitlets.observe("index")
    def _on_index(self, change) -> None:
        self._show()

    @traitlets.observe("hide_unchanged")
    def _on_hide_change(self, change) -> None:
        self._on_hide()

    def graph_view(self) -> GraphView:
        """A graph view of its own of the current step against its previous one."""
        return GraphView(self.step, self.step.previous, self.report, max_boxes=self.max_boxes)

    def __repr__(self) -> str:
        return f"<PassStepper step {self.index}/{len(self.trace.steps)}: {self.step.name}>"


__all__ = ["GraphView", "MapView", "PassStepper", "TabBar", "Timeline"]
