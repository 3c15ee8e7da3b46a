"""The ``opaque`` op: an op of the source model that passlens has no converter for, kept as it
is and run by its own framework wherever a value is needed.

::

    %m: (f32[4, 8], i64[4, 8]) = opaque(%x, framework="torch", target="aten.cummax.default",
        args=["%0", 1], pure=true, type="(f32[4, 8], i64[4, 8])")
    %r: f32[2, 3, 2, 2] = opaque(%x, %rois, framework="onnx", target="ai.onnx::MaxRoiPool",
        args=["%0", "%1"], kwargs=[["pooled_shape", [2, 2]]], opset=17, pure=true,
        type="f32[2, 3, 2, 2]")

(printed on one line each; attributes at their defaults are left out).

- ``framework``: who runs it, ``torch`` (``torch.ops.<ns>.<name>.<overload>``) or ``onnx``
  (onnxruntime, as a one-node model);
- ``target``: the op, ``aten.cummax.default`` or a custom op (``mylib.scale.default``), or an
  ONNX op type with its domain (``com.microsoft::FusedMatMul``, ``ai.onnx::MaxRoiPool``);
- ``type``: the result type in the text format, as the exporter recorded it (torch.export's
  ``val`` metadata, ONNX shape inference): nothing in passlens can infer it;
- ``args`` / ``kwargs``: the call's non-tensor arguments as the framework takes them
  (numbers, bools, strings, dtypes, none, lists; kwargs as ``[name, value]`` pairs), where the
  string ``"%i"`` stands for the op's i-th tensor input (a literal string starting with ``%``
  is written with a second ``%`` in front). For ONNX, ``args`` are the node's inputs (none
  for an omitted optional one) and ``kwargs`` its attributes;
- ``opset``: the version of the ONNX op's domain; ``outputs``: which of the ONNX node's outputs
  the result holds, when not all of them;
- ``pure``: the op has no effect besides its result (the frontend found so: a torch op that
  writes into no argument but an in-place op's first, any ONNX op), so dead-code elimination
  may drop it when unused; false (the default) keeps it.

Passes treat it as a barrier: never folded, fused, decomposed or lowered. Nothing here imports
torch or onnxruntime, and building, printing, parsing, verifying or loading an opaque node never
resolves what it names: only running it does (``compiler.opaque.run``), and then only an
op known to be a pure computation or trusted by the person running it
(``compiler.opaque.allow``), by attribute lookup under ``torch.ops`` or as an op type of a
one-node ONNX model. The op is declared here, with the other op families; what encodes its
attributes, runs it and sizes it is the package compiler/opaque/.
"""

from __future__ import annotations

from typing import Any

from compiler.ir.op_registry import OPAQUE, AttrSpec, TypeInferenceError, define_op
from compiler.ir.types import TensorType, Type
from compiler.opaque.layout import check_layout, check_target, result_type, unescape
from compiler.opaque.run import run


def _infer(types: list[Type], attrs) -> Type:
    check_target(attrs["framework"], attrs["target"])
    check_layout(attrs, len(types))
    for i, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise TypeInferenceError(f"input {i} must be a tensor, got {t}")
    if attrs["framework"] == "onnx":
        if attrs["opset"] is None or attrs["opset"] < 1:
            raise TypeInferenceError("an ONNX opaque op needs opset >= 1")
        for i, a in enumerate(attrs["args"]):
            if a is not None and not (isinstance(a, str) and isinstance(unescape(a), int)):
                raise TypeInferenceError(f"ONNX input {i} must be an input reference or none")
    return result_type(attrs["type"])


def _compute(values: list, attrs) -> Any:
    return run(values, attrs)


define_op(
    "opaque",
    inputs=("*inputs?",),  # none or more
    attrs={
        "framework": AttrSpec("str", doc="who runs the op: torch or onnx"),
        "target": AttrSpec("str", doc="the op: aten.sort.default, com.microsoft::FusedMatMul"),
        "type": AttrSpec("str", doc="the result type the exporter recorded, in the text format"),
        "args": AttrSpec("any", (), "positional arguments; '%i' is the i-th tensor input"),
        "kwargs": AttrSpec("any", (), "keyword arguments (ONNX: attributes), [name, value]"),
        "opset": AttrSpec("int", None, "ONNX: the version of the op's domain"),
        "outputs": AttrSpec("ints", None, "ONNX: which node outputs the result holds"),
        "pure": AttrSpec("bool", False, "no effect besides the result (DCE may drop it)"),
    },
    infer=_infer,
    compute=_compute,
    pattern=OPAQUE,
    doc="An op passlens has no converter for, run by its own framework (torch, onnxruntime).",
)
