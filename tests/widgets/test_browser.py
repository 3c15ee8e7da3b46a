"""In headless Chromium: the HTML report (stepping, the graph and tables changing, node
details, search, names from the model kept as text, no network) and GraphView's front end
driven through a stand-in for the anywidget model. Skipped where Chromium or Playwright is
missing (Debian: ``apt-get install chromium``; never ``playwright install``)."""

import base64
import json
import re
import shutil

import pytest

from tests.widgets.conftest import EVIL
from tests.widgets.graph_page import Graph, wait_until
from tests.widgets.test_report import boxes_at_first
from widgets.graph_data import graph_payload
from widgets.graph_view import GraphView, graph_css, graph_esm
from widgets.report import write_html
from widgets.views import start_index

pytestmark = pytest.mark.browser

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")
if CHROMIUM is None:
    pytest.skip("chromium is not installed", allow_module_level=True)

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


LOCAL = ("file:", "blob:", "data:", "about:")
expect = sync_api.expect

# before any script of the page: record alert() calls (a script injected by a name would
# call it) instead of opening a dialog
TRAP = "window.__alerts = []; window.alert = (m) => window.__alerts.push(String(m));"


def open_report(browser, trace, path):
    write_html(trace, path)
    page = browser.new_page(viewport={"width": 1300, "height": 850})
    page.set_default_timeout(5000)
    expect.set_options(timeout=5000)
    problems = []
    page.add_init_script(TRAP)
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else problems.append(r.url))
    page.goto(path.as_uri())
    return page, problems


def drawn(g: Graph) -> set[str]:
    """The ids of the boxes drawn."""
    g.settle()
    return set(g.root.locator("g.plg-n").evaluate_all("gs => gs.map((g) => g.dataset.nodeId)"))


FILL = "g => getComputedStyle(g.querySelector('.plg-shape')).fill"
DIFF = "g.plg-s-added, g.plg-s-changed, g.plg-s-removed"


