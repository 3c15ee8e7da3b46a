"""``trace.rerun`` (issue 42): run again from the first pass that changed, keeping the steps
before it (the very Step objects) and recording only what follows; the check of the new trace
takes the shared steps' results from the old trace's check. Counted, not timed: the passes the
pass manager applies and the modules the interpreter runs."""

from __future__ import annotations

import numpy as np
import pytest

import explorer
from compiler.passes import Pass, PassRedefinedWarning
from compiler.passes.fold_constant import FoldConstant
from compiler.passes.infra.manager import PassContext
from explorer.adapters import Adapter, Unsupported, register_adapter, unregister_adapter
from explorer.passlens.check import Interpreter
from explorer.trace import RerunError, Trace
from tests.explorer.passlens.cells import (
    FAST_GELU,
    FAST_GELU_FIXED,
    FAST_GELU_SELF_CONTAINED,
    model_and_input,
    registry,  # noqa: F401  (the fixture)
    run_cell,
)


@pytest.fixture
def counted(monkeypatch):
    """What ran, counted: ``passes`` (the spec of every pass the pass manager applied, nested
    ones and pipelines included) and ``runs`` (every module the check's interpreter ran)."""
    seen: dict[str, list] = {"passes": [], "runs": []}
    apply, run = PassContext.apply, Interpreter.run

    def counting_apply(self, p, module):
        seen["passes"].append(p.spec())
        return apply(self, p, module)

    def counting_run(self, module):
        seen["runs"].append(module)
        return run(self, module)

    monkeypatch.setattr(PassContext, "apply", counting_apply)
    monkeypatch.setattr(Interpreter, "run", counting_run)
    return seen


@pytest.fixture
def cells():
    """The buggy pass (gelu -> relu) and its fix, as a notebook's cells define them."""
    return run_cell(FAST_GELU)["FastGelu"], run_cell(FAST_GELU_FIXED)["FastGeluFixed"]


def _explored(pipeline):
    module, x = model_and_input()
    return explorer.explore(module, (x,), pipeline=pipeline, progress=False)


def test_a_rerun_after_fixing_the_last_pass_runs_that_pass_and_checks_its_step_only(cells, counted):
    FastGelu, FastGeluFixed = cells
    old = _explored(["default", FastGelu()])
    report = old.check(progress=False)
    assert report.first_failure.kind == "diverged"
    assert report.first_failure.step is old["fast-gelu"]
    steps_before, pipeline_before = list(old.steps), old.pipeline
    k = old["fast-gelu"].index
    counted["passes"].clear()
    counted["runs"].clear()

    new = old.rerun(replace={"fast-gelu": FastGeluFixed()}, progress=False)

    assert counted["passes"] == ["fast-gelu"]  # the fixed pass alone ran
    assert new.rerun_of is old and new.rerun_from == k and len(new) == len(old)
    assert all(a is b for a, b in zip(old.steps[:k], new.steps[:k], strict=True))
    assert new.steps[k] is not old.steps[k] and new.steps[k].before is old.steps[k - 1].module
    assert type(new.steps[k].pass_object) is FastGeluFixed
    # the old trace is as it was: its steps, still its own, its pipeline
    assert old.steps == steps_before and all(s.trace is old for s in old.steps)
    assert old.pipeline == pipeline_before and old.rerun_of is None and old.rerun_from is None
    assert all(s.trace is new for s in new.steps[k:])

    fixed = new.check(progress=False)
    assert fixed.ok
    assert counted["runs"] == [new.steps[k].module]  # the interpreter ran the new step only
    assert fixed.reused_steps == k  # the import and the default pipeline: the old check's
    assert [c.status for c in fixed.steps[:k]] == [c.status for c in report.steps[:k]]
    assert [c.max_abs for c in fixed.steps[:k]] == [c.max_abs for c in report.steps[:k]]
    assert "9 steps' results taken from the check of the trace this one re-ran" in str(fixed)
    assert fixed.steps[k].max_abs < 1e-5

    comparison = old.compare(new)
    assert comparison.first_difference == k and comparison.shared_steps == k
    assert f"first different step: #{k} fast-gelu" in comparison.headline()
    assert explorer.compare(new, old).first_difference == k


def test_a_rerun_with_nothing_changed_shares_every_step_and_says_so(cells, counted):
    FastGelu, _ = cells
    old = _explored(["default", FastGelu()])
    old.check(progress=False)
    counted["passes"].clear()
    counted["runs"].clear()
    with pytest.warns(UserWarning, match="rerun: nothing changed"):
        same = old.rerun()
    assert counted["passes"] == []
    assert same is not old and same.rerun_of is old and same.rerun_from == len(old)
    assert all(a is b for a, b in zip(old.steps, same.steps, strict=True))
    assert old.compare(same).first_difference is None
    again = same.check(progress=False)
    assert counted["runs"] == [] and again.reused_steps == len(old)
    assert [f.kind for f in again.findings] == [f.kind for f in old.report.findings]
    assert again.first_failure.step is old["fast-gelu"]


