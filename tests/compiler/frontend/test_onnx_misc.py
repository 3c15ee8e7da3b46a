"""Einsum and the remaining index and shape ops (CumProd, ScatterND, Unique, Compress,
CenterCropPad, ReverseSequence, SpaceToDepth modes, Pad wrap, ReduceMax/Min over an empty
axis): the ONNX node tests, models built here compared with onnxruntime, compiled models
compared with the interpreter, and the errors of the forms not converted."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import UnsupportedOperatorError, from_onnx
from compiler.frontend.onnx_frontend import OnnxImportError, checkable
from compiler.interpret import run
from tests.compiler.frontend.onnx_helpers import load_harness as _harness
from tests.compiler.frontend.onnx_helpers import ort_run

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL

NODE_TESTS = [
    "einsum",
    "cumprod",
    "scatternd",
    "unique",
    "compress",
    "center_crop_pad",
    "reversesequence",
    "spacetodepth",
    "wrap_pad",
    "reduce_max_empty_set",
    "reduce_min_empty_set",
    "affine_grid_3d_expanded",
    "affine_grid_3d_align_corners_expanded",
]


@pytest.fixture(scope="module")
def harness():
    return _harness()


def test_node_tests_of_the_family_pass(harness):
    root = harness.node_test_dir()
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and any(k in d.name for k in NODE_TESTS))
    assert len(dirs) >= 60
    results = [harness.run_case(d) for d in dirs]
    bad = [f"{r.name}: {r.status} {r.message}" for r in results if r.status != "passed"]
    assert not bad


# ----- helpers ---------------------------------------------------------------------------


def make_model(nodes, inputs, outputs, initializers=(), opset=21):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if opset <= 21:  # what onnxruntime reads; newer opsets keep onnx's IR version
        model.ir_version = 10
    onnx.checker.check_model(checkable(model))
    return model


def check(model, *inputs, rtol=1e-5, atol=1e-6, compile=False):
    """The interpreter (and the compiled module) against onnxruntime."""
    module = from_onnx(model)
    expected = ort_run(model, *inputs)
    got = run(module, *inputs)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    if compile:
        from compiler.backend import build

        out = build(module)(*inputs)
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        for g, e in zip(out, expected, strict=True):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return module


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


RNG = np.random.default_rng(17)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ----- Einsum ----------------------------------------------------------------------------


def _einsum_model(equation, shapes, out_rank):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    inputs = [vi(n, F32, s) for n, s in zip(names, shapes, strict=True)]
    return make_model([node], inputs, [vi("y", F32, [None] * out_rank)])


@pytest.mark.parametrize(
    "equation, shapes, out_rank",
    [
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], 3),
        ("ij,jk", [(3, 4), (4, 5)], 2),
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 6, 8)], 4),
        ("i,j->ij", [(3,), (4,)], 2),
        ("ii->", [(4, 4)], 0),
        ("ii", [(4, 4)], 0),
        ("bii->bi", [(2, 3, 3)], 2),
        ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)], 3),
        ("...ij,jk->...ik", [(2, 3, 4), (4, 5)], 3),
        ("ij,ij->ij", [(3, 4), (3, 4)], 2),
        ("ijk->kji", [(2, 3, 4)], 3),
        ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)], 2),
        ("abc,cd->", [(2, 3, 4), (4, 5)], 0),
        ("ab,b->a", [(3, 4), (4,)], 1),
        ("...i->...", [(2, 3, 4)], 2),
    ],
)
def test_einsum_matches_onnxruntime(equation, shapes, out_rank):
    model = _einsum_model(equation, shapes, out_rank)
    check(model, *[randn(*s) for s in shapes], rtol=1e-4, atol=1e-5)


def _attention_model():
    """softmax(einsum(q, k) / sqrt(d)) then einsum with v, a symbolic batch."""
    shape = ["batch", 2, 5, 8]
    nodes = [
        helper.make_node("Einsum", ["q", "k"], ["s"], equation="bhqd,bhkd->bhqk"),
        helper.make_node("Mul", ["s", "scale"], ["t"]),
        helper.make_node("Softmax", ["t"], ["p"], axis=-1),
        helper.make_node("Einsum", ["p", "v"], ["o"], equation="bhqk,bhkd->bqhd"),
    ]
    scale = numpy_helper.from_array(np.array(8**-0.5, np.float32), "scale")
    inputs = [vi(n, F32, shape) for n in ("q", "k", "v")]
    return make_model(nodes, inputs, [vi("o", F32, ["batch", 5, 2, 8])], [scale])


def test_einsum_attention_with_a_symbolic_batch_matches_onnxruntime_and_compiles():
    model = _attention_model()
    module = from_onnx(model)
    assert str(module.main.ret_type) == "f32[batch, 5, 2, 8]"
    assert [n for n in module.main.iter_nodes() if getattr(n, "op", None) == "matmul"]
    for batch in (1, 3):
        q, k, v = (randn(batch, 2, 5, 8) for _ in range(3))
        check(model, q, k, v, rtol=1e-4, atol=1e-5, compile=batch == 3)


def test_einsum_compiles():
    model = _einsum_model("bii,bij->bj", [(2, 3, 3), (2, 3, 4)], 2)
    check(model, randn(2, 3, 3), randn(2, 3, 4), rtol=1e-4, atol=1e-5, compile=True)


@pytest.mark.parametrize(
    "equation, shapes, message",
    [
        ("ij,jk->ik", [(3, 4)], "2 operands, the node 1 inputs"),
        ("ijk->i", [(3, 4)], "names 3 axes of a rank-2 input"),
        ("ij->iz", [(3, 4)], "output label z is no input's"),
        ("i1->i", [(3, 4)], "labels must be letters"),
        ("ij->ii", [(3, 4)], "an output label repeats"),
    ],
)
def test_einsum_bad_equations_are_clear_errors(equation, shapes, message):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    inputs = [vi(n, F32, s) for n, s in zip(names, shapes, strict=True)]
    graph = helper.make_graph([node], "g", inputs, [vi("y", F32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(model, check=False)


# ----- CumProd ---------------------------------------------------------------------------


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumprod_matches_onnxruntime_with_a_symbolic_batch(exclusive, reverse):
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)
    axis = numpy_helper.from_array(np.array(1, np.int64), "axis")
    model = make_model(
        [node], [vi("x", F32, ["batch", 5])], [vi("y", F32, ["batch", 5])], [axis], opset=26
    )
    x = randn(3, 5)
    x[1, 2] = 0.0
    expected = np.cumprod(x[:, ::-1] if reverse else x, axis=1)
    if exclusive:
        expected = np.concatenate([np.ones((3, 1), np.float32), expected[:, :-1]], axis=1)
    if reverse:
        expected = expected[:, ::-1]
    module = from_onnx(model)
    np.testing.assert_allclose(run(module, x)[0], expected, rtol=1e-5)
    from compiler.backend import build

    np.testing.assert_allclose(build(module)(x)[0], expected, rtol=1e-5)


def test_cumprod_along_a_symbolic_axis_and_of_ints():
    node = helper.make_node("CumProd", ["x", "axis"], ["y"])
    axis = numpy_helper.from_array(np.array(0, np.int64), "axis")
    model = make_model(
        [node],
        [vi("x", TensorProto.INT32, ["n", 2])],
        [vi("y", TensorProto.INT32, ["n", 2])],
        [axis],
        opset=26,
    )
    x = np.arange(1, 9, dtype=np.int32).reshape(4, 2)
    module = from_onnx(model)
    np.testing.assert_array_equal(run(module, x)[0], np.cumprod(x, axis=0))
    from compiler.backend import build

    np.testing.assert_array_equal(build(module)(x)[0], np.cumprod(x, axis=0))


# ----- ScatterND -------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatternd_matches_onnxruntime_and_compiles(reduction):
    attrs = {} if reduction == "none" else {"reduction": reduction}
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], **attrs)
    model = make_model(
        [node],
        [vi("data", F32, [4, 3, 5]), vi("indices", I64, [2, 2]), vi("updates", F32, [2, 5])],
        [vi("y", F32, [4, 3, 5])],
        opset=18,
    )
    indices = np.array([[0, 1], [-1, 2]], np.int64)  # a negative index counts from the end
    check(model, randn(4, 3, 5), indices, randn(2, 5), compile=True)


def test_scatternd_with_element_indices_and_a_symbolic_dim():
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], reduction="add")
    model = make_model(
        [node],
        [vi("data", F32, ["n", 3]), vi("indices", I64, [3, 2]), vi("updates", F32, [3])],
        [vi("y", F32, ["n", 3])],
        opset=18,
    )
    indices = np.array([[0, 1], [2, 2], [0, 1]], np.int64)
    check(model, randn(4, 3), indices, randn(3))


def test_scatternd_with_an_empty_index_is_unsupported():
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"])
    model = make_model(
        [node],
        [vi("data", F32, [2, 3]), vi("indices", I64, [1, 0]), vi("updates", F32, [1, 2, 3])],
        [vi("y", F32, [2, 3])],
        opset=18,
    )
    with pytest.raises(UnsupportedOperatorError, match="empty index"):
        from_onnx(model, strict=True)


# ----- Unique ----------------------------------------------------------------------------


def _unique_model(shape, elem=F32, **attrs):
    node = helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], **attrs)
    outs = [vi("y", elem, None)] + [vi(n, I64, [None]) for n in ("indices", "inverse", "counts")]
    return make_model([node], [vi("x", elem, shape)], outs)


@pytest.mark.parametrize("sort", [0, 1])
def test_unique_without_axis_matches_onnxruntime(sort):
    x = np.array([[2.0, 1.0, 1.0], [3.0, 4.0, 3.0]], np.float32)
    check(_unique_model([2, 3], sorted=sort), x)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_along_an_axis_matches_onnxruntime(axis):
    x = np.array([[1, 0, 1], [1, 0, 1], [2, 3, 2]], np.float32)
    check(_unique_model([3, 3], axis=axis, sorted=1), x)


def test_unique_of_a_symbolic_length_and_ints():
    model = _unique_model(["n"], elem=I64)
    x = np.array([5, 1, 5, 7, 1, 1], np.int64)
    module = check(model, x)
    expected = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for g, e in zip(run(module, x), expected, strict=True):
        np.testing.assert_array_equal(g, e)


def test_data_dependent_lengths_compile():
    """Unique reads positions from nonzero, whose length is known only at run time: the host
    runs nonzero and legalize-ops names its length, so the kernels after it compile."""
    from compiler.backend import build

    model = _unique_model([6], elem=I64)
    module = from_onnx(model)
    x = np.array([3, 1, 3, 2, 1, 3], np.int64)
    got = build(module)(x)
    expected = run(module, x)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


# ----- Compress, ReverseSequence, CenterCropPad, SpaceToDepth, Pad wrap ------------------


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_compress_matches_onnxruntime(axis):
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("Compress", ["x", "c"], ["y"], **attrs)
    n = 4 if axis is None else 3
    model = make_model(
        [node], [vi("x", F32, [3, 3]), vi("c", BOOL, [n])], [vi("y", F32, None)], opset=11
    )
    cond = np.array([True, False, True, True][:n])
    check(model, randn(3, 3), cond)


@pytest.mark.parametrize("batch_axis, time_axis", [(0, 1), (1, 0)])
def test_reverse_sequence_matches_onnxruntime_and_compiles(batch_axis, time_axis):
    node = helper.make_node(
        "ReverseSequence", ["x", "lens"], ["y"], batch_axis=batch_axis, time_axis=time_axis
    )
    shape = [3, 5, 2] if batch_axis == 0 else [5, 3, 2]
    model = make_model(
        [node], [vi("x", F32, shape), vi("lens", I64, [3])], [vi("y", F32, shape)], opset=13
    )
    check(model, randn(*shape), np.array([5, 1, 3], np.int64), compile=True)


def test_center_crop_pad_with_computed_and_constant_shapes():
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[0, -1])
    model = make_model(
        [node], [vi("x", F32, [5, 2, 6]), vi("s", I64, [2])], [vi("y", F32, None)], opset=18
    )
    x = randn(5, 2, 6)
    for target in ([3, 9], [8, 4], [5, 6]):
        check(model, x, np.array(target, np.int64))
    const = numpy_helper.from_array(np.array([8, 3], np.int64), "s")
    model = make_model(
        [node], [vi("x", F32, [5, 2, 6])], [vi("y", F32, [8, 2, 3])], [const], opset=18
    )
    check(model, x, compile=True)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes(mode):
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode=mode)
    model = make_model(
        [node], [vi("x", F32, [1, 3, 4, 6])], [vi("y", F32, [1, 12, 2, 3])], opset=28
    )
    x = randn(1, 3, 4, 6)
    (y,) = run(from_onnx(model), x)
    b = x.reshape(1, 3, 2, 2, 3, 2)
    if mode == "DCR":
        expected = b.transpose(0, 3, 5, 1, 2, 4).reshape(1, 12, 2, 3)
    else:
        expected = b.transpose(0, 1, 3, 5, 2, 4).reshape(1, 12, 2, 3)
    np.testing.assert_array_equal(y, expected)


def test_pad_wrap_with_constant_and_computed_pads():
    pads = np.array([1, 2, 0, 3], np.int64)  # negative would crop; mixed here
    x = randn(3, 4)
    expected = np.pad(x, [(1, 0), (2, 3)], mode="wrap")
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")
    computed = make_model(
        [node], [vi("x", F32, ["n", 4]), vi("pads", I64, [4])], [vi("y", F32, None)], opset=19
    )
    np.testing.assert_array_equal(run(from_onnx(computed), x, pads)[0], expected)
    const = make_model(
        [node],
        [vi("x", F32, [3, 4])],
        [vi("y", F32, [4, 9])],
        [numpy_helper.from_array(pads, "pads")],
        opset=19,
    )
    module = from_onnx(const)
    np.testing.assert_array_equal(run(module, x)[0], expected)
    from compiler.backend import build

    np.testing.assert_array_equal(build(module)(x)[0], expected)


def test_pad_wrap_of_an_empty_axis_is_a_clear_error():
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")
    pads = numpy_helper.from_array(np.array([1, 0, 0, 0], np.int64), "pads")
    model = make_model([node], [vi("x", F32, [0, 4])], [vi("y", F32, None)], [pads], opset=19)
    with pytest.raises(OnnxImportError, match="empty axis"):
        from_onnx(model)


# ----- ReduceMax / ReduceMin over an empty axis given as a computed input ----------------


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_extreme_over_an_empty_computed_axis(op):
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)
    model = make_model(
        [node], [vi("x", F32, [2, 0, 4]), vi("axes", I64, [1])], [vi("y", F32, [2, 1, 4])]
    )
    (y,) = run(from_onnx(model), np.zeros((2, 0, 4), np.float32), np.array([1], np.int64))
    fill = -np.inf if op == "ReduceMax" else np.inf
    np.testing.assert_array_equal(y, np.full((2, 1, 4), fill, np.float32))


# ----- If with a condition known from static shapes (expanded AffineGrid) ----------------


def _static_if_model(else_nodes, else_inits=()):
    """z = zeros of the shape of If(Size(x) == 4) {x} else {...}: the condition is static."""
    four = numpy_helper.from_array(np.array(4, np.int64), "four")
    then_g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"])], "then", [], [vi("t", F32, None)]
    )
    else_g = helper.make_graph(else_nodes, "else", [], [vi("e", F32, None)], list(else_inits))
    nodes = [
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("Equal", ["n", "four"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Shape", ["y"], ["y_shape"]),
        helper.make_node("ConstantOfShape", ["y_shape"], ["z"]),
    ]
    graph = helper.make_graph(nodes, "g", [vi("x", F32, [4])], [vi("z", F32, None)], [four])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_if_with_a_static_condition_keeps_the_taken_branch_types():
    # joined with the then branch's [4], the else branch's [2, 2] leaves the rank unknown
    shape = numpy_helper.from_array(np.array([2, 2], np.int64), "s")
    model = _static_if_model([helper.make_node("Reshape", ["x", "s"], ["e"])], [shape])
    module = from_onnx(model)
    assert not [n for n in module.main.iter_nodes() if type(n).__name__ == "If"]
    (z,) = run(module, randn(4))
    np.testing.assert_array_equal(z, np.zeros(4, np.float32))


def test_if_with_a_static_condition_skips_a_branch_that_cannot_convert():
    bad = helper.make_node("Einsum", ["x"], ["e"], equation="ii->i")  # x has rank 1
    module = from_onnx(_static_if_model([bad]), check=False)
    (z,) = run(module, randn(4))
    assert z.shape == (4,)


def test_if_with_a_computed_condition_is_kept():
    model = _static_if_model([helper.make_node("Neg", ["x"], ["e"])])
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "n"
    model.graph.output.append(vi("y", F32, None))
    module = from_onnx(model)
    assert [n for n in module.main.iter_nodes() if type(n).__name__ == "If"]
    x = randn(5)
    z, y = run(module, x)
    assert z.shape == (5,)
    np.testing.assert_array_equal(y, -x)


def test_reverse_sequence_with_a_symbolic_time_axis_compiles():
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=1, time_axis=0)
    model = make_model(
        [node],
        [vi("x", F32, ["t", 3, 2]), vi("lens", I64, [3])],
        [vi("y", F32, ["t", 3, 2])],
        opset=13,
    )
    for t in (4, 6):
        check(model, randn(t, 3, 2), np.array([4, 1, 2], np.int64), compile=True)


@pytest.mark.parametrize(
    "equation, a, b, out",
    [
        ("bqhd,bkhd->bhqk", ["b", "s", 2, 4], ["b", "s", 2, 4], ["b", 2, "s", "s"]),
        ("...qd,...kd->...qk", ["b", 2, "s", 4], ["b", 2, "s", 4], ["b", 2, "s", "s"]),
        ("bsd,df->bsf", ["b", "s", 4], [4, 3], ["b", "s", 3]),
        ("bhsd->bsd", ["b", 2, "s", 4], None, ["b", "s", 4]),
    ],
)
def test_einsum_with_symbolic_batch_and_sequence_compiles(equation, a, b, out):
    names = ["a"] if b is None else ["a", "b"]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    inputs = [vi("a", F32, a)] + ([] if b is None else [vi("b", F32, b)])
    model = make_model([node], inputs, [vi("y", F32, out)])
    module = from_onnx(model)
    assert [str(d) for d in module.main.ret_type.shape] == [str(d) for d in out]
    sizes = {"b": 3, "s": 5}
    arrays = [randn(*[sizes.get(d, d) for d in s]) for s in (a, b) if s is not None]
    check(model, *arrays, rtol=1e-4, atol=1e-5, compile=True)


def test_einsum_merging_axes_of_unknown_sizes_is_unsupported():
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="bijk,bjkl->bil")
    model = make_model(
        [node],
        [vi("a", F32, [None, None, 2, 3]), vi("b", F32, [None, 2, 3, 4])],
        [vi("y", F32, [None, None, 4])],
    )
    with pytest.raises(UnsupportedOperatorError, match="merging several axes of unknown size"):
        from_onnx(model, strict=True)
