"""passlens's explorer: traces of conversions, diffs, checks, comparison, save/load, export.

import explorer
trace = explorer.explore(model, (x,))      # every step of the conversion
trace["fold-constant"].diff()              # what a pass changed
report = trace.check((x,))                 # numerics, shapes and params at every step
small = report.reduce()                    # the first failure on a small module and pipeline

Every error passlens raises on purpose is an ``explorer.PasslensError``.
"""

from compiler import LimitError, PasslensError
from explorer.compare import Comparison, compare
from explorer.diff import Diff, diff
from explorer.reduce import NotReproducible, ReduceError, Reduction
from explorer.store import TraceFileError, load
from explorer.trace import Step, Trace, trace_from_module
from explorer.trace import explore as _explore_passlens


def explore(
    source,
    example_inputs=None,
    pipeline=None,
    progress=None,
    compiler: str = "passlens",
    **options,
) -> Trace:
    """Import ``source``, run ``pipeline`` with recording, and return the Trace of every step.

    ``compiler="passlens"`` (the default): passlens's own compiler, as
    :func:`explorer.trace.explore` (``pipeline`` default ``"default"``). ``compiler="tvm"``:
    Apache TVM's Relax passes, as :func:`explorer.tvm.explore_tvm` (the source imported with
    TVM's frontends, or a ``tvm.IRModule``; ``pipeline`` a Relax pipeline name, default
    ``"zero"``, a TVM pass or a list of passes; needs ``passlens[tvm]``).
    ``compiler="inductor"``: torch.compile's Dynamo graphs and Inductor's FX passes, as
    :func:`explorer.inductor.explore_inductor` (no ``pipeline``).

    An operator passlens has no converter for is kept as an opaque op that torch or
    onnxruntime runs (the summary lists them); ``strict=True`` refuses such a model at import.
    TVM's frontends and torch.compile handle such operators themselves (``strict`` has no
    effect there)."""
    if compiler == "tvm":
        from explorer.tvm import explore_tvm

        options.pop("strict", None)
        pipeline = "zero" if pipeline is None else pipeline
        return explore_tvm(source, example_inputs, pipeline, progress, **options)
    if compiler == "inductor":
        from explorer.inductor import explore_inductor

        options.pop("strict", None)
        return explore_inductor(source, example_inputs, pipeline, progress, **options)
    if compiler != "passlens":
        raise ValueError(f"compiler is 'passlens', 'tvm' or 'inductor', not {compiler!r}")
    pipeline = "default" if pipeline is None else pipeline
    return _explore_passlens(source, example_inputs, pipeline, progress, **options)


__all__ = [
    "Comparison",
    "LimitError",
    "NotReproducible",
    "PasslensError",
    "TraceFileError",
    "ReduceError",
    "Reduction",
    "Diff",
    "Step",
    "Trace",
    "explore",
    "trace_from_module",
    "diff",
    "compare",
    "load",
]