def test_step_through_the_report(browser, convnext_trace, tmp_path):
    page, problems = open_report(browser, convnext_trace, tmp_path / "r.html")
    g = Graph(page, page.locator("#pl-graph.plg"))
    start = start_index(convnext_trace)  # no check: the first pass that changed the module
    expect(page.locator("#pl-title")).to_have_text(f"#{start} {convnext_trace[start].name}")
    page.locator(".pl-step-row[data-step='0']").click()
    expect(page.locator("#pl-title")).to_have_text("#0 module")
    expect(g.node("main/conv2d")).to_have_count(1)
    first = drawn(g)
    # every node a box, but the weights drawn as lines of their readers
    payload = graph_payload(convnext_trace[0])
    assert first == {n["id"] for n in payload["nodes"] if "inl" not in n}
    assert g.boxes == len(first) == boxes_at_first(payload) < len(payload["nodes"])
    assert g.root.locator(DIFF).count() == 0  # nothing before the first step
    expect(g.root.locator(".plg-mode")).to_be_hidden()  # no before / after toggle
    page.keyboard.press("ArrowRight")
    expect(page.locator("#pl-title")).to_have_text("#1 default")
    assert drawn(g) != first and g.root.locator("g.plg-s-added").count() > 0
    expect(g.root.locator(".plg-mode")).to_be_visible()
    page.click("#pl-next")
    page.click("#pl-next")
    expect(page.locator("#pl-title")).to_have_text("#3 canonicalize-bindings")  # unchanged
    expect(g.root.locator(".plg-note")).to_be_visible()
    expect(g.root.locator(".plg-note")).to_contain_text("same graph as #0")
    assert drawn(g) == first and g.root.locator(DIFF).count() == 0  # no diff colours
    # dead-code-elimination changed nothing: fold-constant's graph without its diff colours
    page.click(".pl-step-row[data-step='7']")
    expect(g.root.locator(".plg-note")).to_contain_text("same graph as #6")
    g.settle()
    assert g.root.locator(DIFF).count() == 0
    weight = "g.plg-k-weight[data-node-id='$features.1.0.block.3.weight.permute_dims']"
    assert g.root.locator(weight).evaluate(FILL) == "rgb(243, 229, 245)"  # a plain weight
    page.click(".pl-step-row[data-step='6']")
    expect(g.root.locator(".plg-note")).to_be_hidden()
    g.settle()
    assert g.root.locator("g.plg-s-removed").count() == 10  # ghosts of what it removed
    assert g.root.locator(weight).evaluate(FILL) == "rgb(200, 230, 201)"  # added: green
    assert "plg-s-added" in g.root.locator(weight).get_attribute("class")
    # hide unchanged passes: next skips dead-code-elimination
    page.check("#pl-hide")
    assert not page.is_visible(".pl-step-row[data-step='7']")
    page.click(".pl-step-row[data-step='6']")
    expect(page.locator("#pl-title")).to_have_text("#6 fold-constant")
    page.click("#pl-next")
    expect(page.locator("#pl-title")).to_have_text("#8 fuse-ops")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#pl-title")).to_have_text("#6 fold-constant")
    page.screenshot(path=str(tmp_path / "graph.png"))
    # click a node: its details from the step's payload
    g.go_to("main/conv2d")
    g.node("main/conv2d").click()
    details = g.details
    expect(details).to_have_class(re.compile(r"\bplg-open\b"))
    expect(details.locator(".plg-d-title")).to_have_text("conv2d")
    text = details.inner_text()
    assert "features.0.0" in text and "[4, 4]" in text and "f32[1, 8, 8, 8]" in text
    # n goes through the changes: a changed node says what changed
    for _ in range(len(convnext_trace[6].graph.nodes)):
        g.press("n")
        if g.root.locator("g.plg-sel.plg-s-changed").count():
            break
    expect(details.locator(".plg-pill")).to_have_text("changed")
    expect(details.locator(".plg-d-chg")).to_contain_text("input 1:")
    # the IR diff and the parameter table of this step, sorted by bytes
    page.click("#pl-tabs button[data-tab=diff]")
    assert page.is_visible("#pl-pane-diff .pl-side-by-side")
    page.click("#pl-tabs button[data-tab=params]")
    assert "transposed" in page.inner_text("#pl-pane-params")
    page.click("#pl-pane-params th:has-text('bytes')")
    page.click("#pl-pane-params th:has-text('bytes')")  # descending
    first_row = page.inner_text("#pl-pane-params tbody tr:first-child")
    assert "features.3.0.block" in first_row and "4.1 kB" in first_row
    page.screenshot(path=str(tmp_path / "params.png"))
    # the arrow keys step on another tab too; the graph is drawn when its tab is shown again
    page.keyboard.press("ArrowRight")
    expect(page.locator("#pl-title")).to_have_text("#8 fuse-ops")
    page.click("#pl-tabs button[data-tab=graph]")
    expect(g.root.locator("g.plg-k-call").first).to_be_visible()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#pl-title")).to_have_text("#6 fold-constant")
    # search highlights nodes and lists them
    assert g.search("layer_norm") == 5
    expect(g.root.locator("g.plg-hit")).to_have_count(5)
    expect(g.root.locator(".plg-results .plg-r-item")).to_have_count(5)
    expect(g.root.locator(".plg-hits")).to_have_text("5 found")
    g.root.locator(".plg-results .plg-r-item").nth(2).click()
    assert g.selected == ["main/layer_norm_2"]
    g.assert_inside(g.node("main/layer_norm_2"), "the picked hit")
    assert problems == []


