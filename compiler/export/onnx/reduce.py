"""The ONNX form of reductions: sums, means, extrema, variance, arg-extrema and cumulative
sums."""

from __future__ import annotations

import math
from collections.abc import Sequence

from compiler.export.onnx.common import dtype_of, scalar_like
from compiler.export.onnx.elementwise import NARROW_DTYPES
from compiler.export.onnx.registry import ExportError, exporter
from compiler.export.onnx.writer import node_label
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.ir.types import DType


def reduce_node(e, op: str, x: str, axes: Sequence[int] | None, keepdims: bool) -> str:
    """ReduceX with axes in the form the opset wants (ReduceSum: input from 13, others 18)."""
    keep = int(keepdims)
    if axes is None:
        return e.node(op, [x], keepdims=keep)
    if op == "ReduceSum" or e.opset >= 18:
        return e.node(op, [x, e.i64(list(axes))], keepdims=keep)
    return e.node(op, [x], axes=list(axes), keepdims=keep)


_REDUCE = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "prod": "ReduceProd",
}


@exporter(*_REDUCE)
def _reduce_op(e, n, a):
    axes = n.attrs["axes"]
    rank = n.args[0].ty.ndim
    if rank == 0:
        return e.node("Identity", a)
    dtype = dtype_of(n.args[0])
    if dtype in NARROW_DTYPES and n.op in ("max", "min"):
        wide = e.node("Cast", a, to=ONNX_DTYPE[DType.int32])
        y = reduce_node(e, _REDUCE[n.op], wide, axes, n.attrs["keepdims"])
        return e.node("Cast", [y], to=ONNX_DTYPE[dtype])
    return reduce_node(e, _REDUCE[n.op], a[0], axes, n.attrs["keepdims"])


@exporter("variance", "std")
def _variance(e, n, a):
    data = n.args[0]
    axes = n.attrs["axes"]
    rank = data.ty.ndim
    if rank is None:
        raise ExportError(f"{node_label(n)}: needs a known rank")
    reduced = list(range(rank)) if axes is None else sorted(ax % rank for ax in axes)
    x = a[0]
    mean = reduce_node(e, "ReduceMean", x, reduced, True)
    d = e.node("Sub", [x, mean])
    ss = reduce_node(e, "ReduceSum", e.node("Mul", [d, d]), reduced, n.attrs["keepdims"])
    dims = [data.ty.shape[i] for i in reduced]
    if all(isinstance(d_, int) for d_ in dims):
        count = scalar_like(e, max(math.prod(dims) - n.attrs["correction"], 0), data)
    else:
        shape = e.node("Shape", [x])
        picked = e.node("Gather", [shape, e.i64(reduced)])
        total = e.node("ReduceProd", [picked], keepdims=0)
        total = e.node("Cast", [total], to=ONNX_DTYPE[dtype_of(data)])
        count = e.node("Sub", [total, scalar_like(e, n.attrs["correction"], data)])
        count = e.node("Max", [count, scalar_like(e, 0, data)])
    var = e.node("Div", [ss, count])
    return var if n.op == "variance" else e.node("Sqrt", [var])


@exporter("argmax", "argmin")
def _arg(e, n, a):
    op = "ArgMax" if n.op == "argmax" else "ArgMin"
    axis, keep = n.attrs["axis"], n.attrs["keepdims"]
    rank = n.args[0].ty.ndim
    if axis is not None:
        return e.node(op, a, axis=axis, keepdims=int(keep))
    flat = e.node("Reshape", [a[0], e.i64([-1])])
    y = e.node(op, [flat], axis=0, keepdims=0)
    if keep:
        if rank is None:
            raise ExportError(f"{node_label(n)}: keepdims over every axis needs a known rank")
        y = e.node("Reshape", [y, e.i64([1] * rank)])
    return y


@exporter("cumsum")
def _cumsum(e, n, a):
    return e.node(
        "CumSum",
        [a[0], e.i64(n.attrs["axis"])],
        exclusive=int(n.attrs["exclusive"]),
        reverse=int(n.attrs["reverse"]),
    )
