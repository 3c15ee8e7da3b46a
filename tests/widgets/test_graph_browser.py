"""Issue #12's acceptance test: the graph component (static/graph.js) at the first view of the
fold-constant step of the weight-bloat replica, in the three front ends: the HTML report, the
Panel app and the stepper in JupyterLab, in headless Chromium.

Two traces through ``replica-linear-broadcast,fold-constant``: the one-linear replica
(``broadcast_trace``: 56 copies of a 262 kB weight, no module groups) and a small ConvNeXt
(module groups, so that a group can be collapsed, searched into and expanded). At the first
view of fold-constant:

- the labels are readable (a box title at least 10 px high on the screen),
- the first changed node (the view opens on the first finding, else the first change) is
  inside the graph's stage, and every change is drawn with its colour,
- ``n`` moves the view to the next change and selects it (``p`` back),
- a search finds a node inside a collapsed group and shows it,
- a node selected on the "after" side is selected on the "before" side as its counterpart,
  and back,
- a double-click expands a group and another collapses it (``data-boxes`` changes),
- the details drawer gives sizes in human units, and its inputs / users links move the
  selection,
- ``f`` fits the whole graph in the stage,
- the layouts are made in a Web Worker (made from the engine's text in the page),
- the selection (and the groups collapsed) reach Python: the Panel app's state, the kernel
  behind JupyterLab.

One browser (and one page, server or JupyterLab) per front end, shared by its tests.
"""

from __future__ import annotations

import re

import pytest

import explorer
from compiler import models
from tests.widgets.graph_page import TIMEOUT, Graph, sel, wait_until
from tests.widgets.lab import JUPYTER, jupyterlab, run_all
from tests.widgets.test_browser import LOCAL, sync_api
from widgets.graph_data import graph_payload

pytestmark = pytest.mark.browser
expect = sync_api.expect

CONVNEXT = "models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)"
PIPELINE = "replica-linear-broadcast,fold-constant"
STEP = "fold-constant"


@pytest.fixture(scope="module")
def convnext_bloat():
    """A small ConvNeXt through the replica and fold-constant: 8 or 4 copies of each
    pointwise weight, inside the blocks' module groups."""
    return explorer.explore(eval(CONVNEXT, {"models": models}), pipeline=PIPELINE)  # noqa: S307


def new_page(browser, local: tuple[str, ...], width: int = 1400, height: int = 900):
    """A page that records script errors and any request leaving ``local`` URLs."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT)
    expect.set_options(timeout=TIMEOUT)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.on("request", lambda r: None if r.url.startswith(local) else problems.append(r.url))
    return page, problems


def first_view(trace):
    """The payload the component is given at fold-constant (computed as the front ends do)."""
    step = trace[STEP]
    return graph_payload(step, step.previous)


def matched_id(payload: dict, i: int) -> str:
    """The id of node ``i``'s counterpart in the baseline (its ghost's, a pair's, or its own)."""
    node = payload["nodes"][i]
    if node.get("st") == "removed":
        return node["id"][len("removed:") :]
    return dict((k, v) for k, v in payload["pairs"]).get(i, node["id"])


# ----- the checks, shared by the front ends ----------------------------------------------------


def check_readable_and_on_the_change(g: Graph, payload: dict) -> None:
    """Readable labels; the first changed node (the view opens on the first finding, else
    the first change: ``focus``) inside the stage, with its diff colour."""
    expect(g.root).to_have_attribute("data-mode", "after")
    title = g.root.locator("g.plg-n text.plg-title").first
    height = title.evaluate("t => t.getBoundingClientRect().height")
    assert height >= 10, f"box titles are {height:.1f} px high"
    nodes = payload["nodes"]
    focus = nodes[payload["focus"]]
    changed = "g.plg-n.plg-s-added, g.plg-n.plg-s-changed, g.plg-n.plg-s-removed, g.plg-n.plg-bad"
    assert focus.get("bad") and focus.get("st") == "added"  # the broadcast copy
    expect(g.node(focus["id"])).to_have_class(re.compile(r"\bplg-s-added\b.*\bplg-bad\b"))
    g.assert_inside(g.node(focus["id"]), f"the first finding {focus['id']}")
    focus_title = g.node(focus["id"]).locator("text.plg-title")
    assert focus_title.evaluate("t => t.getBoundingClientRect().height") >= 10
    # every change is drawn (none hidden in a collapsed group), with its colour
    for k in payload["changes"]:
        st = nodes[k]["st"]
        expect(g.node(nodes[k]["id"])).to_have_class(re.compile(rf"\bplg-s-{st}\b"))
    g.settle()
    assert g.root.locator(changed).count() >= len(payload["changes"])


