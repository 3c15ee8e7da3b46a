"""passlens's IR as the neutral graph model (`explorer.graph`): every function of a
module, node ids `function/name`, weights and weight parameters, signatures."""

from __future__ import annotations

from compiler.ir import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Printer,
    TensorType,
    Tuple,
    TupleGetItem,
    Type,
    format_attr,
)
from explorer.graph import (
    GraphEdge,
    GraphModel,
    GraphNode,
    Param,
    Signature,
    collector_paused,
)


def _shape_dtype(ty: Type) -> tuple[tuple | None, str | None]:
    if isinstance(ty, TensorType):
        shape = (
            None
            if ty.shape is None
            else tuple(str(d) if not isinstance(d, int) else d for d in ty.shape)
        )
        return shape, ty.dtype.short
    return None, None


def _prov_dict(prov) -> dict:
    return dict(prov.items()) if prov is not None else {}


def graph_of_module(module: Module) -> GraphModel:
    """The graph model of an IR module (every function; node ids are `function/name`)."""
    with collector_paused():
        return _graph_of_module(module, light=False)


def module_size(module: Module) -> tuple[int, int]:
    """`(nodes, parameter bytes)` of `graph_of_module(module)` without making it: the same
    walk and the same node ids, but no node's type, attributes or provenance (what a timeline
    lists for steps not shown; a fraction of the cost)."""
    g = _graph_of_module(module, light=True)
    return len(g.nodes), g.param_bytes


def module_objects(module: Module) -> dict[int, str]:
    """`graph_of_module(module).by_object` (id of an IR object -> its node id) from the same
    light walk as `module_size`: which node a rewrite record names is which object,
    without making the graph model."""
    with collector_paused():
        return _graph_of_module(module, light=True).by_object


class _Counted:
    """What a light walk keeps of a node: the function it belongs to (node ids depend on it)."""

    __slots__ = ("function",)

    def __init__(self, function: str):
        self.function = function


_NAMED = _Counted("")  # a named constant (a weight) belongs to no function


def _graph_of_module(module: Module, light: bool) -> GraphModel:
    g = GraphModel()
    # After lift-transform-params, @main's weight parameters are computed by
    # @main_transform_params from the stored weights: count only the stored ones.
    derived = {fn.attrs.get("transform_params_of") for fn in module.functions.values()}
    for fname, fn in module.functions.items():
        _add_function(g, fname, fn, weights_are_stored=fname not in derived, light=light)
    return g


def _inputs_of(node: Expr) -> tuple | None:
    """The inputs of a node the graph shows, in edge order (None: not a node of the graph)."""
    if isinstance(node, (Call, Loop, FuncCall)):
        return node.args
    if isinstance(node, Tuple):
        return node.fields
    if isinstance(node, TupleGetItem):
        return (node.tuple_value,)
    if isinstance(node, If):
        return (node.cond, node.then_branch.result, node.else_branch.result)
    return None


def _op_node(node: Expr, nid: str, fname: str, label: str) -> GraphNode:
    """The graph node of a call, loop, function call, tuple, item or if."""
    if isinstance(node, Call):
        kind, op = "op", node.op
        attrs = {k: format_attr(v) for k, v in node.attrs.items()}
    elif isinstance(node, Loop):
        kind, op = "call", f"loop @{node.func}"
        attrs = {"carried": str(node.num_carried), "scanned": str(node.num_scan)}
    elif isinstance(node, FuncCall):
        kind, op, attrs = "call", f"@{node.func}", {}
    elif isinstance(node, Tuple):
        kind, op, attrs = "tuple", "tuple", {}
    elif isinstance(node, TupleGetItem):
        kind, op, attrs = "item", f"[{node.index}]", {}
    else:
        kind, op, attrs = "if", "if", {}
    shape, dtype = _shape_dtype(node.ty)
    out = GraphNode(
        nid,
        kind,
        op,
        label,
        fname,
        str(node.ty),
        shape,
        dtype,
        attrs,
        _prov_dict(node.prov),
        node.prov.module_path or "",
        0,
        node,
    )
    if isinstance(node, Call) and node.op == "opaque":
        from compiler.opaque import RUNNERS

        out.opaque = {
            "target": str(node.attrs["target"]),
            "runner": RUNNERS.get(node.attrs["framework"], "?"),
        }
    return out


