"""An ONNX file is untrusted input to the onnxruntime adapter: its optimization runs in a child
process under a memory limit, its runs in the check too, what it names is read as data only, and
each failure is one clear passlens error."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import explorer
from compiler import PasslensError


def _bomb(path) -> str:
    """A model whose ConstantOfShape asks for 160 GB when it runs."""
    shape = numpy_helper.from_array(np.array([200000, 200000], np.int64), "s")
    value = helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])
    graph = helper.make_graph(
        [
            helper.make_node("ConstantOfShape", ["s"], ["c"], value=value),
            helper.make_node("ReduceSum", ["c"], ["r"], keepdims=0),
            helper.make_node("Add", ["x", "r"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        [shape],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_a_file_is_optimized_in_a_child_process_and_a_memory_bomb_is_a_finding(tmp_path):
    trace = explorer.explore(_bomb(tmp_path / "bomb.onnx"), compiler="onnxruntime", progress=False)
    assert trace.onnxruntime.isolated  # rebuilt in the child, under its limit
    report = trace.check(np.array(1.0, np.float32), progress=False)
    assert report.findings and report.findings[0].kind == "run-failed"
    assert "RUN_BUDGET" in report.findings[0].message
    assert any("could not run in onnxruntime" in n for n in report.notes)


def test_a_torch_model_is_optimized_in_this_process():
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    trace = explorer.explore(model, (torch.randn(2, 4),), compiler="onnxruntime", progress=False)
    assert trace.onnxruntime is not None and not trace.onnxruntime.isolated


def _tiny(**node_kwargs) -> onnx.ModelProto:
    node = helper.make_node("Relu", ["x"], ["y"], **node_kwargs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_metadata_is_read_as_data_only():
    model = _tiny(name="n")
    node = model.graph.node[0]
    for key, value in {
        "pkg.torch.onnx.name_scopes": "__import__('os').system('echo pwned')",
        "pkg.torch.onnx.fx_node": "%" + "a" * 100000,
        "pkg.torch.onnx.stack_trace": 'File "' + "x" * 100000 + '", line 1',
    }.items():
        entry = node.metadata_props.add()
        entry.key, entry.value = key, value
    trace = explorer.explore(model, compiler="onnxruntime", progress=False)
    g = trace.imported.module.graph_model()
    op = next(n for n in g.nodes.values() if n.kind == "op")
    assert op.group == ""  # the scopes were not a literal list: no module path
    assert all(len(str(v)) <= 200 for v in op.provenance.values())


def test_external_data_is_refused_before_anything_is_read(tmp_path):
    model = _tiny()
    w = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2])
    w.data_location = onnx.TensorProto.EXTERNAL
    w.external_data.add(key="location", value="../../etc/passwd")
    model.graph.initializer.append(w)
    with pytest.raises(PasslensError, match="external file"):
        explorer.explore(model, compiler="onnxruntime", progress=False)


def test_a_file_that_is_no_model_is_one_clear_error(tmp_path):
    path = tmp_path / "x.onnx"
    path.write_bytes(b"\xff\xfe not a protobuf")
    with pytest.raises(PasslensError, match="not an ONNX model"):
        explorer.explore(str(path), compiler="onnxruntime", progress=False)


def test_a_model_ort_refuses_is_a_failed_stage_with_ort_s_message():
    model = _tiny()
    model.graph.node[0].op_type = "NoSuchOp"
    trace = explorer.explore(model, compiler="onnxruntime", pipeline="ort", progress=False)
    failed = [s for s in trace.steps if s.failed]
    assert failed and "onnxruntime cannot make a session" in str(failed[0].error)


def test_a_model_ort_leaves_as_it_is_equals_the_one_go_model():
    """No transformer changes a lone Relu: the ORT stage has no step, and its end (ORT's own
    save with every transformer off) is the one-go model, not a false warning."""
    trace = explorer.explore(_tiny(), compiler="onnxruntime", pipeline="ort", progress=False)
    assert trace.onnxruntime.steps == [] and trace.onnxruntime.equal is True
    assert "WARNING" not in repr(trace)
