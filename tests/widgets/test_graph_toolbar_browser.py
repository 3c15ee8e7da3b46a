"""Issue #35 (part 3) in the browser: the graph component's toolbar (widgets/static/graph.js,
graph.css) is one row from 1,600 px of component width down to 560 px (JupyterLab beside its file
browser), without losing a function; narrower it scrolls sideways instead of taking a second row.

- the component alone at 560, 800 and 1,000 px, and in the HTML report at windows of 1,000 and
  1,600 px: the toolbar is as high as its tallest item (one row), every item is in that row and
  visible (nothing scrolled away), every text is 12 px or more;
- with the "errors" button (a check against a reference) and a search's hit count at 800 px:
  still one row, nothing scrolled away;
- every button says what it does in its title (tooltip) and aria-label, and works by click and
  by keyboard (found by its accessible name, not by its label);
- at 420 px the toolbar is still one row and scrolls sideways: its last button can be reached
  and used.
"""

from __future__ import annotations

import re

import pytest

import explorer
from compiler import models
from tests.widgets.graph_page import TIMEOUT, Graph
from tests.widgets.test_browser import LOCAL, sync_api
from tests.widgets.test_graph_overview_browser import page_of, step_data
from widgets.graph_view import graph_data

pytestmark = pytest.mark.browser
expect = sync_api.expect

PIPELINE = "replica-linear-broadcast,fold-constant"

# the toolbar's visible items (the before / after pair counted as its two buttons), their
# boxes and text sizes, the bar's height and its own padding and border
MEASURE = """(bar) => {
  const shown = (e) => e.getClientRects().length > 0;
  const items = [...bar.children]
    .flatMap((e) => e.classList.contains('plg-mode') ? [...e.children] : [e]).filter(shown);
  const cs = getComputedStyle(bar), b = bar.getBoundingClientRect();
  const px = (k) => parseFloat(cs[k]);
  return {
    height: b.height, left: b.left, right: b.right,
    frame: px('paddingTop') + px('paddingBottom') + px('borderTopWidth') + px('borderBottomWidth'),
    client: bar.clientWidth, scroll: bar.scrollWidth,
    items: items.map((e) => {
      const r = e.getBoundingClientRect();
      return { cls: e.className, top: r.top, bottom: r.bottom, left: r.left, right: r.right,
        font: parseFloat(getComputedStyle(e).fontSize), text: e.textContent,
        title: e.title || '', aria: e.getAttribute('aria-label') || '',
        button: e.tagName === 'BUTTON' };
    }),
  };
}"""


def measure(g: Graph) -> dict:
    return g.root.locator(".plg-bar").evaluate(MEASURE)


def assert_one_row(bar: dict, what: str, scrolls: bool = False) -> None:
    """The toolbar is one row: as high as its tallest item plus its padding, every item's
    middle on one line; and (unless ``scrolls``) nothing is scrolled out of sight."""
    items = bar["items"]
    assert len(items) >= 12, (what, items)
    tallest = max(i["bottom"] - i["top"] for i in items)
    assert bar["height"] <= tallest + bar["frame"] + 1, (what, bar["height"], tallest, items)
    middles = [(i["top"] + i["bottom"]) / 2 for i in items]
    off = [(i["cls"], m) for i, m in zip(items, middles, strict=True)]
    assert max(middles) - min(middles) <= 2, (what, off)
    for i in items:
        assert i["font"] >= 12, (what, i)
        if i["button"]:
            assert i["title"] and i["aria"], (what, "a button without a title or aria-label", i)
    if not scrolls:
        assert bar["scroll"] <= bar["client"], (what, "scrolls", bar["scroll"], bar["client"])
        for i in items:
            assert bar["left"] - 0.5 <= i["left"] and i["right"] <= bar["right"] + 0.5, (what, i)


@pytest.fixture(scope="module")
def bloat_trace():
    """A small ConvNeXt through the weight-bloat replica and fold-constant (module groups)."""
    model = models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)
    return explorer.explore(model, pipeline=PIPELINE)


@pytest.fixture(scope="module")
def plain_data(bloat_trace):
    return step_data(bloat_trace)


@pytest.fixture(scope="module")
def error_data():
    """A deliberately wrong pass checked against the reference: nodes carry errors, so the
    toolbar shows its "errors" button."""
    from tests.explorer.check.test_check import _FlipAdd  # noqa: F401  (registers the wrong pass)

    spec = "decompose-ops{ops=[linear]},test-check-flip-add,fold-constant,dead-code-elimination"
    trace = explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2), pipeline=spec)
    step = trace["test-check-flip-add"]  # the step the check blames: its nodes carry errors
    return graph_data(step, step.previous, trace.check())


