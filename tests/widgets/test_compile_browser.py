"""The compile tab of a torch.compile trace (widgets/compile_view.py) in headless Chromium: in
the HTML report and the Panel app a kernel's FX node opens the inductor codegen step with that
node selected in the graph, a Dynamo node the frame's import step; in the stepper and the app
(no browser) a picked node does the same. Skipped where torch, Playwright or Chromium is
missing."""

import pytest

pytest.importorskip("torch")

from tests.explorer.inductor.test_compile_log import compiled_trace  # noqa: E402
from tests.widgets.graph_page import Graph  # noqa: E402
from tests.widgets.test_app_browser import app_page  # noqa: E402, F401 (the fixture)
from tests.widgets.test_browser import open_report, sync_api  # noqa: E402
from widgets.app import PassApp  # noqa: E402
from widgets.stepper import PassStepper  # noqa: E402

pytestmark = pytest.mark.browser
expect = sync_api.expect


@pytest.fixture(scope="module")
def trace():
    return compiled_trace()


def _first(trace):
    return next(f for f in trace.compile_info["frames"] if f["id"] == "0/0")


def test_a_kernels_node_opens_its_step_with_it_selected_in_the_report(browser, trace, tmp_path):
    f = _first(trace)
    page, problems = open_report(browser, trace, tmp_path / "r.html")
    page.set_viewport_size({"width": 1600, "height": 1000})
    g = Graph(page, page.locator("#pl-graph.plg"))
    page.click("#pl-tabs button[data-tab=compile]")
    pane = page.locator("#pl-pane-compile")
    expect(pane).to_be_visible()
    expect(pane.locator(".pl-cf-frames tbody tr")).to_have_count(len(trace.compile_info["frames"]))
    expect(pane).to_contain_text("size mismatch at index 0. expected 2, actual 3")
    page.screenshot(path=str(tmp_path / "compile-tab.png"))
    link = pane.locator(f"span.pl-node[data-step='{f['codegen_step']}'][data-node='addmm']")
    expect(link).to_have_count(1)
    link.click()
    expect(page.locator("#pl-title")).to_have_text(f"#{f['codegen_step']} inductor codegen")
    expect(page.locator("#pl-graph")).to_be_visible()
    g.wait_selected("addmm")
    # the Dynamo node the kernel came from: the frame's own import step
    page.click("#pl-tabs button[data-tab=compile]")
    pane.locator(f"span.pl-node[data-step='{f['import_step']}'][data-node='linear']").click()
    expect(page.locator("#pl-title")).to_contain_text(f"#{f['import_step']} dynamo 0/0 forward")
    g.wait_selected("linear")
    assert problems == []


def test_a_kernels_name_stays_on_the_line_of_its_marker(browser, trace, tmp_path):
    """Seen beside tlparse (issue 43, ui/2026-12-03): in a narrow kernel column the fold
    marker sat on a line of its own above a long kernel name (cpp_fused_add_mul_sigmoid_0).
    Each kernel's name is one line with its marker, folded or unfolded."""
    page, problems = open_report(browser, trace, tmp_path / "r.html")
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.click("#pl-tabs button[data-tab=compile]")
    summaries = page.locator("#pl-pane-compile .pl-kcode summary")
    assert summaries.count() >= 3
    one_line = """(s) => {
      const code = s.querySelector('code'), r = s.getBoundingClientRect();
      const lh = parseFloat(getComputedStyle(s).lineHeight) || 17;
      return [s.textContent, Math.round(r.height), r.height < 1.6 * lh];
    }"""
    for unfold in (False, True):
        if unfold:
            for k in range(summaries.count()):
                summaries.nth(k).click()
        lines = [summaries.nth(k).evaluate(one_line) for k in range(summaries.count())]
        assert all(ok for _name, _h, ok in lines), lines
    assert problems == []


def test_a_kernels_node_opens_its_step_in_the_app(app_page, trace):  # noqa: F811
    f = _first(trace)
    page, srv, problems, g = app_page(trace)
    page.locator(".pl-tabs button[data-tab=compile]").click()
    link = page.locator(f"span.pl-node[data-step='{f['codegen_step']}'][data-node='addmm']")
    link.click()
    expect(page.locator(".pl-step-title")).to_have_text(f"#{f['codegen_step']} inductor codegen")
    g.wait_selected("addmm")
    assert problems == []


def test_the_stepper_and_the_app_open_a_picked_node(trace):
    f = _first(trace)
    for front in (PassStepper(trace), PassApp(trace)):
        assert front.tab_names[-1] == "compile"
        view = front.map_views["compile"]
        front.tab = "compile"
        assert "TREE_GUARD_MANAGER" in view.html
        view.pick = {"step": f["codegen_step"], "node": "addmm", "n": 1.5}
        assert front.index == f["codegen_step"] and front.tab == "graph"
        assert front.graph.selected == "addmm"
