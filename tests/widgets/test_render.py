"""The pure rendering functions: DOT, SVG, node details, tables, IR diff, summary."""

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
import pytest

from tests.widgets.conftest import EVIL
from widgets import ir_text
from widgets.boxes import MAX_BOXES, default_collapsed, graph_view
from widgets.dot import COLORS, graph_dot
from widgets.escape import esc, json_script
from widgets.findings import problems_of
from widgets.graph_data import graph_payload
from widgets.graph_view import node_details
from widgets.ir_text import ir_text_html, text_diff_html
from widgets.render import step_badges, summary_html
from widgets.stats import param_stats
from widgets.svg import LAYOUTS, graph_svg
from widgets.tables_html import (
    numerics_table_html,
    param_rows,
    param_table_html,
    shape_table_html,
)

SVG = "{http://www.w3.org/2000/svg}"


def svg_nodes(svg: str) -> dict[str, ET.Element]:
    """The node groups of a rendered SVG by data-node-id (parsing also proves it is XML)."""
    root = ET.fromstring(svg)
    return {
        g.get("data-node-id"): g
        for g in root.iter(SVG + "g")
        if "pl_node" in (g.get("class") or "").split()
    }


def shape_fill(g: ET.Element) -> str:
    shape = next(c for c in g if c.tag in (SVG + "polygon", SVG + "path", SVG + "ellipse"))
    return shape.get("fill")


def texts(g: ET.Element) -> list[str]:
    return [t.text for t in g.iter(SVG + "text")]


# ----- the graph ------------------------------------------------------------------------------


def test_dot_shows_ops_attributes_params_and_edge_types(convnext_trace):
    step = convnext_trace[0]
    dot = graph_dot(step)
    assert "<B>conv2d</B>" in dot and "strides=[4, 4]" in dot  # op and its key attributes
    assert "groups=8" in dot and "groups=1<" not in dot  # dull defaults are left out
    # the stem conv's weight: a cylinder with its type and size; the input an ellipse
    weight = re.search(r"\n\s*(n\d+) \[label=<<B>features\.0\.0\.weight</B>[^\n]*", dot).group(0)
    assert "shape=cylinder" in weight and "f32[8, 3, 4, 4]" in weight and "1.5 kB" in weight
    assert re.search(r"label=<<B>x</B>[^\n]*shape=ellipse", dot)
    # shapes and dtypes on the edges
    assert "label=<f32[1, 3, 32, 32]>" in dot and "label=<f32[1, 8, 8, 8]>" in dot
    # clustered by source module path
    assert "subgraph cluster_" in dot and "label=<features>" in dot


def test_svg_nodes_carry_their_ids_and_groups(convnext_trace):
    step = convnext_trace[0]
    svg = graph_svg(step)
    nodes = svg_nodes(svg)
    assert set(nodes) == set(step.graph.nodes)  # small: every node drawn, none collapsed
    conv = nodes["main/conv2d"]
    assert conv.get("id").startswith("pl_n") and "pl_k_op" in conv.get("class")
    assert texts(conv)[0] == "conv2d"
    assert conv.find(SVG + "title").text == "main/conv2d"
    clusters = [
        g.get("data-group")
        for g in ET.fromstring(svg).iter(SVG + "g")
        if "pl_cluster" in (g.get("class") or "")
    ]
    assert "features.1.0.block.0" in clusters or "features.1.0.block" in clusters
    assert svg.startswith("<svg") and "<!--" not in svg


def test_diff_colours_added_changed_and_removed_ghosts(mlp_trace):
    step = mlp_trace["decompose-ops"]
    d = step.diff()
    assert d.added and d.removed and d.changed
    nodes = svg_nodes(graph_svg(step, step.previous))
    for n in d.added:
        assert "pl_added" in nodes[n.id].get("class") and shape_fill(nodes[n.id]) == COLORS["added"]
    for c in d.changed:
        assert shape_fill(nodes[c.after.id]) == COLORS["changed"]
    for n in d.removed:  # the linear ops are dashed grey ghosts
        ghost = nodes["removed:" + n.id]
        shape = next(c for c in ghost if c.tag == SVG + "polygon")
        assert shape.get("stroke") == COLORS["removed"] and shape.get("stroke-dasharray")
    assert {texts(nodes["removed:" + n.id])[0] for n in d.removed} == {"linear"}
    untouched = [
        i
        for i in step.graph.nodes
        if i not in {n.id for n in d.added} and i not in {c.after.id for c in d.changed}
    ]
    assert all("pl_added" not in nodes[i].get("class") for i in untouched)
    # no baseline, or an unchanged pass: no colours at all
    plain = graph_svg(step)
    assert COLORS["added"] not in plain and "removed:" not in plain
    same = mlp_trace["infer-types"]
    assert COLORS["added"] not in graph_svg(same, same.previous)


