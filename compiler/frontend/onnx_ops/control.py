"""Control flow: If."""

from __future__ import annotations

import numpy as np

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx_context import ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import (
    converter,
)
from compiler.ir.nodes import Call, Constant, Expr, If, IRError, Tuple
from compiler.ir.types import TensorType

# ----- control flow -----------------------------------------------------------------------

_STATIC_ELEMENTS = 64  # a condition computed from shapes, not data
_STATIC_DEPTH = 32


def static_value(e: Expr, depth: int = 0) -> np.ndarray | None:
    """The value of a small tensor computed from constants and static shapes alone (``Size``
    of an ``i64[4]`` input equals 4), with the ops' numpy reference; None otherwise."""
    from compiler.ir.op_registry import get_op

    if isinstance(e, Constant):
        return e.data
    if not isinstance(e, Call) or depth > _STATIC_DEPTH:
        return None
    ty = e.ty
    if not isinstance(ty, TensorType) or not ty.is_static or ty.numel > _STATIC_ELEMENTS:
        return None
    if e.op == "shape_of":
        xt = e.args[0].ty
        if isinstance(xt, TensorType) and xt.is_static:
            return np.array(xt.shape, np.int64)
        return None
    values = [static_value(a, depth + 1) for a in e.args]
    if any(v is None for v in values):
        return None
    try:
        out = get_op(e.op).compute(values, e.attrs)
    except Exception:  # an op the reference cannot evaluate here: not static
        return None
    return out if isinstance(out, np.ndarray) and out.size <= _STATIC_ELEMENTS else None


def _same_layout(a, b) -> bool:
    """Whether two types have the same tuple structure (ONNX sequences of equal lengths)."""
    from compiler.ir.types import TupleType

    if isinstance(a, TupleType) or isinstance(b, TupleType):
        return (
            isinstance(a, TupleType)
            and isinstance(b, TupleType)
            and len(a.fields) == len(b.fields)
            and all(_same_layout(x, y) for x, y in zip(a.fields, b.fields, strict=True))
        )
    return True


def _outputs(ctx, value: Expr):
    outs = len(ctx.node.output)
    if outs == 1:
        return value
    if isinstance(value, Tuple):
        return list(value.fields)
    return [ctx.tuple_item(value, i) for i in range(outs)]


@converter("If", attrs=("then_branch", "else_branch"))
def _if(ctx):
    """An IR If; when the condition is known from static shapes and keeping both branches
    loses what the taken one knows (a branch that cannot convert, or joined types weaker than
    the taken branch's: an expanded AffineGrid splits a 4-element shape in one branch and 5
    in the other), the taken branch alone."""
    cond = ctx.input(0)
    ct = cond.ty
    if not (ct.shape == () or (ct.shape is not None and ct.numel == 1)):
        cond = ctx.call("reshape", cond, shape=[])
    known = static_value(cond)
    taken = None if known is None or known.size != 1 else bool(known.reshape(-1)[0])
    importer = ctx.importer
    noted = {k: list(v) for k, v in importer.unsupported.items()}
    try:
        then_b = ctx.subgraph("then_branch")
        else_b = ctx.subgraph("else_branch")
        if not _same_layout(then_b.result.ty, else_b.result.ty):
            raise Unsupported(
                "branches giving sequences of different lengths (the length would be known "
                "only at run time)"
            )
        node = If(cond, then_b, else_b, prov=ctx.prov)
    except (Unsupported, ConversionError, IRError, FrontendError):
        if taken is None:
            raise
        importer.unsupported = noted  # what the branch not taken could not convert
        return _outputs(ctx, ctx.subgraph("then_branch" if taken else "else_branch").result)
    if taken is not None:
        chosen = then_b if taken else else_b
        if chosen.result.ty != node.ty:
            return _outputs(ctx, chosen.result)
    return _outputs(ctx, node)
