"""scatter_elements and topk kernels: duplicates (last update wins), negative and clamped
indices, every reduction, topk's order (ties by lower index, nan largest, largest / smallest,
k equal to the axis), each checked against the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import passes
from compiler.backend import lowered_text
from compiler.backend.lowering import LoweringError, lower_group
from compiler.interpret import run
from compiler.ir import Call, Constant, Function, Module, TensorType, Var
from compiler.ir.types import DType

_rng = np.random.default_rng(7)


def _module(op: str, *arrays: np.ndarray, **attrs) -> Module:
    params = [Var(f"x{i}", TensorType(a.shape, DType.of(a.dtype))) for i, a in enumerate(arrays)]
    return Module({"main": Function.from_output(params, Call(op, params, attrs))})


def compiled(op: str, *arrays: np.ndarray, **attrs) -> tuple:
    """(the compiled result, the reference result, the lowered module's kernels' text)."""
    module = _module(op, *arrays, **attrs)
    want = run(module, *arrays)
    lowered = passes.run(module, "legalize-ops", raise_on_failure=True).module
    ops = {b.op for b in lowered.main.iter_nodes() if isinstance(b, Call)}
    assert ops == {"call_lowered"}, ops
    return run(lowered, *arrays), want, lowered_text(lowered)


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind == "V":  # bfloat16: compare as f32 (so nans match)
            g, w = g.astype(np.float32), w.astype(np.float32)
        np.testing.assert_array_equal(g, w)


# ----- scatter_elements --------------------------------------------------------------------


def test_scatter_duplicates_last_update_wins():
    data = np.zeros(4, np.float32)
    indices = np.array([2, 0, 2, 2, 0, 1])
    updates = np.arange(1, 7, dtype=np.float32)
    got, want, text = compiled("scatter_elements", data, indices, updates)
    np.testing.assert_array_equal(got[0], [5.0, 6.0, 4.0, 0.0])
    assert_same(got, want)
    # the update loop is sequential (the copy of data may be parallel)
    scatter = text.split("stage scatter_elements")[2]
    assert "parallel" not in scatter and "for i1 in 0..6" in scatter


def test_scatter_duplicates_along_an_inner_axis_of_a_2d_tensor():
    data = _rng.standard_normal((3, 5)).astype(np.float32)
    indices = _rng.integers(0, 3, (3, 8))  # many duplicates per row
    updates = _rng.standard_normal((3, 8)).astype(np.float32)
    for axis in (1, -1):
        got, want, _ = compiled("scatter_elements", data, indices, updates, axis=axis)
        assert_same(got, want)
    got, want, _ = compiled("scatter_elements", data, indices[:, :5] % 3, updates, axis=0)
    assert_same(got, want)


def test_scatter_negative_indices_count_from_the_end():
    data = np.zeros((2, 4), np.int32)
    indices = np.array([[-1, -4], [-2, 3]])
    updates = np.array([[1, 2], [3, 4]], np.int32)
    got, want, _ = compiled("scatter_elements", data, indices, updates, axis=1)
    np.testing.assert_array_equal(got[0], [[2, 0, 0, 1], [0, 0, 3, 4]])
    assert_same(got, want)


def test_scatter_out_of_range_indices_are_clamped_in_compiled_code():
    data = np.zeros(4, np.float32)
    module = _module("scatter_elements", data, np.array([9, -9]), np.array([1.0, 2.0], np.float32))
    lowered = passes.run(module, "legalize-ops", raise_on_failure=True).module
    (got,) = run(lowered, data, np.array([9, -9]), np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(got, [2.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
def test_scatter_reductions_match_the_reference(reduction, dtype):
    data = (_rng.standard_normal((4, 6)) * 3).astype(dtype)
    indices = _rng.integers(-6, 6, (3, 10))
    updates = (_rng.standard_normal((4, 11)) * 3).astype(dtype)  # larger: leading block read
    got, want, _ = compiled("scatter_elements", data, indices, updates, axis=1, reduction=reduction)
    assert_same(got, want)  # float add / mul accumulate in f64 like the reference: exact


def test_scatter_float_add_accumulates_in_f64_and_rounds_once():
    data = np.array([1.0], np.float32)
    updates = np.full(4, 2.0**-25, np.float32)  # each alone is lost when added to 1 in f32
    got, want, text = compiled(
        "scatter_elements", data, np.zeros(4, np.int64), updates, reduction="add"
    )
    assert got[0][0] == np.float32(1.0 + 2.0**-23)
    assert_same(got, want)
    assert "workspace %acc: f64[1]" in text


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_scatter_max_and_min_propagate_nan():
    data = np.array([1.0, 2.0, np.nan], np.float32)
    updates = np.array([np.nan, 5.0, 0.0], np.float32)
    for reduction in ("max", "min"):
        got, want, _ = compiled(
            "scatter_elements", data, np.array([0, 1, 2]), updates, reduction=reduction
        )
        assert_same(got, want)
        assert np.isnan(got[0][0]) and np.isnan(got[0][2])


def test_scatter_on_bool_reduces_like_numpy():
    data = np.array([True, False, False, True])
    indices = np.array([1, 2, 3, 1])
    updates = np.array([True, False, False, True])
    for reduction in ("none", "add", "mul", "max", "min"):
        got, want, _ = compiled("scatter_elements", data, indices, updates, reduction=reduction)
        assert_same(got, want)


def test_scatter_of_a_scalar_and_of_empty_indices():
    got, want, _ = compiled(
        "scatter_elements", np.array(1.5, np.float32), np.array(0), np.array(4.0, np.float32),
        reduction="add",
    )  # fmt: skip
    assert_same(got, want)
    data = np.ones((2, 3), np.float32)
    got, want, _ = compiled(
        "scatter_elements", data, np.zeros((2, 0), np.int64), np.zeros((2, 0), np.float32), axis=1
    )
    assert_same(got, want)


# ----- topk --------------------------------------------------------------------------------


def test_topk_ties_keep_the_lower_index_first_largest_and_smallest():
    x = np.array([1.0, 3.0, 3.0, 0.0, 3.0, 0.0, 1.0], np.float32)
    got, want, _ = compiled("topk", x, k=5)
    np.testing.assert_array_equal(got[1], [1, 2, 4, 0, 6])
    assert_same(got, want)
    got, want, _ = compiled("topk", x, k=5, largest=False)
    np.testing.assert_array_equal(got[1], [3, 5, 0, 6, 1])
    assert_same(got, want)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_with_k_equal_to_the_axis_is_a_stable_sort(largest):
    x = _rng.integers(0, 4, (3, 9)).astype(np.float32)  # many ties
    got, want, _ = compiled("topk", x, k=9, largest=largest)
    assert_same(got, want)
    order = np.argsort(-x if largest else x, axis=1, kind="stable")
    np.testing.assert_array_equal(got[1], order)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int8])
def test_topk_along_every_axis_matches_the_reference(largest, dtype):
    x = _rng.integers(-3, 4, (4, 5, 6)).astype(dtype)
    for axis, k in ((0, 3), (1, 5), (2, 2), (-1, 6)):
        got, want, _ = compiled("topk", x, k=k, axis=axis, largest=largest)
        assert_same(got, want)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_counts_nan_larger_than_everything(largest):
    x = np.array([np.nan, 1.0, -np.inf, np.nan, np.inf, -0.0, 0.0], np.float32)
    got, want, _ = compiled("topk", x, k=7, largest=largest)
    assert_same(got, want)
    expected = [0, 3, 4, 1, 5, 6, 2] if largest else [2, 5, 6, 1, 4, 0, 3]
    np.testing.assert_array_equal(got[1], expected)


def test_topk_is_an_indices_kernel_and_a_gather_of_the_values():
    x = np.array([[4.0, 1.0, 7.0]], np.float32)
    got, want, text = compiled("topk", x, k=0)
    assert_same(got, want)
    got, want, text = compiled("topk", x, k=2)
    assert_same(got, want)
    assert "# lowered from topk" in text and "# lowered from gather_elements" in text
    assert "out %out: i64[1, 2]" in text


def test_topk_values_kernel_and_a_clear_error_without_a_field():
    x = Var("x", TensorType((2, 5), DType.float32))
    node = Call("topk", [x], {"k": 3, "largest": False})
    kernel, args = lower_group("topk", [node], node, field=0)
    assert args == [x] and kernel.output.dtype is DType.float32
    with pytest.raises(LoweringError, match="cannot be lowered"):
        lower_group("topk", [node], node)


def test_topk_of_a_one_element_constant_is_computed_by_the_host():
    node = Call("topk", [Constant(np.array([2.5], np.float32))], {"k": 1})
    module = Module({"main": Function.from_output([], node)})
    lowered = passes.run(module, "legalize-ops", raise_on_failure=True).module
    assert not [b for b in lowered.main.iter_nodes() if isinstance(b, Call)]
    assert_same(run(lowered), run(module))


def test_bfloat16_scatter_and_topk():
    import ml_dtypes

    x = np.array([[1.5, -2.0, 3.0, 3.0, np.nan, 0.25]], ml_dtypes.bfloat16)
    for largest in (True, False):
        got, want, _ = compiled("topk", x, k=6, largest=largest)
        assert_same(got, want)
    data = np.ones(4, ml_dtypes.bfloat16)
    updates = np.array([2.0, 3.0, -1.0], ml_dtypes.bfloat16)
    for reduction in ("none", "add", "mul", "max", "min"):
        got, want, _ = compiled(
            "scatter_elements", data, np.array([1, 1, 3]), updates, reduction=reduction
        )
        assert_same(got, want)
