"""Apache TVM's Relax passes as an explorer adapter (registered by `explorer.adapters` on
first use). Importing this module does not import tvm: recording and checking do."""

from __future__ import annotations

from explorer.adapters import REDUCE, RERUN, Adapter, register_adapter


class TVMAdapter(Adapter):
    """The source imported with TVM's frontends (or a `tvm.IRModule`), a Relax pipeline
    (default `"zero"`) run with a recording PassInstrument; steps built with relax.build and
    run in TVM's VM for the check (outputs only: no per-node values); a pass's divergence
    reduced on cuts of the module it was given (explorer/tvm/reduce.py); a trace re-run with a
    changed pipeline (explorer/tvm/rerun.py)."""

    name = "tvm"
    default_pipeline = "zero"
    ignored_options = ("strict",)  # TVM's frontends handle operators themselves
    capabilities = frozenset({REDUCE, RERUN})

    def record(self, source, example_inputs, pipeline, progress, **options):
        from explorer.tvm import explore_tvm

        return explore_tvm(source, example_inputs, pipeline, progress, **options)

    def check(self, trace, inputs, options):
        from explorer.tvm.check import check_tvm

        return check_tvm(trace, inputs, options)

    def reduce(self, report, finding, budget, progress):
        from explorer.tvm.reduce import reduce_tvm

        return reduce_tvm(report, finding, budget=budget, progress=progress)

    def rerun(self, trace, pipeline=None, from_step=None, replace=None, progress=None):
        """The trace's source recorded again, with the same example inputs and options,
        through `pipeline` (default: the trace's own) with the passes `replace` names
        swapped (`{old pass name, class or object: new pass}`). The whole pipeline is
        recorded again (`from_step` is checked, nothing is shared); a trace read from a
        file cannot be re-run (`RerunError`)."""
        from explorer.tvm.rerun import rerun_tvm

        return rerun_tvm(trace, pipeline, from_step, replace, progress)

    def reuse_text(self, report) -> str:
        return (
            f"{report.computed} modules built with relax.build and run in TVM's VM "
            "(structurally equal modules share one build)"
        )

    def load_module(self, rec, graph, text, texts, stage):
        from explorer.tvm.module import TVMModule

        return TVMModule(
            None, inner=bool(rec.get("inner")), graph=graph, text=text, texts=texts, stage=stage
        )


ADAPTER = register_adapter(TVMAdapter())
