"""An MLIR module (one dump of iree-compile's stream, or the torch-dialect import) as
passlens's neutral graph model, parsed with `iree.compiler.ir` (every IREE dialect, the
torch dialect included, is registered there).

Every operation inside a function is a node (`util.global` and other module-level ops are
nodes of function `""`); the block arguments of a function are its inputs; an SSA value is
an edge from the op (or block argument) that defines it to each op reading it, with its type.
An op with regions (`flow.dispatch.region`, `scf.for`, `hal.executable`) groups the ops
inside it: their `group` is the path of the enclosing ops (`main.flow_dispatch_region_0`),
so views draw and collapse a region as a cluster. `loc(...)` of an op (the stream is printed
with debug info) is its provenance: the torch source `file:line` iree-turbine recorded, and
a named location's name.

The text is untrusted (a file, a saved dump): its size, nesting and op count are capped
(`MAX_TEXT_BYTES`, `MAX_NESTING`, `MAX_OPS`: a `LimitError`), and text
MLIR cannot parse is one `IREEError` with MLIR's first diagnostic.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from compiler import LimitError, PasslensError
from compiler.ir import Provenance
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param, Signature

MAX_TEXT_BYTES = 64 * 1024 * 1024  # one module's MLIR text
MAX_NESTING = 200  # brackets ({[( open at once: MLIR's parser recurses on them
MAX_OPS = 200_000  # operations of one module
_TYPE_CHARS = 160  # an edge's or node's type text is cut after this many characters

_FUNCS = {"func.func", "util.func", "util.initializer", "vm.func", "vm.initializer"}
_OPEN = {ord(c): 1 for c in "({["} | {ord(c): -1 for c in ")}]"}
_SSA = re.compile(r"%[\w$.#-]+")
_FILE_LOC = re.compile(r'"([^"]{1,300})":(\d+):(\d+)')
_NAME_LOC = re.compile(r'loc\("([^"]{1,200})"\(')


class IREEError(PasslensError, ValueError):
    """IREE could not record or parse a module: the message says what and where."""


def check_text(text: Any, what: str = "MLIR text") -> str:
    """`text` when it is MLIR text within the caps, else a passlens error saying which."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise IREEError(f"{what} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    if not isinstance(text, str):
        raise IREEError(f"{what} must be text, not {type(text).__name__}")
    if len(text) > MAX_TEXT_BYTES:
        raise LimitError(
            f"{what} has {len(text):,} characters, over the limit of {MAX_TEXT_BYTES:,} "
            "(explorer.iree.convert.MAX_TEXT_BYTES)"
        )
    if "\x00" in text:
        raise IREEError(f"{what} holds a NUL character: not MLIR text")
    depth = deepest = 0
    in_string = False
    prev = ""
    for ch in text:  # strings may hold brackets: skip them
        if in_string:
            if ch == '"' and prev != "\\":
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            step = _OPEN.get(ord(ch))
            if step:
                depth += step
                deepest = max(deepest, depth)
                if deepest > MAX_NESTING:
                    raise LimitError(
                        f"{what} nests brackets more than {MAX_NESTING} deep "
                        "(explorer.iree.convert.MAX_NESTING)"
                    )
        prev = ch if prev != "\\" or ch != "\\" else ""
    return text


def parse_module(text: str, what: str = "MLIR text") -> tuple[Any, Any]:
    """`(context, module)`: `text` parsed with iree.compiler.ir (after `check_text`)."""
    from iree.compiler import ir

    text = check_text(text, what)
    ctx = ir.Context()
    try:
        module = ir.Module.parse(text, ctx)
    except Exception as e:  # MLIRError: the diagnostics, one per line
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        first = next((ln for ln in lines if "error" in ln), lines[0] if lines else type(e).__name__)
        raise IREEError(f"{what} is not valid MLIR: {first[:300]}") from None
    return ctx, module


class IREEState:
    """What the modules of one IREE trace share: one stand-in per op identity (function, op
    text without its SSA names, occurrence), so an op a pass did not touch is the same object
    in the steps before and after it and diffs match it by identity."""

    def __init__(self) -> None:
        self.refs: dict[tuple, IREERef] = {}

    def ref(self, key: tuple, prov: Provenance) -> IREERef:
        found = self.refs.get(key)
        if found is None:
            found = self.refs[key] = IREERef(prov)
        return found


class IREERef:
    """The stand-in of one MLIR operation (`prov`: where it came from)."""

    __slots__ = ("prov", "__weakref__")

    def __init__(self, prov: Provenance):
        self.prov = prov


