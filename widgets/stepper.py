"""PassStepper: step through a trace's passes in Jupyter.

The frame of every front end (`widgets.frame`): a timeline of steps with coloured badges
(changed, node delta, parameter-bytes delta, time, failed, findings; a click or the arrow keys
step through it) under a "hide unchanged passes" checkbox; beside it previous / next buttons
and the step's header, the tab bar and the pane of the tab shown. The tabs are the views of
`widgets.views`' registry: the step's graph (the graph component: diff coloured, before /
after toggle, search, expand / collapse), its IR, IR diff, parameters, shapes and numerics,
and the trace's error map (with a check report) and parameter map, whose cells open their step
with their node selected (`show_node`). It opens on the step the report and the Panel app
open on (the failed pass, else the check report's first finding, else the first pass that
changed the module: `widgets.views.start_index`). The widget holds the state (`index`,
`hide_unchanged`) as traitlets; a tab is rendered when it is shown (a step is a light
descriptor until it is opened).

It takes the cell's whole width: the timeline is a column of 280 px and the step the rest;
where the cell is too narrow for both (under about 850 px), the step goes under the timeline,
which is then shorter.

`stepper.show(trace)` puts another trace in the same widget, where it is shown, keeping the
step (the same place, when it holds a pass of the same name) and the selected node (when the
new step has a node of that id). For a re-run (`new = old.rerun(...)`: `new.rerun_of`,
`new.rerun_from`), the graph tab of a step recorded anew has the old run's step beside the
new one, each with its own check verdict and findings (`widgets.rerun_view`; the
`side_by_side` checkbox hides it). `trace.stepper()` of a re-run (`stepper_for`)
shows it in the stepper of the same line of runs that was displayed last, and returns that
stepper, so re-running a cell shows the fix where the old run was; a stepper never displayed,
or closed, is not reused: then it is a new one.
"""

from __future__ import annotations

import itertools
import weakref

import anywidget
import ipywidgets as w
import traitlets

