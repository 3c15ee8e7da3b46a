"""What the exporters of several families share."""

from __future__ import annotations

from typing import Any

from compiler.export.onnx.writer import Exporter
from compiler.ir.nodes import (
    Expr,
)
from compiler.ir.types import DType


def _dtype(expr: Expr) -> DType:
    return expr.ty.dtype


def _scalar_like(e: Exporter, value: Any, expr: Expr) -> str:
    return e.const(value, _dtype(expr))
