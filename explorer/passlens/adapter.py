"""passlens's own compiler as an explorer adapter (registered by ``explorer.adapters`` on
first use): ``explorer.passlens.record.explore`` records it, the check runs its steps with the
interpreter (``explorer.passlens.check.Interpreter``: per-node values), ``explorer.reduce``
reduces its findings, and its modules are saved as IR (``explorer.store``)."""

from __future__ import annotations

from explorer.adapters import NODE_ERRORS, RECHECK_AFTER_LOAD, REDUCE, Adapter, register_adapter


class PasslensAdapter(Adapter):
    """passlens's own compiler: frontends into its IR, its pass manager, its interpreter."""

    name = "passlens"
    default_pipeline = "default"
    capabilities = frozenset({NODE_ERRORS, REDUCE, RECHECK_AFTER_LOAD})

    def record(self, source, example_inputs, pipeline, progress, **options):
        from explorer.passlens.record import explore

        return explore(source, example_inputs, pipeline, progress, **options)

    def check(self, trace, inputs, options):
        from explorer.passlens.check import check_passlens

        return check_passlens(trace, inputs, options)

    def graph_model(self, module):
        from explorer.passlens.convert import graph_of_module

        return graph_of_module(module)

    def texts(self, module):
        from compiler.ir import print_module

        return {"ir": print_module(module)}


ADAPTER = register_adapter(PasslensAdapter())