def test_failed_report_opens_on_the_failure(browser, failed_trace, tmp_path):
    page, problems = open_report(browser, failed_trace, tmp_path / "f.html")
    g = Graph(page, page.locator("#pl-graph.plg"))
    expect(page.locator("#pl-title")).to_have_text("#2 replica-lazy-transform-params")
    assert "AssertionError" in page.inner_text("#pl-error")
    failed = g.root.locator("g.plg-s-failed")
    expect(failed).to_have_count(1)
    g.assert_inside(failed, "the failed node")  # the view opens on it
    failed.click()
    expect(g.details.locator(".plg-d-title")).to_have_text("@transform")
    expect(g.details.locator(".plg-pill")).to_have_text("failed")
    page.click("#pl-tabs button[data-tab=ir]")
    assert "call @transform" in page.inner_text("#pl-pane-ir .pl-failed-line")
    page.screenshot(path=str(tmp_path / "failed.png"))
    assert problems == []


def test_names_from_the_model_stay_text_in_the_report(browser, evil_trace, tmp_path):
    page, problems = open_report(browser, evil_trace, tmp_path / "evil.html")
    g = Graph(page, page.locator("#pl-graph.plg"))
    scripts = page.evaluate("document.scripts.length")
    for step in ("0", "1"):
        page.click(f".pl-step-row[data-step='{step}']")
        titles = g.root.locator("text.plg-title").evaluate_all("ts => ts.map((t) => t.textContent)")
        assert EVIL in titles  # the input, drawn as it is named
        if step == "1":
            assert EVIL + ".w.exp" in titles  # the folded weight
            label = g.root.locator("g.plg-frame text.plg-frame-label")
            expect(label).to_have_text(f"⊟ {EVIL}.layer")
        g.node("main/script_alert_1_script_q_a_b").click()
        expect(g.details.locator(".plg-d-title")).to_have_text(EVIL)
        for tab in ("ir", "diff", "params", "graph"):
            page.click(f"#pl-tabs button[data-tab={tab}]")
        assert '$"<script>alert(1)</script> \\"q\\" \'a\' & b.w' in page.inner_text("#pl-pane-ir")
    assert g.search("alert(1)") >= 1
    assert g.root.locator(".plg-results .plg-r-item", has_text="<script>").count() >= 1
    # no element made from a name, no script run
    assert page.evaluate("document.scripts.length") == scripts
    assert page.locator("#pl-app script, #pl-app img, #pl-app iframe").count() == 0
    assert page.evaluate("window.__alerts") == []
    assert problems == []


# The part of anywidget's model API a widget's render() uses, over a plain object; the state
# is what the kernel sends (ipywidgets' state, its binary buffers put back as DataViews, as the
# widget manager does: `withBuffers`); a custom message (`send`) goes to `window.toKernel`.
HOST = """
<div id="root" style="width:%(width)s"></div>
<script type="module">
const state = %(state)s, listeners = {};
window.withBuffers = (st, buffers) => {
  for (const [path, b64] of buffers) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    let o = st;
    for (const k of path.slice(0, -1)) o = o[k];
    o[path.at(-1)] = new DataView(bytes.buffer);
  }
  return st;
};
withBuffers(state, %(buffers)s);
window.saved = [];
const plain = (v) => v instanceof DataView ? JSON.parse(new TextDecoder().decode(v)) : v;
const model = {
  get: (k) => state[k],
  set: (k, v) => { state[k] = v; (listeners["change:" + k] || []).forEach((f) => f()); },
  on: (event, f) => { (listeners[event] = listeners[event] || []).push(f); },
  save_changes: () => {
    const copy = Object.fromEntries(Object.entries(state).map(([k, v]) => [k, plain(v)]));
    window.saved.push(JSON.parse(JSON.stringify(copy)));
  },
  send: (content) => window.toKernel(content),
};
window.model = model;
// an update from the kernel: every key of it set, then each key's change event in its order
// (Backbone's `set(attrs)`, which the widget manager calls)
window.fromKernel = (changes, buffers) => {
  withBuffers(changes, buffers);
  Object.assign(state, changes);
  for (const k of Object.keys(changes)) (listeners["change:" + k] || []).forEach((f) => f());
};
const url = URL.createObjectURL(new Blob([%(esm)s], { type: "text/javascript" }));
const widget = (await import(url)).default;
widget.render({ model, el: document.getElementById("root") });
window.ready = true;
</script>
"""
SYNCED = ("data", "baseline_data", "selected", "query", "collapsed", "mode", "height")


