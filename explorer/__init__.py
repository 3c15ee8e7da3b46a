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
from explorer.trace import Step, Trace, explore, trace_from_module

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
