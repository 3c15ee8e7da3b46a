"""The Jupyter widgets, driven through their state: PassStepper and GraphView."""

import re

import pytest
import traitlets

from tests.widgets.test_report import boxes_at_first
from widgets.boxes import MAX_BOXES
from widgets.graph_view import GraphView, graph_data
from widgets.stepper import PassStepper, Timeline


def statuses(payload: dict) -> set:
    return {n.get("st", "") for n in payload["nodes"]} - {""}


def test_trace_stepper_returns_the_widget(mlp_trace):
    stepper = mlp_trace.stepper()
    assert isinstance(stepper, PassStepper) and stepper.trace is mlp_trace
    # it opens where the report does: no check, so the first pass that changed the module
    assert stepper.index == 5 and repr(stepper) == "<PassStepper step 5/9: decompose-ops>"
    assert isinstance(stepper.timeline, Timeline) and isinstance(stepper.graph, GraphView)
    assert stepper.timeline.key_scope == "focus"  # the notebook keeps its arrow keys


def test_the_stepper_opens_where_the_report_does(checked_trace, convnext_trace):
    """Issue 43: the stepper opened on #0 (the source graph, empty boxes) while the report
    opens on the first finding, else the first change."""
    from widgets.report import report_html

    trace, report = checked_trace
    first = report.findings[0].step
    changed = next(s for s in trace if s.kind == "pass" and s.status == "changed")
    assert first.index > changed.index > 0  # the finding is not the first change
    opened = [PassStepper(trace, report=report), trace.stepper(report)]
    html = report_html(trace, report)
    start = int(re.search(r'"start": ?(\d+)', html).group(1))
    for st in opened:
        assert st.index == first.index == start and st.step is first
        assert st.timeline.index == first.index and f"#{first.index} " in st.header.value
        # drawn there, on the finding's node, as the report is
        payload = st.graph.data["after"]
        assert payload["step"]["index"] == first.index and payload["focus"] is not None
        assert payload["nodes"][payload["focus"]].get("bad") == 1
    # no report: the first pass that changed the module, as the report again
    st = convnext_trace.stepper(False)
    html = report_html(convnext_trace)
    start = int(re.search(r'"start": ?(\d+)', html).group(1))
    assert st.index == start > 0 and convnext_trace[start].status == "changed"
    assert st.graph.data["after"]["changes"]


def test_next_and_prev(mlp_trace):
    st = PassStepper(mlp_trace)
    st.index = 0
    st.next()
    assert st.index == 1 and st.timeline.index == 1
    st.next()
    assert st.index == 2 and st.step.name == "infer-types" and st.timeline.index == 2
    st.prev()
    st.prev()
    assert st.index == 0 and st.prev_button.disabled
    st.prev()  # nothing before the first step
    assert st.index == 0
    st.next_button.click()
    assert st.index == 1 and not st.prev_button.disabled
    st.index = len(mlp_trace) - 1
    assert st.next_button.disabled and st.timeline.index == len(mlp_trace) - 1
    with pytest.raises(traitlets.TraitError):
        st.index = len(mlp_trace)


def test_hide_unchanged_skips_unchanged_steps(mlp_trace):
    st = PassStepper(mlp_trace)
    st.index = 0
    changed = [s.index for s in mlp_trace if s.status != "unchanged"]
    assert changed == [0, 1, 5, 6, 8] and st.timeline.hidden == []
    st.hide_unchanged = True
    assert st.hide_box.value and st.timeline.hidden == [2, 3, 4, 7]
    assert st.visible == changed
    seen = [st.index]
    for _ in range(6):
        st.next()
        seen.append(st.index)
    assert seen == [0, 1, 5, 6, 8, 8, 8]
    st.prev()
    assert st.index == 6
    # showing them again lists every step; hiding them while on one moves to the next shown
    st.hide_box.value = False
    assert st.timeline.hidden == [] and len(st.visible) == len(mlp_trace)
    st.index = 2
    st.hide_unchanged = True
    assert st.index == 5 and st.timeline.index == 5


def test_timeline_rows_carry_the_badges(mlp_trace):
    st = PassStepper(mlp_trace)
    rows = re.findall(r"<div class='pl-step-row.*?</div>", st.timeline.rows)
    assert len(rows) == len(mlp_trace)
    assert "data-step='5'" in rows[5] and ">decompose-ops<" in rows[5]
    assert re.findall(r"<span class='pl-badge [^']*'>([^<]*)</span>", rows[5])[:2] == [
        "changed",
        "+6 nodes",
    ]
    assert "pl-st-unchanged" in rows[2] and ">infer-types<" in rows[2]
    st.timeline.index = 6  # a click on a step of the timeline steps there
    assert st.index == 6 and "#6 fold-constant" in st.header.value
    st.timeline.index = 99  # out of range: ignored
    assert st.index == 6


