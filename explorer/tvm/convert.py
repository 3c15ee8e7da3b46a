"""A TVM `IRModule` as passlens's neutral graph model, and its text views.

Every Relax function becomes a graph: its parameters (inputs; weights passed as parameters
after `num_input`), one node per binding of its blocks (dataflow or not, the branches of an
`R.If` included) and its return. A node's op is the Relax op (`R.nn.conv2d`), the callee
(`@main_inner`), or for `R.call_tir` the kernel (`R.call_tir(fused_matmul_add)`). Types
are the struct info's, in passlens's notation (`f32[s77, 4]`: symbolic dims as text).
Tensor constants are weights (`graph.params`, with their data, so the parameter analysis
compares content); 0-d constants are literals. Called by `explorer.tvm.module.TVMModule`
on first use; imports tvm.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from compiler.ir import Constant, DType
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param, Signature

if TYPE_CHECKING:
    from explorer.tvm.module import TVMState

_DPS_OPS = {"relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad"}


# ===== types ===================================================================================


def _dtype(prim: Any) -> str:
    name = str(prim)
    try:
        return DType.of(name).short
    except (TypeError, ValueError, KeyError):
        return name


def _itemsize(prim: Any) -> int:
    name = str(prim)
    try:
        return DType.of(name).itemsize
    except (TypeError, ValueError, KeyError, AttributeError):
        m = re.search(r"(\d+)(x\d+)?$", name)
        if not m:
            return 0
        lanes = int(m.group(2)[1:]) if m.group(2) else 1
        return max(1, int(m.group(1)) // 8) * lanes


def _dim(d: Any) -> int | str:
    value = getattr(d, "value", None)
    if isinstance(value, int) and type(d).__name__ == "IntImm":
        return value
    return str(d)


def tensor_shape(ty: Any) -> tuple | None:
    """The shape of a tensor type (dims as ints, symbolic ones as text), or None."""
    shape = getattr(ty, "shape", None)
    values = getattr(shape, "values", None)
    if values is None:
        ndim = getattr(ty, "ndim", -1)
        return None if ndim is None or ndim < 0 else tuple("?" for _ in range(ndim))
    return tuple(_dim(d) for d in values)


def type_text(ty: Any) -> str:
    """A TVM type in passlens's notation: `f32[2, s77]`, `(f32[2], i64[3])`, `shape[2]`."""
    from tvm import relax

    if ty is None:
        return "?"
    if isinstance(ty, relax.TensorType):
        shape = tensor_shape(ty)
        dims = "*" if shape is None else ", ".join(str(d) for d in shape)
        return f"{_dtype(ty.dtype) if ty.dtype is not None else '?'}[{dims}]"
    fields = getattr(ty, "fields", None)
    if fields is not None and type(ty).__name__ == "TupleType":
        inner = [type_text(f) for f in fields]
        return f"({inner[0]},)" if len(inner) == 1 else f"({', '.join(inner)})"
    if isinstance(ty, relax.ShapeType):
        values = getattr(ty, "values", None)
        if values is not None:
            return f"shape[{', '.join(str(_dim(v)) for v in values)}]"
        return f"shape[ndim={ty.ndim}]"
    text = str(ty)
    return text if len(text) <= 120 else text[:119] + "…"


def _shape_dtype(ty: Any) -> tuple[tuple | None, str | None]:
    from tvm import relax

    if isinstance(ty, relax.TensorType):
        return tensor_shape(ty), _dtype(ty.dtype) if ty.dtype is not None else None
    return None, None


def _static_nbytes(ty: Any) -> int:
    """Bytes of a value of type `ty` when its shape is static (a tuple's: its fields')."""
    fields = getattr(ty, "fields", None)
    if fields is not None and type(ty).__name__ == "TupleType":
        return sum(_static_nbytes(f) for f in fields)
    shape, _ = _shape_dtype(ty)
    if shape is None or not all(isinstance(d, int) for d in shape):
        return 0
    return math.prod(shape) * _itemsize(ty.dtype)


