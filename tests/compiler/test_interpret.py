"""The reference interpreter: results, intermediate values, the value cache, input checks,
errors that say where, If and calls."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings

import compiler.ops  # noqa: F401
from compiler.interpret import InterpretError, ValueCache, evaluate, run
from compiler.ir import (
    Call,
    Constant,
    Function,
    Provenance,
    TensorType,
    Var,
    call,
    parse,
    print_module,
)
from tests.compiler.ir.ir_strategies import modules

TEXT = """
weights {
  $w: f32[3] = [1.0, -2.0, 0.5]
}
def @main(%x: f32[n, 3], %c: bool[]) -> (f32[n, 3], f32[n, 3]) {
  %a: f32[n, 3] = multiply(%x, $w)
  %r: f32[n, 3] = if %c {
    %t: f32[n, 3] = relu(%a)
    yield %t
  } else {
    %e: f32[n, 3] = neg(%a)
    yield %e
  }
  %s: f32[n, 3] = call @scale(%r)
  %out: (f32[n, 3], f32[n, 3]) = (%r, %s)
  return %out
}
def @scale(%v: f32[m, 3]) -> f32[m, 3] attrs {private = true} {
  %d: f32[m, 3] = add(%v, %v)
  return %d
}
"""


@pytest.fixture
def mod():
    return parse(TEXT)


def named(fn, name):
    return next(node for node in fn.iter_nodes() if node.name == name)


X = np.array([[1.0, 2.0, -3.0], [-1.0, 0.0, 4.0]], np.float32)
W = np.array([1.0, -2.0, 0.5], np.float32)


def test_run_returns_the_outputs(mod):
    r, s = run(mod, X, np.array(True))
    assert np.array_equal(r, np.maximum(X * W, 0)) and r.dtype == np.float32
    assert np.array_equal(s, 2 * r)
    r, s = run(mod, X, np.array(False))
    assert np.array_equal(r, -(X * W)) and np.array_equal(s, 2 * r)


def test_evaluate_keeps_every_intermediate_value(mod):
    ev = evaluate(mod, [X, np.array(True)])
    main = mod.main
    assert ev.symbols == {"n": 2}
    assert ev.values[main.params[0]] is X
    assert np.array_equal(ev.values[named(main, "a")], X * W)
    assert np.array_equal(ev.values[named(main, "t")], np.maximum(X * W, 0))
    assert ev.values[named(main, "r")] is ev.values[named(main, "t")]
    assert ev.values[named(main, "out")][1] is ev.outputs[1]
    assert len(ev.outputs) == 2


def test_if_runs_only_the_taken_branch(mod):
    main = mod.main
    taken = evaluate(mod, [X, np.array(True)])
    assert named(main, "t") in taken.values and named(main, "e") not in taken.values
    other = evaluate(mod, [X, np.array(False)])
    assert named(main, "e") in other.values and named(main, "t") not in other.values
    # a branch that would fail is never entered
    text = """
    def @main(%a: i32[2], %b: i32[2], %c: bool[]) -> i32[2] {
      %r: i32[2] = if %c {
        %q: i32[2] = divide(%a, %b)
        yield %q
      } else {
        yield %a
      }
      return %r
    }
    """
    zeros = np.zeros(2, np.int32)
    (out,) = run(parse(text), np.ones(2, np.int32), zeros, np.array(False))
    assert out.tolist() == [1, 1]
    with pytest.raises(InterpretError, match="ZeroDivisionError"):
        run(parse(text), np.ones(2, np.int32), zeros, np.array(True))


def test_func_call(mod):
    scale = mod["scale"]
    (out,) = run(mod, X, function="scale")
    assert np.array_equal(out, 2 * X)
    assert np.array_equal(run(scale, X)[0], 2 * X)  # a lone function
    fcall = named(mod.main, "s")
    with pytest.raises(InterpretError, match="call of @scale outside a module"):
        run(mod.main, X, np.array(True))
    assert fcall.func == "scale"


def test_the_cache_reuses_nodes_shared_by_two_modules(mod):
    """A pass keeps unchanged nodes, so a later snapshot evaluates only what it changed."""
    main = mod.main
    x, c = main.params
    extra = call("exp", main.output.fields[1])
    snapshot = mod.with_function("main", Function.from_output([x, c], extra))
    cache = ValueCache()
    first = evaluate(mod, [X, np.array(True)], cache=cache)
    # a, r (and t inside the taken branch), s, out
    assert (cache.hits, cache.misses) == (0, 5)
    second = evaluate(snapshot, [X, np.array(True)], cache=cache)
    assert (cache.hits, cache.misses) == (3, 5 + 1)  # a, r, s reused; only exp computed
    assert second.values[named(main, "s")] is first.values[named(main, "s")]
    expected = np.exp(2 * np.maximum(X * W, 0).astype(np.float64)).astype(np.float32)
    assert np.array_equal(second.outputs[0], expected)
    evaluate(snapshot, [X.copy(), np.array(True)], cache=cache)  # equal values: fine
    assert (cache.hits, cache.misses) == (3 + 4, 6)


def test_cache_counts_nodes_inside_branches(mod):
    main = mod.main
    x, c = main.params
    r = named(main, "r")
    # another If that shares the then-branch (and its node %t) but has a new else-branch
    r2 = r.replace(else_branch=r.else_branch.replace(result=x), name="r2")
    snapshot = mod.with_function("main", Function.from_output([x, c], r2))
    cache = ValueCache()
    evaluate(mod, [X, np.array(True)], cache=cache)
    hits, misses = cache.hits, cache.misses
    ev = evaluate(snapshot, [X, np.array(True)], cache=cache)
    assert (cache.hits - hits, cache.misses - misses) == (2, 1)  # a and t reused, r2 computed
    assert ev.outputs[0] is ev.values[named(main, "t")]


def test_a_cache_is_for_one_set_of_inputs(mod):
    cache = ValueCache()
    evaluate(mod, [X, np.array(True)], cache=cache)
    with pytest.raises(
        InterpretError, match="different value for parameter %x: use one cache per set of inputs"
    ):
        evaluate(mod, [X + 1, np.array(True)], cache=cache)
    with pytest.raises(InterpretError, match="parameter %c"):
        evaluate(mod, [X, np.array(False)], cache=cache)


def test_a_call_whose_callee_changed_is_computed_again_with_all_that_depends_on_it():
    """A pass may change @f while @main (and its call node) stay the same objects: the cached
    value of the call, and of everything after it, must not be reused."""
    from compiler.ir import parse

    text = """
