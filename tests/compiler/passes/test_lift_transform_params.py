"""lift-transform-params: Before/Expected pairs, and bug 4 (the signature changes)."""

import numpy as np
from hypothesis import HealthCheck, given, settings

from compiler import passes
from compiler.interpret import run
from compiler.ir import Module, Var, call, parse, verify
from compiler.passes.lift_transform_params import substitute
from tests.compiler.ir.ir_strategies import modules
from tests.compiler.passes import helpers
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import apply, case_tests

PASS = "lift-transform-params"


def lift(before: str | Module) -> Module:
    return apply(before, PASS)


def verify_pass(before: str, expected: str, provenance: bool = False) -> Module:
    """The pass on ``before`` gives ``expected``; the result round-trips."""
    return helpers.verify_pass(before, expected, PASS, provenance=provenance)


def composed(module: Module, inputs: list, weights: list) -> tuple:
    """``main_transform_params`` on the weights, then ``main`` on inputs + its results."""
    transformed = run(module, *weights, function="main_transform_params")
    return run(module, *inputs, *transformed)


# bug 4: main(A, B), num_input = 1, C = A * (B + 1).
SEEDS_BEFORE = """
def @main(%A: f32[16, 16], %B: f32[16, 16]) -> f32[16, 16] attrs {num_input = 1} {
  %B1: f32[16, 16] = add(%B, const(f32[], 1.0))
  %C: f32[16, 16] = multiply(%A, %B1)
  return %C
}
"""

SEEDS_EXPECTED = """
def @main(%A: f32[16, 16], %B1: f32[16, 16]) -> f32[16, 16] attrs {num_input = 1} {
  %C: f32[16, 16] = multiply(%A, %B1)
  return %C
}

def @main_transform_params(%B: f32[16, 16]) -> (f32[16, 16],)
    attrs {num_input = 0, transform_params_of = "main"} {
  %B1: f32[16, 16] = add(%B, const(f32[], 1.0))
  %out: (f32[16, 16],) = (%B1,)
  return %out
}
"""


def test_seeds_item_4_main_takes_the_transformed_weights():
    before = parse(SEEDS_BEFORE)
    after = verify_pass(SEEDS_BEFORE, SEEDS_EXPECTED)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    want = run(before, a, b)[0]
    # Calling the new main the old way (original weight) gives wrong numbers: A * B, not
    # A * (B + 1), so the difference is |A| everywhere.
    wrong = run(after, a, b)[0]
    assert np.max(np.abs(wrong - want)) > 1.0
    np.testing.assert_allclose(np.abs(wrong - want), np.abs(a), rtol=1e-6)
    # The right call composes the two functions.
    np.testing.assert_allclose(composed(after, [a], [b])[0], want, rtol=1e-6)


def test_seeds_item_4_signature_and_shared_nodes():
    before = parse(SEEDS_BEFORE)
    after = lift(before)
    main, tp = after["main"], after["main_transform_params"]
    assert [p.name for p in before.main.params] == ["A", "B"]
    assert [p.name for p in main.params] == ["A", "B1"] and main.num_input == 1
    assert tp.attrs["transform_params_of"] == "main" and tp.num_input == 0
    # The lifted binding and the weight are the very same objects (the explorer matches them).
    assert tp.params[0] is before.main.params[1]
    assert tp.bindings[0] is before.main.bindings[0]
    assert main.params[0] is before.main.params[0]


PASSTHROUGH_BEFORE = """
def @main(%x: f32[4, 3], %w: f32[3, 4], %b: f32[3], %unused: f32[2]) -> f32[4, 3]
    attrs {num_input = 1} {
  %wt: f32[4, 3] = permute_dims(%w, axes=[1, 0])
  %two: f32[3] = add(const(f32[3], [1.0, 1.0, 1.0]), const(f32[], 1.0))
  %b2: f32[3] = multiply(%b, %two)
  %y: f32[4, 3] = multiply(%x, %wt)
  %z: f32[4, 3] = add(%y, %b)
  %out: f32[4, 3] = add(%z, %b2)
  return %out
}
"""