@pytest.mark.parametrize("width", [560, 800, 1000])
def test_one_row_from_1000_down_to_560_px(browser, plain_data, width):
    page, g, problems = page_of(browser, plain_data, width=width, height=700)
    assert g.root.bounding_box()["width"] == width
    expect(g.root.locator(".plg-hits")).to_be_hidden()  # no search: no empty counter
    assert_one_row(measure(g), f"component at {width} px")
    # the change count is in the row (its word, where dropped, stays in its title)
    info = g.root.locator(".plg-change-info")
    expect(info).to_have_attribute("title", re.compile(r"^\d+ changes?$"))
    assert problems == []
    page.close()


def test_the_buttons_say_what_they_do_and_work_by_click_and_keyboard(browser, plain_data):
    page, g, problems = page_of(browser, plain_data, width=560, height=700)
    button = lambda name: g.root.get_by_role("button", name=name, exact=True)  # noqa: E731
    titles = {
        "previous change": "previous change (p)",
        "next change": "next change (n)",
        "expand all groups": "expand all: open every group",
        "collapse all groups": "collapse all: close every group",
        "fit the whole graph": "show the whole graph (f)",
        "previous hit": "previous hit (Shift+Enter)",
        "next hit": "next hit (Enter)",
    }
    for name, title in titles.items():
        expect(button(name)).to_have_attribute("title", title)
    n = len(plain_data["after"]["changes"])
    info = g.root.locator(".plg-change-info")
    button("next change").click()
    expect(info).to_have_text(f"1/{n}")
    assert g.selected, "next change selects the change"
    button("previous change").click()
    expect(info).to_have_text(f"{n}/{n}")
    # keyboard: Enter and Space on the focused button
    boxes = g.boxes
    button("collapse all groups").focus()
    page.keyboard.press("Enter")
    wait = "(n) => Number(document.querySelector('#g').dataset.boxes) !== n"
    page.wait_for_function(wait, arg=boxes, timeout=TIMEOUT)
    collapsed = g.boxes
    assert collapsed < boxes
    button("expand all groups").focus()
    page.keyboard.press(" ")
    page.wait_for_function(wait, arg=collapsed, timeout=TIMEOUT)
    assert g.boxes > collapsed
    # a search shows its count (the word dropped at this width, kept in the title); one row
    g.search("conv")
    hits = g.root.locator(".plg-hits")
    expect(hits).to_be_visible()
    expect(hits).to_have_text(re.compile(r"^\d+ found$"))  # the text keeps its word
    expect(hits).to_have_attribute("title", re.compile(r"^\d+ found$"))
    assert_one_row(measure(g), "560 px with a search")
    button("next hit").click()
    expect(hits).to_have_text(re.compile(r"^1 of \d+$"))
    g.search("")
    expect(hits).to_be_hidden()
    assert problems == []
    page.close()


def test_errors_button_and_hits_at_800_px(browser, error_data):
    page, g, problems = page_of(browser, error_data, width=800, height=700)
    errors = g.root.get_by_role("button", name="colour by error", exact=True)
    expect(errors).to_be_visible()
    g.search("add")
    expect(g.root.locator(".plg-hits")).to_be_visible()
    assert_one_row(measure(g), "800 px with errors and a search")
    errors.click()
    expect(errors).to_have_class(re.compile(r"\bplg-on\b"))
    assert problems == []
    page.close()


def test_narrower_than_560_px_it_scrolls_sideways(browser, plain_data):
    page, g, problems = page_of(browser, plain_data, width=420, height=700)
    bar = measure(g)
    assert_one_row(bar, "component at 420 px", scrolls=True)
    assert bar["scroll"] > bar["client"]
    after, before = g.root.locator(".plg-after"), g.root.locator(".plg-before")
    before.click()  # scrolled into view by the click
    expect(g.root).to_have_attribute("data-mode", "before")
    after.click()
    expect(g.root).to_have_attribute("data-mode", "after")
    assert problems == []
    page.close()


# ----- the HTML report -------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1000, 1600])
def test_one_row_in_the_report(browser, bloat_trace, tmp_path, window):
    path = tmp_path / "report.html"
    bloat_trace.to_html(path)
    page = browser.new_page(viewport={"width": window, "height": 1000})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else problems.append(r.url))
    page.goto(path.as_uri())
    page.click(f".pl-step-row[data-step='{bloat_trace['fold-constant'].index}']")
    g = Graph(page, page.locator("#pl-graph.plg"))
    expect(g.root).to_have_attribute("data-boxes", re.compile(r"^\d+$"))
    g.settle()
    bar = measure(g)
    assert_one_row(bar, f"report at a {window} px window")
    # at a 1,000 px window the component gets ~700 px: the counts keep their words there
    expect(g.root.locator(".plg-change-info .plg-word")).to_be_visible()
    assert problems == []
    page.close()
