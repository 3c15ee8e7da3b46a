"""The references a check compares with: torch eager (with per-node FX values), onnxruntime,
or the imported step itself, and the per-node errors against them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from compiler.ir import Expr, Function, children
from explorer.check.numbers import _compare, _to_numpy
from explorer.check.report import CheckError, NodeError


def _where(node: Expr) -> str:
    p = node.prov
    head = p.module_path or p.source_node or p.source_op or (f"%{node.name}" if node.name else "")
    extra = p.source_node if p.source_node and p.source_node != head else None
    if not head:
        head = f"a {getattr(node, 'op', type(node).__name__)} node"
    return f"{head} ({extra})" if extra else head


def _prov_key(node: Expr) -> tuple:
    p = node.prov
    return (p.framework, p.module_path, p.source_op, p.source_node, p.location, node.name)


def _roots(fn: Function, key: Callable[[Expr], Any]) -> list[Expr]:
    """Bound nodes that are the last of their provenance group (no reader of the node has the
    same key): the node standing for a source op's result, not an intermediate a frontend
    or a pass made for it (the matmul of a decomposed linear)."""
    read_by: dict[int, set] = {}
    nodes = [n for n in fn.iter_nodes()]
    for n in nodes:
        k = key(n)
        for c in children(n):
            read_by.setdefault(id(c), set()).add(k)
    return [n for n in nodes if key(n) is not None and key(n) not in read_by.get(id(n), ())]


def _node_reference(main: Function, values: dict) -> dict:
    """For an IR reference: the values of the imported main's group roots, by provenance."""
    ref: dict = {}
    for n in _roots(main, _prov_key):
        v = values.get(n)
        if isinstance(v, np.ndarray) and not n.prov.is_empty:
            ref.setdefault(_prov_key(n), []).append(v)
    return ref


def _root_key(fx_values: dict) -> Callable[[Expr], Any]:
    """What groups nodes into one source op: the FX node (torch), else the provenance."""
    return (lambda n: n.prov.source_node) if fx_values else _prov_key


def _reference_of(
    node: Expr, value: np.ndarray, fx_values: dict, node_ref: dict
) -> np.ndarray | None:
    """The reference value ``node`` is matched with (of the same shape as ``value``): the FX
    node named by its provenance, or the one imported node with the same provenance."""
    if fx_values:
        ref = fx_values.get(node.prov.source_node)
    elif node.prov.is_empty:
        return None
    else:
        same = [r for r in node_ref.get(_prov_key(node), ()) if r.shape == value.shape]
        ref = same[0] if len(same) == 1 else None
    return ref if ref is not None and ref.shape == value.shape else None


def _node_errors(
    main: Function, values: dict, fx_values: dict, node_ref: dict, rtol: float, atol: float
) -> list[NodeError]:
    """Nodes of ``main`` (in binding order) whose value differs from the reference value they
    are matched with: the FX node named by their provenance, or the imported node with the
    same provenance."""
    key = _root_key(fx_values)
    errors = []
    for n in _roots(main, key):
        v = values.get(n)
        if not isinstance(v, np.ndarray):
            continue
        ref = _reference_of(n, v, fx_values, node_ref)
        if ref is None or ref is v:
            continue
        a, r, beyond = _compare(v, ref, rtol, atol)
        if beyond:
            errors.append(NodeError(n, _where(n), a, r, tuple(v.shape)))
    return errors


# ----- findings ----------------------------------------------------------------------------------


def _torch_reference(source: dict, inputs: list) -> tuple[tuple, dict, str]:
    """Torch eager outputs of the source model, every FX node's value (by node name) from
    running the exported graph with the same inputs, and how the model was run."""
    import torch
    from torch.utils._pytree import tree_leaves

    model, ep = source["model"], source.get("exported")
    tensors = [x if isinstance(x, torch.Tensor) else torch.from_numpy(np.array(x)) for x in inputs]
    exported = isinstance(model, torch.export.ExportedProgram)
    fn = model.module() if exported else model
    training = not exported and getattr(fn, "training", False)  # exported: mode is fixed
    try:
        if training:
            fn.eval()
        with torch.no_grad():
            out = fn(*tensors)
    finally:
        if training:
            fn.train(True)
    outputs = tuple(_to_numpy(t) for t in tree_leaves(out) if isinstance(t, torch.Tensor))
    fx_values: dict[str, np.ndarray] = {}
    if ep is None and isinstance(model, torch.export.ExportedProgram):
        ep = model
    if ep is not None:
        try:
            fx_values = _fx_values(ep, tensors)
        except Exception:  # per-node values are a bonus: outputs still compare
            fx_values = {}
    how = "ExportedProgram.module(), no_grad" if exported else "eval mode, no_grad"
    return outputs, fx_values, how


def _fx_values(ep, tensors: list) -> dict[str, np.ndarray]:
    import torch
    from torch.utils._pytree import tree_leaves

    state, constants = ep.state_dict, dict(getattr(ep, "constants", {}) or {})
    user = iter(tree_leaves(tensors))
    args = []
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            args.append(next(user))
        else:
            target = spec.target
            args.append(state[target] if target in state else constants[target])
    values: dict[str, np.ndarray] = {}

    class Capture(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if n.op == "call_function" and isinstance(out, torch.Tensor):
                values[n.name] = _to_numpy(out)
            return out

    with torch.no_grad():
        Capture(ep.graph_module).run(*args)
    return values


def _onnx_reference(source: dict, runtime: list) -> tuple:
    import onnxruntime as ort

    proto = source["model"]
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    if len(names) != len(runtime):
        raise CheckError(f"the ONNX model takes {len(names)} input(s), {len(runtime)} given")
    return tuple(np.asarray(o) for o in sess.run(None, dict(zip(names, runtime, strict=True))))
