"""A user's own onnxscript rewrite rule, the notebook loop (issue 42): a rule written in a cell
(simulated: ``exec`` of the cell's source) is its own step, named after the rule (the variable
the cell binds it to when it has no ``name``, or its ``RewriteRuleClassBase`` class); the wrong
one is found ``diverged`` at that step, on the node it made; the cell run again with the fix
and the trace re-run (``get_adapter("onnxruntime").rerun``) checks clean. A rule that matches
what it produces fails its stage with a clear error (onnxscript alone would loop forever)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

import explorer  # noqa: E402
from explorer.adapters import RERUN, get_adapter  # noqa: E402
from explorer.rerunning import RerunError  # noqa: E402

CELL = """
from onnxscript.rewriter import pattern


def add_pattern(op, a, b):
    return op.Add(a, b)


def cheaper_add(op, a, b):
    return BODY


fast_add_rule = pattern.RewriteRule(add_pattern, cheaper_add)  # no name: the variable's


class FastAddClass(pattern.RewriteRuleClassBase):
    def pattern(self, op, a, b):
        return op.Add(a, b)

    def rewrite(self, op, a, b):
        return BODY
"""
WRONG = CELL.replace("BODY", "op.Sub(a, b)")  # a + b -> a - b
RIGHT = CELL.replace("BODY", "op.Sub(a, op.Neg(b))")  # a + b -> a - (-b)
LOOPS = CELL.replace("BODY", "op.Add(b, a)")  # matches what it makes


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
def wrong():
    """The wrong rule (named by its variable) after onnxscript's optimizer: the namespace, the
    trace and its check."""
    torch.manual_seed(0)
    model, x = Residual().eval(), torch.randn(2, 8)
    cell = run_cell(WRONG, {"__name__": "__main__"})
    trace = explorer.explore(
        model,
        (x,),
        compiler="onnxruntime",
        pipeline="onnxscript",
        rewrite_rules=[cell["fast_add_rule"]],
        progress=False,
    )
    return cell, trace, trace.check(progress=False)


def test_the_wrong_rule_is_its_own_step_found_diverged_on_the_node_it_made(wrong):
    _, trace, report = wrong
    step = trace["fast_add_rule"]
    assert trace.steps[step.parent].name == "rewrite_rules"
    first = report.first_failure
    assert first.kind == "diverged" and first.step is step
    (node,) = first.nodes
    assert step.graph.node_of(node).op == "Sub"


def test_the_fixed_cell_rerun_swaps_the_rule_and_checks_clean(wrong):
    cell, trace, _ = wrong
    run_cell(RIGHT, cell)  # the same names: fast_add_rule is the fixed rule now
    adapter = get_adapter("onnxruntime")
    assert RERUN in adapter.capabilities
    fixed = adapter.rerun(trace, replace={"fast_add_rule": cell["fast_add_rule"]}, progress=False)
    assert fixed is not trace
    step = fixed["fast_add_rule"]  # named as the trace named it
    assert sorted(n.op for n in step.graph.nodes.values() if n.kind == "op") == [
        "Gemm",
        "Neg",
        "Relu",
        "Sub",
    ]
    report = fixed.check(progress=False)
    assert report.ok, str(report)


def test_a_rule_class_redefined_in_the_cell_is_swapped_by_its_class(wrong):
    torch.manual_seed(0)
    model, x = Residual().eval(), torch.randn(2, 8)
    cell = run_cell(WRONG, {"__name__": "__main__"})
    trace = explorer.explore(
        model,
        (x,),
        compiler="onnxruntime",
        pipeline="onnxscript",
        rewrite_rules=[cell["FastAddClass"].rule()],
        progress=False,
    )
    assert not trace.check(progress=False).ok
    run_cell(RIGHT, cell)
    new = cell["FastAddClass"]
    fixed = get_adapter("onnxruntime").rerun(trace, replace={new: new}, progress=False)
    assert fixed["FastAddClass"].changed
    assert fixed.check(progress=False).ok


def test_a_rule_that_matches_what_it_makes_fails_its_stage_instead_of_looping(wrong):
    cell, trace, _ = wrong
    loops = run_cell(LOOPS, dict(cell))["fast_add_rule"]
    again = get_adapter("onnxruntime").rerun(
        trace, replace={"fast_add_rule": loops}, progress=False
    )
    failed = again.failure
    assert failed is not None and failed.name == "rewrite_rules"
    assert "rewrite rule 'fast_add_rule' applied" in str(failed.error)
    assert "matches what it produces" in str(failed.error)


def test_rerun_with_another_pipeline_and_the_errors(wrong, tmp_path):
    cell, trace, _ = wrong
    adapter = get_adapter("onnxruntime")
    with_ort = adapter.rerun(trace, pipeline="onnxscript,ort:basic", progress=False)
    assert [s.name for s in with_ort.steps if s.depth == 0][-1] == "ort:basic"
    with pytest.raises(RerunError, match=r"is 'Nope' \(its passes: fast_add_rule\)"):
        adapter.rerun(trace, replace={"Nope": cell["fast_add_rule"]})
    with pytest.raises(RerunError, match="a new rule is an onnxscript RewriteRule"):
        adapter.rerun(trace, replace={"fast_add_rule": "Add -> Sub"})
    path = tmp_path / "rule.passlens"
    trace.save(path)
    with pytest.raises(RerunError, match="loaded from a file"):
        adapter.rerun(explorer.load(path))
