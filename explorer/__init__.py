"""passlens's explorer: traces of conversions, diffs, checks, comparison, save/load, export.

import explorer
trace = explorer.explore(model, (x,))      # every step of the conversion
trace["fold-constant"].diff()              # what a pass changed
report = trace.check((x,))                 # numerics, shapes and params at every step
small = report.reduce()                    # the first failure on a small module and pipeline
fixed = trace.rerun(replace={"fast-gelu": FastGeluFixed()})   # again from the changed pass

Every error passlens raises on purpose is an `explorer.PasslensError`.
"""

from compiler import LimitError, PasslensError
from explorer.adapters import Adapter, adapter_names, get_adapter, register_adapter
from explorer.compare import Comparison, compare
from explorer.diff import Diff, diff
from explorer.passlens.record import trace_from_module
from explorer.reduce import NotReproducible, ReduceError, Reduction
from explorer.store import TraceFileError, load
from explorer.trace import RerunError, Step, Trace


def explore(
    source,
    example_inputs=None,
    pipeline=None,
    progress=None,
    compiler: str = "passlens",
    **options,
) -> Trace:
    """Import `source`, run `pipeline` with recording, and return the Trace of every step.

    `compiler`: whose passes, an adapter's name (`explorer.adapters.adapter_names`):
    `"passlens"` (the default), passlens's own compiler, as
    `explorer.passlens.record.explore` (`pipeline` default `"default"`); Apache TVM's
    Relax passes (`explorer.tvm.explore_tvm`: `pipeline` a Relax pipeline name, default
    `"zero"`, a TVM pass or a list of passes; needs `passlens[tvm]`); torch.compile's Dynamo
    graphs and Inductor's FX passes (`explorer.inductor.explore_inductor`, no `pipeline`).

    An operator passlens has no converter for is kept as an opaque op that torch or
    onnxruntime runs (the summary lists them); `strict=True` refuses such a model at import.
    Other compilers' frontends handle such operators themselves (`strict` has no effect
    there)."""
    return get_adapter(compiler).explore(source, example_inputs, pipeline, progress, **options)


__all__ = [
    "Adapter",
    "adapter_names",
    "get_adapter",
    "register_adapter",
    "Comparison",
    "LimitError",
    "NotReproducible",
    "PasslensError",
    "TraceFileError",
    "ReduceError",
    "RerunError",
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
