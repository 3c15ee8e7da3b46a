"""The pipeline of an ONNX Runtime trace, as text: stages separated by commas.

    onnxscript              onnxscript's optimizer (constant folding, its rewrite rules, the
                            clean-up passes), one step per pass or rule application that
                            changed the model
    transformers:<type>     onnxruntime's transformers optimizer for a model type as onnxruntime
                            names them (bert, gpt2, t5, vit, unet, ...), one step per fusion
    ort[:basic|extended|all]  ONNX Runtime's graph transformers at that level (default all),
                            one step per transformer application that changed the model

The default is `onnxscript,ort` (what `torch.onnx.export(dynamo=True)` then an
`InferenceSession` do). `ort` comes last, at most once; the others at most once each.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler import PasslensError

DEFAULT = "onnxscript,ort"
LEVELS = ("basic", "extended", "all")


class PipelineError(PasslensError, ValueError):
    """A pipeline text that names no stage this adapter has, or names one twice."""


@dataclass(frozen=True)
class Stage:
    kind: str  # "onnxscript", "transformers" or "ort"
    arg: str = ""  # the model type, or the level

    def __str__(self) -> str:
        return f"{self.kind}:{self.arg}" if self.arg else self.kind


def transformers_types() -> tuple[str, ...]:
    """The model types onnxruntime's transformers optimizer knows."""
    from onnxruntime.transformers.optimizer import MODEL_TYPES

    return tuple(MODEL_TYPES)


def parse(pipeline: object) -> list[Stage]:
    """The stages of `pipeline` (a text as above, a list of such texts, or None: none)."""
    if pipeline is None:
        return []
    if isinstance(pipeline, (list, tuple)):
        if not all(isinstance(p, str) for p in pipeline):
            raise PipelineError("an onnxruntime pipeline list holds stage names (strings)")
        pipeline = ",".join(pipeline)
    if not isinstance(pipeline, str):
        raise PipelineError(
            "pipeline for compiler='onnxruntime' is text such as 'onnxscript,ort:all', not "
            f"{type(pipeline).__name__}"
        )
    if len(pipeline) > 500:
        raise PipelineError("an onnxruntime pipeline is a few stage names, not 500 characters")
    stages: list[Stage] = []
    for part in (p.strip() for p in pipeline.split(",")):
        if not part:
            continue
        kind, _, arg = part.partition(":")
        kind, arg = kind.strip().lower(), arg.strip()
        if kind == "onnxscript" and not arg:
            stage = Stage("onnxscript")
        elif kind == "ort":
            level = arg.lower() or "all"
            if level not in LEVELS:
                raise PipelineError(f"ort's level is basic, extended or all, not {arg[:40]!r}")
            stage = Stage("ort", level)
        elif kind == "transformers":
            types = transformers_types()
            if arg not in types:
                raise PipelineError(
                    f"the transformers optimizer's model type is one of {', '.join(types)}; "
                    f"got {arg[:40]!r} (write transformers:bert)"
                )
            stage = Stage("transformers", arg)
        else:
            raise PipelineError(
                f"an onnxruntime pipeline stage is onnxscript, transformers:<type> or "
                f"ort[:basic|extended|all], not {part[:60]!r}"
            )
        if any(s.kind == stage.kind for s in stages):
            raise PipelineError(f"the pipeline names {stage.kind} twice")
        if stages and stages[-1].kind == "ort":
            raise PipelineError("ort runs last: a stage after it would not be what ORT runs")
        stages.append(stage)
    return stages


def text(stages: list[Stage]) -> str:
    return ",".join(str(s) for s in stages)


__all__ = ["DEFAULT", "LEVELS", "PipelineError", "Stage", "parse", "text", "transformers_types"]
