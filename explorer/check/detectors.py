"""The findings a step gives: a failed pass, a shape mismatch, parameter bloat."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler import TypeMismatch
from compiler.ir import Call, DType
from explorer.check.references import _where
from explorer.check.report import Finding
from explorer.fmt import format_bytes

if TYPE_CHECKING:  # a Step / Trace is given; the trace module imports this one
    from explorer.trace import Step


def _pass_failed(step: Step) -> Finding:
    err = step.error
    what = f"{type(err).__name__}: {err}" if str(err) else f"{type(err).__name__} (no message)"
    line = step.failed_line
    line_text = step.text.splitlines()[line].strip() if line is not None else None
    where = ""
    if line_text:
        where = f" on `{line_text}`"
        if step.failed_function:
            where += f" in @{step.failed_function}"
    node = step.failed_node
    src = f" (from {_where(node)})" if node is not None and not node.prov.is_empty else ""
    return Finding(
        "pass-failed",
        step,
        [node] if node is not None else [],
        f"{step.name} failed{where}{src}: {what}",
        {
            "error": err,
            "traceback": step.traceback,
            "function": step.failed_function,
            "line": line,
            "line_text": line_text,
        },
    )


def _shape_mismatch(step: Step, label: str, mm: TypeMismatch, fname: str) -> Finding:
    node = mm.node
    name = f"%{node.name}" if node.name else f"a {getattr(node, 'op', type(node).__name__)} node"
    op = f" = {node.op}(...)" if isinstance(node, Call) else ""
    src = f" (from {_where(node)})" if not node.prov.is_empty else ""
    try:
        dtype = DType.of(mm.dtype).short
    except (KeyError, TypeError, ValueError):
        dtype = mm.dtype
    computed = f"{dtype}[{', '.join(map(str, mm.shape))}]"
    return Finding(
        "shape-mismatch",
        step,
        [node],
        f"{label}, {name}{op} in @{fname}{src} is annotated {mm.annotated} but computes {computed}",
        {"annotated": mm.annotated, "shape": mm.shape, "dtype": mm.dtype, "function": fname},
    )


def _param_bloat(step: Step, threshold: float, min_bytes: int) -> Finding | None:
    prev = step.previous
    if prev is None or step.module is None or step.module is prev.shown_module:
        return None
    before, after = prev.param_bytes, step.param_bytes
    delta = after - before
    if delta < min_bytes or after <= before * (1 + threshold):
        return None
    growth: list[tuple[str, int, int, str]] = []
    try:
        from explorer.diff import diff as step_diff

        for g in step_diff(prev, step).params.growth:
            growth.append((g.name, g.nbytes, g.delta, g.reason))
    except ImportError:  # no diff: name the parameters that are new, biggest first
        old = set(prev.graph.params)
        new = [p for k, p in step.graph.params.items() if k not in old]
        growth = [(p.name, p.nbytes, p.nbytes, "new") for p in sorted(new, key=lambda p: -p.nbytes)]
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
    return Finding(
        "param-bloat",
        step,
        nodes,
        text,
        {"bytes_before": before, "bytes_after": after, "growth": growth, "previous": prev},
    )


# ----- framework references ----------------------------------------------------------------------
