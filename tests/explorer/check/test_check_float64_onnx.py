"""The float64 run an ONNX source's check judges with: onnxruntime on the model cast to
float64, onnx's reference evaluator only for the nodes onnxruntime has no float64 kernel for
(Conv, Erf, AveragePool: compiler/opaque/onnx_mixed.py), the report's notes saying which.

- the split run gives the values the reference evaluator gives for the whole cast model, and
  names the ops it ran (a body of an If reading an outer value too);
- on a CNN with GELUs, float32 rounding past a tight tolerance is judged ok against it, and a
  pass that scales one convolution by 1.001 is still diverged there;
- a model onnxruntime runs whole in float64 is judged against onnxruntime alone."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.ir import Call, Constant
from compiler.passes import Pass, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from explorer.check import references
from explorer.check.onnx_float64 import run_description

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

D = TensorProto.DOUBLE


def _f64_model():
    """Conv (no float64 kernel), Relu, Erf (none), a MatMul, and an If whose branches read
    an outer value, one through an Erf: float64 throughout."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)), "w")
    m = numpy_helper.from_array(rng.standard_normal((6, 5)), "m")
    then = helper.make_graph(
        [helper.make_node("Erf", ["flat"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", D, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["flat"], ["e"])],
        "else",
        [],
        [helper.make_tensor_value_info("e", D, None)],
    )
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Erf", ["r"], ["g"]),
        helper.make_node("Reshape", ["g", "shape"], ["flat"]),
        helper.make_node("ReduceSum", ["flat"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["positive"]),
        helper.make_node("If", ["positive"], ["picked"], then_branch=then, else_branch=other),
        helper.make_node("MatMul", ["picked", "m"], ["y"]),
    ]
    inits = [
        w,
        m,
        numpy_helper.from_array(np.array([-1, 6], np.int64), "shape"),
        numpy_helper.from_array(np.array(0.0), "zero"),
    ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [helper.make_tensor_value_info("x", D, [1, 3, 5, 5])],
        [helper.make_tensor_value_info("y", D, None), helper.make_tensor_value_info("c", D, None)],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_split_run_gives_the_reference_evaluators_values_and_names_its_ops():
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    from compiler.opaque.onnx_mixed import run_mixed

    model = _f64_model()
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):  # no float64 Conv, Erf
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((1, 3, 5, 5))
    outs, by_reference = run_mixed(model, {"x": x})
    assert by_reference == ["Conv", "Erf", "If"]  # the If: its then-branch holds an Erf
    expected = ReferenceEvaluator(model).run(None, {"x": x})
    assert len(outs) == 2
    for got, want in zip(outs, expected, strict=True):
        assert got.dtype == np.float64 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_child_process_runs_the_split_run_and_says_so():
    from compiler.frontend import to_onnx

    proto = to_onnx(models.mlp((32, 64, 16), batch=4, seed=2, activation="gelu"))
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    outs, nodes, how = references._onnx_float64(proto, [x])
    assert outs[0].dtype == np.float64 and nodes == {}
    assert how.startswith("onnxruntime on the model cast to float64, its Erf nodes by onnx.")
    relu = to_onnx(models.mlp((32, 64, 16), batch=4, seed=2, activation="relu"))
    _, _, how = references._onnx_float64(relu, [x])
    assert how == "onnxruntime on the model cast to float64"  # every op has a float64 kernel


def test_op_names_in_the_description_are_escaped_and_capped():
    text = run_description("mixed:Conv,\x1b[2JEvil," + ",".join(f"Op{i}" for i in range(9)))
    assert "\x1b" not in text and "\\x1b[2JEvil" in text
    assert "and 3 more" in text


@register_pass
@dataclass(frozen=True)
class _ScaleConv(Pass):
    """A wrong pass: the first convolution's result times ``scale``."""

    name: ClassVar[str] = "test-check-scale-conv"
    scale: float = 1.001

    def transform(self, module, ctx):
        done = []

        def rule(node):
            if not done and isinstance(node, Call) and node.op == "conv2d":
                done.append(node)
                return Call("multiply", [node, Constant(np.float32(self.scale))])
            return None

        return rewrite_module(module, lambda name, fn: rule)


@pytest.fixture(scope="module")
def cnn_path(tmp_path_factory):
    """Two 3x3 convolutions of 64 channels with GELUs (Erf), an average pool and a linear:
    float32 sums of 576 products, exported by torch."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(16, 64, 3, padding=1)
            self.c2 = torch.nn.Conv2d(64, 64, 3, padding=1)
            self.fc = torch.nn.Linear(64, 10)

        def forward(self, x):
            h = torch.nn.functional.gelu(self.c1(x))
            h = torch.nn.functional.gelu(self.c2(h))
            return self.fc(torch.nn.functional.avg_pool2d(h, 2).mean((2, 3)))

    path = str(tmp_path_factory.mktemp("cnn") / "cnn.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Net().eval(), (torch.randn(1, 16, 16, 16),), path, dynamo=False, opset_version=17
        )
    return path


def test_float32_rounding_on_a_cnn_is_judged_ok_against_the_split_float64_run(cnn_path):
    report = explorer.explore(cnn_path).check(rtol=1e-9, atol=1e-12, progress=False)
    assert [f.kind for f in report.findings] == []
    assert any(c.rule == "float64" for c in report.steps)  # rounding exceeded the tolerance
    (note,) = [n for n in report.notes if "judged against" in n]
    assert "onnxruntime on the model cast to float64, its AveragePool, Conv, Erf nodes" in note


def test_a_convolution_scaled_by_1e_3_is_still_diverged(cnn_path):
    trace = explorer.explore(cnn_path, pipeline="test-check-scale-conv,default")
    report = trace.check(rtol=1e-9, atol=1e-12, progress=False)
    diverged = [f for f in report.findings if f.kind == "diverged"]
    assert diverged and diverged[0].step.name == "test-check-scale-conv", str(report)
    assert report.steps[2].rule == "float64"
