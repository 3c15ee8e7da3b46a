"""The graph payload (widgets/graph_data.py): what the graph component draws, computed in
Python and tested apart from any browser."""

import json
import re

import pytest

import explorer
from compiler import models
from tests.widgets.test_scale_models import sm
from widgets.graph_data import graph_payload, short_path
from widgets.graph_groups import MAX_CHILDREN, segment
from widgets.graph_view import graph_data, node_details


@pytest.fixture(scope="module")
def bloat_trace():
    """A small ConvNeXt through the linear-broadcast replica and fold-constant: every
    pointwise weight baked into N copies (SEEDS.md), with module groups."""
    model = models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)
    trace = explorer.explore(model, pipeline="replica-linear-broadcast,fold-constant")
    return trace, trace.check()


def _by_id(p):
    return {n["id"]: n for n in p["nodes"]}


def _children(p):
    kids = {g: 0 for g in range(len(p["groups"]))}
    for n in p["nodes"]:
        if "inl" not in n:
            kids[n["g"]] += 1
    for g in p["groups"][1:]:
        kids[g["p"]] += 1
    return kids


def test_the_bloated_weight_is_marked_and_the_view_opens_on_it(bloat_trace):
    trace, report = bloat_trace
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous, report)
    json.dumps(p, allow_nan=False)  # JSON as it is
    nodes = p["nodes"]
    bad = [n for n in nodes if n.get("bad")]
    assert bad and all(n["k"] == "weight" and n["st"] == "added" for n in bad)
    # the badge names the source without the module path its frame already shows
    assert {n["mark"] for n in bad} >= {"×8 copies of weight"}
    assert {n["g"] for n in bad if n["mark"] == "×8 copies of weight"} != {0}
    # the view opens on the first finding, inside its module, which starts open
    focus = nodes[p["focus"]]
    assert focus.get("bad") and focus["id"].startswith("$features.")
    g, open_groups = focus["g"], set()
    while g > 0:
        open_groups.add(p["groups"][g]["id"])
        g = p["groups"][g]["p"]
    assert open_groups and not open_groups & set(p["collapsed"])
    # changes in graph order, ghosts of removed nodes among them
    statuses = {nodes[i]["st"] for i in p["changes"]}
    assert statuses == {"added", "changed", "removed"}
    assert all(nodes[i].get("st") for i in p["changes"])


def test_group_boxes_count_live_nodes_and_the_byte_change(bloat_trace):
    trace, _report = bloat_trace
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    groups = {g["id"]: g for g in p["groups"]}
    block = groups["features.1.0.block.3"]
    live = [
        n
        for n in p["nodes"]
        if n.get("st") != "removed" and "inl" not in n and _inside(p, n, "features.1.0.block.3")
    ]
    assert block["n"] == len(live)  # ghosts are not counted
    # its bytes are the live weights only: the 8 copies (8.2 kB) and the bias; before the
    # step the block held a 1 kB weight and the bias, so it grew by 8 copies less the original
    weights = {
        n["id"]: n["b"] for n in p["nodes"] if n["k"] == "weight" and n.get("st") != "removed"
    }
    inside = {k: v for k, v in weights.items() if k.startswith("$features.1.0.block.3.")}
    assert block["b"] == sum(inside.values())
    assert block["db"] == 32 * 8 * 8 * 4 - 32 * 8 * 4
    assert block["ch"] == {"added": 1, "changed": 1, "removed": 3}
    assert p["groups"][0]["db"] == step.graph.param_bytes - step.previous.graph.param_bytes


def _inside(p, n, gid):
    g = n["g"]
    while g > 0:
        if p["groups"][g]["id"] == gid:
            return True
        g = p["groups"][g]["p"]
    return False


