"""The self-contained HTML report."""

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import widgets
from tests.widgets.conftest import EVIL
from widgets.boxes import MAX_BOXES
from widgets.report import report_html, write_html
from widgets.tables_html import SORT_ONCLICK

STATIC = Path(widgets.__file__).parent / "static"
SVG_NS = "http://www.w3.org/2000/svg"  # createElementNS's name, never fetched


def data_of(text: str) -> dict:
    blob = re.search(r'<script type="application/json" id="pl-data">(.*?)</script>', text, re.S)
    return json.loads(blob.group(1))


def payloads(text: str) -> dict[int, dict]:
    """The graph payloads (``<script type="application/json" id="pl-g{k}">``) by ``k``."""
    found = re.findall(r'<script type="application/json" id="pl-g(\d+)">(.*?)</script>', text, re.S)
    return {int(k): json.loads(blob) for k, blob in found}


def templates(text: str) -> dict[int, str]:
    return {
        int(i): c for i, c in re.findall(r'<template id="pl-t(\d+)">(.*?)</template>', text, re.S)
    }


def payload_of(text: str, index: int) -> dict:
    """The payload of the graph step ``index`` shows."""
    return payloads(text)[data_of(text)["steps"][index]["graph"]]


def boxes_at_first(payload: dict) -> int:
    """How many boxes the component draws at first: nodes (not drawn on a reader) outside
    every collapsed group, and the outermost collapsed groups."""
    groups, closed = payload["groups"], set(payload["collapsed"])

    def shown(g: int) -> bool:
        while g > 0:
            if groups[g]["id"] in closed:
                return False
            g = groups[g]["p"]
        return True

    nodes = sum(1 for n in payload["nodes"] if "inl" not in n and shown(n["g"]))
    return nodes + sum(
        1 for g in range(1, len(groups)) if groups[g]["id"] in closed and shown(groups[g]["p"])
    )


