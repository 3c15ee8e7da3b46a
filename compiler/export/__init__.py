"""Exporters: an IR module written in another format for other tools.

`to_onnx(module)` (onnx/, one module per op family): an onnx.ModelProto that opens in
Netron and Model Explorer and runs in onnxruntime; each node is named by the module path it
came from, the way torch.onnx.export names them (`/stages.0/blocks.0/pwconv1/MatMul`).
"""

from compiler.export.onnx import DEFAULT_OPSET, MIN_OPSET, ExportError, exporter, to_onnx

__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "ExportError", "exporter", "to_onnx"]
