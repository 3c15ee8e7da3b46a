"""dead-code-elimination: its Before/Expected cases and tests."""

from compiler import passes
from compiler.ir import assert_structural_equal, parse
from tests.compiler.passes.helpers import OPAQUE_CUMSUM, before_after, case_tests
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

DCE = [
    C(
        "dead-code-elimination",
        "a binding nothing reads is dropped",
        """
def @main(%x: f32[2]) -> f32[2] {
  %a: f32[2] = exp(%x)
  %y: f32[2] = relu(%x)
  return %y
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = relu(%x)
  return %y
}""",
    ),
    C(
        "dead-code-elimination",
        "a private function nobody calls is dropped",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = relu(%x)
  return %y
}
def @unused(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = exp(%a)
  return %b
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = relu(%x)
  return %y
}""",
    ),
]

def test_dce_keeps_a_private_function_that_is_called_and_every_public_one():
    module = parse(
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = call @f(%x)
  return %y
}
def @f(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = call @g(%a)
  return %b
}
def @g(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = exp(%a)
  return %b
}
def @other(%a: f32[2]) -> f32[2] {
  %b: f32[2] = exp(%a)
  return %b
}"""
    )
    after = passes.run(module, "dead-code-elimination").module
    assert list(after.functions) == ["main", "f", "g", "other"]

# an opaque op (no converter: run by torch / onnxruntime) is a barrier to every pass
OPAQUE = [
    C(
        "dead-code-elimination",
        "an unused opaque op its frontend found pure is dropped",
        f"""
def @main(%x: f32[4, 8]) -> f32[4, 8] {{
  %e: f32[4, 8] = exp(%x)
  %c: f32[4, 8] = {OPAQUE_CUMSUM.replace("PURE", "true")}
  return %e
}}""",
        """
def @main(%x: f32[4, 8]) -> f32[4, 8] {
  %e: f32[4, 8] = exp(%x)
  return %e
}""",
    ),
    K(
        "dead-code-elimination",
        "an unused opaque op not known to be pure (it may have effects)",
        f"""
def @main(%x: f32[4, 8]) -> f32[4, 8] {{
  %e: f32[4, 8] = exp(%x)
  %c: f32[4, 8] = {OPAQUE_CUMSUM.replace("PURE", "false")}
  return %e
}}""",
    ),
]

def test_dead_code_elimination_removes_unused_bindings_and_private_functions():
    _, after = before_after(
        "dead-code-elimination",
        """
def @unused(%a: f32[2]) -> f32[2] attrs {private = true} {
  %r: f32[2] = relu(%a)
  return %r
}

def @used(%a: f32[2]) -> f32[2] attrs {private = true} {
  %r: f32[2] = exp(%a)
  return %r
}

def @main(%x: f32[2], %c: bool[]) -> f32[2] {
  %d: f32[2] = neg(%x)
  %y: f32[2] = if %c {
    %dead: f32[2] = abs(%x)
    %k: f32[2] = call @used(%x)
    yield %k
  } else {
    yield %x
  }
  return %y
}""",
    )
    expected = parse(
        """
def @used(%a: f32[2]) -> f32[2] attrs {private = true} {
  %r: f32[2] = exp(%a)
  return %r
}

def @main(%x: f32[2], %c: bool[]) -> f32[2] {
  %y: f32[2] = if %c {
    %k: f32[2] = call @used(%x)
    yield %k
  } else {
    yield %x
  }
  return %y
}"""
    )
    assert_structural_equal(after, expected)

CASES = DCE + OPAQUE
test_rule, test_guard = case_tests(CASES)
