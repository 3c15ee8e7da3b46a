"""Reduction that keeps the same finding: `report.reduce()` (or `reduce(report)`) shrinks
the imported module and the pipeline together until nothing more can be removed while the
finding still holds, and gives a `Reduction`: a trace of its own, its IR text, its
pipeline spec and a standalone pytest file that fails while the bug is there.

    report = trace.check()
    small = report.reduce()            # the first failure; or report.reduce(2), budget=, progress=
    small                              # bindings and passes before -> after, the IR
    small.save("reduced/")             # reduced.passlens, reduced.ir, pipeline.txt, test_reduced.py

Each compiler reduces its own findings: `reduce` runs the reducer of the trace's adapter
(`explorer.adapters.Adapter.reduce`, for an adapter with the `REDUCE` capability).
passlens's is `explorer.passlens.reduce` (cuts of its IR, ddmin over its pipelines, the check
as the oracle), Inductor's `explorer.inductor.reduce`, TVM's `explorer.tvm.reduce`, ONNX
Runtime's `explorer.onnxruntime.reduce` (cuts of an ONNX model); the last three give
`upstream_repro(path)`, a standalone script with only torch, only tvm, or only onnx and
onnxruntime. This package holds what they share: `Reduction` (`result.py`: passlens's
result, the weights file beside its test, `write_new`: how a `save` writes a file), the
errors (`errors.py`: `ReduceError`, `NotReproducible`) and the parts of the
upstream scripts (`repro.py`).

`Report.reduce` is this package's `reduce`: the package registers it with the report
module, which cannot import it (this package imports the check).
"""

from __future__ import annotations

from explorer.adapters import REDUCE, get_adapter
from explorer.check import report as _report
from explorer.reduce.errors import NotReproducible, ReduceError
from explorer.reduce.result import Reduction
from explorer.trust import trusting


def reduce(
    report,
    finding=None,
    *,
    budget: float = 60.0,
    progress=None,
    trust_ops=None,
):
    """Shrink the imported module and the pipeline of `report`'s trace together until nothing
    more can be removed while `finding` still holds (same kind, at the same pass; see
    `explorer.passlens.reduce.oracle`). `finding`: a Finding of the report, its index in
    `report.findings`, or None for the first failure. `budget`: seconds; when spent, the
    smallest candidate so far is returned (`cut_short`). `progress`: a callback given a
    dict (phase, tried, bindings, passes, seconds), or what `explorer.progress` shows
    (None: a bar in a terminal or in Jupyter, a line in CI logs; True: at once; False:
    nothing). Raises `NotReproducible` when the finding
    does not show on its own.

    The budget counts from the call: reading the trace's steps (walked once each), every
    candidate, and no new candidate starts once it is spent; only the first try of the
    weights phase and the final check through the test file run past it (one each).

    `trust_ops`: opaque ops to run although not known to be pure computations, as for
    `trace.check` (a trace holding any other is refused before anything runs); the reduced
    trace and its test file trust those its module still holds.

    The trace's compiler reduces it (its adapter's `reduce`: passlens's gives a
    `Reduction`, Inductor's an `InductorReduction`, TVM's a `TVMReduction`, ONNX
    Runtime's an `ORTReduction`); a compiler without the `REDUCE` capability raises
    `ReduceError`."""
    compiler = getattr(report.trace, "compiler", "passlens")
    adapter = get_adapter(compiler)
    with trusting(report.trace, trust_ops):
        if REDUCE not in adapter.capabilities or adapter.reduce is None:
            raise ReduceError(
                f"reduce cannot shrink a {compiler} trace (its adapter has no reducer)"
            )
        return adapter.reduce(report, finding, budget=budget, progress=progress)


_report.register_reducer(reduce)

__all__ = ["NotReproducible", "ReduceError", "Reduction", "reduce"]
