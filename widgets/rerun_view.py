"""Two runs side by side at the step where they differ: the old run of a re-run beside the new
one (the stepper's graph tab, `widgets.stepper`), and the two traces of a comparison
(`explorer.compare(a, b)`'s HTML, `comparison_html`).

A re-run (`new = old.rerun(...)`) has `new.rerun_of` (the old Trace) and `new.rerun_from`
(the first step recorded anew; the steps before it are the old trace's). From that step on,
step `k` of the new trace is paired with step `k` of the old one (`old_step`): same
place in the pipeline, each drawn against its own previous step, each with its own run's check
verdict and findings (`run_caption_html`). Pure functions: every name escaped (`esc`).
"""

from __future__ import annotations

from explorer.fmt import num
from widgets.bounds import RenderLimitError
from widgets.boxes import MAX_BOXES
from widgets.escape import esc
from widgets.findings import problems_of

# the caption over each side: one line of title and verdict, one line per finding (cut to the
# width, the whole text in its tooltip)
CAPTION_CSS = (
    ".pl-run{font:13px/1.4 system-ui,sans-serif;padding:2px 4px;border-left:4px solid #999;"
    "margin:0 0 4px;min-width:0}"
    ".pl-run-old{border-color:#9e9e9e;background:#f5f5f5}"
    ".pl-run-new{border-color:#1565c0;background:#eef4fc}"
    ".pl-run-title{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}"
    ".pl-run-bad{color:#b71c1c;font-weight:600}.pl-run-ok{color:#1b5e20;font-weight:600}"
    ".pl-run-finding{color:#e65100;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}"
)
_GOOD = {"ok", "reference", "unchanged", "changed"}


def rerun_base(trace):
    """The trace `trace` was re-run from (`trace.rerun_of`), or None."""
    return getattr(trace, "rerun_of", None)


def rerun_start(trace) -> int | None:
    """The first step of a re-run recorded anew (`trace.rerun_from`), None for a trace that
    is not a re-run (or whose start is not a step of both runs)."""
    base = rerun_base(trace)
    start = getattr(trace, "rerun_from", None)
    if base is None or not isinstance(start, int) or isinstance(start, bool):
        return None
    if not 0 <= start < min(len(trace.steps), len(base.steps)):
        return None
    return start


def old_step(trace, index: int):
    """The old run's step beside step `index` of a re-run: the old trace's step at the same
    place, for a step recorded anew (`index >= trace.rerun_from`); None otherwise."""
    start = rerun_start(trace)
    if start is None or index < start:
        return None
    base = rerun_base(trace)
    return base.steps[index] if index < len(base.steps) else None


def family_root(trace):
    """The first trace of a line of re-runs (`rerun_of` followed back to a trace that is
    not a re-run)."""
    seen = set()
    while rerun_base(trace) is not None and id(trace) not in seen:
        seen.add(id(trace))
        trace = rerun_base(trace)
    return trace


def step_check(report, step):
    """The check `report`'s numbers of `step` (an `explorer.check.StepCheck`), or None
    (no report, or the step not in it)."""
    for c in getattr(report, "steps", None) or ():
        s = getattr(c, "step", None)
        if s is step or (
            getattr(s, "index", None) == step.index and getattr(s, "name", None) == step.name
        ):
            return c
    return None


def verdict(report, step) -> tuple[str, bool]:
    """What the check said of `step`, in words, and whether that is good: `diverged, max
    rel 0.84`, `ok, max rel 3.1e-07`, `not checked` (no report) ..."""
    problems = problems_of(report, step)
    if step.failed:
        return f"failed: {type(step.error).__name__}", False
    if report is None:
        return "not checked", True
    c = step_check(report, step)
    if c is None:
        head = "not in the check"
    else:
        head = str(c.status)
        if c.max_rel is not None:
            head += f", max rel {num(c.max_rel)}"
    good = c is None or str(c.status) in _GOOD
    if problems and good:  # numbers fine, another finding (bloat ...): its kinds
        kinds = sorted({str(getattr(f, "kind", "")) for f in problems})
        head += f"; {len(problems)} finding{'s' if len(problems) > 1 else ''}: {', '.join(kinds)}"
    return head, good and not problems


