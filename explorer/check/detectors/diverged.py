"""`diverged`: a step's outputs differ from the reference beyond `atol + rtol * |ref|`.
Reported where the divergence starts (the first such step, or a step that changed the numbers
again), naming the earliest IR node that differs from the reference node it came from: the FX
node named by its provenance (torch), or the imported step's node with the same provenance
(other sources).

Details: `max_abs`, `max_rel`, `output` (index of the worst output), `reference`
(what was compared with), `node_errors` (list of `explorer.check.report.NodeError`,
earliest first; `nodes[0]` is the earliest node that differs, when one is matched),
`rule` (what judged: `"tolerance"` or `"float64"`, see `explorer/check/judge.py`) and
`float64` (for the float64 rule: `error` and `reference_error`, the largest distances of
the step's and the reference's outputs from the float64 run, and `share` of the allowance),
`tied_indices` (where index values differ from the reference's only in the order of tied
values, `ties.py`: no error; the message says so when the first node that differs reads one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.ir import Module, children
from explorer.check.judge import FLOAT64, FLOAT64_MULTIPLIER
from explorer.check.numbers import allclose
from explorer.check.references import errors_by_node, node_location
from explorer.check.registry import Kind
from explorer.check.report import NODE_ERRORS_KEPT, Finding
from explorer.fmt import num

if TYPE_CHECKING:
    from explorer.check.facts import StepFacts


def detect(facts: StepFacts) -> list[Finding]:
    run, before, cmp, opts = facts.run, facts.before, facts.compared, facts.options
    if run is None or not run.diverged or cmp is None:
        return []
    if (
        before is not None
        and before.diverged
        and allclose(run.outputs, before.outputs, opts.rtol, opts.atol)
    ):
        return []  # diverged as much as the module before: reported there
    ref, check = facts.reference, facts.check
    module = facts.step.module
    errors, ties = [], []
    if isinstance(module, Module):  # another compiler's steps give outputs only, no node values
        errors = errors_by_node(
            module["main"],
            facts.values,
            ref.fx_values,
            ref.node_values,
            opts.rtol,
            opts.atol,
            ref.float64 if cmp.rule == FLOAT64 else None,
            ties,
        )
    if cmp.note:
        text = cmp.note
    else:
        n = cmp.beyond
        text = (
            f"output {cmp.worst} differs from {ref.name} by "
            f"{num(check.max_abs)} (max abs, {num(check.max_rel)} max rel; "
            f"{n} element{'s' if n != 1 else ''} beyond tolerance)"
        )
    tie = _tie_read(errors[0].node, ties) if errors else None
    if errors:
        text = f"{errors[0]}; {text}"
    if tie is not None:
        text += (
            f"; it reads the indices at {node_location(tie)}, which differ from {ref.name}'s only"
            " in "
            "the order of tied values (both correct): this difference may be that order alone"
        )
    text += "; " + _rule_text(cmp, ref)
    finding = Finding(
        "diverged",
        facts.step,
        [errors[0].node] if errors else [],
        f"{facts.label}, {text}",
        {
            "max_abs": check.max_abs,
            "max_rel": check.max_rel,
            "output": cmp.worst,
            "reference": ref.description,
            "node_errors": errors[:NODE_ERRORS_KEPT],
            "rule": cmp.rule,
            "float64": _judgement(cmp.float64),
            "tied_indices": [node_location(n) for n in ties],
        },
    )
    return [finding]


def _tie_read(node, ties: list):
    """The first of the tied-index nodes `ties` that `node` reads, directly or not."""
    if not ties:
        return None
    wanted = {id(t): t for t in ties}
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if id(n) in wanted and n is not node:
            return n
        stack.extend(children(n))
    return None


def _rule_text(cmp, ref) -> str:
    """Which rule judged (judge.py), in words."""
    j = cmp.float64
    if cmp.rule == FLOAT64 and j is not None:
        return (
            f"judged against float64 ({ref.float64.description}): {num(j.error)} from it "
            f"where {ref.name} is {num(j.reference_error)}, over {FLOAT64_MULTIPLIER:g}x "
            "that: not float32 rounding"
        )
    why = ""
    f64 = ref.float64
    if f64 is None:
        why = " (no float64 run of this reference)"
    elif f64.failure:
        why = f" (the float64 run failed: {f64.failure[:120]})"
    elif f64.made:
        why = " (an output the float64 rule cannot judge: another dtype)"
    return f"judged by the tolerance (atol + rtol * |ref|){why}"


def _judgement(j) -> dict | None:
    if j is None:
        return None
    return {"error": j.error, "reference_error": j.reference_error, "share": j.share}


KIND = Kind(
    "diverged",
    "error",
    "a step's outputs differ from the reference beyond the tolerance",
    detect,
    node_mark="first divergence",
)