def attrs_dict(attrs: Any) -> dict[str, str]:
    """A TVM attrs object as `{key: value text}` (parsed from its printed form)."""
    if attrs is None:
        return {}
    text = str(attrs)
    open_at, close_at = text.find("("), text.rfind(")")
    if open_at < 0 or close_at < open_at:
        return {"attrs": text}
    out: dict[str, str] = {}
    depth, start, body = 0, 0, text[open_at + 1 : close_at]
    parts = []
    for i, ch in enumerate(body):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    for part in parts:
        key, eq, value = part.strip().partition("=")
        if not eq:
            if key:
                out.setdefault("attrs", key)
            continue
        out[key.strip()] = value.strip()
    return out


def _numpy(tensor: Any) -> Any:
    try:
        return tensor.numpy()
    except Exception:  # a dtype numpy cannot hold
        return None


def _short(value: Any, limit: int = 200) -> str:
    text = str(value)
    text = text.split("\n# Metadata omitted")[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ===== the graph model ==========================================================================


def graph_of_tvm(module: Any, state: TVMState) -> GraphModel:
    """The graph model of a TVM IRModule's Relax functions (node ids `function/name`)."""
    from tvm import relax

    g = GraphModel()
    funcs = [(gv.name_hint, f) for gv, f in module.functions_items()]
    names = {name for name, _ in funcs}
    outputs = {
        name: _output_provenance(fn, state) for name, fn in funcs if isinstance(fn, relax.Function)
    }
    for fname, fn in funcs:
        if isinstance(fn, relax.Function):
            derived = f"{fname}_transform_params" in names
            _Builder(g, state, fname, fn, not derived, outputs).build()
    return g


def _output_provenance(fn: Any, state: TVMState) -> Any:
    """The provenance of a function's last binding that has one (what a call of it computes:
    a function FuseOps made from a layer's ops gets that layer), or None."""
    from tvm import relax

    if not isinstance(fn.body, relax.SeqExpr):
        return None
    for block in reversed(list(fn.body.blocks)):
        for binding in reversed(list(block.bindings)):
            prov = state.var_prov.get(binding.var.id_)
            if prov is not None:
                return prov
    return None


class _Builder:
    """Adds one Relax function to a graph model (`outputs`: each Relax function's output
    provenance, given to the bindings that call it and have none of their own)."""

    def __init__(
        self,
        g: GraphModel,
        state: TVMState,
        fname: str,
        fn: Any,
        weights_are_stored: bool,
        outputs: dict | None = None,
    ):
        self.g, self.state, self.fname, self.fn = g, state, fname, fn
        self.stored = weights_are_stored
        self.outputs = outputs or {}
        self.ids: dict[int, str] = {}  # TVM var id -> node id
        self.used: set[str] = set()
        self.literals = 0

    # ----- ids --------------------------------------------------------------------------------
    def fresh(self, name: str) -> str:
        base = f"{self.fname}/{name or 'v'}"
        nid, k = base, 1
        while nid in self.g.nodes or nid in self.used:
            nid = f"{base}_{k}"
            k += 1
        self.used.add(nid)
        return nid

    def build(self) -> None:
        from tvm import relax

        fn, g = self.fn, self.g
        attrs = dict(fn.attrs) if fn.attrs is not None else {}
        num_input = attrs.get("num_input")
        num_input = int(num_input) if num_input is not None else None
        values = attrs.get("params")
        g.signatures[self.fname] = Signature(
            self.fname,
            [(str(p.name), type_text(p.ty)) for p in fn.params],
            type_text(getattr(fn, "ret_ty", None)),
            num_input,
            {str(k): _short(v) for k, v in attrs.items() if k != "params"},
        )
        n_in = len(fn.params) if num_input is None else num_input
        for i, p in enumerate(fn.params):
            nid = self.fresh(str(p.name))
            shape, dtype = _shape_dtype(p.ty)
            kind = "input" if i < n_in else "param"
            nbytes = _static_nbytes(p.ty)
            obj = self.state.ref(p, None)
            if kind == "param" and values is not None and len(values) == len(fn.params) - n_in:
                tensor = values[i - n_in]  # the weight's data, in main's "params" attribute
                const, _ = self.state.constant(tensor, _numpy(tensor))
                obj = const if isinstance(const, Constant) else obj
            prov = getattr(obj, "prov", None)
            g.nodes[nid] = GraphNode(
                nid,
                kind,
                kind,
                str(p.name),
                self.fname,
                type_text(p.ty),
                shape,
                dtype,
                {},
                dict(prov.items()) if prov is not None else {},
                (prov.module_path or "") if prov is not None else "",
                nbytes,
                obj,
            )
            g.by_object[id(obj)] = nid
            self.ids[p.id_] = nid
            if kind == "param" and self.stored:
                g.params[f"@{self.fname}/{p.name}"] = Param(
                    str(p.name), shape or (), dtype or "", nbytes, nid, obj
                )
        body = fn.body
        result = self.seq(body) if isinstance(body, relax.SeqExpr) else body
        out_id = f"{self.fname}/return"
        ty = getattr(fn, "ret_ty", None) or getattr(result, "ty", None)
        shape, dtype = _shape_dtype(ty)
        g.nodes[out_id] = GraphNode(
            out_id, "output", "return", "return", self.fname, type_text(ty), shape, dtype
        )
        self.edges(out_id, [result], {})

    def seq(self, seq: Any) -> Any:
        """Add the bindings of a SeqExpr; returns its result expression."""
        for block in seq.blocks:
            for binding in block.bindings:
                self.binding(binding)
        return seq.body

    # ----- leaves ------------------------------------------------------------------------------
    def leaf(self, expr: Any) -> str | None:
        """The node id of a value read by a binding (a variable or a constant), else None."""
        from tvm import relax

        if isinstance(expr, relax.Var) or type(expr).__name__ in ("Var", "DataflowVar"):
            return self.ids.get(expr.id_)
        if type(expr).__name__ == "GenericConst":
            return self.constant(expr)
        return None

    def constant(self, c: Any) -> str | None:
        g = self.g
        if not hasattr(getattr(c, "value", None), "numpy"):
            return None  # not a tensor: the caller shows it as an attribute
        const, name = self.state.constant(c)
        if id(const) in g.by_object:
            return g.by_object[id(const)]
        shape, dtype = _shape_dtype(c.ty)
        data = getattr(const, "data", None)
        if data is not None:
            shape, dtype = shape or tuple(data.shape), dtype or str(data.dtype)
            nbytes = int(data.nbytes)
        else:  # a dtype numpy cannot hold: its bytes from the type
            nbytes = _static_nbytes(c.ty)
        weight = bool(shape)
        if weight:
            nid, k = f"${name}", 2
            while nid in g.nodes:
                nid = f"${name}#{k}"
                k += 1
            key = nid[1:]
        else:
            nid = f"{self.fname}/const{self.literals}"
            self.literals += 1
            while nid in g.nodes:
                nid = f"{self.fname}/const{self.literals}"
                self.literals += 1
        prov = const.prov
        g.nodes[nid] = GraphNode(
            nid,
            "weight" if weight else "const",
            "constant",
            key if weight else f"const {type_text(c.ty)}",
            "" if weight else self.fname,
            type_text(c.ty),
            shape,
            dtype,
            {},
            dict(prov.items()),
            prov.module_path or "",
            nbytes,
            const,
        )
        g.by_object[id(const)] = nid
        if weight:
            g.params[key] = Param(key, tuple(shape), dtype or "", nbytes, nid, const)
        return nid

    def edges(self, nid: str, inputs: list, attrs: dict, start: int = 0) -> None:
        """Edges from each input that is a graph value; any other argument (a shape, a
        string, a number) becomes an attribute `arg<i>`."""
        from tvm import relax

        index = start
        for i, a in enumerate(inputs):
            if isinstance(a, relax.Tuple) or type(a).__name__ == "Tuple":
                for f in a.fields:
                    src = self.leaf(f)
                    if src is not None:
                        self.g.edges.append(GraphEdge(src, nid, index, type_text(f.ty)))
                        index += 1
                continue
            src = self.leaf(a)
            if src is not None:
                self.g.edges.append(GraphEdge(src, nid, index, type_text(getattr(a, "ty", None))))
                index += 1
            elif a is not None:
                attrs[f"arg{i}"] = _short(a)

    # ----- bindings ----------------------------------------------------------------------------
    def binding(self, b: Any) -> None:
        from tvm import relax

        var, value = b.var, b.value
        attrs: dict[str, str] = {}
        inputs: list = []
        kind, op = "op", type(value).__name__
        if isinstance(b, relax.MatchCast):
            op, inputs = "R.match_cast", [value]
            attrs["type"] = type_text(b.ty)
        elif isinstance(value, relax.If) or type(value).__name__ == "If":
            kind, op = "if", "if"
            then = self._branch(value.true_branch)
            other = self._branch(value.false_branch)
            inputs = [value.cond, then, other]
        elif type(value).__name__ == "Call":
            kind, op, inputs, attrs = self.call(value)
        elif type(value).__name__ == "Tuple":
            kind, op, inputs = "tuple", "tuple", list(value.fields)
        elif type(value).__name__ == "TupleGetItem":
            kind, op, inputs = "item", f"[{value.index}]", [value.tuple_value]
        elif self.leaf(value) is not None:
            op, inputs = "bind", [value]
        elif isinstance(value, relax.SeqExpr):
            op, inputs = "seq", [self.seq(value)]
        elif isinstance(value, relax.Function):
            op = "R.function"
            attrs["params"] = ", ".join(str(p.name) for p in value.params)
        else:
            op = f"R.{type(value).__name__}"
            attrs["value"] = _short(value)
        nid = self.fresh(str(var.name))
        shape, dtype = _shape_dtype(var.ty)
        called = self.outputs.get(op[1:]) if kind == "call" and op.startswith("@") else None
        if called is not None and var.id_ not in self.state.var_prov:
            obj = self.state.ref(var, value, called)
        else:
            obj = self.state.ref(var, value)
        prov = obj.prov
        node = GraphNode(
            nid,
            kind,
            op,
            str(var.name),
            self.fname,
            type_text(var.ty),
            shape,
            dtype,
            attrs,
            dict(prov.items()),
            prov.module_path or "",
            0,
            obj,
        )
        self.g.nodes[nid] = node
        self.g.by_object[id(obj)] = nid
        self.edges(nid, inputs, attrs)
        self.ids[var.id_] = nid

    def _branch(self, expr: Any) -> Any:
        from tvm import relax

        return self.seq(expr) if isinstance(expr, relax.SeqExpr) else expr

    def call(self, call: Any) -> tuple[str, str, list, dict]:
        op = call.op
        attrs = attrs_dict(call.attrs)
        args = list(call.args)
        kind = "op"
        tname = type(op).__name__
        if tname == "Op":
            name = str(op.name)
            if name in _DPS_OPS and args:
                callee = args[0]
                kernel = getattr(callee, "name_hint", None) or getattr(callee, "global_symbol", "")
                attrs["kernel"] = str(kernel)
                rest = args[2:]
                for i, extra in enumerate(rest):
                    attrs[f"arg{i + 2}"] = _short(extra)
                return kind, f"R.{name[6:]}({kernel})", args[1:2], attrs
            if name == "relax.call_dps_packed" and args:
                attrs["func"] = str(getattr(args[0], "global_symbol", args[0]))
                return kind, f"R.call_dps_packed({attrs['func']})", args[1:2], attrs
            if name.startswith("relax."):
                name = "R." + name[6:]
            return kind, name, args, attrs
        if tname == "GlobalVar":
            return "call", f"@{op.name_hint}", args, attrs
        if tname == "ExternFunc":
            return kind, str(op.global_symbol), args, attrs
        if tname in ("Var", "DataflowVar"):
            return "call", f"@{op.name}", args, attrs
        return kind, tname, args, attrs


# ===== text ======================================================================================


def texts_of_tvm(module: Any) -> tuple[str, dict[str, str], str | None]:
    """The IR text (the Relax functions' TVMScript; the whole module's when it has none),
    the backend views (`"loop IR"`: the TIR PrimFuncs) and the backend stage."""
    import tvm
    from tvm import relax

    items = list(module.functions_items())
    graph = {gv: f for gv, f in items if isinstance(f, relax.Function)}
    kernels = {gv: f for gv, f in items if type(f).__name__ == "PrimFunc"}
    if not graph or not kernels:
        return _script(module), {}, None
    relax_text = _script(tvm.IRModule(graph))
    loop_text = _script(tvm.IRModule(kernels))
    return relax_text, {"loop IR": loop_text}, "loops"


def _script(module: Any) -> str:
    try:
        return module.script(show_meta=False)
    except Exception as e:  # a module TVMScript cannot print: say so rather than fail the view
        return f"# TVMScript could not print this module: {type(e).__name__}: {e}\n"


__all__ = ["attrs_dict", "graph_of_tvm", "tensor_shape", "texts_of_tvm", "type_text"]
