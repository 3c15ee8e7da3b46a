"""trace.check on IREE traces (explorer/iree/check.py): a step's dump compiled again with
--compile-from and run with iree.runtime against torch eager; bisection over the changed steps
(the bf16 demotion of contraction inputs found at its pass, in fewer runs than steps); a
failing compile is the step's run-failed verdict with iree-compile's diagnostics; save and load
keep the verdicts. Skipped when passlens[iree] is not installed."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")
pytest.importorskip("iree.turbine")
torch = pytest.importorskip("torch")

import explorer  # noqa: E402
from explorer.check import CheckError  # noqa: E402
from explorer.iree.check import RUN_PHASES, resumable, resume_from  # noqa: E402
from tests.explorer.iree.test_iree import MLP  # noqa: E402

BF16 = [  # IREE 3.13's option that demotes matmul inputs to bf16 (changes the numbers)
    "--iree-global-opt-demote-contraction-inputs-type=bf16",
    "--iree-global-opt-demote-contraction-inputs-operations=all",
]
DEMOTE = "iree-global-opt-demote-contraction-inputs"


def _record(flags, pipeline):
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(2, 8)
    return explorer.explore(
        model,
        (x,),
        compiler="iree",
        pipeline=pipeline,
        flags=list(flags),
        progress=False,
    )


@pytest.fixture(scope="module")
def clean(mlp):  # the MLP recorded through every phase (conftest.py)
    calls = []
    report = mlp.check(progress=lambda *a: calls.append(a))
    return mlp, report, calls


@pytest.fixture(scope="module")
def demoted():
    trace = _record(BF16, "dispatch-creation")  # past global-optimization, where it demotes
    return trace, trace.check(progress=False)


def _ran(report):
    """The steps the check ran (not those showing a module it ran for another step)."""
    return [c for c in report.steps if c.status != "not run" and c.same_as is None]


def test_a_clean_check_runs_the_import_and_the_first_and_last_steps_and_they_agree(clean):
    trace, report, calls = clean
    assert report.ok, str(report)
    assert report.reference.startswith("torch eager")
    ran = _ran(report)
    assert [c.status for c in ran] == ["ok"] * len(ran)
    assert len(ran) == 3  # the import, the first and the last runnable step
    assert ran[0].step is trace.steps[0] and ran[0].max_abs < 1e-6
    info = report.bisection
    assert info["first_diverging"] is None and info["runnable"] > 50
    assert [c.step.index for c in ran[1:]] == info["ran"]
    first, last = (trace.steps[i] for i in info["ran"])
    assert first.kind == "pass" and first.status == "changed"
    assert trace.steps[first.parent].name == "input"
    assert trace.steps[last.parent].name == "executable-configurations"
    # the others are not run, and the report says why and that outputs alone are compared
    assert any(" not run: bisection" in n for n in report.notes)
    assert any("outputs only" in n for n in report.notes)
    assert "compiled by iree-compile" in report.reuse_text
    # the phases after executable-configurations hold compiled executables: not run, and why
    late = [n for n in report.notes if "not run: steps after executable-configurations" in n]
    assert len(late) == 1
    vm = next(s for s in trace.steps if s.name == "vm" and s.depth == 0)
    assert report.steps[vm.index].status == "not run"
    # progress names each compile and run
    said = [c[2] for c in calls]
    assert any("compiling the import (--compile-from=start)" in s for s in said)
    assert any(
        f"compiling #{last.index} {last.name} (--compile-from=executable-sources)" in s
        for s in said
    )
    assert any("running" in s and "iree.runtime" in s for s in said)
    assert any(
        s.endswith(f"bisection run 2: running #{last.index} {last.name} with iree.runtime")
        for s in said
    )


def test_the_bf16_demotion_is_found_at_its_pass_by_bisection_in_fewer_runs_than_steps(demoted):
    trace, report = demoted
    assert not report.ok
    first = report.first_failure
    assert first.kind == "diverged" and first.step.name == DEMOTE, str(report)
    assert [f.kind for f in report.failures] == ["diverged"]  # only where it starts
    assert first.details["rule"] == "float64"  # bf16 rounding, far beyond float32's
    flags = [n for n in report.notes if "without the flags the trace was recorded with" in n]
    assert len(flags) == 1 and BF16[0] in flags[0] and "--mlir-print" not in flags[0]
    info = report.bisection
    assert info["first_diverging"] == first.step.index
    last = trace.steps[info["last_agreeing"]]
    assert first.details["last_agreeing"] == last.index
    assert f"the step before it, #{last.index} {last.name}, agrees" in first.message
    assert report.steps[last.index].status == "ok"
    # the last agreeing step made the very module the demotion was given
    assert first.step.before is last.module
    runs, runnable = len(info["ran"]), info["runnable"]  # bisection: about log2 of them
    assert runs <= 2 + math.ceil(math.log2(runnable)) and runs < runnable / 4
    for c in _ran(report)[1:]:  # before the pass: agree; from it on: diverge
        want = "ok" if c.step.index < first.step.index else "diverged"
        assert c.status == want, (c.step.index, c.step.name, c.status)
    statuses = {c.status for c in report.steps}
    assert statuses <= {"ok", "diverged", "not run"}
    # steps after executable-configurations would be not run for a reason of their own
    assert all(trace.steps[i].module.phase in RUN_PHASES for i in info["ran"])


def test_a_saved_checked_trace_keeps_its_verdicts(demoted, tmp_path):
    trace, report = demoted
    path = tmp_path / "demoted.passlens"
    trace.save(path)
    loaded = explorer.load(path)
    assert loaded.report is not None
    assert [(c.step.index, c.status) for c in loaded.report.steps] == [
        (c.step.index, c.status) for c in report.steps
    ]
    assert [(f.kind, f.step.index) for f in loaded.report.findings] == [
        (f.kind, f.step.index) for f in report.findings
    ]
    assert loaded.report.notes == report.notes
    with pytest.raises(CheckError, match="parameter file"):
        loaded.check()  # the file keeps no .irpa: say so, run nothing


SMALL = """
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


