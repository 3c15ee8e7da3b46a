"""PassStepper: step through a trace's passes in Jupyter.

A timeline of steps with badges (a Select: arrow keys step through it), a "hide unchanged
passes" checkbox, previous / next buttons, and tabs for the step's before / after graphs side
by side, its IR diff, parameters, shapes and numerics. The widget holds the state (``index``,
``hide_unchanged``) as traitlets and renders with :mod:`widgets.render`; a tab is rendered when
it is shown (a step is a light descriptor until it is opened).
"""

from __future__ import annotations

import html

import ipywidgets as w
import traitlets

from widgets import render, views
from widgets.graph_view import GraphView
from widgets.views import TABS

_GRAPH_BOX = (
    "<div class='pl-stepper-graph' style='overflow:auto;max-height:70vh;border:1px solid #eee'>"
    "<div style='font:12px sans-serif;color:#555;padding:2px 4px'>{title}</div>{svg}</div>"
)


class PassStepper(views.StepNavigation, w.VBox):
    """The timeline of a trace's steps and the current step's views (see the module
    docstring); ``index`` is the current step, ``hide_unchanged`` hides unchanged passes."""

    index = traitlets.Int(0)
    hide_unchanged = traitlets.Bool(False)

    def __init__(self, trace, report=None, max_boxes: int = render.MAX_BOXES, **kwargs):
        self.trace = trace
        self.report = report
        self.max_boxes = max_boxes
        self._rows = {r["step"]: r for r in trace.summary()}
        self._rendered: set[str] = set()
        self.timeline = w.Select(rows=14, layout=w.Layout(width="360px"))
        self.hide_box = w.Checkbox(description="hide unchanged passes", indent=False)
        self.prev_button = w.Button(description="◀ prev", layout=w.Layout(width="80px"))
        self.next_button = w.Button(description="next ▶", layout=w.Layout(width="80px"))
        self.header = w.HTML()
        self.before_view = w.HTML(layout=w.Layout(width="50%"))
        self.after_view = w.HTML(layout=w.Layout(width="50%"))
        self.panes = {
            "graph": w.HBox([self.before_view, self.after_view]),
            **{tab: w.HTML() for tab in TABS[1:]},
        }
        self.tabs = w.Tab(children=[self.panes[t] for t in TABS], titles=TABS)
        controls = w.VBox(
            [w.HBox([self.prev_button, self.next_button]), self.hide_box, self.timeline]
        )
        super().__init__(
            [
                w.HTML(
                    f"<style>{render.TABLE_CSS}"
                    ".pl-stepper-graph svg{max-width:100%;height:auto}</style>"
                ),
                w.HBox([controls, w.VBox([self.header], layout=w.Layout(flex="1"))]),
                self.tabs,
            ],
            **kwargs,
        )
        self.prev_button.on_click(lambda _b: self.prev())
        self.next_button.on_click(lambda _b: self.next())
        w.link((self.hide_box, "value"), (self, "hide_unchanged"))
        self.timeline.observe(self._on_pick, "value")
        self.tabs.observe(self._on_tab, "selected_index")
        start = views.start_index(trace)
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
    def _label(self, i: int) -> str:
        return views.timeline_label(self.trace, self._rows[i], self.report)

    def _fill_timeline(self) -> None:
        self.timeline.unobserve(self._on_pick, "value")
        self.timeline.options = [(self._label(i), i) for i in self.visible]
        self.timeline.value = self.index if self.index in self.visible else None
        self.timeline.observe(self._on_pick, "value")

    def _on_pick(self, change) -> None:
        if change["new"] is not None:
            self.index = change["new"]

    def _on_tab(self, change) -> None:
        self._render_tab(TABS[change["new"]])

    def _show(self) -> None:
        if self.timeline.value != self.index and self.index in self.visible:
            self.timeline.unobserve(self._on_pick, "value")
            self.timeline.value = self.index
            self.timeline.observe(self._on_pick, "value")
        s = self.step
        self.header.value = views.header_html(s, self._rows[s.index], self.report)
        self.prev_button.disabled = views.prev_index(self.visible, s.index) is None
        self.next_button.disabled = views.next_index(self.visible, s.index) is None
        self._rendered = set()
        self._render_tab(TABS[self.tabs.selected_index or 0])

    def _render_tab(self, tab: str) -> None:
        if tab in self._rendered:
            return
        self._rendered.add(tab)
        s, prev = self.step, self.step.previous
        if tab == "graph":
            if prev is not None:
                title = f"before: #{prev.index} {html.escape(prev.name)}"
                self.before_view.value = _GRAPH_BOX.format(
                    title=title, svg=render.graph_svg(prev, None, None, self.max_boxes)
                )
            else:
                self.before_view.value = "<p>(no previous step)</p>"
            title = f"after: #{s.index} {html.escape(s.name)}"
            self.after_view.value = _GRAPH_BOX.format(
                title=title, svg=render.graph_svg(s, prev, None, self.max_boxes)
            )
        else:
            self.panes[tab].value = views.tab_html(s, tab, self.report)

    def graph_view(self) -> GraphView:
        """An interactive graph of the current step against its previous one."""
        return GraphView(self.step, self.step.previous, max_boxes=self.max_boxes)

    def __repr__(self) -> str:
        return f"<PassStepper step {self.index}/{len(self.trace.steps)}: {self.step.name}>"


__all__ = ["GraphView", "PassStepper"]