def sent_state(view, keys=SYNCED) -> tuple[dict, list]:
    """The state of ``keys`` as the kernel sends it: JSON, and each binary buffer as its path
    and base64 text (the page's ``withBuffers`` puts them back)."""
    from ipywidgets.widgets.widget import _remove_buffers

    state, paths, buffers = _remove_buffers(view.get_state(list(keys)))
    return state, [[p, base64.b64encode(b).decode()] for p, b in zip(paths, buffers, strict=True)]


def link_kernel(page, view) -> None:
    """Every update `view` sends its front end from now on (`send_state`'s messages, through
    its comm) goes to the front end `host_view` made in `page` (`fromKernel`), as it is
    sent: Python moving the view moves the page's."""

    def send(data=None, metadata=None, buffers=None):
        if isinstance(data, dict) and data.get("method") == "update":
            pairs = zip(data["buffer_paths"], buffers or [], strict=True)
            sent = [[p, base64.b64encode(b).decode()] for p, b in pairs]
            page.evaluate("([st, bufs]) => fromKernel(st, bufs)", [data["state"], sent])

    view.comm.send = send


def host_view(page, state: dict, buffers: list, width: str = "1000px") -> Graph:
    """The graph view's front end in `page` on `state` and `buffers` (`sent_state`), as the
    stepper's widget runs it, with the stand-in model `HOST` defines, in a box `width` wide."""
    html = HOST % {
        "width": width,
        "state": json.dumps(state),
        "buffers": json.dumps(buffers),
        "esm": json.dumps(graph_esm()),
    }
    page.set_content(f"<style>{graph_css()}</style>{html}")
    page.wait_for_function("window.ready === true")
    return Graph(page, page.locator("#root .plg"))


