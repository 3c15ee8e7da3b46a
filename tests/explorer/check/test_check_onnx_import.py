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


COMPILED = "default,legalize-ops,codegen"


def _torchscript_export(torch, model, inputs, path, **options) -> str:
    with warnings.catch_warnings():  # the TorchScript exporter (deprecated), as the issue has it
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), inputs, path, dynamo=False, opset_version=17, **options)
    return path


def test_group_norm_then_upsample_checks_ok_in_compiled_code_too(tmp_path):
    """The issue's reproduction explored down to machine code: the interpreter at each graph
    step and the compiled kernels of legalize-ops and codegen agree with onnxruntime."""
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.GroupNorm(2, 8), torch.nn.Upsample(scale_factor=2.0))
    path = _torchscript_export(torch, model, (torch.randn(1, 8, 4, 4),), str(tmp_path / "g.onnx"))
    trace = explorer.explore(path, pipeline=COMPILED)
    report = trace.check()
    names = [c.step.name for c in report.steps]
    assert names[-2:] == ["legalize-ops", "codegen"], names
    assert all(c.status.startswith("ok") for c in report.steps[1:]), str(report)
    assert not report.findings and not report.warnings


def _up_block(torch):
    """A UNet / VAE decoder up block: conv, GroupNorm, SiLU, a nearest x2 upsample, a conv,
    the skip connection resized to the result's size (``size=h.shape[-2:]``), and a last
    bilinear x1.5 whose size torch computes (``recompute_scale_factor=True``)."""
    nn, F = torch.nn, torch.nn.functional

    class UpBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_in = nn.Conv2d(8, 8, 3, padding=1)
            self.norm = nn.GroupNorm(2, 8)
            self.conv_out = nn.Conv2d(8, 8, 3, padding=1)

        def forward(self, x, skip):
            h = F.silu(self.norm(self.conv_in(x)))
            h = self.conv_out(F.interpolate(h, scale_factor=2.0, mode="nearest"))
            h = h + F.interpolate(skip, size=h.shape[-2:], mode="bilinear", align_corners=False)
            return F.interpolate(h, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)

    return UpBlock()


def test_an_up_block_sized_only_at_run_time_checks_ok_in_the_interpreter_and_compiled(tmp_path):
    """Exported with dynamic heights and widths, every size is computed from Shape(x) when
    the model runs (the last one in float arithmetic: floor(float(h) * 1.5)); the import keeps
    them in dims (``3*h``, not '?'), and on inputs of two shapes every step, down to
    compiled code, agrees with onnxruntime."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    path = _torchscript_export(
        torch,
        _up_block(torch),
        (torch.randn(1, 8, 5, 6), torch.randn(1, 8, 3, 4)),
        str(tmp_path / "up.onnx"),
        input_names=["x", "skip"],
        dynamic_axes={"x": {2: "h", 3: "w"}, "skip": {2: "sh", 3: "sw"}},
    )
    trace = explorer.explore(path, pipeline=COMPILED)
    out = [str(d) for d in trace.steps[1].module.main.output.ty.shape]
    assert out == ["1", "8", "3*h", "3*w"], out  # floor(float(2*h) * 1.5)
    resized = [
        n for n in trace.steps[1].module.main.iter_nodes() if getattr(n, "op", 0) == "resize"
    ]
    assert [str(n.ty) for n in resized] == ["f32[1, 8, 2*h, 2*w]"] * 2 + ["f32[1, 8, 3*h, 3*w]"]
    rng = np.random.default_rng(7)
    for x_shape, skip_shape in [((1, 8, 5, 6), (1, 8, 3, 4)), ((1, 8, 3, 7), (1, 8, 9, 2))]:
        inputs = (
            rng.standard_normal(x_shape).astype(np.float32),
            rng.standard_normal(skip_shape).astype(np.float32),
        )
        report = trace.check(inputs=inputs)
        assert report.reference.startswith("onnxruntime")
        assert [c.step.name for c in report.steps][-1] == "codegen"
        assert all(c.status.startswith("ok") for c in report.steps[1:]), str(report)
        assert not report.findings


def test_the_explore_summary_warns_of_a_file_onnxruntime_refuses(tmp_path, monkeypatch):
    """The summary says it before any check: one InferenceSession with optimizations off,
    made the first time a summary is shown (not by explore), and kept for the trace."""
    from explorer import summary

    made = []
    real = summary.onnxruntime_refusal
    monkeypatch.setattr(summary, "onnxruntime_refusal", lambda m: made.append(1) or real(m))
    trace = explorer.explore(_save(_refused_model(), tmp_path, "refused.onnx"))
    assert made == []  # explore makes no session
    text = repr(trace)
    (line,) = [s for s in text.splitlines() if s.startswith("warning:")]
    assert line.startswith("warning: onnxruntime refuses this model: ")
    assert "Transpose" in line and "perm" in line
    assert "a check compares the steps with the import (#1 from_onnx) instead" in line
    assert str(tmp_path) not in line
    page = trace._repr_html_()
    assert "pl-warning" in page and "onnxruntime refuses this model" in page
    repr(trace)
    assert made == [1]  # once for the trace


def test_the_explore_summary_has_no_warning_for_a_file_onnxruntime_takes(tmp_path):
    node = helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1])
    graph = helper.make_graph(
        [node],
        "fine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    trace = explorer.explore(_save(model, tmp_path, "fine.onnx"))
    assert "warning" not in repr(trace) and "pl-warning" not in trace._repr_html_()
    # a saved and loaded trace keeps no model: nothing to ask onnxruntime
    refused = explorer.explore(_save(_refused_model(), tmp_path, "refused.onnx"))
    refused.save(tmp_path / "refused.passlens")
    assert "warning" not in repr(explorer.load(tmp_path / "refused.passlens"))
