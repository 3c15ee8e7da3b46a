"""print -> parse -> structurally equal, and printing again gives the same text (properties)."""

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from compiler.ir import (
    Block,
    Constant,
    Function,
    If,
    Module,
    TensorType,
    Tuple,
    Var,
    parse,
    print_module,
    structural_equal,
    structural_hash,
    verify,
)
from tests.compiler.ir.ir_strategies import modules
from tests.compiler.ir.test_parser import SEED_TEXTS


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.booleans())
def test_print_parse_round_trip(gen, show_provenance):
    verify(gen.module)  # the generator makes well-formed modules
    text = print_module(gen.module, show_provenance=show_provenance)
    back = parse(text, params=gen.params)
    assert structural_equal(back, gen.module, provenance=show_provenance), text
    assert structural_hash(back, show_provenance) == structural_hash(gen.module, show_provenance)
    assert print_module(back, show_provenance=show_provenance) == text
    # every weight comes back with its name and values (large ones from params=)
    assert back.constants().keys() == gen.module.constants().keys()
    for name, c in gen.module.constants().items():
        assert np.array_equal(back.constants()[name].data, c.data, equal_nan=True)


_DTYPES = [
    np.float16,
    np.float32,
    np.float64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.bool_,
]


@st.composite
def arrays(draw):
    """Arrays of every dtype the IR supports, with any bits (NaN payloads, subnormals, -0.0)."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    dtype = draw(st.sampled_from([*_DTYPES, ml_dtypes.bfloat16]))
    if dtype is ml_dtypes.bfloat16:
        return draw(hnp.arrays(np.uint16, shape)).view(ml_dtypes.bfloat16)
    return draw(hnp.arrays(dtype, shape))


@settings(max_examples=200, deadline=None)
@given(arrays(), st.booleans())
def test_constant_values_round_trip(array, named):
    const = Constant(array, name="w" if named else None)
    mod = Module({"main": Function.from_output([], const)})
    text = print_module(mod)
    back = parse(text)
    assert structural_equal(back, mod)
    assert print_module(back) == text
    data = back.main.output.data
    assert data.dtype == array.dtype and data.shape == array.shape
    # bit-identical, except that NaN payloads are not kept (NaN stays NaN)
    if data.tobytes() != array.tobytes():
        nan = np.isnan(array.astype(np.float64))
        assert nan.any() and np.array_equal(np.isnan(data.astype(np.float64)), nan)
        assert np.array_equal(data[~nan], array[~nan])


def test_seed_texts_round_trip():
    for text, params in SEED_TEXTS:
        mod = parse(text, params=params)
        for prov in (False, True):
            printed = print_module(mod, show_provenance=prov)
            again = parse(printed, params=params)
            assert structural_equal(again, mod, provenance=prov)
            assert print_module(again, show_provenance=prov) == printed


def test_weights_read_only_by_a_yield_or_a_return_are_printed():
    c = Var("c", TensorType((), "bool"))
    w = Constant(np.array([1.5, -2.0], np.float32), name="only.in.branch")
    v = Constant(np.array([7], np.int64), name="returned")
    zero = Constant(np.zeros(2, np.float32))
    r = If(c, Block([], w), Block([], zero))
    mod = Module({"main": Function.from_output([c], Tuple([r, v]))})
    text = print_module(mod)
    assert "  $only.in.branch: f32[2] = [1.5, -2.0]\n  $returned: i64[1] = [7]\n" in text
    assert "    yield $only.in.branch\n" in text and "    yield const(f32[2], [0.0, 0.0])\n" in text
    back = parse(text)
    assert structural_equal(back, mod) and print_module(back) == text
