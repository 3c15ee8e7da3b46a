"""Compiled code runs a Resize whose lengths are learnt only when it runs (issue 41 item 6).

A reshape to a computed shape has '?' dims; legalize-ops names them (a ``match_shape`` after
the reshape, which the host runs), and the resize's lengths follow from the names: ``2*n``,
``(3*n) // 2`` for a scale of 1.5, in one kernel. A scale no dim expression states (0.7: the
float32 product onnxruntime truncates) is sized on the host from the value, as ``nonzero`` is,
and what follows compiles. Every result is compared with onnxruntime on several shapes."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import backend
from compiler.frontend import from_onnx
from tests.compiler.frontend.onnx_helpers import ort_run
from tests.compiler.frontend.test_onnx_shape_dims import unknown_dims_resize

pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_compiled_code_runs_a_resize_of_unknown_dims_and_agrees_with_onnxruntime(mode):
    """The reshape's '?' dims are named when it runs (a match_shape after it); the resize's
    lengths follow from them (``2*n``, ``(3*n) // 2`` for 1.5): one kernel, any shape."""
    model = unknown_dims_resize(mode)
    exe = backend.build(from_onnx(model))
    legal = exe.result.module.main
    resize = [n for n in legal.iter_nodes() if getattr(n, "op", None) == "resize"]
    assert resize == []  # a kernel, not left for the host
    out = str(legal.output.ty)
    assert "?" not in out and "2*reshape_n" in out and "// 2" in out, out
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for target in [(2, 3, 4, 5), (1, 6, 10, 2), (5, 4, 3, 2)]:
        shape = np.array(target, np.int64)
        got = exe(x, shape)[0]
        expected = ort_run(model, x, shape)[0]
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_compiled_code_sizes_a_resize_its_dims_cannot_state_on_the_host():
    """A scale of 0.7 on a dim unknown at import: floor(float32(n) * 0.7), which no dim
    expression states, is computed from the value (as nonzero's size), named by a
    match_shape, and the rest compiles; 10 x 0.7 is 7 (float32), as onnxruntime has it."""
    model = unknown_dims_resize("linear", scales=(1.0, 1.0, 0.7, 2.0))
    exe = backend.build(from_onnx(model))
    ops = [getattr(n, "op", None) for n in exe.result.module.main.iter_nodes()]
    assert "resize" in ops and ops.count("match_shape") == 2
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for target in [(2, 3, 4, 5), (1, 6, 10, 2), (1, 1, 20, 6)]:
        shape = np.array(target, np.int64)
        got = exe(x, shape)[0]
        expected = ort_run(model, x, shape)[0]
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        if target[2] == 10:
            assert got.shape == (1, 6, 7, 4)


def test_lengths_that_are_values_are_refused_by_compiled_code_naming_the_resize():
    """Sizes computed as floor(float(h) * 0.7) from a symbolic h are values, not dims: the
    import composes the Resize of IR ops whose lengths are '?' (the interpreter runs it);
    compiled code, which loops over sizes it can state, refuses it in one error that names
    the Resize and the '?' dim, never a traceback from inside the backend."""
    from compiler import PasslensError
    from tests.compiler.frontend.test_onnx_shape_dims import computed_sizes

    module = from_onnx(computed_sizes(0.7, [1, 2, "h", "w"]))
    with pytest.raises(PasslensError) as info:
        backend.build(module)
    text = str(info.value)
    assert "'?' dim" in text and "Resize" in text, text
    assert "Traceback" not in text and "_AnyDim" not in text


def test_ops_between_the_reshape_and_the_resize_compile_too():
    """A Relu on the reshape's '?' dims is not fused with it (fuse-ops leaves a '?' result
    alone): each is lowered once the dims are named, and the result agrees."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Relu", ["r"], ["q"]),
        helper.make_node("Resize", ["q", "", "scales"], ["y"], mode="nearest"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    exe = backend.build(from_onnx(model))
    assert "?" not in str(exe.result.module.main.output.ty)
    x = np.random.default_rng(4).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for target in [(1, 6, 5, 4), (3, 2, 4, 5)]:
        shape = np.array(target, np.int64)
        np.testing.assert_array_equal(exe(x, shape)[0], ort_run(model, x, shape)[0])
