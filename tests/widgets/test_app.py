"""The Panel app driven through its state (no browser), ``serve`` and ``passlens serve``."""

import re
import urllib.request
from pathlib import Path

import pytest

import passlens
from passlens.cli import main
from tests.widgets.serving import passlens_serve
from tests.widgets.test_report import boxes_at_first
from widgets import views
from widgets.app import GraphPane, PassApp, build_app, serve
from widgets.boxes import MAX_BOXES

ROOT = Path(__file__).parents[2]


def test_build_app_returns_a_layout_holding_the_app(mlp_trace):
    import panel as pn

    layout = build_app(mlp_trace)
    assert isinstance(layout, pn.layout.Panel) and isinstance(layout.passlens_app, PassApp)
    app = layout.passlens_app
    # no check, no failure: it opens on the first pass that changed the module
    first = "<PassApp step 5/9: decompose-ops>"
    assert app.index == 5 and app.tab == "graph" and repr(app) == first
    assert "#5 decompose-ops" in app.header.object


def test_next_prev_and_the_timeline(mlp_trace):
    app = PassApp(mlp_trace)
    rows = re.findall(r"<div class='pl-step-row.*?</div>", app.timeline.rows)
    assert len(rows) == len(mlp_trace) and "data-step='5'" in rows[5]
    assert re.findall(r"<span class='pl-badge [^']*'>([^<]*)</span>", rows[5])[:2] == [
        "changed",
        "+6 nodes",
    ]
    assert "pl-st-unchanged" in rows[2] and "infer-types" in rows[2]
    app.index = 0
    assert app.prev_button.disabled and not app.next_button.disabled
    app.next()
    assert app.index == 1 and app.timeline.index == 1 and "#1 default" in app.header.object
    app.next_button.clicks += 1  # what a click in the browser does
    assert app.index == 2 and not app.prev_button.disabled
    app.prev()
    app.prev()
    app.prev()  # nothing before the first step
    assert app.index == 0
    app.timeline.index = 6  # a click on a step of the timeline
    assert app.index == 6 and "#6 fold-constant" in app.header.object
    app.index = len(mlp_trace) - 1
    assert app.next_button.disabled
    with pytest.raises(IndexError):
        app.index = len(mlp_trace)


def test_hide_unchanged(mlp_trace):
    app = PassApp(mlp_trace)
    app.index = 2  # infer-types, unchanged
    app.hide_unchanged = True
    assert app.timeline.hidden == [2, 3, 4, 7] and app.visible == [0, 1, 5, 6, 8]
    assert app.index == 5 and app.timeline.index == 5  # moved to the next listed step
    app.next()
    app.next()
    app.next()
    assert app.index == 8 and app.next_button.disabled
    app.prev()
    assert app.index == 6
    app.hide_box.value = False
    assert app.timeline.hidden == [] and app.index == 6


def statuses(payload: dict) -> set:
    return {n.get("st", "") for n in payload["nodes"]} - {""}


def test_graphs_and_tabs_follow_the_step(mlp_trace):
    app = PassApp(mlp_trace)
    app.index = 0
    assert isinstance(app.graph, GraphPane) and app.graph.data["before"] is None  # step 0
    fold = mlp_trace["fold-constant"]
    app.index = fold.index
    after, before = app.graph.data["after"], app.graph.data["before"]
    assert after["step"] == {"index": fold.index, "name": "fold-constant"}
    assert before["step"] == {"index": 5, "name": "decompose-ops"}
    assert "added" in statuses(after) and statuses(before) == set()
    assert app.graph.mode == "after" and app.graph.collapsed == after["collapsed"]
    assert app.panes["params"].object == ""  # rendered when shown
    app.tab = "params"
    assert "layers.0.weight transposed" in app.panes["params"].object
    app.tab = "IR diff"
    assert "pl-side-by-side" in app.panes["IR diff"].object
    app.tab = "shapes"
    assert "main/matmul" in app.panes["shapes"].object
    assert "numerics" not in app.tab_names  # numerics only with a check report
    with pytest.raises(ValueError, match="no tab 'numerics'"):
        app.tab = "numerics"
    app.tab = "params"
    assert [app.panes[t].visible for t in app.tab_names].count(True) == 1
    assert app.panes["params"].visible and not app.graph.visible  # the tab shown, only
    data = app.graph.data
    app.next()  # the shown tab follows the step; the graph waits until shown
    assert "(was 940.6 kB, ±0 B)" in app.panes["params"].object
    assert app.graph.data is data
    app.tab = "graph"
    assert app.graph.data["after"]["step"]["index"] == 7
    assert statuses(app.graph.data["after"]) == set()