def @f(%a: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%a)
  return %e
}

def @g(%a: f32[3]) -> f32[3] {
  %r: f32[3] = call @f(%a)
  return %r
}

def @main(%x: f32[3]) -> f32[3] {
  %y: f32[3] = call @g(%x)
  %z: f32[3] = neg(%y)
  return %z
}
"""
    before = parse(text)
    tanh = parse(text.replace("exp(%a)", "tanh(%a)"))
    after = before.with_function("f", tanh.functions["f"])  # @main and @g are the same objects
    assert after.main is before.main and after.functions["g"] is before.functions["g"]
    x = np.array([0.5, -1.0, 2.0], np.float32)
    cache = ValueCache()
    first = evaluate(before, [x], cache=cache)
    second = evaluate(after, [x], cache=cache)
    np.testing.assert_allclose(first.outputs[0], -np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(second.outputs[0], -np.tanh(x), rtol=1e-6)
    third = evaluate(after, [x], cache=cache)  # unchanged since: all reused
    assert third.outputs[0] is second.outputs[0]


def test_without_a_cache_nothing_is_reused(mod):
    a = evaluate(mod, [X, np.array(True)])
    b = evaluate(mod, [X, np.array(True)])
    assert a.values[named(mod.main, "a")] is not b.values[named(mod.main, "a")]


@pytest.mark.parametrize(
    "inputs, message",
    [
        ([X], r"@main takes 2 input\(s\) \(%x: f32\[n, 3\], %c: bool\[\]\), got 1"),
        ([X, np.array(True), X], r"takes 2 input\(s\)"),
        (
            [X.astype(np.float64), np.array(True)],
            r"input 0 \(%x\) of @main expects f32\[n, 3\], got float64 array of shape \(2, 3\)",
        ),
        (
            [X[:, :2], np.array(True)],
            r"input 0 \(%x\) of @main expects f32\[n, 3\], got float32 array of shape \(2, 2\)",
        ),
        (
            [X, np.array([True, False])],
            r"input 1 \(%c\) of @main expects bool\[\], got bool array of shape \(2,\)",
        ),
        ([X.tolist(), np.array(True)], r"input 0 \(%x\) must be a numpy array, got list"),
    ],
)
def test_inputs_are_checked(mod, inputs, message):
    with pytest.raises(InterpretError, match=message):
        run(mod, *inputs)


def test_inputs_count_message_mentions_weights():
    text = """
    def @main(%x: f32[2], %w: f32[2]) -> f32[2] attrs {num_input = 1} {
      %y: f32[2] = add(%x, %w)
      return %y
    }
    """
    with pytest.raises(
        InterpretError, match="its first 1 are runtime inputs and the rest are weights"
    ):
        run(parse(text), np.zeros(2, np.float32))


def test_a_symbol_must_have_one_value_across_inputs():
    text = """
    def @main(%x: f32[n, 4], %y: f32[n, 4]) -> f32[n, 4] {
      %s: f32[n, 4] = add(%x, %y)
      return %s
    }
    """
    m = parse(text)
    a, b = np.zeros((2, 4), np.float32), np.zeros((3, 4), np.float32)
    with pytest.raises(
        InterpretError,
        match=r"input 1 \(%y\) of @main expects f32\[n, 4\], got float32 array of shape "
        r"\(3, 4\) \(where n = 2\)",
    ):
        run(m, a, b)
    assert run(m, b, b)[0].shape == (3, 4)


def test_expression_dims_are_checked_against_symbols_bound_by_later_inputs():
    text = """
    def @main(%z: f32[2*n + 1], %x: f32[n]) -> f32[n] {
      return %x
    }
    """
    m = parse(text)
    assert run(m, np.zeros(7, np.float32), np.zeros(3, np.float32))[0].shape == (3,)
    with pytest.raises(
        InterpretError,
        match=r"input 0 \(%z\) of @main expects f32\[2\*n \+ 1\], got float32 array of shape "
        r"\(4,\) \(where n = 3\)",
    ):
        run(m, np.zeros(4, np.float32), np.zeros(3, np.float32))


def test_torch_tensors_and_numpy_scalars_are_accepted():
    x = Var("x", TensorType((), "float32"))
    fn = Function.from_output([x], call("relu", x))
    assert run(fn, np.float32(-2.0))[0] == 0
    assert run(fn, torch.tensor(3.0))[0] == 3


def test_an_error_inside_an_op_names_the_binding_and_its_provenance():
    a, b = Var("a", TensorType((2,), "int32")), Var("b", TensorType((2,), "int32"))
    prov = Provenance(module_path="layer.div", source_op="aten.div.Tensor", location="model.py:7")
    q = call("divide", a, b, name="q", prov=prov)
    fn = Function.from_output([a, b], call("neg", q))
    with pytest.raises(InterpretError) as e:
        run(fn, np.ones(2, np.int32), np.array([1, 0], np.int32))
    assert str(e.value) == (
        "while executing %q = divide(i32[2], i32[2]) -> i32[2] from layer.div "
        "(aten.div.Tensor, model.py:7): ZeroDivisionError: integer division by zero"
    )
    assert e.value.node is q and isinstance(e.value.__cause__, ZeroDivisionError)


def test_check_types_reports_values_that_disagree_with_their_annotation():
    x = Var("x", TensorType((2,), "float32"))
    bad = Call("relu", [x], ty=TensorType((3,), "float32"), name="bad")
    ev = evaluate(Function([x], [bad], bad), [np.zeros(2, np.float32)], check_types=True)
    assert [str(m) for m in ev.mismatches] == ["%bad: annotated f32[3], computed float32[2]"]
    assert evaluate(Function([x], [bad], bad), [np.zeros(2, np.float32)]).mismatches == []


def test_constants_and_parameters_as_outputs():
    x = Var("x", TensorType((2,), "float32"))
    w = Constant(np.array([1, 2], np.int64), name="w")
    value = np.zeros(2, np.float32)
    assert run(Function([x], [], x), value)[0] is value
    assert run(Function([x], [], w), np.zeros(2, np.float32))[0] is w.data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_generated_modules_run_the_same_after_a_text_round_trip_and_from_the_cache(gen):
    rng = np.random.default_rng(0)
    inputs = gen.inputs(rng)
    with np.errstate(all="ignore"):
        expected = run(gen.module, *inputs)
        back = parse(print_module(gen.module), params=gen.params)
        assert_same(run(back, *inputs), expected)
        cache = ValueCache()
        evaluate(gen.module, inputs, cache=cache)
        computed = cache.misses
        again = evaluate(gen.module, inputs, cache=cache)
    assert cache.misses == computed and cache.hits == len(gen.module.main.bindings)
    assert_same(again.outputs, expected)


def assert_same(got, want):
    """Equal values (NaN equal to NaN), dtypes and tuple structure."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    else:
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


def test_a_numpy_scalar_result_is_the_0d_array_its_type_says():
    """np.take with a 0-d index returns a numpy scalar: kept as a 0-d array, it matches its
    annotation (no false shape mismatch), and a real mismatch says what was computed."""
    from compiler.interpret import TypeMismatch, evaluate

    m = parse(
        """
def @main(%x: i64[3]) -> i64[] {
  %t: i64[] = take(%x, const(i64[], 1), axis=0)
  return %t
}
"""
    )
    ev = evaluate(m, [np.array([4, 5, 6])], check_types=True)
    assert ev.mismatches == []
    (out,) = run(m, np.array([4, 5, 6]))
    assert isinstance(out, np.ndarray) and out.shape == () and out == 5
    node = m["main"].output
    pair = (np.zeros((2, 3), np.float32), np.zeros(1, np.int64))
    text = str(TypeMismatch.of(node, pair))
    assert "computed (float32 array of shape (2, 3), int64 array of shape (1,))" in text
    assert str(TypeMismatch.of(node, np.zeros(2, np.float32))).endswith("computed float32[2]")
