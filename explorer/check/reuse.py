"""A check of a re-run reuses the check of the trace it was re-run from.

`new = old.rerun(...)` shares the steps before the first pass it ran again: the very Step
objects, with the very modules. When `old.report` was made by a check with the same options
and inputs, `new.check()` takes that report's results for the shared steps (their numbers,
findings and runs, the reference and its per-node values) and runs only the new steps: a
re-run after fixing the last pass costs that pass and the check of its steps. The detectors
are called again on what the earlier check knew of each shared step (without node values), so
their check-wide state is as it was when the new steps come; their findings there are the
earlier check's.

A check keeps what this needs as its report's `CheckMemo` (in memory only, never
saved), unless the arrays it would keep alive (the reference's per-node values, each step's
outputs) are over `KEPT_BYTES` (then a check of a re-run runs every step, and says
why).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from explorer.check.facts import Reference, Run

if TYPE_CHECKING:
    from explorer.check.report import Finding, Report, StepCheck
    from explorer.step import Step

KEPT_BYTES = 256 << 20  # arrays a report keeps alive for a check of a re-run


@dataclass(eq=False)
class CheckMemo:
    """What a check of a re-run of a trace reuses of this trace's check: the options it ran
    with (`key`) and its inputs, the steps in the order they ran, each one's numbers,
    findings and what its detectors saw, the runs by module, the reference and the notes;
    `why_not` says why a check of a re-run cannot use it ("": it can)."""

    key: tuple
    why_not: str = ""
    runtime: list | None = None
    weights: list | None = None
    order: list[Step] = field(default_factory=list)
    checks: dict[int, StepCheck] = field(default_factory=dict)  # by step index
    findings: dict[int, list[Finding]] = field(default_factory=dict)  # by step index
    detected: dict[int, tuple] = field(default_factory=dict)  # index -> (run, before, compared)
    results: dict[int, Run] = field(default_factory=dict)  # id(module) -> its run
    first_step: dict[int, Step] = field(default_factory=dict)  # id(module) -> first step
    reference: Reference = field(default_factory=Reference)
    ref_outputs: tuple | None = None
    notes: list[str] = field(default_factory=list)
    notes_after: dict[int, int] = field(default_factory=dict)  # index -> notes after it
    modules: list = field(default_factory=list)  # keeps every module of ``results`` alive


def options_key(checker: Any) -> tuple:
    """What must be the same for two checks' results to be the same (progress aside);
    `checker` is an `explorer.check.runner.Checker` (which imports this module)."""
    o = checker.options
    return (
        type(checker.runner),
        o.rtol,
        o.atol,
        o.bloat_threshold,
        o.bloat_min_bytes,
        o.reference,
    )


def keep(checker: Any, findings: list[Finding]) -> CheckMemo | None:
    """What `checker`'s report keeps for a check of a re-run (None: its runner's results
    cannot be reused)."""
    if not getattr(checker.runner, "reuses_earlier_checks", False):
        return None
    ref = checker.reference
    size = array_bytes([ref.fx_values, ref.node_values, getattr(ref.float64, "nodes", None)])
    size += array_bytes([(r.outputs, r.judged) for r in checker.results.values()])
    if size > KEPT_BYTES:
        return CheckMemo(
            options_key(checker),
            why_not=(
                f"the check of the trace it re-ran kept no results ({size / 2**20:.0f} MiB of "
                f"reference values and outputs, over the {KEPT_BYTES / 2**20:.0f} MiB kept)"
            ),
        )
    by_step: dict[int, list[Finding]] = {}
    for f in findings:
        by_step.setdefault(f.step.index, []).append(f)
    return CheckMemo(
        options_key(checker),
        runtime=checker.runtime,
        weights=checker.weights,
        order=list(checker.order),
        checks=dict(checker.checks),
        findings=by_step,
        detected=dict(checker.detected),
        results=dict(checker.results),
        first_step=dict(checker.first_step),
        reference=checker.reference,
        ref_outputs=checker.ref_outputs,
        notes=list(checker.notes),
        notes_after=dict(checker.notes_after),
        modules=[s.module for s in checker.first_step.values()],
    )


def array_bytes(values: Any) -> int:
    """Bytes of the distinct numpy arrays in `values` (dicts, tuples and lists walked)."""
    total, seen = 0, set()
    stack: list[Any] = [values]
    while stack:
        value = stack.pop()
        if isinstance(value, np.ndarray):
            if id(value) not in seen:
                seen.add(id(value))
                total += value.nbytes
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (tuple, list)):
            stack.extend(value)
    return total


def earlier(checker: Any) -> CheckMemo | None:
    """The memo of the check of the trace `checker`'s trace was re-run from, when its
    results hold for this check (same runner, options and inputs); a note says why not when
    there is one and it cannot be used."""
    prior = getattr(checker.trace, "rerun_of", None)
    report: Report | None = getattr(prior, "report", None)
    memo: CheckMemo | None = getattr(report, "memo", None)
    if memo is None:
        return None
    why = memo.why_not
    if not why and memo.key != options_key(checker):
        why = "the check of the trace it re-ran had other options (reference, tolerances)"
    if not why and not (
        _same_arrays(memo.runtime, checker.runtime) and _same_arrays(memo.weights, checker.weights)
    ):
        why = "the check of the trace it re-ran ran on other inputs"
    if why:
        checker.notes.append(f"every step was run: {why}")
        return None
    return memo


def shared_prefix(order: list[Step], memo: CheckMemo) -> int:
    """How many steps at the start of `order` are the memo's own, in the same order."""
    n = 0
    for new, old in zip(order, memo.order, strict=False):
        if new is not old or new.index not in memo.checks:
            break
        n += 1
    return n


def reused_check(memo: CheckMemo, step: Step) -> tuple[StepCheck, list[Finding]]:
    """Copies of the memo's numbers and findings of `step` (a report owns its own)."""
    check = dataclasses.replace(memo.checks[step.index])
    findings = [
        dataclasses.replace(f, nodes=list(f.nodes), details=dict(f.details))
        for f in memo.findings.get(step.index, [])
    ]
    return check, findings


def _same_arrays(a: list | None, b: list | None) -> bool:
    if a is None or b is None:
        return a is b
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x is y:
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        try:
            if not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
                return False
        except TypeError:
            return False
    return True


__all__ = [
    "KEPT_BYTES",
    "CheckMemo",
    "earlier",
    "keep",
    "options_key",
    "array_bytes",
    "reused_check",
    "shared_prefix",
]
