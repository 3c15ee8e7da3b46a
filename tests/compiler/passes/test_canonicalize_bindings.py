"""canonicalize-bindings: its Before/Expected cases (one a rule, a KeepCase a guard) and tests."""

from compiler import passes
from compiler.ir import assert_structural_equal, parse
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import before_after, case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

CANONICALIZE = [
    C(
        "canonicalize-bindings,dead-code-elimination",  # the tuple stays bound until dce
        "(a, b)[0] -> a",
        """
def @main(%x: f32[2], %w: f32[2]) -> f32[2] {
  %t: (f32[2], f32[2]) = (%x, %w)
  %a: f32[2] = %t[0]
  %y: f32[2] = exp(%a)
  return %y
}""",
        """
def @main(%x: f32[2], %w: f32[2]) -> f32[2] {
  %y: f32[2] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings,dead-code-elimination",  # the tuple stays bound until dce
        "(t[0], t[1]) of a 2-tuple t -> t",
        """
def @main(%x: f32[2]) -> (f32[1], f32[1]) {
  %s: (f32[1], f32[1]) = split(%x, indices_or_sections=2, axis=0)
  %a: f32[1] = %s[0]
  %b: f32[1] = %s[1]
  %t: (f32[1], f32[1]) = (%a, %b)
  return %t
}""",
        """
def @main(%x: f32[2]) -> (f32[1], f32[1]) {
  %s: (f32[1], f32[1]) = split(%x, indices_or_sections=2, axis=0)
  return %s
}""",
    ),
    C(
        "canonicalize-bindings",
        "identity(x) -> x",
        """
def @main(%x: f32[2]) -> f32[2] {
  %i: f32[2] = identity(%x)
  %y: f32[2] = exp(%i)
  return %y
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings",
        "cast to the dtype it has -> x",
        """
def @main(%x: f32[2]) -> f32[2] {
  %c: f32[2] = cast(%x, dtype=f32)
  %y: f32[2] = exp(%c)
  return %y
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings",
        "reshape to its own static shape -> x",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %r: f32[2, 3] = reshape(%x, shape=[2, 3])
  %y: f32[2, 3] = exp(%r)
  return %y
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings",
        "broadcast_to its own static shape -> x",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %r: f32[2, 3] = broadcast_to(%x, shape=[2, 3])
  %y: f32[2, 3] = exp(%r)
  return %y
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings",
        "a permutation that moves nothing -> x",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %p: f32[2, 3] = permute_dims(%x, axes=[0, 1])
  %y: f32[2, 3] = exp(%p)
  return %y
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = exp(%x)
  return %y
}""",
    ),
]

def test_canonicalize_bindings_keeps_what_is_not_trivial():
    """Near misses of each rule: a reshape to another shape, a real permutation, a cast to
    another dtype, a reshape to a symbolic shape, tuple items out of order."""
    module = parse(
        """
def @main(%x: f32[2, 3], %v: f32[n]) -> (f32[3, 2], f32[3, 2], f16[2, 3], f32[n]) {
  %r: f32[3, 2] = reshape(%x, shape=[3, 2])
  %p: f32[3, 2] = permute_dims(%x, axes=[1, 0])
  %c: f16[2, 3] = cast(%x, dtype=f16)
  %s: f32[n] = reshape(%v, shape=[n])
  %o: (f32[3, 2], f32[3, 2], f16[2, 3], f32[n]) = (%r, %p, %c, %s)
  return %o
}"""
    )
    assert passes.run(module, "canonicalize-bindings").module is module
    swapped = parse(
        """
def @main(%x: f32[2]) -> (f32[1], f32[1]) {
  %q: (f32[1], f32[1]) = split(%x, indices_or_sections=2, axis=0)
  %b: f32[1] = %q[1]
  %a: f32[1] = %q[0]
  %t: (f32[1], f32[1]) = (%b, %a)
  return %t
}"""
    )
    assert passes.run(swapped, "canonicalize-bindings").module is swapped

def test_canonicalize_bindings_forwards_trivial_bindings():
    _, after = before_after(
        "canonicalize-bindings",
        """
def @main(%x: f32[2, 3], %y: f32[3]) -> (f32[2, 3], f32[3]) {
  %i: f32[2, 3] = identity(%x)
  %c: f32[2, 3] = cast(%i, dtype=f32)
  %r: f32[2, 3] = reshape(%c, shape=[2, 3])
  %p: f32[2, 3] = permute_dims(%r, axes=[0, 1])
  %t: (f32[2, 3], f32[3]) = (%p, %y)
  %a: f32[2, 3] = %t[0]
  %b: f32[3] = %t[1]
  %u: (f32[2, 3], f32[3]) = (%a, %b)
  %e: f32[2, 3] = exp(%a)
  %out: (f32[2, 3], f32[3]) = (%e, %b)
  return %out
}""",
    )
    expected = parse(
        """
def @main(%x: f32[2, 3], %y: f32[3]) -> (f32[2, 3], f32[3]) {
  %t: (f32[2, 3], f32[3]) = (%x, %y)
  %u: (f32[2, 3], f32[3]) = (%x, %y)
  %e: f32[2, 3] = exp(%x)
  %out: (f32[2, 3], f32[3]) = (%e, %y)
  return %out
}"""
    )
    assert_structural_equal(after, expected)

CASES = CANONICALIZE
test_rule, test_guard = case_tests(CASES)
