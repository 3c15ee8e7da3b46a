"""Issue 43: the overview (the module tree beside the graph) scrolls to the row in focus. On a
32-layer decoder whose change is in ``layers.31`` the row of ``layers.31.self_attn`` sat ~700 px
down a 620 px list, out of sight, in the report and in the Panel app (a redraw of the tree put
the list back at its top). Now, in both and in the Jupyter stepper (the GraphView of
`trace.stepper()`'s graph tab, its ES module under the stand-in for the anywidget model of
tests/widgets/test_browser.py, about as wide as the stepper's step column in JupyterLab), at
1600x1000 in headless Chromium:

- at first view the row in focus (bold) is in the list's view;
- it stays there through redraws (collapse all) and resizes of the page (in the stepper, whose
  graph is as high as its `height` trait, that trait set from Python);
- once the user scrolls the list, a redraw leaves the list where they put it;
- a click in the graph, a locate (a search's result) and ``p`` (to the last change, of another
  stage) bring the row of what they selected into the list's view again.

In the stepper, the step and the node are Python's too: a step shown from Python (the timeline,
next / prev) and a node a map's cell opens (`show_node`) reach the page as the kernel's
updates, and the list follows them as it follows the user; the graph's view made anew (the
graph tab shown again: ipywidgets' Stack renders its selected child only) opens on the selected
node's row.

The Panel app's component is in a shadow root: everything is found through Playwright's
locators (which pierce it), never ``document.querySelector``.
"""

from __future__ import annotations

import pytest

import explorer
from tests.widgets.graph_page import Graph
from tests.widgets.test_browser import LOCAL, host_view, link_kernel, sent_state, sync_api
from tests.widgets.test_scale_models import sm
from widgets.app import serve
from widgets.report import write_html

pytestmark = pytest.mark.browser
expect = sync_api.expect

# about the stepper's step column in JupyterLab 1600 px wide: the cell less its prompt, the
# 280 px timeline and the 8 px gap (the overview opens beside the graph from 1100 px)
STEPPER_WIDTH = 1200

# the deepest row in bold (the focus's or selection's group) against the list's visible part:
# {group, top, bottom, listTop, listBottom, visible}
HERE = """(list) => {
  const rows = list.querySelectorAll('.plg-ov-row.plg-ov-here');
  if (!rows.length) return null;
  const r = rows[rows.length - 1].getBoundingClientRect(), L = list.getBoundingClientRect();
  return { group: rows[rows.length - 1].dataset.group, top: r.top, bottom: r.bottom,
           listTop: L.top, listBottom: L.bottom, scrollTop: list.scrollTop,
           visible: r.height > 0 && r.top >= L.top - 0.5 && r.bottom <= L.bottom + 0.5 };
}"""


@pytest.fixture(scope="module")
def decoder31():
    """32 layers, two experts a layer; fold-constant changes layer 31 only."""
    return sm.decoder(layers=32, experts=2, fold_layer=31)


@pytest.fixture(scope="module")
def convnext12():
    """A ConvNeXt of twelve blocks through the weight-bloat replica, checked: a finding on
    every pointwise layer, from stages.0 to stages.3."""
    import torch

    from tests.compiler.frontend.torch_zoo import ConvNeXt

    torch.manual_seed(0)
    model = ConvNeXt(dims=(8, 16, 16, 16), depths=(3, 3, 3, 3)).eval()
    x = torch.randn(1, 3, 64, 64)
    trace = explorer.explore(model, (x,), pipeline="replica-linear-broadcast,fold-constant")
    return trace, trace.check((x,))


