"""The ONNX form of indexing IR ops: gathers and scatters, nonzero, bincount, one-hot,
triangles and top-k."""

from __future__ import annotations

from compiler.export.onnx.registry import ExportError, exporter
from compiler.export.onnx.shape import fill_tensor
from compiler.export.onnx.writer import node_label
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.ir.symbolic import SymExpr
from compiler.ir.types import DType


@exporter("take")
def _take(e, n, a):
    return e.node("Gather", a, axis=n.attrs["axis"])


@exporter("nonzero")
def _nonzero(e, n, a):
    return e.node("NonZero", a)


@exporter("bincount")
def _bincount(e, n, a):
    """max(max(x) + 1, minlength) zeros, then a ScatterElements add of ones (or weights)."""
    dtype = n.attrs["dtype"]
    x = e.node("Cast", [a[0]], to=ONNX_DTYPE[DType.int64])
    top = e.node("Add", [e.node("ReduceMax", [x], keepdims=1), e.i64([1])])
    length = e.node("Max", [top, e.i64([n.attrs["minlength"]])])
    zeros = e.node("ConstantOfShape", [length], value=fill_tensor(0, dtype))
    if len(a) > 1:
        updates = e.node("Cast", [a[1]], to=ONNX_DTYPE[dtype])
    else:
        updates = e.node("Expand", [e.const(1, dtype), e.node("Shape", [x])])
    return e.node("ScatterElements", [zeros, x, updates], axis=0, reduction="add")


@exporter("gather_elements")
def _gather_elements(e, n, a):
    return e.node("GatherElements", a, axis=n.attrs["axis"])


@exporter("scatter_elements")
def _scatter_elements(e, n, a):
    data, indices, updates = n.args
    upd = a[2]
    if indices.ty.shape != updates.ty.shape:  # only the leading block of updates is read
        ends = e.node("Shape", [a[1]])
        starts = e.i64([0] * len(indices.ty.shape))
        upd = e.node("Slice", [upd, starts, ends])
    reduction = n.attrs["reduction"]
    if reduction in ("max", "min") and e.opset < 18:
        raise ExportError(f"{node_label(n)}: reduction {reduction} needs opset 18")
    return e.node("ScatterElements", [a[0], a[1], upd], axis=n.attrs["axis"], reduction=reduction)


@exporter("one_hot")
def _one_hot(e, n, a):
    dtype = n.attrs["dtype"]
    values = e.const([n.attrs["off_value"], n.attrs["on_value"]], dtype)
    return e.node("OneHot", [a[0], e.i64(n.attrs["depth"]), values], axis=n.attrs["axis"])


@exporter("tril", "triu")
def _trilu(e, n, a):
    k = n.attrs["k"]
    kname = e.scalar(k) if isinstance(k, SymExpr) else e.i64(int(k))
    return e.node("Trilu", [a[0], kname], upper=int(n.op == "triu"))


@exporter("topk")
def _topk(e, n, a):
    k = n.attrs["k"]
    if k == -1:  # the whole axis: its size, read from the data
        axis = n.attrs["axis"] % len(n.args[0].ty.shape)
        kname = e.node("Slice", [e.node("Shape", [a[0]]), e.i64([axis]), e.i64([axis + 1])])
    else:
        kname = e.i64([k])
    return e.node(
        "TopK",
        [a[0], kname],
        outputs=2,
        axis=n.attrs["axis"],
        largest=int(n.attrs["largest"]),
        sorted=1,
    )
