"""A user's own TVM pass, the notebook loop (issue 42): a ``@tvm.transform.module_pass`` class
using a ``@relax.expr_functor.mutator``, a generic ``transform`` function, a lambda, a
``@relax.transform.function_pass`` written in a cell (simulated: ``exec`` of the cell's source)
are each recorded as their own step, named after the class or function (or the mutator a
generic one makes); a wrong one is found ``diverged`` at its own step, on the binding it broke;
the cell run again with the fix and the trace re-run (``get_adapter("tvm").rerun``) checks
clean. Skipped where tvm is not installed."""

from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm")
torch = pytest.importorskip("torch")

from tvm import relax  # noqa: E402

import explorer  # noqa: E402
from explorer.adapters import RERUN, get_adapter  # noqa: E402
from explorer.rerunning import RerunError  # noqa: E402

# a notebook cell: the user's pass. BODY is what the mutator makes of gelu(x)
CELL = '''
import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator


@mutator
class GeluRewrite(PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if isinstance(call.op, tvm.ir.Op) and call.op.name == "relax.nn.gelu":
            x = call.args[0]
            return BODY
        return call


def rewrite_module(mod):
    m = GeluRewrite(mod)
    for gv, fn in mod.functions_items():
        if isinstance(fn, relax.Function):
            m.builder_.update_func(gv, m.visit_expr(fn))
    return m.builder_.get()


@tvm.transform.module_pass(opt_level=0)
class FastGelu:
    """gelu made cheaper."""

    def transform_module(self, mod, ctx):
        return rewrite_module(mod)


@tvm.transform.module_pass(opt_level=0)
def transform(mod, ctx):
    return rewrite_module(mod)


anonymous = tvm.transform.module_pass(lambda mod, ctx: mod, opt_level=0)


@relax.transform.function_pass(opt_level=0)
class GeluInFunctions:
    def transform_function(self, func, mod, ctx):
        return GeluRewrite(mod).visit_expr(func)
'''
WRONG = CELL.replace("BODY", "relax.op.nn.relu(x)")  # the bug: gelu is not relu
HALF, SQRT_HALF = 'relax.const(0.5, "float32")', 'relax.const(0.7071067811865476, "float32")'
# the fix: gelu's own formula, 0.5 * x * (1 + erf(x / sqrt(2)))
RIGHT = CELL.replace(
    "BODY",
    f"relax.op.multiply(relax.op.multiply({HALF}, x), relax.op.add("
    f'relax.const(1.0, "float32"), relax.op.erf(relax.op.multiply(x, {SQRT_HALF}))))',
)


def run_cell(source: str, namespace: dict | None = None) -> dict:
    """What running a notebook cell does: its source executed in the notebook's namespace."""
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    exec(compile(source, "<notebook cell>", "exec"), namespace)
    return namespace


class GeluResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x)) + x


@pytest.fixture(scope="module")
def model_and_input():
    torch.manual_seed(0)
    return GeluResidual().eval(), torch.randn(2, 4)


@pytest.fixture(scope="module")
def wrong(model_and_input):
    """The wrong FastGelu (class pass) then CanonicalizeBindings: its trace and check."""
    model, x = model_and_input
    cell = run_cell(WRONG)
    trace = explorer.explore(
        model,
        (x,),
        compiler="tvm",
        pipeline=[cell["FastGelu"](), relax.transform.CanonicalizeBindings()],
        progress=False,
    )
    return cell, trace, trace.check(progress=False)


# ----- write it: redefinable, named after itself ---------------------------------------------


def test_running_the_cell_again_registers_nothing_and_makes_new_passes():
    import tvm_ffi

    before = len(tvm_ffi.registry.list_global_func_names())
    first = run_cell(WRONG)
    again = run_cell(WRONG, dict(first))  # the same namespace, the cell run twice
    assert len(tvm_ffi.registry.list_global_func_names()) == before  # nothing global
    assert again["FastGelu"] is not first["FastGelu"]
    assert again["FastGelu"]().info.name == "FastGelu"


