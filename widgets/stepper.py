"""PassStepper: step through a trace's passes in Jupyter.

A timeline of steps with coloured badges (changed, node delta, parameter-bytes delta, time,
failed, findings; a click or the arrow keys step through it), a "hide unchanged passes"
checkbox, previous / next buttons, and tabs for the step's graph (the graph component: diff
coloured, before / after toggle, search, expand / collapse), its IR, IR diff, parameters, shapes
and numerics, and the trace's error map (with a check report) and parameter map, whose cells
open their step with their node selected (``show_node``). The widget holds the state
(``index``, ``hide_unchanged``) as traitlets; a tab is rendered when it is shown (a step is a
light descriptor until it is opened).
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import ipywidgets as w
import traitlets

from widgets import views
from widgets.boxes import MAX_BOXES
from widgets.error_map import MAP_CSS, LayerMaps, MapNavigation
from widgets.graph_view import GraphView
from widgets.tables_html import TABLE_CSS
from widgets.views import TABS

_STATIC = Path(__file__).parent / "static"


def _panel_esm(name: str) -> str:
    """static/``name`` (written for a Panel JSComponent model: ``model.x``, ``model.x = v``,
    ``model.on("x", f)``: the timeline, the layer maps) under a shim of that API over an
    anywidget model."""
    source = (_STATIC / name).read_text()
    if "export function render(" not in source:
        raise RuntimeError(f"static/{name} no longer exports `render`")
    return (
        source.replace("export function render(", "function renderPanel(", 1)
        + """