def test_graph_view_front_end(browser, convnext_trace, tmp_path):
    step = convnext_trace["fold-constant"]
    view = GraphView(step, step.previous)
    state, buffers = sent_state(view)
    assert [p for p, _ in buffers] == [["data"]]  # the payload: one binary buffer
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    page.set_default_timeout(5000)
    problems = []
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else problems.append(r.url))
    asked = []  # the widget's custom messages to the kernel
    page.expose_function("toKernel", lambda content: asked.append(content))
    g = host_view(page, state, buffers)
    expect(g.root).to_have_css("height", "640px")  # the `height` trait
    saved = lambda key: page.evaluate(f"window.saved.length ? window.saved.at(-1).{key} : null")  # noqa: E731
    # a click selects a node: `selected` is synced back and the details drawer shows it
    g.go_to("main/conv2d")
    g.node("main/conv2d").click()
    assert saved("selected") == "main/conv2d"
    assert "[4, 4]" in g.details.inner_text()
    view.selected = saved("selected")
    assert view.selected_details["attrs"]["strides"] == "[4, 4]"
    # Python selects a node: the view goes there
    page.evaluate("model.set('selected', 'main/layer_norm_3')")
    g.wait_selected("main/layer_norm_3")
    g.assert_inside(g.node("main/layer_norm_3"), "the node Python selected")
    # Python searches; the browser's search box shows it
    page.evaluate("model.set('query', 'matmul')")
    expect(g.root.locator("input.plg-search")).to_have_value("matmul")
    expect(g.root.locator("g.plg-hit")).to_have_count(5)
    expect(g.root.locator(".plg-hits")).to_have_text("5 found")
    page.evaluate("model.set('query', '')")
    expect(g.root.locator("g.plg-hit")).to_have_count(0)
    # Python collapses a group; a click shows the group's details, a double-click expands it
    view.collapse("features.1.0")
    page.evaluate("(c) => model.set('collapsed', c)", view.collapsed)
    group = g.group("features.1.0")
    expect(group).to_have_count(1)
    expect(g.node("main/gelu")).to_have_count(0)  # inside it
    g.press("f")  # the whole graph: the group is in view (as a labelled block, zoomed out)
    target = g.group_target("features.1.0")
    target.click()
    assert saved("selected") == "group:features.1.0"
    expect(g.details.locator(".plg-d-title")).to_have_text("features.1.0")
    assert "features.1.0" in g.details.inner_text()
    target.dblclick()
    g.settle()  # opened once its layout is back from the Web Worker
    assert saved("collapsed") == []
    expect(g.node("main/gelu")).to_have_count(1)
    view.collapsed = saved("collapsed")
    assert view.collapsed == []
    # the before / after toggle: the baseline's payload was not sent with the step's; the
    # first click asks the kernel for it, then draws it, and the side is synced back
    ghost = next(n["id"] for n in view.payload["nodes"] if n.get("st") == "removed")
    g.go_to(ghost)
    g.node(ghost).click()
    assert saved("selected") == ghost and asked == []
    g.root.locator(".plg-before").click()
    wait_until(page, lambda: asked == [{"want": "baseline"}], "the request for the baseline")
    view._on_msg(view, asked[0], [])  # what the kernel does with it: sends baseline_data
    state, buffers = sent_state(view, ["baseline_data"])
    assert [p for p, _ in buffers] == [["baseline_data"]]
    page.evaluate(
        "([s, b]) => model.set('baseline_data', withBuffers(s, b).baseline_data)", [state, buffers]
    )
    expect(g.root).to_have_attribute("data-mode", "before")
    g.wait_selected(ghost.removeprefix("removed:"))  # the node itself, on the baseline's graph
    assert saved("mode") == "before"
    page.evaluate("model.set('mode', 'after')")
    expect(g.root).to_have_attribute("data-mode", "after")
    g.root.locator(".plg-before").click()  # asked once: the baseline is kept
    expect(g.root).to_have_attribute("data-mode", "before")
    page.evaluate("model.set('mode', 'after')")
    assert len(asked) == 1
    # a new step from Python: drawn, in its default state
    view.show(convnext_trace["fuse-ops"], step)
    state, buffers = sent_state(view, ["data"])
    page.evaluate("([s, b]) => model.set('data', withBuffers(s, b).data)", [state, buffers])
    expect(g.root.locator("g.plg-k-call").first).to_be_visible()
    # typing a search in the browser sets `query` in Python
    page.screenshot(path=str(tmp_path / "graph_view.png"))
    assert problems == []
    g.search("matmul")
    assert saved("query") == "matmul"


def test_steps_sharing_one_payload_are_each_drawn(browser, tmp_path):
    # passes returning equal modules of their own: one payload script for the three steps;
    # each is drawn from it, titled as itself, with the before / after toggle past the first
    import explorer
    from compiler.ir import parse

    text = """
weights {
  $a: f32[3] = [1.0, 2.0, 3.0]
}
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %e: f32[3] = exp($a)
  %y: f32[2, 3] = add(%x, %e)
  return %y
}
"""
    m0, m1, m2 = parse(text), parse(text), parse(text)
    trace = explorer.Trace(
        [
            explorer.Step(0, "import", "module", module=m0),
            explorer.Step(1, "pass", "copy-a", before=m0, module=m1),
            explorer.Step(2, "pass", "copy-b", before=m1, module=m2),
        ]
    )
    path = tmp_path / "r.html"
    page, problems = open_report(browser, trace, path)
    assert len(re.findall(r'id="pl-g\d+"', path.read_text())) == 1
    g = Graph(page, page.locator("#pl-graph.plg"))
    for i, name in enumerate(("module", "copy-a", "copy-b")):
        page.locator(f".pl-step-row[data-step='{i}']").click()
        expect(page.locator("#pl-title")).to_have_text(f"#{i} {name}")
        assert {"main/e", "main/y"} <= drawn(g)
        assert g.root.locator(DIFF).count() == 0
        toggle = expect(g.root.locator(".plg-mode"))
        toggle.to_be_visible() if i else toggle.to_be_hidden()
    assert problems == []
