"""Bounded rendering (issue #39, item 4): what a view makes of a shared trace is bounded by
what a person reads, not by what the file holds.

- Amplification: a trace of some 30 KB whose rewrites matched 64 names of 4,090 characters by
  a rule of 4,000 characters (every node of every step "made" by it) rendered a report of
  hundreds of times its size; every text of a node is now cut with a note
  (``… (N more characters)``), why lines per node and per step are capped, and the report
  stays within a stated ratio of the file.
- Deep module paths: a 5,000-segment module path raised a raw RecursionError in the group
  tree (report, stepper, app); the groups are now at most 64 deep (the rest said in the last
  level) and built without recursion, and the graph component walks groups with stacks of its
  own (tested on a crafted 5,000-deep payload in Chromium).
- The budgets: a report or a payload past its budget is one clear ``RenderLimitError``.
"""

from __future__ import annotations

import json
import re
import tracemalloc
import zipfile

import pytest

import explorer
from compiler import LimitError, models
from explorer.rewrites import Rewrite, Why, origin, whys
from explorer.store import load, save
from widgets import bounds, graph_data
from widgets.app import build_app
from widgets.bounds import RenderLimitError, clip, clip_id, clip_tree, module_path
from widgets.escape import esc, jsonable
from widgets.graph_view import json_buffer
from widgets.report import report_html, write_html
from widgets.rewrites_html import MAX_RULE_ROWS, rewrites_html
from widgets.stepper import PassStepper

LONG_RULE = "r/" + "R" * 4000
LONG_NAMES = [f"m{i:02d}" + "x" * 4090 for i in range(64)]
DEEP = 5000


def _rewrite_zip(path, change) -> None:
    """Rewrite the members of a trace file through ``change(members)``, deflated (as save
    writes them: a crafted file is as small as its repeated texts compress)."""
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    change(members)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in members.items():
            zf.writestr(k, v)


def amplifying_trace(path):
    """A 25-layer MLP through the default pipeline, saved with every step's rewrite made
    by a 4,000-character rule out of 64 names of 4,090 characters, producing every node."""
    trace = explorer.explore(models.mlp((8,) * 25, batch=2))
    save(trace, path)

    def change(members):
        manifest = json.loads(members["manifest.json"])
        for s, rec in zip(trace.steps, manifest["steps"], strict=True):
            if s.module is not None:
                rec["rewrites"] = [[LONG_RULE, LONG_NAMES, list(s.graph.nodes)[:64], 0]]
        members["manifest.json"] = json.dumps(manifest).encode()

    _rewrite_zip(path, change)
    return trace


