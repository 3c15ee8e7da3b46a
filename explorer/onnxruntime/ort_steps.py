"""ONNX Runtime's graph transformers, one step per application that changed the model.

ORT optimizes inside ``InferenceSession`` creation, in C++, with no hook Python can attach to.
Two things it does give are enough:

* its verbose log, captured from the process's stderr while one session is made, lists every
  transformer application in order with ``modified: 0/1``;
* a session made with ``disabled_optimizers`` and ``optimized_model_filepath`` writes the model
  as the remaining transformers leave it.

Step k is then the model of a session that disables every transformer first applied after
application k. Disabling only the later transformers that changed the model is not enough: an
idle fusion can fire once an earlier one is off. A transformer applied again later (a level's
loop runs until nothing changes) is not disabled for the steps after its first application, so
a step may hold more than its own transformer's first change; a step equal to the one before it
is dropped. The last step is compared with the model ORT makes at the level in one go: the
trace says whether they are equal.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from compiler import PasslensError

_APPLIED = re.compile(r"GraphTransformer (\S{1,200}) modified: ([01])")
MAX_LOG_BYTES = 64 << 20


class ORTStageError(PasslensError, RuntimeError):
    """ONNX Runtime could not make a session of the model (the message is ORT's)."""


def level_value(level: str) -> Any:
    import onnxruntime as ort

    return {
        "off": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[level]


def session(
    model: bytes,
    level: str = "off",
    disabled: tuple[str, ...] | list[str] = (),
    out: str | None = None,
    verbose: bool = False,
    fast: bool = False,
) -> Any:
    """An ``InferenceSession`` of ``model`` (serialized) on the CPU at ``level`` (``off``,
    ``basic``, ``extended``, ``all``), with ``disabled`` transformers off, written to ``out``
    when given; ORT's own warnings are kept quiet unless ``verbose``. ``fast``: a session made
    only for the model it writes: one thread, no memory arena or pattern, no weight
    prepacking (what comes after the graph transformers; the model written is the same)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = level_value(level)
    so.log_severity_level = 0 if verbose else 3
    if verbose:
        so.log_verbosity_level = 1
    if fast:
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.enable_cpu_mem_arena = False
        so.enable_mem_pattern = False
        so.add_session_config_entry("session.disable_prepacking", "1")
    if out is not None:
        so.optimized_model_filepath = out
    try:
        return ort.InferenceSession(
            model, so, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled)
        )
    except Exception as e:  # ORT's refusal, as one passlens error
        raise ORTStageError(f"onnxruntime cannot make a session of the model: {e}"[:2000]) from None


@contextlib.contextmanager
def captured_stderr():
    """The process's file descriptor 2 sent to a temporary file (ORT logs from C++, around
    Python's ``sys.stderr``); yields a list that holds the text once the block ends."""
    out: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read(MAX_LOG_BYTES).decode("utf-8", "replace"))


def applications(model: bytes, level: str) -> list[tuple[str, bool]]:
    """Every transformer application ORT makes at ``level`` on ``model``, in order, with
    whether it changed the model (read from its verbose log)."""
    return applications_and_model(model, level)[0]


def applications_and_model(
    model: bytes, level: str, folder: str | None = None
) -> tuple[list[tuple[str, bool]], bytes]:
    """:func:`applications` and the model ORT makes at ``level`` in one go (serialized),
    from one session (a default one: what a user's session makes)."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="passlens-ort-"))
        path = os.path.join(folder, "one-go.onnx")
        with captured_stderr() as log:
            session(model, level, verbose=True, out=path)
        with open(path, "rb") as f:
            data = f.read()
        os.unlink(path)
    return [(name, flag == "1") for name, flag in _APPLIED.findall(log[0])], data


@dataclass
class ORTStep:
    """One rebuilt step: the transformer, its application's index in the log, the model."""

    name: str
    position: int
    model: bytes
    seconds: float = 0.0


@dataclass
class ORTRun:
    """What the ORT stage found: the rebuilt steps, the log's applications, the model ORT
    makes in one go at the level, and whether the last step equals it."""

    level: str
    steps: list[ORTStep] = field(default_factory=list)
    applied: list[tuple[str, bool]] = field(default_factory=list)
    one_go: bytes = b""
    base: bytes = b""  # the model as ORT saves it with every transformer off
    equal: bool = True
    seconds: float = 0.0


def disabled_after(applied: list[tuple[str, bool]], position: int) -> list[str]:
    """The transformers first applied after ``position``: what step ``position`` disables."""
    first: dict[str, int] = {}
    for i, (name, _) in enumerate(applied):
        first.setdefault(name, i)
    return sorted(n for n, i in first.items() if i > position)


def optimized(
    model: bytes, level: str, disabled: list[str] = (), folder: str | None = None
) -> bytes:
    """The model as ORT leaves it at ``level`` with ``disabled`` off (serialized; written in
    ``folder``, a temporary one when None)."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="passlens-ort-"))
        path = os.path.join(folder, "optimized.onnx")
        session(model, level, disabled, out=path, fast=True)
        with open(path, "rb") as f:
            data = f.read()
        os.unlink(path)
    return data


def run_ort_stage(model: bytes, level: str, job: Any = None) -> ORTRun:
    """Rebuild ORT's steps at ``level`` on ``model`` (see the module docstring).

    Sessions: one with every transformer off (the model before the first step), one verbose
    session at the level (the applications, and the model in one go), and one per
    application that changed the model, except where a session would be made again as
    before (the same transformers disabled as for the application before it: the same
    model) or would be the one-go session itself (none disabled: the one-go model)."""
    start = time.perf_counter()
    run = ORTRun(level)
    with tempfile.TemporaryDirectory(prefix="passlens-ort-") as folder:
        run.base = base = optimized(model, "off", folder=folder)
        run.applied, run.one_go = applications_and_model(model, level, folder)
        changed = [i for i, (_, modified) in enumerate(run.applied) if modified]
        if job is not None:
            job.total = len(changed)
        previous, last_disabled = base, None
        for i in changed:
            name = run.applied[i][0]
            t0 = time.perf_counter()
            disabled = disabled_after(run.applied, i)
            if disabled == last_disabled:
                data = previous  # the session of the application before: the same model
            elif not disabled:
                data = run.one_go  # nothing disabled: the one-go session's model
            else:
                data = optimized(model, level, disabled, folder)
            last_disabled = disabled
            if job is not None:
                job.advance(name)
            if data == previous:
                continue
            run.steps.append(ORTStep(name, i, data, time.perf_counter() - t0))
            previous = data
    run.equal = previous == run.one_go
    run.seconds = time.perf_counter() - start
    return run


__all__ = [
    "ORTRun",
    "ORTStageError",
    "ORTStep",
    "applications",
    "applications_and_model",
    "captured_stderr",
    "disabled_after",
    "level_value",
    "optimized",
    "run_ort_stage",
    "session",
]