def check_the_drawer_keeps_the_node(g: Graph, payload: dict) -> None:
    """A click on the first finding opens its details beside the stage; the finding stays
    in view."""
    focus = payload["nodes"][payload["focus"]]["id"]
    g.node(focus).click()
    g.wait_selected(focus)
    expect(g.root.locator(".plg-details")).to_have_class(re.compile(r"\bplg-open\b"))
    g.assert_inside(g.node(focus), "the node whose details the drawer shows")


def check_next_change(g: Graph, payload: dict) -> None:
    """``n`` twice: the view moves to each next change (unless it is already drawn whole in
    the stage: the view is placed to keep the change's open group whole, so two changes of
    one group may share a view), selected and inside the stage."""
    ids = [payload["nodes"][k]["id"] for k in payload["changes"]]
    for k in range(2):
        before = g.transform
        shown = g.node(ids[k]).count() == 1 and g.inside(g.node(ids[k]))
        g.press("n")
        g.wait_selected(ids[k])
        moved = g.transform != before
        assert moved or shown, f"the view did not move to change {k + 1} ({ids[k]})"
        g.assert_inside(g.node(ids[k]), f"change {k + 1} ({ids[k]})")
        expect(g.root.locator(".plg-change-info")).to_have_text(f"{k + 1}/{len(ids)}")
    g.press("p")
    g.wait_selected(ids[0])


def check_before_after(g: Graph, payload: dict) -> None:
    """A changed node, a ghost, the ghost of a removed weight and a renamed node selected on
    the "after" side: on "before" their counterparts are selected (a box of their own, in
    view); back on "after" the node is selected again. ``b`` toggles too."""
    nodes = payload["nodes"]
    changed = next(k for k in payload["changes"] if nodes[k].get("st") == "changed")
    removed = [k for k in payload["changes"] if nodes[k].get("st") == "removed"]
    ghost = next(k for k in removed if nodes[k]["k"] == "op")
    weight = next(k for k in removed if nodes[k]["k"] == "weight")
    renamed = [k for k, _ in payload["pairs"][:1]]  # matched to a node of another id
    for i in (changed, ghost, weight, *renamed):
        node_id, other = nodes[i]["id"], matched_id(payload, i)
        g.root.locator(".plg-after").click()
        expect(g.root).to_have_attribute("data-mode", "after")
        g.go_to(node_id)
        g.node(node_id).click()
        g.wait_selected(node_id)
        g.root.locator(".plg-before").click()
        expect(g.root).to_have_attribute("data-mode", "before")
        expect(g.root.locator(".plg-before")).to_have_class(re.compile(r"\bplg-on\b"))
        expect(g.details.locator(".plg-d-title")).to_have_text(nodes[i]["t"])
        id_row = g.details.locator("tr", has=g.page.locator("th", has_text=re.compile("^id$")))
        expect(id_row.locator("td")).to_have_text(other)
        g.settle()  # the before side is drawn once its layouts come back from the worker
        expect(g.root.locator("g.plg-s-added")).to_have_count(0)  # nothing is added before
        # the weight this step removes has a box of its own there (a line of its reader
        # on any other side)
        g.wait_selected(other)
        g.assert_inside(g.node(other), "the counterpart")
        g.root.locator(".plg-after").click()
        expect(g.root).to_have_attribute("data-mode", "after")
        g.wait_selected(node_id)
        g.assert_inside(g.node(node_id), "the node back on 'after'")
    g.go_to(nodes[changed]["id"])
    g.press("b")  # the key toggles too
    expect(g.root).to_have_attribute("data-mode", "before")
    g.wait_selected(matched_id(payload, changed))
    g.press("b")
    expect(g.root).to_have_attribute("data-mode", "after")
    g.wait_selected(nodes[changed]["id"])


