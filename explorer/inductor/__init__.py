"""torch.compile (Inductor) as passlens traces (`explore(..., compiler="inductor")`).

    import explorer
    trace = explorer.explore(model, (x,), compiler="inductor")
    trace["post-grad passes"].diff()      # what Inductor's post-grad passes changed
    trace.check((x,))                     # every FX stage against eager, on the same inputs

The model is compiled with `torch.compile(backend=<recorder>)` on the CPU, after
`torch._dynamo.reset()`, with Inductor's caches off (an FX graph or AOTAutograd cache hit
would skip the passes), and called once under `torch.no_grad()` on the example inputs.
The internal split, one module per job (what the adapter interface asks of a compiler):

- record: `explorer.inductor.record` (the backend and the patched pass boundaries);
- graph model and texts: `explorer.inductor.module` (`FXModule`, converted on
  demand) and `explorer.inductor.convert`;
- run for the check: `explorer.inductor.run` (capturing each graph's inputs, running a
  stage's GraphModule with every node's value) and `explorer.inductor.check`;
- save and load: a step's module is stored as what it showed (graph model, FX code, texts),
  as for TVM (`explorer.store.graphs`); a loaded trace has no GraphModules and cannot be
  checked or reduced again;
- reduce: `explorer.inductor.reduce` (a custom pass's divergence cut down to the node it
  breaks, with a pytest file);
- rerun: `explorer.inductor.rerun` (the model compiled again with a custom pass swapped:
  a `CustomGraphPass` redefined in a notebook cell, fixed, and run again).

Steps, per FX graph Dynamo makes (a graph break starts a new one; a recompile too):
`dynamo <id> <frame> (<file>:<line>)` (the import step: Dynamo's Torch IR graph),
`pre-grad passes` (group), `aot-autograd` (the ATen forward graph), `joint-graph
passes` (group), `view_to_reshape` (Inductor's rewrite of every `aten.view` into
`aten.reshape`, run before the post-grad passes), `post-grad passes` (group; each pass and
each pattern replacement a nested step), `inductor codegen` (texts: scheduler IR before and
after fusion, output code). A change Inductor makes to a graph outside these (none on the
models tried) is an `outside Inductor's passes` step before the group it is handed to.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from compiler import PasslensError
from explorer.inductor.module import FXModule, FXRef, FXState
from explorer.inductor.record import GraphRecord


class InductorError(PasslensError, RuntimeError):
    """torch.compile could not be recorded (outside any pass: a failing pass is a step)."""


@dataclass
class InductorRun:
    """What a torch.compile trace keeps beyond its steps: the graphs Dynamo made (frame,
    compile id, why each one ends or was recompiled, the compiled callable), the compiled
    model, the options it was compiled with."""

    graphs: list[GraphRecord] = field(default_factory=list)
    compiled: Any = None
    dynamic: bool | None = None
    options: dict = field(default_factory=dict)
    copies: int = 0  # graph copies taken (one per pass that changed its graph)
    calls: list = field(default_factory=list)  # the argument tuples after the example inputs
    custom_passes: dict = field(default_factory=dict)  # step index -> the custom pass it ran

    def notes(self) -> list[str]:
        """One line per graph: its name and why it ends or was recompiled."""
        return [f"{g.label}: {g.reason}" for g in self.graphs if g.reason]


def _cache_config() -> tuple[dict, dict]:
    """Inductor / functorch config that turns off every cache that would skip the passes (the
    FX graph cache, AOTAutograd's cache); the C++ kernels' build cache stays on: a kernel
    built before is the same kernel, and it skips no pass."""
    inductor = {
        "fx_graph_cache": False,
        "fx_graph_remote_cache": False,
        "autotune_local_cache": False,
        "autotune_remote_cache": False,
        "bundled_autotune_remote_cache": False,
    }
    functorch = {"enable_autograd_cache": False, "enable_remote_autograd_cache": False}
    return inductor, functorch


def _tensor(x: Any) -> Any:
    """A numpy array as a torch tensor (what torch.compile is called with); others as they are."""
    import numpy as np
    import torch

    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(x))
    return x


def _patch_config(module: Any, values: dict):
    known = {k: v for k, v in values.items() if hasattr(module, k)}
    return module.patch(known)


def explore_inductor(
    source: Any,
    example_inputs: Any = None,
    pipeline: Any = None,
    progress: Any = None,
    *,
    dynamic: bool | None = None,
    options: dict | None = None,
    calls: Any = (),
):
    """Compile `source` (a `torch.nn.Module` or a function of tensors) with torch.compile
    (Inductor, CPU), record every FX stage and pass, return the Trace.

    `dynamic`: torch.compile's `dynamic`; `options`: `torch._inductor.config` values
    for this compile (`{"post_grad_custom_post_pass": MyPass()}`); `calls`: more argument
    tuples the compiled model is called with after `example_inputs` (one whose shapes or
    types break a guard makes Dynamo recompile: those graphs are recorded too, as
    `dynamo 0/1 ...` with the guard that failed). `pipeline` must be
    None: Inductor's passes are what torch.compile runs. `progress`: as for
    `explorer.explore`.
    """
    try:
        import torch
        import torch._dynamo
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config
    except ImportError as e:
        raise ImportError(f"compiler='inductor' needs torch ({e})") from None
    from explorer.inductor.compile_log import CompileLog, compile_info, provenance_config
    from explorer.inductor.record import ImportItem, Recorder
    from explorer.progress import Job
    from explorer.rerunning import keep_recording
    from explorer.trace import Step, Trace

    if pipeline is not None:
        raise ValueError(
            "compiler='inductor' runs torch.compile's own passes: give no pipeline; set "
            "torch._inductor.config values with options={...}"
        )
    import torch

    if isinstance(source, torch.export.ExportedProgram):  # (a .pt2): its graph as a module
        source = source.module()
    if not callable(source):
        raise TypeError(
            f"compiler='inductor' compiles a torch.nn.Module or a function, not "
            f"{type(source).__name__}"
        )
    if example_inputs is None:
        raise ValueError("compiler='inductor' needs example inputs: explore(model, (x,), ...)")
    args = example_inputs
    if isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        args = (args,)
    args = tuple(_tensor(a) for a in args)
    unknown = sorted(k for k in (options or {}) if not hasattr(inductor_config, k))
    if unknown:
        raise ValueError(f"torch._inductor.config has no option(s) {', '.join(unknown)}")

    extra = [
        tuple(_tensor(a) for a in (c if isinstance(c, (tuple, list)) else (c,))) for c in calls
    ]
    state = FXState()
    state.name_params(source)
    job = Job(progress, "exploring", None, unit="pass", callback=progress)
    recorder = Recorder(state, job, source)
    inductor_cfg, functorch_cfg = _cache_config()
    log = CompileLog()
    start = time.perf_counter()
    compiled = None
    error: BaseException | None = None
    torch._dynamo.reset()
    try:
        with (
            _patch_config(inductor_config, {**inductor_cfg, **(options or {})}),
            inductor_config.patch(provenance_config()),
            _patch_config(functorch_config, functorch_cfg),
            recorder.patched(),
            log.capture(),
        ):
            compiled = torch.compile(source, backend=recorder.backend, dynamic=dynamic)
            with torch.no_grad():
                compiled(*args)
                for more in extra:
                    compiled(*more)
    except Exception as e:
        error = e
    finally:
        job.close()
    seconds = time.perf_counter() - start
    failed = any(getattr(i, "error", None) is not None for i in recorder.items)
    if error is not None and not failed:
        if not recorder.graphs:
            raise InductorError(
                f"torch.compile failed before Dynamo made a graph: {type(error).__name__}: "
                f"{str(error)[:500]}"
            ) from error
        raise InductorError(
            f"torch.compile failed outside Inductor's passes: {type(error).__name__}: "
            f"{str(error)[:500]}"
        ) from error
    if not recorder.graphs:
        raise InductorError(
            "torch.compile made no FX graph for this model and inputs (Dynamo ran it all in "
            "Python): nothing to record"
        )

    steps: list[Step] = []
    for i, item in enumerate(recorder.items):
        if isinstance(item, ImportItem):
            steps.append(Step(i, "import", item.name, module=item.module, seconds=item.seconds))
        else:
            steps.append(Step(i, "pass", snapshot=item, parent=item.parent, children=item.children))
    run = InductorRun(
        recorder.graphs, compiled, dynamic, dict(options or {}), recorder.copies, extra
    )
    trace = Trace(
        steps,
        source={"model": source, "compiled": compiled, "run": run},
        example_inputs=args,
        pipeline="torch.compile(backend='inductor')",
        frontend="torch.compile",
        compiler="inductor",
    )
    run.custom_passes = dict(recorder.custom_passes)
    trace.inductor = run
    trace.compile_info = compile_info(log, recorder.graphs, steps)
    trace.record_seconds = seconds
    options = {"dynamic": dynamic, "options": dict(options or {}), "calls": extra}
    return keep_recording(trace, source, args, None, options, run.custom_passes)


__all__ = ["FXModule", "FXRef", "FXState", "InductorError", "InductorRun", "explore_inductor"]
