"""Issue 41 item 6: the ONNX import runs what torch.onnx.export writes for GroupNorm and
upsamplers.

- ``Reshape(x, Shape(y))`` of a static ``y`` (GroupNorm's export) keeps static dims;
- a Resize whose input dims are truly unknown at import ('?') takes its sizes from the value
  when run, in agreement with onnxruntime (compiled code: tests/compiler/backend/
  test_resize_run_time_sizes.py);
- a Resize's lengths are onnxruntime's float32 product (10 x 0.7 is 7, not the double 6);
- sizes torch computes in float arithmetic (``recompute_scale_factor``) stay known in dims."""

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


def unknown_dims_resize(mode: str, scales=(1.0, 1.0, 2.0, 1.5)):
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
    model = unknown_dims_resize(mode)
    module = from_onnx(model)
    resize = next(n for n in module.main.iter_nodes() if getattr(n, "op", None) == "resize")
    assert all(str(d) == "?" for d in resize.ty.shape)  # truly unknown at import
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    shape = np.array(target, np.int64)
    got = run(module, x, shape)[0]
    expected = ort_run(model, x, shape)[0]
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_a_resize_sized_only_at_run_time_is_sized_before_it_is_made(mode, monkeypatch):
    """A crafted file's scales (at most 65536 each) on dims unknown at import would ask for
    tens of GiB when the run learns them: refused against the interpreter's limit for one
    value before anything is allocated, naming the limit; just under it, the resize runs."""
    from compiler.ir import nn_compute

    x = np.ones((2, 3, 4, 5), np.float32)
    module = from_onnx(unknown_dims_resize(mode, scales=(1.0, 1.0, 60000.0, 60000.0)))
    with pytest.raises(PasslensError, match=r"resize of \[1, 1, 6, 20\] to \[1, 1, 360000, 1200"):
        run(module, x, np.array([1, 1, 6, 20], np.int64))
    # the limit, read when the op runs: 2 x 3 x 8 x 7.5 floats fit in 3 kB
    module = from_onnx(unknown_dims_resize(mode))
    itemsize = 4 if mode == "nearest" else 8
    monkeypatch.setattr(nn_compute, "MAX_RESULT_BYTES", 2 * 3 * 8 * 7 * itemsize)
    assert run(module, x, np.array([2, 3, 4, 5], np.int64))[0].shape == (2, 3, 8, 7)
    monkeypatch.setattr(nn_compute, "MAX_RESULT_BYTES", 2 * 3 * 8 * 7 * itemsize - 1)
    with pytest.raises(PasslensError, match="LimitError: resize of .*nn_compute.MAX_RESULT_BYTES"):
        run(module, x, np.array([2, 3, 4, 5], np.int64))


def _scaled_resize(scale: float, n: int):
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")]
    inits = [numpy_helper.from_array(np.array([1, 1, 1, scale], np.float32), "scales")]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", F, [1, 2, 3, n])],
        [helper.make_tensor_value_info("y", F, None)],
        inits,
    )


@pytest.mark.parametrize(("scale", "n", "length"), [(0.7, 10, 7), (0.7, 100, 70), (1.1, 10, 11)])
def test_a_resize_length_is_the_float32_product_onnxruntime_takes(scale, n, length):
    """float32(10) * float32(0.7) rounds to 7.0: onnxruntime's length (and torch's); the
    double product, 6.99999988, floored to 6, is ONNX's reference and was the import's."""
    model = _scaled_resize(scale, n)
    module = from_onnx(model)
    assert module.main.output.ty.shape == (1, 2, 3, length)
    x = np.random.default_rng(4).standard_normal((1, 2, 3, n)).astype(np.float32)
    expected = ort_run(model, x)[0]
    assert expected.shape[-1] == length
    # (onnxruntime maps positions in float32: values within 1e-4 of the float64 ones)
    np.testing.assert_allclose(run(module, x)[0], expected, rtol=1e-4, atol=1e-4)