def check_details(g: Graph, payload: dict, unit: str) -> None:
    """The first finding's details: its size in human units (``unit``); a link to its user
    moves the selection there, the user's link to its input back."""
    nodes = payload["nodes"]
    focus = nodes[payload["focus"]]
    drawer = g.root.locator(".plg-details")
    if "plg-open" in drawer.get_attribute("class"):  # a node is selected: close its details
        drawer.locator(".plg-close").click()
        expect(drawer).not_to_have_class(re.compile(r"\bplg-open\b"))
        assert g.selected == []
    g.go_to(focus["id"])
    g.node(focus["id"]).click()
    g.wait_selected(focus["id"])
    expect(drawer).to_have_class(re.compile(r"\bplg-open\b"))
    expect(drawer.locator(".plg-d-title")).to_have_text(focus["t"])
    bytes_row = drawer.locator(".plg-d-table tr", has=g.page.locator("th", has_text="bytes"))
    expect(bytes_row.locator("td")).to_have_text(re.compile(rf"^\d+(\.\d+)? {unit}$"))
    user = next(nodes[e[1]] for e in payload["edges"] if nodes[e[0]] is focus and not e[3] & 1)
    users = drawer.locator(".plg-d-table tr", has=g.page.locator("th", has_text="users"))
    users.locator("a.plg-link", has_text=user["t"]).first.click()
    g.wait_selected(user["id"])
    g.assert_inside(g.node(user["id"]), "the linked user")
    expect(drawer.locator(".plg-d-title")).to_have_text(user["t"])
    inputs = drawer.locator(".plg-d-table tr", has=g.page.locator("th", has_text="inputs"))
    inputs.locator("a.plg-link", has_text=focus["t"]).first.click()
    g.wait_selected(focus["id"])


def check_search_in_a_collapsed_group(g: Graph, payload: dict, query: str, node_id: str) -> None:
    """Everything collapsed, ``query`` names ``node_id`` (inside a group): it is found, and
    Enter opens its groups, selects it and brings it into view."""
    g.root.locator(".plg-collapse-all").click()
    expect(g.node(node_id)).to_have_count(0)  # inside a collapsed group: not drawn
    g.settle()
    assert g.root.locator("g.plg-n.plg-group").count() > 0
    g.root.locator("input.plg-search").fill(query)
    head = g.root.locator(".plg-results .plg-r-head")
    expect(head).to_be_visible()
    count = int(head.get_attribute("data-count"))
    assert count > 0, f"no hit for {query!r}"
    items = g.root.locator(".plg-results .plg-r-item")
    expect(items).to_have_count(min(count, 300))
    i = next(k for k, n in enumerate(payload["nodes"]) if n["id"] == node_id)
    hits = [int(x) for x in items.evaluate_all("xs => xs.map((x) => x.dataset.i)")]
    assert i in hits
    g.root.locator("input.plg-search").press("Enter")
    expect(g.root.locator("g.plg-n.plg-hit").first).to_be_visible()
    g.assert_inside(g.root.locator("g.plg-sel"), "the selected hit")
    assert g.root.locator("g.plg-sel.plg-hit").count() == 1  # the selection is a hit
    # walk to the node asked for (Enter goes through the hits in graph order); a weight
    # drawn as a line of its reader is shown by the reader's box, its details by itself
    node = payload["nodes"][i]
    box = node_id if "inl" not in node else payload["nodes"][node["inl"]]["id"]
    title = g.root.locator(".plg-details .plg-d-title")
    for _ in range(count):
        if g.selected == [box] and title.inner_text() == node["t"]:
            break
        g.root.locator("input.plg-search").press("Enter")
    assert g.selected == [box] and title.inner_text() == node["t"], (
        f"Enter through the hits of {query!r} did not reach {node_id}: {g.selected}"
    )
    g.assert_inside(g.node(box), node_id)
    g.root.locator("input.plg-search").fill("")
    expect(g.root.locator("g.plg-hit")).to_have_count(0)


def check_expand_and_collapse(g: Graph, group: str) -> None:
    """A double-click on a collapsed group draws its nodes in a frame; a double-click on the
    frame's label collapses it again."""
    g.root.locator(".plg-collapse-all").click()
    box = g.group(group)
    expect(box).to_have_count(1)
    closed = g.boxes
    box.dblclick()
    frame = g.root.locator(f"g.plg-frame[data-group={sel(group)}]")
    expect(frame).to_have_count(1)
    expect(box).to_have_count(0)
    opened = g.boxes
    assert opened > closed
    frame.locator("text.plg-frame-label").dblclick()
    expect(box).to_have_count(1)
    expect(frame).to_have_count(0)
    assert g.boxes == closed
    g.root.locator(".plg-expand-all").click()
    assert g.boxes > opened and g.root.locator("g.plg-n.plg-group").count() == 0


