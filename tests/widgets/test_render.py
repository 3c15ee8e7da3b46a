"""The pure rendering functions: the graph payload, node details, tables, IR diff, summary."""

import json
import re
from dataclasses import dataclass

import numpy as np
import pytest

from tests.widgets.conftest import EVIL
from widgets import ir_text
from widgets.escape import esc, json_script
from widgets.findings import problems_of
from widgets.graph_data import graph_payload
from widgets.graph_view import node_details
from widgets.ir_text import ir_text_html, text_diff_html
from widgets.render import step_badges, summary_html
from widgets.stats import param_stats
from widgets.tables_html import (
    numerics_table_html,
    param_rows,
    param_table_html,
    shape_table_html,
)


def _nodes(payload) -> dict[str, dict]:
    return {n["id"]: n for n in payload["nodes"]}


def _groups_of(payload, node) -> list[str]:
    """The ids of the groups a payload node sits in, innermost first."""
    out, g = [], node["g"]
    while g > 0:
        out.append(payload["groups"][g]["id"])
        g = payload["groups"][g]["p"]
    return out


# ----- the graph (the payload the graph component draws) -----------------------------------


def test_ops_show_key_attributes_weights_and_edge_types(convnext_trace):
    step = convnext_trace[0]
    p = graph_payload(step)
    nodes = _nodes(p)
    conv = nodes["main/conv2d"]
    assert conv["t"] == "conv2d" and "strides=[4, 4]" in conv["s"]  # op and key attributes
    grouped = [n for n in p["nodes"] if any(x.startswith("groups=") for x in n["s"])]
    assert grouped and all("groups=1" not in n["s"] for n in grouped)  # dull defaults left out
    # the stem conv's weight, untouched by the step: a line on its reader with type and name
    assert "weight f32[8, 3, 4, 4]" in conv["w"]
    weight = nodes["$features.0.0.weight"]
    assert weight["inl"] == p["nodes"].index(conv) and weight["s"] == ["f32[8, 3, 4, 4]", "1.5 kB"]
    assert nodes["main/x"]["k"] == "input"
    # types on the edges
    types = p["types"]
    into_conv = [types[ty] for s, t, ty, _f in p["edges"] if p["nodes"][t]["id"] == "main/conv2d"]
    assert "f32[1, 3, 32, 32]" in into_conv
    # grouped by source module path
    assert "features" in {g["id"] for g in p["groups"]}
    assert "features.0.0" in _groups_of(p, conv) or "features.0" in _groups_of(p, conv)


def test_diff_marks_added_changed_and_removed_ghosts(mlp_trace):
    step = mlp_trace["decompose-ops"]
    d = step.diff()
    assert d.added and d.removed and d.changed
    nodes = _nodes(graph_payload(step, step.previous))
    assert all(nodes[n.id]["st"] == "added" for n in d.added)
    assert all(nodes[c.after.id]["st"] == "changed" for c in d.changed)
    ghosts = [nodes["removed:" + n.id] for n in d.removed]  # the linear ops, as ghosts
    assert {g["st"] for g in ghosts} == {"removed"} and {g["t"] for g in ghosts} == {"linear"}
    touched = {n.id for n in d.added} | {c.after.id for c in d.changed}
    assert all("st" not in nodes[i] for i in step.graph.nodes if i not in touched)
    # no baseline, or an unchanged pass: no statuses at all
    assert not any("st" in n for n in graph_payload(step)["nodes"])
    same = mlp_trace["infer-types"]
    assert not any("st" in n for n in graph_payload(same, same.previous)["nodes"])


def test_failed_node_is_marked_and_stays_visible(failed_trace):
    step = failed_trace.failure
    failed_id = step.graph.node_of(step.failed_node).id
    p = graph_payload(step, step.previous, max_boxes=3)  # a view too small for the graph
    failed = [n for n in p["nodes"] if n.get("st") == "failed"]
    assert [n["id"] for n in failed] == [failed_id]
    assert failed[0]["t"] == "@transform"  # the call the replica asserted on
    # the view opens on it, and none of its groups starts collapsed
    assert p["nodes"][p["focus"]]["id"] == failed_id
    assert not set(_groups_of(p, failed[0])) & set(p["collapsed"])


def test_names_from_the_model_are_data_and_json_scripts_escape_them(evil_trace):
    step = evil_trace["fold-constant"]
    p = graph_payload(step, step.previous)
    nodes = _nodes(p)
    weight = "$" + EVIL + ".w.exp"
    assert weight in nodes and "removed:$" + EVIL + ".w" in nodes  # the folded weight's ghost
    assert {EVIL + ".layer", EVIL} & {g["id"] for g in p["groups"]}
    details = node_details(p)
    assert details[weight]["name"] == EVIL + ".w.exp"
    blob = json_script(p)  # as the report and the snapshot embed it
    assert "<" not in blob and ">" not in blob and "&" not in blob
    assert json.loads(blob) == json.loads(json.dumps(p))


