"""ONNX Runtime's graph transformers, one step per application that changed the model.

ORT optimizes inside `InferenceSession` creation, in C++, with no hook Python can attach to.
Two things it does give are enough:

* its verbose log, captured from the process's stderr while one session is made, lists every
  transformer application in order with `modified: 0/1`;
* a session made with `disabled_optimizers` and `optimized_model_filepath` writes the model
  as the remaining transformers leave it.

Step k is then the model of a session that disables every transformer first applied after
application k. Disabling only the later transformers that changed the model is not enough: an
idle fusion can fire once an earlier one is off. A transformer applied again later (a level's
loop runs until nothing changes) is not disabled for the steps after its first application, so
a step may hold more than its own transformer's first change; a step equal to the one before it
is dropped. The last step is compared with the model ORT makes at the level in one go: the
trace says whether they are equal.

Every session of the stage reads its input from one file whose weights are in a file beside it
(`SOURCE`), which ORT maps rather than copies; the model such a session writes refers to
that file for every weight it kept as it was, and holds the weights it made. A step's model
(`ORTStep.model`) is that: its initializers are new data, or references by offset to a
weight of the input (`ORTRun.source` names them), so a step costs what ORT changed, not a
copy of every weight. The sessions are made only for the model they write: one thread, no
memory arena or pattern, no weight prepacking (what ORT does after its graph transformers),
a few at a time (`session_threads`); each step is handed on in the log's order as soon
as its session is made (`run_ort_stage(on_step=...)`: the recorder records it meanwhile).

The one-go session (the verbose one: the log's applications and the model at the level in one
go) is made the same way, from the same file, not from the model's bytes with default options
as a user's session is: that session alone cost more than the whole rest of the stage (ORT
parses and copies every weight). The two give the same applications and the same model (the
same nodes, and weights equal bit for bit): tests/explorer/onnxruntime/test_ort_shortcuts.py
checks it on the BERT-like layer, the small CNN and an ONNX file, beside every step rebuilt
the plain way (default sessions from the model's bytes). `run_ort_stage(...,
from_bytes=True)` makes the one-go session the user's way (the check of that shortcut).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
    """An `InferenceSession` of `model` (serialized) on the CPU at `level` (`off`,
    `basic`, `extended`, `all`), with `disabled` transformers off, written to `out`
    when given; ORT's own warnings are kept quiet unless `verbose`. `fast`: a session made
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
    Python's `sys.stderr`); yields a list that holds the text once the block ends."""
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
    """Every transformer application ORT makes at `level` on `model`, in order, with
    whether it changed the model (read from its verbose log)."""
    return applications_and_model(model, level)[0]


