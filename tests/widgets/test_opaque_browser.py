"""In headless Chromium: an opaque op (no converter, run by torch / onnxruntime) is drawn with
its own mark in the report's graph, says so in its tooltip and details, and has a legend entry."""

import pytest

import explorer
from compiler.ir import parse
from tests.compiler.opaque.test_opaque import CUMMAX
from tests.widgets.graph_page import Graph
from tests.widgets.test_browser import expect, open_report

pytestmark = pytest.mark.browser


def test_an_opaque_op_has_its_own_mark_tooltip_and_details(browser, tmp_path):
    trace = explorer.explore(parse(CUMMAX), pipeline="fold-constant")
    page, problems = open_report(browser, trace, tmp_path / "opaque.html")
    g = Graph(page, page.locator("#pl-graph.plg"))
    marked = g.root.locator("g.plg-n.plg-opaque")
    expect(marked).to_have_count(2)  # cummax (in its module's group, opened) and cumsum
    titles = marked.evaluate_all("gs => gs.map((g) => g.querySelector('.plg-title').textContent)")
    # cummax is alone in its module: titled by the module's name, the op beneath (issue 43)
    assert sorted(titles) == ["aten.cumsum.default", "scan"]
    texts = marked.evaluate_all("gs => gs.map((g) => g.textContent)")
    assert any("scan" in t and "aten.cummax.default" in t for t in texts), texts
    tips = marked.evaluate_all("gs => gs.map((g) => g.querySelector(':scope > title').textContent)")
    assert all(t.endswith("opaque: run by torch, no converter") for t in tips)
    dash = marked.first.evaluate(
        "g => getComputedStyle(g.querySelector('.plg-shape')).strokeDasharray"
    )
    assert dash not in ("", "none")
    plain = g.root.locator("g.plg-n.plg-k-op:not(.plg-opaque)").first
    assert plain.evaluate(
        "g => getComputedStyle(g.querySelector('.plg-shape')).strokeDasharray"
    ) in (
        "",
        "none",
    )
    marked.first.click()
    expect(g.details.locator(".plg-d-opaque")).to_have_text("opaque: run by torch, no converter")
    legend = g.root.locator(".plg-legend")
    assert "opaque (no converter)" in legend.text_content()
    assert problems == []
