"""IREE's iree-compile as passlens traces (`explore(..., compiler="iree")`).

    import explorer
    trace = explorer.explore(model, (x,), compiler="iree")       # a torch nn.Module
    trace = explorer.explore("model.mlir", compiler="iree", pipeline="flow")
    trace["global-optimization"].children                         # the phase's passes
    trace["iree-global-opt-demote-contraction-inputs"].diff()

The source is exported with iree-turbine (`aot.export`, its parameters externalized with
`externalize_module_parameters` into an `.irpa` file: no dump holds the weights), or
read from an MLIR file or text; then iree-compile (llvm-cpu, generic CPU) runs as a child
process printing the whole module after every pass (`explorer.iree.record`). Steps: the
import (the torch-dialect module), then one step per IREE phase reached (`input`, `abi`,
`preprocessing`, `global-optimization`, `dispatch-creation`, `flow`, `stream`,
`executable-sources`, `executable-configurations`, `executable-targets`, `hal`,
`vm`), each holding the passes that ran in it, in order, as its children. A pass whose dump
equals the module it was given shares that module (`unchanged`, hidden as for the other
adapters); the const-eval JIT's own modules are dropped. A step's texts are its MLIR; its
graph model (operations, SSA edges with types, regions as groups, `loc` provenance) is
parsed with `iree.compiler.ir` when a view asks (`explorer.iree.convert`).

`pipeline`: the phase to compile to (`--compile-to`), default `"end"` (a .vmfb);
`flags`: more iree-compile flags, each `--name=value`. `trace.check()` compiles steps
from their dumps with `--compile-from` and runs them with iree.runtime, bisecting for the
first that diverges from torch eager (`explorer.iree.check`).
iree itself is imported only when an IREE trace is made or a view parses its MLIR.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from compiler.passes import Snapshot
from explorer.iree.convert import IREEError, IREEState
from explorer.iree.module import IREEModule


@dataclass
class IREERun:
    """What an IREE trace keeps beyond its steps: the iree-compile command line, its exit
    code and diagnostics, the compiled output (the .vmfb for pipeline "end"), the parameter
    file's bytes (a torch model's weights), how many const-eval JIT dumps were dropped, the
    stream's size and the compile's wall time."""

    argv: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    returncode: int = 0
    diagnostics: str = ""
    output: bytes | None = None
    irpa: bytes | None = None
    params: list[str] = field(default_factory=list)
    dropped: int = 0
    stream_bytes: int = 0
    seconds: float = 0.0


def _snapshots(imported: IREEModule, phases: list, failure: str) -> list[Snapshot]:
    """One snapshot per phase (depth 0) with its passes as children (depth 1), in order."""
    snaps: list[Snapshot] = []
    current = imported
    last = time.perf_counter()
    for k, (phase, dumps) in enumerate(phases):
        head = Snapshot(
            index=len(snaps),
            pass_name=phase,
            spec=f"phase {phase}",
            options={},
            depth=0,
            parent=None,
            before=current,
        )
        snaps.append(head)
        phase_seconds = 0.0
        for d in dumps:
            seconds = max(0.0, d.arrived - last) if k or d is not dumps[0] else 0.0
            last = d.arrived
            phase_seconds += seconds
            snap = Snapshot(
                index=len(snaps),
                pass_name=d.name[:200],
                spec=d.arg[:500],
                options={"pass": d.cls[:200], "on": d.scope[:200]},
                depth=1,
                parent=head.index,
                before=current,
                seconds=seconds,
            )
            if d.failed:
                snap.error = IREEError(f"pass {d.name} failed: {failure or 'see diagnostics'}")
                snap.traceback = failure
            else:
                text = d.text.rstrip() + "\n"
                snap.module = current if text == current.mlir else IREEModule(text, phase)
                current = snap.module
            head.children.append(snap.index)
            snaps.append(snap)
        head.module = current
        head.seconds = phase_seconds
        if any(snaps[c].error is not None for c in head.children):
            head.error = IREEError(f"phase {phase} failed")
            head.traceback = failure
            head.module = None
    return snaps


def explore_iree(
    source: Any,
    example_inputs: Any = None,
    pipeline: Any = "end",
    progress: Any = None,
    *,
    flags: Any = (),
    target: str = "llvm-cpu",
):
    """Import `source` (a torch `nn.Module` with `example_inputs`, an `.mlir` path or
    MLIR text), compile it with iree-compile printing every pass, return the Trace.

    `pipeline`: the phase to compile to (`explorer.iree.record.PIPELINES`; default
    `"end"`); `flags`: more iree-compile flags, each `--name=value`; `target`: the
    HAL backend (`"llvm-cpu"`, the only one recorded). `progress`: as for
    `explorer.explore` (one unit per pass dump)."""
    from explorer.iree.record import compile_flags, import_source, iree_compile_path, run_compile
    from explorer.progress import Job
    from explorer.recording import input_tuple, pass_steps
    from explorer.step import Step
    from explorer.trace import Trace

    pipeline = "end" if pipeline is None else pipeline
    argv = compile_flags(pipeline, target, flags)  # bad options fail before anything runs
    iree_compile_path()
    start = time.perf_counter()
    imported = import_source(source, example_inputs)
    seconds = time.perf_counter() - start
    root = IREEModule(imported.mlir, "import")
    job = Job(progress, "compiling", None, unit="pass", callback=progress)
    try:
        with tempfile.TemporaryDirectory(prefix="passlens-iree-") as workdir:
            compiled = run_compile(imported.mlir, argv, job, workdir)
    finally:
        job.close()
    failed = any(d.failed for _, dumps in compiled.phases for d in dumps)
    if compiled.returncode != 0 and not failed:
        raise IREEError(
            f"iree-compile failed (exit code {compiled.returncode}) outside a pass it "
            f"printed: {compiled.diagnostics.strip()[-1500:] or 'no diagnostics'}"
        )
    if not compiled.phases:
        raise IREEError(
            "iree-compile printed no pass dumps: "
            f"{compiled.diagnostics.strip()[-1500:] or 'no diagnostics'}"
        )
    state = IREEState()
    root.state = state
    snaps = _snapshots(root, compiled.phases, compiled.diagnostics.strip())
    for s in snaps:
        if isinstance(s.module, IREEModule):
            s.module.state = state
    steps = [
        Step(0, "import", f"{imported.frontend}: {imported.label}", module=root, seconds=seconds)
    ]
    steps += pass_steps(snaps, len(steps))
    trace = Trace(
        steps,
        source=source,
        example_inputs=input_tuple(example_inputs),
        pipeline=f"iree-compile --compile-to={pipeline}",
        frontend=imported.frontend,
        compiler="iree",
    )
    trace.iree = IREERun(
        compiled.argv,
        list(argv),
        compiled.returncode,
        compiled.diagnostics,
        compiled.output,
        imported.irpa,
        imported.params,
        compiled.dropped,
        compiled.stream_bytes,
        compiled.seconds,
    )
    return trace


__all__ = ["IREEError", "IREEModule", "IREERun", "explore_iree"]
