"""ONNX Runtime and onnxscript as passlens traces (`explore(..., compiler="onnxruntime")`).

    import explorer
    trace = explorer.explore(model, (x,), compiler="onnxruntime")   # onnxscript,ort
    trace = explorer.explore("model.onnx", compiler="onnxruntime",
                             pipeline="onnxscript,transformers:bert,ort:extended")
    trace["SkipLayerNormFusion"].diff()      # what that ORT transformer changed
    trace.check()                            # each step in onnxruntime, optimizations off

The conversion most people deploy: `torch.onnx.export(dynamo=True)` (the first step, with
`optimize=False`), onnxscript's optimizer and rewriter, optionally onnxruntime's transformers
optimizer, then ONNX Runtime's graph transformers, every change a step of one trace (see
`explorer.onnxruntime.record` and `explorer.onnxruntime.ort_steps` for how each is
observed or rebuilt). `rewrite_rules=[rule, ...]` applies onnxscript `RewriteRule` s of the
user's own, each as its own step after the optimizer (named after the rule); the adapter's
`rerun` records the source again with a rule swapped (`replace={"add_to_sub": fixed}`:
explorer/onnxruntime/rerun.py), so a rule fixed in a notebook cell is run again in one call.
onnxruntime and onnxscript are imported
only when such a trace is made or checked. `report.reduce()` shrinks a `diverged` finding
to a few ONNX nodes and writes a script for an upstream bug report
(`explorer.onnxruntime.reduce`).
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import warnings
from typing import Any

from compiler import PasslensError
from explorer.onnxruntime.module import ONNXModule, ONNXState
from explorer.onnxruntime.pipeline import DEFAULT, PipelineError, Stage

MAX_FILE_BYTES = 2 << 30  # protobuf's own limit for one model


class ONNXSourceError(PasslensError, ValueError):
    """A source this adapter cannot take (the message says what it takes)."""


def _load_onnx(source: Any) -> tuple[Any, str]:
    """`(ModelProto, label)` of an ONNX file path, bytes or ModelProto. External data is
    refused: a file naming other files to read is not opened."""
    import onnx

    if isinstance(source, onnx.ModelProto):
        proto, label = source, "onnx model"
    elif isinstance(source, (bytes, bytearray)):
        proto, label = onnx.ModelProto(), "onnx bytes"
        try:
            proto.ParseFromString(bytes(source))
        except Exception as e:
            raise ONNXSourceError(f"these bytes are not an ONNX model: {e}") from None
    else:
        path = os.fspath(source)
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise ONNXSourceError(f"cannot read {path!r}: {e.strerror}") from None
        if size > MAX_FILE_BYTES:
            raise ONNXSourceError(f"{path!r} is {size:,} bytes: more than one ONNX model holds")
        proto, label = onnx.ModelProto(), os.path.basename(path)
        try:
            with open(path, "rb") as f:
                proto.ParseFromString(f.read())
        except Exception as e:
            raise ONNXSourceError(f"{path!r} is not an ONNX model: {e}") from None
    for t in proto.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            raise ONNXSourceError(
                f"the model keeps weight {t.name[:80]!r} in an external file: passlens reads "
                "one self-contained file (onnx.save(model, path, save_as_external_data=False))"
            )
    return proto, label


def _export(model: Any, example_inputs: tuple, dynamic_shapes: Any = None) -> tuple[Any, Any]:
    """`(ModelProto, ExportedProgram)` of torch's exporter (dynamo, optimize off)."""
    import torch

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(
                model,
                tuple(example_inputs),
                dynamo=True,
                optimize=False,
                dynamic_shapes=dynamic_shapes,
                verbose=False,
            )
    except Exception as e:
        raise ONNXSourceError(f"torch.onnx.export(dynamo=True) failed: {e}"[:3000]) from None
    return program.model_proto, program.exported_program


