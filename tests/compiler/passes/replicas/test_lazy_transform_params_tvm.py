"""replica-lazy-transform-params: its Before/Expected cases."""

from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

REPLICA_LAZY = [
    C(
        "replica-lazy-transform-params",
        "a transform returning an inline tuple is made lazy (as lazy-transform-params)",
        """
def @main_transform_params(%w: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%w)
  %o: (f32[3], f32[3]) = (%w, %e)
  return %o
}""",
        """
def @main_transform_params() -> (f32[3], f32[3]) {
  %w: f32[3] = get_item(index=0, type="f32[3]")
  %set_item: f32[3] = set_item(%w, index=0)
  %e: f32[3] = exp(%w)
  %set_item_1: f32[3] = set_item(%e, index=1)
  %o: (f32[3], f32[3]) = (%set_item, %set_item_1)
  return %o
}""",
    ),
]

CASES = REPLICA_LAZY
test_rule, test_guard = case_tests(CASES)
