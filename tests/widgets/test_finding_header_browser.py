"""The finding in the report's and the app's header, in headless Chromium (issue 43): its
summary wraps within the width (nothing cut), a click shows the whole message, and the view
opens on the node it names first."""

import re

import pytest

from tests.widgets.graph_page import Graph
from tests.widgets.test_browser import ARGS, CHROMIUM, TRAP, sync_api  # noqa: F401 (skips)
from widgets.findings import problems_of
from widgets.report import write_html

pytestmark = pytest.mark.browser
expect = sync_api.expect

# each element of a header's finding line: (scrollWidth, clientWidth, white-space, overflow)
FITS = """(el) => [el, ...el.querySelectorAll('*')].map((e) => {
  const cs = getComputedStyle(e);
  return [e.scrollWidth, e.clientWidth, cs.whiteSpace, cs.textOverflow];
})"""


@pytest.fixture(scope="module")
def bloat_large():
    """A ConvNeXt too tall to fit at a readable zoom, through the replica and fold-constant,
    checked: the copy that grew most (features.5.0, x4) far from the first (features.1.0)."""
    import explorer
    from compiler import models

    model = models.convnext(dims=(32, 64, 128), depths=(2, 2, 2), image=64, num_classes=10)
    trace = explorer.explore(model, pipeline="replica-linear-broadcast,fold-constant")
    return trace, trace.check()


def check_line(line, message: str, named: str) -> None:
    """``line``: the header's finding (a ``details``): no part of it wider than its box,
    nowhere cut with an ellipsis; the copy named first; the whole message on a click."""
    summary = line.locator("summary")
    expect(summary).to_contain_text(f"`{named}`")
    for scroll, client, white, overflow in line.evaluate(FITS):
        assert scroll <= client + 1 and white != "nowrap" and overflow != "ellipsis"
    box = line.bounding_box()
    assert box["height"] < 4 * 18  # a summary of a few lines, not the whole message
    full = line.locator(".pl-finding-full")
    expect(full).to_be_hidden()
    summary.click(position={"x": 4, "y": 6})
    expect(full).to_be_visible()
    assert message in full.text_content()


def test_the_reports_finding_wraps_and_names_the_node_in_view(browser, bloat_large, tmp_path):
    trace, report = bloat_large
    step = trace["fold-constant"]
    (finding,) = problems_of(report, step)
    named = re.search(r"`([^`]+)`", finding.message).group(1)
    path = tmp_path / "r.html"
    write_html(trace, path, report=report)
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.add_init_script(TRAP)
    page.goto(path.as_uri())
    g = Graph(page, page.locator("#pl-graph.plg"))
    expect(page.locator("#pl-title")).to_have_text(f"#{step.index} fold-constant")
    # the view opens on the copy the header names first
    focus = g.root.locator("g.plg-n.plg-focus")
    expect(focus).to_have_attribute("data-node-id", "$" + named)
    assert g.inside(focus)
    check_line(page.locator("#pl-finding details"), finding.message, named)
    page.close()


def test_the_apps_finding_wraps_and_names_the_node_in_view(browser, bloat_large):
    from widgets.app import serve

    trace, report = bloat_large
    step = trace["fold-constant"]
    (finding,) = problems_of(report, step)
    named = re.search(r"`([^`]+)`", finding.message).group(1)
    with serve(trace, report=report, block=False) as srv:
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(15000)
        page.goto(srv.url)
        g = Graph(page, page.locator(".plg"))
        expect(page.locator(".pl-step-title")).to_have_text(f"#{step.index} fold-constant")
        focus = g.root.locator("g.plg-n.plg-focus")
        expect(focus).to_have_attribute("data-node-id", "$" + named)
        assert g.inside(focus)
        check_line(page.locator("details.pl-finding"), finding.message, named)
        page.close()


