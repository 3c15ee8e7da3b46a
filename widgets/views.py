"""The views of a step, one registry for the three front ends (the Jupyter
`widgets.stepper.PassStepper`, the Panel app of `widgets.app` and the HTML report of
`widgets.report`), and what their frames share: which steps a timeline lists, where
previous / next go, a step's timeline row and header.

A view is a tab: the graph, the IR, the IR diff, the parameters, the shapes, the numerics, the
error map, the parameter map. Each is one `View` in `VIEWS`: its title, its place
(`order`: the tabs are sorted by it, in every front end), when a trace has it (`when`:
numerics and the error map only with a check report), and how it renders (`html`). Every
front end reads `views_for` and nothing else to know its tabs; their frames (timeline,
header, tab bar, panes) are `widgets.frame`.

Adding a view is one function (in the module that renders it) and one line in the list of
views below (`register(View(...))` after the built-in ones), which every front end then shows::

    def rewrites_html(step, report=None) -> str | None:   # HTML, every name escaped (esc)
        ...                                               # None: nothing for this step
    register(View("rewrites", 35, rewrites_html))          # 35: after the IR diff

(the line must run when `widgets.views` is imported: a view registered in a module nobody
imports is in no front end). Built-in orders: graph 10, IR 20, IR diff 30, params 40, shapes
50, numerics 60, error map 70, param map 80, compile 90 (torch.compile traces).

`scope="step"` (the default) renders one pane per step: `html(step, report)`, returning
None where the view has nothing for that step (the frames then say so). The report renders it
for every step and stores each distinct pane once; the stepper and the app when the tab is
shown. `scope="trace"` renders one pane for the whole trace, `html(trace, report)`, whose
cells carry `data-step` (and `data-node`, a graph node id) to open that step (the maps of
`widgets.error_map`); `when(trace, report)` leaves a view out of a trace (by default
it is always there). Pure functions: no widget state.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from widgets.boxes import step_diff
from widgets.compile_view import compile_html, has_compile_info
from widgets.error_map import error_map_html, param_map_html
from widgets.escape import esc
from widgets.findings import finding_headline, finding_summary, problems_of
from widgets.ir_text import ir_text_html, text_diff_html
from widgets.render import badges_html, step_badges
from widgets.rewrites_html import rewrites_html
from widgets.tables_html import numerics_table_html, param_table_html, shape_table_html

# ===== the registry of views =================================================================

SCOPES = ("graph", "step", "trace")
_KEY = re.compile(r"[a-z0-9][a-z0-9-]*")


def always(trace, report=None) -> bool:
    """`when` of a view every trace has."""
    return True


def with_report(trace, report=None) -> bool:
    """`when` of a view shown only with a check report."""
    return report is not None


@dataclass(frozen=True)
class View:
    """One tab of every front end (see the module docstring). `key` names it in a page
    (`data-tab`, `pl-pane-{key}`): by default its title in lower case, spaces as dashes."""

    title: str
    order: float
    html: Callable[..., str | None] | None = None
    when: Callable[..., bool] = always
    scope: str = "step"
    key: str = ""

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(
                f"view {self.title!r}: scope must be one of {SCOPES}, not {self.scope!r}"
            )
        if self.scope != "graph" and self.html is None:
            raise ValueError(f"view {self.title!r}: a {self.scope} view needs its html function")
        key = self.key or self.title.lower().replace(" ", "-")
        if not _KEY.fullmatch(key):
            raise ValueError(f"view {self.title!r}: key {key!r} is not lower-case a-z, 0-9, -")
        object.__setattr__(self, "key", key)

    @property
    def label(self) -> str:
        """The title on its tab (first letter upper case)."""
        return self.title[:1].upper() + self.title[1:]


VIEWS: dict[str, View] = {}


def register(view: View) -> View:
    """Add `view` to `VIEWS` (replacing the view of the same title); returns it."""
    clash = next((v for v in VIEWS.values() if v.key == view.key and v.title != view.title), None)
    if clash is not None:
        raise ValueError(f"view {view.title!r}: key {view.key!r} is taken by {clash.title!r}")
    graphs = [v for v in VIEWS.values() if v.scope == "graph" and v.title != view.title]
    if view.scope == "graph" and graphs:
        raise ValueError(f"view {view.title!r}: there is one graph view")
    VIEWS[view.title] = view
    return view


def unregister(title: str) -> View:
    """Take the view called `title` out of `VIEWS`; returns it."""
    if title not in VIEWS:
        raise ValueError(f"no view {title!r}; views: {', '.join(VIEWS)}")
    return VIEWS.pop(title)


def views_for(trace, report=None) -> list[View]:
    """The views a front end shows for `trace` (and a check `report`), in tab order."""
    chosen = [v for v in VIEWS.values() if v.when(trace, report)]
    return sorted(chosen, key=lambda v: (v.order, v.title))


def step_html(view: View, step, report=None) -> str | None:
    """The HTML of a step view for `step` (None: nothing to show for it)."""
    if view.scope != "step":
        raise ValueError(f"{view.title!r} is a {view.scope} view, not a view of a step")
    return view.html(step, report)


def trace_html(view: View, trace, report=None) -> str:
    """The HTML of a trace view (one pane for the whole trace)."""
    if view.scope != "trace":
        raise ValueError(f"{view.title!r} is a {view.scope} view, not a view of the trace")
    return view.html(trace, report)


def tab_html(step, tab: str, report=None) -> str:
    """The HTML of the step view called `tab` for `step` (a note where it has nothing)."""
    view = VIEWS.get(tab)
    if view is None or view.scope != "step":
        names = ", ".join(v.title for v in VIEWS.values() if v.scope == "step")
        raise ValueError(f"no tab {tab!r} of a step; tabs: {names} (and graph)")
    text = step_html(view, step, report)
    return NOTHING if text is None else text


NOTHING = "<p class='pl-note'>Nothing to show for this step.</p>"


# ----- the views of a step ----------------------------------------------------------------------


def _ir_diff_html(step, report=None) -> str:
    """The side-by-side diff against the previous step (the IR text for the first step)."""
    prev = step.previous
    if prev is None:
        return ir_text_html(step)
    return text_diff_html(step_diff(prev, step), mode="side-by-side")


def _error_map_html(trace, report) -> str:
    return error_map_html(report.error_map(), report.reference)


def _param_map_html(trace, report=None) -> str:
    return param_map_html(trace.param_map())


register(View("graph", 10, scope="graph"))
register(View("IR", 20, lambda step, report=None: ir_text_html(step)))
register(View("IR diff", 30, _ir_diff_html, key="diff"))
register(View("rewrites", 35, rewrites_html))
register(View("params", 40, lambda step, report=None: param_table_html(step, step.previous)))
register(View("shapes", 50, shape_table_html))
register(View("numerics", 60, numerics_table_html, when=with_report))
register(View("error map", 70, _error_map_html, when=with_report, scope="trace"))
register(View("param map", 80, _param_map_html, scope="trace"))
register(View("compile", 90, compile_html, when=has_compile_info, scope="trace"))

# ===== navigation, the timeline and the header =================================================


def start_index(trace, report=None, first_change: bool = True) -> int:
    """The step a front end opens on: the failed pass if one failed, else the step of the
    check `report`'s first finding (a failure before a note), else (with `first_change`)
    the first pass that changed the module (a pass of its own, not a pipeline holding
    others), else the first step. Where there is something to see, not the source graph:
    the report, the Panel app and the Jupyter stepper all open there (`first_change`
    False: the failed pass or the first step)."""
    failure = trace.failure
    if failure is not None:
        return failure.index
    if not first_change:
        return 0
    if report is not None:
        findings = list(getattr(report, "findings", None) or ())
        first = getattr(report, "first_failure", None) or (findings[0] if findings else None)
        if first is not None:
            return first.step.index
    steps = list(trace.steps)
    for k, s in enumerate(steps):
        holds_others = k + 1 < len(steps) and steps[k + 1].depth > s.depth
        if s.kind == "pass" and s.status == "changed" and not holds_others:
            return s.index
    return 0


def visible_steps(trace, hide_unchanged: bool) -> list[int]:
    """Indices of the steps a timeline lists (unchanged passes left out when hidden)."""
    return [s.index for s in trace.steps if not (hide_unchanged and s.status == "unchanged")]


def next_index(visible: list[int], index: int) -> int | None:
    """The first listed step after `index` (None at the end)."""
    return next((i for i in visible if i > index), None)


def prev_index(visible: list[int], index: int) -> int | None:
    """The last listed step before `index` (None at the start)."""
    return next((i for i in reversed(visible) if i < index), None)


def nearest_index(visible: list[int], index: int) -> int:
    """`index` if it is listed, else the next listed step, else the previous one (`index`
    itself when nothing is listed)."""
    if index in visible:
        return index
    later = next_index(visible, index)
    if later is not None:
        return later
    earlier = prev_index(visible, index)
    return earlier if earlier is not None else index


def timeline_row_html(step, row: dict, report=None) -> str:
    """One step of an HTML timeline: a `.pl-step-row` (`data-step` its index, indented by
    depth) with its name and badges (styles in `static/timeline.css`)."""
    badges = badges_html(step_badges(row, len(problems_of(report, step))))
    return (
        f"<div class='pl-step-row pl-st-{step.status}' data-step='{step.index}' "
        f"style='padding-left:{8 + 14 * step.depth}px'><span class='pl-idx'>{step.index}</span>"
        f"<span class='pl-name'>{esc(step.name)}</span>"
        f"<span class='pl-badges'>{badges}</span></div>"
    )


def header_html(step, row: dict, report=None, notes: bool = True) -> str:
    """The current step's title, badges, what it changed, and (with `notes`) its error if
    it failed and its findings (the report shows those in lines of its own)."""
    prev = step.previous
    head = esc(step_diff(prev, step).headline()) if prev is not None else ""
    error = ""
    if step.failed and notes:
        where = f" in @{esc(step.failed_function)}" if step.failed_function else ""
        kind = esc(type(step.error).__name__)
        error = (
            f"<div class='pl-error' style='color:#b71c1c'><b>{kind}{where}</b>: "
            f"{esc(step.error, 2000)}</div>"  # cut: the whole error in trace[i].error
        )
    findings = problems_of(report, step)
    shown = findings if notes else []
    notes = "".join(finding_html(f) for f in shown[:HEADER_FINDINGS])
    if len(shown) > HEADER_FINDINGS:
        more = len(shown) - HEADER_FINDINGS
        notes += (
            f"<div class='pl-finding-more' style='color:#e65100;font-size:12px'>and {more} "
            f"more finding{'s' if more > 1 else ''} (the numerics tab lists them all)</div>"
        )
    return (
        f"<div class='pl-header' style='font:13px sans-serif'><b class='pl-step-title'>"
        f"#{step.index} {esc(step.name)}</b> "
        f"{badges_html(step_badges(row, len(findings)))}<br>"
        f"<span class='pl-headline' style='color:#555'>{head}</span>{error}{notes}</div>"
    )


HEADER_FINDINGS = 3  # findings a header shows (the rest counted)


def finding_html(f) -> str:
    """One finding in a header: its kind and summary (`widgets.findings.finding_summary`:
    the headline and first reason, wrapped, never cut to the width), and where the message
    says more, the whole of it under the summary on a click (a `<details>`)."""
    kind = esc(getattr(f, "kind", ""))
    message = str(getattr(f, "message", ""))
    summary = finding_summary(message)
    wrap = "white-space:normal;overflow-wrap:anywhere;color:#e65100"
    if summary == message.strip():
        return f"<div class='pl-finding' style='{wrap}'><b>{kind}</b>: {esc(message, 2000)}</div>"
    return (
        f"<details class='pl-finding' style='{wrap}'><summary style='cursor:pointer'>"
        f"<b>{kind}</b>: <span class='pl-finding-summary'>{esc(summary)}</span></summary>"
        "<div class='pl-finding-full' style='color:#5d4037;font-size:12px;max-height:9em;"
        f"overflow:auto;margin:2px 0 2px 14px'>{esc(message, 4000)}</div></details>"
    )


def finding_banner(finding) -> str:
    """A finding in one line of a page's top bar (the first failure of a run): kind, step and
    the message's headline, the part before its first reason (the header below says more)."""
    step = finding.step
    return f"{finding.kind} at #{step.index} {step.name}: {finding_headline(finding.message)}"


class StepNavigation:
    """`visible`, `next()` and `prev()` for a front end that has `trace`,
    `hide_unchanged` and a settable `index` (the stepper and the Panel app)."""

    @property
    def visible(self) -> list[int]:
        """Indices of the steps the timeline lists."""
        return visible_steps(self.trace, self.hide_unchanged)

    def next(self) -> None:
        """Go to the next listed step."""
        i = next_index(self.visible, self.index)
        if i is not None:
            self.index = i

    def prev(self) -> None:
        """Go to the previous listed step."""
        i = prev_index(self.visible, self.index)
        if i is not None:
            self.index = i


__all__ = [
    "NOTHING",
    "SCOPES",
    "VIEWS",
    "StepNavigation",
    "View",
    "always",
    "register",
    "step_html",
    "trace_html",
    "unregister",
    "views_for",
    "with_report",
    "finding_banner",
    "finding_html",
    "header_html",
    "nearest_index",
    "next_index",
    "prev_index",
    "start_index",
    "tab_html",
    "timeline_row_html",
    "visible_steps",
]
