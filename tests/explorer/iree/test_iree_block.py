"""A small transformer block (layer norm, attention, MLP; width 16, built in code) recorded by
the iree adapter to the dispatch-creation phase: the steps nest under IREE's phases, the
import's ops are in their torch modules (``attn.qkv``, ``mlp.fc1``; a weight's load in the
layer owning the weight), and once IREE forms its dispatch regions each region is a group of
the graph, its ops still naming the torch module they came from. Skipped without
passlens[iree]."""

from __future__ import annotations

import math
from collections import Counter

import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.turbine")
torch = pytest.importorskip("torch")

import explorer  # noqa: E402
from explorer.iree.record import PHASES  # noqa: E402

WIDTH, HEADS, TOKENS = 16, 2, 4
LINEARS = {"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"}


class Attention(torch.nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
        return self.proj((w @ v).transpose(1, 2).reshape(b, t, d))


class FeedForward(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class Block(torch.nn.Module):
    """A pre-norm transformer block: x + attn(ln1(x)), then + mlp(ln2(x))."""

    def __init__(self, dim: int = WIDTH, heads: int = HEADS):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.mlp = FeedForward(dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def block_and_inputs():
    torch.manual_seed(0)
    return Block().eval(), (torch.randn(1, TOKENS, WIDTH),)


@pytest.fixture(scope="module")
def block():
    model, args = block_and_inputs()
    return explorer.explore(
        model, args, compiler="iree", pipeline="dispatch-creation", progress=False
    )


def _ops(graph, function=None):
    return [
        n
        for n in graph.nodes.values()
        if n.kind == "op" and (function is None or n.function == function)
    ]


def test_the_block_is_recorded_phase_by_phase_to_dispatch_creation(block):
    steps = block.steps
    assert steps[0].kind == "import" and steps[0].name == "iree-turbine: Block"
    phases = [s for s in steps if s.kind == "pass" and s.depth == 0]
    assert [s.name for s in phases] == list(PHASES[: PHASES.index("dispatch-creation") + 1])
    assert all(p.children and not p.failed for p in phases)
    formed = [s for s in steps if s.name == "iree-dispatch-creation-form-dispatch-regions"]
    on_main = [s for s in formed if s.snapshot.options["on"] == "util.func @main$async"]
    assert len(on_main) == 1 and on_main[0].status == "changed"
    assert steps[on_main[0].parent].name == "dispatch-creation"


def test_the_import_maps_each_op_to_its_torch_module(block):
    g = block.steps[0].graph
    modules = {}
    for n in _ops(g):
        modules.setdefault(n.op, []).append(n.provenance.get("module"))
    assert sorted(modules["torch.aten.linear"]) == sorted(LINEARS)
    assert sorted(modules["torch.aten.layer_norm"]) == ["ln1", "ln2"]
    assert modules["torch.aten.softmax.int"] == ["attn"]
    assert modules["torch.aten.matmul"] == ["attn", "attn"]  # q @ k^T, w @ v
    assert modules["torch.aten.gelu"] == ["mlp"]
    assert modules["torch.aten.add.Tensor"] == [None, None]  # the residuals: the block's own
    # the ops of a layer are drawn in its group, the residual adds in the function's
    groups = Counter(n.group for n in _ops(g) if n.op.startswith("torch.aten."))
    assert {"ln1", "attn", "attn.qkv", "attn.proj", "ln2", "mlp", "mlp.fc1", "mlp.fc2"} <= set(
        groups
    )
    assert groups["main"] == 2


def test_the_weights_are_parameters_and_each_load_is_in_the_layer_owning_it(block):
    g = block.steps[0].graph
    assert sorted(g.params) == sorted(
        f"{m}.{w}" for m in (*LINEARS, "ln1", "ln2") for w in ("weight", "bias")
    )
    assert g.params["attn.qkv.weight"].shape == (3 * WIDTH, WIDTH)
    assert g.params["mlp.fc2.weight"].shape == (WIDTH, 4 * WIDTH)
    for key, param in g.params.items():
        loads = [g.nodes[e.dst] for e in g.edges if e.src == param.node_id]
        assert [n.op for n in loads] == ["util.global.load"], key
        owner = key.rsplit(".", 1)[0]
        assert loads[0].provenance["module"] == owner and loads[0].group == owner, key
        casts = [g.nodes[e.dst] for e in g.edges if e.src == loads[0].id]
        assert [(c.op, c.group) for c in casts] == [("torch_c.from_builtin_tensor", owner)]


def test_dispatch_regions_are_groups_whose_ops_name_their_torch_modules(block):
    step = next(
        s
        for s in block.steps
        if s.name == "iree-dispatch-creation-form-dispatch-regions"
        and s.snapshot.options["on"] == "util.func @main$async"
    )
    g = step.graph
    main = "main$async"
    regions = [n for n in _ops(g, main) if n.op == "flow.dispatch.region"]
    assert len(regions) >= 8
    # each region's node sits in its layer; together they cover the whole block
    assert {r.group for r in regions} == {
        "ln1",
        "attn.qkv",
        "attn",
        "attn.proj",
        "ln2",
        "mlp.fc1",
        "mlp.fc2",
    }
    # each region's body is a group of its own (collapsible), holding its linalg ops
    bodies: dict[str, list] = {}
    for n in _ops(g, main):
        parts = n.group.split(".")
        if len(parts) >= 2 and parts[1].startswith("flow_dispatch_region_"):
            bodies.setdefault(".".join(parts[:2]), []).append(n)
    assert len(bodies) == len(regions)
    for group, ops in bodies.items():
        kinds = {n.op for n in ops}
        assert "flow.return" in kinds and any(k.startswith("linalg.") for k in kinds), group
    linalg = [n for ops in bodies.values() for n in ops if n.op.startswith("linalg.")]
    matmuls = {n.provenance.get("module") for n in linalg if n.op == "linalg.batch_matmul"}
    assert matmuls == LINEARS | {"attn"}  # the four linears and attention's two matmuls
    assert [n.provenance.get("module") for n in linalg if n.op == "linalg.softmax"] == ["attn"]
    generics = {n.provenance.get("module") for n in linalg if n.op == "linalg.generic"}
    assert {"ln1", "ln2", "mlp"} <= generics  # the norms' reductions, the gelu
    # the pass formed them: main has none in the module it was given
    before = block.steps[step.index - 1].graph
    assert not any(n.op == "flow.dispatch.region" for n in _ops(before, main))