def test_each_user_pass_is_its_own_step_named_after_its_class_or_function(model_and_input):
    model, x = model_and_input
    cell = run_cell(WRONG)
    trace = explorer.explore(
        model,
        (x,),
        compiler="tvm",
        pipeline=[cell["GeluInFunctions"](), cell["transform"], cell["anonymous"]],
        progress=False,
    )
    steps = [s for s in trace.steps if s.kind == "pass"]
    assert [s.depth for s in steps] == [0, 0, 0]
    function_pass, generic, lam = steps
    assert function_pass.name == "GeluInFunctions" and function_pass.changed
    # TVM calls it "transform" (the function's name): named after the mutator it made
    assert (generic.name, generic.spec) == ("GeluRewrite", "transform")
    assert trace["transform"] is generic  # TVM's own name still finds it
    # a lambda that makes no mutator: named after where it is defined
    line = next(k for k, t in enumerate(WRONG.splitlines(), 1) if t.startswith("anonymous ="))
    assert (lam.spec, lam.name) == ("<lambda>", f"<lambda> (<notebook cell>:{line})")


# ----- run it, check it: found at its step and node ------------------------------------------


def test_the_wrong_pass_is_found_diverged_at_its_own_step_on_the_gelu_it_broke(wrong):
    _, trace, report = wrong
    first = report.first_failure
    assert first.kind == "diverged"
    assert first.step.name == "FastGelu" and first.step.depth == 0
    (node,) = first.nodes
    shown = first.step.graph.node_of(node)
    assert shown.op == "R.nn.relu" and shown.provenance["node"] == "gelu"
    assert first.details["node_errors"][0].where.startswith("gelu")
    assert first.message.startswith("after FastGelu, gelu (")
    imported = report.steps[trace.imported.index]
    assert imported.status == "ok"  # the import agrees with torch: the pass broke it
    assert [f.step.name for f in report.failures if f.kind == "diverged"] == ["FastGelu"]


def test_only_the_step_that_starts_the_divergence_is_run_binding_by_binding(wrong, monkeypatch):
    """CanonicalizeBindings diverges as much as FastGelu before it: no second exposed build."""
    import explorer.tvm.node_values as node_values

    _, trace, _ = wrong
    seen = []
    real = node_values.binding_values

    def counting(module, *args):
        seen.append(module)
        return real(module, *args)

    monkeypatch.setattr(node_values, "binding_values", counting)
    report = trace.check(progress=False)
    assert [c.status for c in report.steps if c.step.name == "CanonicalizeBindings"] == ["diverged"]
    assert seen == [trace.imported.module, trace["FastGelu"].module]


# ----- fix it, run it again ------------------------------------------------------------------


def test_the_fixed_cell_rerun_replaces_the_pass_and_checks_clean(wrong):
    cell, trace, _ = wrong
    run_cell(RIGHT, cell)  # the user fixes the cell and runs it again
    adapter = get_adapter("tvm")
    assert RERUN in adapter.capabilities
    fixed = adapter.rerun(trace, replace={"FastGelu": cell["FastGelu"]()}, progress=False)
    assert fixed is not trace and fixed.compiler == "tvm"
    assert [s.name for s in fixed.steps] == [s.name for s in trace.steps]
    step = fixed["FastGelu"]
    assert step.changed
    ops = sorted(n.op for n in step.diff().added)
    assert "R.erf" in ops and "R.nn.relu" not in ops  # the fixed pass ran, not the old one
    report = fixed.check(progress=False)
    assert report.ok, str(report)
    assert not trace.check(progress=False).ok  # the old trace is as it was


def test_a_class_key_matches_the_class_the_cell_redefined(wrong, model_and_input):
    cell, trace, _ = wrong
    fresh = run_cell(RIGHT, dict(cell))
    fixed = get_adapter("tvm").rerun(
        trace, replace={fresh["FastGelu"]: fresh["FastGelu"]}, progress=False
    )
    assert fixed.check(progress=False).ok


