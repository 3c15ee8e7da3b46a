"""The Panel app in headless Chromium: served from a thread on a free port, stepped through,
the graph and tables checked as they change, a node clicked and its details read (and synced
to Python), a collapsed group expanded, names from the model kept as text, nothing loaded
from the network. Skipped where Chromium or Playwright is missing."""

import re

import pytest

from tests.widgets.conftest import EVIL
from tests.widgets.graph_page import Graph, wait_until
from tests.widgets.test_browser import TRAP, sync_api
from widgets.app import serve
from widgets.views import start_index

pytestmark = pytest.mark.browser

expect = sync_api.expect
DIFF = "g.plg-s-added, g.plg-s-changed, g.plg-s-removed"


@pytest.fixture
def app_page(browser):
    """Open a served trace: ``open(trace) -> (page, server, problems, graph)``."""
    opened = []

    def open_(trace, **options):
        srv = serve(trace, block=False, **options)
        page = browser.new_page(viewport={"width": 1400, "height": 950})
        opened.append((srv, page))
        page.set_default_timeout(15000)
        expect.set_options(timeout=15000)
        problems = []
        page.add_init_script(TRAP)
        page.on("pageerror", lambda e: problems.append(f"error: {e}"))
        page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
        local = (srv.url.rstrip("/"), "blob:", "data:", "about:")
        page.on("request", lambda r: None if r.url.startswith(local) else problems.append(r.url))
        page.goto(srv.url)
        page.locator(".plg g.plg-n").first.wait_for()
        return page, srv, problems, Graph(page, page.locator(".plg"))

    yield open_
    for srv, page in opened:
        page.close()
        srv.stop()


