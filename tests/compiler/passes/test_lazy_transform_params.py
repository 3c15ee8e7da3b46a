"""lazy-transform-params: its Before/Expected cases (more tests in test_lazy_params.py, with
the other lazy passes and the get_item / set_item ops)."""

from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

LAZY_TRANSFORM = [
    C(
        "lazy-transform-params",
        "weights fetched by get_item before first use, results handed to set_item",
        """
def @main_transform_params(%w1: f32[3, 2], %w2: f32[3]) -> (f32[2, 3], f32[3]) {
  %t: f32[2, 3] = permute_dims(%w1, axes=[1, 0])
  %e: f32[3] = exp(%w2)
  %o: (f32[2, 3], f32[3]) = (%t, %e)
  return %o
}""",
        """
def @main_transform_params() -> (f32[2, 3], f32[3]) {
  %w1: f32[3, 2] = get_item(index=0, type="f32[3, 2]")
  %t: f32[2, 3] = permute_dims(%w1, axes=[1, 0])
  %set_item: f32[2, 3] = set_item(%t, index=0)
  %w2: f32[3] = get_item(index=1, type="f32[3]")
  %e: f32[3] = exp(%w2)
  %set_item_1: f32[3] = set_item(%e, index=1)
  %o: (f32[2, 3], f32[3]) = (%set_item, %set_item_1)
  return %o
}""",
    ),
    C(
        "lazy-transform-params",
        "a returned tuple made by a call is set item by item",
        """
def @main_transform_params(%w: f32[3]) -> (f32[3], f32[3]) {
  %o: (f32[3], f32[3]) = call @pair(%w)
  return %o
}
def @pair(%a: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%a)
  %t: (f32[3], f32[3]) = (%a, %e)
  return %t
}""",
        """
def @main_transform_params() -> (f32[3], f32[3]) {
  %w: f32[3] = get_item(index=0, type="f32[3]")
  %o: (f32[3], f32[3]) = call @pair(%w)
  %item: f32[3] = %o[0]
  %set_item: f32[3] = set_item(%item, index=0)
  %item_1: f32[3] = %o[1]
  %set_item_1: f32[3] = set_item(%item_1, index=1)
  %o_1: (f32[3], f32[3]) = (%set_item, %set_item_1)
  return %o_1
}

def @pair(%a: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%a)
  %t: (f32[3], f32[3]) = (%a, %e)
  return %t
}""",
    ),
    K(
        "lazy-transform-params",
        "a function that is not a weight transform",
        """
def @main(%w: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%w)
  return %e
}""",
    ),
]

CASES = LAZY_TRANSFORM
test_rule, test_guard = case_tests(CASES)
