"""The notebook front end renders the widgets: JupyterLab served on localhost (token, a free
port, its config in the test's folder), opened in headless Chromium, a notebook displaying
``trace.stepper()`` and a GraphView run in its kernel; the graph component appears, a click on
the stepper's button reaches the kernel and back, a click on a node shows its details and sets
the view's ``selected`` in the kernel.

Why JupyterLab and not an exported notebook with the widget state embedded: ipywidgets'
embedding loads its widget manager (``@jupyter-widgets/html-manager``) from a CDN, which no
installed package ships, and these tests use no network."""

import pytest

from tests.widgets.graph_page import Graph
from tests.widgets.lab import JUPYTER, jupyterlab, run_all
from tests.widgets.test_browser import ARGS, CHROMIUM, sync_api

pytestmark = [pytest.mark.browser, pytest.mark.notebook]

CELLS = [
    "import explorer\nfrom compiler import models\n"
    "trace = explorer.explore(models.mlp())\nstepper = trace.stepper()\nstepper.index = 6\nstepper",
    "from widgets import GraphView\nstep = trace['fold-constant']\n"
    "view = GraphView(step, step.previous)\nview",
    "print('selected:', repr(view.selected), '| stepper at', stepper.index)",
]


ROOM_JS = """(out) => {
  const w = (s) => out.querySelector(s).getBoundingClientRect();
  return {frame: w('.pl-frame').width, side: w('.pl-frame-side').width,
          main: w('.pl-frame-main').width, graph: w('.plg').width, tabs: w('.pl-tabs').height,
          bar: w('.pl-frame-bar').height, header: w('.pl-frame-bar .pl-header').height,
          bar_tops: [...out.querySelectorAll('.pl-frame-bar button, .pl-frame-bar .pl-header')].map(
            (b) => Math.round(b.getBoundingClientRect().top))};
}"""


def stepper_room(stepper) -> dict:
    """Sizes in px of the stepper's parts (its frame, timeline column, step column, graph, tab
    bar height, toolbar height and its header's, the tops of the toolbar's buttons)."""
    return stepper.evaluate(ROOM_JS)


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving a notebook of CELLS: yields the URL opening it."""
    if not JUPYTER.exists():
        pytest.skip("jupyter is not installed in this environment")
    with jupyterlab(tmp_path, CELLS) as url:
        yield url


def test_jupyterlab_renders_the_stepper_and_the_graph_view(lab, tmp_path):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60000)
            expect = sync_api.expect
            expect.set_options(timeout=30000)
            problems = []
            local = (lab.split("/lab/")[0], "data:", "blob:", "about:")
            page.on("pageerror", lambda e: problems.append(f"error: {e}"))
            page.on(
                "request", lambda r: None if r.url.startswith(local) else problems.append(r.url)
            )
            page.goto(lab)
            run_all(page)
            cells = page.locator(".jp-Notebook .jp-Cell")
            # the stepper (ipywidgets + anywidget): its header, timeline and graph
            stepper = cells.nth(0).locator(".jp-OutputArea-output")
            g = Graph(page, stepper.locator(".plg"))
            expect(stepper.locator(".pl-header")).to_contain_text("#6 fold-constant")
            expect(stepper.locator(".pl-step-row.pl-current")).to_have_attribute("data-step", "6")
            expect(g.root.locator("g.plg-s-added").first).to_be_visible()
            expect(g.root.locator(".plg-mode")).to_be_visible()
            # room: the step takes the cell's width beside the timeline, the tabs one row
            room = stepper_room(stepper)
            assert room["main"] >= room["frame"] - room["side"] - 16 and room["side"] <= 290
            assert room["graph"] >= room["main"] - 2 and room["tabs"] < 36
            # a click in the browser runs in the kernel and the new step comes back
            stepper.locator("button", has_text="next").click()
            expect(stepper.locator(".pl-header")).to_contain_text("#7 dead-code-elimination")
            expect(stepper.locator(".pl-step-row.pl-current")).to_have_attribute("data-step", "7")
            expect(g.root.locator("g.plg-s-added")).to_have_count(0)
            # a click on the timeline too
            stepper.locator(".pl-step-row[data-step='5']").click()
            expect(stepper.locator(".pl-header")).to_contain_text("#5 decompose-ops")
            expect(g.root.locator("g.plg-s-added").first).to_be_visible()
            # the GraphView (anywidget): click a node for its details
            view = Graph(page, cells.nth(1).locator(".jp-OutputArea-output .plg"))
            expect(view.node("main/matmul")).to_be_visible()
            view.go_to("main/matmul")
            view.node("main/matmul").click()
            expect(view.details.locator(".plg-d-title")).to_have_text("matmul")
            expect(view.details).to_contain_text("layers.0")
            expect(view.details).to_contain_text("f32[1, 256]")
            # the selection is in the kernel: a cell run afterwards prints it
            page.evaluate(
                """() => { const nb = window.jupyterapp.shell.currentWidget.content;
                           nb.activeCellIndex = 2;
                           return window.jupyterapp.commands.execute('notebook:run-cell'); }"""
            )
            printed = cells.nth(2).locator(".jp-OutputArea-output")
            expect(printed).to_have_text("selected: 'main/matmul' | stepper at 5")
            # the before side: the kernel sent the step's payload alone; the first click asks
            # it for the baseline's, then draws it (a node fold-constant removed is a node of
            # its own there, not a ghost)
            expect(view.node("main/permute_dims")).to_have_count(0)
            view.root.locator(".plg-before").click()
            expect(view.root).to_have_attribute("data-mode", "before")
            expect(view.node("main/permute_dims")).to_have_count(1)
            view.wait_selected("main/matmul")  # the selection's counterpart
            view.root.locator(".plg-after").click()
            expect(view.root).to_have_attribute("data-mode", "after")
            page.screenshot(path=str(tmp_path / "jupyterlab.png"))
            # a 1000 px window: the step goes under the timeline, as wide as the cell; the
            # tab bar and the stepper's toolbar (prev, next, header) stay one row each
            page.set_viewport_size({"width": 1000, "height": 1000})
            page.wait_for_function(
                "(el) => el.querySelector('.pl-frame').getBoundingClientRect().width < 800",
                arg=stepper.element_handle(),
            )
            room = stepper_room(stepper)
            assert room["main"] >= room["frame"] - 2 and room["graph"] >= room["main"] - 2
            assert room["side"] >= room["frame"] - 2  # the timeline above it, as wide
            tops = room["bar_tops"]  # prev, next and the header: one row
            assert room["tabs"] < 36 and len(tops) == 3 and max(tops) - min(tops) <= 4
            assert problems == []
        finally:
            browser.close()
