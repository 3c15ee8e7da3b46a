"""In headless Chromium: the HTML report (stepping, the graph and tables changing, node
details, no network) and GraphView's front end driven through a stand-in for the anywidget
model. Skipped where Chromium or Playwright is missing (Debian: ``apt-get install chromium``;
never ``playwright install``)."""

import json
import shutil
from pathlib import Path

import pytest

from widgets.graph_view import GraphView
from widgets.report import write_html

pytestmark = pytest.mark.browser

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")
if CHROMIUM is None:
    pytest.skip("chromium is not installed", allow_module_level=True)

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


LOCAL = ("file:", "blob:", "data:", "about:")
STATIC = Path(__file__).parents[2] / "widgets" / "static"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def open_report(browser, trace, path):
    write_html(trace, path)
    page = browser.new_page(viewport={"width": 1300, "height": 850})
    page.set_default_timeout(5000)
    problems = []
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else problems.append(r.url))
    page.goto(path.as_uri())
    return page, problems


def test_step_through_the_report(browser, convnext_trace, tmp_path):
    page, problems = open_report(browser, convnext_trace, tmp_path / "r.html")
    assert page.inner_text("#pl-title") == "#0 module"
    first = page.inner_html("#pl-canvas")
    page.keyboard.press("ArrowRight")
    assert page.inner_text("#pl-title") == "#1 default"
    assert page.inner_html("#pl-canvas") != first
    page.click("#pl-next")
    page.click("#pl-next")
    assert page.inner_text("#pl-title") == "#3 canonicalize-bindings"  # unchanged: plain graph
    assert page.is_visible("#pl-note") and "same graph as #0" in page.inner_text("#pl-note")
    assert page.eval_on_selector("#pl-canvas", "c => c.classList.contains('pl-plain')")
    # dead-code-elimination changed nothing: fold-constant's graph without its diff colours
    page.click(".pl-step-row[data-step='7']")
    assert "same graph as #6" in page.inner_text("#pl-note")
    ghosts = page.locator("#pl-canvas g.pl_removed")
    assert ghosts.count() > 0 and not ghosts.first.is_visible()
    fill = "g => getComputedStyle(g.querySelector('path, polygon, ellipse')).fill"
    assert page.eval_on_selector("#pl-canvas g.pl_added.pl_k_weight", fill) == "rgb(243, 229, 245)"
    page.click(".pl-step-row[data-step='6']")
    assert ghosts.first.is_visible()
    assert page.eval_on_selector("#pl-canvas g.pl_added.pl_k_weight", fill) == "rgb(200, 230, 201)"
    # hide unchanged passes: next skips dead-code-elimination
    page.check("#pl-hide")
    assert not page.is_visible(".pl-step-row[data-step='7']")
    page.click(".pl-step-row[data-step='6']")
    assert page.inner_text("#pl-title") == "#6 fold-constant"
    page.click("#pl-next")
    assert page.inner_text("#pl-title") == "#8 fuse-ops"
    page.keyboard.press("ArrowLeft")
    assert page.inner_text("#pl-title") == "#6 fold-constant"
    page.screenshot(path=str(tmp_path / "graph.png"))
    # click a node: its details come from the JSON blob
    page.click("#pl-canvas g[data-node-id='main/conv2d']")
    details = page.inner_text("#pl-details")
    assert "conv2d" in details and "features.0.0" in details and "strides=[4, 4]" in details
    page.click("#pl-canvas g.pl_changed >> nth=0")
    assert "changed" in page.inner_text("#pl-details")
    # the IR diff and the parameter table of this step, sorted by bytes
    page.click("#pl-tabs button[data-tab=diff]")
    assert page.is_visible("#pl-pane-diff .pl-side-by-side")
    page.click("#pl-tabs button[data-tab=params]")
    assert "transposed" in page.inner_text("#pl-pane-params")
    page.click("#pl-pane-params th:has-text('bytes')")
    page.click("#pl-pane-params th:has-text('bytes')")  # descending
    first_row = page.inner_text("#pl-pane-params tbody tr:first-child")
    assert "features.3.0.block" in first_row and "4.1 kB" in first_row
    page.screenshot(path=str(tmp_path / "params.png"))
    # search highlights nodes
    page.click("#pl-tabs button[data-tab=graph]")
    page.fill("#pl-search", "layer_norm")
    assert page.locator("#pl-canvas g.pl-hit").count() == 5
    assert problems == []


