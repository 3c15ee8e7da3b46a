"""Bitwise ONNX ops: BitwiseAnd / Or / Xor / Not (IR bitwise ops) and BitShift, composed of
existing ops: ``x << s`` is ``x * 2**s`` and ``x >> s`` is ``floor(x / 2**s)``, the power of
two read (take) from a constant table, so it is exact in every integer type and compiles.

Shift amounts follow onnx's reference: a shift by a negative amount or by the bit width or more
gives 0 (and -1 for a negative input shifted right); a left shift wraps (two's complement)."""

from __future__ import annotations

import numpy as np

from compiler.frontend.onnx_context import ConversionError, ConvertContext, Unsupported, dtype_of
from compiler.frontend.onnx_ops.registry import cast_to, converter
from compiler.ir.nodes import Expr
from compiler.ir.types import DType

_BINARY = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}


def _integer(ctx: ConvertContext, x: Expr) -> DType:
    dtype = x.ty.dtype
    if not dtype.is_int or dtype.is_storage_only:
        raise Unsupported(f"{ctx.node.op_type} on {dtype.name} values")
    return dtype


@converter(*_BINARY, min_version=18)
def _bitwise(ctx: ConvertContext) -> Expr:
    a, b = ctx.input(0), ctx.input(1)
    _integer(ctx, a)
    if a.ty.dtype is not b.ty.dtype:
        raise ConversionError(f"inputs of {a.ty.dtype} and {b.ty.dtype}: they must match")
    return ctx.call(_BINARY[ctx.node.op_type], a, b)


@converter("BitwiseNot", min_version=18)
def _bitwise_not(ctx: ConvertContext) -> Expr:
    x = ctx.input(0)
    _integer(ctx, x)
    return ctx.call("bitwise_not", x)


def _powers_of_two(ctx: ConvertContext, s: Expr, dtype: DType, top: int) -> Expr:
    """``2**clip(s, 0, top)`` in ``dtype`` (wrapping: 2**(bits-1) is the minimum of a signed
    type), read from a constant table."""
    powers = np.array([1 << k for k in range(top + 1)], dtype=np.uint64)
    table = ctx.constant(powers.astype(dtype.numpy), dtype)  # (wraps to the signed minimum)
    s = ctx.call("minimum", s, ctx.like(top, s))  # (not clip: onnxruntime lacks uint16 Clip)
    if not dtype.is_unsigned:
        s = ctx.call("maximum", s, ctx.like(0, s))
    idx = cast_to(ctx, s, DType.int64)
    return ctx.call("take", table, idx, axis=0)


@converter("BitShift", attrs=("direction",), min_version=11)
def _bitshift(ctx: ConvertContext) -> Expr:
    x, s = ctx.input(0), ctx.input(1)
    dtype = _integer(ctx, x)
    if s.ty.dtype is not dtype:
        raise ConversionError(f"inputs of {dtype} and {s.ty.dtype}: they must match")
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ConversionError(f"BitShift direction must be LEFT or RIGHT, got {direction!r}")
    bits = dtype.bits
    zero = ctx.like(0, x)
    beyond = ctx.call("greater_equal", s, ctx.like(bits, s))
    if not dtype.is_unsigned:
        beyond = ctx.call("logical_or", beyond, ctx.call("less", s, ctx.like(0, s)))
    if direction == "LEFT" or dtype.is_unsigned:
        powers = _powers_of_two(ctx, s, dtype, bits - 1)
        op = "multiply" if direction == "LEFT" else "floor_divide"
        shifted = ctx.call(op, x, powers)
        # zero where out of range: a multiply by 0 / 1 (onnxruntime's Where lacks uint16/64)
        return ctx.call("multiply", shifted, cast_to(ctx, ctx.call("logical_not", beyond), dtype))
    # signed: 2**(bits-1) is negative in the type; a shift by bits-1 or more gives the sign
    shifted = ctx.call("floor_divide", x, _powers_of_two(ctx, s, dtype, bits - 2))
    sign = ctx.call("where", ctx.call("less", x, zero), ctx.like(-1, x), zero)
    far = ctx.call("greater_equal", s, ctx.like(bits - 1, s))
    return ctx.call("where", ctx.call("logical_or", beyond, far), sign, shifted)


@converter("BitCast", attrs=("to",), min_version=26)
def _bitcast(ctx: ConvertContext) -> Expr:
    x = ctx.input(0)
    dtype = dtype_of(ctx.attr("to"))
    src = x.ty.dtype
    for d in (src, dtype):
        if d.is_storage_only:
            raise Unsupported(f"BitCast of {d.name} values")
    if src.itemsize != dtype.itemsize:
        raise ConversionError(f"BitCast from {src.name} to {dtype.name}: widths differ")
    return ctx.call("bitcast", x, dtype=dtype)
