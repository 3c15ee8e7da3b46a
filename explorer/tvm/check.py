"""`trace.check` on a TVM trace: the reference (torch eager or onnxruntime) against every
step's module built with `relax.build` and run in the Relax VM (explorer/tvm/run.py).

It is passlens's own check (explorer/check/runner.py: the same report, findings, detectors and
progress) with its own `explorer.check.runner.StepRunner`: outputs only for every step
(TVM's VM gives a function's outputs), and for a step that diverged the value of every binding
of `main` against the imported step's (explorer/tvm/node_values.py), so the finding names the
first binding that differs; builds shared between structurally equal modules, and the calling
convention read from the TVM module (after `LiftTransformParams` the check runs
`main_transform_params` on the weights first; after the lazy passes it serves and collects
their callbacks by index), so a changed signature is the `signature-changed` finding and not
a false divergence. Modules a pass built for itself
(FoldConstant's kernels) are not run."""

from __future__ import annotations

import numpy as np

from compiler.passes import CallingConvention
from explorer.check.facts import Run
from explorer.check.numbers import to_numpy
from explorer.check.report import CheckError
from explorer.check.runner import Checker, StepRunner, name_nodes


class TVMStepRunner(StepRunner):
    """A TVM trace's steps built with relax.build and run in the Relax VM (see the module
    docstring): outputs only, so most no-op hooks (no value cache, no per-layer errors,
    nothing to release) are what it needs; `after_step` names a diverged step's node."""

    # the reference: passlens's, without per-node values (the VM gives outputs only)
    own_source = "the source is a TVM module"

    def __init__(self, target: str = "llvm"):
        from explorer.tvm.run import TVMRunner

        self.vm = TVMRunner(target)
        self._reference_values: object = None  # the imported step's binding values, once

    # ----- inputs ----------------------------------------------------------------------------
    def prepare(self, inputs) -> tuple[list | None, list | None]:
        if inputs is None:
            inputs = self.check.trace.example_inputs
        if inputs is None:
            self.check.notes.append(
                "numbers not checked: a TVM trace needs example inputs (explore(model, args, "
                "compiler='tvm') or trace.check(args))"
            )
            return None, None
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        runtime = [to_numpy(x) for x in inputs]
        weights = self._weights()
        return runtime, weights

    def _weights(self) -> list:
        return imported_weights(self.check.imported.module)

    # ----- running modules --------------------------------------------------------------------
    def run(self, module) -> Run:
        from explorer.tvm.run import TVMRunError

        ir = getattr(module, "ir", None)
        with self.timed_run((TVMRunError, CheckError), cut=500) as run:
            if ir is None:
                raise CheckError("the step's TVM module was not kept (a loaded trace)")
            run.convention = convention(ir)
            run.outputs = self.vm.run(ir, self.check.runtime, self.check.weights)
            run.computed = 1
        return run

    def should_run(self, step) -> bool:
        return not getattr(step.module, "inner", False)  # a module a pass built for itself

    def not_run_reason(self, step) -> str:
        return (
            "modules a pass built for itself (FoldConstant compiling the kernels it folds "
            "with), not stages of the model: nothing of the model to check there"
        )

    def after_step(self, step, run: Run | None) -> None:
        """A step that diverged: its `main` bindings' values against the imported step's,
        the first that differs named by the finding (explorer/tvm/node_values.py)."""
        if run is None or not run.diverged or step is self.check.imported:
            return
        if not any(  # a step that diverged as much as the one before: its finding is there
            f.step is step and f.kind == "diverged" and not f.details.get("node_errors")
            for f in self.check.findings
        ):
            return
        from explorer.tvm.node_values import binding_values, node_errors

        if self._reference_values is None:
            imported = self.check.imported.module
            self._reference_values = (
                binding_values(imported, self.vm, self.check.runtime, self.check.weights) or False
            )
        reference = self._reference_values
        if not reference:
            return
        values = binding_values(step.module, self.vm, self.check.runtime, self.check.weights)
        if values is None:
            return
        errors = node_errors(
            values, reference, step.module.graph_model(), self.check.rtol, self.check.atol
        )
        name_nodes(self.check, step, errors)


def imported_weights(module) -> list:
    """The weights the imported `main` of `module` (a step's TVMModule) takes after its
    inputs, as numpy arrays (none when they are constants of the module: TVM's importer keeps
    them so by default)."""
    ir = getattr(module, "ir", None)
    if ir is None:
        return []
    main = ir["main"]
    num_input = main.attrs["num_input"] if main.attrs and "num_input" in main.attrs else None
    if num_input is None or int(num_input) >= len(main.params):
        return []
    from tvm import relax

    _, params = relax.frontend.detach_params(ir)
    values = params.get("main", [])
    return [np.asarray(v.numpy()) for v in values]


def convention(ir) -> CallingConvention:
    """How `main` of a TVM module is called (passlens's CallingConvention, so the
    signature-changed finding compares TVM steps as it compares its own)."""
    names = {str(gv.name_hint) for gv in ir.get_global_vars()}
    main = ir["main"]
    plain, entry_get, entry_set = _callbacks(main)
    num_input = main.attrs["num_input"] if main.attrs and "num_input" in main.attrs else None
    entry_weights = 0 if num_input is None else max(0, plain - int(num_input))
    transform = "main_transform_params" if "main_transform_params" in names else None
    params, get, set_ = 0, False, False
    if transform is not None:
        params, get, set_ = _callbacks(ir[transform])
    return CallingConvention(
        "main", transform, params, get, set_, entry_weights, entry_get, entry_set
    )


def _callbacks(fn) -> tuple[int, bool, bool]:
    """How many plain parameters `fn` takes, and whether it takes a get / a set callback."""
    from tvm import relax

    plain, get, set_ = 0, False, False
    for p in fn.params:
        if isinstance(p.ty, relax.FuncType):
            label = str(getattr(p, "name", None) or getattr(p, "name_hint", "") or "")
            set_ = set_ or "set" in label
            get = get or "set" not in label
        else:
            plain += 1
    return plain, get, set_


def check_tvm(trace, inputs, options):
    """`explorer.check.check` for a TVM trace."""
    try:
        import tvm  # noqa: F401
    except ImportError as e:
        raise CheckError(
            f"checking a TVM trace builds its steps with TVM, which is not installed ({e}); "
            "pip install 'passlens[tvm]'"
        ) from None
    return Checker(trace, inputs, options, TVMStepRunner()).run()


__all__ = ["TVMStepRunner", "check_tvm", "convention", "imported_weights"]
