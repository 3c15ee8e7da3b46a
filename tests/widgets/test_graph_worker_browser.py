"""The graph component lays out in a Web Worker made from the layout engine's text already in
the page (static/graph/worker.js), so the page answers while a big layout is made, and falls
back to the page's thread where no worker can be made.

The page here is the component alone, opened from disk (as a report is): a chain of 10,000 ops
in 100 groups of 100, collapsed. "expand all" lays out the 101 groups at once. The test records
in the page, in order: the component's ``data-layout`` states ("pending" while the engine
works and while the drawing is made, "placed" once it is drawn), its ``data-drawing`` state
("chunks" while its ~20,000 elements are drawn a chunk per task, static/graph/drawing.js) and the
page's own timer ticks and a search typed while waiting; it asserts the order of those events,
not their times.
"""

from __future__ import annotations

import json

import pytest

from tests.widgets.graph_page import TIMEOUT
from tests.widgets.test_browser import sync_api
from widgets.graph_view import graph_css, graph_js

pytestmark = pytest.mark.browser
expect = sync_api.expect

N, GROUP = 10_000, 100


def chain_payload(n: int = N, group: int = GROUP) -> dict:
    """A payload (widgets/graph_data.py's format) of a chain of ``n`` ops in segment groups of
    ``group`` ops, every group collapsed."""
    groups = [{"id": "", "label": "", "p": -1, "k": "module"}]
    for k in range(n // group):
        groups.append(
            {
                "id": f"ops {k * group + 1}-{(k + 1) * group}",
                "label": f"ops {k * group + 1}-{(k + 1) * group}",
                "p": 0,
                "k": "segment",
                "n": group,
                "ops": f"{group}× relu",
            }
        )
    nodes = [
        {
            "id": f"main/relu_{i}",
            "k": "op",
            "t": "relu",
            "s": [],
            "g": 1 + i // group,
            "st": "",
            "ty": 0,
        }
        for i in range(n)
    ]
    edges = [[i, i + 1, 0, 0] for i in range(n - 1)]
    return {
        "nodes": nodes,
        "edges": edges,
        "groups": groups,
        "types": ["f32[1, 8]"],
        "collapsed": [g["id"] for g in groups[1:]],
        "changes": [],
        "focus": None,
        "pairs": [],
        "details": [],
    }


PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8">{csp}<style>{css}
#g{{height:800px}}</style></head><body><div id="g"></div>
<script id="data" type="application/json">{data}</script>
<script>{js}
window.graph = PasslensGraph.create(document.getElementById("g"), {{}});
window.graph.setData(JSON.parse(document.getElementById("data").textContent), null);
</script></body></html>"""

# what a sandboxed output may impose: scripts inline only, no worker of any origin
NO_WORKERS = (
    "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; worker-src 'none'\">"
)

# Click "expand all" and log, in order: the click, each change of data-layout and of
# data-drawing, the page's timer ticks while the layout is pending, and a search typed on the
# first tick (its hit count as the component shows it). Resolves once the expanded graph is
# drawn.
EXPAND_ALL = """() => new Promise((resolve) => {
  const el = document.querySelector(".plg"), log = [];
  new MutationObserver((records) => {
    for (const r of records) {
      if (r.attributeName === "data-layout") log.push("layout:" + el.dataset.layout);
      else log.push("drawing:" + (el.dataset.drawing || "done"));
    }
  }).observe(el, { attributes: true, attributeFilter: ["data-layout", "data-drawing"] });
  let ticks = 0;
  const tick = () => {
    log.push("tick");
    if (ticks++ === 0) {
      const box = el.querySelector(".plg-search");
      box.value = "relu_9999";
      box.dispatchEvent(new Event("input"));
      log.push("search:" + el.querySelector(".plg-hits").textContent);
    }
    if (el.dataset.layout === "pending" && ticks < 100000) setTimeout(tick, 0);
  };
  el.querySelector(".plg-expand-all").click();
  log.push("clicked");
  setTimeout(tick, 0);
  const done = () => {
    const drawn = el.dataset.layout !== "pending" && +el.dataset.boxes === BOXES;
    if (drawn) resolve({ log, el: { ...el.dataset } });
    else setTimeout(done, 50);
  };
  done();
})""".replace("BOXES", str(N))


@pytest.fixture(scope="module")
def chain_page(tmp_path_factory):
    """The component on the chain, as pages from disk: with workers allowed, and without."""
    folder = tmp_path_factory.mktemp("worker")
    data = json.dumps(chain_payload()).replace("</", "<\\/")
    paths = {}
    for name, csp in (("worker", ""), ("no_workers", NO_WORKERS)):
        paths[name] = folder / f"{name}.html"
        paths[name].write_text(PAGE.format(csp=csp, css=graph_css(), data=data, js=graph_js()))
    return paths


def open_chain(browser, path):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    root = page.locator(".plg")
    expect(root).to_have_attribute("data-boxes", str(N // GROUP), timeout=TIMEOUT)
    return page, root, errors


def test_the_page_answers_while_an_expand_all_of_10000_nodes_is_laid_out(browser, chain_page):
    page, root, errors = open_chain(browser, chain_page["worker"])
    assert root.get_attribute("data-layout-in") == "worker"
    out = page.evaluate(EXPAND_ALL)
    log = out["log"]
    assert log[:2] == ["clicked", "layout:pending"], log[:5]
    drawing, placed = log.index("drawing:chunks"), log.index("layout:placed")
    waiting = log[2:drawing]
    # the page's own timer ran, and the search typed meanwhile was handled by the component
    # (its hit count shown), all before the engine's results came back
    assert waiting.count("tick") >= 2, log[: drawing + 1]
    assert "search:1 found" in waiting, log[: drawing + 1]
    # and it ran between the drawing's chunks, "placed" only once the last one is drawn
    assert log[drawing:placed].count("tick") >= 2, log[drawing : placed + 1]
    assert log[placed - 1 : placed + 1] == ["drawing:done", "layout:placed"], log[drawing:]
    assert out["el"]["layoutIn"] == "worker" and int(out["el"]["drawChunks"]) >= 2
    assert errors == []
    page.close()


def test_without_workers_the_page_lays_out_on_its_own_thread(browser, chain_page):
    page, root, errors = open_chain(browser, chain_page["no_workers"])
    assert root.get_attribute("data-layout-in") == "page"
    out = page.evaluate(EXPAND_ALL)
    log = out["log"]
    # laid out in the click itself (no tick before its drawing began), then drawn in chunks
    # with the page's timer ticks between them
    assert log[:3] == ["clicked", "layout:pending", "drawing:chunks"], log[:5]
    placed = log.index("layout:placed")
    assert log[3:placed].count("tick") >= 2, log[: placed + 1]
    assert "search:1 found" in log[3:placed], log[: placed + 1]
    assert log[placed - 1 : placed + 1] == ["drawing:done", "layout:placed"], log[placed - 3 :]
    assert out["el"]["boxes"] == str(N) and errors == []
    page.close()


def test_the_worker_and_the_page_place_the_boxes_alike(browser, chain_page):
    """The same expand-all drawn from the worker's layouts and from the page's own: every box
    at the same place."""
    where = """() => Array.from(document.querySelectorAll("g.plg-n[data-i]"))
      .filter((g, k) => k % 97 === 0).map((g) => [g.dataset.i, g.getAttribute("transform")])"""
    drawn = []
    for name in ("worker", "no_workers"):
        page, _root, errors = open_chain(browser, chain_page[name])
        page.evaluate(EXPAND_ALL)
        drawn.append(page.evaluate(where))
        assert errors == []
        page.close()
    assert len(drawn[0]) > 50 and drawn[0] == drawn[1]


# "expand all", then "collapse all" as soon as the expanded drawing's chunks begin: resolves
# with the state once the component has settled (its last drawing shown) and the box counts
# of the drawings shown after the click
COLLAPSE_WHILE_DRAWING = """() => new Promise((resolve) => {
  const el = document.querySelector(".plg"), shown = [];
  let clicked = false;
  const mo = new MutationObserver(() => {
    if (clicked || el.dataset.drawing !== "chunks") return;
    clicked = true;
    mo.disconnect();
    new MutationObserver(() => shown.push(el.dataset.boxes))
      .observe(el, { attributes: true, attributeFilter: ["data-draw-ms"] });
    el.querySelector(".plg-collapse-all").click();
    const settled = () => {
      if (el.dataset.layout === "pending") { setTimeout(settled, 50); return; }
      setTimeout(() => resolve({
        el: { ...el.dataset }, shown,
        layers: el.querySelectorAll("g.plg-drawing").length,
        groups: el.querySelectorAll("g.plg-drawing g.plg-group").length,
        ops: el.querySelectorAll("g.plg-drawing g.plg-n[data-i]").length,
      }), 500);
    };
    settled();
  });
  mo.observe(el, { attributes: true, attributeFilter: ["data-drawing"] });
  el.querySelector(".plg-expand-all").click();
})"""


def test_a_drawing_asked_for_while_another_is_drawn_in_chunks_replaces_it(browser, chain_page):
    """Collapsing every group while the expand-all is still being drawn: the expanded drawing's
    chunks stop, its part drawn is dropped, and the collapsed graph is what is shown."""
    page, _root, errors = open_chain(browser, chain_page["worker"])
    out = page.evaluate(COLLAPSE_WHILE_DRAWING)
    assert out["shown"] == [str(N // GROUP)], out  # (never the expanded drawing)
    assert out["layers"] == 1, out
    assert out["groups"] == N // GROUP and out["ops"] == 0, out
    assert out["el"]["boxes"] == str(N // GROUP) and out["el"]["layout"] == "placed", out
    assert "drawing" not in out["el"] and errors == []
    page.close()


def test_a_big_drawing_shown_again_is_put_back_in_chunks(browser, chain_page):
    """The expanded chain drawn, another drawing of it (colour by error) shown, then the first
    again: kept, it is put back a chunk per task too, with the page's timer ticks between,
    and every box is back (the search hit marked on it)."""
    page, _root, errors = open_chain(browser, chain_page["worker"])
    page.evaluate(EXPAND_ALL)
    toggle = """() => new Promise((resolve) => {
      const el = document.querySelector(".plg"), log = [];
      new MutationObserver(() => log.push("drawing:" + (el.dataset.drawing || "done")))
        .observe(el, { attributes: true, attributeFilter: ["data-drawing"] });
      const tick = () => {
        log.push("tick");
        if (el.dataset.layout === "pending") setTimeout(tick, 0);
      };
      el.querySelector(".plg-errors").click();
      log.push("clicked");
      setTimeout(tick, 0);
      const done = () => {
        if (el.dataset.layout === "pending") { setTimeout(done, 50); return; }
        resolve({ log, boxes: el.querySelectorAll("g.plg-drawing g.plg-n[data-i]").length,
                  layers: el.querySelectorAll("g.plg-drawing").length,
                  hits: el.querySelectorAll("g.plg-drawing .plg-hit").length,
                  chunks: +el.dataset.drawChunks });
      };
      done();
    })"""
    first = page.evaluate(toggle)  # colour by error: drawn anew, in chunks
    assert first["log"][:2] == ["clicked", "drawing:chunks"], first["log"][:5]
    again = page.evaluate(toggle)  # back: the kept drawing
    log = again["log"]
    assert log[:2] == ["clicked", "drawing:chunks"], log[:5]
    assert log[2 : log.index("drawing:done")].count("tick") >= 2, log
    assert again["chunks"] >= 2 and again["layers"] == 1 and again["boxes"] == N, again
    assert again["hits"] == 1 and errors == []  # (the search typed during the expand-all)
    page.close()