class _Elements(HTMLParser):
    """The script elements of a page (their attributes and content) and its text outside them,
    as a browser's parser sees them."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict, str]] = []
        self.text: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []  # (tag, name, value)
        self._in_script: dict | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)
        else:
            self.text.append(data)


def test_one_self_contained_file_with_every_step(convnext_trace, tmp_path):
    out = tmp_path / "run.html"
    size = write_html(convnext_trace, out)
    assert list(tmp_path.iterdir()) == [out] and size == out.stat().st_size
    text = out.read_text()
    # nothing fetched: no URL anywhere (the SVG namespace is a name, not a download), no
    # external script, style, image or link; links only inside the page
    assert set(re.findall(r"[a-z][a-z0-9+.-]*://[^\s\"'<>)]*", text, re.I)) == {SVG_NS}
    assert "<link" not in text and "@import" not in text
    assert set(re.findall(r"url\(([^)]*)\)", text)) <= {"#${me}-${mk}"}  # arrow markers
    page = _Elements(text)
    assert [
        (t, k, v) for t, k, v in page.attrs if k in ("src", "href") and not v.startswith("#")
    ] == []
    assert all(a.get("type") == "application/json" or not a for a, _ in page.scripts)
    # every step in the timeline and in the data
    rows = re.findall(r"class='pl-step-row pl-st-(\w+)' data-step='(\d+)'", text)
    assert [int(i) for _, i in rows] == list(range(len(convnext_trace)))
    assert [st for st, _ in rows] == [s.status for s in convnext_trace]
    data = data_of(text)
    assert [s["name"] for s in data["steps"]] == [s.name for s in convnext_trace]
    for s in convnext_trace:
        assert f">{s.name}<" in text
    # badges: node delta and time
    assert "+10 nodes" in text and "-5 nodes" in text and " ms</span>" in text
    # the graph component and its layout are in the page
    assert "const PasslensGraph" in text and "PasslensLayout" in text
    assert size < 1_500_000, f"report of the small ConvNeXt is {size} bytes"


def test_unchanged_steps_reuse_the_graph_and_pieces_are_stored_once(convnext_trace):
    text = report_html(convnext_trace)
    data, pieces, graphs = data_of(text), templates(text), payloads(text)
    own = [s for s in data["steps"] if not s["plain"]]
    assert sorted(graphs) == list(range(len(graphs)))
    assert len(graphs) == len({s["graph"] for s in own}) == len(own)
    assert len(own) == sum(s.status != "unchanged" for s in convnext_trace)
    for i, (entry, step) in enumerate(zip(data["steps"], convnext_trace, strict=True)):
        if step.status == "unchanged":
            owner = data["steps"][entry["owner"]]
            assert entry["plain"] and entry["graph"] == owner["graph"] and not owner["plain"]
            assert convnext_trace[entry["owner"]].shown_module is step.shown_module
            assert entry["panes"]["ir"] == owner["panes"]["ir"]  # the same IR text, stored once
        else:
            assert entry["owner"] == i
            assert graphs[entry["graph"]]["step"] == {"index": i, "name": step.name}
    assert len(pieces) == len(set(pieces.values()))  # nothing stored twice
    blobs = re.findall(r'<script type="application/json" id="pl-g\d+">(.*?)</script>', text, re.S)
    assert len(blobs) == len(set(blobs))
    # fold-constant's payload: every node of its graph, ghosts of what it removed, details
    step = convnext_trace["fold-constant"]
    fold = payload_of(text, step.index)
    assert fold["baseline"] == {"index": step.previous.index, "name": step.previous.name}
    ids = {n["id"] for n in fold["nodes"]}
    removed = {n["id"] for n in fold["nodes"] if n.get("st") == "removed"}
    assert ids - removed == set(step.graph.nodes)
    assert removed and all(r.startswith("removed:") for r in removed)
    assert {r[len("removed:") :] for r in removed} <= set(step.previous.graph.nodes)
    i = next(k for k, n in enumerate(fold["nodes"]) if n["id"] == "main/conv2d")
    conv, info = fold["nodes"][i], fold["details"][i]
    assert conv["k"] == "op" and conv["t"] == "conv2d" and "st" not in conv
    assert info["attrs"]["strides"] == "[4, 4]" and info["provenance"] == {"module": "features.0.0"}
    statuses = {n.get("st") for n in fold["nodes"]}
    assert {"changed", "added", "removed"} <= statuses
    added = [n for n in fold["nodes"] if n.get("st") == "added"]
    assert added and all(n["k"] == "weight" for n in added)  # the transposed weights
    assert fold["changes"] and fold["focus"] in fold["changes"]
    assert [fold["nodes"][k].get("st") for k in fold["changes"]].count(None) == 0
    # an unchanged step's entry has no graph of its own and no diff colours
    dce = data["steps"][convnext_trace["dead-code-elimination"].index]
    assert dce["plain"] and dce["owner"] == step.index


def test_failed_step_report(failed_trace):
    text = report_html(failed_trace)
    data = data_of(text)
    fail = failed_trace.failure
    assert data["start"] == fail.index
    entry = data["steps"][fail.index]
    assert entry["status"] == "failed" and "AssertionError" in entry["error"]
    assert "in @main_transform_params" in entry["error"]
    failed_id = fail.graph.node_of(fail.failed_node).id
    payload = payload_of(text, fail.index)
    failed = [n["id"] for n in payload["nodes"] if n.get("st") == "failed"]
    assert failed == [failed_id]
    assert "pl-failed-line" in templates(text)[entry["panes"]["ir"]]
    assert "failed at #2 replica-lazy-transform-params" in text


def test_model_names_cannot_inject_markup(evil_trace):
    text = report_html(evil_trace)
    page = _Elements(text)
    # the only scripts: the JSON blobs and the report's own code (no script from a name)
    kinds = [a.get("type", "code") for a, _ in page.scripts]
    assert kinds.count("code") == 1 and set(kinds) == {"code", "application/json"}
    assert [a.get("id") for a, _ in page.scripts if a] == [
        *(f"pl-g{k}" for k in range(len(payloads(text)))),
        "pl-data",
    ]
    assert "alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # the names are text of the page (its templates are parsed as text too)
    assert any(EVIL in t for t in page.text)
    # every JSON blob parses and keeps the names as they are
    for attrs, body in page.scripts:
        if attrs.get("type") == "application/json":
            json.loads(body)
    names = {str(d.get("name", "")) for p in payloads(text).values() for d in p["details"]} | {
        n["t"] for p in payloads(text).values() for n in p["nodes"]
    }
    assert EVIL in names and EVIL + ".w" in names


def test_report_with_a_check_report(checked_trace):
    trace, report = checked_trace
    text = report_html(trace, report=report)
    assert '<button data-tab="numerics">' in text
    assert "id='pl-banner'" in text and "diverged at #2 test-check-flip-add" in text
    rows = re.findall(r"<div class='pl-step-row.*?</div>", text)
    assert [("1 finding<" in r) for r in rows] == [False, False, True, False, False]
    data, pieces = data_of(text), templates(text)
    assert data["start"] == 2  # opens on the first finding
    assert "layers.0 differs" in pieces[data["steps"][2]["panes"]["numerics"]]
    assert data["steps"][2]["finding"].startswith("diverged: ")
    assert "numerics" not in data_of(report_html(trace))["steps"][2]
    # the finding on the graph: the first divergence outlined, errors for the overlay
    graph = payload_of(text, 2)
    bad = [n for n in graph["nodes"] if n.get("bad")]
    assert [n["id"] for n in bad] == ["main/subtract"] and bad[0]["mark"] == "first divergence"
    assert graph["focus"] == graph["nodes"].index(bad[0])
    assert sum("err" in n for n in graph["nodes"]) >= 2
    plain = payload_of(report_html(trace), 2)
    assert not any(n.get("bad") or "err" in n for n in plain["nodes"])


def test_trace_to_html(mlp_trace, tmp_path):
    out = tmp_path / "mlp.html"
    assert mlp_trace.to_html(out) == out and out.stat().st_size > 0
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert len(data_of(text)["steps"]) == len(mlp_trace)
    assert "pl-params" in text and "pl-side-by-side" in text and "plSort(this)" in text
    assert SORT_ONCLICK not in text  # one shared sort function, not one per header


def test_large_model_report_stays_collapsed_and_small(base_trace):
    text = report_html(base_trace)
    graphs = payloads(text)
    assert len(graphs) == sum(s.status != "unchanged" for s in base_trace)
    for payload in graphs.values():
        assert payload["collapsed"] and boxes_at_first(payload) <= MAX_BOXES
    # fewer boxes asked for: more collapsed, down to the groups holding the focus
    few = payloads(report_html(base_trace, max_boxes=40))
    for k, payload in few.items():
        assert len(payload["collapsed"]) >= len(graphs[k]["collapsed"])
        groups, chain, g = payload["groups"], set(), -1
        if payload["focus"] is not None:
            g = payload["nodes"][payload["focus"]]["g"]
        while g > 0:
            chain.add(groups[g]["id"])
            g = groups[g]["p"]
        every_other = {x["id"] for x in groups[1:]} - chain
        assert boxes_at_first(payload) <= 40 or set(payload["collapsed"]) == every_other
    assert len(text.encode()) < 10_000_000


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(
    "name",
    [
        "report",
        "graph_esm",
        "app_esm",
        "timeline.js",
        "layer_map.js",
        "map_view_esm",
        "tabs_esm",
        "tab_bar_esm",
    ],
)
def test_front_end_scripts_parse(name, tmp_path):
    from widgets.frame import tabs_esm
    from widgets.graph_view import graph_esm, graph_js, graph_panel_esm
    from widgets.stepper import MapView, TabBar

    sources = {
        # what the report inlines, in its order (one classic script)
        "report": "\n".join(
            ((STATIC / "frame.js").read_text(), graph_js(), (STATIC / "report.js").read_text())
        ),
        "graph_esm": graph_esm(),  # the Jupyter GraphView's module
        "app_esm": graph_panel_esm(),  # the Panel GraphPane's module
        "timeline.js": (STATIC / "timeline.js").read_text(),
        "layer_map.js": (STATIC / "layer_map.js").read_text(),  # the Panel MapPane's module
        "map_view_esm": MapView._esm,  # the Jupyter MapView's: the same under a shim
        "tabs_esm": tabs_esm(),  # the Panel TabBar's module
        "tab_bar_esm": TabBar._esm,  # the Jupyter TabBar's
    }
    script = tmp_path / (name + ".js" if name == "report" else name.replace(".js", "") + ".mjs")
    script.write_text(sources[name])
    result = subprocess.run(
        ["node", "--check", str(script)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr


def test_a_report_with_nothing_to_find_opens_on_the_first_change():
    """No failure and no finding: the report (and the app, views.start_index) opens on the
    first pass that changed the module, not on the source graph."""
    import explorer
    from compiler import models
    from widgets.views import start_index

    trace = explorer.explore(models.mlp((8, 16, 4), batch=2, seed=0))
    report = trace.check()
    assert report.findings == []
    changed = [s for s in trace.steps if s.kind == "pass" and s.status == "changed"]
    start = data_of(report_html(trace, report=report))["start"]
    assert start == start_index(trace, report) > 0
    assert trace[start].kind == "pass" and trace[start].status == "changed"
    assert trace[start].name != "default"  # a pass of its own, not the pipeline holding it
    assert start == min(s.index for s in changed if s.name != "default")


def test_the_report_diffs_each_pair_of_steps_once_and_shares_the_panes_of_one_module(
    monkeypatch,
):
    # the timeline's badges read no op counts: no diff of their own beside the one the
    # header, the tables and the graph share; and a pass that changed nothing prints no IR
    # and tabulates no shapes again
    import importlib

    import explorer
    from compiler import models
    from compiler.ir import printer
    from widgets import tables_html

    diff_module = importlib.import_module("explorer.diff")  # (explorer.diff: the function)
    trace = explorer.explore(models.mlp())
    made: list[tuple[int, int]] = []
    real_diff = diff_module._diff
    monkeypatch.setattr(
        diff_module,
        "_diff",
        lambda a, b, ga, gb: made.append((a.index, b.index)) or real_diff(a, b, ga, gb),
    )
    printed: list[int] = []
    real_module = printer.Printer.module
    monkeypatch.setattr(
        printer.Printer, "module", lambda self, m: printed.append(id(m)) or real_module(self, m)
    )
    tables: list[int] = []
    real_table = tables_html._shape_table
    monkeypatch.setattr(
        tables_html,
        "_shape_table",
        lambda step, *a: tables.append(step.index) or real_table(step, *a),
    )
    text = report_html(trace)
    assert made and len(made) == len(set(made))
    assert len(printed) == len(set(printed)) == len({id(s.shown_module) for s in trace.steps})
    unchanged = [s for s in trace.steps if s.status == "unchanged"]
    assert len(unchanged) >= 3
    # (an unchanged pass after an unchanged pass: the same graph against the same graph)
    repeated = [s for s in unchanged if s.previous.status == "unchanged"]
    assert repeated and not {s.index for s in repeated} & set(tables)
    data = data_of(text)
    for s in repeated:
        assert data["steps"][s.index]["panes"]["shapes"] == data["steps"][s.previous.index][
            "panes"
        ]["shapes"]


def test_writing_a_report_imports_no_jupyter_widget_library(tmp_path):
    # the report embeds the graph component's files (widgets.graph_assets), not the Jupyter
    # widget (anywidget and ipywidgets take about a second to import)
    import sys

    code = (
        "import sys, explorer\n"
        "from compiler import models\n"
        "explorer.explore(models.mlp()).to_html(sys.argv[1], progress=False)\n"
        "print(sorted(m for m in ('anywidget', 'ipywidgets', 'traitlets') if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "r.html")],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert (tmp_path / "r.html").stat().st_size > 10_000


def test_steps_showing_equal_graphs_share_one_payload():
    # a pass that returns an equal module of its own (another compiler's passes may) is
    # "changed" by identity; its payload is the step before's, its header aside: one script
    import explorer
    from compiler.ir import parse

    text = """