from widgets import rerun_view, views
from widgets.boxes import MAX_BOXES
from widgets.error_map import MAP_CSS
from widgets.frame import FRAME_CSS, STATIC, StepFrame, panel_esm, tabs_esm
from widgets.graph_view import GraphView
from widgets.rerun_view import CAPTION_CSS
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
.pl-runs-bar{align-items:center;gap:12px}
.pl-run-columns{container-type:inline-size}
.pl-run-columns .plg-details{width:clamp(180px,30%,260px)}
@container (max-width: 1040px){.pl-run-old-column .plg-details.plg-open{display:none}}
@container (max-width: 848px){.pl-frame .pl-timeline{max-height:170px}
.pl-frame .pl-frame-side{flex:1 1 100% !important}}
"""


class Timeline(anywidget.AnyWidget):
    """The steps of a trace with their coloured badges (`rows`: the HTML of
    `views.timeline_row_html` for each step); `index` is the current step (a click or
    the arrow keys set it), `hidden` the steps not listed."""

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
    """The tab bar (`html`: `widgets.frame.tab_bar_html`); `active` is the key of
    the tab shown (a click sets it)."""

    _esm = panel_esm(tabs_esm())
    _css = FRAME_CSS
    html = traitlets.Unicode("").tag(sync=True)
    active = traitlets.Unicode("").tag(sync=True)


class MapView(anywidget.AnyWidget):
    """A view of the whole trace, such as the error map or the parameter map (`html`:
    `widgets.error_map`); `current` is the step whose row is marked, `pick` what was
    clicked (`step`, `node`)."""

    _esm = panel_esm((STATIC / "layer_map.js").read_text())
    _css = MAP_CSS
    html = traitlets.Unicode("").tag(sync=True)
    current = traitlets.Int(-1).tag(sync=True)
    pick = traitlets.Dict().tag(sync=True)


# the steppers displayed (their front end asked for a view), the one displayed last first: what
# ``trace.stepper()`` of a re-run shows itself in (weak: a stepper closed, or dropped, leaves)
_DISPLAYED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ORDER = itertools.count()


class PassStepper(StepFrame, w.VBox):
    """The timeline of a trace's steps and the current step's views (see the module
    docstring); `index` is the current step, `hide_unchanged` hides unchanged passes,
    `side_by_side` shows a re-run's old step beside the new one."""

    index = traitlets.Int(0)
    hide_unchanged = traitlets.Bool(False)
    side_by_side = traitlets.Bool(True)

    def __init__(self, trace, report=None, max_boxes: int = MAX_BOXES, **kwargs):
        self.max_boxes = max_boxes
        self.graph = GraphView(max_boxes=max_boxes, layout=w.Layout(width="100%"))
        self.old_graph: GraphView | None = None  # made when a re-run's old step is first shown
        self._keep_node: tuple[int, str] | None = None  # (step, node) to select when drawn
        self._loading = False  # show() is putting another trace in place
        self._old_shown = None  # the old step drawn beside, and its report
        self.timeline = Timeline(layout=w.Layout(width="100%"))
        self.tab_bar = TabBar()
        self.hide_box = w.Checkbox(description="hide unchanged passes", indent=False)
        self.prev_button = w.Button(description="◀ prev", layout=w.Layout(width="80px"))
        self.next_button = w.Button(description="next ▶", layout=w.Layout(width="80px"))
        self.header = w.HTML(layout=w.Layout(flex="1", min_width="0"))
        self._graph_pane()
        self.stack = w.Stack(layout=w.Layout(width="100%"))
        self._load(trace, report)
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
            [w.HTML(f"<style>{TABLE_CSS}{LAYOUT_CSS}{CAPTION_CSS}</style>"), frame],
            layout=w.Layout(width="100%"),
            **kwargs,
        )
        self.prev_button.on_click(lambda _b: self.prev())
        self.next_button.on_click(lambda _b: self.next())
        w.link((self.hide_box, "value"), (self, "hide_unchanged"))
        w.link((self.beside_box, "value"), (self, "side_by_side"))
        self.timeline.observe(lambda change: self._on_pick(change["new"]), "index")
        self.tab_bar.observe(
            lambda change: None if self._loading else self._on_tab_key(change["new"]), "active"
        )
        self.graph.observe(lambda change: self._sync_node(self.old_graph, change), "selected")
        self._go_to(_opening_index(trace, report))

    def _graph_pane(self) -> None:
        """The graph tab's pane: the graph, and for a re-run a bar saying what was recorded
        anew (with the `side_by_side` checkbox) and the old run's column beside it."""
        self.rerun_note = w.HTML(layout=w.Layout(flex="1", min_width="0"))
        self.beside_box = w.Checkbox(
            value=True, description="old run | new run side by side", indent=False
        )
        self.runs_bar = w.HBox(
            [self.rerun_note, self.beside_box], layout=w.Layout(width="100%", display="none")
        )
        self.runs_bar.add_class("pl-runs-bar")
        self.old_caption = w.HTML()
        self.new_caption = w.HTML(layout=w.Layout(display="none"))
        self.old_column = w.VBox(
            [self.old_caption], layout=w.Layout(flex="1 1 0", min_width="0", display="none")
        )
        # two graphs in one narrow pane (a cell beside JupyterLab's file browser): the old
        # side's details panel gives way (its node still selected, the new side's panel says)
        self.old_column.add_class("pl-run-old-column")
        new_column = w.VBox(
            [self.new_caption, self.graph], layout=w.Layout(flex="1 1 0", min_width="0")
        )
        columns = w.HBox(
            [self.old_column, new_column], layout=w.Layout(width="100%", grid_gap="0 8px")
        )
        columns.add_class("pl-run-columns")
        self.graph_pane = w.VBox([self.runs_bar, columns], layout=w.Layout(width="100%"))

    def _load(self, trace, report) -> None:
        """Take `trace`'s views, panes, tab bar and timeline (the step is chosen after)."""
        old_panes = [p for p in getattr(self, "panes", {}).values() if p is not self.graph]

        def trace_pane(view):
            pane = MapView()
            pane.observe(lambda change: self._open_pick(change["new"]), "pick")
            return pane

        self._frame_views(trace, report, lambda view: w.HTML(), trace_pane)
        self._old_shown = None
        self.stack.children = [
            self.graph_pane if self.panes[t] is self.graph else self.panes[t]
            for t in self.tab_names
        ]
        self.stack.selected_index = 0
        for pane in old_panes:  # the panes of the trace shown before
            pane.close()
        self.timeline.rows = self.timeline_rows()
        self.tab_bar.html = self.tab_bar_html()
        self.tab_bar.active = self.views[0].key

    def _go_to(self, index: int) -> None:
        """Show step `index` (drawn again if it is the current one)."""
        self._fill_timeline()
        if index != self.index:
            self.index = index
        else:
            self._show()

    def show(self, trace, report=None) -> None:
        """Show `trace` in this stepper, in place (the same widget where it is displayed),
        with a check `report` (by default the trace's own, `trace.report`; False for
        none). The step stays where it was when `trace` has a step of the same name at that
        place, else it is the first step a re-run recorded anew (`trace.rerun_from`), else
        where a new stepper opens; the tab and the selected node stay (the node when the
        step has one of that id); "hide unchanged passes" stays."""
        steps = getattr(trace, "steps", None)
        if not isinstance(steps, list) or not steps:
            raise TypeError(
                f"PassStepper.show takes a Trace with steps, not {type(trace).__name__}"
            )
        if report is None:
            report = getattr(trace, "report", None)
        elif report is False:
            report = None
        was, tab, node = self.step, self.tab, self.graph.selected
        if was.index < len(steps) and steps[was.index].name == was.name:
            index = was.index
        else:
            index = _opening_index(trace, report)
        self._loading = True  # nothing drawn until the new trace is all in place
        try:
            self._load(trace, report)
            if tab in self.tab_names:
                self.tab = tab
            self.index = views.nearest_index(self.visible, index)
            self._fill_timeline()
        finally:
            self._loading = False
        self._keep_node = (self.index, node)
        self._show_pane(self.tab_names.index(self.tab))
        self._show()

    # ----- what the frame asks of a toolkit -----------------------------------------------
    def _set_html(self, pane, html: str) -> None:
        pane.value = html

    def _show_pane(self, k: int) -> None:
        self.stack.selected_index = k

    def _render_tab(self, title: str) -> None:
        fresh = title not in self._rendered
        super()._render_tab(title)
        if title == "graph" and fresh:
            keep, kept = self._keep_node, ""
            if keep is not None and keep[0] == self.index:
                self._keep_node, kept = None, keep[1]
                if kept and kept in self.graph.details:
                    self.graph.selected = kept
            self._show_runs(kept)

    # ----- a re-run's old step beside the new one ------------------------------------------
    @property
    def old_step(self):
        """The old run's step beside the current one (a re-run's step recorded anew), or None."""
        return rerun_view.old_step(self.trace, self.index)

    def _show_runs(self, kept: str = "") -> None:
        """The re-run bar, and the old run's step beside the current one when it has one and
        `side_by_side` is on (else the graph alone, as for any trace); `kept`: the node
        selected before `show`, selected on the old side too where it is (the node a fix
        took away is still there)."""
        note = rerun_view.rerun_note_html(self.trace)
        self.rerun_note.value = note
        old = self.old_step
        self.runs_bar.layout.display = None if note else "none"
        self.beside_box.layout.display = None if old is not None else "none"
        if old is None or not self.side_by_side or self.step.kind != old.kind:
            self.old_column.layout.display = "none"
            self.new_caption.layout.display = "none"
            return
        base_report = getattr(rerun_view.rerun_base(self.trace), "report", None)
        self.old_caption.value = rerun_view.run_caption_html("old run", old, base_report, "old")
        self.new_caption.value = rerun_view.run_caption_html("new run", self.step, self.report)
        # shown before the old graph is drawn: drawn while hidden, it would open on a view
        # measured at zero size
        self.old_column.layout.display = None
        self.new_caption.layout.display = None
        if self.old_graph is None:
            self.old_graph = GraphView(max_boxes=self.max_boxes, layout=w.Layout(width="100%"))
            self.old_graph.observe(lambda change: self._sync_node(self.graph, change), "selected")
            self.old_column.children = [self.old_caption, self.old_graph]
        if self._old_shown != (old, base_report):
            self._old_shown = (old, base_report)
            self.old_graph.show(old, old.previous, base_report)
        for node in (kept, self.graph.selected):
            if node and node in self.old_graph.details:
                self.old_graph.selected = node
                break

    def _sync_node(self, other, change) -> None:
        """A node selected on one side is selected on the other, where it has that node."""
        if other is None or self.old_column.layout.display == "none":
            return
        node = change["new"]
        if node and node in other.details and other.selected != node:
            other.selected = node

    @traitlets.observe("side_by_side")
    def _on_side_by_side(self, change) -> None:
        if "graph" in self._rendered:
            self._show_runs()

    # ----- state --------------------------------------------------------------------------
    @traitlets.validate("index")
    def _valid_index(self, proposal):
        i = proposal["value"]
        if not 0 <= i < len(self.trace.steps):
            raise traitlets.TraitError(f"no step {i}: the trace has {len(self.trace.steps)}")
        return i

    @traitlets.observe("index")
    def _on_index(self, change) -> None:
        if not self._loading:
            self._show()

    @traitlets.observe("hide_unchanged")
    def _on_hide_change(self, change) -> None:
        self._on_hide()

    def graph_view(self) -> GraphView:
        """A graph view of its own of the current step against its previous one."""
        return GraphView(self.step, self.step.previous, self.report, max_boxes=self.max_boxes)

    def _repr_mimebundle_(self, **kwargs):
        _DISPLAYED[self] = next(_ORDER)  # a front end shows it: a re-run may show itself here
        return super()._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"<PassStepper step {self.index}/{len(self.trace.steps)}: {self.step.name}>"


