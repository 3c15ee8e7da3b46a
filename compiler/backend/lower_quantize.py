"""Lowerings of the quantization ops: ``quantize`` and ``dequantize`` are lazy elementwise
values (scale and zero point broadcast like any operand), so they fuse with what reads them.
``quantize`` rounds half to even (``llvm.roundeven``) and clamps to the integer range before
the conversion, so no out-of-range float is ever converted."""

from __future__ import annotations

from compiler.backend import loops as L
from compiler.backend.lowering import elementwise, lowering
from compiler.ops.quantize import compute_float, quant_range


@lowering("quantize")
def _quantize(kb, call, inputs, dest):
    x_ty, s_ty, _ = call.arg_types
    ct = compute_float(x_ty.dtype, s_ty.dtype)
    lo, hi = quant_range(call.out_dtype)

    def fn(x, s, z):
        q = L.unary("round", L.binary("div", L.cast(ct, x), L.cast(ct, s))) + L.cast(ct, z)
        return L.minimum(L.maximum(q, L.Const(float(lo), ct)), L.Const(float(hi), ct))

    return elementwise(inputs, call.out_shape, call.out_dtype, fn)


@lowering("dequantize")
def _dequantize(kb, call, inputs, dest):
    ct = compute_float(call.arg_types[1].dtype)

    def fn(x, s, z):
        return (L.cast(ct, x) - L.cast(ct, z)) * L.cast(ct, s)

    return elementwise(inputs, call.out_shape, call.out_dtype, fn)
