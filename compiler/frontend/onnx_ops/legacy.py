"""Old op versions (ai.onnx opsets 1 to 12) whose form differs from the newer one: attributes
that later became inputs (Slice-1, Pad-2, Clip-6, TopK-1, Cast-1's string ``to``), legacy
broadcasting (``broadcast``/``axis`` of the binary ops before version 7), ``is_test`` modes
(BatchNormalization-6, Dropout-6), the 2-D coercion of Softmax/LogSoftmax/Hardmax before
version 13, and Scatter (ScatterElements before it was renamed).

Each converter here is registered with ``max_version`` for the op versions it implements; the
newer versions have their converter in the op's family module. An old version neither covers
(BatchNormalization-1, Split-1, Reshape-1, Tile-1, ...) is reported as unsupported.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.onnx_context import (
    ConversionError,
    ConvertContext,
    Unsupported,
    dtype_of,
)
from compiler.frontend.onnx_ops.elementwise import BINARY_OPS
from compiler.frontend.onnx_ops.nn import gemm
from compiler.frontend.onnx_ops.registry import (
    checked_axis,
    converter,
    static_dim,
)
from compiler.ir.nodes import Expr
from compiler.ir.symbolic import dim_str

FLT_MAX = float(np.finfo(np.float32).max)

# ----- legacy broadcasting (binary ops before version 7) ----------------------------------


def _legacy_broadcast(ctx: ConvertContext) -> tuple[Expr, Expr]:
    """A and B of a binary op of version 1-6: without ``broadcast=1`` the shapes must be
    equal; with it, B's shape matches a run of A's dims starting at ``axis`` (by default the
    trailing dims), so B gets trailing 1 dims and numpy broadcasting gives the same result."""
    a, b = ctx.input(0), ctx.input(1)
    sa, sb = a.ty.shape, b.ty.shape
    op = f"{ctx.node.op_type}-{ctx.version}"
    if not ctx.attr("broadcast", 0):
        if "axis" in ctx.attrs:
            raise ConversionError(f"{op}: axis is given without broadcast=1")
        if sa is not None and sb is not None:  # a symbolic dim is checked at run time
            differ = len(sa) != len(sb) or any(
                isinstance(x, int) and isinstance(y, int) and x != y
                for x, y in zip(sa, sb, strict=False)
            )
            if differ:
                raise ConversionError(
                    f"{op} without broadcast=1 needs equal shapes, got "
                    f"{[dim_str(d) for d in sa]} and {[dim_str(d) for d in sb]}"
                )
        return a, b
    if sa is None or sb is None:
        raise Unsupported(f"{op} with broadcast=1 on a value of unknown rank")
    ra, rb = len(sa), len(sb)
    if rb > ra:
        raise ConversionError(f"{op}: B has rank {rb}, more than A's {ra}")
    axis = ctx.attr("axis", ra - rb)
    if not -ra <= axis < max(ra, 1):
        raise ConversionError(f"{op}: axis {axis} is out of range for rank {ra}")
    axis %= max(ra, 1)
    if axis + rb > ra:
        raise ConversionError(f"{op}: B's {rb} dims do not fit in A's dims from axis {axis}")
    trailing = ra - axis - rb
    if trailing and rb:
        b = ctx.call("unsqueeze", b, axes=list(range(rb, rb + trailing)))
    return a, b


def _legacy_binary(ir_op: str):
    def convert(ctx: ConvertContext) -> Expr:
        a, b = _legacy_broadcast(ctx)
        return ctx.call(ir_op, a, b)

    return convert


# Add/Sub/Mul/Div have versions 1 and 6 with these attributes, the others version 1
for _onnx in ("Add", "Sub", "Mul", "Div", "And", "Or", "Xor", "Equal", "Greater", "Less"):
    converter(_onnx, attrs=("broadcast", "axis"), max_version=6)(_legacy_binary(BINARY_OPS[_onnx]))
converter("Pow", attrs=("broadcast", "axis"), max_version=6)(_legacy_binary("power"))


@converter("Gemm", attrs=("alpha", "beta", "transA", "transB", "broadcast"), max_version=6)
def _gemm_v6(ctx):
    """Gemm-1/6: C is required and, without broadcast=1, must be (M, N): both are the
    unidirectional broadcasting of Gemm-7 restricted to its valid inputs."""
    if not ctx.attr("broadcast", 0):
        a, b, c = ctx.ty(0), ctx.ty(1), ctx.ty(2)
        if a.shape is not None and b.shape is not None and c.shape is not None:
            m = a.shape[1] if ctx.attr("transA", 0) else a.shape[0]
            n = b.shape[0] if ctx.attr("transB", 0) else b.shape[1]
            static_differ = any(
                isinstance(x, int) and isinstance(y, int) and x != y
                for x, y in zip(c.shape, (m, n), strict=False)
            )
            if len(c.shape) != 2 or static_differ:
                raise ConversionError(
                    f"Gemm-{ctx.version} without broadcast=1 needs C of shape (M, N), got "
                    f"{[dim_str(d) for d in c.shape]}"
                )
    return gemm(ctx)


# ----- test-mode attributes ---------------------------------------------------------------


@converter(
    "BatchNormalization",
    attrs=("epsilon", "momentum", "spatial", "is_test"),
    min_version=6,
    max_version=8,
)
def _batch_norm_v7(ctx):
    """BatchNormalization-6 (with is_test=1) and -7: inference with the running statistics,
    per channel (spatial=1)."""
    op = f"BatchNormalization-{ctx.version}"
    if ctx.version < 7 and ctx.attr("is_test", 0) != 1:
        raise Unsupported(f"{op} in training mode (is_test=0)")
    if ctx.attr("spatial", 1) != 1:
        raise Unsupported(f"{op} with spatial=0 (statistics per element, not per channel)")
    args = [ctx.input(i) for i in range(5)]
    return ctx.call("batch_norm", *args, axis=1, epsilon=ctx.attr("epsilon", 1e-5))


@converter("Dropout", attrs=("ratio", "is_test"), max_version=6)
def _dropout_v6(ctx):
    """Dropout-1/6: the identity in test mode (is_test=1); the default is training."""
    if ctx.attr("is_test", 0) != 1:
        raise Unsupported(f"Dropout-{ctx.version} in training mode (is_test=0)")
    return ctx.call("identity", ctx.input(0)), None


# ----- attributes that became inputs ------------------------------------------------------


@converter("Clip", attrs=("min", "max"), max_version=10)
def _clip_v6(ctx):
    """Clip-1/6: bounds as attributes (version 6 defaults to -FLT_MAX and FLT_MAX)."""
    x = ctx.input(0)
    if not x.ty.dtype.is_float:
        raise ConversionError(f"Clip-{ctx.version} needs a floating-point input")
    default_lo, default_hi = (-FLT_MAX, FLT_MAX) if ctx.version >= 6 else (None, None)
    lo, hi = ctx.attr("min", default_lo), ctx.attr("max", default_hi)
    if lo is None and hi is None:
        return ctx.call("identity", x)
    return ctx.call(
        "clip", x, min=None if lo is None else float(lo), max=None if hi is None else float(hi)
    )


@converter("Cast", attrs=("to",), max_version=5)
def _cast_v1(ctx):
    """Cast-1: ``to`` is the name of the type ("FLOAT", ...)."""
    from onnx import TensorProto

    name = ctx.attr("to")
    if not isinstance(name, str):
        raise ConversionError("Cast-1 needs `to` as a type name")
    try:
        code = TensorProto.DataType.Value(name.upper())
    except ValueError:
        raise ConversionError(f"Cast-1: unknown type {name!r}") from None
    return ctx.call("cast", ctx.input(0), dtype=dtype_of(code))


@converter("Concat", attrs=("axis",), max_version=3)
def _concat_v1(ctx):
    """Concat-1: axis is optional, 1 by default."""
    args = [ctx.input(i) for i in range(ctx.num_inputs)]
    return ctx.call("concat", *args, axis=ctx.attr("axis", 1))


def _ints(ctx: ConvertContext, name: str, required: bool) -> list[int] | None:
    value = ctx.attr(name)
    if value is None:
        if required:
            raise ConversionError(f"{ctx.node.op_type}-{ctx.version} needs the {name} attribute")
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise ConversionError(f"{name} must be a list of ints")
    return [int(v) for v in value]


@converter("Slice", attrs=("starts", "ends", "axes"), max_version=9)
def _slice_v1(ctx):
    """Slice-1: starts, ends and axes are attributes; the step is 1."""
    starts, ends = _ints(ctx, "starts", True), _ints(ctx, "ends", True)
    axes = _ints(ctx, "axes", False)
    if len(starts) != len(ends) or (axes is not None and len(axes) != len(starts)):
        raise ConversionError(
            f"Slice-1: starts {starts}, ends {ends} and axes {axes} differ in length"
        )
    if len(starts) > ctx.rank(0):
        raise ConversionError(f"Slice-1: {len(starts)} starts for an input of rank {ctx.rank(0)}")
    return ctx.call("strided_slice", ctx.input(0), begin=starts, end=ends, strides=None, axes=axes)


@converter("Pad", attrs=("pads", "paddings", "mode", "value"), max_version=10)
def _pad_v2(ctx):
    """Pad-1/2: pads (``paddings`` in version 1) and the fill value are attributes."""
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise Unsupported(f"mode {mode}")
    pads = _ints(ctx, "pads" if ctx.version >= 2 else "paddings", True)
    rank = ctx.rank(0)
    if len(pads) != 2 * rank:
        raise ConversionError(f"Pad-{ctx.version}: {len(pads)} pads for an input of rank {rank}")
    value = float(ctx.attr("value", 0.0))
    return ctx.call("pad", ctx.input(0), pads=pads, mode=mode, value=value)


@converter("TopK", attrs=("k", "axis"), max_version=9)
def _topk_v1(ctx):
    """TopK-1: k is an attribute; the largest, sorted."""
    k = ctx.attr("k")
    if not isinstance(k, int) or k < 0:
        raise ConversionError(f"TopK-1 needs a k attribute of at least 0, got {k}")
    out = ctx.call("topk", ctx.input(0), k=k, axis=ctx.attr("axis", -1), largest=True)
    return ctx.tuple_item(out, 0), ctx.tuple_item(out, 1)


# ----- the 2-D coercion of Softmax, LogSoftmax, Hardmax before version 13 ------------------


@converter("Softmax", "LogSoftmax", attrs=("axis",), max_version=12)
def _softmax_v11(ctx):
    """Softmax-1/11 (LogSoftmax): the input is seen as 2-D, (dims before axis) x (dims from
    axis, default 1), and normalised over the second: a softmax over every dim from axis."""
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = checked_axis(ctx, ctx.attr("axis", 1), rank)
    log = ctx.node.op_type == "LogSoftmax"
    if axis == rank - 1 or rank == 0:
        return ctx.call("log_softmax" if log else "softmax", x, axis=-1)
    if not x.ty.dtype.is_float:
        raise ConversionError(f"{ctx.node.op_type} needs a floating-point input")
    axes = list(range(axis, rank))
    shifted = ctx.call("subtract", x, ctx.call("max", x, axes=axes, keepdims=True))
    e = ctx.call("exp", shifted)
    total = ctx.call("sum", e, axes=axes, keepdims=True)
    if log:
        return ctx.call("subtract", shifted, ctx.call("log", total))
    return ctx.call("divide", e, total)


@converter("Hardmax", attrs=("axis",), max_version=12)
def _hardmax_v11(ctx):
    """Hardmax-1/11: one-hot of the (first) largest of the dims from axis (default 1), seen
    as one flattened dim; static sizes of those dims are needed."""
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = checked_axis(ctx, ctx.attr("axis", 1), rank)
    shape = x.ty.shape
    tail = [static_dim(d, ctx, f"size of dim {a}") for a, d in enumerate(shape) if a >= axis]
    depth = int(np.prod(tail)) if tail else 1
    flat = ctx.call("flatten", x, start_dim=axis, end_dim=-1) if rank - axis > 1 else x
    idx = ctx.call("argmax", flat, axis=axis, keepdims=False)
    hot = ctx.call("one_hot", idx, depth=depth, axis=axis, dtype=x.ty.dtype)
    if rank - axis <= 1:
        return hot
    head = [static_dim(d, ctx, f"size of dim {a}") for a, d in enumerate(shape) if a < axis]
    return ctx.call("reshape", hot, shape=[*head, *tail])


# ----- renamed ops ------------------------------------------------------------------------


@converter("Scatter", attrs=("axis",), min_version=9)
def _scatter(ctx):
    """Scatter-9/11: ScatterElements (deprecated under this name in opset 11)."""
    indices = ctx.input(1)
    if indices.ty.dtype.is_float:
        raise ConversionError("Scatter needs integer indices")
    return ctx.call(
        "scatter_elements",
        ctx.input(0),
        indices,
        ctx.input(2),
        axis=ctx.attr("axis", 0),
        reduction="none",
    )