# %b is read by main directly: it is passed through. %two reads only constants: it is not
# lifted, but %b2 (lifted) reads it, so the transform binds it and main, which no longer
# reads it, drops it. %unused stays a parameter of the transform (callers pass every weight)
# but main no longer takes it.
PASSTHROUGH_EXPECTED = """
def @main(%x: f32[4, 3], %b: f32[3], %wt: f32[4, 3], %b2: f32[3]) -> f32[4, 3]
    attrs {num_input = 1} {
  %y: f32[4, 3] = multiply(%x, %wt)
  %z: f32[4, 3] = add(%y, %b)
  %out: f32[4, 3] = add(%z, %b2)
  return %out
}

def @main_transform_params(%w: f32[3, 4], %b: f32[3], %unused: f32[2])
    -> (f32[3], f32[4, 3], f32[3]) attrs {num_input = 0, transform_params_of = "main"} {
  %wt: f32[4, 3] = permute_dims(%w, axes=[1, 0])
  %two: f32[3] = add(const(f32[3], [1.0, 1.0, 1.0]), const(f32[], 1.0))
  %b2: f32[3] = multiply(%b, %two)
  %t: (f32[3], f32[4, 3], f32[3]) = (%b, %wt, %b2)
  return %t
}
"""


def test_passthrough_unused_weights_and_constant_only_bindings():
    verify_pass(PASSTHROUGH_BEFORE, PASSTHROUGH_EXPECTED)
    before = parse(PASSTHROUGH_BEFORE)
    after = lift(before)
    assert after.main.params[1] is before.main.params[2]  # %b passed through: same Var
    rng = np.random.default_rng(1)
    x, w, b, u = (rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (3, 4), (3,), (2,)])
    want = run(before, x, w, b, u)[0]
    np.testing.assert_allclose(composed(after, [x], [w, b, u])[0], want, rtol=1e-6)


def test_constant_only_binding_read_by_both_sides_is_bound_in_both():
    before = """
    def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {
      %two: f32[3] = add(const(f32[3], [1.0, 1.0, 1.0]), const(f32[], 1.0))
      %w2: f32[3] = multiply(%w, %two)
      %y: f32[3] = multiply(%x, %two)
      %out: f32[3] = add(%y, %w2)
      return %out
    }
    """
    expected = """
    def @main(%x: f32[3], %w2: f32[3]) -> f32[3] attrs {num_input = 1} {
      %two: f32[3] = add(const(f32[3], [1.0, 1.0, 1.0]), const(f32[], 1.0))
      %y: f32[3] = multiply(%x, %two)
      %out: f32[3] = add(%y, %w2)
      return %out
    }

    def @main_transform_params(%w: f32[3]) -> (f32[3],)
        attrs {num_input = 0, transform_params_of = "main"} {
      %two: f32[3] = add(const(f32[3], [1.0, 1.0, 1.0]), const(f32[], 1.0))
      %w2: f32[3] = multiply(%w, %two)
      %t: (f32[3],) = (%w2,)
      return %t
    }
    """
    after = verify_pass(before, expected)
    x, w = np.arange(3, dtype=np.float32), np.full(3, 5, np.float32)
    np.testing.assert_allclose(composed(after, [x], [w])[0], run(parse(before), x, w)[0])


def test_lifted_value_read_inside_an_if_branch():
    before = """
    def @main(%flag: bool[], %x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 2} {
      %w1: f32[3] = add(%w, const(f32[], 1.0))
      %out: f32[3] = if %flag {
        %a: f32[3] = multiply(%x, %w1)
        yield %a
      } else {
        yield %x
      }
      return %out
    }
    """
    expected = """
    def @main(%flag: bool[], %x: f32[3], %w1: f32[3]) -> f32[3] attrs {num_input = 2} {
      %out: f32[3] = if %flag {
        %a: f32[3] = multiply(%x, %w1)
        yield %a
      } else {
        yield %x
      }
      return %out
    }

    def @main_transform_params(%w: f32[3]) -> (f32[3],)
        attrs {num_input = 0, transform_params_of = "main"} {
      %w1: f32[3] = add(%w, const(f32[], 1.0))
      %t: (f32[3],) = (%w1,)
      return %t
    }
    """
    after = verify_pass(before, expected)
    x, w = np.arange(3, dtype=np.float32), np.full(3, 2, np.float32)
    for flag in (np.bool_(True), np.bool_(False)):
        want = run(parse(before), flag, x, w)[0]
        np.testing.assert_allclose(composed(after, [flag, x], [w])[0], want)


