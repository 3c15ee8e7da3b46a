"""`trace.check` on a torch.compile trace: every FX stage's GraphModule against eager, on the
same inputs (explorer/inductor/run.py).

It is passlens's own check (explorer/check/runner.py: the same report, findings, detectors and
progress) with its own `explorer.check.runner.StepRunner`. The model is run eagerly and
replayed through Dynamo to learn what each FX graph is given on these inputs; each graph's reference
is its Dynamo graph run by `torch.fx` on those values (eager's ops on eager's values, so a graph
after a graph break is judged on its own). Steps of Dynamo's Torch IR run on those inputs; steps of
the ATen IR (after AOTAutograd) on the same tensors lined up with its placeholders; the `inductor
codegen` step calls the compiled callable Inductor returned. Per-node errors: a node that carries
over (same FX name) is compared with its value in the first graph of its IR (Dynamo's graph, or
AOTAutograd's), so a `diverged` finding names the first node a pass made wrong. The model's
outputs, eager against the compiled model, are compared at the end (a note of the report).
The check's `reference` option has no effect: each graph's Dynamo graph is both the source's
ops and the imported step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.check.facts import Run
from explorer.check.layers import LayerError
from explorer.check.numbers import compare, compare_outputs, to_numpy
from explorer.check.report import CheckError, NodeError
from explorer.check.runner import Checker, StepRunner, name_nodes
from explorer.fmt import num


class InductorStepRunner(StepRunner):
    """A torch.compile trace's FX stages run by torch.fx (see the module docstring): each stage
    run whole (no value cache), per-node values kept per stage for the `diverged` finding's
    nodes, a reference per graph."""

    own_source = "the source is torch.compile's Dynamo graph"

    def __init__(self, trace: Any):
        self.trace = trace
        self.run_info = trace.inductor
        self.captured = None
        self.graph_refs: dict[tuple[int, str], tuple | None] = {}  # (graph, level) -> outputs
        self.node_refs: dict[tuple[int, str], dict] = {}  # (graph, level) -> node values
        self.node_values_of: dict[int, dict] = {}  # id(module) -> its node values
        self.pending: list[str] = []
        self.random_graphs: set[int] = set()  # graphs whose two runs differ: not judged

    # ----- inputs ----------------------------------------------------------------------------
    def prepare(self, inputs) -> tuple[list | None, list | None]:
        prepared = self._prepare(inputs)
        self.check.notes.extend(self.pending)
        return prepared

    def _prepare(self, inputs) -> tuple[list | None, list | None]:
        from explorer.inductor.run import capture, graph_inputs

        calls: list = []
        if inputs is None:  # the inputs explore ran on: the recompiles' calls too
            inputs = self.check.trace.example_inputs
            calls = list(getattr(self.run_info, "calls", None) or [])
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        model = (self.check.trace.source or {}).get("model")
        if model is None or self.run_info is None:
            raise CheckError(
                "this torch.compile trace has no model to run (a loaded trace keeps graphs and "
                "texts only): explore the model again to check it"
            )
        args = tuple(_as_tensor(x) for x in inputs)
        self.args = args
        self._compare_models(
            model, args
        )  # first: the compiled model's own cache is as explore left it
        self.captured = capture(model, args, self.run_info.dynamic, calls)
        self.pending.extend(self.captured.notes)
        self.inputs_of_graph: dict[int, list | CheckError] = {}
        missing = []
        for g in self.run_info.graphs:
            try:
                self.inputs_of_graph[g.index] = graph_inputs(g.dynamo.graph, self.captured)
            except CheckError as e:
                self.inputs_of_graph[g.index] = e
                missing.append(g.label)
        if missing:
            self.pending.append(
                f"{len(missing)} recorded graph(s) not made by Dynamo for these inputs "
                f"({', '.join(missing[:3])}): their steps are not run"
            )
        return [to_numpy(x) for x in args], []

    def _compare_models(self, model: Any, args: tuple) -> None:
        """The compiled model against eager on `args` (a note of the report)."""
        from explorer.inductor.run import clone, flat_outputs

        compiled = self.run_info.compiled
        if compiled is None:
            return
        import torch

        try:
            with torch.no_grad():
                want = flat_outputs(model(*[clone(a) for a in args]))
                again = flat_outputs(model(*[clone(a) for a in args]))
                got = flat_outputs(compiled(*[clone(a) for a in args]))
        except Exception as e:  # the compiled model failing is worth a note, not a crash
            self.pending.append(f"the compiled model failed on these inputs: {e}"[:500])
            return
        if not _identical(tuple(to_numpy(x) for x in want), tuple(to_numpy(x) for x in again)):
            self.pending.append(
                "two eager runs of the model differ (random ops): the compiled model's outputs "
                "are not compared with eager's"
            )
            return
        cmp = compare_outputs(
            tuple(to_numpy(x) for x in got),
            tuple(to_numpy(x) for x in want),
            self.check.rtol,
            self.check.atol,
        )
        verdict = "differ" if cmp.beyond else "agree"
        self.pending.append(
            f"the compiled model and torch eager {verdict} on these inputs "
            f"(max abs {num(cmp.max_abs)}, max rel {num(cmp.max_rel)})"
            + (f": {cmp.note}" if cmp.note else "")
        )

    # ----- running steps -----------------------------------------------------------------------
    def _inputs_of(self, module) -> list:
        from explorer.inductor.run import line_up

        inputs = self.inputs_of_graph.get(module.graph_index)
        if inputs is None or isinstance(inputs, CheckError):
            raise inputs or CheckError("no inputs for this graph")
        if module.level == "aten" and not module.extra_texts:
            return line_up(module.graph, inputs)
        return inputs

    def run(self, module) -> Run:
        from explorer.inductor.run import run_compiled, run_graph

        with self.timed_run((CheckError,), cut=500) as run:
            if getattr(module, "graph", None) is None:
                raise CheckError("the step's FX graph was not kept (a loaded trace)")
            inputs = self._inputs_of(module)
            if module.extra_texts:  # the codegen step: Inductor's compiled callable
                compiled = self.run_info.graphs[module.graph_index].compiled
                if compiled is None:
                    raise CheckError("Inductor returned no compiled callable for this graph")
                outputs = run_compiled(compiled, inputs)
                values: dict = {}
            else:
                outputs, values = run_graph(module.graph_module(), inputs)
            run.outputs = tuple(to_numpy(x) for x in outputs)
            run.computed = max(1, len(values))
            self.node_values_of[id(module)] = values
        return run

    # ----- references: per graph and IR level --------------------------------------------------
    def _reference_for(self, module) -> tuple | None:
        """The outputs a step of `module`'s graph is compared with (its Dynamo graph run on
        its inputs: eager's ops), computed once per graph; the per-node reference of its IR
        level kept beside."""
        k = module.graph_index
        if (k, "dynamo") not in self.graph_refs:
            record = self.run_info.graphs[k]
            self.graph_refs[(k, "dynamo")] = None
            if record.dynamo is not None and record.dynamo.graph is not None:
                try:
                    inputs = self._inputs_of(record.dynamo)
                    from explorer.inductor.run import run_graph

                    outputs, values = run_graph(record.dynamo.graph_module(), inputs)
                    again, _ = run_graph(record.dynamo.graph_module(), inputs)
                    first = tuple(to_numpy(x) for x in outputs)
                    if not _identical(first, tuple(to_numpy(x) for x in again)):
                        self.random_graphs.add(k)
                        self.check.notes.append(
                            f"{record.label}: two runs on the same inputs differ (random ops: "
                            "dropout in training mode?): its steps' numbers are not compared"
                        )
                    else:
                        self.graph_refs[(k, "dynamo")] = first
                        self.node_refs[(k, "dynamo")] = values
                except Exception as e:  # no reference for this graph: said once
                    note = f"graph {k}: its Dynamo graph could not run ({e})"
                    self.check.notes.append(note[:500])
        return self.graph_refs[(k, "dynamo")]

    def _aten_reference(self, step, run: Run) -> None:
        """The first ATen-level run of a graph (AOTAutograd's graph) gives the per-node
        reference of the ATen steps after it."""
        module = step.module
        key = (module.graph_index, "aten")
        if module.level == "aten" and not module.extra_texts and key not in self.node_refs:
            if run.error is None:
                self.node_refs[key] = self.node_values_of.get(id(module), {})

    def set_reference(self, import_run: Run) -> bool:
        """Each graph's reference is its Dynamo graph (the imported step, run by torch.fx):
        the check's `reference` option has no effect here, "source" and "import" are it."""
        ref = self.check.reference
        ref.name = "torch eager"
        ref.description = (
            "torch eager: each FX graph's Dynamo graph run by torch.fx on the values Dynamo "
            "passes it (the model's own ops on these inputs)"
        )
        return True

    def should_run(self, step) -> bool:
        module = step.module
        if isinstance(self.inputs_of_graph.get(module.graph_index), CheckError):
            return False  # Dynamo made no such graph on these inputs
        self.check.ref_outputs = self._reference_for(module)
        # no reference to judge a random graph by
        return module.graph_index not in self.random_graphs

    def layers(self, module) -> dict:
        """Per-layer errors for the error map: of each layer (a module path of the step's
        graph, with the places of the nodes a pass added), its last node in graph order whose
        value has a reference (the same FX name in the first graph of its IR, same shape and
        dtype), against that reference."""
        ref = self.node_refs.get((module.graph_index, module.level))
        values = self.node_values_of.get(id(module), {})
        step = next((s for s in self.trace.steps if s.module is module), None)
        if not ref or not values or step is None:
            return {}
        model = step.graph  # (the places of added nodes: explorer.graph.place_added)
        rtol, atol = self.check.rtol, self.check.atol
        found: dict[str, LayerError] = {}
        for node in reversed(list(module.graph.nodes)):
            g = model.nodes.get(node.name)
            if g is None or g.kind != "op" or not g.group or g.group in found:
                continue
            v, r = values.get(node.name), ref.get(node.name)
            if v is None or r is None or not hasattr(v, "shape") or not hasattr(r, "shape"):
                continue
            if tuple(v.shape) != tuple(r.shape) or v.dtype != r.dtype:
                continue
            if v is r:
                found[g.group] = LayerError(0.0, 0.0, g.obj)
                continue
            a, b = to_numpy(v).astype(np.float64), to_numpy(r).astype(np.float64)
            if a.size == 0:
                continue
            diff = np.abs(a - b)
            with np.errstate(invalid="ignore"):
                rel = float(np.nanmax(diff / (np.abs(b) + atol)))
                share = float(np.nanmax(diff / (atol + rtol * np.abs(b))))
            found[g.group] = LayerError(rel, share, g.obj)
        return found

    def after_step(self, step, run: Run | None) -> None:
        if run is not None:
            self._aten_reference(step, run)
            if run.diverged:
                self._name_nodes(step)

    def _name_nodes(self, step) -> None:
        """Give the step's `diverged` finding its per-node errors (nodes that carry over)."""
        module = step.module
        ref = self.node_refs.get((module.graph_index, module.level))
        values = self.node_values_of.get(id(module), {})
        if not ref or not values or ref is values:
            return
        errors = node_errors(module, values, ref, self.check.rtol, self.check.atol)
        name_nodes(self.check, step, errors)


def node_errors(module, values: dict, ref: dict, rtol: float, atol: float) -> list[NodeError]:
    """Nodes of `module`'s graph (in graph order) whose value differs from the value of the
    node with the same name in the reference run (same shape and dtype)."""
    model = module.graph_model()
    errors = []
    for node in module.graph.nodes:
        v, r = values.get(node.name), ref.get(node.name)
        if v is None or r is None or v is r:
            continue
        if tuple(v.shape) != tuple(r.shape) or v.dtype != r.dtype:
            continue
        a, rel, beyond = compare(to_numpy(v), to_numpy(r), rtol, atol)
        if not beyond:
            continue
        g = model.nodes.get(node.name)
        where = f"{g.group} ({node.name})" if g is not None and g.group else node.name
        errors.append(NodeError(g.obj if g is not None else None, where, a, rel, tuple(v.shape)))
    return errors


def _identical(a: tuple, b: tuple) -> bool:
    """Whether two runs' outputs are the same, bit for bit (NaN equal to NaN)."""
    return len(a) == len(b) and all(
        x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")
        for x, y in zip(a, b, strict=True)
    )


def _as_tensor(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(x))
    return x


def check_inductor(trace, inputs, options):
    """`explorer.check.check` for a torch.compile trace."""
    if getattr(trace, "inductor", None) is None:
        raise CheckError(
            "this torch.compile trace was loaded from a file: it keeps graphs and texts, not "
            "the GraphModules and compiled code; explore the model again to check it"
        )
    return Checker(trace, inputs, options, InductorStepRunner(trace)).run()


__all__ = ["InductorStepRunner", "check_inductor", "node_errors"]
