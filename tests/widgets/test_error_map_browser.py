"""The error map in headless Chromium: a click on a cell opens its step with its node selected
in the graph, in the Panel app (synced back to Python), in the HTML report and in the stepper
in JupyterLab (through the kernel). Skipped where Chromium or Playwright is missing."""

import pytest

from tests.widgets.graph_page import Graph, wait_until
from tests.widgets.test_app_browser import app_page  # noqa: F401  (the fixture)
from tests.widgets.test_browser import open_report, sync_api
from widgets.report import write_html

pytestmark = pytest.mark.browser

expect = sync_api.expect
WRONG = "decompose-ops{ops=[linear]},test-check-flip-add,fold-constant,dead-code-elimination"


def test_a_click_on_an_error_map_cell_in_the_app_opens_its_step_and_node(
    app_page,  # noqa: F811
    checked_trace,
):
    trace, report = checked_trace
    m = report.error_map()
    page, srv, problems, g = app_page(trace, report=report)
    title = page.locator(".pl-step-title")
    first = report.first_failure.step  # the app opens on the first finding
    expect(title).to_have_text(f"#{first.index} {first.name}")
    page.locator(".pl-step-row[data-step='0']").click()
    expect(title).to_have_text("#0 module")
    page.locator(".pl-tabs button[data-tab=error-map]").click()
    # the first failing layer at the first failing step, outlined
    cell = page.locator("td.pl-map-first-cell")
    expect(cell).to_have_attribute("data-step", str(m.first_step))
    node = m.nodes[m.row(m.first_step)][m.column(m.first_layer)]
    expect(page.locator("tr.pl-map-current")).to_have_attribute("data-row", "0")
    cell.click()
    expect(title).to_have_text(f"#{m.first_step} test-check-flip-add")
    g.wait_selected(node)
    g.assert_inside(g.node(node), node)
    expect(g.details).to_be_visible()
    app = srv.apps[-1]
    wait_until(page, lambda: app.graph.selected == node, "the selection synced to Python")
    assert app.index == m.first_step and app.tab == "graph"
    # another cell: a later step, another layer
    page.locator(".pl-tabs button[data-tab=error-map]").click()
    expect(page.locator("tr.pl-map-current")).to_have_attribute("data-row", str(m.first_step))
    other = m.nodes[m.row(3)][m.column("layers.2")]
    page.locator(f"td[data-step='3'][data-node='{other}']").click()
    expect(title).to_have_text("#3 fold-constant")
    g.wait_selected(other)
    assert problems == []


def test_a_click_on_a_cell_in_the_report_opens_its_step_and_node(browser, checked_trace, tmp_path):
    trace, report = checked_trace
    m = report.error_map()
    path = tmp_path / "report.html"
    page, problems = open_report(browser, trace, path)
    write_html(trace, path, report=report)  # open_report writes it without the report
    page.goto(path.as_uri())
    g = Graph(page, page.locator("#pl-graph.plg"))
    page.click(".pl-step-row[data-step='0']")
    page.click("#pl-tabs button[data-tab=error-map]")
    expect(page.locator("#pl-pane-error-map")).to_be_visible()
    node = m.nodes[m.row(m.first_step)][m.column(m.first_layer)]
    page.locator("#pl-pane-error-map td.pl-map-first-cell").click()
    expect(page.locator("#pl-title")).to_have_text(f"#{m.first_step} test-check-flip-add")
    expect(page.locator("#pl-pane-graph")).to_be_visible()
    g.wait_selected(node)
    # a row's name opens its step; the row of the step shown is marked
    page.click("#pl-tabs button[data-tab=param-map]")
    expect(page.locator("#pl-pane-param-map tr.pl-map-current")).to_have_attribute(
        "data-row", str(m.first_step)
    )
    page.locator("#pl-pane-param-map th.pl-map-row[data-step='4']").click()
    expect(page.locator("#pl-title")).to_have_text("#4 dead-code-elimination")
    assert problems == []


STEPPER_CELLS = [
    "import explorer\nfrom compiler import models\n"
    "from tests.explorer.check.test_check import _FlipAdd  # registers the wrong pass\n"
    f"trace = explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2), pipeline={WRONG!r})\n"
    "stepper = trace.stepper(trace.check())\nstepper",
    "print('at', stepper.index, stepper.tab, repr(stepper.graph.selected))",
]


@pytest.mark.notebook
def test_a_click_on_a_cell_in_the_jupyter_stepper_opens_its_step_and_node(browser, tmp_path):
    from tests.widgets.lab import JUPYTER, jupyterlab, run_all

    if not JUPYTER.exists():
        pytest.skip("jupyter is not installed in this environment")
    with jupyterlab(tmp_path, STEPPER_CELLS) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60000)
        expect.set_options(timeout=30000)
        problems = []
        page.on("pageerror", lambda e: problems.append(f"error: {e}"))
        page.goto(url)
        run_all(page)
        cells = page.locator(".jp-Notebook .jp-Cell")
        stepper = cells.nth(0).locator(".jp-OutputArea-output")
        # it opens where the report does: on the first finding
        expect(stepper.locator(".pl-header")).to_contain_text("#2 test-check-flip-add")
        stepper.locator(".pl-step-row[data-step='0']").click()
        expect(stepper.locator(".pl-header")).to_contain_text("#0 module")
        stepper.locator(".pl-tabs button[data-tab=error-map]").click()
        cell = stepper.locator("td.pl-map-first-cell")
        expect(cell).to_have_attribute("data-node", "main/subtract")
        cell.click()  # in the kernel: the step, the graph tab, the node; back in the page
        expect(stepper.locator(".pl-header")).to_contain_text("#2 test-check-flip-add")
        Graph(page, stepper.locator(".plg")).wait_selected("main/subtract")
        page.evaluate(
            """() => { const nb = window.jupyterapp.shell.currentWidget.content;
                       nb.activeCellIndex = 1;
                       return window.jupyterapp.commands.execute('notebook:run-cell'); }"""
        )
        printed = cells.nth(1).locator(".jp-OutputArea-output")
        expect(printed).to_have_text("at 2 graph 'main/subtract'")
        page.close()
        assert problems == []
