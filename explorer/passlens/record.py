"""Recording passlens's own compiler: `explore(source, example_inputs, pipeline)` imports the
source with passlens's frontends, runs the pipeline with the pass manager's recorder and
returns a `explorer.trace.Trace` (`explorer.explore` with `compiler="passlens"`,
the default; `explorer.trace_from_module` for a module already imported).

Its steps are: the source graph as the framework sees it (when the source is a framework
model), the imported module, then every pass application (nested ones included, each with its
depth; a failed one marked as failed), made by `explorer.recording.pass_steps`.
"""

from __future__ import annotations

import time
from typing import Any

from compiler import passes
from compiler.ir import Module
from compiler.passes import Instrument, Sequential, build_pipeline
from explorer.passlens.source import import_source
from explorer.progress import Job
from explorer.recording import input_tuple, pass_steps
from explorer.step import Step
from explorer.trace import Trace
from explorer.trust import live_trust


def trace_from_module(
    module: Module,
    pipeline: Any = "default",
    source_step: Step | None = None,
    import_seconds: float = 0.0,
    import_name: str = "import",
    progress: Any = None,
    **meta: Any,
) -> Trace:
    """Run `pipeline` on an already imported module and build the trace (`progress`: as
    for `explore`)."""
    steps: list[Step] = []
    if source_step is not None:
        source_step.index = 0
        steps.append(source_step)
    steps.append(Step(len(steps), "import", import_name, module=module, seconds=import_seconds))
    job, instruments = passes_job(progress, pipeline)
    try:
        with passes.collect_rewrites():  # each snapshot gets its pass's rule applications
            result = passes.run(module, pipeline, record=True, instruments=instruments)
    except passes.PassesInterrupted as e:  # Ctrl-C: the trace of what ran, the rest skipped
        result = e.result
    finally:
        job.close()
    steps += pass_steps(result.snapshots, len(steps))
    return Trace(
        steps,
        pipeline=result.pipeline.spec(),
        skipped=result.skipped,
        interrupted=result.interrupted,
        passes=result.pipeline.passes,
        **meta,
    )


def explore(
    source: Any,
    example_inputs: Any = None,
    pipeline: Any = "default",
    progress: Any = None,
    strict: bool = False,
    **frontend_options,
) -> Trace:
    """Import `source` (torch.nn.Module, ExportedProgram, ONNX path/bytes/ModelProto, IR
    Module or IR text), run `pipeline` with recording, and return the Trace.

    An operator passlens has no converter for becomes an opaque op, run by torch or
    onnxruntime wherever a value is needed (the trace's summary lists them); `strict=True`
    refuses such a model at import instead (UnsupportedOperatorError).

    `progress`: a callback `(done, total, pass name)` before each pass, or what
    `explorer.progress` shows (None: a bar in a terminal or in Jupyter once the passes
    take a while, a line in CI logs for a long run; True: at once; False: nothing).

    `trust_source=False` says the source is a program read from a file (a `.pt2`), not
    the user's own code: its opaque ops are not trusted, and a check runs it as the reference
    only if every op it calls is a known pure computation or trusted (explorer.trust)."""
    start = time.perf_counter()
    trust_source = frontend_options.pop("trust_source", True)
    if strict:
        frontend_options["strict"] = True
    # the import (torch.export of a large model) can take seconds: a bar after the first
    # one, a line in a log once it took long (never for a quick one, even with progress=True:
    # a log keeps one line per job); a callable ``progress`` hears of the passes only
    shown = False if progress is False or callable(progress) else None
    with Job(shown, "importing the model", None, unit=""):
        imported = import_source(source, example_inputs, **frontend_options)
    if not trust_source and isinstance(imported.source, dict):
        # its reference run fills allocations and runs under a budget (check.references)
        imported.source["untrusted_program"] = True
    seconds = time.perf_counter() - start
    example_inputs = input_tuple(example_inputs)
    live = imported.frontend == "torch" and trust_source
    trace = trace_from_module(
        imported.module,
        pipeline,
        source_step=None
        if imported.source_graph is None
        else Step(0, "source", imported.source_label, source_graph=imported.source_graph),
        import_seconds=seconds,
        import_name=imported.name,
        progress=progress,
        source=imported.source,
        example_inputs=example_inputs,
        frontend=imported.frontend,
        # a torch model of the user's own code may run the ops its export made (explorer.trust)
        trusted_ops=live_trust(imported.module) if live else (),
    )
    # a program read from a file (trust_source=False: a .pt2) trusts none of its ops, and a
    # check refuses to run it as the reference when it calls an op not known to be pure
    trace.source_trusted = bool(trust_source)
    return trace


def passes_job(progress: Any, pipeline: Any) -> tuple[Job, list]:
    """The job of running `pipeline` (explore) and the instruments that report to it: a
    callable `progress` is called `(done, total, pass name)` before each pass runs."""

    def count(p) -> int:
        return 1 + sum(count(c) for c in p.passes) if isinstance(p, Sequential) else 1

    if progress is False:
        return Job(False, "exploring", None), []
    try:
        total: int | None = sum(count(p) for p in build_pipeline(pipeline).passes)
    except Exception:  # the run says what is wrong with the pipeline
        total = None
    job = Job(progress, "exploring", total, unit="pass", callback=progress)

    class _Report(Instrument):
        def before(self, p, module, depth: int) -> None:
            name = getattr(p, "label", "") or getattr(p, "name", "") or p.spec()
            if job.total is not None and job.done >= job.total:
                job.total = None  # a pass ran passes of its own: the count was a guess
            job.advance(name)

    return job, [_Report()]
