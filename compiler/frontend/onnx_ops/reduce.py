"""Reductions, arg-min/max and cumulative sums."""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.frontend.onnx_context import (
    ConversionError,
    ConvertContext,
)
from compiler.frontend.onnx_ops.registry import (
    I64,
    cast_to,
    checked_axis,
    converter,
    normalized_axes,
    reduce_over_computed_axes,
    select_if,
)
from compiler.ir.nodes import Expr
from compiler.ir.types import DType

# ----- reductions -------------------------------------------------------------------------


_REDUCE_ATTRS = ("axes", "keepdims", "noop_with_empty_axes")
# (elementwise before, reduction, elementwise after, computes in floating point)
_REDUCTIONS = {
    "ReduceSum": (None, "sum", None, False),
    "ReduceMean": (None, "mean", None, True),
    "ReduceMax": (None, "max", None, False),
    "ReduceMin": (None, "min", None, False),
    "ReduceProd": (None, "prod", None, False),
    "ReduceL1": ("abs", "sum", None, False),
    "ReduceL2": ("square", "sum", "sqrt", True),
    "ReduceSumSquare": ("square", "sum", None, False),
    "ReduceLogSum": (None, "sum", "log", True),
    "ReduceLogSumExp": ("exp", "sum", "log", True),
}


def _reduce(kind: str):
    before, op, after, wants_float = _REDUCTIONS[kind]

    def convert(ctx: ConvertContext) -> Expr:
        x = ctx.input(0)
        keep = bool(ctx.attr("keepdims", 1))
        noop = bool(ctx.attr("noop_with_empty_axes", 0))
        dtype = x.ty.dtype
        y = cast_to(ctx, x, DType.float64) if wants_float and not dtype.is_float else x
        if before == "square":
            y = ctx.call("multiply", y, y)
        elif before is not None:
            y = ctx.call(before, y)
        if "axes" in ctx.attrs:
            axes: Any = list(ctx.attr("axes"))
        elif ctx.has(1) and ctx.const(1) is None:
            axes = ctx.input(1)  # computed
        else:
            axes = ctx.const_ints(1, "axes")
        if isinstance(axes, Expr):
            prepare = None
            if op in ("max", "min"):
                prepare = lambda v, a: _pad_for_empty_extreme(ctx, v, a, op)  # noqa: E731
            out = reduce_over_computed_axes(ctx, y, axes, op, keep, noop, prepare)
        elif not axes and noop:
            out = y if y is not x else ctx.call("identity", x)
        else:
            if op in ("max", "min"):
                y = _pad_for_empty_extreme(ctx, y, axes or None, op)
            out = ctx.call(op, y, axes=axes or None, keepdims=keep)
        if after is not None:
            out = ctx.call(after, out)
        return cast_to(ctx, out, dtype)

    return convert


def _pad_for_empty_extreme(ctx, y: Expr, axes, op: str) -> Expr:
    """ONNX's max (min) over an empty axis is the lowest (highest) value: when a reduced axis
    is statically empty, append that value along it so the IR reduction has an element."""
    shape = y.ty.shape
    if shape is None:
        return y
    rank = len(shape)
    reduced = range(rank) if axes is None else [a % rank for a in axes if -rank <= a < rank]
    empty = [a for a in reduced if isinstance(shape[a], int) and shape[a] == 0]
    if not empty:
        return y
    dtype = y.ty.dtype
    if dtype is DType.bool:
        fill = 0.0 if op == "max" else 1.0
    elif dtype.is_float:
        fill = -np.inf if op == "max" else np.inf
    else:
        info = np.iinfo(dtype.numpy)
        fill = float(info.min if op == "max" else info.max)
    pads = [0] * (2 * rank)
    for a in empty:
        pads[rank + a] = 1
    return ctx.call("pad", y, pads=pads, value=fill)


for _kind in _REDUCTIONS:
    converter(_kind, attrs=_REDUCE_ATTRS)(_reduce(_kind))  # axes: an attribute before v13 (v18)


@converter("ArgMax", "ArgMin", attrs=("axis", "keepdims", "select_last_index"))
def _arg(ctx):
    x = ctx.input(0)
    op = "argmax" if ctx.node.op_type == "ArgMax" else "argmin"
    rank = ctx.rank(0)
    axis = checked_axis(ctx, ctx.attr("axis", 0), rank)
    keep = bool(ctx.attr("keepdims", 1))
    if not ctx.attr("select_last_index", 0):
        return ctx.call(op, x, axis=axis, keepdims=keep)
    # the last extreme index: the first in the reversed axis, counted from the end
    n = x.ty.shape[axis]
    rev = ctx.call("strided_slice", x, begin=[-1], end=[-(2**63) + 1], strides=[-1], axes=[axis])
    idx = ctx.call(op, rev, axis=axis, keepdims=keep)
    if isinstance(n, int):
        last = ctx.constant(n - 1, I64)
    else:
        size = ctx.call("take", ctx.call("shape_of", x), ctx.constant(axis, I64), axis=0)
        last = ctx.call("subtract", size, ctx.constant(1, I64))
    return ctx.call("subtract", last, idx)


@converter("CumSum", attrs=("exclusive", "reverse"))
def _cumsum(ctx):
    x = ctx.input(0)
    flags = {"exclusive": bool(ctx.attr("exclusive", 0)), "reverse": bool(ctx.attr("reverse", 0))}
    if ctx.const(1) is not None:
        axis = ctx.const_ints(1, "axis")
        if len(axis) != 1:
            raise ConversionError("needs one axis")
        return ctx.call("cumsum", x, axis=axis[0], **flags)
    # a computed axis: the cumsum along each possible axis, chosen by Ifs
    rank = ctx.rank(0)
    axis = normalized_axes(ctx, ctx.input(1), rank)
    if axis.ty.shape != ():
        axis = ctx.call("reshape", axis, shape=[])
    out = ctx.call("cumsum", x, axis=0, **flags)
    for a in range(1, rank):
        is_a = ctx.call("equal", axis, ctx.constant(a, I64))
        out = select_if(ctx, is_a, ctx.call("cumsum", x, axis=a, **flags), out)
    return out
