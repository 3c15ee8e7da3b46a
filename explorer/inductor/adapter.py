"""torch.compile (Inductor) as an explorer adapter (registered by `explorer.adapters` on
first use)."""

from __future__ import annotations

from explorer.adapters import NODE_ERRORS, REDUCE, RERUN, Adapter, register_adapter


class InductorAdapter(Adapter):
    """Dynamo's graphs and Inductor's FX passes recorded by a torch.compile backend; each FX
    stage's GraphModule run by torch.fx for the check (per-node values); a custom pass's
    divergence reduced on its own; a trace re-run with its custom passes swapped. A loaded
    trace keeps graphs and texts only."""

    name = "inductor"
    default_pipeline = None
    takes_pipeline = False  # torch.compile runs its own passes
    needs_inputs = True  # the model is compiled by calling it
    source_kinds = ("torch",)
    takes_text = "compiles torch"
    ignored_options = ("strict",)  # torch.compile handles operators itself
    capabilities = frozenset({NODE_ERRORS, REDUCE, RERUN})

    def record(self, source, example_inputs, pipeline, progress, **options):
        from explorer.inductor import explore_inductor

        return explore_inductor(source, example_inputs, pipeline, progress, **options)

    def check(self, trace, inputs, options):
        from explorer.inductor.check import check_inductor

        return check_inductor(trace, inputs, options)

    def reduce(self, report, finding, budget, progress):
        from explorer.inductor.reduce import reduce_inductor

        return reduce_inductor(report, finding, budget=budget, progress=progress)

    def rerun(self, trace, pipeline=None, from_step=None, replace=None, progress=None):
        """The trace's model compiled again, with the same example inputs and options, the
        custom passes `replace` names swapped (`{old pass name, class or object: new
        pass}`) and `pipeline` (a dict of `torch._inductor.config` options) over the
        trace's options. The whole compile is recorded again (`from_step` is checked,
        nothing is shared); a trace read from a file cannot be re-run (`RerunError`)."""
        from explorer.inductor.rerun import rerun_inductor

        return rerun_inductor(trace, pipeline, from_step, replace, progress)

    def reuse_text(self, report) -> str:
        return (
            f"{report.computed} FX node values computed by torch.fx (each graph a pass changed "
            "run whole; the passes that changed nothing share its run)"
        )

    def trace_record(self, trace):
        """The compile tab's data: guards, recompiles, compile times, kernels."""
        return trace.compile_info or None

    def load_trace_record(self, trace, record):
        from explorer.inductor.compile_log import clean_info

        trace.compile_info = clean_info(record)

    def load_module(self, rec, graph, text, texts, stage):
        from explorer.inductor.module import FXModule

        # a torch.compile FX graph: no GraphModule once loaded
        return FXModule(model=graph, text=text, extra_texts=texts or None, stage=stage)


ADAPTER = register_adapter(InductorAdapter())