@pytest.fixture(params=["report", "app", "stepper"])
def front(request, browser, tmp_path):
    """``open(trace, report=None) -> (page, graph, problems, resize)`` in the HTML report, the
    Panel app or the stepper, at 1600x1000; ``resize(height)`` makes the page (the stepper's
    graph: its `height` trait) that many px high."""
    servers, pages = [], []

    def open_(trace, report=None):
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        pages.append(page)
        page.set_default_timeout(15000)
        expect.set_options(timeout=15000)
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(f"error: {e}"))

        def resize(height: int) -> None:
            page.set_viewport_size({"width": 1600, "height": height})

        if request.param == "report":
            path = tmp_path / "r.html"
            write_html(trace, path, report=report)
            page.on(
                "request", lambda r: None if r.url.startswith(LOCAL) else problems.append(r.url)
            )
            page.goto(path.as_uri())
            root = page.locator("#pl-graph.plg")
        elif request.param == "app":
            srv = serve(trace, block=False, report=report if report is not None else False)
            servers.append(srv)
            page.goto(srv.url)
            root = page.locator(".plg")
        else:
            stepper = trace.stepper(report if report is not None else False)
            state, buffers = sent_state(stepper.graph)
            page.expose_function("toKernel", lambda content: None)
            host_view(page, state, buffers, width=f"{STEPPER_WIDTH}px")
            root = page.locator("#root .plg")

            def resize(height: int) -> None:  # Python sets the graph's height: 640 px at 1000
                page.evaluate(f"model.set('height', '{round(height * 0.64)}px')")

        g = Graph(page, root)
        g.root.locator("g.plg-n").first.wait_for()
        expect(g.root).to_have_attribute("data-overview", "open")
        g.settle()
        return page, g, problems, resize

    yield open_
    for page in pages:
        page.close()
    for srv in servers:
        srv.stop()


def here(g: Graph) -> dict:
    return g.root.locator(".plg-ov-list").evaluate(HERE)


def wait_here(g: Graph, group: str, what: str) -> dict:
    """The row of ``group`` is the deepest in bold and in the list's view (polled: the list is
    scrolled once the drawing that marks it is made)."""
    h = None
    for _ in range(60):
        h = here(g)
        if h and h["group"] == group and h["visible"]:
            return h
        g.page.wait_for_timeout(50)
    raise AssertionError(f"{what}: the row of {group} is not in the list's view: {h}")


def user_scrolls(page, g: Graph, dy: int) -> None:
    """The mouse wheel over the list (to its top for dy < 0, its bottom for dy > 0)."""
    lst = g.root.locator(".plg-ov-list")
    box = lst.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, dy)
    end = "l.scrollTop === 0" if dy < 0 else "l.scrollTop + l.clientHeight >= l.scrollHeight - 1"
    for _ in range(60):
        if lst.evaluate(f"(l) => {end}"):
            return
        page.wait_for_timeout(50)
    where = lst.evaluate("(l) => [l.scrollTop, l.clientHeight, l.scrollHeight]")
    raise AssertionError(f"the wheel did not scroll the list: {where}")


def user_scrolls_by(page, g: Graph, dy: int) -> int:
    """The mouse wheel over the list, `dy` px down from its top: where it came to rest."""
    lst = g.root.locator(".plg-ov-list")
    box = lst.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, dy)
    last = None
    for _ in range(60):
        frames(page, 2)
        now = lst.evaluate("(l) => l.scrollTop")
        if now > 0 and now == last:
            return now
        last = now
    raise AssertionError(f"the wheel did not scroll the list by {dy} px: {last}")


def frames(page, n: int = 5) -> None:
    """A few frames go by (the list is scrolled, if it is, in the frame after a drawing)."""
    for _ in range(n):
        page.evaluate("() => new Promise((ok) => requestAnimationFrame(() => ok()))")


def test_the_overview_follows_the_focus_far_down_a_decoder(front, decoder31):
    page, g, problems, resize = front(decoder31)
    lst = g.root.locator(".plg-ov-list")
    focus = "model.layers.31.self_attn"
    first = wait_here(g, focus, "first view")
    assert first["scrollTop"] > 0  # (it starts ~700 px down the list)
    # a redraw of the tree (every group collapsed) keeps it in view
    g.root.locator(".plg-collapse-all").click()
    g.settle()
    wait_here(g, focus, "after collapse all")
    # so does a resize of the page that shortens the list, and back
    resize(560)
    g.settle()
    wait_here(g, focus, "after a resize")
    resize(1000)
    g.settle()
    wait_here(g, focus, "after a resize back")
    # the user scrolls the list to its top: a redraw leaves it there
    user_scrolls(page, g, -5000)
    g.root.locator(".plg-collapse-all").click()  # (drawn again, the tree drawn again)
    g.settle(timeout=180_000)  # (slow on a loaded machine)
    frames(page)
    assert lst.evaluate("(l) => l.scrollTop") == 0
    assert not here(g)["visible"]
    # and part way down: a redraw leaves it there too (not put back at its top)
    where = user_scrolls_by(page, g, 300)
    g.root.locator(".plg-collapse-all").click()
    g.settle(timeout=180_000)
    frames(page)
    assert lst.evaluate("(l) => l.scrollTop") == where
    # a locate (a search's result) in layer 0, the list scrolled to its foot: it follows
    user_scrolls(page, g, 5000)
    box = g.root.locator("input.plg-search")
    assert g.search("main/linear") > 1
    box.press("Enter")  # the first hit: q_proj of layer 0
    g.wait_selected("main/linear")
    box.press("Escape")  # the result list closed (it lies over the overview), the selection kept
    expect(g.root.locator(".plg-results")).to_be_hidden()
    wait_here(g, "model.layers.0.self_attn", "after a locate")
    # a click on a node in the graph, the list scrolled away again: it follows
    user_scrolls(page, g, 5000)
    assert not here(g)["visible"]
    node = g.node("main/view")
    g.assert_inside(node, "main/view beside q_proj")
    node.click()
    g.wait_selected("main/view")
    wait_here(g, "model.layers.0.self_attn", "after a click in the graph")
    assert problems == []


