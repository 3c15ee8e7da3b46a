"""``diverged``: a step's outputs differ from the reference beyond ``atol + rtol * |ref|``.
Reported where the divergence starts (the first such step, or a step that changed the numbers
again), naming the earliest IR node that differs from the reference node it came from: the FX
node named by its provenance (torch), or the imported step's node with the same provenance
(other sources).

Details: ``max_abs``, ``max_rel``, ``output`` (index of the worst output), ``reference``
(what was compared with), ``node_errors`` (list of :class:`~explorer.check.report.NodeError`,
earliest first; ``nodes[0]`` is the earliest node that differs, when one is matched)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.ir import Module
from explorer.check.numbers import _allclose
from explorer.check.references import _node_errors
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
        and _allclose(run.outputs, before.outputs, opts.rtol, opts.atol)
    ):
        return []  # diverged as much as the module before: reported there
    ref, check = facts.reference, facts.check
    module = facts.step.module
    errors = []
    if isinstance(module, Module):  # another compiler's steps give outputs only, no node values
        errors = _node_errors(
            module["main"], facts.values, ref.fx_values, ref.node_values, opts.rtol, opts.atol
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
    if errors:
        text = f"{errors[0]}; {text}"
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
        },
    )
    return [finding]


KIND = Kind(
    "diverged",
    "error",
    "a step's outputs differ from the reference beyond the tolerance",
    detect,
    node_mark="first divergence",
)
