"""The registry of views (widgets.views): a view registered in one place is a tab of the
report, the Jupyter stepper and the Panel app, in the same order in all three, rendered for the
steps it applies to, escaped like the others."""

import json
import re

import pytest

from widgets import views
from widgets.app import PassApp
from widgets.escape import esc
from widgets.frame import tab_bar_html
from widgets.report import report_html
from widgets.stepper import PassStepper
from widgets.views import NOTHING, View

EVIL = "<img src=x onerror=alert(1)>"


def _lines_html(step, report=None) -> str | None:
    """A test view: the number of lines of the step's IR (nothing for the first step)."""
    if step.index == 0:
        return None
    n = len(step.text.splitlines())
    return f"<p class='pl-lines'>{n} lines of {esc(step.name + EVIL)}</p>"


@pytest.fixture
def lines_view():
    """A view registered by the test alone (no other file knows it), between IR diff and
    params."""
    view = views.register(View("line count", order=35, html=_lines_html))
    try:
        yield view
    finally:
        views.unregister("line count")


def report_tabs(text: str) -> list[str]:
    bar = re.search(r'<div id="pl-tabs" class="pl-tabs">(.*?)</div>', text, re.S).group(1)
    return re.findall(r'data-tab="([a-z0-9-]+)"', bar)


def test_a_registered_view_is_a_tab_of_all_three_front_ends(mlp_trace, lines_view):
    keys = ["graph", "ir", "diff", "line-count", "rewrites", "params", "shapes", "param-map"]
    titles = ["graph", "IR", "IR diff", "line count", "rewrites", "params", "shapes", "param map"]
    step = mlp_trace["fold-constant"]
    # the report: its button, its pane, the step's pane stored in a template
    text = report_html(mlp_trace)
    assert report_tabs(text) == keys
    assert '<button data-tab="line-count">Line count</button>' in text
    assert '<div class="pl-pane pl-step-pane" id="pl-pane-line-count"></div>' in text
    data = json.loads(re.search(r'id="pl-data">(.*?)</script>', text, re.S).group(1))
    assert data["tabs"] == keys and "line-count" in data["panes"]
    pieces = dict(re.findall(r'<template id="pl-t(\d+)">(.*?)</template>', text, re.S))
    piece = pieces[str(data["steps"][step.index]["panes"]["line-count"])]
    assert piece.startswith("<p class='pl-lines'>") and "fold-constant" in piece
    assert data["steps"][0]["panes"]["line-count"] is None  # nothing for the first step
    assert EVIL not in text
    # the stepper and the app: the same tabs, the pane rendered when shown
    for front, html_of in (
        (PassStepper(mlp_trace), lambda pane: pane.value),
        (PassApp(mlp_trace), lambda pane: pane.object),
    ):
        assert list(front.tab_names) == titles
        assert [v.key for v in front.views] == keys
        assert front.tab_bar.html == tab_bar_html(front.views)  # the report's buttons
        front.index = step.index
        assert html_of(front.panes["line count"]) == ""  # not rendered until shown
        front.tab = "line count"
        assert front.tab_bar.active == "line-count"
        assert html_of(front.panes["line count"]) == piece
        front.index = 0  # the tab shown follows the step
        assert html_of(front.panes["line count"]) == NOTHING
    # taken out of the registry, it is a tab of no new front end
    views.unregister("line count")
    try:
        assert "line count" not in PassStepper(mlp_trace).tab_names
        assert "line-count" not in report_tabs(report_html(mlp_trace))
    finally:
        views.register(lines_view)


def test_the_tab_order_is_the_same_in_all_three(checked_trace):
    trace, report = checked_trace
    order = [v.key for v in views.views_for(trace, report)]
    assert order == [
        "graph", "ir", "diff", "rewrites", "params", "shapes", "numerics", "error-map",
        "param-map"
    ]  # fmt: skip
    assert report_tabs(report_html(trace, report)) == order
    assert [v.key for v in PassStepper(trace, report).views] == order
    assert [v.key for v in PassApp(trace, report).views] == order


def test_views_that_need_a_check_report(mlp_trace, checked_trace):
    trace, report = checked_trace
    with_report = [v.title for v in views.views_for(trace, report)]
    without = [v.title for v in views.views_for(trace)]
    assert set(with_report) - set(without) == {"numerics", "error map"}
    text = report_html(mlp_trace)
    assert 'data-tab="shapes"' in text and 'data-tab="numerics"' not in text


def test_the_report_has_the_shapes_tab(checked_trace):
    trace, report = checked_trace
    text = report_html(trace, report)
    data = json.loads(re.search(r'id="pl-data">(.*?)</script>', text, re.S).group(1))
    pieces = dict(re.findall(r'<template id="pl-t(\d+)">(.*?)</template>', text, re.S))
    shapes = pieces[str(data["steps"][2]["panes"]["shapes"])]
    assert "main/matmul" in shapes and "<table" in shapes


def test_a_view_is_checked_when_registered():
    with pytest.raises(ValueError, match="key 'IR' is not"):
        View("x", 1, lambda s, r=None: "", key="IR")
    with pytest.raises(ValueError, match="needs its html"):
        View("x", 1)
    with pytest.raises(ValueError, match="scope must be"):
        View("x", 1, lambda s, r=None: "", scope="page")
    with pytest.raises(ValueError, match="key 'diff' is taken by 'IR diff'"):
        views.register(View("diff", 1, lambda s, r=None: ""))
    with pytest.raises(ValueError, match="one graph view"):
        views.register(View("graph 2", 1, scope="graph"))
    with pytest.raises(ValueError, match="no view 'nope'"):
        views.unregister("nope")
    with pytest.raises(ValueError, match="no tab 'param map' of a step"):
        views.tab_html(None, "param map")


@pytest.mark.browser
def test_the_report_shows_a_registered_view_in_chromium(browser, mlp_trace, lines_view, tmp_path):
    """The report's script knows no view by name: a new view's tab shows its pane for the
    step shown, the note where it has nothing, and nothing it renders runs."""
    from tests.widgets.test_browser import expect, open_report

    page, problems = open_report(browser, mlp_trace, tmp_path / "lines.html")
    step = mlp_trace["fold-constant"]
    page.click(f".pl-step-row[data-step='{step.index}']")
    page.click("#pl-tabs button[data-tab=line-count]")
    expect(page.locator("#pl-tabs button.pl-on")).to_have_text("Line count")
    expect(page.locator("#pl-pane-line-count .pl-lines")).to_contain_text(
        f"lines of fold-constant{EVIL}"
    )
    expect(page.locator("#pl-pane-graph")).to_be_hidden()
    page.click(".pl-step-row[data-step='0']")  # the tab stays; nothing for the first step
    expect(page.locator("#pl-pane-line-count")).to_have_text("Nothing to show for this step.")
    assert page.query_selector("img[src=x]") is None and problems == []
    page.close()