weights {
  $a: f32[3] = [1.0, 2.0, 3.0]
}
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %e: f32[3] = exp($a)
  %y: f32[2, 3] = add(%x, %e)
  return %y
}
"""
    m0, m1, m2 = parse(text), parse(text), parse(text)
    steps = [
        explorer.Step(0, "import", "module", module=m0),
        explorer.Step(1, "pass", "copy-a", before=m0, module=m1),
        explorer.Step(2, "pass", "copy-b", before=m1, module=m2),
    ]
    trace = explorer.Trace(steps)
    assert [s.status for s in trace.steps] == ["changed"] * 3
    page = report_html(trace)
    data, graphs = data_of(page), payloads(page)
    entries = data["steps"]
    assert not any(e["plain"] for e in entries)
    # (the import's graph too: drawn with nothing changed, it is the same payload)
    assert entries[2]["graph"] == entries[1]["graph"] == entries[0]["graph"] == 0
    assert len(graphs) == 1
    shared = graphs[0]
    assert shared["step"] == {"index": 0, "name": "module"}  # the first step that has it
    assert {n["id"] for n in shared["nodes"]} == set(steps[2].graph.nodes)
    assert not any(n.get("st") for n in shared["nodes"])  # nothing changed, in either step


def test_the_collector_is_paused_while_a_report_is_written(mlp_trace, monkeypatch):
    import gc

    from widgets import tables_html

    seen: list[bool] = []
    real = tables_html._shape_table
    monkeypatch.setattr(
        tables_html, "_shape_table", lambda *a: seen.append(gc.isenabled()) or real(*a)
    )
    tables_html._SHAPE_TABLES.table.clear()
    assert gc.isenabled()
    report_html(mlp_trace)
    assert seen and not any(seen)
    assert gc.isenabled()
    monkeypatch.setattr(tables_html, "_shape_table", lambda *a: 1 / 0)
    tables_html._SHAPE_TABLES.table.clear()
    with pytest.raises(ZeroDivisionError):
        report_html(mlp_trace)  # an error on the way: enabled again after
    assert gc.isenabled()
