"""The Jupyter widgets, driven through their state: PassStepper and GraphView."""

import pytest
import traitlets

from widgets.graph_view import GraphView
from widgets.stepper import TABS, PassStepper


def test_trace_stepper_returns_the_widget(mlp_trace):
    stepper = mlp_trace.stepper()
    assert isinstance(stepper, PassStepper) and stepper.trace is mlp_trace
    assert stepper.index == 0 and repr(stepper) == "<PassStepper step 0/9: module>"


def test_next_and_prev(mlp_trace):
    st = PassStepper(mlp_trace)
    st.next()
    assert st.index == 1 and st.timeline.value == 1
    st.next()
    assert st.index == 2 and st.step.name == "infer-types"
    st.prev()
    st.prev()
    assert st.index == 0 and st.prev_button.disabled
    st.prev()  # nothing before the first step
    assert st.index == 0
    st.next_button.click()
    assert st.index == 1 and not st.prev_button.disabled
    st.index = len(mlp_trace) - 1
    assert st.next_button.disabled
    with pytest.raises(traitlets.TraitError):
        st.index = len(mlp_trace)


def test_hide_unchanged_skips_unchanged_steps(mlp_trace):
    st = PassStepper(mlp_trace)
    changed = [s.index for s in mlp_trace if s.status != "unchanged"]
    assert changed == [0, 1, 5, 6, 8]
    st.hide_unchanged = True
    assert st.hide_box.value and [v for _, v in st.timeline.options] == changed
    seen = [st.index]
    for _ in range(6):
        st.next()
        seen.append(st.index)
    assert seen == [0, 1, 5, 6, 8, 8, 8]
    st.prev()
    assert st.index == 6
    # showing them again lists every step; hiding them while on one moves to the next shown
    st.hide_box.value = False
    assert len(st.timeline.options) == len(mlp_trace)
    st.index = 2
    st.hide_unchanged = True
    assert st.index == 5


def test_timeline_labels_carry_the_badges(mlp_trace):
    st = PassStepper(mlp_trace)
    labels = dict((v, k) for k, v in st.timeline.options)
    assert labels[5].startswith("\u2003#5 decompose-ops · changed · +6 nodes · ")
    assert labels[2].startswith("\u2003#2 infer-types · unchanged")
    st.timeline.value = 6  # picking a step in the timeline steps there
    assert st.index == 6 and "#6 fold-constant" in st.header.value


def test_tabs_render_when_shown(mlp_trace):
    st = PassStepper(mlp_trace)
    st.index = mlp_trace["fold-constant"].index
    assert (
        st.tabs.selected_index == 0
        and "<svg" in st.before_view.value
        and "<svg" in st.after_view.value
    )
    assert "pl_added" in st.after_view.value and "pl_added" not in st.before_view.value
    assert st.panes["params"].value == ""  # not rendered until shown
    st.tabs.selected_index = TABS.index("params")
    assert "layers.0.weight transposed" in st.panes["params"].value
    st.tabs.selected_index = TABS.index("IR diff")
    assert "pl-side-by-side" in st.panes["IR diff"].value
    st.tabs.selected_index = TABS.index("shapes")
    assert "main/matmul" in st.panes["shapes"].value
    st.tabs.selected_index = TABS.index("numerics")
    assert "trace.check" in st.panes["numerics"].value
    st.tabs.selected_index = TABS.index("params")
    st.next()  # the shown tab follows the step; the others wait until shown
    assert st.index == 7 and "dead-code-elimination" in st.header.value
    assert "layers.0.weight transposed" not in st.panes["params"].value
    assert "(was 940.6 kB, ±0 B)" in st.panes["params"].value
    assert "pl_added" in st.after_view.value  # still fold-constant's graph: not shown yet
    st.tabs.selected_index = TABS.index("graph")
    assert "pl_added" not in st.after_view.value


def test_a_failed_trace_opens_on_the_failure(failed_trace):
    st = PassStepper(failed_trace)
    assert st.index == failed_trace.failure.index
    assert "AssertionError" in st.header.value and "@main_transform_params" in st.header.value
    assert "pl_failed" in st.after_view.value


def test_numerics_tab_and_finding_badges_with_a_check_report(checked_trace):
    trace, report = checked_trace
    st = PassStepper(trace, report=report)
    labels = [label for label, _ in st.timeline.options]
    assert [("1 finding" in x) for x in labels] == [False, False, True, False, False]
    st.index = 2
    st.tabs.selected_index = TABS.index("numerics")
    assert "main/subtract" in st.panes["numerics"].value


def test_graph_view_selection_and_groups(convnext_trace):
    step = convnext_trace["fold-constant"]
    view = GraphView(step, step.previous)
    assert 'data-node-id="main/conv2d"' in view.svg and view.collapsed == []
    assert view.selected_details == {}
    view.selected = "main/conv2d"  # what a click in the browser sets
    assert view.selected_details["op"] == "conv2d"
    view.collapse("features.1")
    assert "group:main/features.1" in view.details and 'data-group="features.1"' in view.svg
    assert "main/conv2d_1" not in view.details  # now inside the group
    view.selected = "group:main/features.1"
    assert view.selected_details["kind"] == "group" and view.selected_details["ops"]["conv2d"] == 1
    view.expand("features.1")
    assert view.collapsed == [] and "main/conv2d_1" in view.details
    assert view.selected == ""  # the selected group is gone
    assert GraphView(step).details["main/conv2d"]["status"] == ""


def test_graph_view_of_a_large_graph_starts_collapsed(base_trace):
    view = GraphView(base_trace[0])
    assert view.collapsed and len(view.details) <= 300
    group = next(k for k in view.details if k.startswith("group:"))
    path = view.details[group]["group"]
    view.expand(path)  # what a double-click in the browser does
    assert path not in view.collapsed and group not in view.details
    assert view.svg.count('class="node pl_node') == len(view.details)
