"""What the stepping front ends share: which steps a timeline lists, where previous / next go,
a step's timeline row and header, and the HTML of its tabs.

Pure functions over a trace (and optionally a check report), used by the Jupyter
:class:`~widgets.stepper.PassStepper`, the anywidget :class:`~widgets.graph_view.GraphView` and
the Panel app (:mod:`widgets.app`); the HTML pieces come from the rendering modules
(:mod:`widgets.render` lists them).
"""

from __future__ import annotations

from widgets.boxes import step_diff
from widgets.escape import esc
from widgets.findings import problems_of
from widgets.ir_text import ir_text_html, text_diff_html
from widgets.render import badges_html, step_badges
from widgets.rewrites_html import rewrites_html
from widgets.tables_html import numerics_table_html, param_table_html, shape_table_html

TABS = ("graph", "IR", "IR diff", "rewrites", "params", "shapes", "numerics")


def start_index(trace, report=None, first_change: bool = True) -> int:
    """The step a front end opens on: the failed pass if one failed, else the step of the
    check ``report``'s first finding (a failure before a note), else (with ``first_change``)
    the first pass that changed the module (a pass of its own, not a pipeline holding
    others), else the first step. Where there is something to see, not the source graph:
    the report and the Panel app; the Jupyter stepper, which a notebook usually points at a
    step itself, opens on the failed pass or the first step."""
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
    """The first listed step after ``index`` (None at the end)."""
    return next((i for i in visible if i > index), None)


def prev_index(visible: list[int], index: int) -> int | None:
    """The last listed step before ``index`` (None at the start)."""
    return next((i for i in reversed(visible) if i < index), None)


def nearest_index(visible: list[int], index: int) -> int:
    """``index`` if it is listed, else the next listed step, else the previous one (``index``
    itself when nothing is listed)."""
    if index in visible:
        return index
    later = next_index(visible, index)
    if later is not None:
        return later
    earlier = prev_index(visible, index)
    return earlier if earlier is not None else index


def timeline_row_html(step, row: dict, report=None) -> str:
    """One step of an HTML timeline: a ``.pl-step-row`` (``data-step`` its index, indented by
    depth) with its name and badges (styles in ``static/timeline.css``)."""
    badges = badges_html(step_badges(row, len(problems_of(report, step))))
    return (
        f"<div class='pl-step-row pl-st-{step.status}' data-step='{step.index}' "
        f"style='padding-left:{8 + 14 * step.depth}px'><span class='pl-idx'>{step.index}</span>"
        f"<span class='pl-name'>{esc(step.name)}</span>"
        f"<span class='pl-badges'>{badges}</span></div>"
    )


def header_html(step, row: dict, report=None) -> str:
    """The current step's title, badges, what it changed, and its error if it failed."""
    prev = step.previous
    head = esc(step_diff(prev, step).headline()) if prev is not None else ""
    error = ""
    if step.failed:
        where = f" in @{esc(step.failed_function)}" if step.failed_function else ""
        kind = esc(type(step.error).__name__)
        error = (
            f"<div class='pl-error' style='color:#b71c1c'><b>{kind}{where}</b>: "
            f"{esc(step.error, 2000)}</div>"  # cut: the whole error in trace[i].error
        )
    findings = problems_of(report, step)
    # one line per finding, cut to the width (the whole text in its tooltip and the numerics tab)
    notes = "".join(
        f"<div class='pl-finding' title='{esc(getattr(f, 'message', ''), 2000)}' "
        "style='color:#e65100;white-space:nowrap;overflow:hidden;text-overflow:ellipsis'>"
        f"<b>{esc(getattr(f, 'kind', ''))}</b>: {esc(getattr(f, 'message', ''), 2000)}"
        "</div>"
        for f in findings
    )
    return (
        f"<div class='pl-header' style='font:13px sans-serif'><b class='pl-step-title'>"
        f"#{step.index} {esc(step.name)}</b> "
        f"{badges_html(step_badges(row, len(findings)))}<br>"
        f"<span class='pl-headline' style='color:#555'>{head}</span>{error}{notes}</div>"
    )


def tab_html(step, tab: str, report=None) -> str:
    """The HTML of a table / text tab of ``step``: ``IR`` (its text; after legalize-ops and
    codegen also the loop IR, LLVM IR and assembly), ``IR diff`` (against the previous step;
    the IR text for the first step), ``rewrites`` (the rules its pass applied: counts, a
    filter by rule, every application), ``params``, ``shapes`` or ``numerics``."""
    if tab not in TABS[1:]:
        raise ValueError(f"no tab {tab!r}; tabs: {', '.join(TABS[1:])} (and graph)")
    prev = step.previous
    if tab == "IR":
        return ir_text_html(step)
    if tab == "IR diff":
        if prev is None:
            return ir_text_html(step)
        return text_diff_html(step_diff(prev, step), mode="side-by-side")
    if tab == "rewrites":
        return rewrites_html(step)
    if tab == "params":
        return param_table_html(step, prev)
    if tab == "shapes":
        return shape_table_html(step, report)
    return numerics_table_html(step, report)


class StepNavigation:
    """``visible``, ``next()`` and ``prev()`` for a front end that has ``trace``,
    ``hide_unchanged`` and a settable ``index`` (the stepper and the Panel app)."""

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
    "TABS",
    "StepNavigation",
    "header_html",
    "nearest_index",
    "next_index",
    "prev_index",
    "start_index",
    "tab_html",
    "timeline_row_html",
    "visible_steps",
]
