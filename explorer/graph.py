"""A neutral graph model of one step: nodes, edges, types, provenance, parameters and function
signatures. Diffs and widgets work on it the same way whatever the step came from (the IR,
an FX graph, an ONNX graph)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


@dataclass
class GraphNode:
    """One node: ``kind`` is input, weight, param (a weight passed as input), op, call, tuple,
    item, if or output; ``obj`` is the IR object it shows (None for source graphs);
    ``opaque`` for an opaque op (no converter): its ``target`` and ``runner`` (torch or
    onnxruntime), else empty."""

    id: str
    kind: str
    op: str
    label: str
    function: str
    type: str
    shape: tuple | None = None
    dtype: str | None = None
    attrs: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    group: str = ""  # the source module path, for clustering
    nbytes: int = 0
    obj: Any = None
    opaque: dict = field(default_factory=dict)


@dataclass
class GraphEdge:
    """Value flowing from ``src`` into input ``index`` of ``dst``, with its type."""

    src: str
    dst: str
    index: int
    type: str


@dataclass
class Param:
    """A weight: a named constant, or a weight parameter of a function."""

    name: str
    shape: tuple
    dtype: str
    nbytes: int
    node_id: str
    obj: Any = None


@dataclass
class Signature:
    """A function's parameters and result, as text."""

    name: str
    params: list[tuple[str, str]]
    result: str
    num_input: int | None
    attrs: dict

    def __str__(self) -> str:
        ps = ", ".join(f"%{n}: {t}" for n, t in self.params)
        return f"@{self.name}({ps}) -> {self.result}"


@dataclass
class GraphModel:
    """Nodes, edges, parameters and signatures of one step."""

    nodes: dict[str, GraphNode] = field(default_factory=dict)
    edges: list[GraphEdge] = field(default_factory=list)
    params: dict[str, Param] = field(default_factory=dict)
    signatures: dict[str, Signature] = field(default_factory=dict)
    by_object: dict[int, str] = field(default_factory=dict)

    @property
    def param_bytes(self) -> int:
        """Bytes of every weight."""
        return sum(p.nbytes for p in self.params.values())

    def op_counts(self) -> dict[str, int]:
        """How many nodes of each op (an ``If`` counts as op ``if``, so folding one shows)."""
        counts: dict[str, int] = {}
        for n in self.nodes.values():
            if n.kind in ("op", "call", "if"):
                counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def node_of(self, obj: Any) -> GraphNode | None:
        """The graph node showing an IR object, if any."""
        key = self.by_object.get(id(obj))
        return self.nodes.get(key) if key else None


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
    return {k: v for k, v in prov.items()} if prov is not None else {}


def graph_of_module(module: Module) -> GraphModel:
    """The graph model of an IR module (every function; node ids are ``function/name``)."""
    g = GraphModel()
    # After lift-transform-params, @main's weight parameters are computed by
    # @main_transform_params from the stored weights: count only the stored ones.
    derived = {fn.attrs.get("transform_params_of") for fn in module.functions.values()}
    for fname, fn in module.functions.items():
        _add_function(g, fname, fn, weights_are_stored=fname not in derived)
    return g


def module_param_bytes(module: Module) -> int:
    """``graph_of_module(module).param_bytes`` without building the graph (the check's
    param-bloat detector asks it of every step: building the graphs of a 16-layer decoder's
    steps took longer than running it). The same weights are counted: named constants read
    by a node or returned, by name, and the weight parameters of functions whose weights
    are stored."""
    derived = {fn.attrs.get("transform_params_of") for fn in module.functions.values()}
    params: dict[str, int] = {}

    def see(e: Expr) -> None:
        if isinstance(e, Constant) and e.name:
            params[e.name] = e.nbytes

    for fname, fn in module.functions.items():
        for node in fn.iter_nodes():
            if isinstance(node, (Call, FuncCall)):
                inputs = node.args
            elif isinstance(node, Tuple):
                inputs = node.fields
            elif isinstance(node, TupleGetItem):
                inputs = (node.tuple_value,)
            elif isinstance(node, If):
                inputs = (node.cond, node.then_branch.result, node.else_branch.result)
            else:
                continue
            for a in inputs:
                see(a)
        see(fn.output)
        if fname not in derived:
            for p in fn.params[fn.num_input :]:
                n = p.ty.nbytes if isinstance(p.ty, TensorType) and p.ty.nbytes else 0
                params[f"@{fname}/{p.name}"] = n
    return sum(params.values())


def _add_function(g: GraphModel, fname: str, fn: Function, weights_are_stored: bool = True) -> None:
    printer = Printer()  # only for unique names within the function
    g.signatures[fname] = Signature(
        fname,
        [(printer.name_of(p), str(p.ty)) for p in fn.params],
        str(fn.ret_type),
        fn.attrs.get("num_input"),
        {k: v for k, v in fn.attrs.items()},
    )

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
            g.params[c.name] = Param(c.name, c.data.shape, str(c.ty.dtype.short), c.nbytes, nid, c)
        return nid

    num_input = fn.num_input
    for i, p in enumerate(fn.params):
        nid = f"{fname}/{printer.name_of(p)}"
        shape, dtype = _shape_dtype(p.ty)
        kind = "input" if i < num_input else "param"
        nbytes = p.ty.nbytes if isinstance(p.ty, TensorType) and p.ty.nbytes else 0
        g.nodes[nid] = GraphNode(
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
        g.by_object[id(p)] = nid
        if kind == "param" and weights_are_stored:
            g.params[f"@{fname}/{p.name}"] = Param(p.name, shape or (), dtype or "", nbytes, nid, p)

    def add(node: Expr) -> None:
        nid = node_id(node)
        shape, dtype = _shape_dtype(node.ty)
        if isinstance(node, Call):
            kind, op = "op", node.op
            attrs = {k: format_attr(v) for k, v in node.attrs.items()}
            inputs = node.args
        elif isinstance(node, Loop):
            kind, op, inputs = "call", f"loop @{node.func}", node.args
            attrs = {"carried": str(node.num_carried), "scanned": str(node.num_scan)}
        elif isinstance(node, FuncCall):
            kind, op, attrs, inputs = "call", f"@{node.func}", {}, node.args
        elif isinstance(node, Tuple):
            kind, op, attrs, inputs = "tuple", "tuple", {}, node.fields
        elif isinstance(node, TupleGetItem):
            kind, op, attrs, inputs = "item", f"[{node.index}]", {}, (node.tuple_value,)
        elif isinstance(node, If):
            kind, op, attrs = "if", "if", {}
            inputs = (node.cond, node.then_branch.result, node.else_branch.result)
        else:
            return
        g.nodes[nid] = GraphNode(
            nid,
            kind,
            op,
            printer.name_of(node),
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
            from compiler.ops import OPAQUE_RUNNERS as RUNNERS

            g.nodes[nid].opaque = {
                "target": str(node.attrs["target"]),
                "runner": RUNNERS.get(node.attrs["framework"], "?"),
            }
        g.by_object[id(node)] = nid
        for i, a in enumerate(inputs):
            g.edges.append(GraphEdge(node_id(a), nid, i, str(a.ty)))

    for node in fn.iter_nodes():
        add(node)
    out_id = f"{fname}/return"
    shape, dtype = _shape_dtype(fn.output.ty)
    g.nodes[out_id] = GraphNode(
        out_id, "output", "return", "return", fname, str(fn.output.ty), shape, dtype
    )
    g.edges.append(GraphEdge(node_id(fn.output), out_id, 0, str(fn.output.ty)))
