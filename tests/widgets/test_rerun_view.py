"""A re-run in the stepper and in a comparison (issue 42, items 2 and 4): ``stepper.show(trace)``
keeps the step and the node; ``trace.stepper()`` of a re-run updates the stepper displayed;
the old run's step beside the new one, each with its verdict; a comparison's HTML opens on the
first step that differs. The re-run is ``Trace.rerun`` where the explorer has it, else
simulated (tests/widgets/user_passes.py)."""

import html
import re

import pytest
from IPython.core.formatters import DisplayFormatter

import explorer
from compiler import models
from compiler.ir import Call
from compiler.passes import Rule, RulePass, op
from tests.widgets.conftest import EVIL
from tests.widgets.user_passes import FastGelu, FastGeluFixed, rerun_with_fix
from widgets.escape import esc
from widgets.rerun_view import comparison_html, old_step, verdict
from widgets.stepper import PassStepper, displayed_stepper


def convnext():
    return models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)


PIPELINE = ["default", FastGelu()]


@pytest.fixture(scope="module")
def runs():
    """The buggy run (checked: fast-gelu diverged) and its re-run with the fix (checked: ok)."""
    old = explorer.explore(convnext(), pipeline=PIPELINE)
    old.check()
    new = rerun_with_fix(old, PIPELINE, FastGeluFixed())
    new.check()
    return old, new


def displayed(stepper):
    """``stepper`` as a notebook's front end displays it (the formatter asks for its view)."""
    data, _ = DisplayFormatter().format(stepper)
    assert "application/vnd.jupyter.widget-view+json" in data
    return stepper


def fixed_step(trace):
    return trace[trace.rerun_from if getattr(trace, "rerun_from", None) else "fast-gelu"]


def test_the_runs_are_a_bug_and_its_fix(runs):
    old, new = runs
    k = new.rerun_from
    assert new.rerun_of is old and old.steps[k].name == new.steps[k].name == "fast-gelu"
    assert [s.name for s in old.steps[:k]] == [s.name for s in new.steps[:k]]
    assert [f.kind for f in old.report.at(old.steps[k])] == ["diverged"]
    assert new.report.ok
    assert verdict(old.report, old.steps[k]) == (
        f"diverged, max rel {old.report.steps[k].max_rel:.3g}",
        False,
    )
    assert verdict(new.report, new.steps[k])[1] and verdict(None, new.steps[k]) == (
        "not checked",
        True,
    )


def test_show_keeps_the_step_and_the_node(runs):
    old, new = runs
    k = new.rerun_from
    st = PassStepper(old, report=old.report)
    st.index = k
    shared = next(n for n in st.graph.details if n.endswith("/matmul"))  # in both runs' steps
    assert shared in new.steps[k].graph.nodes
    st.graph.selected = shared
    graph, timeline = st.graph, st.timeline
    st.show(new)
    assert st.trace is new and st.report is new.report  # the trace's own report by default
    assert st.index == k and st.step is new.steps[k] and st.graph.step is new.steps[k]
    assert st.graph is graph and st.timeline is timeline  # the same widgets, in place
    assert st.graph.selected == shared and st.old_graph.selected == shared
    assert st.timeline.index == k and f"#{k} fast-gelu" in st.header.value
    assert "numerics" in st.tab_names  # the new trace's report: its tabs


def test_a_node_kept_on_another_tab_is_selected_when_the_graph_is_shown(runs):
    old, new = runs
    k = new.rerun_from
    st = PassStepper(old, report=old.report)
    st.index = k
    node = next(n for n in st.graph.details if n.endswith("/matmul"))
    st.graph.selected = node
    st.tab = "IR diff"
    st.show(new)
    assert st.tab == "IR diff" and st.graph.step is not new.steps[k]  # the graph not drawn yet
    st.tab = "graph"
    assert st.graph.step is new.steps[k] and st.graph.selected == node
    st.index = k - 1  # kept for that step only
    st.index = k
    assert st.graph.selected == ""