def check_fit(g: Graph) -> None:
    """``f``: the whole graph inside the stage."""
    g.press("f")
    g.assert_inside(g.vp, "the whole graph")


# search targets in the ConvNeXt: an op and a weight drawn on its reader, both in a block
SEARCHES = [("gelu", "main/gelu"), ("layer_scale", "$features.1.0.layer_scale")]
GROUP = "features"


def check_all(g: Graph, payload: dict, unit: str, groups: bool) -> None:
    """Every check in turn."""
    check_readable_and_on_the_change(g, payload)
    check_the_drawer_keeps_the_node(g, payload)
    check_next_change(g, payload)
    check_before_after(g, payload)
    check_details(g, payload, unit)
    if groups:
        for query, node_id in SEARCHES:
            check_search_in_a_collapsed_group(g, payload, query, node_id)
        check_expand_and_collapse(g, GROUP)
    check_fit(g)
    check_laid_out_off_the_page_thread(g)


def check_laid_out_off_the_page_thread(g: Graph) -> None:
    """The layouts were made in the Web Worker (static/graph/worker.js), not on the page's
    thread: this front end lets the component make one from the engine's text."""
    assert g.root.get_attribute("data-layout-in") == "worker"


# ----- the HTML report -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report_page(browser):
    page, problems = new_page(browser, LOCAL)
    yield page, problems
    page.close()


def open_report(page, trace, path):
    trace.to_html(path)
    page.goto(path.as_uri())
    page.click(f".pl-step-row[data-step='{trace[STEP].index}']")
    expect(page.locator("#pl-title")).to_have_text(f"#{trace[STEP].index} {STEP}")
    return Graph(page, page.locator("#pl-graph.plg"))


def test_report_bloat_replica(report_page, broadcast_trace, tmp_path):
    page, problems = report_page
    g = open_report(page, broadcast_trace, tmp_path / "bloat.html")
    check_all(g, first_view(broadcast_trace), "MB", groups=False)
    assert problems == []


def test_report_convnext(report_page, convnext_bloat, tmp_path):
    page, problems = report_page
    g = open_report(page, convnext_bloat, tmp_path / "convnext.html")
    check_all(g, first_view(convnext_bloat), "kB", groups=True)
    assert problems == []


# ----- the Panel app ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app_page(browser):
    page, problems = new_page(browser, ("http://localhost:", "blob:", "data:", "about:"))
    yield page, problems
    page.close()


def open_app(page, trace):
    """Serve ``trace`` and open it at fold-constant: ``(server, graph)``."""
    from widgets.app import serve

    srv = serve(trace, block=False)
    page.goto(srv.url)
    page.locator(".plg g.plg-n").first.wait_for()
    page.locator(f".pl-step-row[data-step='{trace[STEP].index}']").click()
    expect(page.locator(".pl-step-title")).to_have_text(f"#{trace[STEP].index} {STEP}")
    g = Graph(page, page.locator(".plg"))
    payload = first_view(trace)
    expect(g.node(payload["nodes"][payload["focus"]]["id"])).to_be_visible()  # the step's data
    first = trace[STEP].index
    wait_until(page, lambda: srv.apps and srv.apps[0].index == first, "the step in Python")
    return srv, g


@pytest.mark.parametrize("which", ["bloat replica", "convnext"])
def test_app(which, app_page, broadcast_trace, convnext_bloat):
    page, problems = app_page
    trace = broadcast_trace if which == "bloat replica" else convnext_bloat
    srv, g = open_app(page, trace)
    try:
        payload = first_view(trace)
        unit = "MB" if trace is broadcast_trace else "kB"
        check_all(g, payload, unit, groups=trace is convnext_bloat)
        app = srv.apps[0]
        focus = payload["nodes"][payload["focus"]]["id"]
        g.go_to(focus)
        wait_until(page, lambda: app.graph.selected == focus, "the selection in Python")
        assert app.selected_details["id"] == focus and app.graph.mode == "after"
        if trace is convnext_bloat:  # expand all: nothing collapsed, in Python too
            wait_until(page, lambda: app.graph.collapsed == [], "the expanded groups in Python")
    finally:
        srv.stop()
    assert problems == []


