"""Inductor's pattern-matcher replacements as rewrites: each named by its pattern, recorded on
its own step and on the pass that ran the pattern matcher, with the FX nodes it matched (in the
graph before) and those it added (in the graph after), as the steps' graphs name them."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor")

import explorer  # noqa: E402
from explorer.rewrites import rule_counts, why  # noqa: E402


def attention(q, k, v):
    """softmax(q k^T / sqrt(d)) v: Inductor's fuse_attention replaces it by one SDPA call."""
    scores = torch.matmul(q, k.transpose(-2, -1)).div(math.sqrt(q.shape[-1]))
    return scores.softmax(dim=-1).matmul(v)


@pytest.fixture(scope="module")
def trace():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 8, 16) for _ in range(3))
    return explorer.explore(attention, (q, k, v), compiler="inductor", progress=False)


def test_a_replacement_is_a_rewrite_named_by_its_pattern(trace):
    (own,) = [s for s in trace if s.name.startswith("pattern ") and "sfdp" in s.name]
    pattern = own.name[len("pattern ") :]
    (rewrite,) = own.rewrites
    assert rewrite.rule == pattern
    # matched: the FX nodes of the graph before, the node it fired on (the match's output:
    # no matched node reads it) first; all of them gone after
    before = own.previous.graph
    assert [before.nodes[n].op for n in rewrite.matched].count("aten.bmm.default") == 2
    readers = {e.src for e in before.edges if e.dst in rewrite.matched}
    assert rewrite.matched[0] not in readers
    assert all(m in readers for m in rewrite.matched[1:])
    assert not set(rewrite.matched) & set(own.graph.nodes)
    assert "aten._softmax.default" not in {own.graph.nodes[n].op for n in own.graph.nodes}
    # produced: the nodes it added, in the graph after; the replacement's output first
    ops = [own.graph.nodes[n].op for n in rewrite.produced]
    assert any("scaled_dot_product" in op for op in ops)
    assert own.graph.nodes[rewrite.produced[0]].kind != "input"
    # the pass that ran the pattern matcher lists it too: its rules with counts
    outer = trace.steps[own.parent]
    assert rule_counts(outer.rewrites) == {pattern: 1}
    # why did the SDPA node change: this rule, at this step (and later, the same node)
    sdpa = next(n for n in rewrite.produced if "scaled_dot_product" in own.graph.nodes[n].op)
    assert (why(own, sdpa).rewrite, why(own, sdpa).step) == (rewrite, own)
    codegen = trace["inductor codegen"]
    assert why(codegen, sdpa).rewrite.rule == pattern


def test_inductor_rewrites_are_saved_and_loaded(trace, tmp_path):
    loaded = explorer.load(trace.save(tmp_path / "t.passlens"))
    assert [s.rewrites for s in loaded] == [s.rewrites for s in trace]
    assert any(s.rewrites for s in loaded)
