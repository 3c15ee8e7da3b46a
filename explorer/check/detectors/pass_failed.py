"""`pass-failed`: a pass raised. Reported at the failed step that has no children (a
nested pipeline fails because one of its passes did: that pass is named), with the binding
it failed on.

Details: `error`, `traceback`, `function`, `line` (0-based line of `step.text`)
and `line_text`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.check.references import node_location
from explorer.check.registry import Kind
from explorer.check.report import Finding

if TYPE_CHECKING:
    from explorer.check.facts import StepFacts


def detect(facts: StepFacts) -> list[Finding]:
    step = facts.step
    if not step.failed or step.children:
        return []
    err = step.error
    what = f"{type(err).__name__}: {err}" if str(err) else f"{type(err).__name__} (no message)"
    line = step.failed_line
    line_text = step.text.splitlines()[line].strip() if line is not None else None
    where = ""
    if line_text:
        where = f" on `{line_text}`"
        if step.failed_function:
            where += f" in @{step.failed_function}"
    node = step.failed_node
    src = f" (from {node_location(node)})" if node is not None and not node.prov.is_empty else ""
    finding = Finding(
        "pass-failed",
        step,
        [node] if node is not None else [],
        f"{step.name} failed{where}{src}: {what}",
        {
            "error": err,
            "traceback": step.traceback,
            "function": step.failed_function,
            "line": line,
            "line_text": line_text,
        },
    )
    return [finding]


KIND = Kind(
    "pass-failed",
    "error",
    "a pass raised: the binding it failed on and the error",
    detect,
)