def test_untouched_weights_are_lines_of_their_reader(bloat_trace):
    trace, _report = bloat_trace
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    nodes = p["nodes"]
    inline = [n for n in nodes if "inl" in n]
    assert inline and all(n["k"] in ("weight", "const") and not n.get("st") for n in inline)
    for n in inline:
        host = nodes[n["inl"]]
        assert "inl" not in host and host["w"]
    # a weight the step added, or a finding names, keeps a box of its own
    assert all("inl" not in n for n in nodes if n.get("st") or n.get("bad"))
    ln = _by_id(p)["main/layer_norm"]
    assert ln["w"] == ["weight f32[8]", "bias f32[8]"]  # its module's prefix dropped


def test_details_say_where_in_human_terms(bloat_trace):
    trace, _report = bloat_trace
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    details = node_details(p)
    conv = details["main/conv2d"]
    assert conv["attrs"]["strides"] == "[4, 4]" and conv["type"] == "f32[1, 8, 8, 8]"
    assert conv["provenance"]["module"] == "features.0.0"


def test_source_files_are_shown_relative_to_the_model():
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()).eval()
    trace = explorer.explore(model, (torch.randn(2, 4),))
    step = trace["fold-constant"]
    files = [
        d["provenance"]["file"]
        for d in graph_payload(step, step.previous)["details"]
        if "file" in d.get("provenance", {})
    ]
    assert files and all(not f.startswith("/") and ":" in f for f in files)  # with the line
    assert short_path("/a/b/c.py:12", "/a") == "b/c.py:12"
    assert short_path("/x/c.py:3", "/a") == "c.py:3"
    assert short_path("model.onnx", "/a") == "model.onnx"


def test_before_and_after_payloads_for_the_toggle(bloat_trace):
    trace, _report = bloat_trace
    step = trace["fold-constant"]
    data = graph_data(step, step.previous)
    after, before = data["after"], data["before"]
    assert before["step"]["index"] == step.previous.index
    assert not any(n.get("st") for n in before["nodes"])  # the baseline, plain
    before_ids = {n["id"] for n in before["nodes"]}
    # every ghost of the after side is a node of the before side
    ghosts = [n["id"][len("removed:") :] for n in after["nodes"] if n.get("st") == "removed"]
    assert ghosts and set(ghosts) <= before_ids


def test_max_boxes_chooses_how_much_starts_collapsed(bloat_trace):
    trace, _report = bloat_trace
    step = trace["fold-constant"]
    wide = graph_payload(step, step.previous, max_boxes=1000)
    narrow = graph_payload(step, step.previous, max_boxes=8)
    assert wide["collapsed"] == []
    assert len(narrow["collapsed"]) > 0
    assert set(narrow["collapsed"]) <= {g["id"] for g in narrow["groups"]}


def test_a_flat_chain_is_cut_into_segments():
    trace = sm.flat_chain(10000)  # segments of segments
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    kids = _children(p)
    assert max(kids.values()) <= MAX_CHILDREN
    segments = [g for g in p["groups"] if g["k"] == "segment"]
    # each says what it holds, which of them, of how many (not "items 41-80")
    assert segments
    for g in segments:
        m = re.fullmatch(r"nodes (\d+)–(\d+) of ([\d,]+)(, \d+ removed)?", g["label"])
        assert m and int(m[1]) <= int(m[2]) and int(m[3].replace(",", "")) >= 9990, g["label"]
    # every group comes after its parent; the focus (the folded op) is open
    assert all(g["p"] < i for i, g in enumerate(p["groups"]) if i)
    assert p["focus"] is not None
    closed = set(p["collapsed"])
    for i in [p["focus"], *p["changes"]]:  # the focus and the other changes start open
        g = p["nodes"][i]["g"]
        while g > 0:
            assert p["groups"][g]["id"] not in closed, p["nodes"][i]["id"]
            g = p["groups"][g]["p"]
    # a view of at most max_boxes boxes at first
    opened = {i for i, g in enumerate(p["groups"]) if g["id"] not in closed}
    shown = 0
    for i in opened:
        if i == 0 or p["groups"][i]["p"] in opened:
            shown += sum(1 for n in p["nodes"] if n["g"] == i and "inl" not in n)
            shown += sum(
                1 for k, g in enumerate(p["groups"]) if k and g["p"] == i and k not in opened
            )
    assert shown <= 300


