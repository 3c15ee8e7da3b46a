"""ONNX losses and the remaining neural-network ops (issue #17, family "loss"): the backend
node tests that now pass, small models against onnxruntime (with a symbolic batch), compiled
with the LLVM backend, and the clear errors of forms not converted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from compiler.frontend import from_onnx
from compiler.frontend.onnx_frontend import OnnxImportError
from compiler.interpret import run

REPO = Path(__file__).resolve().parents[3]
F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def _harness():
    spec = importlib.util.spec_from_file_location(
        "onnx_coverage", REPO / "bench" / "onnx_coverage.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def harness():
    return _harness()


# the node tests of this family that pass (every one whose name starts with a prefix here)
_PASSING_PREFIXES = ("test_nllloss", "test_sce")


def test_node_tests_of_the_family_pass(harness):
    root = harness.node_test_dir()
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith(_PASSING_PREFIXES))
    assert len(dirs) >= 100
    bad = []
    for d in dirs:
        r = harness.run_case(d)
        if r.status != "passed":
            bad.append(f"{r.name}: {r.status} {r.message}")
    assert not bad, bad


# ----- helpers -----------------------------------------------------------------------------


def make_model(nodes, inputs, outputs, initializers=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def ort_run(model, *inputs):
    sess = ort.InferenceSession(model.SerializeToString())
    return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs, strict=True)})


def assert_matches_ort(model, *inputs, rtol=1e-5, atol=1e-6, compile=False):
    module = from_onnx(model)
    got = run(module, *inputs)
    expected = ort_run(model, *inputs)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    if compile:
        from compiler.backend import build

        exe = build(module)
        built = exe(*inputs)
        built = list(built) if isinstance(built, (list, tuple)) else [built]
        for b, g in zip(built, got, strict=True):
            assert b.shape == g.shape
            np.testing.assert_allclose(b, g, rtol=1e-5, atol=1e-6)
    return module


RNG = np.random.default_rng(17)


# ----- losses ------------------------------------------------------------------------------


def _loss_model(op, reduction, ignore_index, weighted, spatial, log_prob=False):
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    names = ["x", "t"] + (["w"] if weighted else [])
    outs = ["loss"] + (["log_prob"] if log_prob else [])
    node = helper.make_node(op, names, outs, **attrs)
    inputs = [
        helper.make_tensor_value_info("x", F32, ["n", 5, *spatial]),
        helper.make_tensor_value_info("t", I64, ["n", *spatial]),
    ]
    if weighted:
        inputs.append(helper.make_tensor_value_info("w", F32, [5]))
    loss_shape = ["n", *spatial] if reduction == "none" else []
    outputs = [helper.make_tensor_value_info("loss", F32, loss_shape)]
    if log_prob:
        outputs.append(helper.make_tensor_value_info("log_prob", F32, ["n", 5, *spatial]))
    return make_model([node], inputs, outputs)


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("ignore_index", [None, 2, -1, 7])
@pytest.mark.parametrize("weighted", [False, True])
def test_losses_match_onnxruntime(op, reduction, ignore_index, weighted):
    spatial = [3, 2]
    model = _loss_model(op, reduction, ignore_index, weighted, spatial, log_prob=op[0] == "S")
    module = from_onnx(model)
    assert str(module.main.params[0].ty) == "f32[n, 5, 3, 2]"
    for n in (2, 3):
        x = RNG.standard_normal((n, 5, *spatial)).astype(np.float32)
        t = RNG.integers(0, 5, (n, *spatial)).astype(np.int64)
        if ignore_index is not None:
            t.reshape(-1)[::3] = ignore_index
        inputs = [x, t] + ([RNG.random(5).astype(np.float32) + 0.1] if weighted else [])
        assert_matches_ort(model, *inputs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
def test_losses_compile(op):
    model = _loss_model(op, "mean", -1, True, [4])
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    t = RNG.integers(-1, 5, (3, 4)).astype(np.int64)
    w = RNG.random(5).astype(np.float32)
    assert_matches_ort(model, x, t, w, compile=True)


def test_loss_errors():
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], reduction="avg")
    model = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [
                helper.make_tensor_value_info("x", F32, [2, 3]),
                helper.make_tensor_value_info("t", I64, [2]),
            ],
            [helper.make_tensor_value_info("y", F32, [])],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    with pytest.raises(OnnxImportError, match="reduction must be one of"):
        from_onnx(model)
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])
    model.graph.node[0].CopyFrom(node)
    model.graph.input[1].CopyFrom(helper.make_tensor_value_info("t", I64, [2, 1, 1]))
    with pytest.raises(OnnxImportError, match="target must have rank 1"):
        from_onnx(model)
