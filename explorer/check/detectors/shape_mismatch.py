"""`shape-mismatch`: a node whose computed value disagrees with its annotated type,
reported once per node, at the first step whose run computed it (the step that made it).
The step's status becomes `shape-mismatch`.

Details: `annotated` (Type), `shape`, `dtype`, `function`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.ir import Call, DType
from explorer.check.references import node_location
from explorer.check.registry import Kind
from explorer.check.report import Finding

if TYPE_CHECKING:
    from compiler import TypeMismatch
    from explorer.check.facts import StepFacts


def detect(facts: StepFacts) -> list[Finding]:
    if facts.run is None:
        return []
    seen: set[int] = facts.state.setdefault("shape-mismatch", set())  # ids of nodes reported
    out = []
    for mm, fname in facts.run.mismatches:
        if id(mm.node) not in seen:
            seen.add(id(mm.node))
            facts.check.status = "shape-mismatch"
            out.append(_finding(facts, mm, fname))
    return out


def _finding(facts: StepFacts, mm: TypeMismatch, fname: str) -> Finding:
    node = mm.node
    name = f"%{node.name}" if node.name else f"a {getattr(node, 'op', type(node).__name__)} node"
    op = f" = {node.op}(...)" if isinstance(node, Call) else ""
    src = f" (from {node_location(node)})" if not node.prov.is_empty else ""
    try:
        dtype = DType.of(mm.dtype).short
    except (KeyError, TypeError, ValueError):
        dtype = mm.dtype
    computed = f"{dtype}[{', '.join(map(str, mm.shape))}]"
    return Finding(
        "shape-mismatch",
        facts.step,
        [node],
        f"{facts.label}, {name}{op} in @{fname}{src} is annotated {mm.annotated} "
        f"but computes {computed}",
        {"annotated": mm.annotated, "shape": mm.shape, "dtype": mm.dtype, "function": fname},
    )


KIND = Kind(
    "shape-mismatch",
    "error",
    "a node's computed value disagrees with its annotated type",
    detect,
    node_mark="shape ≠ computed",
)
