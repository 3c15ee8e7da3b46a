"""`run-failed`: a step's module could not be run by the interpreter. Reported where that
starts (a step whose module before it ran).

Details: `error`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.check.registry import Kind
from explorer.check.report import Finding

if TYPE_CHECKING:
    from explorer.check.facts import StepFacts


def detect(facts: StepFacts) -> list[Finding]:
    run, before = facts.run, facts.before
    if run is None or run.error is None or (before is not None and before.error is not None):
        return []
    nodes = [run.error_node] if run.error_node is not None else []
    message = f"{facts.label}, the module could not be run: {run.error}"
    return [Finding("run-failed", facts.step, nodes, message, {"error": run.error})]


KIND = Kind(
    "run-failed",
    "error",
    "a step's module could not be run by the interpreter",
    detect,
)
