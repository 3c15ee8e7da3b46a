"""The ONNX form of ``quantize`` and ``dequantize``."""

from __future__ import annotations

from compiler.export.onnx.common import dtype_of
from compiler.export.onnx.registry import exporter
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.ir.nodes import Expr
from compiler.ir.types import DType

# ----- quantization (quantize, dequantize) ------------------------------------------------
#
# Written as the arithmetic they compute, in the float dtype the ops compute in: ONNX's
# QuantizeLinear wants a scalar or 1-D per-axis scale, where the IR's scale is any shape
# broadcasting to x (per axis as (C, 1, 1), per block repeated).


def _as_float(e, name: str, expr: Expr, ct: DType) -> str:
    return name if dtype_of(expr) is ct else e.node("Cast", [name], to=ONNX_DTYPE[ct])


@exporter("quantize")
def _quantize_op(e, n, a):
    from compiler.ops.quantize import compute_float, quant_range

    x, s, z = n.args
    ct = compute_float(dtype_of(x), dtype_of(s))
    lo, hi = quant_range(dtype_of(n))
    q = e.node("Round", [e.node("Div", [_as_float(e, a[0], x, ct), _as_float(e, a[1], s, ct)])])
    q = e.node("Add", [q, _as_float(e, a[2], z, ct)])
    q = e.node("Clip", [q, e.const(lo, ct), e.const(hi, ct)])
    return e.node("Cast", [q], to=ONNX_DTYPE[dtype_of(n)])


@exporter("dequantize")
def _dequantize_op(e, n, a):
    from compiler.ops.quantize import compute_float

    x, s, z = n.args
    ct = compute_float(dtype_of(s))
    d = e.node("Sub", [_as_float(e, a[0], x, ct), _as_float(e, a[2], z, ct)])
    y = e.node("Mul", [d, _as_float(e, a[1], s, ct)])
    return y if ct is dtype_of(n) else e.node("Cast", [y], to=ONNX_DTYPE[dtype_of(n)])