def applications_and_model(
    model: bytes | str, level: str, folder: str | None = None, fast: bool = False
) -> tuple[list[tuple[str, bool]], bytes]:
    """`applications` and the model ORT makes at `level` in one go (serialized),
    from one session: a default one (what a user's session makes), or with `fast` one made
    only for the model it writes (`session`). `model`: serialized, or the path of a
    model whose weights are in a file beside it (the model written refers to that file for the
    weights it kept)."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="passlens-ort-"))
        path = os.path.join(folder, "one-go.onnx")
        with captured_stderr() as log:
            session(model, level, verbose=True, out=path, fast=fast)
        with open(path, "rb") as f:
            data = f.read()
        os.unlink(path)
    return read_log(log[0]), data


def read_log(text: str) -> list[tuple[str, bool]]:
    """The transformer applications ORT's verbose log `text` lists, in order, each with
    whether it changed the model."""
    return [(name, flag == "1") for name, flag in _APPLIED.findall(text)]


SOURCE = "passlens-input.bin"  # the stage input's weights, beside its model in the stage folder
EXTERNAL_MIN_BYTES = 1024  # a smaller weight stays in the model itself


@dataclass
class ORTStep:
    """One rebuilt step: the transformer, its application's index in the log, the model
    (serialized; a weight ORT kept from the input is a reference to `ORTRun.source`)."""

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
    # the model ORT makes at the level in one go (serialized; from the stage's file, its
    # weights kept from the input are references to SOURCE, as in a step)
    one_go: bytes = b""
    base: bytes = b""  # the model as ORT saves it with every transformer off
    # whether the last step is the one-go model (the recorder compares them, weights by
    # content: explorer/onnxruntime/record.py); None until it has
    equal: bool | None = None
    seconds: float = 0.0
    # (offset, length) in SOURCE -> the name of the input's weight stored there
    source: dict[tuple[int, int], str] = field(default_factory=dict)
    isolated: bool = False  # rebuilt in a child process under a memory limit


def external(t: Any) -> dict[str, str] | None:
    """The external-data entries of a TensorProto (None for a tensor held inline)."""
    import onnx

    if t.data_location != onnx.TensorProto.EXTERNAL:
        return None
    return {e.key: e.value for e in t.external_data}


def source_weight(run: ORTRun, t: Any) -> str | None:
    """The name of the stage input's weight an initializer of a step refers to, or None for
    one held inline."""
    info = external(t)
    if info is None:
        return None
    try:
        where = (int(info.get("offset", "0")), int(info.get("length", "-1")))
    except ValueError:
        where = None
    name = run.source.get(where) if info.get("location") == SOURCE else None
    if name is None:
        raise ORTStageError(
            f"ORT wrote weight {t.name[:80]!r} as a reference passlens did not make: "
            f"{str(info)[:200]}"
        )
    return name


def write_source(model: Any, folder: str) -> tuple[str, dict[tuple[int, int], str]]:
    """Write `model` (a ModelProto, left as it is) to `folder` with the data of its weights
    of at least `EXTERNAL_MIN_BYTES` in `SOURCE` (each at an offset aligned to a
    page, as ORT maps the file); the model's path and where each weight is. The model is
    copied without that data (field by field: 44.8 MB of weights are read once, to be
    written)."""
    import onnx

    m = _without_initializers(model)
    where: dict[tuple[int, int], str] = {}
    with open(os.path.join(folder, SOURCE), "wb") as f:
        offset = 0
        for source in model.graph.initializer:
            t = m.graph.initializer.add()
            external = source.data_location == onnx.TensorProto.EXTERNAL
            raw = b"" if external or not source.HasField("raw_data") else source.raw_data
            if len(raw) < EXTERNAL_MIN_BYTES:  # kept in the model as it is
                t.CopyFrom(source)
                continue
            _copy_fields(t, source, skip="raw_data")
            pad = -offset % 4096
            if pad:
                f.write(b"\0" * pad)
                offset += pad
            f.write(raw)
            t.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", SOURCE), ("offset", offset), ("length", len(raw))):
                t.external_data.add(key=key, value=str(value))
            where[(offset, len(raw))] = t.name
            offset += len(raw)
    path = os.path.join(folder, "input.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path, where


def _copy_fields(dst: Any, src: Any, skip: str) -> None:
    """Every field `src` (a protobuf message) sets, but `skip`, copied to `dst` (by its
    descriptor: `ListFields` would read `skip`'s value too, a copy of a weight's data)."""
    for fd in src.DESCRIPTOR.fields:
        name = fd.name
        if name == skip:
            continue
        repeated = getattr(fd, "is_repeated", None)
        if repeated is None:  # protobuf before 6
            repeated = fd.label == fd.LABEL_REPEATED
        if repeated:
            values = getattr(src, name)
            if len(values):
                getattr(dst, name).extend(values)
        elif getattr(fd, "has_presence", True) and not src.HasField(name):
            continue
        elif fd.message_type is not None:
            getattr(dst, name).CopyFrom(getattr(src, name))
        else:
            setattr(dst, name, getattr(src, name))


def _without_initializers(model: Any) -> Any:
    """A copy of the ModelProto `model` whose graph has no initializers (the rest copied)."""
    import onnx

    m = onnx.ModelProto()
    _copy_fields(m, model, skip="graph")
    if model.HasField("graph"):
        _copy_fields(m.graph, model.graph, skip="initializer")
    return m


def disabled_after(applied: list[tuple[str, bool]], position: int) -> list[str]:
    """The transformers first applied after `position`: what step `position` disables."""
    first: dict[str, int] = {}
    for i, (name, _) in enumerate(applied):
        first.setdefault(name, i)
    return sorted(n for n, i in first.items() if i > position)


def optimized(
    model: bytes | str, level: str, disabled: list[str] = (), folder: str | None = None
) -> bytes:
    """The model as ORT leaves it at `level` with `disabled` off (serialized; written in
    `folder`, a temporary one when None). `model`: serialized, or the path of a model
    whose weights are in a file beside it (the model written refers to that file for the
    weights it kept)."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="passlens-ort-"))
        path = os.path.join(folder, "optimized.onnx")
        session(model, level, disabled, out=path, fast=True)
        with open(path, "rb") as f:
            data = f.read()
        os.unlink(path)
    return data


