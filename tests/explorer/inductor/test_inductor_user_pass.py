"""A user's own Inductor post-grad pass, the notebook loop (issue 42): a ``CustomGraphPass``
written in a cell (simulated: ``exec`` of the cell's source) is its own step, named after its
class; the wrong one is found ``diverged`` at that step, on the node it broke; the cell run
again with the fix (the same class name and the same ``uuid()``) and the trace re-run
(``get_adapter("inductor").rerun``): the fixed pass really runs (no cache serves the old
compile) and the check is clean."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor")

import explorer  # noqa: E402
from explorer.adapters import RERUN, get_adapter  # noqa: E402
from explorer.rerunning import RerunError  # noqa: E402

CELL = '''
import torch
from torch._inductor.custom_graph_pass import CustomGraphPass


class FastAdd(CustomGraphPass):
    """The user's post-grad pass: rewrites every aten.add.Tensor."""

    calls = 0  # how many graphs it was run on (the test's witness that it ran)

    def __call__(self, graph):
        type(self).calls += 1
        for node in graph.nodes:
            if node.target is torch.ops.aten.add.Tensor:
                BODY

    def uuid(self):
        return "passlens-test-fast-add"  # the same in both versions of the cell
'''
WRONG = CELL.replace("BODY", "node.target = torch.ops.aten.sub.Tensor")  # a + b -> a - b
RIGHT = CELL.replace("BODY", "node.args = (node.args[1], node.args[0], *node.args[2:])")


def run_cell(source: str, namespace: dict) -> dict:
    """What running a notebook cell does: its source executed in the notebook's namespace."""
    exec(compile(source, "<notebook cell>", "exec"), namespace)
    return namespace


class Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


@pytest.fixture(scope="module")
def loop():
    """The wrong cell, explored and checked; then the fixed cell run in the same namespace and
    the trace re-run and checked: ``(namespace, wrong class, trace, report, fixed trace,
    fixed report, (graphs the wrong pass and the fixed one ran on))``."""
    torch.manual_seed(0)
    model, x = Residual().eval(), torch.randn(2, 8)
    cell = run_cell(WRONG, {"__name__": "__main__"})
    wrong_class = cell["FastAdd"]
    trace = explorer.explore(
        model,
        (x,),
        compiler="inductor",
        options={"post_grad_custom_post_pass": cell["FastAdd"]()},
        progress=False,
    )
    report = trace.check(progress=False)
    run_cell(RIGHT, cell)
    fixed = get_adapter("inductor").rerun(
        trace, replace={"FastAdd": cell["FastAdd"]()}, progress=False
    )
    calls = (wrong_class.calls, cell["FastAdd"].calls)
    return cell, wrong_class, trace, report, fixed, fixed.check(progress=False), calls


def test_the_wrong_pass_is_found_at_its_own_step_on_the_add_it_broke(loop):
    _, wrong_class, trace, report, _, _, calls = loop
    first = report.first_failure
    assert first.kind == "diverged"
    assert first.step.name == "FastAdd"
    assert first.step.spec == "post_grad_custom_post_pass=FastAdd"
    assert trace.steps[first.step.parent].name == "post-grad passes"
    assert [n.name for n in first.nodes] == ["add"]
    assert first.step.graph.node_of(first.nodes[0]).op == "aten.sub.Tensor"
    assert calls[0] == 1


def test_the_fixed_cell_rerun_runs_the_fixed_pass_and_checks_clean(loop):
    cell, wrong_class, trace, _, fixed, report, calls = loop
    assert RERUN in get_adapter("inductor").capabilities
    assert cell["FastAdd"] is not wrong_class  # the cell made a new class
    assert calls == (1, 1)  # the fix ran on the graph, and the old pass not again
    assert fixed is not trace
    step = fixed["FastAdd"]
    assert step.changed and step.spec == "post_grad_custom_post_pass=FastAdd"
    (add,) = [n for n in step.graph.nodes.values() if n.op == "aten.add.Tensor"]
    assert add.label == "add"
    assert report.ok, str(report)
    assert [s.name for s in fixed.steps if s.depth == 0] == [
        s.name for s in trace.steps if s.depth == 0
    ]


def test_a_class_key_or_an_options_pipeline_swaps_the_pass_too(loop):
    cell, _, trace, _, _, _, _ = loop
    adapter = get_adapter("inductor")
    by_class = adapter.rerun(trace, replace={cell["FastAdd"]: cell["FastAdd"]}, progress=False)
    assert by_class["FastAdd"].changed
    by_options = adapter.rerun(trace, pipeline={"post_grad_custom_post_pass": None}, progress=False)
    assert all(s.name != "FastAdd" for s in by_options.steps)  # the option as given: no pass
    assert by_options.check(progress=False).ok


def test_rerun_errors_say_what_is_wrong(loop, tmp_path):
    cell, _, trace, _, _, _, _ = loop
    adapter = get_adapter("inductor")
    with pytest.raises(RerunError, match="is 'Nope' .*its passes: .*FastAdd"):
        adapter.rerun(trace, replace={"Nope": cell["FastAdd"]()})
    with pytest.raises(RerunError, match="a dict of torch._inductor.config options"):
        adapter.rerun(trace, pipeline="default")
    with pytest.raises(RerunError, match="from_step=1000"):
        adapter.rerun(trace, from_step=1000)
    path = tmp_path / "inductor.passlens"
    trace.save(path)
    with pytest.raises(RerunError, match="loaded from a file"):
        adapter.rerun(explorer.load(path))
