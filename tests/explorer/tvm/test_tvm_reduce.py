"""report.reduce() on TVM traces (explorer/tvm/reduce.py) and the upstream repro script
(explorer/tvm/repro.py): a wrong Python pass inside a Sequential is found, run again alone on
cuts of the module it was given, reduced to the one binding it breaks; the script, run by the
venv's python in isolated mode with no passlens on its path, reproduces it and exits 1; a
correct pass (LegalizeOps, made again from TVM's API by its name) is NotReproducible; a pass
another pass made and ran cannot be run again alone; crafted names never become code in the
script. Skipped only where tvm is not installed."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
torch = pytest.importorskip("torch")

from tvm import relax  # noqa: E402

import explorer  # noqa: E402
from explorer.check.report import Finding  # noqa: E402
from explorer.reduce import NotReproducible, ReduceError  # noqa: E402
from explorer.tvm.reduce import PassSpec  # noqa: E402

CRAFTED = 'x"); open("PWNED", "w")  #\nopen("PWNED", "w")\n\'\'\''


@tvm.transform.module_pass(opt_level=0, name="FlipAdd")
class FlipAdd:
    """A wrong pass: every relax.add becomes a subtract."""

    def transform_module(self, mod, ctx):
        return _rewrite(mod, "relax.add", relax.op.subtract)


@tvm.transform.module_pass(opt_level=0, name=CRAFTED)
class Crafted:
    """FlipAdd under a name made to break out of a string."""

    def transform_module(self, mod, ctx):
        return _rewrite(mod, "relax.add", relax.op.subtract)


def _rewrite(mod, op_name, make):
    @relax.expr_functor.mutator
    class Rewrite(relax.PyExprMutator):
        def visit_call_(self, call):
            call = super().visit_call_(call)
            if isinstance(call.op, tvm.ir.Op) and call.op.name == op_name:
                return make(call.args[0], call.args[1])
            return call

    out = tvm.IRModule()
    for gv, fn in mod.functions.items():
        out[gv] = Rewrite().visit_expr(fn) if isinstance(fn, relax.Function) else fn
    return out


class TwoLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.out = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.out(torch.relu(self.fc(x)))


@pytest.fixture(scope="module")
def wrong():
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    seq = tvm.transform.Sequential(
        [relax.transform.CanonicalizeBindings(), FlipAdd(), relax.transform.LegalizeOps()],
        name="mine",
    )
    trace = explorer.explore(TwoLayers().eval(), (x,), compiler="tvm", pipeline=[seq])
    return trace, trace.check(progress=False)


def _run_alone(script, cwd):
    """The script run by the venv's python, isolated (-I), with no passlens on its path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [sys.executable, "-I", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_reduce_cuts_to_the_binding_the_pass_breaks_and_the_script_reproduces(wrong, tmp_path):
    trace, report = wrong
    assert report.first_failure.step.name == "FlipAdd"
    reduction = report.reduce(budget=60)
    assert reduction.pass_name == "FlipAdd"
    assert reduction.spec.api is None and type(reduction.spec.python).__name__ == "FlipAdd"
    assert reduction.bindings[1] == 1 and reduction.bindings[0] > 4  # the bias add alone
    assert "R.add(" in reduction.script and "metadata" not in reduction.script
    assert [n for n, _ in reduction.weights] == ["w0"]  # the bias, bound back as a constant
    assert reduction.max_abs > 0.1
    saved = reduction.save(tmp_path / "saved")
    assert sorted(p.name for p in saved.iterdir()) == sorted(reduction.files)
    assert "R.add(" in (saved / "reduced_module.py").read_text()

    script = reduction.upstream_repro(tmp_path / "out" / "repro.py")
    source = script.read_text()
    assert "passlens" not in source.replace("passlens's reducer", "")
    assert "import explorer" not in source and "from explorer" not in source
    done = _run_alone(script, tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    out = done.stdout
    assert f"tvm {tvm.__version__}" in out
    assert "max abs difference:" in out and "BUG REPRODUCED" in out
    printed = float(out.split("max abs difference: ")[1].split(",")[0])
    np.testing.assert_allclose(printed, reduction.max_abs, rtol=1e-4)

    # a pass TVM's API names, correct: the script says so and exits 0
    legalize = PassSpec("LegalizeOps", None, api="tvm.relax.transform.LegalizeOps")
    fixed = dataclasses.replace(reduction, spec=legalize, step_name="LegalizeOps")
    script = fixed.upstream_repro(tmp_path / "fixed")
    assert "return tvm.relax.transform.LegalizeOps()" in script.read_text()
    done = _run_alone(script, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "not reproduced" in done.stdout and "max abs difference: 0," in done.stdout


def test_a_loaded_trace_and_a_finding_of_another_kind_are_refused(wrong, tmp_path):
    trace, report = wrong
    trace.save(tmp_path / "t.passlens")
    loaded = explorer.load(tmp_path / "t.passlens")
    with pytest.raises(ReduceError, match="loaded TVM trace keeps no modules"):
        loaded.report.reduce()
    other = Finding("param-bloat", trace["FlipAdd"], message="planted")
    with pytest.raises(ReduceError, match="param-bloat finding cannot be reduced"):
        report.reduce(other)


def test_a_tvm_api_pass_is_named_by_its_api_and_a_correct_one_is_not_reproducible(wrong):
    """LegalizeOps (correct, changes the module) is made again as
    tvm.relax.transform.LegalizeOps(); a finding planted at it does not show on any cut."""
    from explorer.tvm.reduce import runnable

    trace, report = wrong
    step = trace["LegalizeOps"]
    spec = runnable(step, step.before.state, step.before.state.context)
    assert spec.api == "tvm.relax.transform.LegalizeOps"
    planted = Finding("diverged", step, message="planted")
    with pytest.raises(NotReproducible, match="never changed the numbers"):
        report.reduce(planted, budget=60)


def test_a_pass_another_pass_made_and_ran_cannot_be_run_again_alone():
    @tvm.transform.module_pass(opt_level=0, name="FlipAddFn")
    def flip(mod, ctx):  # made from a function: TVM keeps no Python object of it
        return _rewrite(mod, "relax.add", relax.op.subtract)

    @tvm.transform.module_pass(opt_level=0, name="Outer")
    def outer(mod, ctx):
        return flip(mod)  # recorded as a nested pass, its object held by nobody we see

    torch.manual_seed(0)
    x = torch.randn(2, 4)
    trace = explorer.explore(TwoLayers().eval(), (x,), compiler="tvm", pipeline=[outer])
    report = trace.check(progress=False)
    assert report.first_failure.step.name in ("Outer", "FlipAddFn")
    with pytest.raises(ReduceError, match="FlipAddFn cannot be run again alone: another pass"):
        report.reduce(budget=30)


def test_crafted_names_stay_data_in_the_script(tmp_path):
    """A binding and a pass named to break out of a string: the TVMScript's names are made
    plain, the pass's name is a literal, and the script runs without creating the file."""
    bb = relax.BlockBuilder()
    x = relax.Var(CRAFTED, relax.TensorType((2, 3), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.multiply(x, x), name_hint=CRAFTED)
            z = bb.emit_output(relax.op.add(y, relax.const(np.ones((2, 3), "float32"))))
        bb.emit_func_output(z)
    mod = bb.get()
    a = np.arange(6, dtype="float32").reshape(2, 3)
    trace = explorer.explore(mod, (a,), compiler="tvm", pipeline=[Crafted()])
    report = trace.check(progress=False)
    assert report.first_failure.step.name == CRAFTED
    reduction = report.reduce(budget=60)
    assert 'open("PWNED"' not in reduction.script
    script = reduction.upstream_repro(tmp_path)
    assert script.name == "repro.py"
    done = _run_alone(script, tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "BUG REPRODUCED" in done.stdout
    assert f"pass: {CRAFTED}" in done.stdout  # printed as the data it is
    assert not (tmp_path / "PWNED").exists()