CHILD_BUDGET = 4 << 30  # bytes an isolated rebuild may use past 4 copies of the model
CHILD_SECONDS = 1800  # an isolated rebuild this long is stopped

_CHILD = r"""
import json, os, resource, sys
folder, level, limit, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
from_bytes = sys.argv[5] == "1"
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.path.insert(0, root)
status = {"status": "ok"}
try:
    from explorer.onnxruntime.ort_steps import run_ort_stage
    with open(os.path.join(folder, "model.onnx"), "rb") as f:
        model = f.read()
    run = run_ort_stage(model, level, from_bytes=from_bytes)
    for k, s in enumerate(run.steps):
        with open(os.path.join(folder, "step%d.onnx" % k), "wb") as f:
            f.write(s.model)
    for key in ("base", "one_go"):
        with open(os.path.join(folder, key + ".onnx"), "wb") as f:
            f.write(getattr(run, key))
    status["applied"] = run.applied
    status["steps"] = [[s.name, s.position, s.seconds] for s in run.steps]
    status["source"] = [[o, n, name] for (o, n), name in run.source.items()]
except MemoryError:
    status = {"status": "memory"}
except Exception as e:
    text = str(e)
    low = text.lower()
    memory = any(w in low for w in ("bad_alloc", "out of memory", "failed to allocate"))
    status = {"status": "memory" if memory else "refused", "message": text[:4000]}
with open(os.path.join(folder, "result.json"), "w") as f:
    json.dump(status, f)
"""


def _isolated(model: bytes, level: str, from_bytes: bool = False) -> ORTRun:
    """`run_ort_stage` in a child process whose address space is limited (a model from a
    file is untrusted: its optimization may ask for any amount of memory, and a failing
    allocation inside ORT must not take the user's kernel down). The child hands back files
    and JSON, never objects."""
    import json
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    limit = 4 * len(model) + CHILD_BUDGET
    run = ORTRun(level, isolated=True)
    with tempfile.TemporaryDirectory(prefix="passlens-ort-") as folder:
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(model)
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-c", _CHILD, folder, level, str(limit), root]
                + ["1" if from_bytes else "0"],
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
                f"onnxruntime's rebuild of the steps stopped (exit {proc.returncode}) within a "
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
            raise ORTStageError(f"{str(status.get('message', ''))[:2000]}")

        def read(name: str) -> bytes:
            with open(os.path.join(folder, name), "rb") as f:
                return f.read()

        run.applied = [(str(n), bool(m)) for n, m in status["applied"]]
        run.steps = [
            ORTStep(str(n), int(p), read(f"step{k}.onnx"), float(s))
            for k, (n, p, s) in enumerate(status["steps"])
        ]
        run.source = {(int(o), int(n)): str(name) for o, n, name in status["source"]}
        run.base, run.one_go = read("base.onnx"), read("one_go.onnx")
    return run


MAX_SESSION_THREADS = 4  # the stage's sessions made at once, at most