def test_a_cell_run_again_with_the_fix_is_what_rerun_runs(registry, counted):  # noqa: F811
    FastGelu = run_cell(FAST_GELU_SELF_CONTAINED)["FastGelu"]  # registered: found by name
    old = _explored("infer-types,fast-gelu,dce")
    assert type(old["fast-gelu"].pass_object) is FastGelu
    assert not old.check(progress=False).ok
    fixed_source = FAST_GELU_SELF_CONTAINED.replace(
        'return Call("relu", [node.args[0]])', "return None  # fixed: keep gelu"
    )
    with pytest.warns(PassRedefinedWarning, match="'fast-gelu' redefined"):
        Fixed = run_cell(fixed_source)["FastGelu"]
    counted["passes"].clear()
    new = old.rerun()  # nothing given: the pass whose class was defined again has changed
    assert counted["passes"] == ["fast-gelu", "dead-code-elimination"]
    assert new.rerun_from == old["fast-gelu"].index
    assert type(new["fast-gelu"].pass_object) is Fixed and new.passes[1] == Fixed()
    assert new.check(progress=False).ok


def test_replace_reaches_into_a_named_pipeline_and_takes_classes(cells, counted):
    FastGelu, FastGeluFixed = cells
    old = _explored(["default", FastGelu()])
    counted["passes"].clear()
    small = FoldConstant(max_bytes=1024)
    new = old.rerun(replace={"fold-constant": small})
    assert new.rerun_from == 1  # the named pipeline is the top-level pass that changed
    assert new.steps[0] is old.steps[0] and new.passes[0].label == "default"
    assert new.passes[0].passes[4] is small and new.passes[1] is old.passes[1]
    assert counted["passes"][0] == "default" and counted["passes"][-1] == "fast-gelu"
    assert len(counted["passes"]) == 9  # the pipeline, its 7 passes, fast-gelu
    by_class = old.rerun(replace={FastGelu: FastGeluFixed})  # a class for a class
    assert by_class.rerun_from == old["fast-gelu"].index
    assert type(by_class["fast-gelu"].pass_object) is FastGeluFixed


def test_from_step_records_again_from_that_step_s_top_level_pass(cells, counted):
    FastGelu, _ = cells
    old = _explored(["default", FastGelu()])
    counted["passes"].clear()
    new = old.rerun(from_step=old["fold-constant"].index)  # nested in default
    assert new.rerun_from == 1 and counted["passes"][0] == "default"
    assert len(counted["passes"]) == 9
    assert old.compare(new).first_difference is None  # the same passes: the same modules
    assert new.steps[1] is not old.steps[1]


def test_a_new_pipeline_keeps_the_prefix_it_shares(cells, counted):
    FastGelu, FastGeluFixed = cells
    old = _explored(["default", FastGelu()])
    counted["passes"].clear()
    new = old.rerun(pipeline=[old.passes[0], FastGeluFixed(), "dce"])
    k = old["fast-gelu"].index
    assert new.rerun_from == k and len(new) == len(old) + 1
    assert counted["passes"] == ["fast-gelu", "dead-code-elimination"]
    assert new.pipeline == "default,fast-gelu,dead-code-elimination"
    shorter = old.rerun(pipeline=[old.passes[0]])  # a pass removed at the end
    assert shorter.rerun_from == k and len(shorter) == k


class _Boom(Pass):
    """Fails every time."""

    name = "test-boom"

    def transform(self, module, ctx):
        raise RuntimeError("boom")


def test_a_trace_whose_pass_failed_runs_again_from_that_pass(cells, counted):
    _, FastGeluFixed = cells
    old = _explored(["infer-types", _Boom(), "dce"])
    assert old.failure is old["test-boom"] and [s.spec for s in old.skipped] == [
        "dead-code-elimination"
    ]
    new = old.rerun(replace={"test-boom": FastGeluFixed()})
    assert new.rerun_from == old["test-boom"].index and new.failure is None
    assert new.skipped == [] and new.final.name == "dead-code-elimination"
    # a pass changed after the failure: nothing after it was recorded, so from the failure
    counted["passes"].clear()
    tail = old.rerun(pipeline=["infer-types", _Boom(), "fold-constant"])
    assert tail.rerun_from == old["test-boom"].index and counted["passes"] == ["test-boom"]


