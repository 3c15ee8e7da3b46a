"""compiler.passes.infra.testing.verify_pass and RulePass: a user's Before / Expected test of a pass
of their own, each way it can fail saying which check broke."""

import numpy as np
import pytest

from compiler.ir import Call, parse
from compiler.passes import Pass, Rule, RulePass, op, rule_tables, verify_pass
from compiler.passes.infra.testing import default_inputs

GELU = """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %g: f32[2, 3] = gelu(%x)
  return %g
}
"""
RELU = GELU.replace("gelu(", "relu(")


class FastGelu(RulePass):
    name = "test-fast-gelu"
    rules = (Rule("gelu-to-relu", op("gelu"), lambda n, ctx: Call("relu", n.args), "gelu -> relu"),)


class DoubleNegation(RulePass):
    name = "test-double-negation"
    rules = (
        Rule(
            "neg-neg",
            op("neg", where=lambda n, ctx: getattr(n.args[0], "op", None) == "neg"),
            lambda n, ctx: n.args[0].args[0],
            "neg(neg(x)) -> x",
        ),
    )


NEG_NEG = """
def @main(%x: f32[4], %y: f32[4]) -> (f32[4], f32[4]) {
  %a: f32[4] = neg(%x)
  %b: f32[4] = neg(%a)
  %c: f32[4] = add(%b, %y)
  %t: (f32[4], f32[4]) = (%c, %a)
  return %t
}
"""
NEG_NEG_EXPECTED = """
def @main(%x: f32[4], %y: f32[4]) -> (f32[4], f32[4]) {
  %a: f32[4] = neg(%x)
  %c: f32[4] = add(%x, %y)
  %t: (f32[4], f32[4]) = (%c, %a)
  return %t
}
"""


def test_a_right_pass_passes_structure_roundtrip_and_numbers_with_several_outputs():
    after = verify_pass(NEG_NEG, NEG_NEG_EXPECTED, DoubleNegation())
    assert "neg(%x)" in str(after) and str(after).count("neg(") == 1
    assert [r.name for r in rule_tables()["test-double-negation"]] == ["neg-neg"]


def test_a_class_or_a_list_works_as_the_pass():
    verify_pass(NEG_NEG, NEG_NEG_EXPECTED, DoubleNegation)
    verify_pass(NEG_NEG, NEG_NEG_EXPECTED, [DoubleNegation(), "dead-code-elimination"])


def test_the_wrong_structure_shows_the_diff():
    with pytest.raises(AssertionError, match=r"(?s)modules differ.*-.*relu.*\+.*gelu"):
        verify_pass(GELU, RELU, "dead-code-elimination")


def test_a_pass_that_changes_the_numbers_is_caught_even_when_expected_agrees():
    with pytest.raises(AssertionError, match=r"output 0: the pass changed the numbers"):
        verify_pass(GELU, RELU, FastGelu())
    verify_pass(GELU, RELU, FastGelu(), numbers=False)  # structure alone is what it says


def test_numbers_judge_nan_and_inf_positions():
    log = """
def @main(%x: f32[3]) -> f32[3] {
  %l: f32[3] = log(%x)
  return %l
}
"""
    sqrt = log.replace("log(", "sqrt(")

    class LogToSqrt(RulePass):
        name = "test-log-to-sqrt"
        rules = (Rule("log-sqrt", op("log"), lambda n, ctx: Call("sqrt", n.args)),)

    # log(-1) is NaN and sqrt(-1) is NaN; log(0) is -inf, sqrt(0) is 0: the inf differs
    with pytest.raises(AssertionError, match="infinities differ"):
        verify_pass(log, sqrt, LogToSqrt(), inputs=[np.array([-1.0, 0.0, 1.0], np.float32)])

    # NaN where the other side has a number: log(-1) against abs(-1)
    class LogToAbs(RulePass):
        name = "test-log-to-abs"
        rules = (Rule("log-abs", op("log"), lambda n, ctx: Call("abs", n.args)),)

    with pytest.raises(AssertionError, match="NaN at 1 elements"):
        verify_pass(log, log.replace("log(", "abs("), LogToAbs(), inputs=[np.float32([-1, 1, 1])])
    # same NaN positions are fine, and no false alarm on the equal element at x = 1
    identity = log
    verify_pass(log, identity, "dead-code-elimination", inputs=[np.array([-1.0, 0, 2], np.float32)])


def test_integer_outputs_must_be_equal():
    text = """
def @main(%x: i64[4]) -> i64[4] {
  %a: i64[4] = add(%x, %x)
  return %a
}
"""

    class AddToMul(RulePass):
        name = "test-add-to-mul"
        rules = (Rule("add-mul", op("add"), lambda n, ctx: Call("multiply", n.args)),)

    # x + x == x * x only at 0 and 2: 2 of 4 elements differ on 0, 1, 2, 3
    with pytest.raises(AssertionError, match="output 0: 2 of 4 elements differ"):
        verify_pass(text, text.replace("add(", "multiply("), AddToMul())


def test_a_failing_pass_names_itself_and_a_bad_text_says_which():
    class Broken(Pass):
        name = "test-broken"

        def transform(self, module, ctx):
            raise ValueError("nothing works")

    with pytest.raises(AssertionError, match="test-broken failed: nothing works"):
        verify_pass(GELU, GELU, Broken())
    with pytest.raises(AssertionError, match="the expected module does not parse"):
        verify_pass(GELU, "def @main(", "dead-code-elimination")
    with pytest.raises(AssertionError, match="the before module does not parse"):
        verify_pass("nonsense", GELU, "dead-code-elimination")


def test_symbolic_inputs_ask_for_inputs():
    text = """
def @main(%x: f32[n, 3]) -> f32[n, 3] {
  %g: f32[n, 3] = gelu(%x)
  return %g
}
"""
    with pytest.raises(AssertionError, match=r"give verify_pass\(\.\.\., inputs="):
        default_inputs(parse(text))
    verify_pass(text, text, "dead-code-elimination", inputs=[np.ones((5, 3), np.float32)])


def test_rule_pass_refuses_what_is_not_a_rule():
    class Bad(RulePass):
        name = "test-bad-rules"
        rules = ("gelu -> relu",)

    with pytest.raises(AssertionError, match="rules holds Rule objects, not str"):
        verify_pass(GELU, GELU, Bad())
