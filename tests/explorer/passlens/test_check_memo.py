"""The check's memo (explorer/passlens/memo.py): a value is reused for a node a pass rebuilt only
when the op, its attributes, its type and its operands are the same. A pass that changes an
attribute alone (same op, same operands, same type) computes something else: it is run again,
and a wrong such pass is caught at its step."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import explorer
from compiler.interpret import ValueCache, evaluate
from compiler.ir import Call, Constant, parse
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


def test_a_torch_kernels_result_stands_for_its_views_of_its_own_layout():
    """An array over a tensor's memory (what a torch kernel gives) is its own canonical array
    and a view of it with its very layout is keyed as it; a view of another layout is not,
    and two such views are one operand."""
    torch = pytest.importorskip("torch")
    memo = Memo()
    memo.start(None)
    root = torch.arange(12.0).reshape(3, 4).numpy()
    same, other, other_again = root.reshape(3, 4), root.T, root.T
    node = parse(CLIP)["main"].bindings[0]
    assert memo.canonical(root) is root and memo.canonical(same) is root
    assert memo.key_of(node, [same])[0] == memo.key_of(node, [root])[0] == memo.key(node, [root])
    assert memo.canonical(other) is other and memo.canonical(other_again) is other
    assert memo.key_of(node, [other])[0] != memo.key_of(node, [root])[0]
    assert memo.key_of(node, [root, (1, 2)]) is None  # (a tuple is no operand to key)


LINEARS = """
def @main(%x: f32[4, 64], %w1: f32[64, 64], %b1: f32[64], %w2: f32[64, 64], %b2: f32[64])
    -> f32[4, 64] {
  %a: f32[4, 64] = linear(%x, %w1, %b1)
  %b: f32[4, 64] = linear(%a, %w2, %b2)
  %c: f32[4, 64] = linear(%b, %w2, %b2)
  return %c
}
"""
TWICE = """
def @main(%w: f32[64, 64], %b: f32[64]) -> f32[64, 64] {
  %c: f32[64, 64] = linear(%w, %w, %b)
  return %c
}
"""


def test_linears_of_one_signature_share_a_decomposition_each_on_its_own_operands():
    """The memo decomposes once per op, attributes and types: each linear computed as its
    parts on its own operands, every part found again after decompose-ops; a call reading
    one operand twice is decomposed on its own."""
    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in [(4, 64), (64, 64), (64, 64)])
    b1, b2 = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    module = parse(LINEARS)
    inputs = [x, w1, b1, w2, b2]
    memo = Memo()
    hooks = MemoHooks(memo)
    memo.start(None)
    got = evaluate(module, inputs, cache=ValueCache(), memo=hooks).outputs[0]
    plain = evaluate(module, inputs).outputs[0]  # no memo: each linear as its own op
    assert got.tobytes() == plain.tobytes()  # each linear on its own weights
    assert not np.array_equal(got, evaluate(module, [x, w1, b1, w1, b1]).outputs[0])
    assert len(memo.decompositions) == 1
    decomposed = explorer.explore(module, pipeline="decompose-ops")[-1].module
    memo.start(memo.generation)
    hits = hooks.hits
    again = evaluate(decomposed, inputs, cache=ValueCache(), memo=hooks).outputs[0]
    assert again is got and hooks.hits > hits  # the parts' values found again
    twice = parse(TWICE)
    assert memo.decomposition(twice["main"].bindings[-1])[1] is twice["main"].bindings[-1].args
    memo.start(memo.generation)
    got = evaluate(twice, [w2, b2], cache=ValueCache(), memo=hooks).outputs[0]
    assert got.tobytes() == evaluate(twice, [w2, b2]).outputs[0].tobytes()


# ----- attention by torch's fused kernel -------------------------------------------------------


def _attention_model():
    torch = pytest.importorskip("torch")

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(32, 96)
            self.out = torch.nn.Linear(32, 32)

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, 4, 8).permute(2, 0, 3, 1, 4)
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.out(y.transpose(1, 2).reshape(b, n, 32))

    torch.manual_seed(0)
    return Attention().eval(), torch.randn(2, 6, 32)


@register_pass
@dataclass(frozen=True)
class _WrongScale(Pass):
    """A wrong pass: every product with a 0-d constant (attention's scale, once decomposed)
    takes 1.05 times that constant."""

    name: ClassVar[str] = "test-memo-wrong-scale"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "multiply":
                c = node.args[1]
                if isinstance(c, Constant) and c.data.ndim == 0:
                    scaled = Constant((c.data * np.float32(1.05)).astype(c.data.dtype))
                    return Call("multiply", [node.args[0], scaled], node.attrs)
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)


def test_fused_attention_has_eagers_bits_and_its_decomposition_reuses_them(monkeypatch):
    """torch's set computes attention by torch's fused kernel, so the import has eager's very
    bits; decompose-ops' parts get the values they compute and their last part the fused value
    (the two agree to rounding), so nothing after it is computed again. Where the two do not
    agree (here: agreement refused), decompose-ops' nodes are computed and judged on their own
    values."""
    import torch

    from explorer.passlens import memo as memo_module

    model, x = _attention_model()
    trace = explorer.explore(model, (x,), pipeline="decompose-ops")  # attention included
    assert "softmax" in str(trace.steps[-1].module)
    with torch.no_grad():
        eager = model(x).numpy()
    imported = evaluate(trace.imported.module, [x.numpy()], kernels="torch")
    assert imported.by_kernel["torch"]["scaled_dot_product_attention"] == 1
    assert imported.outputs[0].tobytes() == eager.tobytes()

    def decompose_ops(report):
        return next(c for c in report.steps if c.step.name == "decompose-ops")

    report = trace.check((x,), progress=False)
    assert report.ok and all(c.rule == "tolerance" for c in report.steps)
    assert all(c.max_abs == 0.0 for c in report.steps if c.max_abs is not None)  # eager's bits
    reused = decompose_ops(report)
    assert reused.step.changed and reused.reused > 0
    monkeypatch.setattr(memo_module, "agree", lambda *a: False)
    refused = trace.check((x,), progress=False)
    own = decompose_ops(refused)
    assert refused.ok and own.computed > reused.computed  # attention's last part, and after it
    assert 0 < own.max_abs < 1e-5  # op by op: float32 rounding away from eager


def test_a_wrong_attention_scale_after_decompose_ops_is_caught():
    model, x = _attention_model()
    trace = explorer.explore(model, (x,), pipeline=["decompose-ops", _WrongScale()])
    report = trace.check((x,), progress=False)
    assert [f.kind for f in report.findings] == ["diverged"]
    assert report.first_failure.step.name == "test-memo-wrong-scale"
