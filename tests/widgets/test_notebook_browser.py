"""The notebook front end renders the widgets: JupyterLab served on localhost (token, a free
port, its config in the test's folder), opened in headless Chromium, a notebook displaying
``trace.stepper()`` and a GraphView run in its kernel; the SVG graphs appear, a click on the
stepper's button reaches the kernel and back, a click on a node shows its details.

Why JupyterLab and not an exported notebook with the widget state embedded: ipywidgets'
embedding loads its widget manager (``@jupyter-widgets/html-manager``) from a CDN, which no
installed package ships, and these tests use no network."""

import pytest

from tests.widgets.lab import JUPYTER, jupyterlab, run_all
from tests.widgets.test_browser import ARGS, CHROMIUM, sync_api

pytestmark = [pytest.mark.browser, pytest.mark.notebook]

CELLS = [
    "import explorer\nfrom compiler import models\n"
    "trace = explorer.explore(models.mlp())\nstepper = trace.stepper()\nstepper.index = 6\nstepper",
    "from widgets import GraphView\nstep = trace['fold-constant']\nGraphView(step, step.previous)",
]


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
            page.on(
                "request", lambda r: None if r.url.startswith(local) else problems.append(r.url)
            )
            page.goto(lab)
            run_all(page)
            # the stepper (ipywidgets): its header and before / after graphs
            stepper = page.locator(".jp-OutputArea-output").nth(0)
            expect(stepper.locator(".pl-stepper-graph svg.pl_graph")).to_have_count(2)
            expect(stepper.locator(".pl-header")).to_contain_text("#6 fold-constant")
            expect(stepper.locator(".pl-stepper-graph g.pl_added").first).to_be_visible()
            # a click in the browser runs in the kernel and the new step comes back
            stepper.locator("button", has_text="next").click()
            expect(stepper.locator(".pl-header")).to_contain_text("#7 dead-code-elimination")
            expect(stepper.locator(".pl-stepper-graph g.pl_added")).to_have_count(0)
            # the GraphView (anywidget): click a node for its details
            view = page.locator(".jp-OutputArea-output").nth(1)
            canvas = view.locator(".pl-gv-canvas")
            expect(canvas.locator("svg.pl_graph")).to_be_visible()
            canvas.locator("g[data-node-id='main/matmul']").click()
            details = view.locator(".pl-gv-details")
            expect(details).to_contain_text("module=layers.0")
            expect(details).to_contain_text("f32[1, 256]")
            page.screenshot(path=str(tmp_path / "jupyterlab.png"))
            assert problems == []
        finally:
            browser.close()
