"""passlens's explorer: traces of conversions, diffs, checks, comparison, save/load, export.

    import explorer
    trace = explorer.explore(model, (x,))      # every step of the conversion
    trace["fold-constant"].diff()              # what a pass changed
    report = trace.check((x,))                 # numerics, shapes and params at every step
"""

from explorer.diff import Diff, diff
from explorer.trace import Step, Trace, explore, trace_from_module


def compare(trace_a, trace_b):
    """Two conversions of one model side by side (see explorer.compare)."""
    from explorer.compare import compare as _compare

    return _compare(trace_a, trace_b)


def load(path):
    """Load a trace saved with ``Trace.save``."""
    from explorer.store import load as _load

    return _load(path)


__all__ = ["Diff", "Step", "Trace", "explore", "trace_from_module", "diff", "compare", "load"]