def test_new_parameters_carry_the_provenance_of_the_lifted_values():
    before = """
    def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {
      %w1: f32[3] = exp(%w)  loc(module="fc", op="aten.exp.default")
      %y: f32[3] = add(%x, %w1)  loc(module="fc", op="aten.add.Tensor")
      return %y
    }
    """
    after = lift(before)
    param = after.main.params[1]
    assert isinstance(param, Var) and param.name == "w1"
    assert param.prov.module_path == "fc" and param.prov.source_op == "aten.exp.default"
    assert param.prov.pass_name == "lift-transform-params"
    tp = after["main_transform_params"]
    assert tp.output.prov.pass_name == "lift-transform-params"
    assert tp.bindings[0].prov.pass_name is None  # moved, not rewritten: the same node


def test_nothing_to_lift_returns_the_same_module_and_running_twice_changes_nothing():
    no_weights = parse("def @main(%x: f32[3]) -> f32[3] { %y: f32[3] = exp(%x)\n return %y }")
    assert lift(no_weights) is no_weights
    direct = parse(
        "def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {\n"
        "  %y: f32[3] = add(%x, %w)\n  return %y\n}"
    )
    assert lift(direct) is direct  # weights used as they are: no transform function
    result = passes.run(parse(SEEDS_BEFORE), "lift-transform-params,lift-transform-params")
    assert [s.changed for s in result.snapshots] == [True, False]


def test_existing_transform_function_is_a_clear_failure():
    text = (
        SEEDS_BEFORE
        + """
    def @main_transform_params(%x: f32[2]) -> f32[2] { %y: f32[2] = exp(%x)\n return %y }
    """
    )
    result = passes.run(parse(text), "lift-transform-params")
    assert not result.ok
    assert "@main_transform_params already exists" in str(result.failure.error)


def flatten(value) -> list:
    """The arrays of a (nested) tuple of outputs, in order."""
    return [x for v in value for x in flatten(v)] if isinstance(value, tuple) else [value]


def with_weight_preprocessing(module: Module) -> Module:
    """``module`` whose main reads ``tanh(w)`` wherever it read a weight ``w``."""
    fn = module.main
    mapping = {id(w): call("tanh", w, name=f"{w.name}_t") for w in fn.params[fn.num_input :]}
    bindings = tuple(mapping.values()) + substitute(fn.bindings, mapping)
    output = mapping.get(id(fn.output), fn.output)
    return module.with_function("main", fn.replace(bindings=bindings, output=output))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=modules())
