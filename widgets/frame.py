"""The frame every front end draws a trace in: a timeline of steps, the current step's header,
a tab bar, and the panes of the views (`widgets.views`, whose registry says which tabs, in
what order, for which steps).

Shared by the HTML report (`widgets.report`), the Jupyter stepper
(`widgets.stepper`) and the Panel app (`widgets.app`):

- the HTML and CSS: `tab_bar_html` (the tab buttons), `FRAME_CSS`
  (`static/frame.css` with `static/timeline.css`), the timeline rows and the header of
  `widgets.views`;
- the tab logic in the page: `plTabs` of `static/frame.js` (the report's script, and the
  tab component `static/tabs.js` of the stepper and the app);
- the state in Python: `StepFrame`, the current step, its tab, which panes are
  rendered (a pane is rendered when its tab is shown), what a click on a trace view's cell
  opens. The stepper and the app only say how their toolkit (ipywidgets, Panel) sets a pane's
  HTML and shows a pane.
"""

from __future__ import annotations

from pathlib import Path

from explorer.summary import summary_row
from widgets import views
from widgets.bounds import RenderLimitError
from widgets.escape import esc

STATIC = Path(__file__).parent / "static"
FRAME_CSS = (STATIC / "frame.css").read_text() + (STATIC / "timeline.css").read_text()


def frame_js() -> str:
    """The frame's script shared by every page (`plTabs`)."""
    return (STATIC / "frame.js").read_text()


def tabs_esm() -> str:
    """The tab component: `static/frame.js` and `static/tabs.js` (Panel's model API)."""
    return frame_js() + "\n" + (STATIC / "tabs.js").read_text()


def panel_esm(source: str) -> str:
    """An ES module written for a Panel JSComponent model (`model.x`, `model.x = v`,
    `model.on("x", f)`: the timeline, the tab bar, the trace views) under a shim of that API
    over an anywidget model (the Jupyter stepper)."""
    if "export function render(" not in source:
        raise RuntimeError("a component's module no longer exports `render`")
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


def tab_bar_html(shown: list[views.View], active: str = "graph") -> str:
    """The buttons of the tab bar of `shown` (`data-tab` a view's key; the one of key
    `active` marked `pl-on`)."""
    on = ' class="pl-on"'
    return "".join(
        f'<button data-tab="{v.key}"{on if v.key == active else ""}>{esc(v.label)}</button>'
        for v in shown
    )