def run_caption_html(label: str, step, report=None, side: str = "new") -> str:
    """The caption over one side, two lines whatever it says (so that two sides' graphs line
    up): `label` (`old run`, `A: torch` ...), the step and its verdict under
    `report`; then its first finding (how many more; the whole text in the tooltip), or
    that it has none. `side` is `old` or `new` (its colour)."""
    text, good = verdict(report, step)
    cls = "pl-run-ok" if good else "pl-run-bad"
    problems = problems_of(report, step)
    if problems:
        f = problems[0]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        message = getattr(f, "message", "")
        line = (
            f"<div class='pl-run-finding' title='{esc(message, 2000)}'>"
            f"<b>{esc(getattr(f, 'kind', ''))}</b>{esc(more)}: {esc(message, 2000)}</div>"
        )
    else:
        none = "no findings" if report is not None else "no check report: trace.check() first"
        line = f"<div class='pl-run-finding' style='color:#777'>{none}</div>"
    return (
        f"<div class='pl-run pl-run-{'old' if side == 'old' else 'new'}'>"
        f"<div class='pl-run-title'><b>{esc(label)}</b> · #{step.index} {esc(step.name)} · "
        f"<span class='{cls}'>{esc(text)}</span></div>{line}</div>"
    )


def rerun_note_html(trace) -> str:
    """The line over a re-run's graph: which steps were recorded anew."""
    start = rerun_start(trace)
    if start is None:
        return ""
    step = trace.steps[start]
    return (
        "<span class='pl-note'>re-run: the steps from "
        f"<b>#{start} {esc(step.name)}</b> on were recorded anew; the ones before are the old "
        "run's</span>"
    )


def runs_html(left: tuple, right: tuple, max_boxes: int = MAX_BOXES, height: int = 480) -> str:
    """Two steps side by side, each `(label, step, report, side)`: its caption and its graph
    (drawn by the graph component in an iframe, against its own previous step)."""
    from widgets.snapshot import GraphSnapshot

    cells = []
    for label, step, report, side in (left, right):
        try:
            graph = GraphSnapshot(
                step, step.previous, report, max_boxes=max_boxes, height=height
            ).iframe_html()
        except RenderLimitError as e:  # said in its place, the other side still drawn
            graph = f"<p class='pl-limit'>graph not shown: {esc(str(e))}</p>"
        cells.append(
            f"<div style='flex:1 1 0;min-width:0'>{run_caption_html(label, step, report, side)}"
            f"{graph}</div>"
        )
    return f"<div class='pl-runs' style='display:flex;gap:12px'>{''.join(cells)}</div>"


def comparison_html(comparison, max_boxes: int = MAX_BOXES, height: int = 480) -> str:
    """The part of a comparison's HTML that opens on the first step where the two traces
    differ (`comparison.changed_steps()`): both sides at that step, captioned with each
    trace's check verdict; a note when they never differ."""
    pair = comparison.changed_steps()
    if pair is None:
        return "<p class='pl-note'>No step differs in op counts or parameter bytes.</p>"
    a, b = pair
    ta, tb = comparison.trace_a, comparison.trace_b
    # a re-run and the trace it re-ran, either way round: say which is the old run
    prefix, colours = ("", ""), ("old", "new")
    if rerun_base(tb) is ta:
        prefix = ("old run · ", "new run · ")
    elif rerun_base(ta) is tb:
        prefix, colours = ("new run · ", "old run · "), ("new", "old")
    sides = (
        (prefix[0] + comparison.a.label, a, ta.report, colours[0]),
        (prefix[1] + comparison.b.label, b, tb.report, colours[1]),
    )
    head = (
        "<p style='font:600 13px sans-serif;margin:8px 0 4px'>at the first step that differs: "
        f"A #{a.index} {esc(a.name)} | B #{b.index} {esc(b.name)}</p>"
    )
    return f"<style>{CAPTION_CSS}</style>{head}{runs_html(*sides, max_boxes, height)}"


__all__ = [
    "CAPTION_CSS",
    "comparison_html",
    "family_root",
    "old_step",
    "rerun_base",
    "rerun_note_html",
    "rerun_start",
    "run_caption_html",
    "runs_html",
    "step_check",
    "verdict",
]
