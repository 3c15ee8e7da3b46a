"""Reductions and indexing ops: symbolic type inference, error messages, numerics that the
table of OpCases cannot express (float16 accumulation, symbolic attributes, run-time errors)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import compiler.ops.index  # noqa: F401  (registers the ops)
import compiler.ops.reduce  # noqa: F401
from compiler.interpret import InterpretError, run
from compiler.ir import ANY, Function, IRError, Module, TensorType, TupleType, Var, call, sym
from compiler.ops import INJECTIVE, OPAQUE, REDUCE, get_op


def T(dtype: str, *dims) -> TensorType:
    """A tensor type; a str dim is a symbol, None is '?'."""
    return TensorType(
        [sym(d) if isinstance(d, str) else ANY if d is None else d for d in dims], dtype
    )


def infer(op: str, *types: TensorType, **attrs):
    """The type of ``op`` applied to parameters of ``types``."""
    return call(op, *(Var(f"x{i}", t) for i, t in enumerate(types)), **attrs).ty


UNRANKED = TensorType(None, "float32")

# ----- symbolic type inference -------------------------------------------------------------


@pytest.mark.parametrize(
    "op, types, attrs, expected",
    [
        ("sum", [T("f32", "b", "s", 64)], {"axes": [-1]}, T("f32", "b", "s")),
        ("sum", [T("f32", "b", "s", 64)], {"axes": [1], "keepdims": True}, T("f32", "b", 1, 64)),
        ("mean", [T("f16", "b", "s", 64)], {"axes": [0, 2]}, T("f16", "s")),
        ("max", [T("i32", "b", None, 3)], {"axes": [2]}, T("i32", "b", None)),
        ("min", [T("f32", "b", "s")], {}, T("f32")),
        ("prod", [T("i64", sym("n") + 1, 2)], {"keepdims": True}, T("i64", 1, 1)),
        (
            "variance",
            [T("f32", "b", "s", 8)],
            {"axes": [-1], "keepdims": True},
            T("f32", "b", "s", 1),
        ),
        ("std", [T("f64", "n")], {"axes": [0]}, T("f64")),
        ("sum", [UNRANKED], {}, T("f32")),
        ("sum", [UNRANKED], {"keepdims": True}, UNRANKED),
        ("sum", [UNRANKED], {"axes": [0]}, UNRANKED),
        ("sum", [T("f32")], {"axes": [-1]}, T("f32")),
        ("argmax", [T("f32", "b", "n")], {"axis": 1}, T("i64", "b")),
        ("argmin", [T("f32", "b", "n")], {"axis": -2, "keepdims": True}, T("i64", 1, "n")),
        ("argmax", [T("f16", "b", "n")], {"keepdims": True}, T("i64", 1, 1)),
        ("argmax", [T("f16", "b", "n")], {}, T("i64")),
        ("argmax", [UNRANKED], {"axis": 0}, TensorType(None, "int64")),
        ("cumsum", [T("i32", "b", None)], {"axis": 1}, T("i32", "b", None)),
        ("take", [T("f32", "v", "d"), T("i64", "b", "s")], {}, T("f32", "b", "s", "d")),
        ("take", [T("f32", "n", "v"), T("i32", "k")], {"axis": -1}, T("f32", "n", "k")),
        ("take", [T("f32", "n", "v", 3), T("u8")], {"axis": 1}, T("f32", "n", 3)),
        ("take", [T("f32", "v", "d"), TensorType(None, "int64")], {}, UNRANKED),
        ("gather_elements", [T("f32", "n", "m"), T("i64", "n", 2)], {"axis": 1}, T("f32", "n", 2)),
        ("gather_elements", [UNRANKED, T("i64", 2, 3)], {}, T("f32", 2, 3)),
        (
            "scatter_elements",
            [T("f32", "n", "m"), T("i64", "n", 2), T("f32", "n", 5)],
            {"axis": 1, "reduction": "add"},
            T("f32", "n", "m"),
        ),
        ("one_hot", [T("i64", "b", "s")], {"depth": 10}, T("i64", "b", "s", 10)),
        (
            "one_hot",
            [T("i32", "b", "s")],
            {"depth": 3, "axis": 0, "dtype": "f16"},
            T("f16", 3, "b", "s"),
        ),
        ("tril", [T("bool", "s", "s")], {}, T("bool", "s", "s")),
        ("triu", [T("f32", "b", None, None)], {"k": sym("p") + 1}, T("f32", "b", None, None)),
        ("topk", [T("f32", "b", "n")], {"k": 3}, TupleType([T("f32", "b", 3), T("i64", "b", 3)])),
        (
            "topk",
            [T("i32", 7, "n")],
            {"k": 5, "axis": 0},
            TupleType([T("i32", 5, "n"), T("i64", 5, "n")]),
        ),
    ],
)
def test_symbolic_inference(op, types, attrs, expected):
    assert infer(op, *types, **attrs) == expected


# ----- error messages ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, types, attrs, message",
    [
        (
            "sum",
            [T("bool", 3)],
            {},
            "sum(bool[3]): needs a numeric input, got bool (insert a cast)",
        ),
        ("mean", [T("i32", 3)], {}, "needs a floating-point input, got i32"),
        ("variance", [T("i64", 3)], {}, "needs a floating-point input, got i64"),
        ("sum", [T("f32", 2, 3)], {"axes": [2]}, "axes 2 is out of range for rank 2"),
        ("max", [T("f32", 2, 3)], {"axes": [-3]}, "axes -3 is out of range for rank 2"),
        ("sum", [T("f32", 2, 3)], {"axes": [1, -1]}, "axes [1, -1] repeat an axis"),
        ("sum", [T("f32", 2, 3)], {"axes": []}, "axes is empty: use axes=None"),
        ("sum", [UNRANKED], {"axes": []}, "axes is empty"),
        ("sum", [T("f32", 2)], {"axis": 0}, "sum has no attribute(s) axis (known: axes, keepdims)"),
        ("argmax", [T("f32", 2, 3)], {"axis": 2}, "axis 2 is out of range for rank 2"),
        ("argmax", [T("bool", 2)], {}, "needs a numeric input, got bool"),
        ("argmin", [T("f32", 2)], {"axis": [0]}, "attribute axis must be an integer"),
        ("cumsum", [T("f32", 2)], {}, "cumsum needs attribute axis"),
        ("cumsum", [T("f32", 2)], {"axis": 1}, "axis 1 is out of range for rank 1"),
        ("take", [T("f32", 5, 3), T("f32", 2)], {}, "indices must have an integer dtype, got f32"),
        (
            "take",
            [T("f32", 5, 3), T("bool", 2)],
            {},
            "indices must have an integer dtype, got bool",
        ),
        ("take", [T("f32", 5, 3), T("i64", 2)], {"axis": 2}, "axis 2 is out of range for rank 2"),
        ("take", [T("f32"), T("i64", 2)], {}, "data must have rank >= 1 to take from, got f32[]"),
        ("take", [T("f32", 5)], {}, "take takes inputs (data, indices), got 1 input(s)"),
        (
            "gather_elements",
            [T("f32", 3, 4), T("i64", 3)],
            {},
            "indices must have the rank of data (2), got i64[3]",
        ),
        (
            "gather_elements",
            [T("f32", 3, 4), T("i64", 2, 5)],
            {},
            "indices i64[2, 5] has 5 entries on axis 1, more than data's 4",
        ),
        ("gather_elements", [T("f32", 3, 4), T("f16", 3, 4)], {}, "indices must have an integer"),
        (
            "scatter_elements",
            [T("f32", 3), T("i64", 3), T("f16", 3)],
            {},
            "data and updates must have one dtype, got f32, f16",
        ),
        (
            "scatter_elements",
            [T("f32", 3), T("i64", 3), T("f32", 3)],
            {"reduction": "sum"},
            "reduction must be one of none, add, mul, max, min, got 'sum'",
        ),
        (
            "scatter_elements",
            [T("f32", 3), T("i64", 3), T("f32", 2)],
            {},
            "updates f32[2] has 2 entries on axis 0, fewer than indices' 3",
        ),
        ("one_hot", [T("i64", 3)], {"depth": 0}, "depth must be positive, got 0"),
        ("one_hot", [T("f32", 3)], {"depth": 4}, "indices must have an integer dtype, got f32"),
        ("one_hot", [T("i64", 3)], {"depth": 4, "axis": 2}, "axis 2 is out of range for rank 2"),
        (
            "tril",
            [T("f32", 4)],
            {},
            "needs a matrix or a batch of matrices (rank >= 2), got f32[4]",
        ),
        ("triu", [T("f32", 4, 4)], {"k": ANY}, "k must be known"),
        ("topk", [T("f32", 2, 4)], {"k": 5}, "k=5 is larger than axis 1 of f32[2, 4] (4)"),
        ("topk", [T("f32", 2, 4)], {"k": -2}, "k must be >= 0 (or -1: the whole axis), got -2"),
        ("topk", [T("f32")], {"k": 1}, "data must have rank >= 1"),
    ],
)
def test_error_message(op, types, attrs, message):
    with pytest.raises(IRError, match=re.escape(message)):
        infer(op, *types, **attrs)


# ----- numerics the case table cannot state ------------------------------------------------


def _run_op(op: str, *arrays: np.ndarray, **attrs):
    params = [Var(f"x{i}", TensorType(a.shape, a.dtype)) for i, a in enumerate(arrays)]
    out = call(op, *params, **attrs)
    return run(Module({"main": Function.from_output(params, out)}), *arrays)


def test_float16_sum_accumulates_in_wide_precision():
    # in float16, 2048 + 1 rounds back to 2048: a float16 accumulator would return 2048
    x = np.concatenate([[2048.0], np.ones(1000)]).astype(np.float16)
    (out,) = _run_op("sum", x)
    assert out.dtype == np.float16 and float(out) == 3048.0
    (mean,) = _run_op("mean", x)
    assert mean.dtype == np.float16 and float(mean) == pytest.approx(3048 / 1001, rel=1e-3)


def test_integer_sum_keeps_dtype_and_wraps():
    (out,) = _run_op("sum", np.array([100, 100], np.int8))
    assert out.dtype == np.int8 and int(out) == -56


def test_variance_is_numerically_stable():
    x = (1e8 + np.array([1.0, 2.0, 3.0, 4.0])).astype(np.float64)
    (var,) = _run_op("variance", x)
    assert var == pytest.approx(1.25)


def test_symbolic_diagonal_of_a_causal_mask():
    # a mask for s new tokens after p cached ones: query i sees keys 0 .. p + i
    s, t = sym("s"), sym("t")
    mask = Var("mask", TensorType((s, t), "bool"))
    out = call("tril", mask, k=t - s)
    assert out.ty == mask.ty
    (got,) = run(Module({"main": Function.from_output([mask], out)}), np.ones((2, 5), bool))
    np.testing.assert_array_equal(got, np.tril(np.ones((2, 5), bool), 3))


def test_out_of_range_index_is_reported_at_run_time():
    with pytest.raises(InterpretError, match=r"index 5 is out of range for axis 0 of size 5"):
        _run_op("take", np.zeros((5, 2), np.float32), np.array([0, 5], np.int64))
    with pytest.raises(InterpretError, match=r"index -4 is out of range for axis 1 of size 3"):
        _run_op("gather_elements", np.zeros((2, 3)), np.array([[0], [-4]]), axis=1)


def test_fusion_patterns():
    assert {get_op(n).pattern for n in ("sum", "mean", "max", "argmax", "std")} == {REDUCE}
    assert {get_op(n).pattern for n in ("take", "gather_elements", "tril", "one_hot")} == {
        INJECTIVE
    }
    assert {get_op(n).pattern for n in ("cumsum", "scatter_elements", "topk")} == {OPAQUE}


def test_no_separate_embedding_op():
    with pytest.raises(KeyError, match="unknown op 'embedding'"):
        get_op("embedding")


@pytest.mark.parametrize("op", ["divide", "floor_divide", "mod"])
def test_integer_division_by_zero_raises(op):
    from compiler.ops import get_op

    with pytest.raises(ZeroDivisionError):
        get_op(op).compute([np.array([1, 2], np.int64), np.array([1, 0], np.int64)], {})


@pytest.mark.parametrize(
    "op, inputs, attrs",
    [
        ("take", [np.array([2, 8, 8, 32]), np.array(2)], {"axis": 0}),  # numpy gives np.int64
        ("sum", [np.arange(6.0)], {}),
        ("argmax", [np.arange(6.0)], {}),
    ],
)
def test_every_op_gives_a_0_d_array_where_numpy_gives_a_scalar(op, inputs, attrs):
    """One place (the registry) turns numpy scalars into the 0-d arrays the types annotate:
    folding then folds ``take(shape, 2)`` of a static shape (a static Swin export's window
    sizes), the interpreter checks it like any value."""
    opdef = get_op(op)
    out = opdef.compute(inputs, opdef.normalize_attrs(attrs))
    assert isinstance(out, np.ndarray) and out.ndim == 0


def test_folding_a_scalar_take_of_a_constant_shape():
    from compiler.ir import Constant
    from compiler.passes.fold_constant import fold_call

    node = call("take", Constant(np.array([2, 8, 8, 32])), Constant(np.array(2)), axis=0)
    value = fold_call(node)
    assert isinstance(value, np.ndarray) and value.shape == () and int(value) == 8