def test_failed_node_is_red_and_stays_visible(failed_trace):
    step = failed_trace.failure
    failed_id = step.graph.node_of(step.failed_node).id
    nodes = svg_nodes(graph_svg(step, step.previous))
    red = [k for k, g in nodes.items() if shape_fill(g) == COLORS["failed"]]
    assert red == [failed_id] and "pl_failed" in nodes[failed_id].get("class")
    assert texts(nodes[failed_id])[0] == "@transform"  # the call the replica asserted on
    # even in a view too small for the graph, the failed node is not hidden in a group
    view = graph_view(step, step.previous, max_boxes=3)
    assert view.box_of_node(failed_id) == failed_id
    assert "@main_transform_params" not in view.collapsed


def test_everything_from_the_model_is_escaped(evil_trace):
    step = evil_trace["fold-constant"]
    dot = graph_dot(step, step.previous)
    svg = graph_svg(step, step.previous)
    for text in (dot, svg):
        assert "<script" not in text and "alert(1)</" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    nodes = svg_nodes(svg)  # parses: quotes and ampersands are escaped too
    weight = "$" + EVIL + ".w.exp"
    assert weight in nodes and texts(nodes[weight])[0] == EVIL + ".w.exp"
    assert "removed:$" + EVIL + ".w" in nodes  # the ghost of the folded weight
    groups = [
        g.get("data-group") for g in ET.fromstring(svg).iter(SVG + "g") if g.get("data-group")
    ]
    assert EVIL + ".layer" in groups or EVIL in groups
    details = node_details(graph_payload(step, step.previous))
    assert details[weight]["name"] == EVIL + ".w.exp"
    blob = json_script(details)
    assert (
        "<" not in blob and ">" not in blob and json.loads(blob) == json.loads(json.dumps(details))
    )


def test_escape_replaces_control_characters_and_cuts():
    assert esc("a\x00b\x1bc") == "a\ufffdb\ufffdc"
    assert esc("x" * 100, 10) == "x" * 9 + "…"
    assert esc("<&\"'>") == "&lt;&amp;&quot;&#x27;&gt;"


def test_large_graph_collapses_groups_to_fit(base_trace):
    step = base_trace[0]
    assert len(step.graph.nodes) > 600
    view = graph_view(step)
    assert 50 <= view.box_count <= MAX_BOXES
    assert view.collapsed == default_collapsed(step)
    svg = graph_svg(step)
    nodes = svg_nodes(svg)
    assert len(nodes) == view.box_count
    groups = {k: g for k, g in nodes.items() if k.startswith("group:")}
    assert groups and all(g.get("data-group") in view.collapsed for g in groups.values())
    # a collapsed group: its path, its op counts and its weights
    box = groups[
        "group:main/"
        + next(iter(sorted(p for p in view.collapsed if p.startswith("features.5.1"))))
    ]
    lines = texts(box)
    assert lines[0].startswith("features.5.1") and "ops:" in lines[1]
    assert any("params" in t for t in lines)
    # expanding one group shows its nodes
    one = box.get("data-group")
    wider = graph_view(step, collapsed=view.collapsed - {one})
    assert wider.box_count > view.box_count
    members = [
        k
        for k, b in wider.box_of.items()
        if b == k
        and step.graph.nodes.get(k) is not None
        and step.graph.nodes[k].group.startswith(one)
    ]
    assert members
    # a smaller budget collapses more coarsely
    assert graph_view(step, max_boxes=60).box_count <= 60