def test_tabs_render_when_shown(mlp_trace):
    st = PassStepper(mlp_trace)
    fold = mlp_trace["fold-constant"]
    st.index = fold.index
    assert st.tab == "graph" and st.graph.step is fold
    # the step's payload is sent; the baseline's (the before side) when the browser asks
    assert st.graph.data["before"] is None and st.graph.data["baseline"] is True
    assert st.graph.baseline_data == {}
    st.graph.send_baseline()
    after, before = st.graph.data["after"], st.graph.baseline_data
    assert before == graph_data(fold, fold.previous, stats=False)["before"]
    assert after["step"]["index"] == fold.index and before["step"]["index"] == fold.index - 1
    assert "added" in statuses(after) and statuses(before) == set()  # before: no diff colours
    assert st.graph.collapsed == after["collapsed"] and st.graph.mode == "after"
    assert st.panes["params"].value == ""  # not rendered until shown
    st.tab = "params"
    assert "layers.0.weight transposed" in st.panes["params"].value
    st.tab = "IR diff"
    assert "pl-side-by-side" in st.panes["IR diff"].value
    st.tab = "shapes"
    assert "main/matmul" in st.panes["shapes"].value
    assert "numerics" not in st.tab_names  # numerics only with a check report
    st.tab = "params"
    st.next()  # the shown tab follows the step; the others wait until shown
    assert st.index == 7 and "dead-code-elimination" in st.header.value
    assert "layers.0.weight transposed" not in st.panes["params"].value
    assert "(was 940.6 kB, ±0 B)" in st.panes["params"].value
    assert st.graph.step is fold  # still fold-constant's graph: not shown yet
    st.tab = "graph"
    assert st.graph.step is mlp_trace[7] and statuses(st.graph.payload) == set()


def test_a_failed_trace_opens_on_the_failure(failed_trace):
    st = PassStepper(failed_trace)
    fail = failed_trace.failure
    assert st.index == fail.index
    assert "AssertionError" in st.header.value and "@main_transform_params" in st.header.value
    failed = [n["id"] for n in st.graph.payload["nodes"] if n.get("st") == "failed"]
    assert failed == [fail.graph.node_of(fail.failed_node).id]
    assert st.graph.payload["nodes"][st.graph.payload["focus"]]["id"] == failed[0]


def test_numerics_tab_and_finding_badges_with_a_check_report(checked_trace):
    trace, report = checked_trace
    st = PassStepper(trace, report=report)
    rows = re.findall(r"<div class='pl-step-row.*?</div>", st.timeline.rows)
    assert [("1 finding<" in x) for x in rows] == [False, False, True, False, False]
    st.index = 2
    assert any(n.get("bad") for n in st.graph.payload["nodes"])  # the finding on the graph
    st.tab = "numerics"
    assert "main/subtract" in st.panes["numerics"].value


def test_graph_view_selection_and_groups(convnext_trace):
    step = convnext_trace["fold-constant"]
    view = GraphView(step, step.previous)
    assert view.collapsed == [] and view.mode == "after" and view.selected == ""
    assert "main/conv2d" in view.details and repr(view).startswith("<GraphView #6 fold-constant")
    assert view.selected_details == {}
    view.selected = "main/conv2d"  # what a click in the browser sets
    info = view.selected_details
    assert info["title"] == "conv2d" and info["attrs"]["strides"] == "[4, 4]"
    assert info["provenance"] == {"module": "features.0.0"} and info["type"] == "f32[1, 8, 8, 8]"
    groups = {g["id"] for g in view.payload["groups"]}
    assert "features.1.0" in groups
    view.collapse("features.1.0")
    view.collapse("features.1.0")  # once
    assert view.collapsed == ["features.1.0"]
    view.collapse("classifier")
    assert view.collapsed == ["classifier", "features.1.0"]
    view.expand("features.1.0")
    assert view.collapsed == ["classifier"]
    # a step shown again opens in its default state
    view.show(step, step.previous)
    assert view.collapsed == [] and view.selected == ""
    view.show(step, step.previous, collapsed=["features.3.0", "features.1.0"])
    assert view.collapsed == ["features.1.0", "features.3.0"]
    # statuses against the baseline; none without one, and no before side
    assert view.details["main/matmul"]["status"] == "changed"
    alone = GraphView(step)
    assert alone.details["main/conv2d"]["status"] == "" and alone.data["before"] is None
    assert alone.data["baseline"] is False and alone.baseline_payload() is None
    alone.send_baseline()  # nothing to send
    assert alone.baseline_data == {}
    assert statuses(alone.payload) == set()
    assert repr(GraphView()) == "<GraphView (empty)>"