def test_step_through_the_app(app_page, convnext_trace, tmp_path):
    page, srv, problems, g = app_page(convnext_trace)
    title = page.locator(".pl-step-title")
    start = start_index(convnext_trace)  # no check: the first pass that changed the module
    expect(title).to_have_text(f"#{start} {convnext_trace[start].name}")
    page.locator(".pl-step-row[data-step='0']").click()
    expect(title).to_have_text("#0 module")
    expect(g.root.locator(".plg-mode")).to_be_hidden()  # no previous step: no before side
    expect(g.node("main/conv2d")).to_have_count(1)
    first = g.boxes
    # next: the header and the graph change
    page.locator(".pl-next button").click()
    expect(title).to_have_text("#1 default")
    expect(g.root.locator("g.plg-s-added").first).to_be_visible()
    expect(g.root.locator(".plg-mode")).to_be_visible()
    assert g.boxes != first
    # the arrow keys step through the timeline
    page.keyboard.press("ArrowDown")
    expect(title).to_have_text("#2 infer-types")
    expect(page.locator(".pl-step-row.pl-current")).to_have_attribute("data-step", "2")
    # pick fold-constant in the timeline: new weights (transposed) are added, ghosts removed
    page.locator(".pl-step-row[data-step='6']").click()
    expect(title).to_have_text("#6 fold-constant")
    added = g.root.locator("g.plg-s-added.plg-k-weight")
    expect(added.first).to_be_visible()
    expect(g.root.locator("g.plg-s-removed")).to_have_count(10)
    # the before side: the previous step's graph, what this step removes marked, no ghosts
    g.root.locator(".plg-before").click()
    expect(g.root).to_have_attribute("data-mode", "before")
    expect(g.root.locator("g.plg-s-added")).to_have_count(0)
    expect(g.root.locator("g.plg-n[data-node-id^='removed:']")).to_have_count(0)
    folded = g.node("main/permute_dims_3")
    expect(folded).to_have_class(re.compile(r"\bplg-s-removed\b"))
    # the weight it reads, removed too, is a box of its own there (once: not also a line)
    weight = g.node("$features.1.0.block.3.weight")
    expect(weight).to_have_class(re.compile(r"\bplg-s-removed\b"))
    expect(folded).not_to_contain_text("weight f32[32, 8]")
    app = srv.apps[0]
    wait_until(page, lambda: app.graph.mode == "before", "the side in Python")
    g.root.locator(".plg-after").click()
    expect(g.root).to_have_attribute("data-mode", "after")
    expect(g.node("removed:main/permute_dims_3")).to_have_class(re.compile(r"plg-s-removed"))
    expect(g.node("removed:$features.1.0.block.3.weight")).to_have_count(1)
    page.screenshot(path=str(tmp_path / "app-graph.png"))
    # click a node: its details, and the selection synced to Python
    g.go_to("main/conv2d")
    g.node("main/conv2d").click()
    details = g.details
    expect(details.locator(".plg-d-title")).to_have_text("conv2d")
    expect(details).to_contain_text("[4, 4]")
    expect(details).to_contain_text("features.0.0")
    expect(details).to_contain_text("f32[1, 8, 8, 8]")
    wait_until(page, lambda: app.graph.selected == "main/conv2d", "the selection in Python")
    assert app.selected_details["attrs"]["strides"] == "[4, 4]" and app.index == 6
    page.screenshot(path=str(tmp_path / "app-details.png"))
    # search
    assert g.search("layer_norm") == 5
    expect(g.root.locator("g.plg-hit")).to_have_count(5)
    g.search("")
    # the params table, then the next step's table
    page.locator(".pl-tabs button[data-tab=params]").click()
    params = page.locator(".pl-params")
    expect(params).to_contain_text("transposed")
    page.locator(".pl-next button").click()
    expect(title).to_have_text("#7 dead-code-elimination")
    expect(params).not_to_contain_text("transposed")
    expect(params.locator("tfoot")).to_contain_text("±0 B")
    # the IR diff of the step before
    page.locator(".pl-prev button").click()
    page.locator(".pl-tabs button[data-tab=diff]").click()
    expect(page.locator(".pl-side-by-side")).to_be_visible()
    page.screenshot(path=str(tmp_path / "app-diff.png"))
    # back to the graph: an unchanged step shows no diff colours
    page.locator(".pl-next button").click()
    expect(title).to_have_text("#7 dead-code-elimination")
    page.locator(".pl-tabs button[data-tab=graph]").click()
    expect(g.root.locator("g.plg-n").first).to_be_visible()
    wait_until(page, lambda: app.graph.data["after"]["step"]["index"] == 7, "step 7's graph")
    expect(g.root.locator(DIFF)).to_have_count(0)
    # hide unchanged passes: the timeline lists the changed steps; next skips #7
    page.locator(".pl-prev button").click()
    expect(title).to_have_text("#6 fold-constant")
    page.locator(".pl-hide input[type=checkbox]").check()
    expect(page.locator(".pl-step-row:visible")).to_have_count(5)
    expect(page.locator(".pl-step-row[data-step='7']")).to_be_hidden()
    page.locator(".pl-next button").click()
    expect(title).to_have_text("#8 fuse-ops")
    expect(g.root.locator("g.plg-k-call").first).to_be_visible()
    assert problems == []


def test_a_collapsed_group_expands_on_double_click(app_page, base_trace, tmp_path):
    page, srv, problems, g = app_page(base_trace)
    # the app opens on the first change; the import is opened from the source graph
    page.locator(".pl-step-row[data-step='0']").click()
    expect(page.locator(".pl-step-title")).to_contain_text("#0 ")
    page.locator(".pl-step-row[data-step='1']").click()
    expect(page.locator(".pl-step-title")).to_contain_text("#1 ")
    app = srv.apps[0]
    wait_until(page, lambda: app.graph.data["after"]["step"]["index"] == 1, "step 1's graph")
    expect(g.root.locator("g.plg-s-added").first).to_be_visible()  # drawn in the browser
    collapsed = app.graph.data["after"]["collapsed"]
    assert collapsed and g.boxes <= 300
    expect(g.root.locator("g.plg-n.plg-group").first).to_be_visible()
    # a collapsed group in view (the view opens on the first change)
    groups = g.root.locator("g.plg-n.plg-group")
    g.settle()
    group = next(groups.nth(k) for k in range(groups.count()) if g.inside(groups.nth(k)))
    path = group.get_attribute("data-group")
    assert path in collapsed
    group.click()
    expect(g.details.locator(".plg-d-title")).to_be_visible()
    expect(g.details.locator(".plg-d-table")).to_contain_text(path)
    expect(g.details.locator("button", has_text="expand")).to_be_visible()
    boxes = g.boxes
    group.dblclick()
    expect(g.group(path)).to_have_count(0)
    expect(g.root.locator(f"g.plg-frame[data-group='{path}']")).to_have_count(1)
    assert g.boxes > boxes
    wait_until(page, lambda: path not in app.graph.collapsed, "the expanded group in Python")
    # and a double-click on its frame's label collapses it again
    g.root.locator(f"g.plg-frame[data-group='{path}'] text.plg-frame-label").dblclick()
    expect(g.group(path)).to_have_count(1)
    wait_until(page, lambda: path in app.graph.collapsed, "the collapsed group in Python")
    assert g.boxes == boxes
    page.screenshot(path=str(tmp_path / "app-expanded.png"))
    assert problems == []