# ----- the stepper in JupyterLab ---------------------------------------------------------------

LAB_CELLS = [
    "import ipywidgets as w\nimport explorer\nfrom compiler import models\n"
    "from tests.explorer.test_diff import LINEAR_4D, linear_module\n"
    f"pipeline = {PIPELINE!r}\n"
    "traces = {'bloat replica': explorer.explore(linear_module(LINEAR_4D), pipeline=pipeline),\n"
    f"          'convnext': explorer.explore({CONVNEXT}, pipeline=pipeline)}}\n"
    "steppers, echoes = {}, {}",
    *(
        f"stepper = steppers[{name!r}] = traces[{name!r}].stepper()\n"
        f"stepper.index = traces[{name!r}][{STEP!r}].index\n"
        f"echo = echoes[{name!r}] = w.Label()\n"
        "stepper.graph.observe(lambda c, e=echo: setattr(e, 'value', "
        "'python: ' + c['new']), 'selected')\n"
        "w.VBox([stepper, echo])"
        for name in ("bloat replica", "convnext")
    ),
    "for name, s in steppers.items():\n"
    "    g = s.graph\n"
    "    print(f'{name}: selected={g.selected!r} mode={g.mode} collapsed={len(g.collapsed)}')",
]


@pytest.fixture(scope="module")
def lab_page(browser, tmp_path_factory):
    """JupyterLab on a notebook of LAB_CELLS, every cell run: ``(page, problems)``."""
    if not JUPYTER.exists():
        pytest.skip("jupyter is not installed in this environment")
    with jupyterlab(tmp_path_factory.mktemp("lab"), LAB_CELLS) as url:
        page, problems = new_page(
            browser, (url.split("/lab/")[0], "data:", "blob:", "about:"), 1400, 1000
        )
        page.set_default_timeout(60000)
        page.goto(url)
        # the file browser closed, as bench/screenshots.py does: with it, the stepper's graph
        # is 600 px wide at 1400 px, and 260 px once the details drawer is open
        page.wait_for_function("!!window.jupyterapp && !!window.jupyterapp.shell.currentWidget")
        page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
        run_all(page)
        yield page, problems
        page.close()


def run_cell(page, index: int) -> None:
    """Run one cell of the open notebook again (as Shift+Enter on it would)."""
    page.evaluate(
        """(i) => { const nb = window.jupyterapp.shell.currentWidget.content;
                    nb.activeCellIndex = i; nb.mode = 'command';
                    return window.jupyterapp.commands.execute('notebook:run-cell'); }""",
        index,
    )


@pytest.mark.parametrize("which", ["bloat replica", "convnext"])
def test_jupyterlab_stepper(which, lab_page, broadcast_trace, convnext_bloat):
    page, problems = lab_page
    trace = broadcast_trace if which == "bloat replica" else convnext_bloat
    cell = 1 if which == "bloat replica" else 2
    output = page.locator(".jp-Cell").nth(cell).locator(".jp-OutputArea-output")
    expect(output.locator(".pl-header")).to_contain_text(f"#{trace[STEP].index} {STEP}")
    payload = first_view(trace)
    g = Graph(page, output.locator(".plg"))
    expect(g.node(payload["nodes"][payload["focus"]]["id"])).to_be_visible()
    g.root.scroll_into_view_if_needed()
    unit = "MB" if trace is broadcast_trace else "kB"
    check_all(g, payload, unit, groups=trace is convnext_bloat)
    # the selection reaches the kernel: a kernel-side observer echoes it back, and a cell run
    # afterwards prints it
    focus = payload["nodes"][payload["focus"]]["id"]
    g.go_to(focus)
    expect(output.locator(".widget-label", has_text="python: ")).to_have_text(f"python: {focus}")
    run_cell(page, 3)
    printed = page.locator(".jp-Cell").nth(3).locator(".jp-OutputArea-output")
    expect(printed).to_contain_text(f"{which}: selected={focus!r} mode=after collapsed=0")
    # the component's keys (n, p, b, f, /) did not reach JupyterLab's (b: insert a cell)
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(len(LAB_CELLS))
    assert problems == []
