"""The pipeline side of a reduction: the leaf passes a trace ran, in order, and delta debugging
(ddmin) over a list of items, used for the passes and for the module's bindings alike.

A named pipeline (`default`) or any pass that is a list of passes is replaced by its passes,
so every unit is one pass application at depth 0 of a candidate's trace; a pass that applies
other passes inside itself stays one unit with its nested steps. A unit keeps the Pass object
that runs it (the step's own, so a pass nobody registered runs as the instance the trace
ran; for a loaded trace, found again by `explorer.passlens.user_passes`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from compiler.passes import PipelineError, Sequential, build_pipeline
from explorer.passlens.user_passes import MissingPasses, runnable

if TYPE_CHECKING:
    from explorer.step import Step
    from explorer.trace import Trace

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Unit:
    """One pass of the flattened pipeline: its spec, the step that ran it in the trace and the
    Pass that runs it again (None: this process does not have it, `missing` says which)."""

    spec: str
    step: Step
    pass_object: Any = None
    missing: MissingPasses | None = None


def _is_list_of_passes(spec: str) -> bool:
    """Whether a step's spec names a pipeline (its children are its passes, in order)."""
    try:
        seq = build_pipeline(spec)
    except PipelineError:
        return False
    return len(seq.passes) != 1 or isinstance(seq.passes[0], Sequential)


def units_of(trace: Trace) -> list[Unit]:
    """The leaf passes the trace ran, in order (named pipelines expanded). The step tree is
    walked iteratively and each step at most once: a crafted trace whose steps list
    overlapping children (or a chain thousands deep) costs its size, not more."""
    out: list[Unit] = []
    seen: set[int] = set()
    stack = [s for s in reversed(trace.steps) if s.kind == "pass" and s.depth == 0]
    while stack:
        step = stack.pop()
        if step.index in seen:
            continue
        seen.add(step.index)
        obj = step.pass_object
        listed = isinstance(obj, Sequential) if obj is not None else _is_list_of_passes(step.spec)
        if step.children and listed:
            stack.extend(trace.steps[c] for c in reversed(step.children) if c not in seen)
        else:
            try:
                out.append(Unit(step.spec, step, runnable(step, trace.steps)))
            except MissingPasses as e:
                out.append(Unit(step.spec, step, None, e))
    return out


def unit_index(units: Sequence[Unit], step: Step) -> int | None:
    """The position of the unit that ran `step` (the step itself or one of its ancestors)."""
    trace = step.trace
    position = {id(u.step): i for i, u in enumerate(units)}
    at: Step | None = step
    seen: set[int] = set()
    while at is not None and at.index not in seen:
        seen.add(at.index)
        if id(at) in position:
            return position[id(at)]
        at = trace.steps[at.parent] if trace is not None and at.parent is not None else None
    return None


def subtree(trace: Trace, step: Step) -> set[int]:
    """Indices of `step` and every step nested in it (each visited once)."""
    inside, stack = set(), [step]
    while stack:
        s = stack.pop()
        if s.index in inside:
            continue
        inside.add(s.index)
        stack.extend(trace.steps[c] for c in s.children if c not in inside)
    return inside


def spec_of(units: Sequence[Unit], kept: Sequence[int]) -> str:
    """The pipeline spec of the units at positions `kept`."""
    return ",".join(units[i].spec for i in kept)


def passes_of(units: Sequence[Unit], kept: Sequence[int]) -> list:
    """The passes of the units at positions `kept`, as objects (what a candidate runs);
    raises `explorer.passlens.user_passes.MissingPasses` for those not available."""
    missing = MissingPasses([])
    for i in kept:
        if units[i].missing is not None:
            missing += units[i].missing
    if missing.missing:
        raise missing
    return [units[i].pass_object for i in kept]


def ddmin(items: list[T], without: Callable[[list[T]], list[T] | None]) -> list[T]:
    """Delta debugging (Zeller's ddmin, removing chunks): `without(chunk)` tries the
    candidate without `chunk` and returns the items it has left when the finding still holds
    and the candidate is smaller than the current one by a measure that cannot decrease
    forever (so this ends), or None. Starts by trying to remove everything, then halves,
    quarters ... down to single items; returns what is left when no single item can go."""
    n = 1
    while items:
        n = min(n, len(items))
        size, extra = divmod(len(items), n)
        chunks, start = [], 0
        for k in range(n):
            end = start + size + (1 if k < extra else 0)
            chunks.append(items[start:end])
            start = end
        for chunk in chunks:
            left = without(chunk)
            if left is not None:
                items = left
                n = max(n - 1, 1)
                break
        else:
            if n >= len(items):
                return items
            n = min(2 * n, len(items))
    return items
