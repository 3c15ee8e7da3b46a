"""IREE's iree-compile as an explorer adapter (registered by `explorer.adapters` on first
use). Importing this module does not import iree: recording and a view's parsing do."""

from __future__ import annotations

from explorer.adapters import Adapter, register_adapter


class IREEAdapter(Adapter):
    """A torch model exported with iree-turbine (weights in an .irpa file), or an MLIR file,
    compiled by iree-compile printing the module after every pass; steps nested under IREE's
    phases; graphs parsed with iree.compiler.ir. The check compiles a step's dump again with
    `--compile-from` and runs it with iree.runtime, bisecting over the steps
    (explorer.iree.check)."""

    name = "iree"
    default_pipeline = "end"
    ignored_options = ("strict",)  # iree-turbine and IREE handle operators themselves
    capabilities = frozenset()
    source_kinds = ("torch", "other")  # a torch model, or an .mlir file / MLIR text
    takes_text = "compiles torch models and MLIR"

    def record(self, source, example_inputs, pipeline, progress, **options):
        from explorer.iree import explore_iree

        return explore_iree(source, example_inputs, pipeline, progress, **options)

    def check(self, trace, inputs, options):
        from explorer.iree.check import check_iree

        return check_iree(trace, inputs, options)

    def reuse_text(self, report) -> str:
        return (
            f"{report.computed} modules compiled by iree-compile and run with iree.runtime "
            "(outputs only; the steps run chosen by bisection)"
        )

    def load_module(self, rec, graph, text, texts, stage):
        from explorer.iree.module import IREEModule

        return IREEModule(graph=graph, text=text, texts=texts, stage=stage)


ADAPTER = register_adapter(IREEAdapter())