def explore_onnxruntime(
    source: Any,
    example_inputs: Any = None,
    pipeline: Any = DEFAULT,
    progress: Any = None,
    *,
    rewrite_rules: Any = None,
    dynamic_shapes: Any = None,
    num_heads: int = 0,
    hidden_size: int = 0,
):
    """Export or load `source`, run `pipeline` with recording, return the Trace.

    `source`: a `torch.nn.Module` with `example_inputs`, or an ONNX file (path, bytes
    or `onnx.ModelProto`). `pipeline`: see `explorer.onnxruntime.pipeline`
    (`"onnxscript,ort"` by default). `rewrite_rules`: onnxscript `RewriteRule` s applied
    one by one after the optimizer. `num_heads` / `hidden_size`: for the transformers
    optimizer (0: it reads them from the model). `progress`: as for `explorer.explore`.
    """
    try:
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError as e:
        raise ImportError(
            f"compiler='onnxruntime' needs onnxruntime and onnxscript: pip install onnxruntime "
            f"onnxscript ({e})"
        ) from None
    from explorer.onnxruntime.pipeline import parse, text
    from explorer.onnxruntime.record import Recorder, check_rules, rule_name, run_stage
    from explorer.progress import Job
    from explorer.recording import input_tuple, pass_steps
    from explorer.rerunning import keep_recording
    from explorer.step import Step
    from explorer.trace import Trace

    stages = parse(pipeline)
    rules = check_rules(rewrite_rules)
    if rules:  # the user's rules run right after the optimizer (first when there is none)
        at = 1 if stages and stages[0].kind == "onnxscript" else 0
        stages.insert(at, Stage("rules", ""))
    example_inputs = input_tuple(example_inputs)
    state = ONNXState()
    start = time.perf_counter()
    try:
        import torch

        is_torch = isinstance(source, torch.nn.Module)
    except ImportError:
        is_torch = False
    if is_torch:
        if example_inputs is None:
            raise ONNXSourceError(
                "exporting a torch model needs example inputs: explore(model, (x,), "
                "compiler='onnxruntime')"
            )
        proto, ep = _export(source, example_inputs, dynamic_shapes)
        src, frontend, name = {"model": source, "exported": ep}, "torch", "torch.onnx.export"
    elif isinstance(source, (str, bytes, bytearray, os.PathLike)) or hasattr(
        source, "SerializeToString"
    ):
        proto, label = _load_onnx(source)
        src, frontend, name = {"model": proto}, "onnx", label
    else:
        raise ONNXSourceError(
            "compiler='onnxruntime' takes a torch.nn.Module with example inputs or an ONNX "
            f"file (a path, bytes or onnx.ModelProto), not {type(source).__name__}"
        )
    imported = state.wrap(proto)
    seconds = time.perf_counter() - start
    steps: list[Step] = [Step(0, "import", name, module=imported, seconds=seconds)]
    rec = Recorder(state, Job(progress, "exploring", None, unit="step", callback=progress))
    ort_run = None
    current = proto
    skipped: list = []
    try:
        for k, stage in enumerate(stages):
            rec.open_stage(
                str(stage) if stage.kind != "rules" else "rewrite_rules", rec.current or imported
            )
            try:
                current, run = run_stage(
                    rec,
                    stage,
                    current,
                    rules,
                    {
                        "num_heads": num_heads,
                        "hidden_size": hidden_size,
                        "isolated": frontend == "onnx",
                    },
                )
            except Exception as e:  # a stage that fails is recorded, the rest skipped
                rec.close_stage(e)
                from compiler.passes import SkippedPass

                skipped = [
                    SkippedPass(str(s), str(s), 0, f"skipped: stage {stage} failed")
                    for s in stages[k + 1 :]
                ]
                break
            ort_run = run or ort_run
            rec.close_stage()
    finally:
        rec.job.close()
    offset = len(steps)
    steps += pass_steps(rec.snapshots, offset)
    trace = Trace(
        steps,
        source=src,
        example_inputs=example_inputs,
        pipeline=text([s for s in stages if s.kind != "rules"]),
        frontend=frontend,
        skipped=skipped,
        compiler="onnxruntime",
    )
    trace.record_notes = list(rec.notes)
    trace.onnxruntime = ort_run
    # what made each onnxscript and fusion step, by step index (the reducer runs it again)
    trace.onnxruntime_replay = {offset + k: replay for k, replay in rec.replays.items()}
    options = {"rewrite_rules": rules or None, "dynamic_shapes": dynamic_shapes}
    options.update(num_heads=num_heads, hidden_size=hidden_size)
    rule_steps = {offset + k: rule for k, rule in rec.rules.items()}
    names = {id(rule): rule_name(rule, f"rule{k}") for k, rule in enumerate(rules)}
    return keep_recording(trace, source, example_inputs, pipeline, options, rule_steps, names)


__all__ = ["ONNXModule", "ONNXSourceError", "ONNXState", "PipelineError", "explore_onnxruntime"]