def test_rerun_with_another_pipeline_and_with_nothing_changed(wrong):
    cell, trace, _ = wrong
    same = get_adapter("tvm").rerun(trace, from_step="FastGelu", progress=False)
    assert [s.name for s in same.steps] == [s.name for s in trace.steps]
    shorter = get_adapter("tvm").rerun(
        trace, pipeline=[relax.transform.CanonicalizeBindings()], progress=False
    )
    assert [s.name for s in shorter.steps if s.depth == 0 and s.kind == "pass"] == [
        "CanonicalizeBindings"
    ]


def test_a_pass_inside_a_sequential_is_swapped(wrong, model_and_input):
    model, x = model_and_input
    cell = run_cell(WRONG)
    seq = tvm.transform.Sequential([cell["FastGelu"]()], name="mine")
    trace = explorer.explore(model, (x,), compiler="tvm", pipeline=seq, progress=False)
    assert trace["FastGelu"].depth == 1
    run_cell(RIGHT, cell)
    fixed = get_adapter("tvm").rerun(trace, replace={"FastGelu": cell["FastGelu"]})
    assert fixed["mine"].depth == 0 and fixed["FastGelu"].depth == 1
    assert "R.erf" in {n.op for n in fixed["FastGelu"].diff().added}


# ----- clear errors --------------------------------------------------------------------------


def test_rerun_errors_say_what_is_wrong(wrong, tmp_path):
    cell, trace, _ = wrong
    adapter = get_adapter("tvm")
    with pytest.raises(RerunError, match=r"no pass .* is 'Nope' \(its passes: FastGelu, "):
        adapter.rerun(trace, replace={"Nope": cell["FastGelu"]()})
    with pytest.raises(RerunError, match="a new pass is a tvm.transform.Pass, not str"):
        adapter.rerun(trace, replace={"FastGelu": "relu"})
    with pytest.raises(RerunError, match="from_step=99: this trace has no such step"):
        adapter.rerun(trace, from_step=99)
    with pytest.raises(RerunError, match="from_step='Nope': no step named 'Nope'; steps: "):
        adapter.rerun(trace, from_step="Nope")
    path = tmp_path / "wrong.passlens"
    trace.save(path)
    with pytest.raises(RerunError, match="loaded from a file .* explore the model again"):
        adapter.rerun(explorer.load(path))


def test_a_pass_tvm_builds_inside_a_named_pipeline_cannot_be_swapped(model_and_input):
    model, x = model_and_input
    trace = explorer.explore(model, (x,), compiler="tvm", pipeline="zero", progress=False)
    with pytest.raises(RerunError, match="'FoldConstant' ran inside a pass TVM builds itself"):
        get_adapter("tvm").rerun(trace, replace={"FoldConstant": relax.transform.FoldConstant()})


class GeluInItsModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_bindings_a_user_pass_adds_take_the_place_of_the_gelu_they_replace():
    """Issue 43 item 4: the mutator's new bindings have no span, so no module of their own;
    they take the place (module ``act``, its source line) of the gelu they replace (the last
    of them, bound to the gelu's variable), not of ``fc1`` they read or ``fc2`` that reads
    them."""
    torch.manual_seed(0)
    cell = run_cell(RIGHT)
    trace = explorer.explore(
        GeluInItsModule().eval(),
        (torch.randn(2, 4),),
        compiler="tvm",
        pipeline=[cell["FastGelu"]()],
        progress=False,
    )
    step = trace["FastGelu"]
    added = [n for n in step.diff().added if n.kind == "op"]
    assert {n.op for n in added} >= {"R.multiply", "R.erf", "R.add"}, added
    gelu = next(n for n in step.previous.graph.nodes.values() if n.op == "R.nn.gelu")
    assert gelu.group.endswith("act")
    assert all(n.group == gelu.group for n in added), [(n.op, n.group) for n in added]
    # the last keeps the gelu's variable (TVM names its provenance); the others say whose
    # place they took
    placed = [n for n in added if "from" in n.provenance]
    assert len(placed) == len(added) - 1
    assert all(step.graph.nodes[n.provenance["from"]].group == gelu.group for n in placed)
    assert all(n.provenance.get("file") == gelu.provenance.get("file") for n in added)