def computed_sizes(scale: float, dims, op: str = "Mul", rounding: str = "Floor"):
    """Sizes as TorchScript writes ``interpolate(recompute_scale_factor=True)``: the first two
    dims of Shape(x), then floor(float(dim) * scale) of the last two, concatenated (``op``
    Div divides by the scale, ``rounding`` Ceil rounds up)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"])]
    parts = []
    for axis in (2, 3):
        a = str(axis)
        nodes += [
            helper.make_node("Gather", ["s", f"i{a}"], [f"g{a}"], axis=0),
            helper.make_node("Cast", [f"g{a}"], [f"f{a}"], to=F),
            helper.make_node(op, [f"f{a}", "scale"], [f"m{a}"]),
            helper.make_node("Cast", [f"m{a}"], [f"c{a}"], to=TensorProto.DOUBLE),
            helper.make_node(rounding, [f"c{a}"], [f"fl{a}"]),
            helper.make_node("Cast", [f"fl{a}"], [f"n{a}"], to=I64),
            helper.make_node("Unsqueeze", [f"n{a}", "zero"], [f"u{a}"]),
        ]
        parts.append(f"u{a}")
    nodes += [
        helper.make_node("Slice", ["s", "zero", "two"], ["head"]),
        helper.make_node("Concat", ["head", *parts], ["sizes"], axis=0),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear"),
    ]
    inits = [
        numpy_helper.from_array(np.array(2, np.int64), "i2"),
        numpy_helper.from_array(np.array(3, np.int64), "i3"),
        numpy_helper.from_array(np.array(scale, np.float32), "scale"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", F, dims)],
        [helper.make_tensor_value_info("y", F, None)],
        inits,
    )


@pytest.mark.parametrize(
    ("dims", "want"),
    [
        ([1, 2, 6, 7], (1, 2, 9, 10)),  # static: kept static at import
        ([1, 2, "h", "w"], (1, 2, "(3*h) // 2", "(3*w) // 2")),  # symbolic: in dims
    ],
)
def test_sizes_computed_in_float_arithmetic_stay_known_in_dims(dims, want):
    """Cast(Shape(x)[2]) * 1.5, floored: the resize op with dims, not the composed form of
    '?' lengths; run, it agrees with onnxruntime."""
    model = computed_sizes(1.5, dims)
    module = from_onnx(model)
    assert tuple(str(d) for d in module.main.output.ty.shape) == tuple(map(str, want))
    assert "resize" in [getattr(n, "op", None) for n in module.main.iter_nodes()]
    x = np.random.default_rng(5).standard_normal((1, 2, 6, 7)).astype(np.float32)
    np.testing.assert_allclose(run(module, x)[0], ort_run(model, x)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("op", "rounding", "want"),
    [
        ("Div", "Floor", "(2*h) // 3"),
        ("Mul", "Ceil", "(3*h + 1) // 2"),
        ("Div", "Ceil", "(2*h + 2) // 3"),
    ],
)
def test_sizes_divided_or_rounded_up_stay_known_in_dims(op, rounding, want):
    """h / 1.5 is h * 2/3; ceil adds the denominator less one before the floor division."""
    model = computed_sizes(1.5, [1, 2, "h", "w"], op, rounding)
    module = from_onnx(model)
    assert str(module.main.output.ty.shape[2]) == want
    for h in (6, 7, 8):
        x = np.random.default_rng(h).standard_normal((1, 2, h, 5)).astype(np.float32)
        got, expected = run(module, x)[0], ort_run(model, x)[0]
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_sizes_by_a_scale_no_dim_states_stay_computed():
    """floor(float(h) * 0.7) has no dim expression: the lengths stay values ('?'), composed
    from IR ops, which the interpreter runs in agreement with onnxruntime."""
    model = computed_sizes(0.7, [1, 2, "h", "w"])
    module = from_onnx(model)
    assert [str(d) for d in module.main.output.ty.shape][2:] == ["?", "?"]
    x = np.random.default_rng(6).standard_normal((1, 2, 10, 7)).astype(np.float32)
    got, expected = run(module, x)[0], ort_run(model, x)[0]
    assert got.shape == expected.shape == (1, 2, 7, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