class StepFrame(views.StepNavigation):
    """The state and tab logic of a live front end (the stepper, the Panel app).

    The front end calls `_frame_views` in its `__init__` (which builds a pane per
    view), then sets `tab_bar` (a component with `html` and `active`, a view's key) and
    `graph`; it calls `_show` when the step changes, `_on_tab_key` when the tab
    bar's `active` changes, and implements `_set_html(pane, html)`, `_show_pane(k)`
    and `_fill_timeline`'s `timeline` (with `index` and `hidden`)."""

    def _frame_views(self, trace, report, step_pane, trace_pane) -> None:
        """Which views (from the registry), and a pane for each: `step_pane(view)` and
        `trace_pane(view)` (a component with `html`, `current` and `pick`) make them;
        the graph view's pane is `self.graph`."""
        self.trace, self.report = trace, report
        self._rows: dict[int, dict] = {}  # the steps' badges, made when first shown
        self._rendered: set[str] = set()
        self.views = views.views_for(trace, report)
        self.tab_names = tuple(v.title for v in self.views)
        self.panes = {}
        self.map_views = {}
        for v in self.views:
            if v.scope == "graph":
                self.panes[v.title] = self.graph
            elif v.scope == "step":
                self.panes[v.title] = step_pane(v)
            else:
                self.map_views[v.title] = self.panes[v.title] = trace_pane(v)

    def _row(self, step) -> dict:
        """What the badges of `step` read (`explorer.summary.summary_row` without the op
        counts: no diff, no graph model made for a step not shown)."""
        row = self._rows.get(step.index)
        if row is None:
            row = self._rows[step.index] = summary_row(step, ops=False)
        return row

    def timeline_rows(self) -> str:
        """The timeline's rows (HTML)."""
        return "".join(
            views.timeline_row_html(s, self._row(s), self.report) for s in self.trace.steps
        )

    def tab_bar_html(self) -> str:
        """The tab bar's buttons."""
        return tab_bar_html(self.views, self.views[0].key if self.views else "")

    # ----- state --------------------------------------------------------------------------
    @property
    def step(self):
        """The current step."""
        return self.trace.steps[self.index]

    @property
    def tab(self) -> str:
        """The title of the tab shown."""
        key = self.tab_bar.active
        return next((v.title for v in self.views if v.key == key), self.tab_names[0])

    @tab.setter
    def tab(self, title: str) -> None:
        if title not in self.tab_names:
            raise ValueError(f"no tab {title!r}; tabs: {', '.join(self.tab_names)}")
        self.tab_bar.active = self.views[self.tab_names.index(title)].key

    def show_node(self, step: int, node: str = "") -> None:
        """Show step `step` in the graph tab, with the node of id `node` selected."""
        self.index = step
        self.tab = "graph"
        if node:
            self.graph.selected = node

    # ----- what the front end calls -------------------------------------------------------
    def _open_pick(self, pick: dict) -> None:
        """A click on a trace view's cell (`pick`: `step`, `node`) opens its step."""
        if isinstance(pick, dict) and isinstance(pick.get("step"), int):
            if 0 <= pick["step"] < len(self.trace.steps):
                self.show_node(pick["step"], str(pick.get("node") or ""))

    def _on_tab_key(self, key: str) -> None:
        k = next((k for k, v in enumerate(self.views) if v.key == key), 0)
        self._show_pane(k)
        self._render_tab(self.tab_names[k])

    def _on_pick(self, new: int) -> None:
        if new != self.index and 0 <= new < len(self.trace.steps):
            self.index = new

    def _on_hide(self) -> None:
        self._fill_timeline()
        self.index = views.nearest_index(self.visible, self.index)
        self._update_buttons()

    def _fill_timeline(self) -> None:
        listed = set(self.visible)
        self.timeline.hidden = [s.index for s in self.trace.steps if s.index not in listed]

    def _update_buttons(self) -> None:
        self.prev_button.disabled = views.prev_index(self.visible, self.index) is None
        self.next_button.disabled = views.next_index(self.visible, self.index) is None

    def _show(self) -> None:
        s = self.step
        self.timeline.index = s.index
        self._set_html(self.header, views.header_html(s, self._row(s), self.report))
        self._update_buttons()
        self._rendered = set()
        self._render_tab(self.tab)

    def _render_tab(self, title: str) -> None:
        """Render the pane of `title` for the current step (once per step)."""
        if title in self._rendered:
            return
        self._rendered.add(title)
        view = self.views[self.tab_names.index(title)]
        s = self.step
        if view.scope == "graph":
            try:
                self.graph.show(s, s.previous, self.report)
            except RenderLimitError as e:  # said in the view, not raised from a step change
                clear = getattr(self.graph, "clear", None)
                if clear is not None:
                    clear()
                head = views.header_html(s, self._row(s), self.report)
                note = f'<div class="pl-limit">graph not shown: {esc(str(e))}</div>'
                self._set_html(self.header, head + note)
        elif view.scope == "trace":
            pane = self.map_views[title]
            if not pane.html:
                pane.html = views.trace_html(view, self.trace, self.report)
            pane.current = self.index
        else:
            self._set_html(self.panes[title], views.tab_html(s, title, self.report))


__all__ = ["FRAME_CSS", "StepFrame", "frame_js", "panel_esm", "tab_bar_html", "tabs_esm"]
