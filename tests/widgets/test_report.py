"""The self-contained HTML report."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from widgets import render
from widgets.report import report_html, write_html

STATIC = Path(render.__file__).parent / "static"


def data_of(text: str) -> dict:
    blob = re.search(r'<script type="application/json" id="pl-data">(.*?)</script>', text, re.S)
    return json.loads(blob.group(1))


def templates(text: str) -> dict[int, str]:
    return {
        int(i): c for i, c in re.findall(r'<template id="pl-t(\d+)">(.*?)</template>', text, re.S)
    }


def test_one_self_contained_file_with_every_step(convnext_trace, tmp_path):
    out = tmp_path / "run.html"
    size = write_html(convnext_trace, out)
    assert list(tmp_path.iterdir()) == [out] and size == out.stat().st_size
    text = out.read_text()
    # nothing fetched: no URL anywhere, no external script, style, image or link
    assert not re.search(r"(src|href)\s*=", text, re.I)
    assert "http" not in text and "<link" not in text and "@import" not in text
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
    assert size < 1_500_000, f"report of the small ConvNeXt is {size} bytes"


def test_unchanged_steps_reuse_the_graph_and_pieces_are_stored_once(convnext_trace):
    text = report_html(convnext_trace)
    data, pieces = data_of(text), templates(text)
    svgs = {i for i, c in pieces.items() if c.startswith("<svg")}
    own = [s for s in data["steps"] if not s["plain"]]
    assert len(svgs) == len({s["svg"] for s in own}) == len(own)
    assert len(own) == sum(s.status != "unchanged" for s in convnext_trace)
    for i, (entry, step) in enumerate(zip(data["steps"], convnext_trace, strict=True)):
        if step.status == "unchanged":
            owner = data["steps"][entry["owner"]]
            assert entry["plain"] and entry["svg"] == owner["svg"] and not owner["plain"]
            assert convnext_trace[entry["owner"]].shown_module is step.shown_module
            assert entry["text"] == owner["text"]  # the same IR text, stored once
        else:
            assert entry["owner"] == i and "nodes" in entry
    assert len(pieces) == len(set(pieces.values()))  # nothing stored twice
    # the SVGs are inline (no namespace URLs) and carry node ids for the details
    fold = data["steps"][convnext_trace["fold-constant"].index]
    svg = pieces[fold["svg"]]
    ids = set(re.findall(r'data-node-id="([^"]*)"', svg))
    assert ids == set(fold["nodes"])
    info = data["objs"][fold["nodes"]["main/conv2d"][0]]
    assert info["op"] == "conv2d" and info["provenance"] == {"module": "features.0.0"}
    assert any(st == "changed" for _, st, _ in fold["nodes"].values())
    assert "pl_added" in svg and "removed:" in svg


def test_failed_step_report(failed_trace):
    text = report_html(failed_trace)
    data = data_of(text)
    fail = failed_trace.failure
    assert data["start"] == fail.index
    entry = data["steps"][fail.index]
    assert entry["status"] == "failed" and "AssertionError" in entry["error"]
    assert "in @main_transform_params" in entry["error"]
    svg = templates(text)[entry["svg"]]
    failed_id = fail.graph.node_of(fail.failed_node).id
    assert re.search(
        rf'class="node pl_node pl_k_call pl_failed" data-node-id="{re.escape(failed_id)}"', svg
    )
    assert "pl-failed-line" in templates(text)[entry["text"]]
    assert "failed at #2 replica-lazy-transform-params" in text


def test_model_names_cannot_inject_markup(evil_trace):
    text = report_html(evil_trace)
    assert text.count("<script") == 2  # the JSON blob and the report's own script
    assert "alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    data = data_of(text)  # the JSON blob parses and keeps the names as they are
    names = {o.get("name") for o in data["objs"]}
    assert any(n and n.startswith("<script>alert(1)</script>") for n in names)


def test_report_with_a_check_report(checked_trace):
    trace, report = checked_trace
    text = report_html(trace, report=report)
    assert '<button data-tab="numerics">' in text and "check: #2 test-check-flip-add" in text
    rows = re.findall(r"<div class='pl-step-row.*?</div>", text)
    assert [("1 finding<" in r) for r in rows] == [False, False, True, False, False]
    data, pieces = data_of(text), templates(text)
    assert "layers.0 differs" in pieces[data["steps"][2]["numerics"]]
    assert "numerics" not in data_of(report_html(trace))["steps"][2]


def test_trace_to_html(mlp_trace, tmp_path):
    out = tmp_path / "mlp.html"
    mlp_trace.to_html(out)
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert len(data_of(text)["steps"]) == len(mlp_trace)
    assert "pl-params" in text and "pl-side-by-side" in text and "plSort(this)" in text
    assert render.SORT_ONCLICK not in text  # one shared sort function, not one per header


def test_large_model_report_stays_collapsed_and_small(base_trace):
    text = report_html(base_trace)
    pieces = templates(text)
    for entry in data_of(text)["steps"]:
        if not entry["plain"]:
            boxes = re.findall(r'<g id="pl_n\d+" class="node', pieces[entry["svg"]])
            assert len(boxes) <= render.MAX_BOXES
    assert len(text.encode()) < 10_000_000


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("name", ["report.js", "graph_view.js"])
def test_front_end_scripts_parse(name, tmp_path):
    script = tmp_path / (name.replace(".js", ".mjs") if name == "graph_view.js" else name)
    script.write_text((STATIC / name).read_text())
    result = subprocess.run(
        ["node", "--check", str(script)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