def test_selecting_a_node_and_expanding_a_group(convnext_trace, base_trace):
    app = PassApp(convnext_trace)
    app.index = convnext_trace["fold-constant"].index
    assert app.selected_details == {}
    app.graph.selected = "main/conv2d"  # what a click in the browser syncs back
    info = app.selected_details
    assert info["title"] == "conv2d" and info["attrs"]["strides"] == "[4, 4]"
    assert info["provenance"]["module"] == "features.0.0" and info["type"] == "f32[1, 8, 8, 8]"
    app.graph.mode = "before"  # the toggle, synced back
    app.next()
    assert app.graph.selected == "" and app.graph.mode == "after"  # a new step, a fresh view
    assert app.graph.details["main/conv2d"]["status"] == ""
    # a large graph starts collapsed; a double-click on a group expands it
    pane = GraphPane()
    assert pane.details == {} and pane.selected_details == {}
    pane.show(base_trace[0])
    assert pane.collapsed and pane.collapsed == pane.data["after"]["collapsed"]
    assert boxes_at_first(pane.data["after"]) <= MAX_BOXES
    group = pane.collapsed[0]
    pane.expand(group)
    assert group not in pane.collapsed and len(pane.details) == len(pane.data["after"]["nodes"])


def test_a_failed_trace_opens_on_the_failure(failed_trace):
    app = PassApp(failed_trace)
    fail = failed_trace.failure
    assert app.index == fail.index
    assert "AssertionError" in app.header.object
    failed = [n["id"] for n in app.graph.data["after"]["nodes"] if n.get("st") == "failed"]
    assert failed == [fail.graph.node_of(fail.failed_node).id]


def test_a_check_report_adds_findings_and_numerics(checked_trace):
    trace, report = checked_trace
    app = PassApp(trace, report=report)
    rows = re.findall(r"<div class='pl-step-row.*?</div>", app.timeline.rows)
    assert [("1 finding" in x) for x in rows] == [False, False, True, False, False]
    app.index = 2
    assert "diverged" in app.header.object
    app.tab = "numerics"
    assert "main/subtract" in app.panes["numerics"].object


def test_shared_navigation():
    visible = [0, 1, 5, 6, 8]
    assert views.next_index(visible, 1) == 5 and views.next_index(visible, 8) is None
    assert views.prev_index(visible, 5) == 1 and views.prev_index(visible, 0) is None
    assert views.nearest_index(visible, 3) == 5 and views.nearest_index(visible, 9) == 8
    assert views.nearest_index([], 3) == 3
    with pytest.raises(ValueError, match="no tab"):
        views.tab_html(None, "graph")


def test_serve_in_a_thread(mlp_trace, tmp_path):
    path = tmp_path / "t.passlens"
    mlp_trace.save(path)
    with serve(str(path), block=False) as srv:  # a saved trace, served on a free port
        assert re.fullmatch(r"http://localhost:\d+/", srv.url) and srv.port > 0
        page = urllib.request.urlopen(srv.url, timeout=30).read().decode()
        assert "passlens: default" in page and "bokeh" in page
        assert len(srv.apps) == 1 and srv.apps[0].trace.pipeline == "default"
    assert not srv.thread.is_alive()


def test_serve_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such trace file"):
        serve(tmp_path / "missing.passlens", block=False)


@pytest.mark.parametrize(
    "name, content, fragment",
    [
        ("missing.passlens", None, "no such trace file"),
        ("bad.passlens", b"not a zip", "not a passlens trace file"),
    ],
)
def test_passlens_serve_errors(capsys, tmp_path, name, content, fragment):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    assert main(["serve", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("passlens: error: ") and fragment in err and err.count("\n") == 1


def test_passlens_serve_prints_the_url_and_stops_on_ctrl_c(mlp_trace, tmp_path):
    path = tmp_path / "t.passlens"
    mlp_trace.save(path)
    with passlens_serve(path) as (url, _port, line):
        assert re.search(r"serving 9 steps at http://localhost:\d+/ \(Ctrl-C to stop\)", line)
        page = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "passlens: default" in page


def test_passlens_serve_wraps_the_app(mlp_trace):
    with passlens.serve(mlp_trace, port=0, block=False) as srv:
        assert urllib.request.urlopen(srv.url, timeout=30).status == 200


def test_names_from_the_model_are_escaped(evil_trace):
    from tests.widgets.conftest import EVIL

    app = PassApp(evil_trace, title=EVIL)
    app.index = 1
    texts = [app.header.object, app.layout[0].object, app.timeline.rows]
    app.tab = "params"
    texts.append(app.panes["params"].object)
    assert not any("<script>" in t for t in texts)
    assert "&lt;script&gt;" in app.layout[0].object
    # the graph is data, set as text by the component (see test_app_browser)
    assert any(EVIL in str(info.get("name", "")) for info in app.graph.details.values())


def test_the_header_escapes_a_failed_function_name(failed_trace):
    import copy

    from tests.widgets.conftest import EVIL
    from widgets import views

    step = copy.copy(failed_trace.failure)  # the trace's own step stays as it is
    step.failed_function = EVIL
    row = {r["step"]: r for r in failed_trace.summary()}[step.index]
    head = views.header_html(step, row)
    assert "<script>" not in head and "&lt;script&gt;alert(1)&lt;/script&gt;" in head
