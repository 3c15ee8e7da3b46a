"""Reduction that keeps the same finding: ``report.reduce()`` (or ``reduce(report)``) shrinks
the imported module and the pipeline together until nothing more can be removed while the
finding still holds, and gives a :class:`Reduction`: a trace of its own, its IR text, its
pipeline spec and a standalone pytest file that fails while the bug is there.

    report = trace.check()
    small = report.reduce()            # the first failure; or report.reduce(2), budget=, progress=
    small                              # bindings and passes before -> after, the IR
    small.save("reduced/")             # reduced.passlens, reduced.ir, pipeline.txt, test_reduced.py

The package: ``pipeline.py`` (the passes as units, ddmin), ``module.py`` (cuts of the module),
``focus.py`` (the first cuts, around the nodes the finding names), ``oracle.py`` (does a
candidate still show the finding), ``testfile.py`` (the pytest file), ``result.py``
(:class:`Reduction`) and ``search.py`` (the phases, start to end).

``Report.reduce`` is this package's :func:`reduce`: the package registers it with the report
module, which cannot import it (this package imports the check).
"""

from explorer.check import report as _report
from explorer.reduce.result import Reduction
from explorer.reduce.search import NotReproducible, ReduceError, reduce

_report.register_reducer(reduce)

__all__ = ["NotReproducible", "ReduceError", "Reduction", "reduce"]