def test_show_keeps_on_the_old_side_a_node_the_fix_took_away(runs):
    old, new = runs
    k = new.rerun_from
    st = PassStepper(old, report=old.report)
    st.index = k
    relu = next(n for n, d in st.graph.details.items() if d["title"] == "relu")
    st.graph.selected = relu
    st.show(new)
    assert relu not in new.steps[k].graph.nodes and st.graph.selected == ""
    assert st.old_graph.step is old.steps[k] and st.old_graph.selected == relu


def test_show_keeps_the_tab_and_hide_unchanged_and_moves_where_the_step_is_not_there(runs):
    old, new = runs
    other = explorer.explore(convnext(), pipeline=[FastGelu(), "default"])
    st = PassStepper(other)
    st.hide_unchanged = True
    st.index = 1  # fast-gelu, first here: step 1 of the re-run is the default pipeline
    st.tab = "IR"
    st.show(new, report=False)
    assert st.index == new.rerun_from and st.tab == "IR" and st.hide_unchanged
    assert st.stack.selected_index == st.tab_names.index("IR")
    assert "erf" in st.panes["IR"].value  # the new step's IR, drawn in the tab kept
    assert st.report is None and "numerics" not in st.tab_names
    assert st.timeline.hidden == [s.index for s in new.steps if s.status == "unchanged"]
    st.index = 0  # still a working stepper of the new trace
    assert st.step is new.steps[0]
    with pytest.raises(TypeError, match="PassStepper.show takes a Trace"):
        st.show("run.passlens")


def test_trace_stepper_of_a_rerun_updates_the_stepper_displayed(runs):
    old, new = runs
    first = displayed(old.stepper())
    first.index = new.rerun_from
    again = new.stepper()
    assert again is first and first.trace is new and first.step is fixed_step(new)
    assert displayed_stepper(new) is first
    # the cell run again with another fix: a re-run of the same old trace, shown there too
    newer = rerun_with_fix(old, PIPELINE, FastGeluFixed())
    assert newer.stepper() is first and first.trace is newer
    # a trace that is no re-run gets its own stepper, as always
    assert old.stepper() is not first


def test_a_rerun_whose_stepper_was_never_displayed_or_was_closed_gets_a_new_one(runs):
    old, new = runs
    hidden = old.stepper()  # made, never displayed
    fresh = new.stepper()
    assert fresh is not hidden and hidden.trace is old
    assert fresh.index == new.rerun_from  # a re-run opens on the step recorded anew
    closed = displayed(old.stepper())
    closed.close()
    assert new.stepper() is not closed and closed.trace is old
    # a stepper displayed for an unrelated trace is not taken
    other = displayed(explorer.explore(models.mlp()).stepper())
    assert new.stepper() is not other


def test_the_old_run_beside_the_new_at_the_steps_recorded_anew(runs):
    old, new = runs
    k = new.rerun_from
    st = PassStepper(new, report=new.report)
    assert st.index == k and st.old_step is old.steps[k] is old_step(new, k)
    assert st.runs_bar.layout.display is None and st.old_column.layout.display is None
    assert f"#{k} fast-gelu" in st.rerun_note.value
    old_caption, new_caption = st.old_caption.value, st.new_caption.value
    assert "old run" in old_caption and f"#{k} fast-gelu" in old_caption
    assert "diverged" in old_caption and "pl-run-bad" in old_caption
    assert "new run" in new_caption and "ok, max rel" in new_caption and "pl-run-ok" in new_caption
    assert "no findings" in new_caption
    assert st.old_graph.step is old.steps[k] and st.old_graph.baseline is old.steps[k].previous
    assert {d["title"] for d in st.old_graph.details.values()} >= {"relu"}
    assert "erf" in {d["title"] for d in st.graph.details.values()}
    # a node selected on one side is selected on the other, where it is
    shared = next(n for n in st.graph.details if n.endswith("/matmul"))
    st.graph.selected = shared
    assert st.old_graph.selected == shared
    # unchecked: the old column hides; a shared step has nothing beside it
    st.side_by_side = False
    assert st.old_column.layout.display == "none" and not st.beside_box.value
    st.beside_box.value = True
    assert st.old_column.layout.display is None
    st.index = k - 1
    assert st.old_step is None and st.old_column.layout.display == "none"
    assert st.runs_bar.layout.display is None and st.beside_box.layout.display == "none"
    # a trace that is not a re-run: the graph alone, as before
    plain = PassStepper(old)
    assert plain.runs_bar.layout.display == "none" and plain.old_graph is None