export default { render({ model, el }) {
  const shim = new Proxy({}, {
    get(_t, k) { return k === "on" ? (name, f) => model.on("change:" + name, f) : model.get(k); },
    set(_t, k, v) { model.set(k, v); model.save_changes(); return true; },
  });
  return renderPanel({ model: shim, el });
} };
"""
    )


class Timeline(anywidget.AnyWidget):
    """The steps of a trace with their coloured badges (``rows``: the HTML of
    :func:`views.timeline_row_html` for each step); ``index`` is the current step (a click or
    the arrow keys set it), ``hidden`` the steps not listed."""

    _esm = _panel_esm("timeline.js")
    _css = (
        (_STATIC / "timeline.css").read_text()
        + TABLE_CSS
        + ".pl-timeline{font:13px/1.4 system-ui,sans-serif;outline:none;max-height:560px;"
        "overflow:auto;border:1px solid #ddd;padding:2px 0}"
    )
    rows = traitlets.Unicode("").tag(sync=True)
    index = traitlets.Int(0).tag(sync=True)
    hidden = traitlets.List(traitlets.Int()).tag(sync=True)
    key_scope = traitlets.Unicode("focus").tag(sync=True)  # arrow keys only when it has the focus


class MapView(anywidget.AnyWidget):
    """The error map or the parameter map of a trace (``html``: :mod:`widgets.error_map`);
    ``current`` is the step whose row is marked, ``pick`` what was clicked (``step``,
    ``node``)."""

    _esm = _panel_esm("layer_map.js")
    _css = MAP_CSS
    html = traitlets.Unicode("").tag(sync=True)
    current = traitlets.Int(-1).tag(sync=True)
    pick = traitlets.Dict().tag(sync=True)


class PassStepper(MapNavigation, views.StepNavigation, w.VBox):
    """The timeline of a trace's steps and the current step's views (see the module
    docstring); ``index`` is the current step, ``hide_unchanged`` hides unchanged passes."""

    index = traitlets.Int(0)
    hide_unchanged = traitlets.Bool(False)

    def __init__(self, trace, report=None, max_boxes: int = MAX_BOXES, **kwargs):
        self.trace = trace
        self.report = report
        self.max_boxes = max_boxes
        self._rows = {r["step"]: r for r in trace.summary()}
        self._rendered: set[str] = set()
        self.timeline = Timeline(
            rows="".join(
                views.timeline_row_html(st, self._rows[st.index], report) for st in trace.steps
            ),
            layout=w.Layout(width="330px"),
        )
        self.hide_box = w.Checkbox(description="hide unchanged passes", indent=False)
        self.prev_button = w.Button(description="◀ prev", layout=w.Layout(width="80px"))
        self.next_button = w.Button(description="next ▶", layout=w.Layout(width="80px"))
        self.header = w.HTML()
        self.graph = GraphView(max_boxes=max_boxes, layout=w.Layout(width="100%"))
        self.panes = {
            "graph": self.graph,
            **{tab: w.HTML() for tab in TABS[1:]},
        }
        self.maps = LayerMaps(trace, report)
        self.map_views = {t: MapView() for t in self.maps.titles}
        for view in self.map_views.values():
            view.observe(lambda change: self._open_pick(change["new"]), "pick")
        self.tab_names = (*TABS, *self.map_views)
        self.tabs = w.Tab(
            children=[*(self.panes[t] for t in TABS), *self.map_views.values()],
            titles=self.tab_names,
        )
        controls = w.VBox(
            [w.HBox([self.prev_button, self.next_button]), self.hide_box, self.timeline]
        )
        super().__init__(
            [
                w.HTML(f"<style>{TABLE_CSS}</style>"),
                w.HBox(
                    [
                        controls,
                        w.VBox([self.header, self.tabs], layout=w.Layout(flex="1", width="100%")),
                    ]
                ),
            ],
            **kwargs,
        )
        self.prev_button.on_click(lambda _b: self.prev())
        self.next_button.on_click(lambda _b: self.next())
        w.link((self.hide_box, "value"), (self, "hide_unchanged"))
        self.timeline.observe(self._on_pick, "index")
        self.tabs.observe(self._on_tab, "selected_index")
        start = views.start_index(trace, first_change=False)
        self._fill_timeline()
        if start != self.index:
            self.index = start
        else:
            self._show()

    # ----- state --------------------------------------------------------------------------
    @property
    def step(self):
        """The current step."""
        return self.trace.steps[self.index]

    @property
    def tab(self) -> str:
        """The name of the tab shown."""
        return self.tab_names[self.tabs.selected_index or 0]

    @tab.setter
    def tab(self, name: str) -> None:
        self.tabs.selected_index = self.tab_names.index(name)

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
    def _on_hide(self, change) -> None:
        self._fill_timeline()
        self.index = views.nearest_index(self.visible, self.index)

    # ----- rendering ----------------------------------------------------------------------
    def _fill_timeline(self) -> None:
        listed = set(self.visible)
        self.timeline.hidden = [s.index for s in self.trace.steps if s.index not in listed]

    def _on_pick(self, change) -> None:
        if change["new"] != self.index and 0 <= change["new"] < len(self.trace.steps):
            self.index = change["new"]

    def _on_tab(self, change) -> None:
        self._render_tab(self.tab_names[change["new"]])

    def _show(self) -> None:
        self.timeline.index = self.index
        s = self.step
        self.header.value = views.header_html(s, self._rows[s.index], self.report)
        self.prev_button.disabled = views.prev_index(self.visible, s.index) is None
        self.next_button.disabled = views.next_index(self.visible, s.index) is None
        self._rendered = set()
        self._render_tab(self.tab)

    def _render_tab(self, tab: str) -> None:
        if tab in self._rendered:
            return
        self._rendered.add(tab)
        s, prev = self.step, self.step.previous
        if tab == "graph":
            self.graph.show(s, prev, self.report)
        elif not self._render_map(tab):
            self.panes[tab].value = views.tab_html(s, tab, self.report)

    def graph_view(self) -> GraphView:
        """A graph view of its own of the current step against its previous one."""
        return GraphView(self.step, self.step.previous, self.report, max_boxes=self.max_boxes)

    def __repr__(self) -> str:
        return f"<PassStepper step {self.index}/{len(self.trace.steps)}: {self.step.name}>"


__all__ = ["GraphView", "MapView", "PassStepper", "Timeline"]