def test_fused_functions_are_hidden_behind_their_calls(base_trace):
    step = base_trace["fuse-ops"]
    view = graph_view(step, step.previous)
    assert view.box_count <= MAX_BOXES
    hidden = {c for c in view.collapsed if c.startswith("@")}
    assert len(hidden) > 100 and "@main" not in hidden
    dot = graph_dot(step, step.previous)
    assert "<B>@fused_matmul_add_gelu</B>" in dot and "matmul, add, gelu" in dot


def test_layouts_are_cached_per_view_and_shared_by_equal_graphs(convnext_trace):
    cache = LAYOUTS
    cache.clear()
    step = convnext_trace["fold-constant"]
    first = graph_svg(step, step.previous)
    assert (cache.misses, cache.hits, cache.layout_runs) == (1, 0, 1)
    assert graph_svg(step, step.previous) is first  # a revisit
    assert (cache.misses, cache.hits, cache.layout_runs) == (1, 1, 1)
    graph_svg(step, step.previous, collapsed={"features"})  # another view state
    assert (cache.misses, cache.layout_runs) == (2, 2)
    # an unchanged pass shows the same module: its plain graph reuses the layout
    dce = convnext_trace["dead-code-elimination"]
    assert dce.status == "unchanged" and dce.previous is step
    graph_svg(step)
    runs = cache.layout_runs
    assert graph_svg(dce) == graph_svg(step)
    assert cache.layout_runs == runs and cache.misses == 4


def test_node_details(convnext_trace):
    """What the details drawer shows about a node (the payload's details)."""
    step = convnext_trace["fold-constant"]
    payload = graph_payload(step, step.previous)
    details = node_details(payload)
    assert set(details) == {n["id"] for n in payload["nodes"]}
    w = details["$features.0.0.weight"]
    data = step.graph.nodes["$features.0.0.weight"].obj.data
    assert w["kind"] == "weight" and w["type"] == "f32[8, 3, 4, 4]" and w["nbytes"] == 1536
    assert w["preview"] == pytest.approx(data.reshape(-1)[:8].tolist())
    assert w["min"] == pytest.approx(float(data.min())) and w["std"] == pytest.approx(
        float(data.std()), rel=1e-5
    )
    conv = details["main/conv2d"]
    assert conv["title"] == "conv2d" and conv["attrs"]["strides"] == "[4, 4]"
    assert conv["provenance"] == {"module": "features.0.0"}
    ids = [n["id"] for n in payload["nodes"]]
    inputs = [ids[s] for s, t, _ty, flags in payload["edges"] if ids[t] == "main/conv2d"]
    assert inputs == ["main/x", "$features.0.0.weight", "$features.0.0.bias"]
    changed = [v for v in details.values() if v["status"] == "changed"]
    assert changed and all(v["change"] for v in changed)
    assert any(k.startswith("removed:") and v["status"] == "removed" for k, v in details.items())


# ----- tables ---------------------------------------------------------------------------------


def test_param_table_names_broadcast_copies_and_totals(broadcast_trace):
    step = broadcast_trace["fold-constant"]
    rows = param_rows(step, step.previous)
    by_name = {r["name"]: r for r in rows}
    bloat = by_name["linear.weight.permute_dims.broadcast_to"]
    assert bloat["status"] == "56 copies of linear.weight (transposed)" and bloat["bloat"]
    assert rows[0] is bloat  # the bloat first
    assert by_name["linear.weight"]["status"] == "removed" and rows[-1]["status"] == "removed"
    assert by_name["linear.bias"]["status"] == ""
    table = param_table_html(step, step.previous)
    assert "56 copies of linear.weight" in table and "pl-s-bloat" in table
    assert f'data-v="{56 * 512 * 128 * 4}"' in table  # bytes sort as numbers
    assert "(was 264.2 kB, +14.4 MB)" in table and "onclick=" in table


def test_param_table_statuses(mlp_trace):
    step = mlp_trace["fold-constant"]
    rows = {r["name"]: r["status"] for r in param_rows(step, step.previous)}
    assert rows["layers.0.weight.permute_dims"] == "layers.0.weight transposed"
    assert rows["layers.0.weight"] == "removed" and rows["layers.0.bias"] == ""
    # without a baseline: only duplicates and copies within the step
    assert all(s == "" for s in (r["status"] for r in param_rows(step)))


