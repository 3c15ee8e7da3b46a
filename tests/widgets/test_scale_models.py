"""bench/scale_models.py: the models at scale for the graph view build quickly, have the
structure they promise (node counts, module paths), and their view step changes a few nodes
in the promised module; the IR they build is what the torch frontend makes of the same model."""

import importlib.util
import sys
from pathlib import Path

import pytest

from compiler.ir.structural import assert_structural_equal

REPO = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location(
        "scale_models", REPO / "bench" / "scale_models.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


sm = _load()

# every node but the runtime input and the return node carries a module path, as from_torch
NO_PATH_KINDS = {"input", "output"}


def _ops(step):
    return [n for n in step.graph.nodes.values() if n.kind == "op"]


def _changed_nodes(d):
    return list(d.added) + list(d.removed) + [c.after for c in d.changed]


@pytest.mark.parametrize(
    "make, args",
    [
        (sm.many_ops, {"n": 300}),
        (sm.decoder, {"layers": 2}),
        (sm.flat_chain, {"n": 300}),
    ],
    ids=["many_ops", "decoder", "flat_chain"],
)
def test_small_variants_build_and_change_only_their_focus(make, args):
    # how fast they build is bench/scale_models.py's to print: a loaded machine must not fail this
    trace = make(**args)
    for step in trace:
        step.graph  # noqa: B018  (the graph models are part of what a view needs)
    assert [s.name for s in trace] == ["module", "infer-types", "fold-constant"]
    assert trace.pipeline == sm.PIPELINE
    assert not trace[1].changed and trace.failure is None
    focus = trace.scale_focus
    view = trace[sm.VIEW_STEP]
    assert view is trace.final and view.index == focus.step == len(trace) - 1
    d = view.diff()
    nodes = _changed_nodes(d)
    assert d.removed and d.added and d.changed  # the folded op and weight out, the value in
    assert 2 <= len(nodes) <= 6, [n.id for n in nodes]
    assert {n.group for n in nodes} == {focus.group}
    assert [n.op for n in d.removed if n.kind == "op"] == [focus.what.split()[0]]
    before, after = view.previous.graph.op_counts(), view.graph.op_counts()
    assert sum(before.values()) - sum(after.values()) == 1


def test_many_ops_has_about_n_ops_in_a_block_hierarchy():
    for n in (100, 300, 1000):
        trace = sm.many_ops(n)
        ops = _ops(trace.imported)
        assert abs(len(ops) - n) <= 3, (n, len(ops))
    groups = {n.group for n in trace.imported.graph.nodes.values()}
    for path in (
        "stem",
        "stages.1.downsample",
        "stages.0.blocks.0.norm",
        "stages.0.blocks.0",
        "stages.3.blocks.1.mlp.fc1",
        "stages.3.blocks.1.mlp.act",
        "stages.3.blocks.1.mlp.fc2",
        "norm",
        "head",
    ):
        assert path in groups, path
    for node in trace.imported.graph.nodes.values():
        assert bool(node.group) == (node.kind not in NO_PATH_KINDS), node.id
    # the change sits in the middle block (of 998 at n=5000), not at either end
    assert trace.scale_focus.group == "stages.1.blocks.49"  # of 198 blocks in 4 stages
    assert sm._many_ops_group(5000, 4) == "stages.1.blocks.249"


def test_decoder_structure_scales_with_layers_to_about_10000_nodes():
    counts = {}
    for layers in (2, 3, 4):
        trace = sm.decoder(layers=layers)
        counts[layers] = len(trace.imported.graph.nodes)
    per_layer = counts[3] - counts[2]
    assert counts[4] - counts[3] == per_layer
    full = counts[2] + 30 * per_layer
    assert 9500 <= full <= 10500, (counts, full)  # the 32-layer default, without building it
    g = sm.decoder(layers=2).imported.graph
    groups = {n.group for n in g.nodes.values()}
    for path in (
        "model.embed_tokens",
        "model.layers.1.input_layernorm",
        "model.layers.1.self_attn",
        "model.layers.1.self_attn.q_proj",
        "model.layers.1.self_attn.k_proj",
        "model.layers.1.self_attn.v_proj",
        "model.layers.1.self_attn.o_proj",
        "model.layers.1",
        "model.layers.1.post_attention_layernorm",
        "model.layers.1.mlp.gate",
        "model.layers.1.mlp.experts.21.gate_proj",
        "model.layers.1.mlp.experts.21.act_fn",
        "model.layers.1.mlp.experts.21.up_proj",
        "model.layers.1.mlp.experts.21.down_proj",
        "model.layers.1.mlp.shared_expert.down_proj",
        "model.norm",
        "lm_head",
    ):
        assert path in groups, path
    for node in g.nodes.values():
        assert bool(node.group) == (node.kind not in NO_PATH_KINDS), node.id
        if node.kind == "op":
            assert node.provenance["op"].startswith("aten."), node.id
            assert node.provenance["node"] == node.label, node.id
    ops = {n.op for n in g.nodes.values()}
    assert {
        "take",
        "multiply",
        "mean",
        "rsqrt",
        "linear",
        "reshape",
        "permute_dims",
        "matmul",
        "softmax",
        "strided_slice",
        "concat",
        "silu",
        "sigmoid",
        "add",
    } <= ops
    plain = sm.decoder(layers=2, experts=0).imported.graph
    assert "model.layers.1.mlp.gate_proj" in {n.group for n in plain.nodes.values()}
    assert len(plain.nodes) < len(g.nodes) / 3


def test_decoder_change_is_in_the_chosen_layer():
    assert sm.decoder(layers=2).scale_focus.group == "model.layers.1.self_attn"
    trace = sm.decoder(layers=6, fold_layer=4, experts=2)
    assert trace.scale_focus.group == "model.layers.4.self_attn"
    d = trace[sm.VIEW_STEP].diff()
    assert {n.group for n in _changed_nodes(d)} == {"model.layers.4.self_attn"}
    with pytest.raises(ValueError):
        sm.decoder(layers=2, fold_layer=2)


def test_decoder_full_size_has_10000_nodes_and_changes_layer_17():
    trace = sm.decoder()
    counts = [len(s.graph.nodes) for s in trace]
    assert 9800 <= counts[0] <= 10200 and counts[2] == counts[0] - 1, counts
    focus = trace.scale_focus
    assert focus.group == "model.layers.17.self_attn" and focus.step == 2
    d = trace[focus.step].diff()
    assert {n.group for n in _changed_nodes(d)} == {"model.layers.17.self_attn"}


def test_flat_chain_is_a_chain_without_module_paths():
    for n in (50, 300):
        trace = sm.flat_chain(n)
        g = trace.imported.graph
        assert len(_ops(trace.imported)) == n
        assert len(g.nodes) == n + 3  # the input, the buffer, the return
        assert all(node.group == "" for node in g.nodes.values())
        # a chain: every op but the folded sqrt reads the op before it, once
        fanout = {}
        for e in g.edges:
            fanout[e.src] = fanout.get(e.src, 0) + 1
        assert max(fanout.values()) == 1
        ops = [n.provenance for n in _ops(trace.imported)]
        assert all(p["framework"] == "torch" and "module" not in p for p in ops)


@pytest.mark.parametrize(
    "kind, args",
    [
        ("many_ops", {"n": 60}),
        ("decoder", {"layers": 2, "experts": 3}),
        ("decoder", {"layers": 1, "experts": 0}),
        ("flat_chain", {"n": 30}),
    ],
    ids=["many_ops", "decoder", "decoder-plain", "flat_chain"],
)
def test_the_ir_is_what_the_torch_frontend_makes_of_the_twin(kind, args):
    """Module paths, ATen ops, FX names and file:line equal those from_torch gives."""
    import explorer

    model, inputs = sm.torch_twin(kind, **args)
    imported = explorer.explore(model, inputs, pipeline="").imported.module
    assert_structural_equal(sm.BUILDERS[kind](**args), imported, provenance=True)
