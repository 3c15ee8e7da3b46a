"""A re-run in JupyterLab (issue 42, item 4): a cell shows the stepper of a user's wrong pass
with a node selected; the next cell re-runs the trace with the fix and calls
``new.stepper()``. It is the same stepper, now on the new run, on the same step, the same node
selected and in view, and the old run's step beside it with the verdicts of both; the view the
first cell shows is that stepper too, updated in place."""

import pytest

from tests.widgets.graph_page import Graph
from tests.widgets.lab import JUPYTER, jupyterlab, run_all
from tests.widgets.test_browser import ARGS, CHROMIUM, sync_api
from tests.widgets.user_passes import RERUN_NODE, RERUN_SETUP

pytestmark = [pytest.mark.browser, pytest.mark.notebook]

CELLS = [
    RERUN_SETUP + "stepper = trace.stepper()\nstepper.index = trace['fast-gelu'].index\n"
    f"stepper.graph.selected = {RERUN_NODE!r}\nstepper",
    "new = rerun_with_fix(trace, pipeline, FastGeluFixed())\nnew.check()\nnew.stepper()",
    "print('same:', new.stepper() is stepper, '| at', stepper.index, stepper.step.name, "
    "'| selected', stepper.graph.selected, stepper.old_graph.selected)",
]


@pytest.fixture
def lab(tmp_path):
    if not JUPYTER.exists():
        pytest.skip("jupyter is not installed in this environment")
    with jupyterlab(tmp_path, CELLS) as url:
        yield url


def test_a_rerun_shows_itself_in_the_stepper_displayed(lab):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(60000)
            expect = sync_api.expect
            expect.set_options(timeout=30000)
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(lab)
            run_all(page)
            cells = page.locator(".jp-Notebook .jp-Cell")
            expect(cells.nth(2).locator(".jp-OutputArea-output")).to_contain_text("same: True")
            assert f"selected {RERUN_NODE} {RERUN_NODE}" in cells.nth(2).inner_text()
            for k in (0, 1):  # the first cell's view and the second's: one stepper
                out = cells.nth(k).locator(".jp-OutputArea-output")
                expect(out.locator(".pl-header")).to_contain_text("#9 fast-gelu")
                expect(out.locator(".pl-run-old")).to_contain_text("old run · #9 fast-gelu")
                expect(out.locator(".pl-run-old")).to_contain_text("diverged")
                expect(out.locator(".pl-run-new")).to_contain_text("ok, max rel")
                expect(out.locator(".plg")).to_have_count(2)
            out = cells.nth(1).locator(".jp-OutputArea-output")
            old, new = (Graph(page, out.locator(".plg").nth(i)) for i in (0, 1))
            # the node kept, selected on both sides and in view on both (no scrolling, no
            # search): the fix is right there, relu on the old side, erf on the new
            for g in (old, new):
                g.wait_selected(RERUN_NODE)
                g.assert_inside(g.node(RERUN_NODE), f"{RERUN_NODE} selected")
            expect(old.root.locator("g.plg-n", has_text="relu").first).to_be_attached()
            expect(new.root.locator("g.plg-n", has_text="erf").first).to_be_attached()
            expect(old.root.locator("g.plg-n", has_text="erf")).to_have_count(0)
            # both sides share the row: side by side, each half the step's width
            a, b = old.root.bounding_box(), new.root.bounding_box()
            assert abs(a["y"] - b["y"]) < 2 and a["x"] + a["width"] <= b["x"]
            assert abs(a["width"] - b["width"]) < 4
            # unticked: the new run alone, across the whole step
            out.get_by_text("old run | new run side by side").click()
            expect(out.locator(".plg").first).to_be_hidden()
            assert new.root.bounding_box()["width"] > 1.8 * b["width"]
            assert errors == []
        finally:
            browser.close()
