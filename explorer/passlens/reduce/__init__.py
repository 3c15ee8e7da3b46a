"""passlens's reducer (the passlens adapter's `reduce`; `explorer.reduce.reduce` and
`Report.reduce` run it for a passlens trace): it shrinks the imported module and the pipeline
together until nothing more can be removed while the finding still holds, and gives an
`explorer.reduce.Reduction`.

The package: `pipeline.py` (the passes as units, ddmin), `module.py` (cuts of the module),
`focus.py` (the first cuts, around the nodes the finding names), `oracle.py` (does a
candidate still show the finding), `testfile.py` (the pytest file) and `search.py` (the
phases, start to end). What every compiler's reducer shares (`Reduction`, `ReduceError`,
`NotReproducible`) is in `explorer.reduce`.
"""

from explorer.passlens.reduce.search import reduce_passlens

__all__ = ["reduce_passlens"]
