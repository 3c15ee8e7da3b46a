"""Structural equality: name hints do not count; weights' names and values do; provenance
only when asked."""

import numpy as np
import pytest

import compiler.ops  # noqa: F401
from compiler.ir import (
    Block,
    Constant,
    Function,
    If,
    Module,
    Provenance,
    TensorType,
    Var,
    assert_structural_equal,
    call,
    parse,
    structural_equal,
    structural_hash,
    verify,
)

F32_2 = TensorType((2,), "float32")


def build(
    *,
    x_name="x",
    hint="h",
    w_name="w",
    w_values=(1.0, 2.0),
    w_dtype=np.float32,
    literal=0.5,
    op="add",
    prov=None,
    w_prov=None,
    x_prov=None,
    alpha=0.1,
    swap=False,
    attrs=None,
):
    """A small module; each keyword changes one aspect of it."""
    x = Var(x_name, TensorType((2,), np.dtype(w_dtype).name), x_prov)
    w = Constant(np.array(w_values, w_dtype), name=w_name, prov=w_prov)
    a = call(op, x, w, name=hint, prov=prov)
    b = call("multiply", a, Constant.scalar(literal, np.dtype(w_dtype).name), name=hint)
    c = call("leaky_relu", b, alpha=alpha) if np.dtype(w_dtype).kind == "f" else b
    d = call("neg", x)
    e = call("add", c, d)
    bindings = [a, b, c, d, e] if c is not b else [a, b, d, e]
    if swap:  # the same computation with two independent bindings in another order
        bindings.insert(0, bindings.pop(-2))  # neg(x) first
    return Module({"main": Function([x], bindings, e, attrs)})


def test_name_hints_do_not_count():
    assert structural_equal(build(), build(x_name="input", hint="other"))
    assert structural_hash(build()) == structural_hash(build(x_name="input", hint=None))
    assert_structural_equal(build(hint="z"), build())


@pytest.mark.parametrize(
    "change",
    [
        {"w_name": "w2"},
        {"w_values": (1.0, 2.5)},
        {"w_values": (1.0, 2.0000002)},
        {"w_dtype": np.float64},
        {"literal": 0.25},
        {"op": "subtract"},
        {"alpha": 0.2},
        {"swap": True},
        {"attrs": {"private": True}},
    ],
    ids=[
        "weight name",
        "weight value",
        "ulp",
        "dtype",
        "literal",
        "op",
        "attr",
        "order",
        "fn attrs",
    ],
)
def test_what_counts(change):
    verify(build(**change))
    assert not structural_equal(build(), build(**change))
    assert structural_equal(build(**change), build(**change))


def test_zero_and_negative_zero_weights_differ_but_nans_are_equal():
    assert not structural_equal(build(w_values=(0.0, 1.0)), build(w_values=(-0.0, 1.0)))
    nan = np.array([np.nan, 1.0], np.float32)
    other_nan = nan.copy()
    other_nan.view(np.uint32)[0] |= 1  # another NaN payload: the text prints both as nan
    assert np.isnan(other_nan[0])
    assert structural_equal(build(w_values=nan), build(w_values=other_nan))
    assert structural_hash(build(w_values=nan)) == structural_hash(build(w_values=other_nan))


def test_provenance_counts_only_when_asked():
    p = Provenance(module_path="fc", source_op="aten.add.Tensor")
    for change in ({"prov": p}, {"w_prov": p}, {"x_prov": p}):
        assert structural_equal(build(), build(**change))
        assert not structural_equal(build(), build(**change), provenance=True)
        assert structural_equal(build(**change), build(**change), provenance=True)
        assert structural_hash(build(**change), True) != structural_hash(build(), True)


def test_inline_literals_provenance_is_not_part_of_the_text_so_it_does_not_count():
    x = Var("x", F32_2)

    def fn(prov):
        return Function.from_output([x], call("add", x, Constant.scalar(1.0, prov=prov)))

    assert structural_equal(fn(None), fn(Provenance(module_path="m")), provenance=True)


def test_if_branches_count():
    x, c = Var("x", F32_2), Var("c", TensorType((), "bool"))

    def fn(then_op, else_op):
        r = If(c, Block.of(call(then_op, x)), Block.of(call(else_op, x)))
        return Function.from_output([x, c], r)

    assert structural_equal(fn("relu", "exp"), fn("relu", "exp"))
    assert not structural_equal(fn("relu", "exp"), fn("exp", "relu"))


def test_expressions_compare_by_structure():
    x, y = Var("x", F32_2), Var("y", F32_2)
    assert structural_equal(
        call("add", x, call("relu", y)), call("add", Var("x", F32_2), call("relu", Var("y", F32_2)))
    )
    assert not structural_equal(call("add", x, y), call("add", y, x))
    assert not structural_equal(call("add", x, y), call("multiply", x, y))


def test_different_kinds_never_compare_equal():
    mod = build()
    assert structural_equal(mod, mod)
    assert not structural_equal(mod, mod.main)
    assert not structural_equal(mod.main, mod.main.output)
    with pytest.raises(TypeError, match="cannot compare"):
        structural_hash(42)


def test_parameter_types_and_order_count():
    x, y = Var("x", F32_2), Var("y", TensorType((2,), "float16"))
    assert not structural_equal(Function([x, y], [], x), Function([y, x], [], x))


def test_module_function_names_count():
    main = build().main
    assert not structural_equal(Module({"main": main}), Module({"other": main}))


def test_assert_structural_equal_shows_a_diff():
    with pytest.raises(AssertionError) as e:
        assert_structural_equal(build(op="subtract"), build())
    text = str(e.value)
    assert text.startswith("modules differ structurally:")
    assert "-  %h: f32[2] = add(%x, $w)" in text and "+  %h: f32[2] = subtract(%x, $w)" in text
    # weights too large to print inline differ only in values the text does not show
    text = "weights {\n  $w: f32[40]\n}\ndef @main() -> f32[40] {\n  return $w\n}\n"
    zeros = parse(text, params={"w": np.zeros(40, np.float32)})
    ones = parse(text, params={"w": np.ones(40, np.float32)})
    with pytest.raises(AssertionError, match="same text"):
        assert_structural_equal(zeros, ones)