def test_graph_view_of_a_large_graph_starts_collapsed(base_trace):
    view = GraphView(base_trace[0])
    assert view.collapsed and view.collapsed == view.payload["collapsed"]
    assert boxes_at_first(view.payload) <= MAX_BOXES
    assert len(view.details) == len(view.payload["nodes"])  # every node is in the payload
    path = view.collapsed[0]
    view.expand(path)  # what a double-click in the browser does
    assert path not in view.collapsed
    small = GraphView(base_trace[0], max_boxes=50)
    assert len(small.collapsed) > len(view.payload["collapsed"])


def test_a_live_view_sends_a_weights_statistics_when_it_is_selected(convnext_trace):
    import numpy as np

    step = convnext_trace["fold-constant"]
    view = GraphView(step, step.previous)
    weight = next(n for n in view.payload["nodes"] if n["k"] == "weight" and n.get("st") == "added")
    wid = weight["id"]
    # the first view carries no statistics: they cost a pass over every weight
    assert not any("std" in d for d in view.payload["details"])
    assert view.stats == {}
    view.selected = wid
    data = step.graph.nodes[wid].obj.data
    assert view.stats[wid]["max"] == float(data.max())
    assert view.selected_details["std"] == float(data.std(dtype=np.float64))
    # on the before side, a node of the previous step
    old = next(n["id"] for n in view.baseline_payload()["nodes"] if n["k"] == "weight")
    view.mode = "before"
    view.selected = old
    assert view.stats[old]["min"] == float(step.previous.graph.nodes[old].obj.data.min())
    view.selected = "main/conv2d"  # not a weight
    assert view.stats == {}


def test_the_stepper_makes_the_graph_models_of_the_steps_shown_only(monkeypatch):
    import importlib

    import explorer
    from compiler import models

    step_module = importlib.import_module("explorer.step")
    diff_module = importlib.import_module("explorer.diff")  # (explorer.diff is the function)
    trace = explorer.explore(models.mlp())  # a trace of its own: no graph model made yet
    made, diffs = [], []
    real_graph, real_diff = step_module.graph_of_module, diff_module._diff

    def graph_of_module(module):
        made.append(module)
        return real_graph(module)

    def diff(a, b, ga, gb):
        diffs.append((a.index, b.index))
        return real_diff(a, b, ga, gb)

    monkeypatch.setattr(step_module, "graph_of_module", graph_of_module)
    monkeypatch.setattr(diff_module, "_diff", diff)
    st = trace.stepper()
    # the graph of the step it opens on (the first change: decompose-ops) and of the one it
    # is compared with, one diff; the timeline's badges of every step without a graph model
    first = trace["decompose-ops"]
    assert st.index == first.index
    assert made == [first.previous.module, first.module]
    assert diffs == [(first.previous.index, first.index)]
    rows = re.findall(r"<div class='pl-step-row.*?</div>", st.timeline.rows)
    assert len(rows) == len(trace) and "+6 nodes" in rows[5]
    fold = trace["fold-constant"]
    st.index = fold.index  # the step shown (its previous one is decompose-ops), one diff more
    assert fold.previous is first
    assert made == [first.previous.module, first.module, fold.module]
    assert diffs == [(first.previous.index, first.index), (fold.previous.index, fold.index)]
    st.tab = "IR diff"
    st.tab = "shapes"
    assert len(made) == 3 and len(diffs) == 2
    # the badges read what the whole summary (every graph model and diff made) says
    keys = ("step", "status", "nodes", "node_delta", "param_bytes", "param_delta", "kind")
    full = [{k: r[k] for k in keys} for r in trace.summary()]
    assert [{k: st._row(s)[k] for k in keys} for s in trace] == full


def test_a_live_views_payload_is_one_buffer_of_json(convnext_trace):
    import json
    import math

    from ipywidgets.widgets.widget import _remove_buffers

    from widgets.graph_view import json_buffer

    step = convnext_trace["fold-constant"]
    view = GraphView(step, step.previous)
    state, paths, buffers = _remove_buffers(view.get_state(["data", "baseline_data"]))
    assert paths == [["data"]] and state["baseline_data"] == {}
    sent = json.loads(bytes(buffers[0]).decode("utf-8"))
    assert sent == json.loads(json.dumps(view.data)) and sent["before"] is None
    # what JSON cannot hold as it is goes as it is (the kernel's packer deals with it)
    for odd in ({"x": math.nan}, {"name": "\ud800"}, {"x": {1, 2}}):
        assert json_buffer(odd) is odd
    assert json_buffer({}) == {} and bytes(json_buffer({"t": "é<"})) == '{"t":"é<"}'.encode()
