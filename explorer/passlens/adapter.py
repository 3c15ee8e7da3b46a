"""passlens's own compiler as an explorer adapter (registered by `explorer.adapters` on
first use): `explorer.passlens.record.explore` records it, the check runs its steps with the
interpreter (`explorer.passlens.check.Interpreter`: per-node values),
`explorer.passlens.reduce` reduces its findings, its modules are saved as IR
(`explorer.store`) and get their kernels again once loaded (`explorer.passlens.backend`),
its rule tables say what a rule does, its exporter writes a step's module as ONNX, and its
traces re-run from the first pass that changed (`explorer.passlens.rerun`), a user's own
passes included (`explorer.passlens.user_passes`: what a file keeps of them, how a loaded
trace gets them back)."""

from __future__ import annotations

from explorer.adapters import (
    NODE_ERRORS,
    ONNX_EXPORT,
    RECHECK_AFTER_LOAD,
    REDUCE,
    RERUN,
    Adapter,
    register_adapter,
)


class PasslensAdapter(Adapter):
    """passlens's own compiler: frontends into its IR, its pass manager, its interpreter."""

    name = "passlens"
    default_pipeline = "default"
    capabilities = frozenset({NODE_ERRORS, REDUCE, RECHECK_AFTER_LOAD, ONNX_EXPORT, RERUN})

    def record(self, source, example_inputs, pipeline, progress, **options):
        from explorer.passlens.record import explore

        return explore(source, example_inputs, pipeline, progress, **options)

    def check(self, trace, inputs, options):
        from explorer.passlens.check import check_passlens

        return check_passlens(trace, inputs, options)

    def reduce(self, report, finding, budget, progress):
        from explorer.passlens.reduce import reduce_passlens

        return reduce_passlens(report, finding, budget=budget, progress=progress)

    def rerun(self, trace, pipeline=None, from_step=None, replace=None, progress=None):
        from explorer.passlens.rerun import rerun

        return rerun(trace, pipeline, from_step=from_step, replace=replace, progress=progress)

    def pass_record(self, step):
        """A user's pass (not one of passlens's own registered passes): its name, spec, class,
        module, whether it was registered and where it is defined; what the file said again
        for a loaded step whose pass was not supplied."""
        from explorer.passlens.user_passes import pass_record

        if step.pass_object is None:
            return step.saved_pass
        return pass_record(step.pass_object)

    def supply_passes(self, trace, passes):
        from explorer.passlens.user_passes import supply

        supply(trace, passes)

    def graph_model(self, module):
        from explorer.passlens.convert import graph_of_module

        return graph_of_module(module)

    def texts(self, module):
        from compiler.ir import print_module

        return {"ir": print_module(module)}

    def rule_doc(self, rule):
        """The doc of `pass/rule` in its pass's rule table (`compiler.passes.rule_tables`);
        "" for a rule no table of this passlens has (another compiler's pattern, an old file)."""
        from compiler import passes

        pass_name, _, name = rule.partition("/")
        table = passes.rule_tables().get(pass_name, ())
        return next((r.doc for r in table if r.name == name), "")

    def to_onnx(self, module):
        """`compiler.export.to_onnx`; a module it cannot write raises ExportError."""
        from compiler.export import to_onnx
        from compiler.frontend import FrontendError  # what to_onnx raises (ExportError is one)
        from explorer.interop import ExportError

        try:
            return to_onnx(module)
        except FrontendError as e:
            raise ExportError(str(e)) from None

    def after_load(self, trace):
        from explorer.passlens.backend import relower

        relower(trace)


ADAPTER = register_adapter(PasslensAdapter())
