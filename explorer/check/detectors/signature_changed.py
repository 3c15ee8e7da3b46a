"""`signature-changed` (info, never a failure): the way `@main` is called changed (after
lift-transform-params the check runs `@main_transform_params` on the weights, then
`@main`; after the lazy passes it serves `get_item` / collects `set_item`).

Details: `before` / `after` (how @main was called), `get_item_calls`,
`set_item_calls`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.check.registry import Kind
from explorer.check.report import Finding

if TYPE_CHECKING:
    from compiler.passes import CallingConvention
    from explorer.check.facts import StepFacts
    from explorer.step import Step


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


def _signature_message(step: Step, before: CallingConvention, after: CallingConvention) -> str:
    tp = after.transform or before.transform
    what = []
    if after.transform and not before.transform:
        what.append(
            f"@main now takes the weights as transformed by @{tp}: the check ran @{tp} on the "
            "weights, then @main on the inputs and its results (calling @main with the "
            "original weights would give wrong numbers)"
        )
    elif before.transform and not after.transform:
        what.append(f"@{before.transform} is gone: the check ran {after.describe()}")
    if after.transform_get and not before.transform_get:
        what.append(f"@{tp} fetches its weights with get_item: the check served the weights")
    if after.transform_set and not before.transform_set:
        what.append(f"@{tp} hands its results to set_item: the check collected them for @main")
    if after.entry_get and not before.entry_get:
        what.append(
            "@main fetches its weights with get_item: the check served the "
            + ("transformed weights" if after.transform else "weights")
        )
    if after.entry_set and not before.entry_set:
        what.append("@main hands its results to set_item: the check compared what it was handed")
    if not what:
        what.append(
            f"@main is called another way (before: {before.describe()}): the check ran "
            f"{after.describe()}"
        )
    return f"after {step.name}, " + "; ".join(what)


KIND = Kind(
    "signature-changed",
    "info",
    "the way @main is called changed (lifted or lazy parameters)",
    detect,
)
