"""replica-relay-onnx-if (docs/bugs.md bug 3 as upstream tells it): Relay's ONNX If converter
forced branches of different rank to one with a right-aligned broadcast; once dynamic-to-static
makes the shapes static, the rank-4 squeeze broadcast against the rank-5 branch is
(13, 13, 1, 1, 1): 13 in dim 1."""

import sys

import numpy as np

from compiler import passes
from compiler.interpret import evaluate
from compiler.ir import Call, If, parse, print_module
from compiler.passes import named_pipelines
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests
from tests.compiler.passes.test_dynamic_to_static import (
    SEEDS_PAD_SQUEEZE,
    seeds_input,
    torch_pad_squeeze,
)

REPLICA = "replica-relay-onnx-if"


def test_labelled_and_in_no_named_pipeline():
    cls = passes.get_pass_class(REPLICA)
    doc = sys.modules[cls.__module__].__doc__
    assert cls.__module__ == "compiler.passes.replicas.relay_onnx_if"
    assert doc.startswith("REPLICA OF A REAL BUG") and "docs/bugs.md bug 3" in doc
    assert "broadcast_to_like" in doc and "17383" in doc
    assert all(REPLICA not in spec for spec in named_pipelines().values())


def test_the_lower_rank_branch_is_broadcast_like_the_other():
    result = passes.run(parse(SEEDS_PAD_SQUEEZE), REPLICA)
    assert result.ok
    out = result.module.main.output
    assert isinstance(out, If)
    then_b, else_b = out.then_branch, out.else_branch
    wide = then_b.result
    assert isinstance(wide, Call) and wide.op == "where" and wide.name == "broadcast_to_like"
    assert wide.args[1].op == "squeeze"
    # the else branch's result, copied into the then branch (a node is bound in one branch)
    assert wide.args[2].op == "identity" and wide.args[2] is not else_b.result
    assert wide.args[2].args == else_b.result.args
    assert len(out.ty.shape) == 5  # the If now has the rank of the wider branch
    assert wide.prov.pass_name == REPLICA
    parse(print_module(result.module))  # still valid IR text


def test_after_dynamic_to_static_the_13_lands_in_dim_1_and_values_are_13_copies():
    module = passes.run(parse(SEEDS_PAD_SQUEEZE), f"{REPLICA},dynamic-to-static").module
    assert module.main.ret_type.shape == (13, 13, 1, 1, 1)
    assert not any(isinstance(n, If) for n in module.main.iter_nodes())
    x = seeds_input()
    ev = evaluate(module, [x], check_types=True)
    assert ev.mismatches == []  # types and values agree, as in TVM: only the result is wrong
    right = torch_pad_squeeze(x)  # (13, 1, 1, 1)
    assert ev.outputs[0].shape == (13, 13, 1, 1, 1)
    # right-aligned: out[i, j] is the squeezed value's row j, for every i
    np.testing.assert_array_equal(ev.outputs[0], np.broadcast_to(right, (13, 13, 1, 1, 1)))
    assert np.broadcast_shapes((13, 1, 1, 1), (13, 1, 1, 1, 1)) == (13, 13, 1, 1, 1)


def test_ifs_whose_branches_agree_in_rank_are_left_alone():
    text = SEEDS_PAD_SQUEEZE.replace("squeeze(%pad, axes=[1])", "relu(%pad)").replace(
        "%squeezed: f32[?, ?, ?, ?]", "%squeezed: f32[?, ?, ?, ?, ?]"
    )
    module = parse(text)
    assert passes.run(module, REPLICA).module is module


def test_a_wider_then_branch_broadcasts_the_else_branch():
    text = """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[*] {
  %out: f32[*] = if %c {
    %u: f32[1, 2, 3] = unsqueeze(%x, axes=[0])
    yield %u
  } else {
    %r: f32[2, 3] = relu(%x)
    yield %r
  }
  return %out
}
"""
    module = passes.run(parse(text), REPLICA).module
    out = module.main.output
    assert out.then_branch.result.op == "unsqueeze"
    assert out.else_branch.result.name == "broadcast_to_like"
    assert out.ty.shape == (1, 2, 3)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = evaluate(module, [x, np.array(False)]).outputs[0]
    np.testing.assert_array_equal(got, np.maximum(x, 0)[None])

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

REPLICA_RELAY_IF = [
    C(
        "replica-relay-onnx-if",
        "an If whose branches differ in rank: the lower one broadcast like the other (Relay)",
        """
def @main(%x: f32[3, 2], %c: bool[]) -> f32[*] {
  %r: f32[3, 1, 2] = reshape(%x, shape=[3, 1, 2])
  %o: f32[*] = if %c {
    %q: f32[3, 2] = squeeze(%r, axes=[1])
    yield %q
  } else {
    %i: f32[3, 1, 2] = identity(%r)
    yield %i
  }
  return %o
}""",
        """
def @main(%x: f32[3, 2], %c: bool[]) -> f32[3, ?, 2] {
  %r: f32[3, 1, 2] = reshape(%x, allowzero=true, shape=[3, 1, 2])
  %o: f32[3, ?, 2] = if %c {
    %q: f32[3, 2] = squeeze(%r, axes=[1])
    %i: f32[3, 1, 2] = identity(%r)
    %broadcast_to_like: f32[3, 3, 2] = where(const(bool[], true), %q, %i)
    yield %broadcast_to_like
  } else {
    %i_1: f32[3, 1, 2] = identity(%r)
    yield %i_1
  }
  return %o
}""",
    ),
    K(
        "replica-relay-onnx-if",
        "an If whose branches have one rank",
        """
def @main(%x: f32[3, 1, 2], %c: bool[]) -> f32[3, 1, 2] {
  %o: f32[3, 1, 2] = if %c {
    %q: f32[3, 1, 2] = relu(%x)
    yield %q
  } else {
    %i: f32[3, 1, 2] = identity(%x)
    yield %i
  }
  return %o
}""",
    ),
]

CASES = REPLICA_RELAY_IF
test_rule, test_guard = case_tests(CASES)
