"""replica-dynamic-to-static-squeeze: its Before/Expected cases."""

from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

REPLICA_SQUEEZE = [
    C(
        "replica-dynamic-to-static-squeeze",
        "a squeeze inlined out of a folded If gets TVM's wrong shape",
        """
def @main(%x: f32[3, 2]) -> f32[*] {
  %r: f32[?, ?, ?] = reshape(%x, const(i64[3], [3, 1, 2]))
  %s: i64[3] = shape_of(%r)
  %d: i64[1] = take(%s, const(i64[1], [1]), axis=0)
  %c: bool[1] = equal(%d, const(i64[1], [1]))
  %o: f32[*] = if %c {
    %q: f32[?, ?] = squeeze(%r, axes=[1])
    yield %q
  } else {
    %i: f32[?, ?, ?] = identity(%r)
    yield %i
  }
  return %o
}""",
        """
def @main(%x: f32[3, 2]) -> f32[3, 3] {
  %r: f32[3, 1, 2] = reshape(%x, allowzero=true, shape=[3, 1, 2])
  %q: f32[3, 3] = squeeze(%r, axes=[1])
  return %q
}""",
        verify_each=False,  # the wrong annotation is the bug the replica copies
    ),
    K(
        "replica-dynamic-to-static-squeeze",
        "an If whose condition is not a constant",
        """
def @main(%x: f32[3, 1, 2], %c: bool[]) -> f32[*] {
  %o: f32[*] = if %c {
    %q: f32[3, 2] = squeeze(%x, axes=[1])
    yield %q
  } else {
    %i: f32[3, 1, 2] = identity(%x)
    yield %i
  }
  return %o
}""",
    ),
]

CASES = REPLICA_SQUEEZE
test_rule, test_guard = case_tests(CASES)
