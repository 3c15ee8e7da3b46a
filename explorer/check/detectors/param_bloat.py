"""`param-bloat` (a warning): parameter bytes grew by more than the check's
`bloat_threshold` over the previous step, and by at least `bloat_min_bytes`, naming the
parameters responsible (from `explorer.diff`: "N copies of `W`"). Needs no numbers: without
inputs it is still reported, for passes that have no children.

Details: `bytes_before`, `bytes_after`, `growth` (list of (name, bytes, net bytes
added, reason)), `previous` (the step compared with)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.check.registry import Kind
from explorer.check.report import Finding
from explorer.diff import diff as step_diff
from explorer.fmt import format_bytes, signed_bytes

if TYPE_CHECKING:
    from explorer.check.facts import StepFacts


def detect(facts: StepFacts) -> list[Finding]:
    step = facts.step
    if step.kind != "pass" or step.failed:
        return []
    if facts.run is None and step.children:  # without numbers: the passes that ran themselves
        return []
    if facts.run is not None and facts.before is None:  # with numbers: after a run module
        return []
    prev = step.previous
    if prev is None or step.module is None or step.module is prev.shown_module:
        return []
    before, after = prev.param_bytes, step.param_bytes
    delta = after - before
    if delta < facts.options.bloat_min_bytes or after <= before * (
        1 + facts.options.bloat_threshold
    ):
        return []
    growth = [(g.name, g.nbytes, g.delta, g.reason) for g in step_diff(prev, step).params.growth]
    params = step.graph.params
    nodes = [params[g[0]].obj for g in growth if g[0] in params and params[g[0]].obj is not None]
    reasons = [
        (r if r != "new" else f"`{name}` is new ({format_bytes(nb)})")
        for name, nb, _, r in growth[:3]
    ]
    if len(growth) > 3:
        reasons.append(f"and {len(growth) - 3} more")
    factor = f", {after / before:.1f}x" if before else ""
    text = (
        f"after {step.name}, parameter bytes grew {format_bytes(before)} -> "
        f"{format_bytes(after)} (+{format_bytes(delta)}{factor})"
    )
    if reasons:
        text += ": " + "; ".join(reasons)
    rules = _rules(step, [g[0] for g in growth[:1]])
    if rules:
        text += f" ({rules})"  # which rule made the broadcast
    details = {"bytes_before": before, "bytes_after": after, "growth": growth, "previous": prev}
    return [Finding("param-bloat", step, nodes, text, details)]


def _rules(step, names: list[str]) -> str:
    """The rules that made the first parameter that grew, oldest first, from the steps'
    rewrites: `made by rules p/r at #2 -> fold-constant/x at #3`; "" if none is known."""
    from explorer.rewrites import origin

    params = step.graph.params
    for name in names:
        chain = origin(step, params[name].node_id) if name in params else []
        if chain:
            rules = " -> ".join(f"{w.rewrite.rule} at #{w.step.index}" for w in reversed(chain))
            return f"made by rule{'s' if len(chain) > 1 else ''} {rules}"
    return ""


def mark(finding: Finding) -> list[tuple[str, str]]:
    """Each parameter that grew (its graph node id), labelled with its growth and why."""
    params = finding.step.graph.params
    return [
        (params[name].node_id, f"{signed_bytes(delta)} ({reason})")
        for name, _nbytes, delta, reason in finding.details.get("growth", [])
        if name in params
    ]


KIND = Kind(
    "param-bloat",
    "warning",
    "parameter bytes grew by more than the threshold over the previous step",
    detect,
    mark=mark,
)
