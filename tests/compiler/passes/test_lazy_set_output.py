"""lazy-set-output: its Before/Expected cases (more in test_lazy_params.py)."""

from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

LAZY_SET_OUTPUT = [
    C(
        "lazy-set-output",
        "each field of the returned tuple is set as soon as it is computed",
        """
def @main(%x: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%x)
  %r: f32[3] = relu(%e)
  %o: (f32[3], f32[3]) = (%r, %e)
  return %o
}""",
        """
def @main(%x: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%x)
  %set_item: f32[3] = set_item(%e, index=1)
  %r: f32[3] = relu(%e)
  %set_item_1: f32[3] = set_item(%r, index=0)
  %o: (f32[3], f32[3]) = (%set_item_1, %set_item)
  return %o
}""",
    ),
    C(
        "lazy-set-output",
        "a single returned tensor is result 0",
        """
def @main(%x: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%x)
  return %e
}""",
        """
def @main(%x: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%x)
  %set_item: f32[3] = set_item(%e, index=0)
  return %set_item
}""",
    ),
    K(
        "lazy-set-output",
        "a function whose results are set already",
        """
def @main(%x: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%x)
  %s: f32[3] = set_item(%e, index=0)
  return %s
}""",
    ),
]

CASES = LAZY_SET_OUTPUT
test_rule, test_guard = case_tests(CASES)
