"""lazy-get-input: its Before/Expected cases (more in test_lazy_params.py)."""

from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

LAZY_GET_INPUT = [
    C(
        "lazy-get-input",
        "weights after num_input are fetched by get_item at their first use",
        """
def @main(%x: f32[3], %w: f32[3], %v: f32[3]) -> f32[3] attrs {num_input = 1} {
  %a: f32[3] = add(%x, %w)
  %e: f32[3] = exp(%a)
  %y: f32[3] = multiply(%e, %v)
  return %y
}""",
        """
def @main(%x: f32[3]) -> f32[3] attrs {num_input = 1} {
  %w: f32[3] = get_item(index=0, type="f32[3]")
  %a: f32[3] = add(%x, %w)
  %e: f32[3] = exp(%a)
  %v: f32[3] = get_item(index=1, type="f32[3]")
  %y: f32[3] = multiply(%e, %v)
  return %y
}""",
    ),
    K(
        "lazy-get-input",
        "a function without num_input",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] {
  %y: f32[3] = add(%x, %w)
  return %y
}""",
    ),
]

CASES = LAZY_GET_INPUT
test_rule, test_guard = case_tests(CASES)
