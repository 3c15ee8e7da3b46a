"""The ONNX form of ``to_float8e8m0`` (a Cast with a rounding mode, opset 24 or newer)."""

from __future__ import annotations

from compiler.export.onnx.registry import ExportError, exporter
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.ir.types import DType


@exporter("to_float8e8m0")
def _to_float8e8m0_op(e, n, a):
    if e.opset < 24:
        raise ExportError(f"a cast to float8e8m0 needs opset 24 or newer, got {e.opset}")
    attrs = {"saturate": int(n.attrs["saturate"]), "round_mode": n.attrs["round_mode"]}
    return e.node("Cast", a, to=ONNX_DTYPE[DType.float8e8m0], **attrs)
