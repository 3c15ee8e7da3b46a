"""The ONNX form of shape IR ops: reshapes (a symbolic target computed from the input
shapes), permutations, squeezes, expansions, concatenation and splits, slices, padding and
tensor factories."""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.export.onnx.common import dtype_of
from compiler.export.onnx.registry import ExportError, exporter
from compiler.export.onnx.writer import dims_of, node_label
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.ir.nodes import Call
from compiler.ir.symbolic import ANY, SymExpr
from compiler.ir.types import DType

INT64_MAX = 2**63 - 1


def _result_shape(e, n: Call) -> str | None:
    """The result's shape as an i64 tensor when every dim is known (ints or symbols)."""
    dims = dims_of(n.ty)
    if dims is None or any(d is ANY for d in dims):
        return None
    try:
        return e.dims(dims)
    except ExportError:
        return None


@exporter("match_shape")
def _match_shape(e, n, a):
    return e.node("Identity", [a[0]])  # its symbols name dims the value already has


@exporter("reshape")
def _reshape(e, n, a):
    allowzero = int(n.attrs["allowzero"])
    if len(a) == 2:
        return e.node("Reshape", a, allowzero=allowzero)
    target = list(n.attrs["shape"])
    if any(isinstance(d, SymExpr) for d in target):
        known = _result_shape(e, n)
        if known is not None:
            return e.node("Reshape", [a[0], known])
    return e.node("Reshape", [a[0], e.dims(target)], allowzero=allowzero)


@exporter("permute_dims")
def _permute(e, n, a):
    axes = n.attrs["axes"]
    return e.node("Transpose", a, perm=list(axes) if axes is not None else None)


@exporter("squeeze")
def _squeeze(e, n, a):
    axes = n.attrs["axes"]
    if axes is None:
        return e.node("Squeeze", a)
    return e.node("Squeeze", [a[0], e.i64(list(axes))])


@exporter("unsqueeze")
def _unsqueeze(e, n, a):
    return e.node("Unsqueeze", [a[0], e.i64(list(n.attrs["axes"]))])


def _computed_shape_reshape(e, n: Call, x: str, pieces) -> str:
    known = _result_shape(e, n)
    if known is not None:
        return e.node("Reshape", [x, known])
    return e.node("Reshape", [x, e.node("Concat", pieces(), axis=0)])


@exporter("flatten")
def _flatten(e, n, a):
    data = n.args[0]
    rank = data.ty.ndim
    if rank == 0:
        return e.node("Reshape", [a[0], e.i64([1])])

    def pieces():
        start, end = n.attrs["start_dim"] % rank, n.attrs["end_dim"] % rank
        shape = e.node("Shape", [a[0]])
        out = []
        if start > 0:
            out.append(e.node("Slice", [shape, e.i64([0]), e.i64([start])]))
        out.append(e.i64([-1]))
        if end + 1 < rank:
            out.append(e.node("Slice", [shape, e.i64([end + 1]), e.i64([rank])]))
        return out

    if rank is None:
        if n.attrs["start_dim"] == 0 and n.attrs["end_dim"] == -1:
            return e.node("Reshape", [a[0], e.i64([-1])])
        raise ExportError(f"{node_label(n)}: flatten of unknown rank")
    return _computed_shape_reshape(e, n, a[0], pieces)


@exporter("broadcast_to", "expand")
def _expand(e, n, a):
    known = _result_shape(e, n)
    if known is not None:
        return e.node("Expand", [a[0], known])
    target = list(n.attrs["shape"])
    if n.op == "expand":  # -1 keeps the input's dim: 1 in a bidirectional Expand does that
        target = [1 if isinstance(d, int) and d == -1 else d for d in target]
    return e.node("Expand", [a[0], e.dims(target)])


@exporter("tile")
def _tile(e, n, a):
    reps = list(n.attrs["repeats"])
    rank = n.args[0].ty.ndim
    if rank is None:
        raise ExportError(f"{node_label(n)}: tile of unknown rank")
    x = a[0]
    if len(reps) > rank:
        x = e.node("Unsqueeze", [x, e.i64(list(range(len(reps) - rank)))])
    reps = [1] * (max(rank, len(reps)) - len(reps)) + reps
    return e.node("Tile", [x, e.i64(reps)])