def _add_function(
    g: GraphModel, fname: str, fn: Function, weights_are_stored: bool = True, light: bool = False
) -> None:
    """Add the nodes and edges of `fn`; `light`: only the nodes' ids (each a
    `_Counted`) and the weights, no edges (`module_size`)."""
    printer = Printer()  # only for unique names within the function
    counted = _Counted(fname)
    if not light:
        g.signatures[fname] = Signature(
            fname,
            [(printer.name_of(p), str(p.ty)) for p in fn.params],
            str(fn.ret_type),
            fn.attrs.get("num_input"),
            {k: v for k, v in fn.attrs.items()},
        )
    else:  # the names made in the same order as a full walk's
        for p in fn.params:
            printer.name_of(p)

    def node_id(obj: Expr) -> str:
        key = id(obj)
        if key in g.by_object and g.nodes[g.by_object[key]].function in (fname, ""):
            return g.by_object[key]
        if isinstance(obj, Constant):
            return _constant(obj)
        return f"{fname}/{printer.name_of(obj)}"

    def _constant(c: Constant) -> str:
        key = id(c)
        if key in g.by_object:
            return g.by_object[key]
        nid = f"${c.name}" if c.name else f"{fname}/const{len(g.nodes)}"
        if light:
            g.nodes[nid] = _NAMED if c.name else counted
        else:
            shape, dtype = _shape_dtype(c.ty)
            label = c.name or f"const {c.ty}"
            g.nodes[nid] = GraphNode(
                nid,
                "weight" if c.name else "const",
                "constant",
                label,
                "" if c.name else fname,
                str(c.ty),
                shape,
                dtype,
                {},
                _prov_dict(c.prov),
                c.prov.module_path or "",
                c.nbytes,
                c,
            )
        g.by_object[key] = nid
        if c.name:
            g.params[c.name] = (
                Param(c.name, (), "", c.nbytes, nid)
                if light
                else Param(c.name, c.data.shape, str(c.ty.dtype.short), c.nbytes, nid, c)
            )
        return nid

    num_input = fn.num_input
    for i, p in enumerate(fn.params):
        nid = f"{fname}/{printer.name_of(p)}"
        shape, dtype = _shape_dtype(p.ty)
        kind = "input" if i < num_input else "param"
        nbytes = p.ty.nbytes if isinstance(p.ty, TensorType) and p.ty.nbytes else 0
        g.nodes[nid] = (
            counted
            if light
            else GraphNode(
                nid,
                kind,
                kind,
                p.name,
                fname,
                str(p.ty),
                shape,
                dtype,
                {},
                _prov_dict(p.prov),
                p.prov.module_path or "",
                nbytes,
                p,
            )
        )
        g.by_object[id(p)] = nid
        if kind == "param" and weights_are_stored:
            g.params[f"@{fname}/{p.name}"] = Param(p.name, shape or (), dtype or "", nbytes, nid, p)

    for node in fn.iter_nodes():
        inputs = _inputs_of(node)
        nid = node_id(node)
        if inputs is None:
            continue
        g.nodes[nid] = counted if light else _op_node(node, nid, fname, printer.name_of(node))
        g.by_object[id(node)] = nid
        for i, a in enumerate(inputs):
            src = node_id(a)
            if not light:
                g.edges.append(GraphEdge(src, nid, i, str(a.ty)))
    out_id = f"{fname}/return"
    if light:
        g.nodes[out_id] = counted
        node_id(fn.output)
        return
    shape, dtype = _shape_dtype(fn.output.ty)
    g.nodes[out_id] = GraphNode(
        out_id, "output", "return", "return", fname, str(fn.output.ty), shape, dtype
    )
    g.edges.append(GraphEdge(node_id(fn.output), out_id, 0, str(fn.output.ty)))
