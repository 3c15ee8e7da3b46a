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

The onnxruntime part lives in :mod:`explorer.onnxruntime.ort_child`, which imports nothing of
passlens: a model from a file (untrusted) is rebuilt by it in a child process under a memory
limit, a torch model the user exported in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from compiler import PasslensError
from explorer.onnxruntime import ort_child
from explorer.onnxruntime.ort_child import applications, captured_stderr, disabled_after

CHILD_BUDGET = 4 << 30  # bytes the child may use past 4 copies of the model
CHILD_SECONDS = 1800  # a rebuild this long is stopped


class ORTStageError(PasslensError, RuntimeError):
    """ONNX Runtime could not make a session of the model (the message is ORT's), or its
    rebuild in a child process failed or ran out of its memory budget."""


def session(model: bytes, level: str = "off", disabled=(), out=None, verbose=False) -> Any:
    """:func:`explorer.onnxruntime.ort_child.session`, ORT's refusal as one passlens error."""
    try:
        return ort_child.session(model, level, disabled, out, verbose)
    except Exception as e:
        raise ORTStageError(f"onnxruntime cannot make a session of the model: {e}"[:2000]) from None


def optimized(model: bytes, level: str, disabled=()) -> bytes:
    """The model as ORT leaves it at ``level`` with ``disabled`` off (serialized)."""
    try:
        return ort_child.optimized(model, level, disabled)
    except Exception as e:
        raise ORTStageError(f"onnxruntime cannot make a session of the model: {e}"[:2000]) from None


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
    isolated: bool = False


def _in_child(model: bytes, level: str) -> dict:
    """:func:`ort_child.rebuild` run as a script in a child process under a memory limit."""
    limit = 4 * len(model) + CHILD_BUDGET
    with tempfile.TemporaryDirectory(prefix="passlens-ort-") as folder:
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(model)
        try:
            proc = subprocess.run(
                [sys.executable, "-I", ort_child.__file__, folder, level, str(limit)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=CHILD_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ORTStageError(
                f"onnxruntime's rebuild of the steps took over {CHILD_SECONDS} s and was stopped"
            ) from None
        path = os.path.join(folder, "result.json")
        if not os.path.exists(path):
            tail = proc.stderr.decode("utf-8", "replace")[-800:]
            raise ORTStageError(
                f"onnxruntime's rebuild of the steps stopped (exit {proc.returncode}), within a "
                f"budget of {limit:,} bytes; it said: {tail}"
            )
        with open(path, encoding="utf-8") as f:
            status = json.load(f)
        if status.get("status") == "memory":
            raise ORTStageError(
                f"onnxruntime needed more than its budget of {limit:,} bytes to optimize the "
                "model and was stopped (explorer.onnxruntime.ort_steps.CHILD_BUDGET)"
            )
        if status.get("status") != "ok":
            raise ORTStageError(
                f"onnxruntime cannot make a session of the model: {status.get('message', '')}"
            )

        def read(name: str) -> bytes:
            with open(os.path.join(folder, name), "rb") as f:
                return f.read()

        steps = [
            (str(n), int(p), read(f"step{k}.onnx"), float(s))
            for k, (n, p, s) in enumerate(status["steps"])
        ]
        return {
            "applied": [(str(n), bool(m)) for n, m in status["applied"]],
            "steps": steps,
            "base": read("base.onnx"),
            "one_go": read("one_go.onnx"),
        }


def run_ort_stage(model: bytes, level: str, job: Any = None, isolated: bool = False) -> ORTRun:
    """Rebuild ORT's steps at ``level`` on ``model`` (see the module docstring); ``isolated``:
    in a child process under a memory limit (an untrusted model)."""
    start = time.perf_counter()
    if isolated:
        result = _in_child(model, level)
    else:
        try:
            result = ort_child.rebuild(model, level, job.advance if job is not None else None)
        except Exception as e:
            raise ORTStageError(
                f"onnxruntime cannot make a session of the model: {e}"[:2000]
            ) from None
    run = ORTRun(level, isolated=isolated)
    run.applied = result["applied"]
    run.base, run.one_go = result["base"], result["one_go"]
    run.steps = [ORTStep(n, p, d, s) for n, p, d, s in result["steps"]]
    last = run.steps[-1].model if run.steps else run.base
    run.equal = last == run.one_go
    run.seconds = time.perf_counter() - start
    return run


__all__ = [
    "ORTRun",
    "ORTStageError",
    "ORTStep",
    "applications",
    "captured_stderr",
    "disabled_after",
    "optimized",
    "run_ort_stage",
    "session",
]