def test_a_dump_iree_compile_cannot_resume_is_run_failed_with_its_diagnostics():
    import numpy as np

    a = np.arange(4, dtype=np.float32)
    trace = explorer.explore(SMALL, (a, a + 1), compiler="iree", pipeline="global-optimization")
    report = trace.check(progress=False)
    assert report.ok and report.reference.startswith("the imported step")
    # the last runnable step's dump swapped for the source (a module before the ABI phase),
    # which iree-compile cannot take up in preprocessing
    last = trace.steps[report.bisection["ran"][-1]]
    assert last.module.phase == "global-optimization"
    last.module.mlir = SMALL
    report = trace.check(progress=False)
    failed = report.first_failure
    assert failed.kind == "run-failed", str(report)
    assert failed.step is last and report.steps[last.index].status == "run-failed"
    assert "iree-compile --compile-from=preprocessing failed" in failed.message
    assert "error:" in failed.message  # iree-compile's own diagnostics
    assert "the first step that fails to run is" in report.notes[-1]
    # a dump MLIR cannot parse back: not run, and why; the step before it is the last run
    good = report.bisection["runnable"]
    last.module.mlir = 'module { "x.y"() : () -> () }\n'
    report = trace.check(progress=False)
    assert report.ok, str(report)
    assert report.steps[last.index].status == "not run"
    assert report.bisection["runnable"] == good - 1 and last.index not in report.bisection["ran"]
    assert any(" not run: dumps MLIR cannot parse back" in n for n in report.notes)


def test_a_resumed_dump_loses_the_fixed_point_iterators_attributes():
    text = (
        "module attributes {iree.fixedpoint.iteration = 1 : index, iree.fixedpoint.modified} {\n}\n"
    )
    out = resumable(text)
    assert "fixedpoint" not in out and "module" in out
    assert resumable(SMALL) == SMALL  # nothing to take out: the text as it was
    assert resume_from("input") == "start" and resume_from("flow") == "dispatch-creation"


def test_a_runs_outputs_are_its_own_memory(tmp_path):
    import numpy as np

    from explorer.iree.check import IREERuntime, compile_module

    vmfb = compile_module(SMALL, None, str(tmp_path))
    runtime = IREERuntime(None)
    a = np.arange(4, dtype=np.float32)
    first = runtime.run(vmfb, [a, a])
    second = runtime.run(vmfb, [a + 1, a])
    # copies, not host views of device buffers a later run may reuse (the check judges a
    # step's outputs after the bisection ran others: a view read another run's numbers)
    assert all(o.flags.owndata for o in (*first, *second))
    assert first[0].tolist() == [0.0, 4.0, 16.0, 36.0]
    assert second[0].tolist() == [1.0, 9.0, 25.0, 49.0]


def test_an_import_that_already_differs_is_the_finding_and_nothing_is_bisected():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3).eval()
    trace = explorer.explore(model, (torch.randn(2, 4),), compiler="iree", pipeline="abi")
    with torch.no_grad():  # the model changed since it was recorded: its .irpa holds the old
        model.weight += 1.0
    report = trace.check(progress=False)
    first = report.first_failure
    assert first.kind == "diverged" and first.step is trace.steps[0], str(report)
    assert [f.step.index for f in report.failures] == [0]
    assert report.bisection["ran"] == [] and report.bisection["runnable"] > 0
    assert any(
        "the import, compiled by iree-compile from the start, already differs" in n
        for n in report.notes
    )
