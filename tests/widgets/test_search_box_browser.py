"""The graph's search box emptied without an input event (its value set by code, as a form
reset or a page's script does): focused again, it showed the old search's result list, its
count and its marks. Now a focus reads what the box holds: an empty box shows no results (and
the front end's `query` is emptied too), a box holding another text shows that text's results.
In headless Chromium, at 1600x1000, in the three front ends of the shared component
(widgets/static/graph/*.js): the HTML report, the Panel app, and the stepper's GraphView (its
ES module under a stand-in for the anywidget model, as tests/widgets/test_browser.py drives
it).
"""

from __future__ import annotations

import pytest

from tests.widgets.graph_page import Graph, wait_until
from tests.widgets.test_browser import host_view, sent_state, sync_api
from widgets.graph_view import GraphView
from widgets.report import write_html

pytestmark = pytest.mark.browser
expect = sync_api.expect


@pytest.fixture(params=["report", "app", "stepper"])
def front(request, browser, convnext_trace, tmp_path):
    """``(graph, query)`` of convnext_trace's fold-constant step in a front end: ``query()``
    is the search the front end's state holds (Python's, for the app and the stepper)."""
    step = convnext_trace["fold-constant"]
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.set_default_timeout(15000)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    srv = None
    if request.param == "report":
        path = tmp_path / "r.html"
        write_html(convnext_trace, path)
        page.goto(path.as_uri() + f"#step-{step.index}")
        g = Graph(page, page.locator("#pl-graph.plg"))
        query = None
    elif request.param == "app":
        from widgets.app import serve

        srv = serve(convnext_trace, block=False, report=False)
        page.goto(srv.url)
        page.locator(f".pl-step-row[data-step='{step.index}']").click()
        expect(page.locator(".pl-step-title")).to_have_text(f"#{step.index} fold-constant")
        g = Graph(page, page.locator(".plg"))
        query = lambda: srv.apps[0].graph.query  # noqa: E731
    else:
        view = GraphView(step, step.previous)
        state, buffers = sent_state(view)
        page.expose_function("toKernel", lambda content: None)
        g = host_view(page, state, buffers)
        query = lambda: page.evaluate("window.saved.length ? window.saved.at(-1).query : null")  # noqa: E731
    g.root.locator("g.plg-n").first.wait_for()
    g.settle()
    yield g, query
    assert problems == []
    page.close()
    if srv is not None:
        srv.stop()


def test_a_search_box_emptied_by_code_shows_no_stale_results_on_focus(front, tmp_path):
    g, query = front
    box = g.root.locator("input.plg-search")
    results = g.root.locator(".plg-results")
    hits = g.root.locator(".plg-hits")
    n = g.search("matmul")
    assert n > 0
    expect(g.root.locator("g.plg-hit")).not_to_have_count(0)
    if query is not None:
        wait_until(g.page, lambda: query() == "matmul", "the query in the front end's state")
    box.press("Escape")  # the list closed, the search kept
    expect(results).to_be_hidden()
    # emptied by code: no input event
    box.evaluate("(b) => { b.value = ''; }")
    box.focus()
    expect(results).to_be_hidden()
    expect(hits).to_have_text("")
    expect(g.root.locator("g.plg-hit")).to_have_count(0)
    if query is not None:
        wait_until(g.page, lambda: query() == "", "the emptied query in the front end's state")
    g.page.screenshot(path=str(tmp_path / "search_emptied.png"))
    # Enter in it goes to no stale hit either
    selected = g.selected
    box.press("Enter")
    expect(results).to_be_hidden()
    assert g.selected == selected
    # another text put in by code: a focus shows that text's results
    box.press("Escape")
    box.evaluate("(b) => { b.value = 'conv2d'; }")
    box.focus()
    expect(results).to_be_visible()
    expect(results.locator(".plg-r-item").first).to_contain_text("conv2d")
    count = int(results.locator(".plg-r-head").get_attribute("data-count"))
    assert count > 0
    expect(hits).to_have_text(f"{count} found")
    # typed: as before
    assert g.search("matmul") == n