def test_names_from_the_model_stay_text_in_the_app(app_page, evil_trace):
    page, srv, problems, g = app_page(evil_trace, title=EVIL)
    expect(page.locator("h2", has_text="alert(1)")).to_have_text(EVIL)
    page.locator(".pl-step-row[data-step='1']").click()
    expect(page.locator(".pl-step-title")).to_have_text("#1 fold-constant")
    weight = g.node(f"${EVIL}.w.exp")
    expect(weight).to_have_count(1)
    texts = "ts => ts.map((t) => t.textContent)"
    assert EVIL + ".w.exp" in weight.locator("text").evaluate_all(texts)
    expect(g.root.locator("text.plg-frame-label")).to_have_text(f"⊟ {EVIL}.layer")
    weight.click()
    expect(g.details.locator(".plg-d-title")).to_have_text(EVIL + ".w.exp")
    app = srv.apps[0]
    wait_until(page, lambda: app.graph.selected == f"${EVIL}.w.exp", "the selection in Python")
    assert g.search("<script>") == 5  # the input; the add, the weight and 2 ghosts by module
    page.locator(".pl-tabs button[data-tab=params]").click()
    expect(page.locator(".pl-params")).to_contain_text(EVIL)
    assert page.evaluate("window.__alerts") == []
    assert page.locator(".plg script, .pl-params script, .plg img").count() == 0
    assert not re.search(r"<script>alert", page.locator(".pl-step-title").inner_html())
    assert problems == []


# the top (in the viewport) of the first text shown in a pane (its shadow root's, for a Panel
# component); null while there is none
FIRST_TEXT = """(host) => {
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) { const t = walk(el.shadowRoot); if (t !== null) return t; }
      if (el.tagName === "STYLE" || el.tagName === "SCRIPT") continue;
      const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      const r = el.getBoundingClientRect();
      if (own && r.width > 0 && r.height > 0) return r.top;
    }
    return null;
  };
  return walk(host.shadowRoot || host);
}"""


def test_each_tab_hides_the_graph_and_shows_its_content_at_the_top(app_page, checked_trace):
    """Issue 43: after a click on the rewrites or params tab the graph stayed on screen and
    the tab's content started about 960 px down, below the fold."""
    trace, report = checked_trace
    page, srv, problems, g = app_page(trace, report=report)
    app = srv.apps[0]
    keys = [v.key for v in app.views]
    assert keys[0] == "graph" and {"rewrites", "params", "numerics", "error-map"} <= set(keys)
    bar = page.locator(".pl-tabs")
    height = page.viewport_size["height"]
    for key in [*keys[1:], "graph", *keys[1:2]]:
        page.locator(f".pl-tabs button[data-tab='{key}']").click()
        pane = page.locator(f".pl-pane-{key}")
        expect(pane).to_be_visible()
        if key == "graph":
            expect(g.root.locator("g.plg-n").first).to_be_visible()
            for other in keys[1:]:
                expect(page.locator(f".pl-pane-{other}")).to_be_hidden()
            continue
        expect(g.root).to_be_hidden()  # the graph's host is hidden, not only left behind
        wait_until(page, lambda p=pane: p.evaluate(FIRST_TEXT) is not None, f"{key}'s content")
        tabs, top = bar.bounding_box(), pane.evaluate(FIRST_TEXT)
        # its first line right under the tab bar, at the top of the viewport
        assert 0 <= top - (tabs["y"] + tabs["height"]) < 40, (key, tabs, top)
        assert top < height / 4, (key, top)
        for other in keys[1:]:
            if other != key:
                expect(page.locator(f".pl-pane-{other}")).to_be_hidden()
    assert page.evaluate("window.scrollY") == 0
    assert problems == []