@pytest.fixture(scope="module")
def amplified(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bounds")
    plain = folder / "plain.passlens"
    trace = amplifying_trace(folder / "amp.passlens")
    save(trace, plain)
    return load(folder / "amp.passlens"), (folder / "amp.passlens").stat().st_size, load(plain)


RATIO = 40  # the report of the crafted file over the plain one's, per byte of the file


def test_a_trace_of_long_matched_names_renders_a_bounded_report(amplified, tmp_path):
    trace, size, plain = amplified
    assert size < 40_000
    assert sum(map(len, whys(trace.steps[-1]).values())) < 64 * 4 * 600  # lines cut at 500
    tracemalloc.start()
    try:
        n = write_html(trace, tmp_path / "amp.html")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    base = write_html(plain, tmp_path / "plain.html")
    # before: 15 MB (485x the file) at a 99 MB peak; now about 1 MB
    assert n - base < RATIO * size, (n, base, size)
    assert peak < 60 << 20
    page = (tmp_path / "amp.html").read_text()
    assert "more characters)" in page  # the note, in the why lines and the rewrites view
    assert LONG_NAMES[0] not in page and "R" * 1001 not in page


def test_the_why_lines_say_what_was_cut(amplified):
    trace, _size, _plain = amplified
    step = trace.steps[-1]
    payload = graph_data.graph_payload(step, step.previous)
    lines = [d["why"] for d in payload["details"] if "why" in d]
    assert lines and all(len(w) <= 4 * bounds.MAX_TEXT + 40 for w in lines)
    assert all(re.search(r"… \([\d,]+ more characters\)", w) for w in lines)
    # a why of a reused node names 8 of its 64 matched nodes, then how many more
    w = Why(step, Rewrite("p/r", tuple(LONG_NAMES), ("main/x",)), "reused")
    assert str(w).count(", ") == 7 and str(w).endswith("and 56 more")


def test_the_stepper_and_the_app_send_bounded_payloads(amplified):
    trace, size, _plain = amplified
    stepper = PassStepper(trace)
    sent = []
    for s in trace.steps:
        stepper.index = s.index
        sent.append(len(json_buffer(stepper.graph.data)))
        for tab in stepper.tab_names:
            stepper.tab = tab
    assert max(sent) < 500_000, sent  # before: 2-3 MB per step
    for s in trace.steps:
        assert "R" * 1001 not in rewrites_html(s)
    app = build_app(trace)
    assert app is not None


def test_the_rewrites_view_lists_a_bounded_number_of_rules(amplified):
    trace, _size, _plain = amplified
    step = trace.steps[-1]
    many = tuple(Rewrite(f"p/rule{k}", ("main/a",), ("main/b",)) for k in range(3000))
    step.rewrites, kept = many, step.rewrites
    try:
        html = rewrites_html(step)
    finally:
        step.rewrites = kept
    assert html.count("<td class='num'>") == MAX_RULE_ROWS + 1  # and "all rules"
    assert f"+{3000 - MAX_RULE_ROWS} more rules not listed" in html
    assert "+2000 more rewrites not listed" in html


# ----- the helpers ---------------------------------------------------------------------------


def test_texts_and_ids_are_cut_with_a_note():
    assert clip("x" * 1500) == "x" * 1000 + "… (500 more characters)"
    assert clip("short") == "short" and esc("a" * 1200).endswith("… (200 more characters)")
    a, b = clip_id("n" * 400 + "a"), clip_id("n" * 400 + "b")
    assert a != b and len(a) < 330 and a.startswith("n" * 300)
    assert clip_id("main/x") == "main/x"
    value, n = clip_tree({"k" * 2000: ["v" * 2000, {"x": (1, None, 2.5)}]})
    (key,) = value
    assert key.endswith("(1,000 more characters)") and value[key][0].endswith("characters)")
    assert value[key][1] == {"x": [1, None, 2.5]} and 2000 < n < 2200


def test_nested_values_are_walked_without_recursion():
    def depth(x, key=0) -> int:  # (== on such a value would recurse)
        n = 0
        while x:
            x, n = x[key], n + 1
        return n

    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    assert depth(jsonable(deep)) == 50_000
    assert depth(clip_tree(deep)[0]) == 50_000
    d: dict = {}
    for _ in range(50_000):
        d = {"a": d}
    assert depth(jsonable(d), "a") == 50_000


def test_a_module_path_is_bounded_to_64_levels():
    path = ".".join(f"m{i}" for i in range(DEEP))
    short = module_path(path)
    parts = short.split(".")
    assert len(parts) == bounds.MAX_GROUP_DEPTH
    assert parts[:63] == [f"m{i}" for i in range(63)] and parts[-1] == "… (4,937 more levels)"
    assert module_path("features.1.0.block.3") == "features.1.0.block.3"
    assert module_path("a." + "b" * 500).endswith("… (300 more characters)")


def test_an_origin_chain_of_any_length_is_walked_in_a_loop(monkeypatch):
    """A chain of 5,000 rules, each made from what the one before made: origin() walks it
    with a loop (at most ``limit``), whys() keeps 4 lines of it."""

    class S:
        def __init__(self, index, previous):
            self.index, self.name, self.previous = index, f"p{index}", previous

    steps = [None]
    for k in range(DEEP):
        steps.append(S(k, steps[-1]))
    by_step = {id(s): s for s in steps[1:]}

    def fake_why(step, node):
        k = int(node[1:])
        return Why(by_step[id(step)], Rewrite(f"p/r{k}", (f"n{k - 1}",), (node,))) if k else None

    monkeypatch.setattr("explorer.rewrites.why", fake_why)
    chain = origin(steps[-1], f"n{DEEP - 1}", limit=DEEP)
    assert len(chain) == DEEP - 1


# ----- deep module paths -------------------------------------------------------------------


@pytest.fixture(scope="module")
def deep_trace(tmp_path_factory):
    """An MLP whose every provenance has a 5,000-segment module path (and a weight's long
    name), saved and loaded back."""
    path = tmp_path_factory.mktemp("deep") / "deep.passlens"
    save(explorer.explore(models.mlp((8, 8), batch=2)), path)

    def change(members):
        ir = json.loads(members["ir.json"])
        for k, prov in enumerate(ir["provenances"]):
            prov["module_path"] = ".".join(f"m{k}x{i}" for i in range(DEEP))
        members["ir.json"] = json.dumps(ir).encode()

    _rewrite_zip(path, change)
    return load(path)


def _depth(groups: list[dict]) -> int:
    depth = [0] * len(groups)
    for g in range(1, len(groups)):
        depth[g] = depth[groups[g]["p"]] + 1
    return max(depth)


def test_5000_deep_module_paths_render_everywhere(deep_trace, tmp_path):
    trace = deep_trace
    assert write_html(trace, tmp_path / "deep.html") < 2_000_000
    labels, paths = [], []
    for s in trace.steps:
        p = graph_data.graph_payload(s, s.previous)
        assert _depth(p["groups"]) <= bounds.MAX_GROUP_DEPTH
        assert all(len(g["id"]) < 400 for g in p["groups"])
        labels += [g["label"] for g in p["groups"]]
        paths += [d["provenance"].get("module") for d in p["details"] if "provenance" in d]
    paths = [x for x in paths if x]
    assert paths and all(x.endswith("more characters)") for x in paths)
    assert any(x.endswith(".m4x62.… (4,937 more levels)") for x in labels)
    stepper = PassStepper(trace)
    for s in trace.steps:
        stepper.index = s.index
        for tab in stepper.tab_names:
            stepper.tab = tab
    app = build_app(trace)
    assert app is not None


# ----- the budgets -----------------------------------------------------------------------------


def test_a_report_over_its_budget_is_one_clear_error(amplified, tmp_path):
    trace, _size, _plain = amplified
    out = tmp_path / "big.html"
    with pytest.raises(RenderLimitError, match=r"the HTML report of 9 steps") as info:
        trace.to_html(out, max_bytes=300_000)
    message = str(info.value)
    assert "over the 0 MiB budget" in message or "budget" in message
    assert "the largest steps are #" in message and "max_bytes" in message
    assert isinstance(info.value, LimitError) and not out.exists()
    assert report_html(trace, max_bytes=1 << 30)  # a person who trusts it raises the budget


def test_a_payload_over_its_budget_is_one_clear_error(amplified, monkeypatch):
    trace, _size, _plain = amplified
    monkeypatch.setattr(graph_data, "MAX_PAYLOAD_BYTES", 20_000)
    graph_data._PAYLOADS.table.clear()
    try:
        # the stepper and the app say it where the graph would be, and hide the graph
        said = r"graph not shown: the graph of step #\d+ \(\d+ nodes.*view fewer steps"
        stepper = PassStepper(trace)
        assert re.search(said, stepper.header.value)
        assert stepper.graph.layout.display == "none"
        app = build_app(trace).passlens_app
        assert re.search(said, app.header.object) and not app.graph.visible
    finally:
        graph_data._PAYLOADS.table.clear()


# ----- in Chromium: the component walks 5,000-deep groups with stacks of its own --------------


@pytest.mark.browser
def test_the_component_draws_5000_deep_groups_in_chromium(browser, deep_trace):
    from tests.widgets.test_graph_overview_browser import page_of

    step = deep_trace.steps[-1]
    after = json.loads(json.dumps(graph_data.graph_payload(step, None)))
    groups = [after["groups"][0]]
    for k in range(1, DEEP + 1):  # a payload no passlens makes: 5,000 groups, one in another
        groups.append({"id": f"g{k}", "label": f"m{k}", "p": k - 1, "k": "module", "n": 1})
    after["groups"] = groups
    for node in after["nodes"]:
        node["g"] = DEEP
    after["collapsed"] = []
    page, g, problems = page_of(browser, {"after": after, "before": None})
    # every group open (the layouts, the placing), the overview's rows, the zoomed-out blocks
    assert g.root.locator("g.plg-n").count() == sum("inl" not in n for n in after["nodes"])
    assert page.locator(".plg-ov-row").count() > 10
    page.evaluate("G.fit()")
    g.settle()
    assert problems == []
    page.close()


def test_a_step_over_the_graph_budget_is_said_in_the_stepper_not_raised(monkeypatch):
    """Stepping onto a step whose graph is over its budget shows why in the header and hides
    the graph (the browser would keep the last drawing); the next step draws again."""
    import explorer
    import widgets.graph_data as graph_data
    from compiler import models
    from widgets.stepper import PassStepper

    trace = explorer.explore(models.mlp((4, 3), batch=2), pipeline="fold-constant,dce")
    stepper = PassStepper(trace)
    assert stepper.graph.layout.display != "none"
    monkeypatch.setattr(graph_data, "MAX_PAYLOAD_BYTES", 10)
    stepper.index = 1 if stepper.index != 1 else 2
    assert "graph not shown" in stepper.header.value
    assert stepper.graph.layout.display == "none" and stepper.graph.data == {}
    monkeypatch.setattr(graph_data, "MAX_PAYLOAD_BYTES", 64 << 20)
    stepper.index = 0
    assert "graph not shown" not in stepper.header.value
    assert stepper.graph.layout.display != "none" and stepper.graph.data["after"]
