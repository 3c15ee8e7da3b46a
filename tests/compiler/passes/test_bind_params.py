"""bind-params: parameters become named constants with the given values."""

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import Constant, assert_structural_equal, parse
from compiler.passes import PipelineError
from compiler.passes.bind_params import BindParams, bind_params
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests

BEFORE = """
def @main(%x: f32[2, 3], %w: f32[3, 2], %b: f32[2]) -> f32[3, 2] attrs {num_input = 1} {
  %wt: f32[2, 3] = permute_dims(%w, axes=[1, 0])
  %y: f32[2, 3] = multiply(%x, %wt)
  %z: f32[3, 2] = permute_dims(%y, axes=[1, 0])
  %out: f32[3, 2] = add(%z, %b)
  return %out
}
"""

W = np.arange(6, dtype=np.float32).reshape(3, 2)
B = np.array([0.5, -1.0], dtype=np.float32)


def test_bind_weights_gives_named_constants():
    expected = """
    weights {
      $w: f32[3, 2] = [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
      $b: f32[2] = [0.5, -1.0]
    }
    def @main(%x: f32[2, 3]) -> f32[3, 2] attrs {num_input = 1} {
      %wt: f32[2, 3] = permute_dims($w, axes=[1, 0])
      %y: f32[2, 3] = multiply(%x, %wt)
      %z: f32[3, 2] = permute_dims(%y, axes=[1, 0])
      %out: f32[3, 2] = add(%z, $b)
      return %out
    }
    """
    before = parse(BEFORE)
    after = bind_params(before, {"w": W, "b": B})
    assert_structural_equal(after, parse(expected))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(run(after, x)[0], run(before, x, W, B)[0])


def test_binding_some_weights_keeps_the_others_and_shares_untouched_nodes():
    before = parse(BEFORE)
    after = bind_params(before, {"b": B})
    assert [p.name for p in after.main.params] == ["x", "w"] and after.main.num_input == 1
    assert all(
        a is b for a, b in zip(after.main.bindings[:3], before.main.bindings[:3], strict=True)
    )
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(run(after, x, W)[0], run(before, x, W, B)[0])


def test_binding_an_input_by_name_lowers_num_input():
    after = bind_params(parse(BEFORE), {"x": np.ones((2, 3), np.float32)})
    assert [p.name for p in after.main.params] == ["w", "b"] and after.main.num_input == 0


def test_recorded_with_the_names_it_bound_and_then_folded():
    result = passes.run(parse(BEFORE), [BindParams({"w": W}), "fold-constant"])
    assert result.ok
    step = result.snapshots[0]
    assert step.spec == "bind-params{names=[w]}" and step.options["names"] == ("w",)
    assert "$w.permute_dims" in str(result.module)  # fold-constant could work on it


def test_values_are_frozen_when_the_pass_is_built():
    w = W.copy()
    p = BindParams({"w": w})
    w[:] = 100.0
    after = p(parse(BEFORE))
    np.testing.assert_array_equal(after.constants()["w"].data, W)
    ((name, const),) = p.params
    assert name == "w" and isinstance(const, Constant)
    # a read-only copy: neither the caller's array nor anyone holding the pass can change it
    assert not np.shares_memory(const.data, w) and not const.data.flags.writeable
    with pytest.raises(ValueError):
        const.data[0, 0] = 1.0
    # hashable (the pass manager keys passes by value), and usable as a key
    assert {p: "bound"}[p] == "bound" and p in {p}


@pytest.mark.parametrize(
    "values, message",
    [
        ({"v": W}, "@main has no parameter(s) v (parameters: x, w, b)"),
        ({"w": W.T}, "cannot bind %w: it is f32[3, 2], the value is f32[2, 3]"),
        ({"w": W.astype(np.float64)}, "cannot bind %w: it is f32[3, 2], the value is f64[3, 2]"),
    ],
)
def test_bad_values_are_recorded_failures_that_say_why(values, message):
    result = passes.run(parse(BEFORE), BindParams(values))
    assert not result.ok and message in str(result.failure.error)


def test_a_spec_string_cannot_carry_values():
    result = passes.run(parse(BEFORE), "bind-params")
    assert "bind-params needs the values to bind" in str(result.failure.error)
    with pytest.raises(PipelineError, match="has no option 'names'"):
        passes.build_pipeline("bind-params{names=[w]}")

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

BIND_PARAMS = [
    C(
        BindParams({"w": np.array([1.0, 2.0, 3.0], dtype=np.float32)}),
        "a parameter becomes a named constant; num_input counts the inputs left",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 2} {
  %y: f32[3] = add(%x, %w)
  return %y
}""",
        """
weights {
  $w: f32[3] = [1.0, 2.0, 3.0]
}

def @main(%x: f32[3]) -> f32[3] attrs {num_input = 1} {
  %y: f32[3] = add(%x, $w)
  return %y
}""",
    ),
]

CASES = BIND_PARAMS
test_rule, test_guard = case_tests(CASES)
