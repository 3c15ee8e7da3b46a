"""``Trace`` is a thin facade over parts with one job each (issue 33): recording
(explorer.passlens.record), a step (explorer.step, explorer.passlens.backend), finding steps
(explorer.step_lookup), the summary, the check, persistence, other viewers and the display
hooks. The facade imports its parts up front; inside a method it imports only the store (which
builds traces, so imports this module) and, in its display hooks, the widgets."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import explorer
from explorer import step_lookup
from explorer.passlens import record as recording
from explorer.step import Step
from explorer.trace import Trace

ROOT = Path(__file__).resolve().parents[2]

TEXT = """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %a: f32[2, 3] = add(%x, const(f32[], 1.0))
  %b: f32[2, 3] = relu(%a)
  return %b
}
"""


def _imports_inside_functions(path: Path) -> dict[str, list[str]]:
    """function (``Class.method``) -> modules it imports in its body."""
    out: dict[str, list[str]] = {}

    def visit(node, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = where
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                name = f"{where}.{child.name}" if where else child.name
            if isinstance(child, ast.ImportFrom) and where:
                out.setdefault(where, []).append(child.module or "")
            elif isinstance(child, ast.Import) and where:
                out.setdefault(where, []).extend(a.name for a in child.names)
            visit(child, name)

    visit(ast.parse(path.read_text()), "")
    return {k: v for k, v in out.items() if "." in k or k[0].isupper()}


def test_the_facade_imports_inside_its_methods_only_the_store_and_the_widgets():
    inner = _imports_inside_functions(ROOT / "explorer" / "trace.py")
    assert inner == {
        "Trace.save": ["explorer.store.write"],
        "Trace.to_html": ["widgets.report"],
        "Trace.show": ["IPython.display"],
        "Trace.stepper": ["widgets.stepper"],
    }


def test_a_step_imports_inside_its_methods_only_the_widgets_in_its_display_hook():
    inner = _imports_inside_functions(ROOT / "explorer" / "step.py")
    assert inner == {"Step._repr_html_": ["widgets.report"]}


def test_recording_builds_the_trace_the_facade_reads():
    trace = recording.explore(TEXT, pipeline="fold-constant,dce,fold-constant")
    assert isinstance(trace, Trace) and all(isinstance(s, Step) for s in trace)
    assert explorer.trace_from_module is recording.trace_from_module
    assert [s.kind for s in trace] == ["import", "pass", "pass", "pass"]
    assert trace.imported.name == "parse"
    assert trace["fold-constant#2"] is trace[3]
    assert trace.final is trace[3] and trace.imported is trace[0] and trace.failure is None


def test_finding_steps_by_name_says_which_names_there_are():
    trace = recording.explore(TEXT, pipeline="dce")
    with pytest.raises(KeyError, match="no step named .fold.; steps: dead-code-elimination, parse"):
        step_lookup.find_step(trace.steps, "fold")
    with pytest.raises(TypeError, match="not float"):
        trace[1.0]


def test_the_failed_step_is_the_innermost_failed_pass():
    steps = [
        Step(0, "import", "import"),
        Step(1, "pass", "outer", error=RuntimeError("outer"), children=[2]),
        Step(2, "pass", "inner", error=RuntimeError("inner"), parent=1),
    ]
    assert step_lookup.failed_step(steps) is steps[2]
    assert step_lookup.failed_step(steps[:1]) is None
