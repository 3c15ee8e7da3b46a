"""Apache TVM Relax pipelines as passlens traces (`explore(..., compiler="tvm")`).

    import explorer
    trace = explorer.explore(model, (x,), compiler="tvm", pipeline="zero")
    trace["FuseOps"].diff()        # what TVM's FuseOps changed, as for passlens's passes
    trace.save("zero.passlens")    # loads again without tvm installed
    small = trace.check((x,)).reduce()   # a diverged pass on a cut of @main (reduce.py)
    small.upstream_repro("repro.py")     # a script with tvm and numpy only, for a bug report
    fixed = get_adapter("tvm").rerun(trace, replace={"FastGelu": FastGeluFixed()})

The source is imported with TVM's own frontends (`from_exported_program`, `from_onnx`; a
`tvm.IRModule` as it is), the pipeline runs in a `PassContext` with a recording
`PassInstrument` (every pass application, nested ones included, with its time, whether it
changed the module and, for a failure, the exception and traceback), and each recorded module
is kept as a reference, converted to passlens's graph model only when a view asks. The trace
is passlens's `Trace` of `Step` s: summary, diff, parameters, views, save and load work
on it unchanged. tvm is imported only when a TVM trace is made or converted: nothing else in
passlens needs it.

A pass of the user's own (`@tvm.transform.module_pass` on a function or class, a
`@relax.transform.function_pass`, a `@relax.expr_functor.mutator` used inside one) is a
pass like TVM's: its step is named by TVM's `PassInfo.name` (the function's or class's
name), or, for a generic one (`transform`, a lambda), after the Relax mutators it made or
where it is defined (explorer/tvm/record.py). TVM registers nothing for such a pass, so a
notebook cell that defines one runs again freely; `rerun` (explorer/tvm/rerun.py) records the
trace's source again with a changed pipeline.
"""

from __future__ import annotations

import time
from typing import Any

from explorer.tvm.module import TVMModule, TVMRef, TVMState


def explore_tvm(
    source: Any,
    example_inputs: Any = None,
    pipeline: Any = "zero",
    progress: Any = None,
    *,
    opt_level: int | None = None,
    config: dict | None = None,
    instruments: Any = (),
    target: Any = None,
    **frontend_options: Any,
):
    """Import `source` with TVM, run `pipeline` with recording, return the Trace.

    `pipeline`: a Relax pipeline name (`"zero"`, for `relax.get_pipeline`), a
    `tvm.transform.Pass` (a `Sequential` included) or a list of passes (applied in turn:
    after a failure the rest are listed as skipped). `opt_level`, `config`, `instruments`
    (more PassInstruments) and `target` set up the PassContext; other keywords go to the
    frontend (`dynamic_shapes` for torch.export, `keep_params_as_input`, ONNX's
    `shape_dict` ...). `progress`: as for `explorer.explore`.
    """
    try:
        import tvm  # noqa: F401
    except ImportError as e:
        raise ImportError(
            f"compiler='tvm' needs Apache TVM: pip install 'passlens[tvm]' (apache-tvm 0.27) ({e})"
        ) from None
    from explorer.progress import Job
    from explorer.recording import input_tuple, pass_steps
    from explorer.rerunning import keep_recording
    from explorer.step import Step
    from explorer.trace import Trace
    from explorer.tvm.record import resolve_pipeline, run_pipeline
    from explorer.tvm.source import import_tvm_source

    state = TVMState()
    _, pipeline_text, _ = resolve_pipeline(pipeline)  # a bad pipeline fails before the import
    start = time.perf_counter()
    imported = import_tvm_source(source, example_inputs, state, **frontend_options)
    seconds = time.perf_counter() - start
    example_inputs = input_tuple(example_inputs)

    steps: list[Step] = []
    if imported.source_graph is not None:
        steps.append(Step(0, "source", imported.source_label, source_graph=imported.source_graph))
    steps.append(
        Step(
            len(steps),
            "import",
            imported.name,
            module=state.wrap(imported.module),
            seconds=seconds,
        )
    )
    job = Job(progress, "exploring", None, unit="pass", callback=progress)
    try:
        snapshots, skipped, interrupted = run_pipeline(
            imported.module,
            pipeline,
            state,
            job=job,
            opt_level=opt_level,
            config=config,
            instruments=instruments,
            target=target,
        )
    finally:
        job.close()
    offset = len(steps)
    steps += pass_steps(snapshots, offset)
    trace = Trace(
        steps,
        source=imported.source,
        example_inputs=example_inputs,
        pipeline=pipeline_text,
        frontend=imported.frontend,
        skipped=skipped,
        interrupted=interrupted,
        compiler="tvm",
    )
    options = {"opt_level": opt_level, "config": config, "instruments": instruments}
    options.update(target=target, **frontend_options)
    passes = {offset + k: p for k, p in state.passes.items()}
    return keep_recording(trace, source, example_inputs, pipeline, options, passes)


__all__ = ["TVMModule", "TVMRef", "TVMState", "explore_tvm"]
