"""The registry of exporters: the ONNX form of each IR op, and the opsets `to_onnx` writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compiler.frontend.errors import FrontendError
from compiler.ir.nodes import Call

DEFAULT_OPSET = 18
MIN_OPSET = 17


class ExportError(FrontendError):
    """A module cannot be written as ONNX; the message names the node and why."""


# fn(e, call, names): the writer (writer.Exporter), the IR call, its inputs' ONNX names
OpExporter = Callable[[Any, Call, list], Any]
EXPORTERS: dict[str, OpExporter] = {}


def exporter(*ops: str):
    """Register the exporter of IR ops (the function that writes their ONNX form)."""

    def deco(fn: OpExporter) -> OpExporter:
        for op in ops:
            EXPORTERS[op] = fn
        return fn

    return deco