@exporter("repeat")
def _repeat(e, n, a):
    reps, axis = n.attrs["repeats"], n.attrs["axis"]
    x = a[0]
    data = n.args[0]
    if axis is None:
        x, rank, axis = e.node("Reshape", [x, e.i64([-1])]), 1, 0
    else:
        rank = data.ty.ndim
        axis %= rank
    spread = e.node("Unsqueeze", [x, e.i64([axis + 1])])
    tiles = [1] * (rank + 1)
    tiles[axis + 1] = reps
    tiled = e.node("Tile", [spread, e.i64(tiles)])
    known = _result_shape(e, n)
    if known is None:
        mult = [1] * rank
        mult[axis] = reps
        known = e.node("Mul", [e.node("Shape", [x]), e.i64(mult)])
    return e.node("Reshape", [tiled, known])


@exporter("concat")
def _concat(e, n, a):
    return e.node("Concat", a, axis=n.attrs["axis"])


@exporter("split")
def _split(e, n, a):
    data = n.args[0]
    rank = data.ty.ndim
    axis = n.attrs["axis"] % rank
    spec = n.attrs["indices_or_sections"]
    if isinstance(spec, int):
        d = data.ty.shape[axis]
        if isinstance(d, int):
            bounds = [i * (d // spec) for i in range(spec + 1)]
            points = [e.i64([b]) for b in bounds]
        else:
            size = e.node("Div", [e.dim_of(a[0], data.ty, axis), e.i64([spec])])
            points = [e.node("Mul", [size, e.i64([i])]) for i in range(spec + 1)]
    else:
        points = [e.i64([0])] + [e.i64([i]) for i in spec] + [e.i64([INT64_MAX])]
    axes = e.i64([axis])
    return [
        e.node("Slice", [a[0], lo, hi, axes])
        for lo, hi in zip(points[:-1], points[1:], strict=True)
    ]


@exporter("strided_slice")
def _strided_slice(e, n, a):
    begin, end = list(n.attrs["begin"]), list(n.attrs["end"])
    axes = n.attrs["axes"]
    axes = list(axes) if axes is not None else list(range(len(begin)))
    strides = n.attrs["strides"]
    inputs = [a[0], e.i64(begin), e.i64(end), e.i64(axes)]
    if strides is not None:
        inputs.append(e.i64(list(strides)))
    return e.node("Slice", inputs)


@exporter("pad")
def _pad(e, n, a):
    data = n.args[0]
    mode = n.attrs["mode"]
    pads = a[1] if len(a) > 1 else e.i64(list(n.attrs["pads"]))
    inputs = [a[0], pads]
    if mode == "constant":
        inputs.append(e.const(n.attrs["value"], dtype_of(data)))
    return e.node("Pad", inputs, mode=mode)


@exporter("shape_of")
def _shape_of(e, n, a):
    return e.node("Shape", a)


def fill_tensor(value: Any, dtype: DType):
    """The one-element TensorProto ConstantOfShape fills with."""
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray([value]).astype(dtype.numpy))


@exporter("full", "zeros", "ones")
def _full(e, n, a):
    value = {"zeros": 0, "ones": 1}.get(n.op, n.attrs.get("value"))
    dtype = n.attrs["dtype"]
    return e.node(
        "ConstantOfShape", [e.dims(list(n.attrs["shape"]))], value=fill_tensor(value, dtype)
    )


@exporter("full_like", "zeros_like", "ones_like")
def _full_like(e, n, a):
    value = {"zeros_like": 0, "ones_like": 1}.get(n.op, n.attrs.get("value"))
    dtype = n.ty.dtype
    return e.node("ConstantOfShape", [e.node("Shape", a)], value=fill_tensor(value, dtype))


@exporter("arange")
def _arange(e, n, a):
    dtype = n.ty.dtype
    compute = (
        dtype
        if dtype in (DType.int32, DType.int64, DType.float32, DType.float64)
        else (DType.float32 if dtype.is_float else DType.int64)
    )
    start, stop, step = (n.attrs[k] for k in ("start", "stop", "step"))
    args = [
        e.scalar(v, compute) if isinstance(v, SymExpr) else e.const(v, compute)
        for v in (start, stop, step)
    ]
    y = e.node("Range", args)
    return y if compute is dtype else e.node("Cast", [y], to=ONNX_DTYPE[dtype])
