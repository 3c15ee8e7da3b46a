"""`trace.check` on an ONNX Runtime trace: every step's model run in onnxruntime with its
optimizations off (contrib and fused ops included), compared with torch eager (a torch
source) or with onnxruntime's run of the source model (an ONNX file).

It is passlens's own check (explorer/check/runner.py: the same report, findings, detectors,
verdict rules: the tolerance, then float64) with its own
`explorer.check.runner.StepRunner`. Each model runs with every value its nodes make
exposed as a graph output, in a child process under the reference budget (a model from a file
may make a value of any size: `compiler.opaque.run_onnx_model`). A value carries over between
steps by name: a step whose outputs diverge gets the first node, in graph order, whose value
differs from the value of the same name in the first step that made it (the export), so a wrong
fusion or rule is named at its own step and node.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.check.facts import Run
from explorer.check.numbers import compare, to_numpy
from explorer.check.report import CheckError, NodeError
from explorer.check.runner import Checker, StepRunner, name_nodes

RUN_BUDGET = 4 << 30  # bytes the values of one step's run may take in its child process


def exposed(model: Any, copy: bool = True) -> tuple[Any, list[str]]:
    """A copy of `model` (`model` itself without `copy`) with every node output also a
    graph output; the names added."""
    import onnx

    if copy:
        m = onnx.ModelProto()
        m.CopyFrom(model)
    else:
        m = model
    outputs = {o.name for o in m.graph.output}
    added: list[str] = []
    for node in m.graph.node:
        for name in node.output:
            if name and name not in outputs:
                outputs.add(name)
                added.append(name)
                m.graph.output.append(onnx.ValueInfoProto(name=name))
    return m, added


def run_model(
    model: Any, runtime: list, what: str, values: bool = True
) -> tuple[tuple, dict[str, np.ndarray]]:
    """`(outputs, {value name: value})` of `model` in onnxruntime, optimizations off,
    every node value exposed (outputs only when ORT refuses the exposed model, or without
    `values`)."""
    from compiler.opaque import ModelRefusedError, run_onnx_model

    n = len(model.graph.output)
    wide, added = exposed(model) if values else (model, [])
    for candidate, names in ((wide, added), (model, [])):
        try:
            outs, _ = run_onnx_model(
                candidate.SerializeToString(),
                list(runtime),
                what=what,
                budget=RUN_BUDGET,
                optimize=False,
                budget_name="explorer.onnxruntime.check.RUN_BUDGET",
            )
        except ModelRefusedError:
            if names:
                continue
            raise
        outs = [np.asarray(o) for o in outs]
        # the graph's outputs are values too: a fused node that makes one can be named
        values = dict(zip((o.name for o in model.graph.output), outs[:n], strict=False))
        values.update(zip(names, outs[n:], strict=False))
        return tuple(outs[:n]), values
    raise AssertionError("unreachable")


class ORTStepRunner(StepRunner):
    """An ONNX Runtime trace's steps run in onnxruntime (see the module docstring)."""

    own_source = "the source is an ONNX model"
    weights_stored = True

    def __init__(self) -> None:
        self.values_of: dict[int, dict] = {}  # id(module) -> its node values
        self.first_values: dict[str, np.ndarray] = {}  # value name -> first step's value

    def prepare(self, inputs) -> tuple[list | None, list | None]:
        inputs = self.given_inputs(inputs)
        if inputs is None:
            return None, None
        return [to_numpy(x) for x in inputs], []

    def set_reference(self, import_run: Run) -> bool:
        """An ONNX file's reference is the file's own model run by onnxruntime with its
        optimizations off (ORT's default level would be the optimizations under test); a
        torch model's is the check's own (torch eager, FX values by name)."""
        check = self.check
        if check.trace.frontend != "onnx" or check.reference_kind == "import":
            return False
        source = (check.trace.source or {}).get("model")
        if source is None:
            return False
        from explorer.check.references import float64_reference

        ref = check.reference
        try:
            outputs, _ = run_model(source, check.runtime, "the reference run", values=False)
        except Exception as e:  # the file's own model cannot run: the import is the reference
            check.notes.append(
                f"the ONNX file could not run in onnxruntime ({type(e).__name__}: "
                f"{str(e)[:300]}); the imported step is the reference"
            )
            check.ref_outputs, ref.name = import_run.outputs, "the imported step"
            ref.description = "the imported step, as the ONNX file could not run"
            return True
        check.ref_outputs = outputs
        ref.name = "onnxruntime"
        ref.description = "the ONNX file in onnxruntime with its optimizations off"
        try:
            ref.float64 = float64_reference(  # optimizations off: they are what is judged
                "onnx", check.trace.source, check.runtime, check.runtime, optimize=False
            )
        except Exception as e:  # no float64 run: the tolerance alone judges
            check.notes.append(f"no float64 reference ({type(e).__name__}: {str(e)[:200]})")
        return True

    def run(self, module) -> Run:
        with self.timed_run((CheckError,), cut=800) as run:
            if not getattr(module, "live", False):
                raise CheckError("the step's ONNX model was not kept (a loaded trace)")
            outputs, values = run_model(module.proto(), self.check.runtime, "a step's run")
            run.outputs = outputs
            run.computed = 1
            self.values_of[id(module)] = values
            for name, v in values.items():
                self.first_values.setdefault(name, v)
        return run

    def after_step(self, step, run: Run | None) -> None:
        if run is not None and run.diverged:
            self._name_nodes(step)

    def _name_nodes(self, step) -> None:
        """Give the step's `diverged` finding its per-node errors."""
        values = self.values_of.get(id(step.module), {})
        if not values:
            return
        errors = node_errors(step.module, values, self.first_values, self.check)
        name_nodes(self.check, step, errors)


def node_errors(module, values: dict, first: dict, check) -> list[NodeError]:
    """Nodes of `module` (in graph order) with an output whose value differs from the value of
    the same name in the first step that made it (same shape and dtype)."""
    model = module.graph_model()
    proto = module.proto(with_weights=False)
    by_ref = {id(n.obj): n for n in model.nodes.values()}
    ops = [n for n in model.nodes.values() if n.kind == "op"]
    errors = []
    for k, node in enumerate(proto.graph.node):
        g = ops[k] if k < len(ops) else None
        for name in node.output:
            v, r = values.get(name), first.get(name)
            if v is None or r is None or v is r:
                continue
            if v.shape != r.shape or v.dtype != r.dtype:
                continue
            a, rel, beyond = compare(v, r, check.rtol, check.atol)
            if not beyond:
                continue
            module_path = g.group if g is not None else ""
            where = f"{module_path} ({name})" if module_path else name
            obj = g.obj if g is not None and id(g.obj) in by_ref else None
            errors.append(NodeError(obj, where, a, rel, tuple(v.shape)))
            break
    return errors


def check_onnxruntime(trace, inputs, options):
    """`explorer.check.check` for an ONNX Runtime trace."""
    if not any(getattr(s.module, "live", False) for s in trace.steps):
        raise CheckError(
            "this ONNX Runtime trace was loaded from a file: it keeps each step's graph and "
            "text, not its ONNX model; explore the model again to check it"
        )
    return Checker(trace, inputs, options, ORTStepRunner()).run()


__all__ = ["ORTStepRunner", "check_onnxruntime", "exposed", "node_errors", "run_model"]
