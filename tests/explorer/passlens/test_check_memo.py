"""The check's memo (explorer/passlens/memo.py): a value is reused for a node a pass rebuilt only
when the op, its attributes, its type and its operands are the same. A pass that changes an
attribute alone (same op, same operands, same type) computes something else: it is run again,
and a wrong such pass is caught at its step."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

import explorer
from compiler.interpret import ValueCache, evaluate
from compiler.ir import Call, parse
from compiler.passes import Pass, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from explorer.passlens.memo import Memo, MemoHooks

CLIP = """
def @main(%x: f32[4, 64]) -> f32[4, 64] {
  %a: f32[4, 64] = clip(%x, min=-0.5, max=0.5)
  %b: f32[4, 64] = exp(%a)
  return %b
}
"""


@register_pass
@dataclass(frozen=True)
class _NarrowClip(Pass):
    """A wrong pass: every clip's max becomes 0.25 (same op, operands and type)."""

    name: ClassVar[str] = "test-memo-narrow-clip"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "clip":
                return Call("clip", node.args, node.attrs.with_(max=0.25))
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)


def _x():
    return np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)


def test_a_node_with_other_attributes_is_not_served_from_the_memo():
    memo = Memo()
    hooks = MemoHooks(memo)
    x = _x()
    memo.start(None)
    first = evaluate(parse(CLIP), [x], cache=ValueCache(), memo=hooks)
    memo.start(memo.generation)
    again = evaluate(parse(CLIP), [x], cache=ValueCache(), memo=hooks)
    assert hooks.hits >= 1 and again.outputs[0] is first.outputs[0]  # the same: reused
    memo.start(memo.generation)
    other = parse(CLIP.replace("max=0.5", "max=0.25"))
    second = evaluate(other, [x], cache=ValueCache(), memo=hooks)
    np.testing.assert_allclose(second.outputs[0], np.exp(np.clip(x, -0.5, 0.25)), rtol=1e-6)
    a, b = parse(CLIP)["main"].output.args[0], other["main"].output.args[0]
    assert memo.key(a, [x]) != memo.key(b, [x])


def test_a_pass_changing_an_attribute_only_is_caught_at_its_step():
    trace = explorer.explore(CLIP, pipeline=[_NarrowClip()])
    report = trace.check((_x(),), progress=False)
    assert [f.kind for f in report.findings] == ["diverged"]
    assert report.first_failure.step.name == "test-memo-narrow-clip"
    assert report.first_failure.details["max_abs"] > 0.1