def test_a_check_of_a_rerun_on_other_inputs_or_options_runs_every_step(cells, counted):
    FastGelu, FastGeluFixed = cells
    old = _explored(["default", FastGelu()])
    old.check(progress=False)
    new = old.rerun(replace={"fast-gelu": FastGeluFixed()})
    counted["runs"].clear()
    other = np.ones((2, 8), np.float32)
    report = new.check((other,), progress=False)
    assert report.reused_steps == 0 and len(counted["runs"]) > 1
    assert "every step was run: the check of the trace it re-ran ran on other inputs" in (
        report.notes
    )
    report = new.check(rtol=1e-3, progress=False)
    assert report.reused_steps == 0
    assert any("had other options" in n for n in report.notes)
    # a rerun of a rerun reuses the check of the trace it re-ran
    assert new.check(progress=False).reused_steps == old["fast-gelu"].index
    again = new.rerun(replace={"fast-gelu": FastGelu()})
    counted["runs"].clear()
    assert again.check(progress=False).reused_steps == old["fast-gelu"].index
    assert counted["runs"] == [again["fast-gelu"].module]


def test_rerun_says_clearly_what_it_cannot_do(cells):
    FastGelu, _ = cells
    old = _explored(["default", FastGelu()])
    last = len(old) - 1
    with pytest.raises(RerunError, match=rf"from_step 99 is out of range: .* #1\.\.#{last}"):
        old.rerun(from_step=99)
    with pytest.raises(RerunError, match="step #0 is the import step; a re-run starts at a pass"):
        old.rerun(from_step=0)
    with pytest.raises(RerunError, match="from_step is a step's index"):
        old.rerun(from_step="fast-gelu")
    with pytest.raises(
        RerunError,
        match=r"replace names no pass of the pipeline: 'fast-glue' \(its passes: default, "
        r"infer-types, .*fuse-ops, fast-gelu\)",
    ):
        old.rerun(replace={"fast-glue": FastGelu()})
    with pytest.raises(RerunError, match=r"replace\['fast-gelu'\] is a Pass"):
        old.rerun(replace={"fast-gelu": "relu"})
    with pytest.raises(RerunError, match="a replace key is a pass name, a spec or a Pass class"):
        old.rerun(replace={3: FastGelu()})
    with pytest.raises(RerunError, match="replace is a dict"):
        old.rerun(replace=[FastGelu()])
    with pytest.raises(RerunError, match="the pipeline cannot be built: unknown pass 'nope'"):
        old.rerun(pipeline="default,nope")
    assert isinstance(RerunError("x"), explorer.PasslensError)


class _NoRerun(Adapter):
    name = "test-no-rerun"


class _Other(Pass):
    name = "test-other"


def test_another_compiler_s_trace_says_its_adapter_cannot_rerun():
    register_adapter(_NoRerun())
    try:
        module, _ = model_and_input()
        trace = Trace(
            [explorer.Step(0, "import", "import", module=module)], compiler="test-no-rerun"
        )
        assert trace.rerun_of is None and trace.rerun_from is None and trace.passes == ()
        with pytest.raises(Unsupported, match="the test-no-rerun adapter cannot re-run a trace"):
            trace.rerun(replace={"x": _Other()})
    finally:
        unregister_adapter("test-no-rerun")


def test_compare_names_the_first_step_two_traces_differ_at():
    a = _explored("default")
    b = _explored("default")  # another import: structurally equal modules throughout
    assert a.compare(b).first_difference is None and a.compare(b).shared_steps == 0
    c = _explored("infer-types,fold-constant")
    assert a.compare(c).first_difference == 1  # default vs infer-types


def test_a_check_that_would_keep_too_much_keeps_nothing_and_the_rerun_s_check_says_so(
    cells, counted, monkeypatch
):
    from explorer.check import reuse

    FastGelu, FastGeluFixed = cells
    old = _explored(["default", FastGelu()])
    monkeypatch.setattr(reuse, "KEPT_BYTES", 0)  # every array is over it
    assert old.check(progress=False).memo.why_not.startswith("the check of the trace it re-ran")
    new = old.rerun(replace={"fast-gelu": FastGeluFixed()})
    counted["runs"].clear()
    report = new.check(progress=False)
    assert report.reused_steps == 0 and len(counted["runs"]) > 1 and report.ok
    assert any(
        n.startswith("every step was run: the check of the trace it re-ran kept no")
        for n in report.notes
    )


def test_a_rerun_saves_and_loads_as_any_trace_and_its_link_is_not_saved(cells, tmp_path):
    FastGelu, FastGeluFixed = cells
    old = _explored(["default", FastGelu()])
    new = old.rerun(replace={"fast-gelu": FastGeluFixed()})
    new.check(progress=False)
    loaded = explorer.load(new.save(tmp_path / "new.passlens"))
    assert loaded.rerun_of is None and loaded.rerun_from is None and loaded.passes == ()
    assert [s.spec for s in loaded.steps] == [s.spec for s in new.steps]
    assert loaded.report.ok and loaded.report.memo is None
    assert loaded["fast-gelu"].saved_pass["class"] == "FastGeluFixed"
