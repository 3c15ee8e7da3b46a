"""The Panel app in headless Chromium: served from a thread on a free port, stepped through,
the graphs and tables checked as they change, a node clicked and its details read, nothing
loaded from the network. Skipped where Chromium or Playwright is missing."""

import pytest

from tests.widgets.test_browser import ARGS, CHROMIUM, sync_api
from widgets.app import serve

pytestmark = pytest.mark.browser

expect = sync_api.expect


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def app_page(browser):
    """Open a served trace: ``open(trace) -> (page, server, problems)``."""
    opened = []

    def open_(trace, **options):
        srv = serve(trace, block=False, **options)
        page = browser.new_page(viewport={"width": 1400, "height": 950})
        opened.append((srv, page))
        page.set_default_timeout(15000)
        expect.set_options(timeout=15000)
        problems = []
        page.on("pageerror", lambda e: problems.append(f"error: {e}"))
        local = (srv.url.rstrip("/"), "blob:", "data:", "about:")
        page.on("request", lambda r: None if r.url.startswith(local) else problems.append(r.url))
        page.goto(srv.url)
        page.locator(".pl-gv-canvas svg").nth(1).wait_for()
        return page, srv, problems

    yield open_
    for srv, page in opened:
        page.close()
        srv.stop()


def wait_until(page, predicate, what: str, timeout_ms: int = 15000) -> None:
    """Poll a Python-side condition (state synced from the browser) without fixed sleeps
    of the test's own: Playwright's wait_for_timeout lets the page's events run."""
    for _ in range(timeout_ms // 50):
        if predicate():
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"timed out waiting for {what}")


def test_step_through_the_app(app_page, convnext_trace, tmp_path):
    page, srv, problems = app_page(convnext_trace)
    title = page.locator(".pl-step-title")
    before, after = page.locator(".pl-gv-canvas").nth(0), page.locator(".pl-gv-canvas").nth(1)
    details = page.locator(".pl-gv-details").nth(1)
    expect(title).to_have_text("#0 module")
    expect(page.locator(".pl-before-title")).to_contain_text("no previous step")
    first = after.inner_html()
    # next: the header and the graph change
    page.locator(".pl-next button").click()
    expect(title).to_have_text("#1 default")
    expect(page.locator(".pl-graph-title").nth(1)).to_have_text("after: #1 default")
    expect(after.locator("g.pl_added").first).to_be_visible()
    assert after.inner_html() != first
    # the arrow keys step through the timeline
    page.keyboard.press("ArrowDown")
    expect(title).to_have_text("#2 infer-types")
    expect(page.locator(".pl-step-row.pl-current")).to_have_attribute("data-step", "2")
    # pick fold-constant in the timeline: new weights (transposed) are added, ghosts removed
    page.locator(".pl-step-row[data-step='6']").click()
    expect(title).to_have_text("#6 fold-constant")
    expect(page.locator(".pl-graph-title").nth(0)).to_have_text("before: #5 decompose-ops")
    expect(after.locator("g.pl_added.pl_k_weight").first).to_be_visible()
    assert after.locator("g.pl_removed").count() > 0
    assert before.locator("g.pl_added").count() == 0  # the before graph has no diff colours
    page.screenshot(path=str(tmp_path / "app-graph.png"))
    # click a node of the after graph: its details, and the selection synced to Python
    after.locator("g[data-node-id='main/conv2d']").click()
    expect(details).to_contain_text("strides=[4, 4]")
    expect(details).to_contain_text("features.0.0")
    expect(details).to_contain_text("f32[1, 8, 8, 8]")
    app = srv.apps[0]
    wait_until(page, lambda: app.after.selected == "main/conv2d", "the selection in Python")
    assert app.selected_details["op"] == "conv2d" and app.index == 6
    page.screenshot(path=str(tmp_path / "app-details.png"))
    # search in the after graph
    page.locator(".pl-gv-bar input").nth(1).fill("layer_norm")
    expect(after.locator("g.pl-hit")).to_have_count(5)
    # the params table, then the next step's table
    page.locator(".bk-tab", has_text="params").click()
    params = page.locator(".pl-params")
    expect(params).to_contain_text("transposed")
    page.locator(".pl-next button").click()
    expect(title).to_have_text("#7 dead-code-elimination")
    expect(params).not_to_contain_text("transposed")
    expect(params.locator("tfoot")).to_contain_text("±0 B")
    # the IR diff of the step before
    page.locator(".pl-prev button").click()
    page.locator(".bk-tab", has_text="IR diff").click()
    expect(page.locator(".pl-side-by-side")).to_be_visible()
    page.screenshot(path=str(tmp_path / "app-diff.png"))
    # hide unchanged passes: the timeline lists the changed steps; next skips #7
    page.locator(".bk-tab", has_text="graph").click()
    page.locator(".pl-hide input[type=checkbox]").check()
    expect(page.locator(".pl-step-row:visible")).to_have_count(5)
    expect(page.locator(".pl-step-row[data-step='7']")).to_be_hidden()
    page.locator(".pl-next button").click()
    expect(title).to_have_text("#8 fuse-ops")
    expect(after.locator("g.pl_k_call").first).to_be_visible()
    assert problems == []


def test_a_collapsed_group_expands_on_double_click(app_page, base_trace, tmp_path):
    page, srv, problems = app_page(base_trace)
    before = page.locator(".pl-gv-canvas").nth(0)
    page.locator(".pl-step-row[data-step='1']").click()
    expect(page.locator(".pl-step-title")).to_contain_text("#1 ")
    group = before.locator("g.pl_node[data-group]").first
    path = group.get_attribute("data-group")
    group.click()
    expect(page.locator(".pl-gv-details").nth(0)).to_contain_text("Double-click")
    group.dblclick()
    expect(before.locator(f"g.pl_node[data-group='{path}']")).to_have_count(0)
    assert path not in srv.apps[0].before.collapsed
    page.screenshot(path=str(tmp_path / "app-expanded.png"))
    assert problems == []
