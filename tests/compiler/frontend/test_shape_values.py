"""compiler.frontend.shape_values: the values of shape computations in dims."""

from __future__ import annotations

import numpy as np

from compiler.frontend.shape_values import depends_on_symbolic_dims, dims_of, symbolic_value
from compiler.ir import Constant, TensorType, Var, call, sym


def _i64(v):
    return Constant(np.asarray(v, dtype=np.int64))


X = Var("x", TensorType((sym("batch"), sym("seq"), 64), "float32"))
SHAPE = call("shape_of", X)


def test_pieces_and_arithmetic_of_a_symbolic_shape():
    seq = call("take", SHAPE, _i64(1), axis=0)
    target = call(
        "concat",
        call("unsqueeze", call("take", SHAPE, _i64(0), axis=0), axes=[0]),
        call("unsqueeze", call("add", seq, _i64(1)), axes=[0]),
        _i64([4, 16]),
        axis=0,
    )
    assert dims_of(symbolic_value(target)) == [sym("batch"), sym("seq") + 1, 4, 16]
    assert depends_on_symbolic_dims(target)
    half = call("divide", call("take", SHAPE, _i64(2), axis=0), _i64(2))
    assert dims_of(symbolic_value(half)) == [32]
    assert dims_of(symbolic_value(call("mod", seq, _i64(4)))) == [sym("seq") % 4]


def test_two_d_shape_dances_like_torchscripts_pads():
    """concat -> reshape [-1, 2] -> reverse slice -> transpose -> reshape [-1]."""
    pairs = call("reshape", _i64([0, 1, 2, 3]), shape=[-1, 2])
    flipped = call("strided_slice", pairs, begin=[-1], end=[-(2**63) + 1], strides=[-1], axes=[0])
    flat = call("reshape", call("permute_dims", flipped, axes=[1, 0]), shape=[-1])
    assert dims_of(symbolic_value(flat)) == [2, 0, 3, 1]
    assert not depends_on_symbolic_dims(flat)  # static: dynamic-to-static's to fold


def test_what_is_not_a_shape_computation_is_unknown():
    y = Var("y", TensorType((3,), "int64"))  # a runtime input: its values are data
    assert symbolic_value(call("add", y, _i64(1))) is None
    assert symbolic_value(call("shape_of", Var("z", TensorType(None, "float32")))) is None
    big = call("shape_of", Var("w", TensorType((2,) * 70, "float32")))  # over the size cap
    assert symbolic_value(big) is None
    assert symbolic_value(call("divide", call("take", SHAPE, _i64(1), axis=0), _i64(0))) is None