def _opening_index(trace, report=None) -> int:
    """The step a stepper opens on: a re-run's first step recorded anew (the pass that was
    fixed) unless a pass failed, else the step the report and the Panel app open on
    (`widgets.views.start_index`: the failed pass, the first finding of `report`, else
    the first pass that changed the module)."""
    start = rerun_view.rerun_start(trace)
    if start is not None and trace.failure is None:
        return start
    return views.start_index(trace, report)


def displayed_stepper(trace) -> PassStepper | None:
    """The stepper of `trace`'s line of re-runs (a trace it re-ran, re-runs of those, the
    trace itself) displayed last and still open, or None."""
    root = rerun_view.family_root(trace)
    live = [
        (order, s)
        for s, order in list(_DISPLAYED.items())
        if s.comm is not None and rerun_view.family_root(s.trace) is root
    ]
    return max(live, key=lambda pair: pair[0])[1] if live else None


def stepper_for(trace, report=None) -> PassStepper:
    """What `trace.stepper()` returns: for a re-run, the stepper of its line of runs that is
    displayed (`displayed_stepper`), now showing `trace` (`show`); otherwise (no
    such stepper: never displayed, or closed; or a trace that is not a re-run) a new one.
    `report` is the one to show (None: none)."""
    if rerun_view.rerun_base(trace) is not None:
        stepper = displayed_stepper(trace)
        if stepper is not None:
            stepper.show(trace, report=False if report is None else report)
            return stepper
    return PassStepper(trace, report=report)


__all__ = [
    "GraphView",
    "MapView",
    "PassStepper",
    "TabBar",
    "Timeline",
    "displayed_stepper",
    "stepper_for",
]
