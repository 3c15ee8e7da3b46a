"""The value of every binding of `main` of a TVM step, for the node a `diverged` finding
names (TVM's VM gives a function's outputs only).

`main` is rebuilt to return, after its own result, every tensor its top-level bindings bind
(`ToNonDataflow` first, so a dataflow block's values may leave it); the module is built with
`relax.build` and run in the VM with the step's calling convention. Only a step the check
found diverged (and the imported step, the per-node reference) is run so, once: a step that
cannot be (callbacks, a binding the VM cannot return) gets no node errors, never a crash.

A binding of the step is matched with the imported step's binding of the same variable (TVM
keeps a variable a pass rewrites in place: `lv3 = R.nn.relu(...)` where the import had
`lv3 = R.nn.gelu(...)`), else with the last binding of the same source node (the FX node a
binding came from; the last one is that node's result, not an intermediate the frontend made
for it). Matched bindings of the same shape and dtype are compared; the first beyond the
tolerance, in `main`'s order, is the node the finding names.
"""

from __future__ import annotations

from typing import Any

from explorer.check.numbers import compare, to_numpy
from explorer.check.report import NodeError


class BindingValues:
    """The values of one module's `main` bindings: `refs` (the TVMRef of each binding,
    in order), `values` (the value of each, by position: None where not returned)."""

    def __init__(self, refs: list, values: list, var_ids: list, nodes: list):
        self.refs = refs
        self.values = values
        self.var_ids = var_ids
        self.nodes = nodes  # the source node of each binding's provenance ("" for none)


def exposed(ir: Any) -> tuple[Any, list]:
    """`(module whose main returns (its result, *every tensor binding), those bindings)`;
    raises for a module it cannot so rebuild."""
    import tvm
    from tvm import relax

    main = ir["main"]
    if not isinstance(main.body, relax.SeqExpr):
        raise ValueError("main's body is no sequence of bindings")
    flat = relax.transform.ToNonDataflow()(tvm.IRModule({"main": main}))["main"]
    old = [b for block in main.body.blocks for b in block.bindings]
    new = [b for block in flat.body.blocks for b in block.bindings]
    if len(old) != len(new):
        raise ValueError("ToNonDataflow changed main's bindings")
    keep = [(o, n) for o, n in zip(old, new, strict=True) if isinstance(n.var.ty, relax.TensorType)]
    body = relax.SeqExpr(flat.body.blocks, relax.Tuple([flat.body.body, *[n.var for _, n in keep]]))
    ret = relax.TupleType([flat.body.body.ty, *[n.var.ty for _, n in keep]])
    fn = relax.Function(flat.params, body, ret, flat.is_pure, flat.attrs)
    functions = {gv: (fn if gv.name_hint == "main" else f) for gv, f in ir.functions_items()}
    module = tvm.IRModule(functions, attrs=ir.attrs)
    return relax.transform.Normalize()(module), [o for o, _ in keep]


def binding_values(module: Any, vm: Any, runtime: list, weights: list) -> BindingValues | None:
    """The values of `module`'s (a step's TVMModule) `main` bindings on these inputs,
    run by `vm` (an `explorer.tvm.run.TVMRunner`); None when it cannot be run so."""
    ir, state = getattr(module, "ir", None), getattr(module, "state", None)
    if ir is None or state is None:
        return None
    try:
        mod, bindings = exposed(ir)
        out = vm.run(mod, runtime, weights)
    except Exception:  # a module that cannot return its values: no node errors
        return None
    values = list(out[1:])
    if len(values) != len(bindings):
        return None
    refs = [state.ref(b.var, b.value) for b in bindings]
    nodes = [r.prov.source_node or "" for r in refs]
    return BindingValues(refs, values, [b.var.id_ for b in bindings], nodes)


def node_errors(
    step_values: BindingValues, reference: BindingValues, graph: Any, rtol: float, atol: float
) -> list[NodeError]:
    """The step's bindings whose value differs from their matched reference binding's (see
    the module docstring), in `main`'s order; `graph` is the step's graph model."""
    by_var = {v: k for k, v in enumerate(reference.var_ids)}
    by_node = _last_of_node(reference.nodes)
    last = _last_of_node(step_values.nodes)
    errors = []
    for k, (ref, value) in enumerate(zip(step_values.refs, step_values.values, strict=True)):
        j = by_var.get(step_values.var_ids[k])
        if j is None and step_values.nodes[k] and last.get(step_values.nodes[k]) == k:
            j = by_node.get(step_values.nodes[k])
        if j is None or value is None:
            continue
        want = reference.values[j]
        got, want = to_numpy(value), to_numpy(want)
        if not hasattr(got, "shape") or not hasattr(want, "shape"):
            continue
        if got.shape != want.shape or got.dtype != want.dtype:
            continue
        max_abs, max_rel, beyond = compare(got, want, rtol, atol)
        if beyond:
            errors.append(NodeError(ref, _where(ref, graph), max_abs, max_rel, tuple(got.shape)))
    return errors


def _last_of_node(nodes: list[str]) -> dict[str, int]:
    """Each source node's last binding (its result), by position."""
    return {n: k for k, n in enumerate(nodes) if n}


def _where(ref: Any, graph: Any) -> str:
    """Where a binding came from, for a message: its layer and FX node, and its Relax name."""
    node = graph.node_of(ref) if graph is not None else None
    name = node.label if node is not None else ""
    p = ref.prov
    head = p.module_path or p.source_node or p.source_op or (f"%{name}" if name else "a binding")
    extra = [x for x in (p.source_node if p.source_node != head else None,) if x]
    if name and f"%{name}" != head:
        extra.append(f"%{name}")
    return f"{head} ({', '.join(extra)})" if extra else head


__all__ = ["BindingValues", "binding_values", "exposed", "node_errors"]
