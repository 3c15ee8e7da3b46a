"""``signature-changed`` (info, never a failure): the way ``@main`` is called changed (after
lift-transform-params the check runs ``@main_transform_params`` on the weights, then
``@main``; after the lazy passes it serves ``get_item`` / collects ``set_item``).

Details: ``before`` / ``after`` (how @main was called), ``get_item_calls``,
``set_item_calls``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.check.convention import _signature_message
from explorer.check.registry import Kind
from explorer.check.report import Finding

if TYPE_CHECKING:
    from explorer.check.facts import StepFacts


def detect(facts: StepFacts) -> list[Finding]:
    run, before, step = facts.run, facts.before, facts.step
    if run is None or before is None or step.kind != "pass":
        return []
    if before.convention is None or run.convention is None:
        return []
    if before.convention == run.convention:
        return []
    finding = Finding(
        "signature-changed",
        step,
        [],
        _signature_message(step, before.convention, run.convention),
        {
            "before": before.convention.describe(),
            "after": run.convention.describe(),
            "get_item_calls": run.get_calls,
            "set_item_calls": run.set_calls,
        },
    )
    return [finding]


KIND = Kind(
    "signature-changed",
    "info",
    "the way @main is called changed (lifted or lazy parameters)",
    detect,
)