class EvilGelu(RulePass):
    """A pass whose name is markup."""

    name = EVIL
    rules = (Rule("gelu-to-relu", op("gelu"), lambda n, ctx: Call("relu", n.args), EVIL),)


def test_the_side_by_side_escapes_the_pass_names():
    pipeline = ["default", EvilGelu()]
    old = explorer.explore(convnext(), pipeline=pipeline)
    old.check()
    new = rerun_with_fix(old, pipeline, FastGeluFixed(), name=EVIL)
    st = PassStepper(new)
    assert st.step.name == "fast-gelu" and st.old_step.name == EVIL
    shown = comparison_html(explorer.compare(old, new))
    for text in (st.old_caption.value, st.rerun_note.value, shown):
        assert "<script" not in text  # (the graphs' own scripts are in an escaped srcdoc)
    assert esc(EVIL) in st.old_caption.value
    page = explorer.compare(old, new)._repr_html_()
    captions = re.findall(r"<div class='pl-run-title'>.*?</div>", page)
    assert len(captions) == 2 and esc(EVIL) in captions[0]
    assert "<script>alert" not in page


def srcdocs(page: str) -> list[str]:
    """The pages of a HTML's iframes (their srcdoc, unescaped)."""
    return [html.unescape(s) for s in re.findall(r'<iframe srcdoc="([^"]*)"', page)]


def test_a_comparison_opens_on_the_first_step_that_differs(runs, tmp_path):
    old, new = runs
    k = new.rerun_from
    comparison = explorer.compare(old, new)
    assert comparison.changed_steps() == (old.steps[k], new.steps[k])
    page = comparison._repr_html_()
    first_graph, table = page.index("<iframe"), page.index("<table")
    assert first_graph < table  # both sides come first, then the figures
    captions = re.findall(r"<div class='pl-run-title'>(.*?)</div>", page)
    assert [("old run" in c, "new run" in c, f"#{k} fast-gelu" in c) for c in captions] == [
        (True, False, True),
        (False, True, True),
    ]
    assert "diverged" in captions[0] and "ok, max rel" in captions[1]
    old_page, new_page = srcdocs(page)
    assert '"relu"' in old_page and '"erf"' not in old_page
    assert '"erf"' in new_page and f"#{k} fast-gelu" in new_page
    # the other way round, the new run is A
    swapped = explorer.compare(new, old)._repr_html_()
    assert "new run" in re.findall(r"<div class='pl-run-title'>(.*?)</div>", swapped)[0]
    written_to = comparison.to_html(tmp_path / "compare.html")
    assert written_to == tmp_path / "compare.html"
    size = written_to.stat().st_size
    written = (tmp_path / "compare.html").read_text()
    assert size == len(written.encode()) and written.startswith("<!DOCTYPE html>")
    assert written.count("<iframe") == 2


def test_a_comparison_of_two_conversions_opens_on_their_first_divergence(convnext_trace):
    other = explorer.explore(convnext(), pipeline=["default", FastGelu()])
    comparison = explorer.compare(convnext_trace, other)
    d = comparison.first_divergence
    assert comparison.changed_steps() == (d.step_a, d.step_b)
    captions = re.findall(r"<div class='pl-run-title'>(.*?)</div>", comparison._repr_html_())
    assert "old run" not in captions[0] and "not checked" in captions[0]
    same = explorer.compare(convnext_trace, convnext_trace)
    assert same.changed_steps() is None
    assert "No step differs" in same._repr_html_() and "<iframe" not in same._repr_html_()
