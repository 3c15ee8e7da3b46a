"""Issue #35 in the browser: the graph component (widgets/static/graph*.js) at every zoom, on one
page holding the component alone at 1600x1000 (the size of the issue's comparison), in headless
Chromium:

- the overview (the module tree) is open at first view beside the graph, lists each group with
  its live-node count, parameter bytes and change / finding marks, and a click on a row opens
  that group and brings it into the stage; ``o`` and the toolbar's button close and reopen it;
- semantic zoom: a fitted 10,000-node chain and a fitted 32-layer decoder draw labelled blocks
  (module name, node count, change mark) covering their groups, 12 px text; a click on a
  change mark selects a changed node and shows it, a click on a block goes into it;
- the minimap is large enough to read and to click;
- the details drawer never covers the selected node or a finding in view, and a click on that
  finding right after reaches it;
- secondary text (shapes on edges, attributes) is drawn at 12 px or more at first view.
"""

from __future__ import annotations

import json
import re

import pytest

import explorer
from compiler import models
from tests.widgets.graph_page import TIMEOUT, Graph
from tests.widgets.test_browser import LOCAL, sync_api
from tests.widgets.test_scale_models import sm
from widgets.graph_view import graph_css, graph_data, graph_js

pytestmark = pytest.mark.browser
expect = sync_api.expect

PAGE = """<!doctype html><meta charset="utf-8"><style>%(css)s
html,body{margin:0;height:100%%}#g{height:100vh}</style><div id="g"></div>
<script type="application/json" id="data">%(data)s</script>
<script>%(js)s
window.G = PasslensGraph.create(document.getElementById("g"), {});
const d = JSON.parse(document.getElementById("data").textContent);
G.setData(d.after, d.before);
window.ready = true;
</script>"""