def test_the_overview_follows_p_to_the_last_change(front, convnext12):
    trace, report = convnext12
    page, g, problems, _ = front(trace, report)
    lst = g.root.locator(".plg-ov-list")
    start = here(g)
    assert start and start["visible"], start
    g.press("p")  # to the last change: a pointwise layer of stages.3
    expect(g.root.locator("g.plg-n.plg-sel")).to_have_count(1)
    h = None
    for _ in range(60):
        h = here(g)
        if h["group"] != start["group"] and h["visible"]:
            break
        page.wait_for_timeout(50)
    assert h["group"].startswith("stages.3") and h["visible"], h
    assert lst.evaluate("(l) => l.scrollTop") > 0
    g.press("n")  # round to the first change: stages.0's first pointwise layer
    for _ in range(60):
        h = here(g)
        if h["group"].startswith("stages.0") and h["visible"]:
            break
        page.wait_for_timeout(50)
    assert h["group"].startswith("stages.0") and h["visible"], h
    assert problems == []


def test_the_stepper_overview_follows_the_step_and_node_python_shows(browser, decoder31):
    stepper = decoder31.stepper(False)
    start = stepper.index  # fold-constant, where the others open: layer 31 changed
    stepper.index = 0  # the model as it came: nothing in focus far down
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.set_default_timeout(15000)
    expect.set_options(timeout=15000)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.expose_function("toKernel", lambda content: None)
    try:
        g = host_view(page, *sent_state(stepper.graph), width=f"{STEPPER_WIDTH}px")
        link_kernel(page, stepper.graph)
        g.root.locator("g.plg-n").first.wait_for()
        expect(g.root).to_have_attribute("data-overview", "open")
        g.settle()
        # a step shown from Python, the user having scrolled step 0's list: its first view,
        # the list on its row in focus
        user_scrolls(page, g, -5000)
        stepper.index = start
        g.settle()
        wait_here(g, "model.layers.31.self_attn", "a step shown from Python")
        # the user scrolls the list to its top; a map's cell opens a node of layer 31's mlp
        user_scrolls(page, g, -5000)
        assert not here(g)["visible"]
        stepper.show_node(start, "main/linear_478")
        g.wait_selected("main/linear_478")
        wait_here(g, "model.layers.31.mlp.shared_expert", "a node Python selected")
        # and one in another step, the list at its top again
        user_scrolls(page, g, -5000)
        stepper.show_node(start - 1, "main/linear_469")
        g.wait_selected("main/linear_469")
        wait_here(g, "model.layers.31.mlp", "a node of another step Python selected")
        # a node of layer 31 selected on step 0 (its focus at the list's top), then another
        # tab and the graph tab again: ipywidgets' Stack shows its selected child only, so the
        # graph's view is made anew from the model's state, and opens on the selected row
        stepper.show_node(0, "main/linear_478")
        stepper.tab = stepper.tab_names[1]
        stepper.tab = "graph"
        assert stepper.graph.selected == "main/linear_478"
        g = host_view(page, *sent_state(stepper.graph), width=f"{STEPPER_WIDTH}px")
        g.root.locator("g.plg-n").first.wait_for()
        g.settle()
        anew = wait_here(g, "model.layers.31.mlp.shared_expert", "the graph's view made anew")
        assert anew["scrollTop"] > 0  # (far down the list)
        assert problems == []
    finally:
        page.close()
