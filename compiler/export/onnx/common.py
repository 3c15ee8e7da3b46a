"""What the exporters of several families share."""

from __future__ import annotations

from typing import Any

from compiler.export.onnx.writer import Exporter
from compiler.ir.nodes import Expr
from compiler.ir.types import DType


def dtype_of(expr: Expr) -> DType:
    """The dtype of a tensor expression."""
    return expr.ty.dtype


def scalar_like(e: Exporter, value: Any, expr: Expr) -> str:
    """An initializer holding ``value`` in the dtype of ``expr``."""
    return e.const(value, dtype_of(expr))
