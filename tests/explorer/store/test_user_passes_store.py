"""A saved trace whose pipeline has a user's own pass (issue 42): the file records it as such
(spec, class, module, whether it was registered); loaded elsewhere it opens and checks, and
what runs the pipeline again (rerun, reduce) says which pass is missing and how to give it:
``explorer.load(path, passes=[FastGelu])``. Loading never imports a module the file names."""

from __future__ import annotations

import json
import sys
import zipfile

import pytest

import explorer
from compiler.passes import Pass, PipelineError, register_pass
from compiler.passes.fold_constant import FoldConstant
from explorer.store import TraceFileError
from explorer.trace import RerunError
from tests.explorer.passlens.cells import (
    FAST_GELU_FIXED,
    FAST_GELU_SELF_CONTAINED,
    model_and_input,
    registry,  # noqa: F401  (the fixture)
    run_cell,
)
from tests.explorer.store.test_store import rewrite_member

UNREGISTERED = FAST_GELU_SELF_CONTAINED.replace("@register_pass\n", "")
MISSING = (
    r"the trace's pass 'fast-gelu' \(__main__\.FastGelu, not registered when saved\) is not "
    r"available here: load the trace with explorer\.load\(path, passes=\[FastGelu\]\)"
)


@pytest.fixture
def saved(tmp_path):
    """(path, the pass class): a checked trace of ``default`` and an unregistered
    ``FastGelu(scale=2.0)``, saved."""
    FastGelu = run_cell(UNREGISTERED)["FastGelu"]
    module, x = model_and_input()
    trace = explorer.explore(module, (x,), pipeline=["default", FastGelu(scale=2.0)])
    trace.check(progress=False)
    return trace.save(tmp_path / "t.passlens"), FastGelu


def _manifest(path) -> dict:
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read("manifest.json"))


def test_the_file_records_a_user_pass_as_such_and_passlens_s_own_by_spec(saved):
    path, _ = saved
    steps = _manifest(path)["steps"]
    record = steps[-1]["pass"]
    assert {k: record[k] for k in ("name", "spec", "class", "module", "registered")} == {
        "name": "fast-gelu",
        "spec": "fast-gelu{scale=2.0}",
        "class": "FastGelu",
        "module": "__main__",
        "registered": False,
    }
    assert record["defined"].startswith("__main__.FastGelu (<cell-")
    assert all("pass" not in s for s in steps[:-1])  # default and its passes: their specs


def test_loaded_elsewhere_it_opens_and_checks_and_rerun_and_reduce_say_what_is_missing(saved):
    path, _ = saved
    loaded = explorer.load(path)
    step = loaded["fast-gelu"]
    assert step.pass_object is None and step.saved_pass["class"] == "FastGelu"
    assert loaded.report.first_failure.step is step  # the saved verdict
    assert "fast-gelu" in loaded.summary_text()
    assert loaded.check(progress=False).first_failure.step is step  # its modules are saved
    with pytest.raises(RerunError, match="rerun from #9 fast-gelu: " + MISSING):
        loaded.rerun(from_step=step.index)
    with pytest.raises(explorer.ReduceError, match="cannot run here: " + MISSING):
        loaded.report.reduce()
    # what needs only passlens's own passes still runs: the default pipeline before it
    assert loaded.rerun(pipeline="default").rerun_from == 1 + 8


def test_load_with_the_class_gives_the_steps_their_pass_and_everything_runs(saved):
    path, FastGelu = saved
    loaded = explorer.load(path, passes=[FastGelu])
    assert loaded["fast-gelu"].pass_object == FastGelu(scale=2.0)
    reduction = loaded.report.reduce(budget=60, progress=False)
    assert reduction.pipeline == "fast-gelu{scale=2.0}" and reduction.passes[1] == 1
    Fixed = run_cell(FAST_GELU_FIXED)["FastGeluFixed"]
    fixed = loaded.rerun(replace={"fast-gelu": Fixed()})
    assert fixed.rerun_from == loaded["fast-gelu"].index
    assert fixed.check(progress=False).ok
    # an instance is taken as it is, when its spec is the step's
    instance = FastGelu(scale=2.0)
    assert explorer.load(path, passes=[instance])["fast-gelu"].pass_object is instance
    with pytest.raises(PipelineError, match=r"'fast-gelu\{scale=3.0\}' is not a pass this"):
        explorer.load(path, passes=[FastGelu(scale=3.0)])  # not the pass that ran


def test_a_pass_registered_here_by_the_same_definition_needs_no_passes(saved, registry):  # noqa: F811
    path, FastGelu = saved
    register_pass(FastGelu)
    loaded = explorer.load(path)
    assert loaded.rerun(from_step=loaded["fast-gelu"].index).rerun_from == 9


class _Other(Pass):
    name = "test-not-in-the-trace"


def test_passes_must_be_pass_classes_or_instances_the_trace_ran(saved):
    path, _ = saved
    assert explorer.load(path, passes=[FoldConstant])["fold-constant"].pass_object is None
    with pytest.raises(PipelineError, match=r"passes=: 'test-not-in-the-trace' ran in no step"):
        explorer.load(path, passes=[_Other])
    with pytest.raises(PipelineError, match="passes= takes named Pass classes or instances"):
        explorer.load(path, passes=["fast-gelu"])
    with pytest.raises(PipelineError, match="passes= takes a list"):
        explorer.load(path, passes="fast-gelu")


def test_saved_again_the_record_stays(saved, tmp_path):
    path, _ = saved
    again = explorer.load(path).save(tmp_path / "again.passlens")
    assert _manifest(again)["steps"][-1]["pass"] == _manifest(path)["steps"][-1]["pass"]


def test_a_file_naming_a_module_never_makes_loading_import_it(saved):
    path, FastGelu = saved
    manifest = _manifest(path)
    manifest["steps"][-1]["pass"]["module"] = "passlens_test_never_imported"
    rewrite_member(path, "manifest.json", json.dumps(manifest).encode())
    loaded = explorer.load(path)
    with pytest.raises(RerunError, match=r"passlens_test_never_imported\.FastGelu"):
        loaded.rerun(from_step=loaded["fast-gelu"].index)
    assert "passlens_test_never_imported" not in sys.modules
    # the class given is taken by its name: the user says which pass it is
    supplied = explorer.load(path, passes=[FastGelu])
    assert supplied["fast-gelu"].pass_object == FastGelu(scale=2.0)


@pytest.mark.parametrize(
    "record",
    [[1], {"name": 3}, {"registered": "yes"}, {"spec": "x" * 5000}, {"module": "os\x1b[31mred"}],
)
def test_a_damaged_pass_record_is_a_trace_file_error(saved, record):
    path, _ = saved
    manifest = _manifest(path)
    manifest["steps"][-1]["pass"] = record
    rewrite_member(path, "manifest.json", json.dumps(manifest).encode())
    with pytest.raises(TraceFileError, match="damaged passlens trace file .its pass|a pass record"):
        explorer.load(path)