def test_segment_labels_count_live_nodes_and_say_how_many_removed():
    """Issue 43: "nodes 41–80 of 10,002" counted the removed nodes' ghosts in N. N counts
    the run's live nodes; a segment holding ghosts says ", K removed"; the spans number the
    live nodes one after another, from 1 to N."""
    trace = sm.flat_chain(10000)
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    drawn = [n for n in p["nodes"] if "inl" not in n]
    ghosts = sum(1 for n in drawn if n.get("st") == "removed")
    live = len(drawn) - ghosts
    assert ghosts > 0  # the folded op and its weight
    groups = p["groups"]
    segs = [g for g in groups if g["k"] == "segment"]
    parents = {g["p"] for g in groups}
    leaves = [g for k, g in enumerate(groups) if g["k"] == "segment" and k not in parents]
    removed = 0
    spans = []
    for g in segs:
        m = re.fullmatch(r"nodes (\d+)–(\d+) of ([\d,]+)(?:, (\d+) removed)?", g["label"])
        assert m, g["label"]
        assert int(m[3].replace(",", "")) == live, g["label"]
        if g in leaves:
            removed += int(m[4] or 0)
            spans.append((int(m[1]), int(m[2])))
    assert removed == ghosts
    spans.sort()
    assert spans[0][0] == 1 and spans[-1][1] == live
    assert all(b[0] == a[1] + 1 for a, b in zip(spans, spans[1:], strict=False))


def test_a_segment_of_ghosts_alone_says_so():
    groups = [{"id": "", "p": -1, "k": "root"}]
    n = 100  # three segments of 40, 40 and 20
    of, drawn, pos = [0] * n, list(range(n)), [float(i) for i in range(n)]
    ghosts = set(range(40, 80))  # the second segment of 40: ghosts only
    segment(groups, of, drawn, pos, ghosts)
    labels = [g["label"] for g in groups if g["k"] == "segment"]
    assert labels == ["nodes 1–40 of 60", "40 removed, after 40 of 60", "nodes 41–60 of 60"]


def test_a_decoder_groups_by_module_and_numbers_read_with_their_parent():
    trace = sm.decoder(layers=3)
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    labels = {g["id"]: g["label"] for g in p["groups"]}
    assert labels["model.layers.1"] == "layers.1"  # "1" alone says little
    assert labels["model.layers.1.self_attn"] == "self_attn"
    focus = p["nodes"][p["focus"]]
    assert _inside(p, focus, trace.scale_focus.group)


def test_a_merged_chain_that_starts_with_a_number_reads_with_its_parent():
    """Issue 43: ``stages.0`` holds only ``blocks``, so the two are one group; its label was
    cut to "0.blocks" (the overview's row beside ``stages.1``). Now "stages.0.blocks"."""
    import torch

    from tests.compiler.frontend.torch_zoo import ConvNeXt

    torch.manual_seed(0)
    model = ConvNeXt(dims=(8, 16), depths=(2, 2)).eval()
    trace = explorer.explore(model, (torch.randn(1, 3, 32, 32),), pipeline="fold-constant")
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    labels = {g["id"]: g["label"] for g in p["groups"]}
    assert "stages.0" not in labels  # (merged into its lone child)
    assert labels["stages.0.blocks"] == "stages.0.blocks"
    assert labels["stages.0.blocks.1"] == "blocks.1"
    assert labels["stages.1"] == "stages.1" and labels["stages.1.blocks"] == "blocks"
    assert not [v for v in labels.values() if v[:1].isdigit()]


def test_a_group_shows_a_byte_change_only_where_parameters_changed():
    """A weight whose readers move to another module (decompose-ops, fuse-ops) is not a
    change of bytes: steps that change no parameter show no group byte change."""
    from tests.compiler.frontend import torch_zoo

    model, args, _dynamic = torch_zoo.gpt()
    trace = explorer.explore(model, args)
    seen = 0
    for step in trace.steps[1:]:
        prev = step.previous
        if prev is None or step.diff().params.count:
            continue
        seen += 1
        p = graph_payload(step, prev)
        moved = {g["id"]: g["db"] for g in p["groups"] if g.get("db")}
        assert moved == {}, f"#{step.index} {step.name}: {moved}"
    assert seen >= 3


