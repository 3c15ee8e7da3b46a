"""Running torch.compile's FX stages for the check.

- :func:`capture` runs the model through Dynamo again with a backend that keeps, for each FX
  graph, the values Dynamo passes it on these inputs (a graph after a graph break takes the
  values of the Python code between), and runs the model eagerly: the reference;
- :func:`run_graph` runs one stage's GraphModule on its inputs with ``torch.fx``'s
  Interpreter, keeping every node's value (the per-node errors);
- :func:`aten_inputs` maps a Dynamo graph's inputs onto the ATen graph AOTAutograd made of
  it (the same tensors in the same order; symbolic sizes read from the tensors' shapes);
- :func:`run_compiled` calls the callable Inductor returned for a graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from explorer.check.report import CheckError
from explorer.inductor.record import graph_signature


@dataclass
class Captured:
    """The eager outputs of the model and, per recorded graph (by index), the values Dynamo
    passed it; ``missing`` names graphs a replay did not make."""

    eager: Any = None
    inputs: dict[int, list] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _clone(x: Any) -> Any:
    import torch

    if isinstance(x, torch.nn.Parameter):
        return x  # weights are not changed by an inference graph
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    return x


def capture(model: Any, args: tuple, graphs: list, dynamic: bool | None) -> Captured:
    """Run ``model`` eagerly and through Dynamo (no Inductor) on ``args``; keep each recorded
    graph's inputs (matched by the graph's node names and ops)."""
    import torch

    out = Captured()
    by_signature = {g.signature: g.index for g in graphs}

    def backend(gm: Any, example_inputs: list) -> Any:
        k = by_signature.get(graph_signature(gm.graph))
        forward = gm.forward

        def call(*inputs: Any) -> Any:
            if k is not None and k not in out.inputs:
                out.inputs[k] = [_clone(x) for x in inputs]
            return forward(*inputs)

        return call

    with torch.no_grad():
        out.eager = model(*[_clone(a) for a in args])
        replay = torch.compile(model, backend=backend, dynamic=dynamic)
        replay(*[_clone(a) for a in args])
    missing = [g.label for g in graphs if g.index not in out.inputs]
    if missing:
        out.notes.append(
            f"{len(missing)} recorded graph(s) not made by Dynamo for these inputs "
            f"({', '.join(missing[:3])}): their steps are not run (explore with these inputs)"
        )
    return out


def run_graph(gm: Any, inputs: list) -> tuple[tuple, dict[str, Any]]:
    """Outputs (a flat tuple) and every node's tensor value of ``gm`` on ``inputs``."""
    import torch
    from torch.fx import Interpreter

    values: dict[str, Any] = {}

    class Recording(Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            if isinstance(result, torch.Tensor) and n.op != "placeholder":
                values[n.name] = result.detach()
            return result

    with torch.no_grad():
        result = Recording(gm).run(*[_clone(x) for x in inputs])
    return flat_outputs(result), values


def run_compiled(compiled: Any, inputs: list) -> tuple:
    """The outputs of the callable Inductor returned for a graph (Dynamo's convention)."""
    import torch

    args = [_clone(x) for x in inputs]
    with torch.no_grad():
        result = compiled(*args)  # as Dynamo calls it (its ``_boxed_call`` is AOT's inner one)
    return flat_outputs(result)


def flat_outputs(result: Any) -> tuple:
    """A graph's result as a flat tuple of tensors (None outputs dropped)."""
    out: list = []

    def visit(v: Any) -> None:
        if isinstance(v, (tuple, list)):
            for x in v:
                visit(x)
        elif v is not None:
            out.append(v)

    visit(result)
    return tuple(out)


def aten_inputs(graph: Any, dynamo_inputs: list) -> list:
    """The inputs of an ATen graph AOTAutograd made from a Dynamo graph: its tensor
    placeholders take Dynamo's tensors in order, its symbolic-int placeholders the sizes
    those tensors have where the fake values have that symbol. Raises CheckError when they
    do not line up."""
    import torch

    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    tensors = [x for x in dynamo_inputs if isinstance(x, torch.Tensor)]
    vals = [n.meta.get("val") for n in placeholders]
    tensor_slots = [i for i, v in enumerate(vals) if isinstance(v, torch.Tensor)]
    if len(tensor_slots) != len(tensors):
        raise CheckError(
            f"the ATen graph takes {len(tensor_slots)} tensors, Dynamo's graph "
            f"{len(tensors)}: cannot line up its inputs"
        )
    env: dict[str, int] = {}
    out: list = [None] * len(placeholders)
    for slot, t in zip(tensor_slots, tensors, strict=True):
        fake = vals[slot]
        if fake.dim() != t.dim() or fake.dtype != t.dtype:
            raise CheckError(
                f"ATen input {placeholders[slot].name} is {fake.dtype}{list(fake.shape)}, "
                f"Dynamo's is {t.dtype}{list(t.shape)}: cannot line up the inputs"
            )
        for d, size in zip(fake.shape, t.shape, strict=True):
            try:
                if int(d) != int(size):
                    raise CheckError(
                        f"ATen input {placeholders[slot].name} has shape {list(fake.shape)}, "
                        f"the value {list(t.shape)}"
                    )
            except (TypeError, RuntimeError, ValueError):  # a symbolic dim: learn it
                env[str(d)] = int(size)
        out[slot] = t
    for i, v in enumerate(vals):
        if out[i] is not None:
            continue
        key = str(v)
        if key in env:
            out[i] = env[key]
        elif isinstance(v, (int, float, bool)):
            out[i] = v
        else:
            raise CheckError(
                f"ATen input {placeholders[i].name} ({key}) is not a size of any input tensor"
            )
    return out


__all__ = ["Captured", "aten_inputs", "capture", "flat_outputs", "run_compiled", "run_graph"]
