"""Issue 41 item 6: the ONNX import runs what torch.onnx.export writes for GroupNorm and
upsamplers.

- ``Reshape(x, Shape(y))`` of a static ``y`` (GroupNorm's export) keeps static dims;
- a Resize whose input dims are truly unknown at import ('?') takes its sizes from the value
  when run, in agreement with onnxruntime; compiled code refuses it with one clear error."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import PasslensError
from compiler.frontend import from_onnx
from compiler.interpret import run
from tests.compiler.frontend.onnx_helpers import ort_run

pytest.importorskip("onnxruntime")

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _group_norm_like():
    """Reshape to groups, then back with Shape of the (static) input, then Resize x2."""
    nodes = [
        helper.make_node("Reshape", ["x", "groups"], ["g"]),
        helper.make_node("Relu", ["g"], ["r"]),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Reshape", ["r", "s"], ["back"]),
        helper.make_node("Resize", ["back", "", "scales"], ["y"], mode="nearest"),
    ]
    inits = [
        numpy_helper.from_array(np.array([0, 2, -1], np.int64), "groups"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", F, [1, 8, 4, 4])],
        [helper.make_tensor_value_info("y", F, None)],
        inits,
    )


def test_reshape_by_shape_of_a_static_tensor_keeps_static_dims():
    module = from_onnx(_group_norm_like())
    by_op = {n.op: n for n in module.main.iter_nodes() if hasattr(n, "op")}
    assert by_op["resize"].ty.shape == (1, 8, 8, 8)
    backs = [n for n in module.main.iter_nodes() if getattr(n, "op", None) == "reshape"]
    assert [n.ty.shape for n in backs] == [(1, 2, 64), (1, 8, 4, 4)]
    x = np.random.default_rng(0).standard_normal((1, 8, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(module, x)[0], ort_run(_group_norm_like(), x)[0])


def _unknown_dims_resize(mode: str, scales=(1.0, 1.0, 2.0, 1.5)):
    """The Reshape's target is a graph input: every dim of the Resize's input is '?'."""
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Resize", ["r", "", "scales"], ["y"], mode=mode),
    ]
    inits = [numpy_helper.from_array(np.array(scales, np.float32), "scales")]
    return _model(
        nodes,
        [
            helper.make_tensor_value_info("x", F, [2, 3, 4, 5]),
            helper.make_tensor_value_info("shape", I64, [4]),
        ],
        [helper.make_tensor_value_info("y", F, None)],
        inits,
    )


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("target", [(2, 3, 4, 5), (3, 2, 5, 4), (1, 6, 2, 10)])
def test_a_resize_of_unknown_dims_runs_and_agrees_with_onnxruntime(mode, target):
    model = _unknown_dims_resize(mode)
    module = from_onnx(model)
    resize = next(n for n in module.main.iter_nodes() if getattr(n, "op", None) == "resize")
    assert all(str(d) == "?" for d in resize.ty.shape)  # truly unknown at import
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    shape = np.array(target, np.int64)
    got = run(module, x, shape)[0]
    expected = ort_run(model, x, shape)[0]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_compiled_code_refuses_a_resize_of_unknown_dims_clearly():
    from compiler import backend

    module = from_onnx(_unknown_dims_resize("nearest"))
    with pytest.raises(PasslensError) as info:
        backend.build(module)
    text = str(info.value)
    assert "'?' dim" in text and "_AnyDim" not in text


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_a_resize_sized_only_at_run_time_is_sized_before_it_is_made(mode, monkeypatch):
    """A crafted file's scales (at most 65536 each) on dims unknown at import would ask for
    tens of GiB when the run learns them: refused against the interpreter's limit for one
    value before anything is allocated, naming the limit; just under it, the resize runs."""
    from compiler.ir import nn_compute

    x = np.ones((2, 3, 4, 5), np.float32)
    module = from_onnx(_unknown_dims_resize(mode, scales=(1.0, 1.0, 60000.0, 60000.0)))
    with pytest.raises(PasslensError, match=r"resize of \[1, 1, 6, 20\] to \[1, 1, 360000, 1200"):
        run(module, x, np.array([1, 1, 6, 20], np.int64))
    # the limit, read when the op runs: 2 x 3 x 8 x 7.5 floats fit in 3 kB
    module = from_onnx(_unknown_dims_resize(mode))
    itemsize = 4 if mode == "nearest" else 8
    monkeypatch.setattr(nn_compute, "MAX_RESULT_BYTES", 2 * 3 * 8 * 7 * itemsize)
    assert run(module, x, np.array([2, 3, 4, 5], np.int64))[0].shape == (2, 3, 8, 7)
    monkeypatch.setattr(nn_compute, "MAX_RESULT_BYTES", 2 * 3 * 8 * 7 * itemsize - 1)
    with pytest.raises(PasslensError, match="LimitError: resize of .*nn_compute.MAX_RESULT_BYTES"):
        run(module, x, np.array([2, 3, 4, 5], np.int64))
