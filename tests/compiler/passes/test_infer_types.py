"""infer-types: its Before/Expected cases and tests."""

from compiler import passes
from compiler.ir import assert_structural_equal, parse
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import before_after, case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

INFER_TYPES = [
    C(
        "infer-types",
        "an If of unknown rank whose branches agree gets their type",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[*] {
  %o: f32[*] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[2, 3] = relu(%x)
    yield %b
  }
  return %o
}""",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[2, 3] {
  %o: f32[2, 3] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[2, 3] = relu(%x)
    yield %b
  }
  return %o
}""",
    ),
    C(
        "infer-types",
        "a call reading a value whose type became known is re-inferred",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[*] {
  %o: f32[*] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[2, 3] = relu(%x)
    yield %b
  }
  %y: f32[*] = sigmoid(%o)
  return %y
}""",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[2, 3] {
  %o: f32[2, 3] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[2, 3] = relu(%x)
    yield %b
  }
  %y: f32[2, 3] = sigmoid(%o)
  return %y
}""",
    ),
    C(
        "infer-types",
        "a function call takes the static type its callee returns",
        """
def @main(%x: f32[2, 3]) -> f32[?, ?] {
  %y: f32[?, ?] = call @f(%x)
  return %y
}
def @f(%a: f32[2, 3]) -> f32[2, 3] {
  %b: f32[2, 3] = exp(%a)
  return %b
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = call @f(%x)
  return %y
}

def @f(%a: f32[2, 3]) -> f32[2, 3] {
  %b: f32[2, 3] = exp(%a)
  return %b
}""",
    ),
    K(
        "infer-types",
        "a call of a function whose return type is symbolic",
        """
def @main(%x: f32[2, 3]) -> f32[?, 3] {
  %y: f32[?, 3] = call @f(%x)
  return %y
}
def @f(%a: f32[n, 3]) -> f32[n, 3] {
  %b: f32[n, 3] = exp(%a)
  return %b
}""",
    ),
    K(
        "infer-types",
        "an If whose branches disagree",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[?, ?] {
  %o: f32[?, ?] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[3, 2] = reshape(%x, shape=[3, 2])
    yield %b
  }
  return %o
}""",
    ),
]

def test_infer_types_fixes_a_wrong_annotation():
    before, after = before_after(
        "infer-types",
        """
def @main(%x: f32[n, 3]) -> f32[n, 3] {
  %y: f32[n, 4] = relu(%x)
  %z: f32[n, 3] = exp(%y)
  return %z
}""",
    )
    expected = parse(
        """
def @main(%x: f32[n, 3]) -> f32[n, 3] {
  %y: f32[n, 3] = relu(%x)
  %z: f32[n, 3] = exp(%y)
  return %z
}"""
    )
    assert_structural_equal(after, expected)

def test_infer_types_keeps_a_correct_module_as_the_same_object():
    module = parse("def @main(%x: f32[2]) -> f32[2] {\n  %y: f32[2] = relu(%x)\n  return %y\n}")
    assert passes.run(module, "infer-types").module is module

CASES = INFER_TYPES
test_rule, test_guard = case_tests(CASES)