def _cut(text: str, limit: int = _TYPE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _provenance(loc: str) -> Provenance:
    m = _FILE_LOC.search(loc)
    name = _NAME_LOC.search(loc)
    if m is None and name is None:
        return Provenance()
    where = f"{m.group(1).rsplit('/', 1)[-1]}:{m.group(2)}" if m else None
    layer = name.group(1) if name else None
    return Provenance(
        framework="torch" if m else "mlir",
        location=where,
        module_path=layer,
        source_node=layer,
    )


_TORCH_TYPE = re.compile(r"^!torch\.v?tensor<\[([-?\d,]*)\],(\w+)>$")


def _shape_dtype(ty: Any) -> tuple[tuple | None, str | None]:
    """A tensor type's shape (`?` for a dynamic dim) and element type; (None, None) else."""
    from iree.compiler import ir

    try:
        shaped = ir.ShapedType(ty)
    except (ValueError, TypeError):
        m = _TORCH_TYPE.match(str(ty))
        if m is None:
            return None, None
        dims = tuple(
            int(d) if d.lstrip("-").isdigit() and int(d) >= 0 else "?"
            for d in m.group(1).split(",")
            if d
        )
        return dims, m.group(2)
    if not shaped.has_rank:
        return None, str(shaped.element_type)
    dims = tuple("?" if shaped.is_dynamic_dim(i) else d for i, d in enumerate(shaped.shape))
    return dims, str(shaped.element_type)


def _symbol(op: Any) -> str:
    try:
        return str(op.attributes["sym_name"]).strip('"')
    except (KeyError, ValueError):
        return ""


_PARAMETER = re.compile(r'#flow\.parameter\.named<(?:"[^"]*"::)?"([^"]{1,300})">')
_ITEM_BITS = re.compile(r"^[a-z]*?(\d+)")


def _global(g: GraphModel, node: GraphNode, attrs: dict) -> None:
    """A `util.global`: its type from its `type` attribute; one that a parameter file
    holds (`#flow.parameter.named<"model"::"fc1.weight">`) is a weight, under that key."""
    import math

    ty = attrs.get("type", "")
    m = _TORCH_TYPE.match(ty) or re.match(r"^tensor<((?:[\d?]+x)*)(\w+)>$", ty)
    node.type = _cut(ty)
    if m is not None and ty.startswith("tensor<"):
        dims = tuple(int(d) if d.isdigit() else "?" for d in m.group(1).split("x") if d)
        node.shape, node.dtype = dims, m.group(2)
    key = _PARAMETER.search(attrs.get("initial_value", ""))
    if key is None:
        return
    node.kind, node.label = "weight", key.group(1)
    bits = _ITEM_BITS.match(node.dtype or "")
    if node.shape is not None and all(isinstance(d, int) for d in node.shape) and bits:
        node.nbytes = math.prod(node.shape) * max(1, int(bits.group(1)) // 8)
    g.params[node.label] = Param(
        node.label, tuple(node.shape or ()), node.dtype or "", node.nbytes, node.id, node.obj
    )


def _weight_owner(op: Any, g: GraphModel, ids: dict, globals_: dict, weight_layer: dict):
    """The layer owning the weight `op` reads, for an op the importer placed at its
    function's own location: iree's FX importer gives the ops it makes for the parameters
    (their `util.global.load` and conversion) the location of the function, which is its
    first node's (`fc1`'s), so fc2's weight loads would be drawn in fc1. A load of a
    parameter is in the layer that owns it (`fc2.weight`: `fc2`); an op reading only such
    loads of one layer is in that layer. None: the op's own location stands."""
    if op.name == "util.global.load" and "global" in op.attributes:
        node = g.nodes.get(globals_.get(str(op.attributes["global"]), ""))
        if node is None or node.kind != "weight" or "." not in node.label:
            return None
        return node.label.rsplit(".", 1)[0]
    owners = {weight_layer.get(ids.get(v, ""), None) for v in op.operands}
    if len(owners) == 1 and None not in owners:
        return owners.pop()
    return None


def unparsed_graph(error: str) -> GraphModel:
    """The graph model of a dump MLIR cannot parse again (IREE prints some ops, such as a
    `vm.cond_fail` message holding quotes, in a form its parser refuses): one node saying
    why, so the step's views still show; its text is the dump as printed."""
    g = GraphModel()
    g.nodes["unparsed"] = GraphNode(
        "unparsed", "op", "mlir.unparsed", "MLIR not parsed", "", "", attrs={"error": error[:500]}
    )
    return g


def graph_of_mlir(text: str, state: IREEState | None = None) -> GraphModel:
    """The graph model of one MLIR module (node ids `<function>/<k>`)."""
    state = state or IREEState()
    _, module = parse_module(text)
    g = GraphModel()
    ids: dict[Any, str] = {}  # an SSA value -> the node defining it
    count = [0]
    seen: dict[tuple, int] = {}
    globals_: dict[str, str] = {}  # @symbol of a util.global -> its node
    weight_layer: dict[str, str] = {}  # node reading a parameter -> the layer owning it
    func_locs: dict[str, str] = {}  # a function -> its own location's text

    def add_node(nid, kind, op, label, function, ty, group, prov, obj, attrs=None):
        shape, dtype = _shape_dtype(ty) if ty is not None else (None, None)
        g.nodes[nid] = GraphNode(
            nid,
            kind,
            op,
            label,
            function,
            _cut(str(ty)) if ty is not None else "",
            shape,
            dtype,
            attrs or {},
            dict(prov.items()),
            group,
            0,
            obj,
        )
        if obj is not None:
            g.by_object[id(obj)] = nid

    def walk(parent: Any, function: str, group: str, depth: int) -> None:
        for region in parent.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    nid = f"{function}/%arg{len(g.nodes)}"
                    kind = "input" if depth == 1 else "op"
                    add_node(
                        nid,
                        kind,
                        "input" if depth == 1 else "block-arg",
                        f"%arg{arg.arg_number}",
                        function,
                        arg.type,
                        group,
                        Provenance(),
                        None,
                    )
                    ids[arg] = nid
                for op in block.operations:
                    visit(op.operation, function, group, depth)

    def visit(op: Any, function: str, group: str, depth: int) -> None:
        count[0] += 1
        if count[0] > MAX_OPS:
            raise LimitError(
                f"this MLIR module has more than {MAX_OPS:,} operations "
                "(explorer.iree.convert.MAX_OPS)"
            )
        name = op.name
        if name in _FUNCS and depth <= 1:
            fname = _symbol(op) or f"{name}{len(g.signatures)}"
            fty = op.attributes["function_type"] if "function_type" in op.attributes else None
            g.signatures[fname] = Signature(fname, [], _cut(str(fty)) if fty else "", None, {})
            func_locs[fname] = str(op.location)
            walk(op, fname, fname, 1)
            return
        loc = str(op.location)
        prov = _provenance(loc)
        owner = None
        if function and loc == func_locs.get(function):
            owner = _weight_owner(op, g, ids, globals_, weight_layer)
            if owner is not None:
                prov = replace(prov, module_path=owner, source_node=owner)
        results = list(op.results)
        has_regions = len(op.regions) > 0 and any(len(r.blocks) for r in op.regions)
        # an op of a function: its own text, printed in its local scope (str(op) numbers the
        # whole module's values first: a walk of the module per op); one with regions or at
        # module level (printing a util.global walks the module too): its name and attributes
        flat = has_regions or not function
        body = f"{name} {op.attributes}" if flat else op.get_asm(use_local_scope=True)
        key0 = (function, _SSA.sub("%", body.split(" loc(", 1)[0])[:2000])
        k = seen.get(key0, 0)
        seen[key0] = k + 1
        obj = state.ref((*key0, k), prov)
        symbol = _symbol(op)
        nid = f"{function}/{len(g.nodes)}"
        if not function and symbol and f"@{symbol}" not in g.nodes:
            nid = f"@{symbol}"  # a module-level symbol (a global, an executable) by its name
        label = symbol or (name.rsplit(".", 1)[-1])
        attrs = {}
        for i in range(len(op.attributes)):
            a = op.attributes[i]
            if a.name not in ("sym_name", "function_type"):
                attrs[a.name] = _cut(str(a.attr), 200)
        kind = "op" if function else "const"
        add_node(
            nid,
            kind,
            name,
            label,
            function,
            results[0].type if len(results) == 1 else None,
            # an op of a function's own body is drawn in its torch layer, one in a region in it
            prov.module_path if prov.module_path and group == function else group,
            prov,
            obj,
            attrs,
        )
        if len(results) > 1:
            g.nodes[nid].type = _cut("(" + ", ".join(str(r.type) for r in results) + ")")
        if owner is not None:
            weight_layer[nid] = owner
        if name == "util.global":
            _global(g, g.nodes[nid], attrs)
            globals_[f"@{label}"] = nid
        operands = list(op.operands)
        for i, v in enumerate(operands):
            src = ids.get(v)
            if src is not None:
                g.edges.append(GraphEdge(src, nid, i, _cut(str(v.type))))
        read = globals_.get(attrs.get("global", ""))
        if read is not None:  # util.global.load / store: the global it names
            g.edges.append(GraphEdge(read, nid, len(operands), g.nodes[read].type))
        for r in results:
            ids[r] = nid
        if has_regions:
            if depth + 1 > MAX_NESTING:
                raise LimitError(f"this MLIR module nests regions more than {MAX_NESTING} deep")
            part = _symbol(op) or f"{name.replace('.', '_')}_{len(g.nodes)}"
            inner = f"{group}.{part}" if group else part
            walk(op, function, inner, depth + 1)
        if name.endswith("return") or name == "vm.return":
            g.nodes[nid].kind = "output" if depth == 1 else "op"

    for op in module.body.operations:
        visit(op.operation, "", "", 0)
    return g


__all__ = [
    "IREEError",
    "IREERef",
    "IREEState",
    "check_text",
    "graph_of_mlir",
    "parse_module",
    "unparsed_graph",
]
