"""Running torch.compile's FX stages for the check.

- `capture` runs the model through Dynamo again with a backend that keeps, for each FX
  graph, the values Dynamo passes it on these inputs (a graph after a graph break takes the
  values of the Python code between), and runs the model eagerly: the reference;
- `run_graph` runs one stage's GraphModule on its inputs with `torch.fx`'s
  Interpreter, keeping every node's value (the per-node errors);
- `graph_inputs` / `line_up` give a recorded graph its captured values, and map a
  Dynamo graph's inputs onto the ATen graph AOTAutograd made of it (the same tensors in the
  same order; symbolic sizes read from the tensors' shapes);
- `run_compiled` calls the callable Inductor returned for a graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from explorer.check.report import CheckError
from explorer.inductor.record import graph_signature


@dataclass
class Captured:
    """Per graph signature, the values Dynamo passed each
    graph with that signature (every call, at most `KEPT_CALLS`)."""

    inputs: dict[tuple, list[list]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


KEPT_CALLS = 4  # input sets kept per graph signature


def clone(x: Any) -> Any:
    """`x` copied so a run cannot change the captured value (a tensor detached and cloned;
    weights and non-tensors as they are)."""
    import torch

    if isinstance(x, torch.nn.Parameter):
        return x  # weights are not changed by an inference graph
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    return x


def capture(model: Any, args: tuple, dynamic: bool | None, calls: list | tuple = ()) -> Captured:
    """Run `model` through Dynamo (no Inductor) on `args` and on
    each of `calls`; keep what Dynamo passes each graph, by the graph's signature (its
    nodes but symbolic-size inputs: a replay may make a static graph dynamic or the other
    way, as Dynamo's shape guesses stand)."""
    import torch

    out = Captured()

    def backend(gm: Any, example_inputs: list) -> Any:
        key = graph_signature(gm.graph)
        forward = gm.forward

        def call(*inputs: Any) -> Any:
            kept = out.inputs.setdefault(key, [])
            if len(kept) < KEPT_CALLS:
                kept.append([clone(x) for x in inputs])
            return forward(*inputs)

        return call

    with torch.no_grad():
        replay = torch.compile(model, backend=backend, dynamic=dynamic)
        replay(*[clone(a) for a in args])
        for more in calls:
            replay(*[clone(a) for a in more])
    return out


def graph_inputs(graph: Any, captured: Captured) -> list:
    """The inputs of a recorded Dynamo graph: the first values captured for a graph with its
    signature that line up with its placeholders (see `line_up`). Raises CheckError
    when none do."""
    candidates = captured.inputs.get(graph_signature(graph), [])
    if not candidates:
        raise CheckError("Dynamo made no such graph on these inputs: the step cannot be run")
    last: CheckError | None = None
    for values in candidates:
        try:
            return line_up(graph, values)
        except CheckError as e:
            last = e
    raise CheckError(f"no captured inputs fit this graph ({last})")


def run_graph(gm: Any, inputs: list) -> tuple[tuple, dict[str, Any]]:
    """Outputs (a flat tuple) and every node's tensor value of `gm` on `inputs`."""
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
        result = Recording(gm).run(*[clone(x) for x in inputs])
    return flat_outputs(result), values


def run_compiled(compiled: Any, inputs: list) -> tuple:
    """The outputs of the callable Inductor returned for a graph (Dynamo's convention)."""
    import torch

    args = [clone(x) for x in inputs]
    with torch.no_grad():
        result = compiled(*args)  # as Dynamo calls it (its ``_boxed_call`` is AOT's inner one)
    return flat_outputs(result)


def flat_outputs(result: Any) -> tuple:
    """A graph's or a model's result as a flat tuple (tuples, lists and dicts walked in
    order; None dropped)."""
    out: list = []

    def visit(v: Any) -> None:
        if isinstance(v, (tuple, list)):
            for x in v:
                visit(x)
        elif isinstance(v, dict):  # a transformers ModelOutput is an OrderedDict
            for x in v.values():
                visit(x)
        elif v is not None:
            out.append(v)

    visit(result)
    return tuple(out)


def _val(node: Any) -> Any:
    val = node.meta.get("val")
    return node.meta.get("example_value") if val is None else val


def line_up(graph: Any, values: list) -> list:
    """`values`' tensors on `graph`'s tensor placeholders, in order (dtype, rank and
    static sizes checked), and its symbolic-int placeholders given the sizes those tensors
    have where the placeholders' fake values have that symbol: how a Dynamo graph takes
    values captured from another compile of the same frame, and how AOTAutograd's ATen
    graph takes its Dynamo graph's. Raises CheckError when they do not line up."""
    import torch

    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    tensors = [x for x in values if isinstance(x, torch.Tensor)]
    vals = [_val(n) for n in placeholders]
    tensor_slots = [i for i, v in enumerate(vals) if isinstance(v, torch.Tensor)]
    if len(tensor_slots) != len(tensors):
        raise CheckError(
            f"the graph takes {len(tensor_slots)} tensors, {len(tensors)} are given: cannot "
            "line up its inputs"
        )
    env: dict[str, int] = {}
    out: list = [None] * len(placeholders)
    for slot, t in zip(tensor_slots, tensors, strict=True):
        fake = vals[slot]
        name = placeholders[slot].name
        if fake.dim() != t.dim() or fake.dtype != t.dtype:
            raise CheckError(
                f"input {name} is {fake.dtype}{list(fake.shape)}, the value "
                f"{t.dtype}{list(t.shape)}"
            )
        for d, size in zip(fake.shape, t.shape, strict=True):
            static = int(d) if isinstance(d, int) else None  # never int() of a SymInt
            if static is None:
                env.setdefault(str(d), int(size))
            elif static != int(size):
                raise CheckError(
                    f"input {name} has shape {list(fake.shape)}, the value {list(t.shape)}"
                )
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
                f"input {placeholders[i].name} ({key}) is not a size of any input tensor"
            )
    return out


__all__ = [
    "Captured",
    "capture",
    "clone",
    "flat_outputs",
    "graph_inputs",
    "line_up",
    "run_compiled",
    "run_graph",
]