def test_failed_report_opens_on_the_failure(browser, failed_trace, tmp_path):
    page, problems = open_report(browser, failed_trace, tmp_path / "f.html")
    assert page.inner_text("#pl-title") == "#2 replica-lazy-transform-params"
    assert "AssertionError" in page.inner_text("#pl-error")
    page.click("#pl-canvas g.pl_failed")
    assert "@transform" in page.inner_text("#pl-details")
    page.click("#pl-tabs button[data-tab=ir]")
    assert "call @transform" in page.inner_text("#pl-pane-ir .pl-failed-line")
    page.screenshot(path=str(tmp_path / "failed.png"))
    assert problems == []


# The part of anywidget's model API a widget's render() uses, over a plain object.
HOST = """
<div id="root" style="width:1000px"></div>
<script type="module">
const state = %(state)s, listeners = {};
window.saved = [];
const model = {
  get: (k) => state[k],
  set: (k, v) => { state[k] = v; (listeners["change:" + k] || []).forEach((f) => f()); },
  on: (event, f) => { (listeners[event] = listeners[event] || []).push(f); },
  save_changes: () => { window.saved.push(JSON.parse(JSON.stringify(state))); },
};
window.model = model;
const url = URL.createObjectURL(new Blob([%(esm)s], { type: "text/javascript" }));
const widget = (await import(url)).default;
widget.render({ model, el: document.getElementById("root") });
window.ready = true;
</script>
"""


def test_graph_view_front_end(browser, convnext_trace, tmp_path):
    step = convnext_trace["fold-constant"]
    view = GraphView(step, step.previous)
    state = {k: getattr(view, k) for k in ("svg", "details", "selected", "query", "collapsed")}
    page = browser.new_page(viewport={"width": 1100, "height": 700})
    page.set_default_timeout(5000)
    problems = []
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else problems.append(r.url))
    esm = (STATIC / "graph_view.js").read_text()
    css = (STATIC / "graph_view.css").read_text()
    html = HOST % {"state": json.dumps(state), "esm": json.dumps(esm)}
    page.set_content(f"<style>{css}</style>{html}")
    page.wait_for_function("window.ready === true")
    # a click selects a node: `selected` is synced back and the details panel shows it
    page.click(".pl-gv-canvas g[data-node-id='main/conv2d']")
    assert page.evaluate("window.saved.at(-1).selected") == "main/conv2d"
    assert "strides=[4, 4]" in page.inner_text(".pl-gv-details")
    view.selected = page.evaluate("window.saved.at(-1).selected")
    assert view.selected_details["op"] == "conv2d"
    # search
    page.fill(".pl-gv-bar input", "matmul")
    assert page.evaluate("window.saved.at(-1).query") == "matmul"
    assert page.locator(".pl-gv-canvas g.pl-hit").count() == 5
    assert page.inner_text(".pl-gv-hint") == "5 found"
    page.fill(".pl-gv-bar input", "")
    assert page.locator(".pl-gv-canvas g.pl-hit").count() == 0
    # Python collapses a group; the front end draws the new SVG; a double-click expands it
    view.collapse("features.1")
    page.evaluate(
        "([svg, details]) => { model.set('details', details); model.set('svg', svg); }",
        [view.svg, view.details],
    )
    group = ".pl-gv-canvas g[data-node-id='group:main/features.1']"
    page.click(group)
    assert "features.1" in page.inner_text(".pl-gv-details") and "Double-click" in page.inner_text(
        ".pl-gv-details"
    )
    page.dblclick(group)
    assert page.evaluate("window.saved.at(-1).collapsed") == []
    page.screenshot(path=str(tmp_path / "graph_view.png"))
    assert problems == []