def test_escape_replaces_control_characters_and_cuts():
    assert esc("a\x00b\x1bc") == "a\ufffdb\ufffdc"
    assert esc("x" * 100, 10) == "x" * 10 + "… (90 more characters)"
    assert esc("x" * 5000) == "x" * 1000 + "… (4,000 more characters)"  # every text, by default
    assert esc("x" * 5000, None) == "x" * 5000
    assert esc("<&\"'>") == "&lt;&amp;&quot;&#x27;&gt;"


def test_escape_of_every_character_is_html_escape_of_it_made_safe():
    # esc returns a text with nothing to change as it is: every character, alone and beside
    # others, comes out as html.escape of it with the control characters replaced
    import html

    control = {*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, *range(0xD800, 0xE000)}
    for code in range(0x3000):
        c = chr(code)
        safe = "\ufffd" if code in control else c
        assert esc(c) == html.escape(safe, quote=True), hex(code)
        assert esc(f"a{c}b") == html.escape(f"a{safe}b", quote=True), hex(code)


def test_fused_functions_are_groups_under_their_calls(base_trace):
    step = base_trace["fuse-ops"]
    p = graph_payload(step, step.previous)
    functions = {g["id"] for g in p["groups"] if g["k"] == "function"}
    assert len(functions) > 100 and "@main" not in functions
    call = next(n for n in p["nodes"] if n["t"] == "@fused_matmul_add_gelu")
    assert call["k"] == "call"
    inside = p["groups"][
        p["groups"].index(next(g for g in p["groups"] if g["id"] == "@fused_matmul_add_gelu"))
    ]
    assert "matmul" in inside["ops"] and "gelu" in inside["ops"]


def test_a_payload_is_remembered_per_step_baseline_and_view(convnext_trace):
    step = convnext_trace["fold-constant"]
    first = graph_payload(step, step.previous)
    assert graph_payload(step, step.previous) is first  # a revisit
    assert graph_payload(step, step.previous, max_boxes=20) is not first  # another first view
    assert graph_payload(step) is not first


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


def test_the_side_by_side_makes_no_unified_diff(evil_trace):
    d = evil_trace["fold-constant"].diff()
    assert not d.text_same
    side = text_diff_html(d, mode="side-by-side")
    assert "pl-side-by-side" in side and "text_diff" not in vars(d)  # (a cached property)
    assert "+++ #1 fold-constant" in text_diff_html(d, mode="unified")
    assert evil_trace[0].diff(evil_trace[0]).text_same


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


def test_a_transposed_weight_takes_the_statistics_of_its_array(monkeypatch):
    """A pass's ``w.T`` (or a reshape) reads the same values in the same order as ``w``: its
    statistics are ``w``'s, computed once, with its own first values; a view that is not
    all of an array (a slice, a broadcast, a flip) is computed on its own."""
    import widgets.stats as stats

    read: list[int] = []
    real = stats._min_max_mean_std
    monkeypatch.setattr(
        stats, "_min_max_mean_std", lambda flat: read.append(flat.size) or real(flat)
    )
    w = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32) * 2 + 0.5
    base = stats.cached_stats(w)
    for view in (w.T, w.reshape(48, 64), w.ravel(), w.reshape(8, 8, 48).transpose(2, 0, 1)):
        got = stats.cached_stats(view)
        assert got == {**stats.param_stats(view), "preview": got["preview"]}
        assert {k: got[k] for k in ("min", "max", "mean", "std")} == {
            k: base[k] for k in ("min", "max", "mean", "std")
        }
        assert got["preview"] == [float(v) for v in view.flat[:8]]
    assert read.count(w.size) == 1 + 4  # w once here; param_stats(view) above, 4 times
    for other in (w[:32], w[::-1], np.broadcast_to(w[:1], (64, 48)), w[:, :24].T):
        assert stats.whole_view_of(other) is other
        assert stats.cached_stats(other) == stats.param_stats(other)


def test_param_stats_min_max_of_nan_and_inf():
    s = param_stats(np.array([1.0, np.nan, 3.0], np.float32))
    assert s["min"] == "nan" and s["max"] == "nan"
    s = param_stats(np.array([-np.inf, 2.0, 5.0], np.float32))
    assert s["min"] == "-inf" and s["max"] == 5.0