def test_param_table_finds_duplicates_without_a_baseline():
    import explorer
    from compiler.ir import parse

    data = np.arange(64, dtype=np.float32)
    module = parse(
        """
weights {
  $a: f32[64]
  $b: f32[64]
  $c: f32[4, 64]
}
def @main(%x: f32[64]) -> f32[4, 64] attrs {num_input = 1} {
  %y: f32[64] = add(%x, $a)
  %z: f32[64] = multiply(%y, $b)
  %t: f32[4, 64] = add(%z, $c)
  return %t
}
""",
        params={"a": data, "b": data.copy(), "c": np.tile(data, (4, 1))},
    )
    step = explorer.explore(module, pipeline="dce")[0]
    rows = {r["name"]: r["status"] for r in param_rows(step)}
    assert rows == {"a": "", "b": "duplicate of a", "c": "4 copies of a"}
    assert "duplicate of a" in param_table_html(step)


def test_shape_table_lists_changes_and_report_mismatches_first(mlp_trace):
    step = mlp_trace["decompose-ops"]
    table = shape_table_html(step)
    assert "main/matmul" in table and "f32[1, 256]" in table

    @dataclass
    class Finding:
        kind: str
        step: int
        nodes: list
        message: str

    class Report:
        findings = [
            Finding(
                "shape-mismatch",
                step.index,
                ["main/add_1"],
                "annotated f32[1, 128], computed f32[1, 1]",
            )
        ]

    table = shape_table_html(step, Report())
    first_row = table.split("<tbody>")[1].split("</tr>")[0]
    assert "main/add_1" in first_row and "computed f32[1, 1]" in first_row
    assert "1 mismatches" in table


def test_numerics_table_of_a_check_report(checked_trace):
    trace, report = checked_trace
    assert "trace.check" in numerics_table_html(trace[2])
    bad = trace["test-check-flip-add"]
    html = numerics_table_html(bad, report)
    assert "status diverged · max abs error 0.635" in html
    assert "<b>diverged</b>: after test-check-flip-add, layers.0 differs" in html
    rows = html.split("<tbody>")[1].split("</tr>")
    assert "main/subtract" in rows[0] and "layers.0" in rows[0] and "[4, 64]" in rows[0]
    assert len(rows) - 1 == len(report.first_failure.details["node_errors"])
    dce = numerics_table_html(trace["dead-code-elimination"], report)
    assert "same module as #3, its results reused" in dce and "<tbody>" not in dce
    assert "status ok" in numerics_table_html(trace[1], report)
    assert [len(problems_of(report, s)) for s in trace] == [0, 0, 1, 0, 0]


def test_shape_table_of_a_check_report():
    import explorer
    from tests.compiler.passes.test_dynamic_to_static import SEEDS_PAD_SQUEEZE, seeds_input

    trace = explorer.explore(
        SEEDS_PAD_SQUEEZE, (seeds_input(),), pipeline="replica-dynamic-to-static-squeeze"
    )
    report = trace.check()
    html = shape_table_html(trace[1], report)
    first_row = html.split("<tbody>")[1].split("</tr>")[0]
    assert "main/squeezed" in first_row and "but computes f32[13, 1, 1, 1]" in first_row
    assert "1 mismatches against computed shapes" in html


def test_text_diff_side_by_side_and_unified(evil_trace):
    d = evil_trace["fold-constant"].diff()
    both = text_diff_html(d)
    assert "pl-side-by-side" in both and "pl-unified" in both
    assert "<script" not in both and "&lt;script&gt;" in both
    side = text_diff_html(d, mode="side-by-side")
    assert "pl-unified" not in side and re.search(r"class='pl-(del|rep)'", side)
    unified = text_diff_html(d, mode="unified")
    assert "pl-side-by-side" not in unified and "+++ #1 fold-constant" in unified
    same = evil_trace[0].diff(evil_trace[0])
    assert "the IR text is the same" in text_diff_html(same)
    with pytest.raises(ValueError, match="mode"):
        text_diff_html(d, mode="columns")