def test_composing_the_lifted_functions_preserves_results_of_random_modules(gen):
    module = with_weight_preprocessing(gen.module)
    verify(module)
    after = lift(module)
    k = module.main.num_input
    assert (after is module) == (k == len(module.main.params))
    inputs = gen.inputs(np.random.default_rng(0))
    want = run(module, *inputs)
    got = composed(after, inputs[:k], inputs[k:]) if after is not module else want
    for g, w in zip(flatten(got), flatten(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

LIFT = [
    C(
        "lift-transform-params",
        "weight-only bindings move to @main_transform_params",
        """
def @main(%x: f32[2, 3], %w: f32[3, 2]) -> f32[2, 3] attrs {num_input = 1} {
  %wt: f32[2, 3] = permute_dims(%w, axes=[1, 0])
  %we: f32[2, 3] = exp(%wt)
  %y: f32[2, 3] = multiply(%x, %we)
  return %y
}""",
        """
def @main(%x: f32[2, 3], %we: f32[2, 3]) -> f32[2, 3] attrs {num_input = 1} {
  %y: f32[2, 3] = multiply(%x, %we)
  return %y
}

def @main_transform_params(%w: f32[3, 2]) -> (f32[2, 3],) attrs {num_input = 0,
    transform_params_of = "main"} {
  %wt: f32[2, 3] = permute_dims(%w, axes=[1, 0])
  %we: f32[2, 3] = exp(%wt)
  %transformed: (f32[2, 3],) = (%we,)
  return %transformed
}""",
    ),
    C(
        "lift-transform-params",
        "a weight main reads directly is passed through",
        """
def @main(%x: f32[3], %w: f32[3], %v: f32[3]) -> f32[3] attrs {num_input = 1} {
  %e: f32[3] = exp(%w)
  %a: f32[3] = add(%x, %e)
  %y: f32[3] = multiply(%a, %v)
  return %y
}""",
        """
def @main(%x: f32[3], %v: f32[3], %e: f32[3]) -> f32[3] attrs {num_input = 1} {
  %a: f32[3] = add(%x, %e)
  %y: f32[3] = multiply(%a, %v)
  return %y
}

def @main_transform_params(%w: f32[3], %v: f32[3]) -> (f32[3], f32[3]) attrs {num_input = 0,
    transform_params_of = "main"} {
  %e: f32[3] = exp(%w)
  %transformed: (f32[3], f32[3]) = (%v, %e)
  return %transformed
}""",
    ),
    C(
        "lift-transform-params",
        "a constant-only binding main reads stays in main",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {
  %k: f32[3] = exp(const(f32[3], [0.0, 1.0, 2.0]))
  %e: f32[3] = exp(%w)
  %a: f32[3] = add(%x, %e)
  %y: f32[3] = add(%a, %k)
  return %y
}""",
        """
def @main(%x: f32[3], %e: f32[3]) -> f32[3] attrs {num_input = 1} {
  %k: f32[3] = exp(const(f32[3], [0.0, 1.0, 2.0]))
  %a: f32[3] = add(%x, %e)
  %y: f32[3] = add(%a, %k)
  return %y
}

def @main_transform_params(%w: f32[3]) -> (f32[3],) attrs {num_input = 0,
    transform_params_of = "main"} {
  %e: f32[3] = exp(%w)
  %transformed: (f32[3],) = (%e,)
  return %transformed
}""",
    ),
    C(
        "lift-transform-params",
        "a constant-only binding only lifted bindings read moves with them",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {
  %k: f32[3] = exp(const(f32[3], [0.0, 1.0, 2.0]))
  %e: f32[3] = add(%w, %k)
  %y: f32[3] = add(%x, %e)
  return %y
}""",
        """
def @main(%x: f32[3], %e: f32[3]) -> f32[3] attrs {num_input = 1} {
  %y: f32[3] = add(%x, %e)
  return %y
}

def @main_transform_params(%w: f32[3]) -> (f32[3],) attrs {num_input = 0,
    transform_params_of = "main"} {
  %k: f32[3] = exp(const(f32[3], [0.0, 1.0, 2.0]))
  %e: f32[3] = add(%w, %k)
  %transformed: (f32[3],) = (%e,)
  return %transformed
}""",
    ),
    K(
        "lift-transform-params",
        "a function without num_input",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%w)
  %y: f32[3] = add(%x, %e)
  return %y
}""",
    ),
    K(
        "lift-transform-params",
        "a function whose weights are only read with inputs",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {
  %y: f32[3] = add(%x, %w)
  return %y
}""",
    ),
    K(
        "lift-transform-params",
        "a private function",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] {
  %y: f32[3] = call @f(%x, %w)
  return %y
}
def @f(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1, private = true} {
  %e: f32[3] = exp(%w)
  %y: f32[3] = add(%x, %e)
  return %y
}""",
    ),
]

CASES = LIFT
test_rule, test_guard = case_tests(CASES)
