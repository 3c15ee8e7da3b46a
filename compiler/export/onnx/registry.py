"""The registry of exporters: the ONNX form of each IR op, and the opsets ``to_onnx`` writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.frontend.errors import FrontendError
from compiler.ir.nodes import (
    Call,
)

DEFAULT_OPSET = 18
MIN_OPSET = 17


class ExportError(FrontendError):
    """A module cannot be written as ONNX; the message names the node and why."""


# fn(exporter, call, names): the writer (writer.Exporter), the IR call, its inputs' ONNX names
Lowering = Callable[[Any, Call, list], Any]
LOWERINGS: dict[str, Lowering] = {}


def lowers(*ops: str):
    """Register the ONNX lowering of IR ops."""

    def deco(fn: Lowering) -> Lowering:
        for op in ops:
            LOWERINGS[op] = fn
        return fn

    return deco
