"""A graph with no kernel (widgets/snapshot.py): the graph component and a step's payload in one
self-contained page, and that page in a notebook cell's iframe; drawn in headless Chromium."""

import html
import json
import re

import pytest

from widgets.graph_view import graph_data, graph_js
from widgets.snapshot import GraphSnapshot, graph_page, side_by_side


def _payload(page: str) -> dict:
    m = re.search(r"<script type='application/json' id='pl-snapshot'>(.*?)</script>", page)
    return json.loads(m.group(1))


def test_the_page_holds_the_component_and_the_steps_payload(mlp_trace):
    step = mlp_trace["decompose-ops"]
    page = graph_page(step, step.previous)
    data = _payload(page)
    # the payload a live view gets, with the weights' statistics (no kernel to ask for them)
    live = graph_data(step, step.previous, stats=True)
    assert data["after"] == json.loads(json.dumps(live["after"]))
    assert data["before"] == json.loads(json.dumps(live["before"]))
    assert data["fit"] is False
    assert any("mean" in d for d in data["after"]["details"])  # a weight's statistics
    assert graph_js() in page and "<title>#" in page
    # nothing from the network
    assert not re.search(r"""(src|href)=["']?https?:""", page)


def test_height_and_fit_are_checked_and_kept(mlp_trace):
    step = mlp_trace[0]
    assert "height:300px" in graph_page(step, height=300)
    assert _payload(graph_page(step, fit=True))["fit"] is True
    for bad in (0, 99, 4001, 300.5, "300", True):
        with pytest.raises(ValueError, match="height"):
            GraphSnapshot(step, height=bad)
    with pytest.raises(TypeError, match="GraphSnapshot"):
        side_by_side(step)


def test_in_a_notebook_cell_the_page_is_an_iframe(mlp_trace):
    a, b = mlp_trace[0], mlp_trace["decompose-ops"]
    snap = GraphSnapshot(b, a, height=320)
    cell = snap._repr_html_()
    assert cell.startswith("<iframe ") and "height:324px" in cell
    srcdoc = re.search(r'srcdoc="([^"]*)"', cell).group(1)
    assert html.unescape(srcdoc) == snap.page
    row = side_by_side(GraphSnapshot(a), snap)._repr_html_()
    assert row.count("<iframe ") == 2 and "display:flex" in row
    assert repr(snap) == f"<GraphSnapshot #{b.index} {b.name}>"


@pytest.mark.browser
def test_the_snapshot_is_drawn_with_no_kernel(browser, mlp_trace, tmp_path):
    from tests.widgets.graph_page import Graph, expect
    from tests.widgets.test_browser import LOCAL

    step = mlp_trace["decompose-ops"]
    problems = []
    for fit in (False, True):
        path = tmp_path / f"snapshot_{fit}.html"
        path.write_text(graph_page(step, step.previous, height=500, fit=fit))
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.on("pageerror", lambda e: problems.append(f"error: {e}"))
        page.on("request", lambda r: None if r.url.startswith(LOCAL) else problems.append(r.url))
        page.goto(path.as_uri())
        g = Graph(page, page.locator("#pl-graph"))
        expect(g.root).to_have_attribute("data-draw-ms", re.compile(r"\d"))
        expect(g.root.locator("g.plg-s-added").first).to_be_attached()
        expect(g.root.locator("g.plg-s-removed").first).to_be_attached()  # ghosts of linears
        if fit:  # the whole graph in view: every box inside the stage
            page.wait_for_function("window.passlensGraph.view.k < 1")
            stage = g.stage.bounding_box()
            for box in g.root.locator("g.plg-n").all():
                b = box.bounding_box()
                assert stage["y"] <= b["y"] and b["y"] + b["height"] <= stage["y"] + stage["height"]
        else:  # as the component opens a graph: readable, at zoom 1
            assert page.evaluate("window.passlensGraph.view.k") == 1
        page.close()
    # in a notebook cell's output: the iframe draws it too
    page = browser.new_page(viewport={"width": 1300, "height": 800})
    page.set_content(side_by_side(GraphSnapshot(step.previous), GraphSnapshot(step))._repr_html_())
    frames = [f for f in page.frames if f is not page.main_frame]
    assert len(frames) == 2
    for f in frames:
        f.wait_for_selector("#pl-graph[data-draw-ms]")
        assert f.locator("#pl-graph g.plg-n").count() > 0
    page.close()
    assert problems == []
