"""Shape ops: symbolic type inference, the shape-tensor input forms, and error messages."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import compiler.ops  # noqa: F401  (elementwise ops for the If test)
import compiler.ops.shape  # noqa: F401  (registers the shape ops)
from compiler.interpret import evaluate
from compiler.ir import (
    ANY,
    Block,
    Call,
    Constant,
    Function,
    If,
    IRError,
    Module,
    TensorType,
    TupleType,
    Var,
    sym,
    tensor,
)
from compiler.ir.symbolic import floordiv
from compiler.ops.shape import exact_quotient
from tests.compiler.ops.cases_shape import ANY_DIM_CASES, SEED3_INPUT, SEED3_PADS
from tests.compiler.ops.opcase import build_call

b, s, n, m = (sym(name) for name in "bsnm")


def infer(op: str, *types, **attrs):
    """The inferred type of ``op`` applied to Vars of ``types``."""
    args = [Var(f"in{i}", t) for i, t in enumerate(types)]
    return Call(op, args, attrs).ty


def run(output, *params_and_values):
    """Evaluate ``output`` with type checking; returns (outputs, type mismatches)."""
    params = [p for p, _ in params_and_values]
    values = [v for _, v in params_and_values]
    ev = evaluate(Function.from_output(params, output), values, check_types=True)
    return ev.outputs, ev.mismatches


# ----- symbolic inference -----------------------------------------------------------------


def test_reshape_symbolic_heads():
    assert infer("reshape", tensor([b, s, 768]), shape=[b, s, 12, 64]) == tensor([b, s, 12, 64])


@pytest.mark.parametrize(
    "source, target, expected",
    [
        ([b, s, 768], [b, s, -1, 64], [b, s, 12, 64]),
        ([b, s, 768], [-1, 768], [b * s, 768]),
        ([b, s, 768], [b, -1], [b, 768 * s]),
        ([n, 3, 4], [-1, 2], [6 * n, 2]),
        ([n, 3], [-1, 2], [floordiv(3 * n, 2), 2]),  # valid only for even n: kept as a floordiv
        ([n, 4], [m, -1], [m, ANY]),  # 4*n / m cannot be simplified
        ([ANY, 4], [-1, 2], [ANY, 2]),
    ],
)
def test_reshape_minus_one_on_symbolic_dims(source, target, expected):
    assert infer("reshape", tensor(source), shape=target) == tensor(expected)


def test_reshape_allowzero_false_copies_symbolic_dims():
    got = infer("reshape", tensor([b, s, 768]), shape=[0, 0, 12, -1], allowzero=False)
    assert got == tensor([b, s, 12, 64])


def test_reshape_from_unknown_rank():
    assert infer("reshape", tensor(None), shape=[2, -1]) == tensor([2, ANY])
    assert infer("reshape", tensor(None), shape=[n, 3]) == tensor([n, 3])


def test_exact_quotient():
    assert exact_quotient(768 * b * s, 12 * b) == 64 * s
    assert exact_quotient(n * n + 2 * n, n) == n + 2
    assert exact_quotient(4 * n, m) is None
    assert exact_quotient(3 * n, 2) is None
    assert exact_quotient(12, 5) is None


def test_flatten_symbolic():
    assert infer("flatten", tensor([n, 3, 4]), start_dim=1) == tensor([n, 12])
    assert infer("flatten", tensor([n, 3, 4])) == tensor([12 * n])
    assert infer("flatten", tensor([n, 3, 4, m]), start_dim=1, end_dim=2) == tensor([n, 12, m])


def test_concat_on_a_symbolic_axis_adds_the_dims():
    assert infer("concat", tensor([n, 4]), tensor([m, 4])) == tensor([n + m, 4])
    assert infer("concat", tensor([n, 4]), tensor([n, 4]), tensor([3, 4])) == tensor([2 * n + 3, 4])


def test_concat_merges_the_other_dims():
    assert infer("concat", tensor([2, ANY]), tensor([3, 4])) == tensor([5, 4])
    assert infer("concat", tensor([2, ANY]), tensor([3, n]), axis=0) == tensor([5, n])
    assert infer("concat", tensor([2, 4]), tensor(None)) == tensor([ANY, 4])


def test_permute_unsqueeze_tile_repeat_symbolic():
    assert infer("permute_dims", tensor([b, s, 768]), axes=[1, 0, 2]) == tensor([s, b, 768])
    assert infer("permute_dims", tensor([b, s])) == tensor([s, b])
    assert infer("unsqueeze", tensor([n, 4]), axes=[0, -1]) == tensor([1, n, 4, 1])
    assert infer("tile", tensor([n, 4]), repeats=[3, 1, 2]) == tensor([3, n, 8])
    assert infer("repeat", tensor([n, 4]), repeats=2, axis=0) == tensor([2 * n, 4])
    assert infer("repeat", tensor([n, 4]), repeats=2) == tensor([8 * n])


def test_broadcast_and_expand_symbolic():
    assert infer("broadcast_to", tensor([1, 4]), shape=[n, 4]) == tensor([n, 4])
    assert infer("broadcast_to", tensor([n, 1]), shape=[2, n, 4]) == tensor([2, n, 4])
    assert infer("expand", tensor([n, 1]), shape=[-1, m]) == tensor([n, m])


@pytest.mark.parametrize(
    "begin, end, step, expected",
    [
        (1, 2**63 - 1, 1, n - 1),  # x[1:]
        (0, -1, 1, n - 1),  # x[:-1]
        (-3, 2**63 - 1, 1, 3),  # x[-3:], assuming n >= 3 as torch.export does
        (0, 5, 1, 5),  # x[:5], assuming n >= 5
        (1, -1, 2, floordiv(n - 1, 2)),  # x[1:-1:2]
        (-1, -(2**63), -1, n),  # x[::-1]
        (-2, 0, -1, n - 2),  # x[-2:0:-1]
        (-5, 4, 1, ANY),  # x[-5:4]: shrinks as n grows, so it depends on clamping
        (3, 1, 1, 0),  # x[3:1] is empty for every n
    ],
)
def test_strided_slice_on_a_symbolic_dim(begin, end, step, expected):
    got = infer("strided_slice", tensor([n, 4]), begin=[begin], end=[end], strides=[step])
    assert got == tensor([expected, 4])


def test_split_symbolic():
    parts = infer("split", tensor([3 * n, 4]), indices_or_sections=3)
    assert parts == TupleType([tensor([n, 4])] * 3)
    parts = infer("split", tensor([n, 4]), indices_or_sections=[2, -1])
    assert parts == TupleType([tensor([2, 4]), tensor([n - 3, 4]), tensor([1, 4])])
    parts = infer("split", tensor([2, n]), indices_or_sections=[1], axis=-1)
    assert parts == TupleType([tensor([2, 1]), tensor([2, n - 1])])


def test_pad_symbolic():
    assert infer("pad", tensor([n, 4]), pads=[1, 0, 2, -1]) == tensor([n + 3, 3])


def test_squeeze_symbolic():
    # axes=None keeps symbolic dims: they are assumed >= 2, like torch.export's dynamic dims
    assert infer("squeeze", tensor([n, 1, 3])) == tensor([n, 3])
    # a '?' dim may be 1 and vanish: the rank is unknown
    assert infer("squeeze", tensor([ANY, 1, 3])) == tensor(None)
    # a listed symbolic dim is taken to be 1
    assert infer("squeeze", tensor([n, 3]), axes=[0]) == tensor([3])


def test_factories_with_symbolic_shapes():
    assert infer("full", shape=[n, 3], value=1.0) == tensor([n, 3])
    assert infer("zeros", shape=[n], dtype="int64") == tensor([n], "int64")
    assert infer("arange", stop=n) == tensor([n], "int64")
    assert infer("arange", start=1, stop=n, step=2) == tensor([floordiv(n, 2)], "int64")
    assert infer("arange", start=n, stop=0, step=-1) == tensor([n], "int64")
    assert infer("arange", stop=1.0, step=0.25) == tensor([4], "float32")
    assert infer("shape_of", tensor([n, 3])) == tensor([2], "int64")
    assert infer("shape_of", tensor(None)) == tensor([ANY], "int64")


def test_symbolic_types_agree_with_computed_values():
    """The interpreter (check_types) binds n = 5 and checks every inferred symbolic type."""
    x = Var("x", tensor([n, 3, 4]))
    flat = Call("flatten", [x], {"start_dim": 1})  # [n, 12]
    halves = Call("reshape", [flat], {"shape": [-1, 2, 6]})  # [n, 2, 6]
    tail = Call("strided_slice", [halves], {"begin": [1], "end": [2**63 - 1]})  # [n - 1, 2, 6]
    joined = Call("concat", [tail, halves], {"axis": 0})  # [2n - 1, 2, 6]
    padded = Call("pad", [joined], {"pads": [0, 0, 1, 0, 0, -2], "mode": "edge"})
    ones = Call("ones", [], {"shape": [2 * n - 1, 2, 5]})
    out = Call("add", [padded, ones])
    assert out.ty == tensor([2 * n - 1, 2, 5])
    value = np.arange(60, dtype=np.float32).reshape(5, 3, 4)
    (got,), mismatches = run(out, (x, value))
    assert not mismatches
    h = torch.from_numpy(value).flatten(1).reshape(-1, 2, 6)
    want = torch.nn.functional.pad(torch.cat([h[1:], h]), (1, -2), mode="replicate") + 1
    np.testing.assert_array_equal(got, want.numpy())


def test_squeeze_of_a_symbolic_dim_that_is_one_at_run_time_is_reported():
    """The documented assumption (symbolic dims are not 1) shows up as a type mismatch."""
    x = Var("x", tensor([n, 1, 3]))
    sq = Call("squeeze", [x])
    (got,), mismatches = run(sq, (x, np.zeros((1, 1, 3), np.float32)))
    assert got.shape == (3,)
    assert [str(mm.annotated) for mm in mismatches] == ["f32[n, 3]"]


# ----- the shape-tensor input forms -------------------------------------------------------


def test_reshape_shape_input_gives_rank_only():
    x = tensor([b, s, 768])
    assert infer("reshape", x, tensor([4], "int64")) == tensor([ANY] * 4)
    assert infer("reshape", x, tensor([n], "int64")) == tensor(None)
    # a 1-D result holds every element, whatever the shape tensor says
    assert infer("reshape", x, tensor([1], "int64")) == tensor([768 * b * s])
    const = Constant(np.array([2, 3, -1], dtype=np.int64))
    assert Call("reshape", [Var("x", x), const]).ty == tensor([ANY] * 3)


def test_pad_pads_input_keeps_rank():
    got = infer("pad", tensor([13, 1, 47, 44, 1]), tensor([10], "int64"), mode="reflect")
    assert got == tensor([ANY] * 5)
    assert infer("pad", tensor(None), tensor([ANY], "int64")) == tensor(None)


@pytest.mark.parametrize("case", ANY_DIM_CASES, ids=[c.label() for c in ANY_DIM_CASES])
def test_shape_input_forms_against_torch(case):
    """Like opcase.check_case, but a '?' in the inferred type matches any size."""
    node, params, values = build_call(case)
    ev = evaluate(Function.from_output(params, node), values, check_types=True)
    assert not ev.mismatches, [str(mm) for mm in ev.mismatches]
    (got,) = ev.outputs
    want = case.reference(*(torch.from_numpy(np.array(a)) for a in case.inputs), **case.attrs)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got, want.numpy(), rtol=case.rtol, atol=case.atol)


# ----- docs/bugs.md bug 3: ReflectionPad3d with negative pads, then squeeze(1) ---------------


def _seed3_reference() -> np.ndarray:
    pad = torch.nn.ReflectionPad3d((0, 0, -43, 0, 0, -46))
    return pad(torch.from_numpy(SEED3_INPUT)).squeeze(1).numpy()


def test_seed3_static_pads_then_squeeze():
    x = Var("x", tensor([13, 1, 47, 44, 1]))
    padded = Call("pad", [x], {"pads": SEED3_PADS, "mode": "reflect"})
    assert padded.ty == tensor([13, 1, 1, 1, 1])
    out = Call("squeeze", [padded], {"axes": [1]})
    assert out.ty == tensor([13, 1, 1, 1])
    (got,), mismatches = run(out, (x, SEED3_INPUT))
    assert not mismatches
    np.testing.assert_array_equal(got, _seed3_reference())


def test_seed3_computed_pads_and_squeeze_inside_if():
    """The TorchScript exporter's form: Pad with a pads input, Squeeze in an If whose condition
    tests dim 1 == 1. Branch ranks 4 and 5 join to an unknown rank; the value is right."""
    x = Var("x", tensor([13, 1, 47, 44, 1]))
    pads = Var("pads", tensor([10], "int64"))
    padded = Call("pad", [x, pads], {"mode": "reflect"})
    assert padded.ty == tensor([ANY] * 5)
    dim1 = Call("strided_slice", [Call("shape_of", [padded])], {"begin": [1], "end": [2]})
    cond = Call("equal", [Call("reshape", [dim1], {"shape": []}), Constant(np.int64(1))])
    squeezed = Call("squeeze", [padded], {"axes": [1]})
    assert squeezed.ty == tensor([ANY] * 4)
    branch = If(cond, Block([squeezed], squeezed), Block([], padded))
    assert branch.ty == tensor(None)
    pads_value = np.array(SEED3_PADS, dtype=np.int64)
    (got,), mismatches = run(branch, (x, SEED3_INPUT), (pads, pads_value))
    assert not mismatches
    assert got.shape == (13, 1, 1, 1)
    np.testing.assert_array_equal(got, _seed3_reference())


# ----- error messages ---------------------------------------------------------------------

f32 = tensor


@pytest.mark.parametrize(
    "op, types, attrs, message",
    [
        (
            "reshape",
            [f32([2, 3])],
            {"shape": [4, -1]},
            "cannot reshape f32[2, 3] (6 elements) into [4, -1]: 6 is not a multiple of 4",
        ),
        ("reshape", [f32([2, 3])], {"shape": [-1, -1]}, "[-1, -1] has more than one -1"),
        (
            "reshape",
            [f32([2, 3])],
            {"shape": [4, 2]},
            "cannot reshape f32[2, 3] (6 elements) into [4, 2] (8 elements)",
        ),
        (
            "reshape",
            [f32([b, s, 768])],
            {"shape": [b, s, 12, 32]},
            "(768*b*s elements) into [b, s, 12, 32] (384*b*s elements)",
        ),
        ("reshape", [f32([2, 3])], {}, "needs a target shape: the attribute shape or a shape"),
        ("reshape", [f32([2, 0])], {"shape": [0, -1]}, "cannot infer the -1 in [0, -1]"),
        (
            "reshape",
            [f32([6])],
            {"shape": [3, 0], "allowzero": False},
            "copies input dim 1 (0 with allowzero false) but the input f32[6] has rank 1",
        ),
        ("reshape", [f32([6])], {"shape": [2, ANY]}, "contains '?'"),
        (
            "reshape",
            [f32([6]), f32([2], "int64")],
            {"shape": [2, 3]},
            "either as the attribute shape or as a shape input, not both",
        ),
        (
            "reshape",
            [f32([6]), f32([2], "int32")],
            {},
            "the shape input must be a 1-D i64 tensor, got i32[2]",
        ),
        (
            "permute_dims",
            [f32([2, 3, 4])],
            {"axes": [0, 1]},
            "axes [0, 1] must list each of the 3 axes once",
        ),
        ("permute_dims", [f32([2, 3])], {"axes": [0, 0]}, "repeat an axis"),
        ("squeeze", [f32([13, 1])], {"axes": [0]}, "cannot squeeze axis 0 of f32[13, 1]: its size"),
        ("squeeze", [f32([13, 1])], {"axes": [2]}, "axes 2 is out of range for rank 2"),
        ("flatten", [f32([2, 3, 4])], {"start_dim": 2, "end_dim": 1}, "comes after end_dim 1"),
        ("concat", [f32([2, 3]), f32([2, 4])], {"axis": 0}, "differ in dim 1: 3 vs 4"),
        ("concat", [f32([2, 3]), f32([2, 3], "float16")], {}, "must have one dtype"),
        ("concat", [f32([2, 3]), f32([3])], {}, "inputs must have one rank"),
        ("concat", [f32([]), f32([])], {}, "cannot concatenate 0-d tensors"),
        (
            "split",
            [f32([7])],
            {"indices_or_sections": 3},
            "cannot split axis 0 of size 7 into 3 equal sections",
        ),
        ("split", [f32([7])], {"indices_or_sections": "half"}, "a number of sections or a list"),
        (
            "broadcast_to",
            [f32([3, 2])],
            {"shape": [3, 4]},
            "cannot broadcast f32[3, 2] to [3, 4]: dim 1 is 2, target 4",
        ),
        ("broadcast_to", [f32([3, 2])], {"shape": [2]}, "of lower rank"),
        ("expand", [f32([3])], {"shape": [-1, 3]}, "-1 is not allowed in new leading dim 0"),
        ("tile", [f32([3])], {"repeats": [-1]}, "must not be negative"),
        ("strided_slice", [f32([3])], {"begin": [0], "end": [3], "strides": [0]}, "contain 0"),
        ("strided_slice", [f32([3])], {"begin": [0, 1], "end": [3]}, "differ in length"),
        (
            "pad",
            [f32([2, 3])],
            {"pads": [1, 1]},
            "pads has 2 values; a rank-2 input needs 4 (all begins, then all ends)",
        ),
        ("pad", [f32([2, 3])], {"pads": [0, -2, 0, -2]}, "remove more than its 3 elements"),
        (
            "pad",
            [f32([2, 3])],
            {"pads": [0, 3, 0, 0], "mode": "reflect"},
            "reflect padding of 3 on axis 1 needs a dim larger than that, got 3",
        ),
        ("pad", [f32([2, 3])], {"pads": [0] * 4, "mode": "wrap"}, "mode must be one of constant"),
        ("pad", [f32([2, 3])], {}, "needs pads: the attribute pads or a pads input"),
        (
            "pad",
            [f32([2, 3]), f32([6], "int64")],
            {},
            "the pads input has 6 values; a rank-2 input needs 4",
        ),
        ("full", [], {"shape": [2, ANY], "value": 0.0}, "contains '?'"),
        ("zeros", [], {"shape": [2, -1]}, "has a negative size -1"),
        ("arange", [], {"stop": 3, "step": 0}, "step must not be 0"),
        ("arange", [], {"stop": "3"}, "stop must be a number or a symbolic dim"),
    ],
)
def test_error_messages(op, types, attrs, message):
    args = [Var(f"in{i}", t) for i, t in enumerate(types)]
    with pytest.raises(IRError) as err:
        Call(op, args, attrs)
    assert message in str(err.value)


def test_errors_name_the_op_and_input_types():
    with pytest.raises(IRError) as err:
        Call("reshape", [Var("x", f32([2, 3]))], {"shape": [4, -1]})
    assert str(err.value).startswith("reshape(f32[2, 3]): cannot reshape")


def test_split_returns_a_tuple_type():
    parts = Call("split", [Var("x", f32([6, 2]))], {"indices_or_sections": [2]})
    assert isinstance(parts.ty, TupleType)
    assert parts.ty.fields == (TensorType((2, 2), "float32"), TensorType((4, 2), "float32"))


def test_module_runs_split_outputs():
    x = Var("x", f32([6, 2]))
    parts = Call("split", [x], {"indices_or_sections": 3})
    fn = Function.from_output([x], parts)
    value = np.arange(12, dtype=np.float32).reshape(6, 2)
    outputs = evaluate(Module({"main": fn}), [value]).outputs
    assert [o.shape for o in outputs] == [(2, 2)] * 3
    np.testing.assert_array_equal(np.concatenate(outputs), value)