def session_threads() -> int:
    """How many of the stage's sessions are made at once: one per processor this process may
    use, at most `MAX_SESSION_THREADS` (each session is one-threaded; ORT lets go of
    Python's lock while it optimizes)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_SESSION_THREADS, cpus))


def run_ort_stage(
    model: Any,
    level: str,
    job: Any = None,
    isolated: bool = False,
    from_bytes: bool = False,
    on_step: Callable[[ORTRun, ORTStep], None] | None = None,
) -> ORTRun:
    """Rebuild ORT's steps at `level` on `model` (serialized, or an `onnx.ModelProto`;
    see the module docstring).

    Sessions, all from the file written once (`SOURCE` beside it): one verbose session at
    the level (the applications, and the model in one go), then, `session_threads` at a
    time, one with every transformer off (the model before the first step) and one per
    application that changed the model, except where a session would be made again as before
    (the same transformers disabled as for the application before it: the same model); the
    steps are taken in the log's order. `from_bytes`: the verbose session from
    `model`'s bytes with default options instead, as a user's session (slower; the same
    result, which the tests check). `run.equal` is left for the recorder, which compares the
    weights. `isolated`: in a child process under a memory limit (a model from a file).
    `on_step(run, step)`: called in this thread for each step in order, as soon as it is
    rebuilt (while later sessions are made; a child's steps once it ends)."""
    import onnx

    start = time.perf_counter()
    if isolated:
        data = model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()
        run = _isolated(bytes(data), level, from_bytes)
        for step in run.steps if on_step is not None else ():
            on_step(run, step)
        run.seconds = time.perf_counter() - start
        return run
    run = ORTRun(level)
    with tempfile.TemporaryDirectory(prefix="passlens-ort-") as folder:
        if isinstance(model, (bytes, bytearray)):
            proto = onnx.ModelProto()
            proto.ParseFromString(bytes(model))
        else:
            proto = model
        path, run.source = write_source(proto, folder)
        if from_bytes:  # a user's session: default options, the model's bytes
            data = model if isinstance(model, (bytes, bytearray)) else proto.SerializeToString()
            run.applied, run.one_go = applications_and_model(bytes(data), level, folder)
            del data
        else:  # alone: the process's stderr is its log while it runs
            run.applied, run.one_go = applications_and_model(path, level, folder, fast=True)
        del proto
        changed = [i for i, (_, modified) in enumerate(run.applied) if modified]
        if job is not None:
            job.total = len(changed)
        # one session per set of transformers disabled: an application that disables the same
        # set as the one before it gives the same model
        sets: list[list[str]] = []
        of: dict[int, int] = {}
        for i in changed:
            disabled = disabled_after(run.applied, i)
            if not sets or disabled != sets[-1]:
                sets.append(disabled)
            of[i] = len(sets) - 1

        def make(k: int) -> tuple[bytes, float]:  # session k (-1: every transformer off)
            t0 = time.perf_counter()
            where = os.path.join(folder, f"session{k + 1}")
            os.mkdir(where)
            if k < 0:
                return optimized(path, "off", folder=where), time.perf_counter() - t0
            return optimized(path, level, sets[k], where), time.perf_counter() - t0

        pool = ThreadPoolExecutor(session_threads())
        try:
            made = [pool.submit(make, k) for k in range(-1, len(sets))]
            run.base = previous = made[0].result()[0]
            for i in changed:
                name = run.applied[i][0]
                data, seconds = made[of[i] + 1].result()
                if job is not None:
                    job.advance(name)
                if data == previous:
                    continue
                run.steps.append(ORTStep(name, i, data, seconds))
                previous = data
                if on_step is not None:
                    on_step(run, run.steps[-1])
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    run.seconds = time.perf_counter() - start
    return run


__all__ = [
    "ORTRun",
    "ORTStageError",
    "ORTStep",
    "SOURCE",
    "applications",
    "applications_and_model",
    "captured_stderr",
    "disabled_after",
    "external",
    "level_value",
    "optimized",
    "read_log",
    "run_ort_stage",
    "session",
    "session_threads",
    "source_weight",
    "write_source",
]