def test_text_diff_cuts_long_equal_runs(convnext_trace):
    d = convnext_trace["decompose-ops"].diff()
    html = text_diff_html(d, mode="side-by-side", context=2)
    assert "pl-skip" in html and re.search(r"… \d+ lines", html)


def test_summary_has_a_row_and_badges_per_step(failed_trace, mlp_trace):
    html = summary_html(mlp_trace)
    rows = re.findall(r"data-step='(\d+)'", html)
    assert rows == [str(i) for i in range(len(mlp_trace))]
    assert "pl-b-unchanged" in html and "+6 nodes" in html and " ms<" in html
    failed = summary_html(failed_trace)
    assert "pl-st-failed" in failed and "pl-b-failed" in failed
    row = {
        "status": "changed",
        "node_delta": -3,
        "param_delta": 2_000_000,
        "kind": "pass",
        "ms": 1.25,
    }
    assert step_badges(row, findings=2) == [
        ("pl-b-changed", "changed"),
        ("pl-b-nodes", "-3 nodes"),
        ("pl-b-grow", "+2.0 MB"),
        ("pl-b-time", "1.2 ms"),
        ("pl-b-finding", "2 findings"),
    ]


def test_ir_text_marks_the_failed_line(failed_trace):
    step = failed_trace.failure
    html = ir_text_html(step)
    marked = re.findall(r"<span class='pl-failed-line'>(.*?)</span>", html)
    assert marked == [esc(step.text.splitlines()[step.failed_line])]
    assert "call @transform" in marked[0]


def test_param_stats_of_integer_and_empty_arrays():
    s = param_stats(np.array([3, 1, 2], dtype=np.int64))
    assert s == {
        "preview": [3.0, 1.0, 2.0],
        "min": 1.0,
        "max": 3.0,
        "mean": 2.0,
        "std": pytest.approx(0.8164966),
    }
    assert param_stats(np.zeros((0,), np.float32)) == {"preview": []}
    assert param_stats(np.array([np.nan, 1.0], np.float32))["preview"][0] == "nan"


def test_backend_steps_show_loop_ir_llvm_ir_and_assembly(monkeypatch, tmp_path):
    import explorer
    from widgets import views
    from widgets.report import write_html

    text = """
def @main(%x: f32[64, 8]) -> f32[64, 8] {
  %e: f32[64, 8] = exp(%x)
  %r: f32[64, 8] = relu(%e)
  return %r
}
"""
    trace = explorer.explore(text, pipeline="fuse-ops,legalize-ops,codegen")
    lowered = views.tab_html(trace["legalize-ops"], "IR")
    assert "<summary>loop IR</summary>" in lowered and "kernel @fused_exp_relu" in lowered
    assert "LLVM IR" not in lowered  # not compiled yet
    compiled = views.tab_html(trace["codegen"], "IR")
    for name in ("graph IR", "loop IR", "LLVM IR", "assembly"):
        assert f"<summary>{name}</summary>" in compiled
    assert "define " in compiled and "<8 x float>" not in compiled  # escaped
    assert "<summary>" not in views.tab_html(trace["fuse-ops"], "IR")  # a graph step: its IR
    monkeypatch.setattr(ir_text, "MAX_TEXT_CHARS", 100)
    cut = views.tab_html(trace["codegen"], "IR")
    assert re.search(r"LLVM IR: the first \d+ of [\d,]+ characters", cut)
    assert "--view 'LLVM IR'" in cut and "the IR: the first" in cut
    monkeypatch.undo()
    path = tmp_path / "r.html"
    write_html(trace, path)
    assert "kernel @fused_exp_relu" in path.read_text()


def test_param_stats_in_chunks_match_numpy(monkeypatch):
    """Mean and std are computed a chunk at a time (no float64 copy of a big weight): the
    same numbers as numpy's over the whole array."""
    import widgets.stats as stats

    monkeypatch.setattr(stats, "CHUNK", 1000)
    x = np.random.default_rng(0).standard_normal((37, 101)).astype(np.float32) * 3 + 1
    got = stats.param_stats(x.T)  # a transposed view, read as it lies in memory
    want = x.astype(np.float64)
    assert got["mean"] == pytest.approx(float(want.mean()), rel=1e-12)
    assert got["std"] == pytest.approx(float(want.std()), rel=1e-12)
