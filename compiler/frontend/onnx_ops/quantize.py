"""Quantization: QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked),
DynamicQuantizeLinear, and the integer ops QLinearMatMul, QLinearConv, MatMulInteger,
ConvInteger.

QuantizeLinear / DequantizeLinear become the IR ops ``quantize`` / ``dequantize`` (so a
stepper shows quantization as ops) with scale and zero point reshaped to broadcast against
``x``: a per-axis (C,) scale becomes (C, 1, ..., 1), a blocked scale is repeated along its
axis and cut to ``x``'s dim. The integer ops are integer arithmetic on i32 values with the
zero points subtracted first (``(x - zx) @ (w - zw)`` accumulates in i32; a convolution,
which the IR has for floats only, runs exactly in f64 and is cast back to i32), then
requantized as ONNX's reference does: ``round(acc * (sx * sw / sy)) + zy``, saturated.

The quantized dtype comes from the zero point or ``output_dtype`` through
:func:`~compiler.frontend.onnx_context.dtype_of`, so any integer dtype the IR has works.
Float targets (float8e4m3fn / fnuz, float8e5m2 / fnuz, float4e2m1) compose existing ops, as
onnx's reference computes them: ``x / scale`` clipped to the type's largest finite value
when ``saturate`` (the default; float4e2m1 always saturates) then a ``cast``; dequantizing is
``cast(x, f32) * scale``. A float8 zero point must be 0: a constant one that is not is an
error, one given at run time is ignored, as the reference does; float4e2m1 quantizing adds
its zero point before the cast and dequantizing ignores it, as the reference does. These
types run in the interpreter only (the LLVM backend does not compile them).
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.onnx_context import ConversionError, Unsupported, dtype_of
from compiler.frontend.onnx_ops.nn import window_attrs
from compiler.frontend.onnx_ops.registry import cast_to, checked_axis, converter, static_dim
from compiler.ir.nodes import Expr
from compiler.ir.types import DType

I32 = DType.int32
F32 = DType.float32
F64 = DType.float64


_FLOAT_TARGETS = (
    DType.float8e4m3fn,
    DType.float8e4m3fnuz,
    DType.float8e5m2,
    DType.float8e5m2fnuz,
    DType.float4e2m1,
)


def _zero_zero_point(ctx, index: int, dtype: DType) -> None:
    """A float8 zero point (input ``index``) must be 0: checked when it is a constant."""
    if not ctx.has(index):
        return
    zp = ctx.input(index)
    if zp.ty.dtype is not dtype:
        raise ConversionError(f"the zero point is {zp.ty.dtype} but the quantized type {dtype}")
    value = ctx.const(index)
    if dtype is not DType.float4e2m1 and value is not None:
        if np.any(np.asarray(value, np.float32) != 0):
            raise ConversionError(f"a {dtype} zero point must be 0")


def _float_max(dtype: DType) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(dtype.numpy).max)


def _quantize_float(ctx, x: Expr, dtype: DType) -> Expr:
    """QuantizeLinear to a float8 / float4 type: ``cast(clip(x / scale))``."""
    saturate = ctx.attr("saturate", 1)
    if saturate not in (0, 1):
        raise ConversionError(f"saturate must be 0 or 1, got {saturate!r}")
    _zero_zero_point(ctx, 2, dtype)
    if x.ty.dtype is not F32:
        x = cast_to(ctx, x, F32)
    axis, block = ctx.attr("axis", 1), ctx.attr("block_size", 0)
    scale = _qparam(ctx, ctx.input(1), x, axis, block, "scale")
    if not scale.ty.dtype.is_float:
        raise ConversionError(f"the scale must be a float, got {scale.ty.dtype}")
    y = ctx.call("divide", x, cast_to(ctx, scale, F32))
    if dtype is DType.float4e2m1 and ctx.has(2):
        zp = _qparam(ctx, ctx.input(2), x, axis, block, "zero point")
        y = ctx.call("add", y, cast_to(ctx, zp, F32))
    if saturate or dtype is DType.float4e2m1:  # (float4e2m1 has no inf: it always saturates)
        largest = _float_max(dtype)
        y = ctx.call("clip", y, min=-largest, max=largest)
    return ctx.call("cast", y, dtype=dtype)


def _dequantize_float(ctx, x: Expr) -> Expr:
    """DequantizeLinear from a float8 / float4 type: ``cast(x, f32) * scale``, of the scale's
    dtype."""
    _zero_zero_point(ctx, 2, x.ty.dtype)
    scale = ctx.input(1)
    if not scale.ty.dtype.is_float:
        raise ConversionError(f"the scale must be a float, got {scale.ty.dtype}")
    axis, block = ctx.attr("axis", 1), ctx.attr("block_size", 0)
    scale = _qparam(ctx, scale, x, axis, block, "scale")
    y = ctx.call("multiply", cast_to(ctx, x, F32), cast_to(ctx, scale, F32))
    out = ctx.attr("output_dtype", 0)
    return cast_to(ctx, y, dtype_of(out) if out else scale.ty.dtype)


def _quantized_dtype(ctx, dtype: DType) -> DType:
    if not dtype.is_int:
        raise Unsupported(f"{ctx.node.op_type} to or from {dtype} (only integer types)")
    return dtype


def _numel(e: Expr) -> int | None:
    shape = e.ty.shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return int(np.prod(shape, dtype=np.int64))


def _qparam(ctx, p: Expr, x: Expr, axis: int, block_size: int, what: str) -> Expr:
    """A scale or zero point of a QuantizeLinear / DequantizeLinear reshaped to broadcast
    against ``x``: one element -> a scalar; 1-D -> per axis; same rank -> per block."""
    rank = ctx.rank(0)
    pshape = p.ty.shape
    if pshape is None:
        raise Unsupported(f"a {what} of unknown rank")
    if _numel(p) == 1 and (not block_size or len(pshape) != rank):
        return p if pshape == () else ctx.call("reshape", p, shape=[])
    if block_size:
        if block_size < 0:
            raise ConversionError(f"block_size must be positive, got {block_size}")
        if len(pshape) != rank:
            raise ConversionError(f"a blocked {what} must have x's rank {rank}, got {p.ty}")
        a = checked_axis(ctx, axis, rank)
        xdim = static_dim(x.ty.shape[a], ctx, "blocked dim")
        pdim = static_dim(pshape[a], ctx, f"{what} dim")
        if pdim != -(-xdim // block_size):
            raise ConversionError(
                f"a {what} of {pdim} blocks does not cover dim {a} of size {xdim} in blocks "
                f"of {block_size}"
            )
        for k, (dx, dp) in enumerate(zip(x.ty.shape, pshape, strict=True)):
            if k != a and isinstance(dx, int) and isinstance(dp, int) and dx != dp:
                raise ConversionError(f"a blocked {what} {p.ty} does not match x {x.ty}")
        if pdim == 1:  # one block covers the axis: the size-1 dim broadcasts
            return p
        rep = ctx.call("repeat", p, repeats=block_size, axis=a)
        if pdim * block_size == xdim:
            return rep
        return ctx.call("strided_slice", rep, begin=[0], end=[xdim], axes=[a])
    if len(pshape) != 1:
        raise ConversionError(f"the {what} must be a scalar or 1-D (per axis), got {p.ty}")
    if rank == 0:
        raise ConversionError(f"a per-axis {what} for a 0-d input")
    a = checked_axis(ctx, axis, rank)
    n, dx = pshape[0], x.ty.shape[a]
    if isinstance(n, int) and isinstance(dx, int) and n != dx:
        raise ConversionError(f"a per-axis {what} of {n} values for axis {a} of size {dx}")
    trailing = rank - 1 - a
    return p if not trailing else ctx.call("unsqueeze", p, axes=list(range(1, 1 + trailing)))


def _check_precision(ctx) -> None:
    precision = ctx.attr("precision", 0)
    if precision not in (0, 1):  # 0: the input's precision; 1: FLOAT
        raise Unsupported(f"QuantizeLinear with precision {precision} (only float32)")


@converter(
    "QuantizeLinear",
    attrs=("axis", "saturate", "block_size", "output_dtype", "precision"),
    min_version=10,
)
def _quantize_linear(ctx):
    x = ctx.input(0)
    _check_precision(ctx)
    out = ctx.attr("output_dtype", 0)
    out_dtype = dtype_of(out) if out else None
    target = ctx.input(2).ty.dtype if ctx.has(2) else out_dtype
    if target in _FLOAT_TARGETS and out_dtype in (None, target):
        return _quantize_float(ctx, x, target)
    if ctx.has(2):
        zp = ctx.input(2)
        if out_dtype is not None and out_dtype is not zp.ty.dtype:
            raise ConversionError(
                f"output_dtype {out_dtype} differs from the zero point's {zp.ty.dtype}"
            )
        dtype = _quantized_dtype(ctx, zp.ty.dtype)
    else:
        dtype = _quantized_dtype(ctx, out_dtype or DType.uint8)
        zp = ctx.constant(0, dtype)
    if not x.ty.dtype.is_float:
        x = cast_to(ctx, x, F32)  # opsets 10-18 also take int32 x
    axis, block = ctx.attr("axis", 1), ctx.attr("block_size", 0)
    scale = _qparam(ctx, ctx.input(1), x, axis, block, "scale")
    zp = _qparam(ctx, zp, x, axis, block, "zero point")
    return ctx.call("quantize", x, scale, zp)


@converter("DequantizeLinear", attrs=("axis", "block_size", "output_dtype"), min_version=10)
def _dequantize_linear(ctx):
    x = ctx.input(0)
    if x.ty.dtype in _FLOAT_TARGETS:
        return _dequantize_float(ctx, x)
    dtype = _quantized_dtype(ctx, x.ty.dtype)
    zp = ctx.input(2) if ctx.has(2) else ctx.constant(0, dtype)
    if zp.ty.dtype is not dtype:
        raise ConversionError(f"the zero point is {zp.ty.dtype} but x is {dtype}")
    axis, block = ctx.attr("axis", 1), ctx.attr("block_size", 0)
    scale = ctx.input(1)
    if not scale.ty.dtype.is_float:
        raise ConversionError(f"the scale must be a float, got {scale.ty.dtype}")
    scale = _qparam(ctx, scale, x, axis, block, "scale")
    zp = _qparam(ctx, zp, x, axis, block, "zero point")
    y = ctx.call("dequantize", x, scale, zp)
    out = ctx.attr("output_dtype", 0)
    return cast_to(ctx, y, dtype_of(out)) if out else y


@converter("DynamicQuantizeLinear", min_version=11)
def _dynamic_quantize_linear(ctx):
    """uint8 quantization with a scale and zero point computed from the input's range (which
    always holds 0): scale = (max - min) / 255 (1 / 255 when max == min), zero point =
    saturate(round(-min / scale))."""
    x = ctx.input(0)
    if x.ty.dtype is not F32:
        raise ConversionError(f"DynamicQuantizeLinear needs a float32 input, got {x.ty.dtype}")
    zero = ctx.constant(0.0, F32)
    hi = ctx.call("maximum", ctx.call("max", x), zero)
    lo = ctx.call("minimum", ctx.call("min", x), zero)
    span = ctx.call("subtract", hi, lo)
    span = ctx.call("where", ctx.call("equal", hi, lo), ctx.constant(1.0, F32), span)
    scale = ctx.call("divide", span, ctx.constant(255.0, F32))
    zp = ctx.call("quantize", ctx.call("neg", lo), scale, ctx.constant(0, DType.uint8))
    return ctx.call("quantize", x, scale, zp), scale, zp


# ----- integer arithmetic ---------------------------------------------------------------------


def _minus_zero_point(ctx, q: Expr, zp: Expr | None) -> Expr:
    """``q - zp`` in i32 (exact for 8- and 16-bit values)."""
    _quantized_dtype(ctx, q.ty.dtype)
    q32 = cast_to(ctx, q, I32)
    if zp is None:
        return q32
    if zp.ty.dtype is not q.ty.dtype:
        raise ConversionError(f"a zero point of {zp.ty.dtype} for a {q.ty.dtype} input")
    return ctx.call("subtract", q32, cast_to(ctx, zp, I32))


def _vector_param(ctx, p: Expr | None, rank: int, axis: int, size, what: str) -> Expr | None:
    """A scalar or 1-D (per ``axis``) parameter shaped to broadcast against a rank-``rank``
    value (``size`` the dim it runs along)."""
    if p is None:
        return None
    shape = p.ty.shape
    if shape is None:
        raise Unsupported(f"a {what} of unknown rank")
    if _numel(p) == 1:
        return p if shape == () else ctx.call("reshape", p, shape=[])
    if len(shape) != 1:
        raise ConversionError(f"the {what} must be a scalar or 1-D, got {p.ty}")
    if isinstance(shape[0], int) and isinstance(size, int) and shape[0] != size:
        raise ConversionError(f"the {what} has {shape[0]} values for a dim of {size}")
    trailing = rank - 1 - axis
    return p if not trailing else ctx.call("unsqueeze", p, axes=list(range(1, 1 + trailing)))


def _requantize(ctx, acc: Expr, in_scale: Expr, y_scale: Expr, y_zp: Expr | None) -> Expr:
    """``saturate(round(acc * (in_scale / y_scale)) + y_zp)`` for an i32 accumulator."""
    if not in_scale.ty.dtype.is_float or not y_scale.ty.dtype.is_float:
        raise ConversionError("scales must be floats")
    ratio = ctx.call("divide", in_scale, cast_to(ctx, y_scale, in_scale.ty.dtype))
    real = ctx.call("multiply", cast_to(ctx, acc, F32), cast_to(ctx, ratio, F32))
    zp = y_zp if y_zp is not None else ctx.constant(0, DType.uint8)
    return ctx.call("quantize", real, ctx.constant(1.0, F32), zp)


def _opt(ctx, i: int) -> Expr | None:
    return ctx.input(i) if ctx.has(i) else None


def _matmul_operands(ctx, a, a_zp, b, b_zp):
    ra, rb = ctx.rank(0), len(b.ty.shape) if b.ty.shape is not None else None
    if ra < 1 or rb is None or rb < 1:
        raise Unsupported("an integer matmul of unknown or 0 rank")
    # a's zero point may be per row (M), b's per column (N)
    a_zp = _vector_param(ctx, a_zp, ra, ra - 2, a.ty.shape[-2] if ra > 1 else 1, "a zero point")
    b_zp = _vector_param(ctx, b_zp, rb, rb - 1, b.ty.shape[-1], "b zero point")
    return _minus_zero_point(ctx, a, a_zp), _minus_zero_point(ctx, b, b_zp)


@converter("MatMulInteger", min_version=10)
def _matmul_integer(ctx):
    a, b = ctx.input(0), ctx.input(1)
    a32, b32 = _matmul_operands(ctx, a, _opt(ctx, 2), b, _opt(ctx, 3))
    return ctx.call("matmul", a32, b32, out_dtype=I32)


@converter("QLinearMatMul", min_version=10)
def _qlinear_matmul(ctx):
    a, b = ctx.input(0), ctx.input(3)
    a32, b32 = _matmul_operands(ctx, a, _opt(ctx, 2), b, _opt(ctx, 5))
    acc = ctx.call("matmul", a32, b32, out_dtype=I32)
    if acc.ty.shape is None:
        raise Unsupported("an integer matmul of unknown rank")
    rank = len(acc.ty.shape)
    # a's scale may be per row (M), b's per column (N)
    sa = _vector_param(ctx, ctx.input(1), rank, max(rank - 2, 0), None, "a scale")
    sb = _vector_param(ctx, ctx.input(4), rank, rank - 1, b.ty.shape[-1], "b scale")
    in_scale = ctx.call("multiply", sa, cast_to(ctx, sb, sa.ty.dtype))
    return _requantize(ctx, acc, in_scale, ctx.input(6), _opt(ctx, 7))


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def _integer_conv(ctx, x32: Expr, w32: Expr, bias: Expr | None) -> Expr:
    """The convolution of i32 values, accumulated exactly: the IR's convolutions take floats,
    so it runs in f64 (exact below 2^53, far beyond any i32 accumulator) and is cast back."""
    wshape = w32.ty.shape
    if wshape is None:
        raise Unsupported("a weight of unknown rank")
    kernel = ctx.attr("kernel_shape") or [static_dim(d, ctx, "kernel size") for d in wshape[2:]]
    nd, kernel, strides, dilations, pads = window_attrs(ctx, x32, kernel)
    if nd > 2:
        raise Unsupported(f"{nd}-D convolution")
    args = [cast_to(ctx, x32, F64), cast_to(ctx, w32, F64)]
    if bias is not None:
        args.append(cast_to(ctx, bias, F64))
    y = ctx.call(
        f"conv{nd}d",
        *args,
        strides=strides,
        padding=pads,
        dilation=dilations,
        groups=ctx.attr("group", 1),
    )
    return cast_to(ctx, y, I32)


def _conv_operands(ctx, x, x_zp, w, w_zp):
    if w.ty.shape is None:
        raise Unsupported("a weight of unknown rank")
    rw = len(w.ty.shape)
    if x_zp is not None and _numel(x_zp) != 1:
        raise Unsupported("a per-channel input zero point")
    x_zp = _vector_param(ctx, x_zp, ctx.rank(0), 1, None, "x zero point")
    w_zp = _vector_param(ctx, w_zp, rw, 0, w.ty.shape[0], "w zero point")
    return _minus_zero_point(ctx, x, x_zp), _minus_zero_point(ctx, w, w_zp)


@converter("ConvInteger", attrs=_CONV_ATTRS, min_version=10)
def _conv_integer(ctx):
    x32, w32 = _conv_operands(ctx, ctx.input(0), _opt(ctx, 2), ctx.input(1), _opt(ctx, 3))
    return _integer_conv(ctx, x32, w32, None)


@converter("QLinearConv", attrs=_CONV_ATTRS, min_version=10)
def _qlinear_conv(ctx):
    x, w = ctx.input(0), ctx.input(3)
    x32, w32 = _conv_operands(ctx, x, _opt(ctx, 2), w, _opt(ctx, 5))
    acc = _integer_conv(ctx, x32, w32, _opt(ctx, 8))
    rank = len(acc.ty.shape)
    if _numel(ctx.input(1)) != 1:
        raise Unsupported("a per-channel input scale")
    sx = _vector_param(ctx, ctx.input(1), rank, 1, None, "x scale")
    sw = _vector_param(ctx, ctx.input(4), rank, 1, w.ty.shape[0], "w scale")
    in_scale = ctx.call("multiply", sx, cast_to(ctx, sw, sx.ty.dtype))
    return _requantize(ctx, acc, in_scale, ctx.input(6), _opt(ctx, 7))
