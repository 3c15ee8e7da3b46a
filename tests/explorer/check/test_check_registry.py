"""The kinds of finding are a registry (issue #15): a kind registered with its detector shows
in the check report, the timeline's badges and the graph's marks with no other edit."""

from __future__ import annotations

import pytest

import explorer
from compiler import models
from compiler.ir.nodes import Call
from explorer.check import KINDS, SEVERITY, Finding, Kind, registry
from widgets.findings import problems_of
from widgets.graph_data import graph_payload
from widgets.render import summary_html


def _many_adds(facts) -> list[Finding]:
    """A toy kind: a pass step whose module computes more than one add."""
    step = facts.step
    if facts.run is None or step.kind != "pass":
        return []
    adds = [n for n in step.module["main"].iter_nodes() if isinstance(n, Call) and n.op == "add"]
    if len(adds) < 2:
        return []
    return [Finding("many-adds", step, adds[:1], f"{len(adds)} adds", {"adds": len(adds)})]


def test_the_built_in_kinds_are_registered_in_finding_order():
    names = [k.name for k in KINDS]
    assert names == [
        "pass-failed",
        "run-failed",
        "shape-mismatch",
        "diverged",
        "param-bloat",
        "signature-changed",
    ]
    assert [k.name for k in registry.kinds()] == names
    assert SEVERITY["param-bloat"] == "warning" and SEVERITY["signature-changed"] == "info"
    assert all(k.description and callable(k.detect) for k in KINDS)
    assert registry.kind_of("signature-changed").is_failure is False


def test_a_kind_needs_a_known_severity():
    with pytest.raises(ValueError, match="severity"):
        Kind("odd", "fatal", "no such severity", _many_adds)


def test_a_registered_kind_shows_in_the_report_badges_and_graph(monkeypatch):
    kind = Kind("many-adds", "warning", "more than one add", _many_adds, node_mark="one of many")
    monkeypatch.setitem(registry._KINDS, kind.name, kind)
    trace = explorer.explore(models.mlp((8, 16, 4), batch=2), pipeline="decompose-ops")
    report = trace.check()

    found = report.of_kind("many-adds")
    assert found, report
    first = found[0]
    assert first.severity == "warning" and first.is_failure
    assert str(first) in str(report)
    # listed after the built-in kinds of its step
    at = report.at(first.step)
    assert at.index(first) == len(at) - 1

    assert first in problems_of(report, first.step)
    html = summary_html(trace, report)
    assert f"data-step='{first.step.index}'" in html and "finding" in html

    payload = graph_payload(first.step, report=report)
    marked = [n for n in payload["nodes"] if n.get("mark") == "one of many"]
    assert len(marked) == 1 and marked[0].get("bad") == 1

    # the graph reads the kind's mark from the registry
    monkeypatch.setattr(kind, "node_mark", "")
    payload = graph_payload(first.step, report=report, stats=False)
    assert not any(n.get("mark") == "one of many" for n in payload["nodes"])