def test_nodes_fuse_ops_moved_are_drawn_as_moved_not_as_changes():
    """Issue 43 item 3: after fuse-ops a chain's ops are in the fused function, their values
    unchanged: each node's status is "moved" (not a change n / p go to), the groups count them
    apart from the changes, and the only changes are the call and the function's ends."""
    trace = explorer.explore(sm.flat_chain_module(300), pipeline="default")
    step = trace["fuse-ops"]
    p = graph_payload(step, step.previous)
    status = [n.get("st", "") for n in p["nodes"]]
    ops = [i for i, n in enumerate(p["nodes"]) if n["k"] == "op"]
    assert len(ops) >= 299 and all(status[i] == "moved" for i in ops)
    assert {status[i] for i in p["changes"]} == {"added"} and len(p["changes"]) == 3
    fused = next(g for g in p["groups"] if g["k"] == "function")
    assert fused["ch"]["moved"] == len(ops) and "changed" not in fused["ch"]
    moved = p["nodes"][ops[0]]
    assert moved["chg"] == f"moved from @main to {fused['label']}, same values"


def test_ops_alone_in_their_module_are_titled_by_the_module_with_the_op_beneath():
    """Issue 43 item 8: q_proj, k_proj and v_proj are one linear each, so they get no frame of
    their own; their boxes are titled by the module's name (as Netron and Model Explorer show
    them), the op the first line; an op inside a module frame keeps its op as title."""
    trace = sm.decoder(layers=2, experts=0)
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    attn = [n for n in p["nodes"] if p["groups"][n["g"]]["id"] == "model.layers.0.self_attn"]
    titled = {n["t"]: n for n in attn if n.get("mod")}
    assert {"q_proj", "k_proj", "v_proj", "o_proj"} <= set(titled)
    assert all(titled[k]["s"][0] == "linear" for k in ("q_proj", "k_proj", "v_proj", "o_proj"))
    # the rest of self_attn is its own ops, titled by op
    others = [n for n in attn if n["k"] == "op" and not n.get("mod")]
    assert others and {"matmul", "softmax"} <= {n["t"] for n in others}
    # a Sequential's index says less than the op: ``block.3``'s linear stays "linear"; a named
    # one (``avgpool``) is titled by its name
    model = models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)
    conv = explorer.explore(model, pipeline="fold-constant")
    q = graph_payload(conv[1], None)
    titled = {n["t"]: n["s"][0] for n in q["nodes"] if n.get("mod")}
    assert titled == {"avgpool": "adaptive_avg_pool2d"}, titled
    block = [n for n in q["nodes"] if n["id"].endswith("/linear") and n["k"] == "op"]
    assert block and block[0]["t"] == "linear"


def test_the_zoomed_out_blocks_parse_every_segment_label_with_live_nodes():
    """static/graph/semantic.js names a run of segments from its first and last labels
    ("nodes 1–334 of 10,002") with its pattern SEG: it must read the labels with ghosts too
    ("nodes 4844–5008 of 10,002, 2 removed"), else a run holding them is named by two whole
    labels joined."""
    from pathlib import Path

    js = (Path(__file__).parents[2] / "widgets/static/graph/semantic.js").read_text()
    seg = re.compile(re.search(r"^const SEG = /(.*)/; //", js, re.M).group(1))
    trace = sm.flat_chain(10000)
    step = trace["fold-constant"]
    groups = graph_payload(step, step.previous)["groups"]
    labels = [g["label"] for g in groups if g["k"] == "segment"]
    assert any(", 2 removed" in x for x in labels)
    for label in labels:
        m = seg.match(label)
        assert m and m.group(4) == " of 10,002", label