# the top bar's finding line: its box, the lines it takes, whether any is hidden, and the page
BANNER = """() => {
  const b = document.getElementById('pl-banner'), cs = getComputedStyle(b);
  const app = document.getElementById('pl-app').getBoundingClientRect();
  const lh = parseFloat(cs.lineHeight);
  return { text: b.textContent, title: b.title, lines: Math.round(b.clientHeight / lh),
           hidden: b.scrollHeight > b.clientHeight + 1 || b.scrollWidth > b.clientWidth + 1,
           headerBottom: document.querySelector('header').getBoundingClientRect().bottom,
           appTop: app.top, appBottom: app.bottom, page: document.documentElement.scrollHeight };
}"""


def test_the_top_bars_finding_wraps_to_two_lines_at_most(browser, bloat_large, tmp_path):
    """Seen beside Netron and Model Explorer (issue 43, ui/2026-12-03): the top bar's
    finding was one line cut with "…" at 1600 px though the header below has the whole. Now
    it wraps: whole on two lines at 1600 px; on a narrow page clamped at two lines, its
    whole line in its title; the views below start under the taller bar and end at the
    page's foot (no page scroll)."""
    from widgets.report import finding_line

    trace, report = bloat_large
    path = tmp_path / "r.html"
    write_html(trace, path, report=report)
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.add_init_script(TRAP)
    page.goto(path.as_uri())
    page.locator("#pl-graph.plg g.plg-n").first.wait_for()
    wide = page.evaluate(BANNER)
    assert not wide["hidden"] and 1 <= wide["lines"] <= 2, wide
    assert "parameter bytes grew" in wide["text"] and wide["text"].rstrip().endswith("x)\u00a0…")
    assert wide["title"] == finding_line(report)
    assert wide["appTop"] >= wide["headerBottom"] - 0.5 and wide["appBottom"] <= 1000.5
    assert wide["page"] <= 1000
    page.set_viewport_size({"width": 1100, "height": 1000})
    narrow = page.evaluate(BANNER)
    assert narrow["lines"] == 2 and narrow["hidden"], narrow  # clamped, the rest in its title
    assert narrow["appBottom"] <= 1000.5 and narrow["page"] <= 1000
    page.close()


# the app's top line about the check (in a shadow root: read on its element), as BANNER
APP_BANNER = """(b) => {
  const cs = getComputedStyle(b), lh = parseFloat(cs.lineHeight), r = b.getBoundingClientRect();
  return { text: b.textContent, title: b.title, lines: Math.round(b.clientHeight / lh),
           hidden: b.scrollHeight > b.clientHeight + 1 || b.scrollWidth > b.clientWidth + 1,
           bottom: r.bottom, right: r.right, page: document.documentElement.clientWidth };
}"""


def test_the_apps_check_line_wraps_to_two_lines_at_most(browser, bloat_large):
    """The Panel app's line about the check, under its title, was one line cut with "…"
    (the report's top bar wraps since session 18). Now it is the report's line with the
    report's style sheet (`widgets.banner`): whole on two lines at most at 1600 px; on a
    narrow page (600 px: at 800 it is whole on two) clamped at two lines, its whole line in
    its title; the step's bar below it."""
    from widgets.app import serve
    from widgets.banner import finding_line

    trace, report = bloat_large
    with serve(trace, report=report, block=False) as srv:
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(15000)
        page.goto(srv.url)
        page.locator(".plg g.plg-n").first.wait_for()
        banner = page.locator(".pl-banner")
        wide = banner.evaluate(APP_BANNER)
        assert not wide["hidden"] and 1 <= wide["lines"] <= 2, wide
        assert "parameter bytes grew" in wide["text"]
        assert wide["text"].rstrip().endswith("x)\u00a0…")
        assert wide["title"] == finding_line(report)
        assert wide["right"] <= wide["page"] + 0.5
        assert page.locator(".pl-prev").bounding_box()["y"] >= wide["bottom"] - 0.5
        page.set_viewport_size({"width": 600, "height": 1000})
        for _ in range(40):  # (Panel lays the page out again)
            narrow = banner.evaluate(APP_BANNER)
            if narrow["page"] == 600:
                break
            page.wait_for_timeout(50)
        assert narrow["lines"] == 2 and narrow["hidden"], narrow  # clamped, the rest in its title
        assert narrow["right"] <= 600.5
        assert page.locator(".pl-prev").bounding_box()["y"] >= narrow["bottom"] - 0.5
        page.close()
