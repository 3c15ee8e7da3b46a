"""Red-team break of issue 39's promise that an ONNX op outside ai.onnx and the listed
com.microsoft ops is refused at check: a node whose output nobody reads is dropped at import,
so the refusal (which looks at the trace's opaque ops) never sees it, but the check's
onnxruntime reference run of the whole source model runs it (onnxruntime's profile lists
``MurmurHash3``). Fixed: explorer.trust.onnx_refusals judges every node of the source model
first."""

from __future__ import annotations

import numpy as np
import pytest

import explorer
from compiler.opaque import OpaqueOpError


def _dead_contrib_op(path):
    import onnx
    from onnx import TensorProto as T
    from onnx import helper

    x = helper.make_tensor_value_info("x", T.FLOAT, [4])
    y = helper.make_tensor_value_info("y", T.FLOAT, [4])
    nodes = [
        helper.make_node("Relu", ["x"], ["y"]),
        helper.make_node("Cast", ["x"], ["xi"], to=T.INT32),
        helper.make_node("MurmurHash3", ["xi"], ["z"], domain="com.microsoft", name="dead"),
    ]
    z = helper.make_tensor_value_info("z", T.UINT32, [4])
    graph = helper.make_graph(nodes, "g", [x], [y], value_info=[z])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    onnx.save(model, path)


def test_a_dead_contrib_node_is_refused_before_the_onnxruntime_reference_runs_it(tmp_path):
    path = tmp_path / "dead.onnx"
    _dead_contrib_op(str(path))
    trace = explorer.explore(str(path))
    with pytest.raises(OpaqueOpError, match="MurmurHash3"):
        trace.check((np.ones(4, np.float32),))
