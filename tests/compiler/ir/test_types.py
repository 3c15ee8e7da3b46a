"""Types: dtypes, tensor and tuple types as frozen value objects, joins, the type text form."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.ir import ANY, DType, ParseError, TensorType, TupleType, parse_type, sym, tensor
from compiler.ir.types import join_types, shape_matches, type_of_array

n, m = sym("n"), sym("m")


def test_dtype_names():
    assert DType.of("float32") is DType.of("f32") is DType.of(np.float32) is DType.float32
    assert DType.of(np.dtype("int64")) is DType.int64
    assert DType.of(np.bool_) is DType.bool
    assert DType.of(DType.float16) is DType.float16
    assert (
        DType.bfloat16.numpy.name == "bfloat16" and DType.of(DType.bfloat16.numpy) is DType.bfloat16
    )
    assert [d.short for d in (DType.float16, DType.uint8, DType.bool)] == ["f16", "u8", "bool"]
    assert DType.float32.is_float and DType.bfloat16.is_float and not DType.int8.is_float
    assert DType.uint8.is_int and not DType.bool.is_int
    assert DType.bfloat16.itemsize == 2 and DType.float64.itemsize == 8
    with pytest.raises(TypeError, match="unknown dtype 'float8'"):
        DType.of("float8")
    with pytest.raises(TypeError, match="not supported"):
        DType.of(np.complex64)


def test_tensor_type_is_a_value():
    a = TensorType([2, n], "float32")
    b = TensorType((np.int64(2), n), DType.float32)
    assert a == b and hash(a) == hash(b)
    assert a.shape == (2, n) and type(b.shape[0]) is int  # numpy ints become ints
    assert a != TensorType((2, n), "float16") and a != TensorType((2, m), "float32")
    assert a != TupleType([a])
    with pytest.raises(AttributeError, match="immutable"):
        a.shape = (3,)
    assert pickle.loads(pickle.dumps(a)) == a


@pytest.mark.parametrize("bad", [-1, 2.0, True, "n", None])
def test_invalid_dims_are_rejected(bad):
    with pytest.raises(TypeError, match="invalid dimension"):
        TensorType((2, bad), "float32")


def test_tensor_type_queries():
    t = tensor((2, 3, 4))
    assert (t.ndim, t.is_static, t.numel, t.nbytes) == (3, True, 24, 96)
    s = TensorType((n, 4), "float16")
    assert (s.ndim, s.is_static, s.numel, s.nbytes) == (2, False, 4 * n, None)
    u = TensorType(None, "int8")
    assert (u.ndim, u.is_static, u.numel, u.nbytes) == (None, False, None, None)
    assert TensorType((0, ANY), "float32").numel == 0
    assert TensorType((3, ANY), "float32").numel is ANY
    assert t.with_dtype("f16") == TensorType((2, 3, 4), "float16")
    assert t.with_shape([n]) == TensorType((n,), "float32")


@pytest.mark.parametrize(
    "ty, text",
    [
        (tensor((2, 3)), "f32[2, 3]"),
        (TensorType((), "bool"), "bool[]"),
        (TensorType(None, "int64"), "i64[*]"),
        (TensorType((2 * n + 1, ANY, n // 2), "bfloat16"), "bf16[2*n + 1, ?, n // 2]"),
        (TupleType([]), "()"),
        (TupleType([tensor((2,))]), "(f32[2],)"),
        (TupleType([tensor((2,)), TupleType([TensorType((), "u8")])]), "(f32[2], (u8[],))"),
    ],
)
def test_type_text_form(ty, text):
    assert str(ty) == text
    assert parse_type(text) == ty


def test_parse_type_errors():
    with pytest.raises(ParseError, match="unknown dtype 'f8'") as e:
        parse_type("(f32[2], f8[3])")
    assert (e.value.line, e.value.column) == (1, 10)
    with pytest.raises(ParseError, match="end of the type"):
        parse_type("f32[2] f32[2]")
    with pytest.raises(ParseError, match="expected '\\]'"):
        parse_type("f32[2, 3")


def test_tuple_type():
    t = TupleType([tensor((2,)), TensorType((n,), "int32")])
    assert len(t) == 2 and t.fields[1].dtype is DType.int32
    assert t == TupleType((tensor((2,)), TensorType((n,), "int32"))) and hash(t) == hash(
        TupleType([tensor((2,)), TensorType((n,), "int32")])
    )
    with pytest.raises(TypeError, match="must be a Type"):
        TupleType([(2, 3)])
    assert pickle.loads(pickle.dumps(t)) == t


def test_join_types():
    a = TensorType((n, 4), "float32")
    assert join_types(a, a) is a
    assert join_types(a, TensorType((n, 5), "float32")) == TensorType((n, ANY), "float32")
    assert join_types(a, TensorType((m, 4), "float32")) == TensorType((ANY, 4), "float32")
    assert join_types(a, TensorType((4,), "float32")) == TensorType(None, "float32")
    assert join_types(TupleType([a, tensor((1,))]), TupleType([a, tensor((2,))])) == TupleType(
        [a, tensor((ANY,))]
    )
    with pytest.raises(TypeError, match="incompatible types f32\\[n, 4\\] and f16\\[n, 4\\]"):
        join_types(a, a.with_dtype("f16"))
    with pytest.raises(TypeError, match="incompatible"):
        join_types(a, TupleType([a]))


def test_type_of_array_and_shape_matches():
    assert type_of_array(np.zeros((2, 3), np.int16)) == TensorType((2, 3), "int16")
    env: dict = {}
    assert shape_matches((n, 4), (5, 4), env) and env == {"n": 5}
    assert shape_matches((2 * n + 1, n), (11, 5), env)
    assert not shape_matches((n,), (6,), env)
    assert not shape_matches((n, 4), (5,), env)
    assert shape_matches((ANY, 3), (9, 3), env) and shape_matches(None, (1, 2, 3), env)
    # an expression of a symbol not bound yet cannot be checked (nor does it bind anything)
    fresh: dict = {}
    assert shape_matches((2 * m,), (7,), fresh) and fresh == {}


dims = st.one_of(
    st.integers(0, 50),
    st.sampled_from([n, m, 2 * n + 1, n // 2, n * m, m - 1, ANY]),
)
tensor_types = st.builds(
    TensorType,
    st.one_of(st.none(), st.lists(dims, max_size=4)),
    st.sampled_from(list(DType)),
)
types = st.recursive(
    tensor_types, lambda inner: st.lists(inner, max_size=3).map(TupleType), max_leaves=6
)


@settings(max_examples=200, deadline=None)
@given(types)
def test_parse_type_inverts_str(ty):
    back = parse_type(str(ty))
    assert back == ty and hash(back) == hash(ty) and str(back) == str(ty)