def page_of(browser, data: dict, width: int = 1600, height: int = 1000):
    """A page with the component alone, drawing ``data`` (graph_data of a step); any script
    error or request leaving the page fails the test that uses it."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else problems.append(r.url))
    text = json.dumps(data).replace("</", "<\\/")
    page.set_content(PAGE % {"css": graph_css(), "data": text, "js": graph_js()})
    page.wait_for_function("window.ready === true")
    g = Graph(page, page.locator("#g.plg"))
    expect(g.root).to_have_attribute("data-boxes", re.compile(r"^\d+$"))  # drawn (layouts
    g.settle()  # are made in a Web Worker)
    return page, g, problems


def step_data(trace, report=None):
    step = trace["fold-constant"]
    return graph_data(step, step.previous, report)


def fmt_bytes(n: int) -> str:  # as the component (and explorer.fmt.format_bytes)
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def blocks(page) -> list[dict]:
    """The semantic blocks drawn (after the frame that draws them)."""
    page.wait_for_function("Number(document.querySelector('#g').dataset.blocks) > 0")
    return page.evaluate("G.blocks")


def count_of(block: dict) -> int:
    return int(re.match(r"(\d+)( live)? nodes?", block["count"]).group(1))


@pytest.fixture(scope="module")
def decoder_data():
    """A 32-layer decoder (two experts a layer, ~3,000 nodes); fold-constant changes layer 17."""
    return step_data(sm.decoder(layers=32, experts=2))


@pytest.fixture(scope="module")
def chain_data():
    """10,000 elementwise ops in a chain, no module path: segments of segments."""
    return step_data(sm.flat_chain(10000))


@pytest.fixture(scope="module")
def convnext12_data():
    """A ConvNeXt of twelve blocks named as the original (``stages.S.blocks.J.pwconv1``)
    through the weight-bloat replica, checked: every pointwise layer changed and named by a
    finding."""
    import torch

    from tests.compiler.frontend.torch_zoo import ConvNeXt

    torch.manual_seed(0)
    model = ConvNeXt(dims=(8, 16, 16, 16), depths=(3, 3, 3, 3)).eval()
    x = torch.randn(1, 3, 64, 64)
    trace = explorer.explore(model, (x,), pipeline="replica-linear-broadcast,fold-constant")
    return step_data(trace, trace.check((x,)))


@pytest.fixture(scope="module")
def fused_chain_data():
    """10,000 elementwise ops in a chain through the default pipeline, at fuse-ops (which
    moves all of them into one fused function) against the step before."""
    trace = explorer.explore(sm.flat_chain_module(10000), pipeline="default")
    step = trace["fuse-ops"]
    return graph_data(step, step.previous)


@pytest.fixture(scope="module")
def bloat_data():
    """The weight-bloat replica on a small ConvNeXt, with a check: red finding nodes."""
    model = models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)
    trace = explorer.explore(model, pipeline="replica-linear-broadcast,fold-constant")
    return step_data(trace, trace.check())


def test_the_overview_lists_the_modules_and_goes_there(browser, decoder_data):
    page, g, problems = page_of(browser, decoder_data)
    p = decoder_data["after"]
    groups = p["groups"]
    pane = g.root.locator(".plg-overview")
    expect(pane).to_be_visible()  # at first view, beside the graph
    expect(g.root).to_have_attribute("data-overview", "open")
    side = pane.bounding_box()
    assert side["x"] + side["width"] <= g.stage.bounding_box()["x"] + 1
    # every layer has a row with its live nodes and parameter bytes
    for k in (0, 17, 31):
        gid = f"model.layers.{k}"
        grp = next(x for x in groups if x["id"] == gid)
        row = pane.locator(f".plg-ov-row[data-group='{gid}']")
        expect(row.locator(".plg-ov-name")).to_have_text(f"layers.{k}")
        expect(row.locator(".plg-ov-n")).to_have_text(str(grp["n"]))
        expect(row.locator(".plg-ov-b")).to_have_text(fmt_bytes(grp["b"]))
    # the change is marked on its layer (and the focus's rows are bold), no other layer
    changed = pane.locator(".plg-ov-row[data-group='model.layers.17'] .plg-ov-ch")
    expect(changed).to_have_text(re.compile(r"[+~−]\d"))
    expect(pane.locator(".plg-ov-row[data-group='model.layers.5'] .plg-ov-mark")).to_have_count(0)
    expect(pane.locator(".plg-ov-row.plg-ov-here[data-group='model.layers.17']")).to_have_count(1)
    # a click on a layer far from the view (every group collapsed) opens it and shows it
    target = "model.layers.28"
    frame = g.root.locator(f"g.plg-frame[data-group='{target}']")
    expect(pane.locator(f".plg-ov-row.plg-ov-inview[data-group='{target}']")).to_have_count(0)
    g.root.locator(".plg-collapse-all").click()
    expect(frame).to_have_count(0)
    before = g.transform
    pane.locator(f".plg-ov-row[data-group='{target}'] .plg-ov-name").click()
    expect(g.root).to_have_attribute("data-located", target)
    expect(frame).to_have_count(1)
    assert g.transform != before
    g.assert_inside(frame.locator("rect").first, f"{target} after a click on its row")
    expect(pane.locator(f".plg-ov-row.plg-ov-inview[data-group='{target}']")).to_have_count(1)
    # its change mark goes to the first change of layer 17
    changed.click()
    first = p["nodes"][next(x for x in groups if x["id"] == "model.layers.17")["ci"]]
    g.wait_selected(first["id"] if "inl" not in first else p["nodes"][first["inl"]]["id"])
    # o and the toolbar button close and reopen it; the stage takes the room
    width = g.stage.bounding_box()["width"]
    g.press("o")
    expect(pane).to_be_hidden()
    assert g.stage.bounding_box()["width"] > width + 200
    g.root.locator(".plg-overview-btn").click()
    expect(pane).to_be_visible()
    assert problems == []
    page.close()


def test_a_fitted_chain_of_10000_ops_draws_labelled_blocks(browser, chain_data):
    page, g, problems = page_of(browser, chain_data)
    p = chain_data["after"]
    g.press("f")
    bs = blocks(page)
    assert len(bs) >= 8, bs
    # the blocks cover the chain: their counts add up to the nodes of the top groups
    top = sum(grp["n"] for grp in p["groups"] if grp["p"] == 0)
    assert sum(count_of(b) for b in bs) == top
    assert all(re.match(r"nodes \d+–\d+ of 10,\d\d\d(, \d+ removed)?$", b["name"]) for b in bs), bs
    # readable: 12 px text, each block's label within the stage
    sizes = g.root.locator(".plg-sem text").evaluate_all(
        "ts => ts.map((t) => parseFloat(getComputedStyle(t).fontSize))"
    )
    assert sizes and min(sizes) >= 12
    labels = g.root.locator(".plg-sem .plg-sem-name")
    assert labels.count() >= len(bs) * 0.8
    for k in range(labels.count()):
        g.assert_inside(labels.nth(k), f"block label {k}")
    # the change is marked; a click on its mark selects a changed node and shows it
    mark = g.root.locator(".plg-sem .plg-sem-ch").first
    expect(mark).to_contain_text("change")
    mark.click()
    changed = {p["nodes"][i]["id"] for i in p["changes"]}
    page.wait_for_function("G.selected !== ''")
    assert page.evaluate("G.selected") in changed
    g.assert_inside(g.root.locator("g.plg-sel"), "the change the mark went to")
    expect(g.root).to_have_attribute("data-blocks", "0")  # readable again: boxes, no blocks
    # a click on a block goes into it
    g.press("f")
    first = g.root.locator(".plg-sem .plg-sem-block").first
    k0 = page.evaluate("G.view.k")
    first.click(position={"x": 5, "y": 5})
    page.wait_for_function(f"G.view.k > {k0 * 1.5}")
    assert problems == []
    page.close()


def test_a_fitted_chain_after_fuse_ops_marks_moved_nodes_not_10000_changes(
    browser, fused_chain_data
):
    """Issue 43 item 3: fitted, the fused function's blocks say their nodes moved (a blue
    "→N moved" mark), the change marks count only the three real changes, and the toolbar
    says 3 changes, not 10,004."""
    page, g, problems = page_of(browser, fused_chain_data)
    g.press("f")
    bs = blocks(page)
    changes = [m for b in bs for m in b["marks"] if m.startswith("~")]
    assert sum(int(re.match(r"~(\d+)", m).group(1)) for m in changes) <= 3, changes
    moved = [int(m[1:-6]) for b in bs for m in b["marks"] if re.fullmatch(r"→\d+ moved", m)]
    fused = next(grp for grp in fused_chain_data["after"]["groups"] if grp["k"] == "function")
    assert moved and sum(moved) == fused["ch"]["moved"] >= 9990, moved
    expect(g.root.locator(".plg-sem .plg-sem-mv").first).to_be_visible()
    expect(g.root.locator(".plg-change-info")).to_have_text("3 changes")
    assert problems == []
    page.close()


def labels_inside(page, g) -> None:
    """Every block's text is inside its block (none written beside a block too thin for it),
    and no block lies under the legend."""
    assert g.root.locator(".plg-sem .plg-sem-side").count() == 0
    bad = page.evaluate(
        """() => {
          const box = (e) => e.getBoundingClientRect();
          const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom
            && b.top < a.bottom;
          const legend = box(document.querySelector('#g .plg-legend'));
          const out = { outside: [], under: [] };
          for (const b of document.querySelectorAll('#g .plg-sem-block')) {
            const r = box(b.querySelector('.plg-sem-shape'));
            for (const t of b.querySelectorAll('text')) {
              const q = box(t);
              if (q.left < r.left - 1 || q.right > r.right + 1 || q.top < r.top - 1
                  || q.bottom > r.bottom + 1) out.outside.push(t.textContent);
            }
            if (meets(r, legend)) out.under.push(b.textContent);
          }
          return out;
        }"""
    )
    assert bad == {"outside": [], "under": []}


def test_fitted_convnext_blocks_say_which_stage_and_block(browser, convnext12_data):
    """Issue 43 item 5: zoomed out, the 24 pointwise layers are told apart by their path
    (``stages.1/blocks.0/pwconv1``, not twelve "pwconv1"), their findings' marks come first,
    and each label is inside its block."""
    page, g, problems = page_of(browser, convnext12_data)
    g.press("f")
    bs = blocks(page)
    names = [b["name"] for b in bs]
    assert len(names) == len(set(names)), names
    for s in range(4):
        for j in range(3):
            for k in (1, 2):
                assert f"stages.{s}/blocks.{j}/pwconv{k}" in names, names
    pw = [b for b in bs if "pwconv" in b["name"]]
    assert all(b["marks"][0].startswith("▲") for b in pw), pw[0]
    labels_inside(page, g)
    assert problems == []
    page.close()


def test_a_fitted_decoder_of_32_layers_shows_every_layer(browser, decoder_data):
    page, g, problems = page_of(browser, decoder_data)
    g.press("f")
    bs = blocks(page)
    covered = {gid for b in bs for gid in b["groups"]}

    # every layer is a block, in a run of blocks, or (opened at first) its parts are
    def covers(gid: str, k: int) -> bool:
        return gid == f"model.layers.{k}" or gid.startswith(f"model.layers.{k}.")

    missing = [k for k in range(32) if not any(covers(gid, k) for gid in covered)]
    assert missing == []
    labels_inside(page, g)  # layers.17's parts, too thin for a label, are not cut out of it
    # the layer the step changed is a block of its own (or its parts are), marked
    marked = [b for b in bs if any(m.startswith("~") for m in b["marks"])]
    assert marked and all("layers.17" in b["name"] for b in marked), marked
    # most layers are labelled on the screen, alone or as a run "layers.3 – layers.9" (the
    # tooltip names the rest)
    names = g.root.locator(".plg-sem .plg-sem-name, .plg-sem .plg-sem-side").evaluate_all(
        "ts => ts.map((t) => t.textContent)"
    )
    named = set()
    for text in names:
        ks = [int(k) for k in re.findall(r"\blayers\.(\d+)\b", text)]
        named.update(range(ks[0], ks[-1] + 1) if " – " in text and len(ks) == 2 else ks)
    assert len(named & set(range(32))) >= 24, sorted(named)
    # the minimap: large enough to read and to click
    mini = g.root.locator("canvas.plg-mini")
    box = mini.bounding_box()
    assert box["width"] >= 150 and box["height"] >= 100, box
    assert int(mini.get_attribute("data-labels")) >= 1
    before = g.transform
    mini.click(position={"x": box["width"] / 2, "y": box["height"] * 0.1})
    assert g.transform != before
    assert problems == []
    page.close()


def test_the_drawer_never_covers_the_selection_or_a_finding(browser, bloat_data):
    """The red finding brought to the stage's right edge, where the drawer opens: a click on
    a node further left opens its details, the view moves so that the finding stays in the
    stage, beside the drawer, and a click on it right after selects it (no Escape first)."""
    page, g, problems = page_of(browser, bloat_data, width=1000, height=700)
    p = bloat_data["after"]
    expect(g.root).to_have_attribute("data-overview", "closed")  # too narrow for it
    focus = p["nodes"][p["focus"]]
    assert focus.get("bad")
    finding = g.node(focus["id"])
    g.assert_inside(finding, "the finding at first view")
    # drag the graph so that the finding sits at the stage's right edge
    stage, box = g.stage.bounding_box(), finding.bounding_box()
    dx = stage["x"] + stage["width"] - 12 - (box["x"] + box["width"])
    page.mouse.move(stage["x"] + 200, stage["y"] + 300)
    page.mouse.down()
    page.mouse.move(stage["x"] + 200 + dx / 2, stage["y"] + 300, steps=4)
    page.mouse.move(stage["x"] + 200 + dx, stage["y"] + 300, steps=4)
    page.mouse.up()
    g.assert_inside(finding, "the finding after the drag")
    right = stage["x"] + stage["width"]
    box = finding.bounding_box()
    assert box["x"] + box["width"] > right - 240  # where the drawer opens
    # a node in view that the drawer would not cover
    other = g.root.locator("g.plg-n:not(.plg-bad)").evaluate_all(
        """(gs, right) => gs.map((g) => [g.dataset.nodeId, g.getBoundingClientRect()])
             .filter(([, r]) => r.right < right - 340 && r.left > 0 && r.top > 40 && r.bottom < 690)
             .map(([id]) => id)""",
        right,
    )
    assert other, "no node left of the drawer's place"
    g.node(other[0]).click()
    g.wait_selected(other[0])
    drawer = g.details.bounding_box()
    assert drawer["width"] >= 240
    for node_id, what in ((other[0], "the selected node"), (focus["id"], "the finding")):
        g.assert_inside(g.node(node_id), what)
        b = g.node(node_id).bounding_box()
        assert b["x"] + b["width"] <= drawer["x"], f"{what} is under the drawer"
    finding.click()
    g.wait_selected(focus["id"])
    expect(g.details.locator(".plg-d-title")).to_have_text(focus["t"])
    assert problems == []
    page.close()


def test_secondary_text_is_at_least_12_px_at_first_view(browser, decoder_data):
    page, g, problems = page_of(browser, decoder_data)
    assert page.evaluate("G.view.k") == 1
    sizes = g.root.locator("text.plg-sub, text.plg-elabel").evaluate_all(
        "ts => ts.map((t) => [t.className.baseVal, parseFloat(getComputedStyle(t).fontSize),"
        " t.getBoundingClientRect().height])"
    )
    assert len(sizes) > 20
    small = [s for s in sizes if s[1] < 12 or s[2] < 12]
    assert small == [], small[:5]
    # the attribute lines fit their boxes (the layout measures them at that size)
    overflow = g.root.locator("g.plg-n:not(.plg-group)").evaluate_all(
        """gs => gs.filter((g) => {
             const r = g.querySelector('.plg-shape').getBoundingClientRect();
             return [...g.querySelectorAll('text')].some((t) => {
               const b = t.getBoundingClientRect();
               return b.left < r.left - 1 || b.right > r.right + 1;
             });
           }).map((g) => g.dataset.nodeId)"""
    )
    assert overflow == []
    assert problems == []
    page.close()


# each element of the overview's rows drawn narrower than its text (cut, with or without an
# ellipsis) or reaching out of its row or of the list: [class, text, why]
CUT = """(list) => {
  const out = [], L = list.getBoundingClientRect();
  if (list.scrollWidth > list.clientWidth + 1) out.push(["plg-ov-list", "", "scrolls sideways"]);
  for (const row of list.querySelectorAll(".plg-ov-row")) {
    const R = row.getBoundingClientRect();
    for (const e of row.querySelectorAll("span")) {
      const r = e.getBoundingClientRect(), t = e.textContent;
      if (!t) continue;
      if (e.scrollWidth > e.clientWidth + 1) out.push([e.className, t, "cut"]);
      if (r.left < R.left - 0.5 || r.right > R.right + 0.5) out.push([e.className, t, "out of its row"]);
      if (r.right > L.right + 0.5) out.push([e.className, t, "out of the list"]);
    }
  }
  return out;
}"""


@pytest.mark.parametrize("width", [1600, 1100])
def test_the_overviews_numbers_are_never_cut(browser, bloat_data, chain_data, decoder_data, width):
    """Issue 43: the tree cut its numbers ("27 +...", "84.2 ...", "items 1-...")."""
    for data in (bloat_data, chain_data, decoder_data):
        page, g, problems = page_of(browser, data, width=width)
        expect(g.root).to_have_attribute("data-overview", "open")
        tree = g.root.locator(".plg-ov-list")
        # every row of the tree shown: its groups opened in the tree, a level at a time
        for _ in range(6):
            closed = tree.locator(".plg-ov-row[aria-expanded=false] .plg-ov-caret")
            if not closed.count():
                break
            for k in range(min(closed.count(), 12)):
                closed.first.click()
        rows = tree.locator(".plg-ov-row")
        assert rows.count() > 10
        assert tree.evaluate(CUT) == []
        # the numbers are the payload's, whole: the root's live nodes and bytes change
        top = data["after"]["groups"]
        first = tree.locator(".plg-ov-row").first
        kid = next(grp for grp in top if grp["p"] == 0)
        expect(first.locator(".plg-ov-n")).to_have_text(str(kid.get("n", 0)))
        if kid.get("db"):
            sign = "+" if kid["db"] > 0 else "-"
            expect(first.locator(".plg-ov-b")).to_have_text(sign + fmt_bytes(abs(kid["db"])))
        assert problems == []
        page.close()
    # a chain's segments say what they hold, which of them, of how many
    page, g, problems = page_of(browser, chain_data, width=width)
    names = g.root.locator(".plg-ov-seg .plg-ov-name").all_text_contents()
    label = r"nodes \d+–\d+ of 10,\d{3}(, \d+ removed)?"
    assert names and all(re.fullmatch(label, n) for n in names), names
    page.close()



# what covers the element the view was brought to (``sel``: the focus, the selection, the group
# gone to) or leaves it out of the stage: "" when it is in the clear
COVERED = """(sel) => {
  const g = document.querySelector('#g');
  const R = (e) => { if (!e) return null; const r = e.getBoundingClientRect(); return r.width && r.height && getComputedStyle(e).display !== 'none' ? r : null; };
  let t = g.querySelector('.plg-vp ' + sel) || g.querySelector(sel);
  if (!t) return null;
  const r = R(t); if (!r) return "hidden";
  const stage = R(g.querySelector('.plg-stage'));
  const out = [];
  if (r.left < stage.left - 1 || r.right > stage.right + 1 || r.top < stage.top - 1 || r.bottom > stage.bottom + 1) out.push("outside stage");
  for (const [name, q] of [["overview", ".plg-overview"], ["mini", ".plg-mini"], ["legend", ".plg-legend"], ["crumb", ".plg-crumb"], ["details", ".plg-details"]]) {
    const o = R(g.querySelector(q)); if (!o) continue;
    if (r.left < o.right && o.left < r.right && r.top < o.bottom && o.top < r.bottom) out.push("under " + name);
  }
  return out.length ? out.join(",") + " " + [r.left, r.top, r.right, r.bottom].map(Math.round).join(" ") : null;
}"""


@pytest.mark.parametrize("size", [(1600, 1000), (1000, 600)])
def test_the_view_keeps_its_target_clear_of_every_pane(browser, bloat_data, decoder_data, size):
    """Issue 43: centring clipped the focus (a group gone to lay under the legend; in Jupyter
    the minimap covered nodes). The first view's focus, each change ``n`` goes to and each
    group an overview row goes to lie in the stage, clear of the overview, the minimap, the
    legend, the breadcrumb and the details drawer."""
    width, height = size
    for data in (bloat_data, decoder_data):
        page, g, problems = page_of(browser, data, width=width, height=height)
        expect(g.root.locator("g.plg-n.plg-focus")).to_have_count(1)
        assert page.evaluate(COVERED, ".plg-focus") is None
        g.root.locator(".plg-stage").click(position={"x": 4, "y": height // 2})
        for k in range(5):  # the changes, the drawer open beside them
            page.keyboard.press("n")
            expect(g.root.locator("g.plg-n.plg-sel")).to_have_count(1)
            g.settle()
            assert page.evaluate(COVERED, ".plg-sel") is None, f"change {k}"
        g.root.locator(".plg-details .plg-close").first.click()
        if g.root.get_attribute("data-overview") != "open":
            g.press("o")
        rows = g.root.locator(".plg-ov-row")
        for k in range(1, min(rows.count(), 12), 2):  # groups of every size
            rows.nth(k).click()
            expect(g.root.locator(".plg-vp .plg-located")).to_have_count(1)
            g.settle()
            assert page.evaluate(COVERED, ".plg-located") is None, rows.nth(k).get_attribute("data-group")
        assert problems == []
        page.close()


def legend_items(g) -> list[str]:
    return g.root.locator(".plg-legend .plg-lg-item").all_text_contents()


def test_the_legend_names_only_what_the_step_draws(browser, bloat_data):
    """Seen beside Netron and Model Explorer (issue 43, ui/2026-12-03): the legend listed
    "moved (same values)", "failed" and "opaque (no converter)" on a step that has none of
    them. It names what the side shown draws: the bloat step's added, changed and removed
    nodes, its finding, weights and groups; a fuse-ops step's moved nodes; the step before's
    side no ghosts."""
    page, g, problems = page_of(browser, bloat_data)
    items = legend_items(g)
    assert items == ["added", "changed", "removed (ghost)", "finding", "weight", "group"], items
    g.press("b")  # the step before: what this step removes or changes, no ghosts, no findings
    expect(g.root).to_have_attribute("data-mode", "before")
    g.settle()
    expect(g.root.locator(".plg-legend")).not_to_contain_text("removed (ghost)")
    assert "removed by the step" in legend_items(g)
    page.close()
    trace = explorer.explore(sm.flat_chain_module(300), pipeline="default")
    step = trace["fuse-ops"]
    page, g, problems2 = page_of(browser, graph_data(step, step.previous))
    assert "moved (same values)" in legend_items(g)
    assert "failed" not in legend_items(g) and "opaque (no converter)" not in legend_items(g)
    assert problems == problems2 == []
    page.close()
