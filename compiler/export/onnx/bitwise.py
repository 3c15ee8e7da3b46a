"""The ONNX form of bitwise IR ops and ``bitcast``."""

from __future__ import annotations

from compiler.export.onnx.common import dtype_of
from compiler.export.onnx.registry import ExportError, exporter
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.ir.types import DType

# ----- bitwise ops (#17 dtypes) --------------------------------------------------------------
# BitwiseAnd / Or / Xor / Not take integers only: bools use And / Or / Xor / Not.

_BITWISE = {"bitwise_and": ("BitwiseAnd", "And"), "bitwise_or": ("BitwiseOr", "Or")}
_BITWISE["bitwise_xor"] = ("BitwiseXor", "Xor")


@exporter(*_BITWISE)
def _bitwise_op(e, n, a):
    ints, bools = _BITWISE[n.op]
    return e.node(bools if dtype_of(n) is DType.bool else ints, [a[0], a[1]])


@exporter("bitwise_not")
def _bitwise_not_op(e, n, a):
    return e.node("Not" if dtype_of(n) is DType.bool else "BitwiseNot", a)


@exporter("bitcast")
def _bitcast_op(e, n, a):
    src, dtype = dtype_of(n.args[0]), n.attrs["dtype"]
    if not src.is_float and not dtype.is_float and dtype is not DType.bool:
        return e.node("Cast", a, to=ONNX_DTYPE[dtype])  # same width: a wrapping cast
    if e.opset < 26:
        raise ExportError(f"a bitcast of {src.name} to {dtype.name} needs opset 26 or newer")
    return e.node("BitCast", a, to=ONNX_DTYPE[dtype])
