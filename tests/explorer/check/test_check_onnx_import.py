"""Issue 41 item 6: the check of an ONNX file runs what the exporter writes, and says so when
onnxruntime refuses the file itself.

- torch's GroupNorm then Upsample, exported by TorchScript (``Reshape(x, Shape(x))`` before a
  Resize), checks ok at every step against onnxruntime (it was run-failed at the import);
- a Resize of dims unknown at import ('?') checks ok against onnxruntime on given inputs;
- a file onnxruntime refuses (a Transpose with a negative perm) gets a warning in the report's
  summary, counted in its headline, kept when the trace is saved and loaded."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import explorer

pytest.importorskip("onnxruntime")


def _save(model, tmp_path, name: str) -> str:
    path = str(tmp_path / name)
    onnx.save(model, path)
    return path


def test_torchscript_group_norm_then_upsample_checks_ok_at_every_step(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.GroupNorm(2, 8), torch.nn.Upsample(scale_factor=2.0))
    path = str(tmp_path / "gn_up.onnx")
    with warnings.catch_warnings():  # the TorchScript exporter (deprecated), as the issue has it
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model.eval(), (torch.randn(1, 8, 4, 4),), path, dynamo=False, opset_version=17
        )
    trace = explorer.explore(path)
    report = trace.check()
    assert report.reference.startswith("onnxruntime")
    statuses = [c.status for c in report.steps]
    assert statuses[0] == "reference"
    assert all(s == "ok" for s in statuses[1:]), str(report)
    assert not report.findings and not report.warnings
    imported = trace.steps[1].module
    resize = next(n for n in imported.main.iter_nodes() if getattr(n, "op", None) == "resize")
    assert resize.ty.shape == (1, 8, 8, 8)


def test_a_resize_of_unknown_dims_checks_ok_against_onnxruntime(tmp_path):
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Resize", ["r", "", "scales"], ["y"], mode="linear"),
    ]
    scales = numpy_helper.from_array(np.array([1, 1, 2, 1.5], np.float32), "scales")
    graph = helper.make_graph(
        nodes,
        "unknown_dims",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[scales],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    trace = explorer.explore(_save(model, tmp_path, "unknown.onnx"))
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 5)).astype(np.float32)
    report = trace.check(inputs=(x, np.array([3, 2, 5, 4], np.int64)))
    assert report.reference.startswith("onnxruntime")
    assert report.steps[1].status == "ok", str(report)
    assert "run-failed" not in [f.kind for f in report.findings]


def _refused_model():
    node = helper.make_node("Transpose", ["x"], ["y"], perm=[0, -1, 1])
    graph = helper.make_graph(
        [node],
        "negative_perm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_file_onnxruntime_refuses_is_a_warning_in_the_summary(tmp_path):
    trace = explorer.explore(_save(_refused_model(), tmp_path, "refused.onnx"))
    report = trace.check()
    text = str(report)
    assert report.headline().endswith("1 warning below")
    (warning,) = report.warnings
    assert warning.startswith("warning: onnxruntime refuses this model: ")
    assert "Transpose" in warning and "perm" in warning
    assert "checked against the import (#1 from_onnx)" in warning
    assert str(tmp_path) not in warning and "passlens-onnx-" not in warning  # no temp folder
    assert warning in text and warning in report._repr_html_().replace("&#x27;", "'")
    assert "as onnxruntime refuses the model" in report.reference
    saved = tmp_path / "refused.passlens"
    trace.save(saved)
    loaded = explorer.load(saved)
    assert loaded.report.warnings == [warning]


def test_a_model_onnxruntime_takes_has_no_warning(tmp_path):
    node = helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1])
    graph = helper.make_graph(
        [node],
        "fine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    report = explorer.explore(_save(model, tmp_path, "fine.onnx")).check()
    assert report.warnings == [] and "warning" not in report.headline()
    assert report.reference.startswith("onnxruntime")
