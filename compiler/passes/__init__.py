"""Passes, the pass manager and pipelines.

``compiler.passes.run(module, pipeline="default", record=True)`` runs a pipeline and returns
a PassResult with ``.module`` and ``.snapshots`` (one per pass application, nested included).
"""

from compiler.passes import library  # noqa: F401  (registers the passes and pipelines)
from compiler.passes.manager import (
    Instrument,
    Pass,
    PassContext,
    PassError,
    PassesInterrupted,
    PassFailed,
    PassResult,
    Recorder,
    Sequential,
    SkippedPass,
    Snapshot,
    VerifyAfterEach,
    all_passes,
    get_pass_class,
    register_pass,
)
from compiler.passes.pipeline import (
    PipelineError,
    build_pipeline,
    named_pipelines,
    parse_pass,
    register_alias,
    register_pipeline,
)
from compiler.passes.runner import run

__all__ = [
    "Instrument",
    "Pass",
    "PassContext",
    "PassError",
    "PassFailed",
    "PassResult",
    "PassesInterrupted",
    "PipelineError",
    "Recorder",
    "Sequential",
    "SkippedPass",
    "Snapshot",
    "VerifyAfterEach",
    "all_passes",
    "build_pipeline",
    "get_pass_class",
    "named_pipelines",
    "parse_pass",
    "register_alias",
    "register_pass",
    "register_pipeline",
    "run",
]
