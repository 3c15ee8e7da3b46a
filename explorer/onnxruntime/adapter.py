"""ONNX Runtime and onnxscript as an explorer adapter (registered by `explorer.adapters` on
first use). Importing this module imports neither onnxruntime nor onnxscript."""

from __future__ import annotations

from explorer.adapters import NODE_ERRORS, ONNX_EXPORT, REDUCE, RERUN, Adapter, register_adapter


class ONNXRuntimeAdapter(Adapter):
    """A torch model exported with `torch.onnx.export(dynamo=True)` (or an ONNX file), then
    onnxscript's optimizer, optionally onnxruntime's transformers optimizer, then ONNX
    Runtime's graph transformers, a step per change (explorer/onnxruntime/). Each step runs
    in onnxruntime with optimizations off for the check, every value exposed, so a finding
    names its node."""

    name = "onnxruntime"
    default_pipeline = "onnxscript,ort"
    ignored_options = ("strict",)
    capabilities = frozenset({NODE_ERRORS, REDUCE, ONNX_EXPORT, RERUN})

    def record(self, source, example_inputs, pipeline, progress, **options):
        from explorer.onnxruntime import explore_onnxruntime

        return explore_onnxruntime(source, example_inputs, pipeline, progress, **options)

    def check(self, trace, inputs, options):
        from explorer.onnxruntime.check import check_onnxruntime

        return check_onnxruntime(trace, inputs, options)

    def reuse_text(self, report) -> str:
        return (
            f"{report.computed} models run in onnxruntime with optimizations off, every value "
            "a graph output (equal models share one run)"
        )

    def reduce(self, report, finding=None, *, budget=60.0, progress=None):
        from explorer.onnxruntime.reduce import reduce_onnxruntime

        return reduce_onnxruntime(report, finding, budget=budget, progress=progress)

    def rerun(self, trace, pipeline=None, from_step=None, replace=None, progress=None):
        """The trace's source recorded again, with the same example inputs and options,
        through `pipeline` (a pipeline text; default: the trace's own) with the user's
        rewrite rules `replace` names swapped (`{old rule name, class or object: new
        rule}`). The whole pipeline is recorded again (`from_step` is checked, nothing is
        shared); a trace read from a file cannot be re-run (`RerunError`)."""
        from explorer.onnxruntime.rerun import rerun_onnxruntime

        return rerun_onnxruntime(trace, pipeline, from_step, replace, progress)

    def rule_doc(self, rule):
        """What an ORT transformer, onnxscript pass or rule, or transformers-optimizer fusion
        does, in one line (explorer/onnxruntime/docs.py); "" for a name it does not list."""
        from explorer.onnxruntime.docs import rule_doc

        return rule_doc(rule)

    def to_onnx(self, module):
        from explorer.interop import ExportError

        if not getattr(module, "live", False):
            raise ExportError("this ONNX step was loaded from a file: it keeps no model")
        return module.proto()

    def load_module(self, rec, graph, text, texts, stage):
        from explorer.onnxruntime.module import ONNXModule

        return ONNXModule(graph=graph, text=text, texts=texts)


ADAPTER = register_adapter(ONNXRuntimeAdapter())
