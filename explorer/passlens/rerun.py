"""Re-running a passlens trace from the first pass that changed (`Trace.rerun`, the passlens
adapter's `rerun`): the steps before it are kept, the very Step objects, and only what
follows is recorded, from the module the last kept pass made.

What changed is found among the pipeline's top-level passes (a named pipeline such as
`default` is one; its nested steps belong to it): the first one that is not the same pass
(the same object, or equal: a frozen dataclass of the same class and options), where a pass
whose class was defined again since the trace ran (a notebook cell run again: the registry, or
its module, now holds another class of the same module and qualified name) counts as changed
and runs as the new class, built from its spec. `replace` swaps passes (inside named
pipelines too), `pipeline` gives a new list, `from_step` records anew from a step's
top-level pass even when nothing before it changed. A trace whose pass failed runs again from
that pass at the latest (nothing after it was recorded).

The new trace has `rerun_of` (the old Trace) and `rerun_from` (the first step recorded
anew); checking it reuses the old trace's last check for the steps they share
(`explorer.check.reuse`).
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from compiler import passes
from compiler.passes import (
    Pass,
    PipelineError,
    Sequential,
    all_passes,
    build_pipeline,
    same_definition,
)
from explorer.passlens.record import passes_job
from explorer.passlens.user_passes import MissingPasses, Unresolved, entries, require
from explorer.recording import pass_steps
from explorer.step import Step
from explorer.trace import RerunError, Trace


def rerun(
    trace: Trace,
    pipeline: Any = None,
    from_step: int | None = None,
    replace: Any = None,
    progress: Any = None,
) -> Trace:
    """`trace` run again from its first changed top-level pass (see the module docstring);
    a new Trace sharing the steps before it."""
    old = entries(trace)
    if pipeline is None:
        new = [_current(p) for p in old]
    else:
        try:
            new = list(build_pipeline(pipeline).passes)
        except PipelineError as e:
            raise RerunError(f"rerun: the pipeline cannot be built: {e}") from None
    if replace is not None:
        new = _replaced(new, replace)
    tops = [s for s in trace.steps if s.kind == "pass" and s.depth == 0]
    first = _first_change(old, new)
    if first is None and from_step is None:
        warnings.warn(
            "rerun: nothing changed (the same passes; none was defined again): the new trace "
            "shares every step with this one (give from_step to record again from a step)",
            stacklevel=4,  # the caller of Trace.rerun
        )
        return _shared(trace, list(trace.steps), old, trace.skipped, trace.interrupted)
    # the last top-level pass that has a module to go on from: not a failed (or stopped) one
    done = len(tops) - 1 if tops and tops[-1].module is None else len(tops)
    start = min(x for x in (first, done, _entry_of(trace, tops, from_step)) if x is not None)
    try:
        to_run = require(new[start:])
    except MissingPasses as e:
        where = f"#{tops[start].index} {tops[start].name}" if start < len(tops) else "the end"
        raise RerunError(f"rerun from {where}: {e}") from None
    kept = list(trace.steps[: tops[start].index]) if start < len(tops) else list(trace.steps)
    module = tops[start - 1].module if start > 0 else trace.imported.module
    job, instruments = passes_job(progress, to_run)
    try:
        with passes.collect_rewrites():
            result = passes.run(
                module, Sequential(tuple(to_run)), record=True, instruments=instruments
            )
    except passes.PassesInterrupted as e:  # Ctrl-C: the trace of what ran, the rest skipped
        result = e.result
    finally:
        job.close()
    steps = kept + pass_steps(result.snapshots, len(kept))
    return _shared(trace, steps, new, result.skipped, result.interrupted, len(kept))


def _shared(
    trace: Trace,
    steps: list[Step],
    pipeline: list,
    skipped: Sequence,
    interrupted: bool,
    rerun_from: int | None = None,
) -> Trace:
    """The new trace: `steps` (the old trace's first ones shared), what the run was."""
    resolved = not any(isinstance(p, Unresolved) for p in pipeline)
    out = Trace(
        steps,
        source=trace.source,
        example_inputs=trace.example_inputs,
        pipeline=",".join(_spec(p) for p in pipeline),
        frontend=trace.frontend,
        skipped=skipped,
        interrupted=interrupted,
        compiler=trace.compiler,
        trusted_ops=trace.trusted_ops,
        passes=tuple(pipeline) if resolved else (),
    )
    out.source_trusted = trace.source_trusted
    out.rerun_of = trace
    out.rerun_from = len(steps) if rerun_from is None else rerun_from
    return out


def _spec(p: Any) -> str:
    return p.spec if isinstance(p, Unresolved) else p.spec()


# ===== what changed =============================================================================


def _first_change(old: list, new: list) -> int | None:
    """The position of the first top-level pass that differs (None: none)."""
    for i in range(max(len(old), len(new))):
        if i >= len(old) or i >= len(new) or not _same_pass(old[i], new[i]):
            return i
    return None


def _same_pass(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, Unresolved):
        return a.same_as(b)
    if isinstance(b, Unresolved):
        return b.same_as(a)
    try:
        return bool(a == b)
    except Exception:  # options that do not compare (arrays): not known to be the same
        return False


def _current(p: Any) -> Any:
    """`p` as its class is defined now: a pass whose class was defined again (the registry,
    or its module, holds another class of the same definition) rebuilt from its spec with the
    new class; a list of passes with each of its passes so."""
    if isinstance(p, Sequential):
        kids = tuple(_current(c) for c in p.passes)
        if all(a is b for a, b in zip(kids, p.passes, strict=True)):
            return p
        return dataclasses.replace(p, passes=kids)
    if not isinstance(p, Pass):
        return p
    newer = _redefined(type(p))
    if newer is None:
        return p
    try:
        seq = build_pipeline(p.spec(), classes=[newer])
    except PipelineError as e:
        raise RerunError(
            f"rerun: {newer.__qualname__} was defined again, and its pass cannot be built "
            f"from the spec {p.spec()!r} ({e}): give it with replace={{{p.name!r}: ...}}"
        ) from None
    return seq.passes[0]


def _redefined(cls: type) -> type | None:
    """The class defined later by the same definition as `cls` (a cell run again), if any."""
    name = getattr(cls, "name", "")
    for newer in (all_passes().get(name), _in_module(cls)):
        if (
            isinstance(newer, type)
            and newer is not cls
            and issubclass(newer, Pass)
            and same_definition(newer, cls)
            and newer.name == name
        ):
            return newer
    return None


def _in_module(cls: type) -> Any:
    """What `cls`'s module holds now under its qualified name (a notebook's `__main__`)."""
    obj: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    return obj


# ===== the arguments ============================================================================


def _entry_of(trace: Trace, tops: list[Step], from_step: Any) -> int | None:
    """The position among the top-level passes of the one that ran step `from_step`."""
    if from_step is None:
        return None
    if not tops:
        raise RerunError("rerun: this trace ran no pass to start from")
    span = f"#{tops[0].index}..#{len(trace.steps) - 1}"
    if isinstance(from_step, bool) or not isinstance(from_step, int):
        raise RerunError(f"rerun: from_step is a step's index ({span}), not {from_step!r}")
    if not 0 <= from_step < len(trace.steps):
        raise RerunError(
            f"rerun: from_step {from_step} is out of range: this trace's pass steps are {span}"
        )
    step = trace.steps[from_step]
    if step.kind != "pass":
        raise RerunError(
            f"rerun: step #{from_step} is the {step.kind} step; a re-run starts at a pass step "
            f"({span}): explore the model again to import it anew"
        )
    while step.parent is not None:
        step = trace.steps[step.parent]
    return next(i for i, s in enumerate(tops) if s is step)


def _replaced(pipeline: list, replace: Any) -> list:
    """`pipeline` with each pass `replace` names swapped for its value."""
    if not isinstance(replace, dict):
        raise RerunError(
            "rerun: replace is a dict {pass name, spec or class: the pass to run instead}, "
            f"not {type(replace).__name__}"
        )
    swaps = [(_key(k), _value(k, v)) for k, v in replace.items()]
    used: set[int] = set()

    def swap(p: Any) -> Any:
        for k, (key, value) in enumerate(swaps):
            if _matches(key, p):
                used.add(k)
                return value
        if isinstance(p, Sequential):
            kids = tuple(swap(c) for c in p.passes)
            if not all(a is b for a, b in zip(kids, p.passes, strict=True)):
                return dataclasses.replace(p, passes=kids)
        return p

    out = [swap(p) for p in pipeline]
    unused = [key for k, (key, _) in enumerate(swaps) if k not in used]
    if unused:
        names = ", ".join(_key_text(k) for k in unused)
        known = ", ".join(dict.fromkeys(n for p in pipeline for n in _names(p)))
        raise RerunError(
            f"rerun: replace names no pass of the pipeline: {names} (its passes: {known})"
        )
    return out


def _key(key: Any) -> Any:
    if isinstance(key, str) or (isinstance(key, type) and issubclass(key, Pass)):
        return key
    raise RerunError(f"rerun: a replace key is a pass name, a spec or a Pass class, not {key!r}")


def _key_text(key: Any) -> str:
    return repr(key) if isinstance(key, str) else f"{key.__module__}.{key.__qualname__}"


def _value(key: Any, value: Any) -> Pass:
    if isinstance(value, Pass):
        return value
    if isinstance(value, type) and issubclass(value, Pass):
        try:
            return value()
        except TypeError as e:
            raise RerunError(
                f"rerun: {value.__qualname__}() cannot be made without options ({e}): give "
                "an instance"
            ) from None
    raise RerunError(
        f"rerun: replace[{_key_text(key)}] is a Pass (instance or class), not {value!r}"
    )


def _matches(key: Any, p: Any) -> bool:
    if isinstance(p, Unresolved):
        if isinstance(key, str):
            return key in (p.name, p.spec)
        saved = p.saved
        return saved is not None and (saved["module"], saved["class"]) == (
            key.__module__,
            key.__qualname__,
        )
    if isinstance(key, str):
        if isinstance(p, Sequential):
            return bool(p.label) and key in (p.label, p.spec())
        return key in (p.name, p.spec())
    return type(p) is key or same_definition(type(p), key)


def _names(p: Any) -> list[str]:
    """The names a replace key may give, of `p` and the passes inside it."""
    if isinstance(p, Sequential):
        return ([p.label] if p.label else []) + [n for c in p.passes for n in _names(c)]
    return [p.name]


__all__ = ["rerun"]
