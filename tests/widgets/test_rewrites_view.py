"""The rewrites view (a pass step's rules with counts, a filter by rule, every application) in
the registry of views, and "why did this change" in the graph payload's details; names from a
crafted trace stay text. In Chromium: the filter hides the other rules' rewrites, the drawer
shows the rule and the step."""

import re
import shutil

import pytest

import explorer
from compiler import models
from explorer.rewrites import make
from tests.widgets.conftest import EVIL
from widgets.escape import json_script
from widgets.graph_data import graph_payload
from widgets.report import write_html
from widgets.rewrites_html import rewrites_html
from widgets.views import tab_html, views_for


@pytest.fixture(scope="module")
def trace():
    return explorer.explore(models.mlp(sizes=(6, 5, 4, 3)), progress=False)


def test_a_pass_step_lists_its_rules_with_counts_and_every_rewrite(trace):
    step = trace["decompose-ops"]
    html = tab_html(step, "rewrites")
    assert "rewrites" in [v.key for v in views_for(trace)]
    assert "applied 3 rewrites by 1 rule" in html
    # one row per rule (and "all rules") with its radio and count; one row per application,
    # tagged by its rule's number
    rules = re.findall(r"value='(\w+)'[^>]*> (.*?)</label></td><td class='num'>(\d+)", html)
    assert rules == [("all", "<i>all rules</i>", "3"), ("0", "decompose-ops/linear-to-matmul", "3")]
    assert html.count("<tr data-r='0'") == 3
    # what the rule does, from its table
    assert "<td class='pl-rw-doc'>linear(x, W, b) -&gt; matmul(x, W^T) + b</td>" in html
    for r in step.rewrites:
        assert r.produced[0] in html and r.matched[0] in html


def test_the_stepper_and_the_app_show_the_same_view(trace):
    from widgets.app import PassApp
    from widgets.stepper import PassStepper

    step = trace["decompose-ops"]
    for front, html_of in (
        (PassStepper(trace), lambda pane: pane.value),
        (PassApp(trace), lambda pane: pane.object),
    ):
        front.index = step.index
        front.tab = "rewrites"
        assert html_of(front.panes["rewrites"]) == tab_html(step, "rewrites")


def test_steps_without_rewrites_say_so(trace):
    assert "rewrites are recorded for passes" in rewrites_html(trace.imported)
    dce = next(s for s in trace if s.kind == "pass" and not s.rewrites and not s.children)
    assert f"#{dce.index} {dce.name} applied no rewrite rule" in rewrites_html(dce)


def test_the_filter_works_on_rule_numbers_not_names():
    class Step:  # a step of a crafted trace: only what the view reads
        index, name, kind, children, trace, previous = 3, EVIL, "pass", [], None, None
        rewrites = (make(EVIL + "/r", [EVIL], ["main/" + EVIL]), make("p/q", ["a"], ["b"]))

        class graph:
            nodes: dict = {}

    html = rewrites_html(Step())
    assert "<script>" not in html and "alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # no handler at all; the filter's CSS names rule numbers only
    assert not re.search(r"\son\w+=", html)
    (css,) = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert "alert" not in css and "script" not in css and "p/q" not in css
    assert re.findall(r"name='rule' value='(\w+)'", html) == ["all", "0", "1"]
    assert re.findall(r"data-r='(\d+)'", html) == ["0", "1"]


def test_the_details_say_why_a_node_changed(trace):
    fold = trace["fold-constant"]
    payload = graph_payload(fold, fold.previous)
    by_id = {n["id"]: d for n, d in zip(payload["nodes"], payload["details"], strict=True)}
    weight = fold.rewrites[0].produced[0]
    assert by_id[weight]["why"].startswith(
        f"made by rule fold-constant/fold-call at #{fold.index} fold-constant\nfrom "
    )
    assert "decompose-ops/linear-to-matmul" in by_id[weight]["why"]
    # a node the pass removed: the rule that replaced it
    ghost = "removed:" + fold.rewrites[0].matched[0]
    assert (
        by_id[ghost]["why"]
        == f"replaced by rule fold-constant/fold-call at #{fold.index} fold-constant"
    )
    # a node no rule touched says nothing
    assert "why" not in by_id["main/x"]


def test_a_crafted_rule_name_is_data_in_the_payload(trace):
    step = trace["fold-constant"]
    saved = step.rewrites
    try:
        step.rewrites = (make(EVIL, saved[0].matched, saved[0].produced),)
        payload = graph_payload(step, step.previous, max_boxes=299)  # not the cached one
        text = json_script(payload)
        assert "<script>" not in text and EVIL not in text  # "<" is \u003c inside the JSON
        whys = [d["why"] for d in payload["details"] if "why" in d]
        assert any(EVIL in w for w in whys)  # the data keeps the name; the drawer sets textContent
    finally:
        step.rewrites = saved


def test_a_crafted_trace_file_renders_escaped(trace, tmp_path):
    from tests.explorer.test_rewrites import _rewrite_manifest
    from widgets.escape import esc

    def change(step):
        step["rewrites"][0][0] = EVIL  # the rule
        step["rewrites"][0][1] = [EVIL]  # a matched node

    path = trace.save(tmp_path / "t.passlens")
    loaded = explorer.load(_rewrite_manifest(path, tmp_path / "evil.passlens", change))
    out = tmp_path / "evil.html"
    write_html(loaded, out)
    text = out.read_text()
    assert "<script>alert(1)</script>" not in text
    assert esc(EVIL) in text  # in the rewrites pane, as text


# ----- in the browser ---------------------------------------------------------------------------

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_filter_and_drawer_in_the_report(trace, tmp_path):
    step, fold = trace["decompose-ops"], trace["fold-constant"]
    # a second rule, so the filter has something to hide
    saved = step.rewrites
    step.rewrites = (*saved, make("decompose-ops/other", ["main/x"], []))
    try:
        path = tmp_path / "r.html"
        write_html(trace, path)
    finally:
        step.rewrites = saved
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1300, "height": 850})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri() + f"#step-{step.index}")
        page.click(f".pl-step-row[data-step='{step.index}']")
        page.click("button[data-tab='rewrites']")
        pane = page.locator("#pl-pane-rewrites")
        assert pane.locator("tr[data-r]:visible").count() == 4
        assert pane.locator(".pl-rw-shown:visible").text_content() == "all 4 rewrites"
        pane.locator("input[value='1']").check()  # decompose-ops/other
        assert pane.locator("tr[data-r]:visible").count() == 1
        assert pane.locator(".pl-rw-shown:visible").text_content() == (
            "1 rewrite by decompose-ops/other"
        )
        assert page.locator("button[data-tab='rewrites']").get_attribute("class") == "pl-on"
        pane.get_by_text("decompose-ops/linear-to-matmul", exact=True).first.click()
        assert pane.locator("tr[data-r]:visible").count() == 3
        pane.locator("input[value='all']").check()
        assert pane.locator("tr[data-r]:visible").count() == 4
        # the drawer: why the folded weight changed
        page.click(f".pl-step-row[data-step='{fold.index}']")
        page.click("button[data-tab='graph']")
        weight = fold.rewrites[0].produced[0]
        page.evaluate("(id) => window.passlensGraph.locate(id)", weight)
        drawer = page.locator(".plg-details")
        why = drawer.locator("tr", has=page.locator("th", has_text="why")).locator("td")
        assert why.text_content().startswith("made by rule fold-constant/fold-call at #")
        browser.close()
        assert errors == []
