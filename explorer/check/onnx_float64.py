"""The ONNX model a check's float64 run takes (explorer/check/references.py): the source cast
to float64, and the words that say how its run was made, for the report's notes."""

from __future__ import annotations

import numpy as np

MAX_NAMED_OPS = 8  # the op types a description names (the rest counted)


def cast_to_float64(proto):
    """A copy of the ONNX model with every float16 / bfloat16 / float32 made float64:
    initializers, inputs, outputs, value types, Cast targets (`to`, `dtype`) and constant
    attributes, in subgraphs too."""
    import onnx
    from onnx import TensorProto, numpy_helper

    floats = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}
    model = onnx.ModelProto()
    model.CopyFrom(proto)

    def cast_tensor(t) -> None:
        if t.data_type in floats:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))

    def cast_type(tp) -> None:
        which = tp.WhichOneof("value")
        if which == "tensor_type" and tp.tensor_type.elem_type in floats:
            tp.tensor_type.elem_type = TensorProto.DOUBLE
        elif which == "sequence_type":
            cast_type(tp.sequence_type.elem_type)
        elif which == "optional_type":
            cast_type(tp.optional_type.elem_type)

    def cast_graph(g) -> None:
        for t in g.initializer:
            cast_tensor(t)
        for v in [*g.input, *g.output, *g.value_info]:
            cast_type(v.type)
        for node in g.node:
            for a in node.attribute:
                if a.name in ("to", "dtype") and a.type == onnx.AttributeProto.INT:
                    if a.i in floats:
                        a.i = TensorProto.DOUBLE
                if a.type == onnx.AttributeProto.TENSOR:
                    cast_tensor(a.t)
                if a.type == onnx.AttributeProto.GRAPH:
                    cast_graph(a.g)
                for sub in a.graphs:
                    cast_graph(sub)

    cast_graph(model.graph)
    return model


def run_description(how: str | None) -> str:
    """How the float64 run was made, from what `compiler.opaque.run_onnx_model` says: by
    onnxruntime (None), split ("mixed:<op types>", the ops onnx's reference evaluator ran:
    from the file, so escaped, the first MAX_NAMED_OPS named) or by the reference evaluator
    alone ("reference")."""
    from compiler.opaque import escape as escape_printed

    if how == "reference":
        return (
            "onnx.reference (numpy) on the model cast to float64 (onnxruntime has no float64 "
            "kernel for one of its ops, and could not run the others apart)"
        )
    if not how or not how.startswith("mixed:"):
        return "onnxruntime on the model cast to float64"
    names = [escape_printed(op, 40) for op in how[len("mixed:") :].split(",") if op]
    shown = ", ".join(names[:MAX_NAMED_OPS])
    if len(names) > MAX_NAMED_OPS:
        shown += f" and {len(names) - MAX_NAMED_OPS} more"
    return (
        "onnxruntime on the model cast to float64, its "
        + (f"{shown} nodes" if shown else "nodes")
        + " by onnx.reference (numpy: onnxruntime has no float64 kernel for them)"
    )
