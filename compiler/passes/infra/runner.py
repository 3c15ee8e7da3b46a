"""Running a pipeline: `run` applies its passes with the instruments, records every
application, and on a failure or an interrupt lists the passes left unrun."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compiler.ir.nodes import Module
from compiler.passes.infra.manager import (
    Instrument,
    PassContext,
    PassesInterrupted,
    PassFailed,
    PassResult,
    Recorder,
    Sequential,
    SkippedPass,
    Snapshot,
    VerifyAfterEach,
    shown_name,
)
from compiler.passes.infra.pipeline import build_pipeline


def _skipped(
    pipeline: Sequential, ran: int, snapshots: list[Snapshot], reason: str
) -> list[SkippedPass]:
    """The passes left unrun when the `ran`-th pass of `pipeline` failed, in pipeline order:
    the rest of each named pipeline (Sequential) the failure happened in, innermost first,
    then the rest of `pipeline`. (What a pass would have applied inside itself, other than
    a Sequential's passes, cannot be known.)"""
    levels = [(pipeline, ran, 0)]  # (a pipeline, how many of its passes started, their depth)
    seq = pipeline.passes[ran - 1]
    snap = next((s for s in reversed(snapshots) if s.depth == 0), None)  # seq's snapshot
    while isinstance(seq, Sequential) and snap is not None and snap.failed and snap.children:
        started = len(snap.children)  # a Sequential's children: its passes, in order
        levels.append((seq, started, snap.depth + 1))
        seq, snap = seq.passes[started - 1], snapshots[snap.children[-1]]
    return [
        SkippedPass(shown_name(p), p.spec(), depth, reason)
        for seq, n, depth in reversed(levels)
        for p in seq.passes[n:]
    ]


def run(
    module: Module,
    pipeline: Any = "default",
    record: bool = True,
    instruments: Sequence[Instrument] = (),
    verify_each: bool = False,
    raise_on_failure: bool = False,
) -> PassResult:
    """Run a pipeline (spec string, Pass, or list of passes / specs) on `module`.

    With `record` every pass application (nested ones included) becomes a Snapshot. A pass
    that fails ends the run with a recorded failure, the passes after it listed in
    `result.skipped` and `result.module` the last good module; with `raise_on_failure`
    (or without `record`) a PassFailed is raised instead, naming the pass and the passes
    that ran before it.

    A KeyboardInterrupt stops the run: it propagates, as `PassesInterrupted` when the
    run is recorded, which carries the partial result (`.result`, with `interrupted`
    set): the explorer can still show what ran, and the user's stop still stops.
    """
    seq = build_pipeline(pipeline)
    recorder = Recorder() if record else None
    insts = list(instruments)
    if verify_each:
        insts.append(VerifyAfterEach())
    if recorder is not None:
        insts.append(recorder)  # last, so an instrument that fails a pass is recorded as such
    ctx = PassContext(insts)
    current = module
    with ctx:
        for ran, p in enumerate(seq.passes, start=1):
            try:
                current = ctx.apply(p, current)
            except Exception as e:
                if raise_on_failure or recorder is None:
                    done = ", ".join(ctx.applied) or "none"
                    raise PassFailed(
                        f"an error occurred when running the {p.spec()!r} pass after the "
                        f"following passes: {done}\n{type(e).__name__}: {e}"
                    ) from e
                return _stopped(current, recorder.snapshots, seq, ran, interrupted=False)
            except KeyboardInterrupt as e:
                if recorder is None:
                    raise
                result = _stopped(current, recorder.snapshots, seq, ran, interrupted=True)
                raise PassesInterrupted(result) from e
    return PassResult(current, recorder.snapshots if recorder else [], seq)


def _stopped(
    module: Module, snapshots: list[Snapshot], seq: Sequential, ran: int, interrupted: bool
) -> PassResult:
    """The result of a recorded run that stopped in its `ran`-th pass: the innermost failed
    snapshot is the failure (the pass that raised, not the pipeline around it)."""
    failed = [s for s in snapshots if s.failed]
    failure = failed[-1] if failed else None
    where = failure.spec if failure else seq.passes[ran - 1].spec()
    reason = f"interrupted in pass {where}" if interrupted else f"pass {where} failed"
    skipped = _skipped(seq, ran, snapshots, f"skipped: {reason}")
    return PassResult(module, snapshots, seq, failure, skipped, interrupted)
