"""An ONNX model as passlens's neutral graph model, and its text.

Every ONNX node becomes an op node named by its op, with the domain for contrib and fused ops
(``com.microsoft::SkipLayerNormalization``, ``com.microsoft.nchwc::Conv``) and its attributes
as text; graph inputs are inputs, initializers weights (with their bytes), graph outputs one
return node. Types come from the model's value_info, completed by onnx's shape inference
where it knows the op (``f32[batch, 8]``; '?' where nothing knows it). Provenance comes from
the metadata torch's exporter writes on every node (``pkg.torch.onnx.name_scopes``: the
module path; ``pkg.torch.onnx.fx_node``: the FX node; ``pkg.torch.onnx.stack_trace``:
file:line), which onnxscript's passes and ORT keep on the nodes they do not replace.
Everything read from the file is untrusted: metadata is parsed as literals only, and long
texts are cut.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from compiler.ir import Provenance
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param

if TYPE_CHECKING:
    from explorer.onnxruntime.module import ONNXModule

MAX_TEXT = 200  # characters of one attribute or metadata value shown
_FRAME = re.compile(r'File "([^"]{1,500})", line (\d{1,9})')
_FX_NAME = re.compile(r"^%([\w.]{1,200}) ")

_DTYPES = {
    1: "f32",
    2: "u8",
    3: "i8",
    4: "u16",
    5: "i16",
    6: "i32",
    7: "i64",
    8: "str",
    9: "bool",
    10: "f16",
    11: "f64",
    12: "u32",
    13: "u64",
    14: "c64",
    15: "c128",
    16: "bf16",
}


def dtype_name(elem_type: int) -> str:
    return _DTYPES.get(int(elem_type), f"dtype{int(elem_type)}")


def op_name(node: Any) -> str:
    """``Conv``, or ``domain::Op`` for an op outside the default domain."""
    domain = node.domain if node.domain not in ("", "ai.onnx") else ""
    return f"{domain}::{node.op_type}" if domain else node.op_type


def _short(text: Any, limit: int = MAX_TEXT) -> str:
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _type_of(vi: Any) -> tuple[str, tuple | None, str | None]:
    """``(type text, shape, dtype)`` of a ValueInfoProto (a tensor type, else its kind)."""
    t = vi.type
    if not t.HasField("tensor_type"):
        kind = t.WhichOneof("value")
        return (kind or "?"), None, None
    tt = t.tensor_type
    dt = dtype_name(tt.elem_type)
    if not tt.HasField("shape"):
        return f"{dt}[...]", None, dt
    dims: list = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(_short(d.dim_param, 40))
        else:
            dims.append("?")
    return f"{dt}[{', '.join(str(d) for d in dims)}]", tuple(dims), dt


def _value_types(model: Any) -> dict[str, tuple[str, tuple | None, str | None]]:
    """Every value's type: value_info, inputs and outputs, then onnx's shape inference for the
    values none of them types (an op it does not know leaves its results untyped)."""
    import onnx

    g = model.graph
    types: dict[str, tuple] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        if vi.type.WhichOneof("value"):
            types[vi.name] = _type_of(vi)
    produced = {o for n in g.node for o in n.output if o}
    if produced - set(types):
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
            for vi in inferred.graph.value_info:
                if vi.name not in types and vi.type.WhichOneof("value"):
                    types[vi.name] = _type_of(vi)
        except Exception:  # a model onnx cannot infer (contrib ops, a bad file): '?' types
            pass
    return types


def _metadata(node: Any) -> dict[str, str]:
    return {p.key: p.value for p in node.metadata_props}


def provenance(node: Any) -> tuple[dict, str]:
    """``(provenance dict, module path)`` of a node from the exporter's metadata."""
    meta = _metadata(node)
    prov: dict[str, str] = {"framework": "onnx", "op": op_name(node)}
    path = ""
    scopes = meta.get("pkg.torch.onnx.name_scopes")
    if scopes and len(scopes) < 4000:
        try:
            parts = ast.literal_eval(scopes)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parts = None
        if isinstance(parts, list) and all(isinstance(p, str) for p in parts):
            path = ".".join(p for p in parts[1:-1] if p)
    if path:
        prov["module"] = _short(path)
    fx = _FX_NAME.match(meta.get("pkg.torch.onnx.fx_node", ""))
    if fx:
        prov["node"] = fx.group(1)
        prov["framework"] = "torch"
    stack = meta.get("pkg.torch.onnx.stack_trace", "")[:20000]
    frames = _FRAME.findall(stack)
    if frames:
        user = [f for f in frames if "site-packages" not in f[0]] or frames
        prov["file"] = _short(f"{user[-1][0]}:{user[-1][1]}")
    if node.name:
        prov.setdefault("node", _short(node.name))
    return prov, path


def _attrs(node: Any) -> dict[str, str]:
    import onnx

    out: dict[str, str] = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            out[a.name] = "<subgraph>"
            continue
        if a.type == onnx.AttributeProto.TENSOR:
            t = a.t
            out[a.name] = f"tensor {dtype_name(t.data_type)}{list(t.dims)}"
            continue
        try:
            value = onnx.helper.get_attribute_value(a)
        except Exception:  # an attribute onnx cannot read: its kind only
            value = f"<attribute type {a.type}>"
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        out[a.name] = _short(value)
    return out


def node_key(node: Any, attrs: dict) -> tuple:
    """What makes a node the same node in two steps: op, name, inputs, outputs, attributes."""
    return (
        "node",
        op_name(node),
        node.name,
        tuple(node.input),
        tuple(node.output),
        tuple(sorted(attrs.items())),
    )


def graph_of_onnx(model: Any, module: ONNXModule) -> GraphModel:
    """The graph model of an ONNX model (weights as the trace's shared Constants)."""
    state = module.state
    g = GraphModel()
    graph = model.graph
    types = _value_types(model)
    producer: dict[str, str] = {}
    used: set[str] = set()

    def unique(base: str) -> str:
        base = _short(base or "node", 120)
        name, k = base, 1
        while name in g.nodes or name in used:
            k += 1
            name = f"{base}#{k}"
        used.add(name)
        return name

    def type_of(value: str) -> str:
        return types.get(value, ("?", None, None))[0]

    for vi in graph.input:
        if vi.name in module.weight_keys:
            continue  # an initializer also listed as an input (older exporters): a weight
        nid = unique(f"input {vi.name}")
        ty, shape, dtype = types.get(vi.name, ("?", None, None))
        ref = state.ref(("input", vi.name, ty), vi.name, Provenance(framework="onnx"))
        g.nodes[nid] = GraphNode(nid, "input", "input", _short(vi.name), "main", ty, shape, dtype)
        g.nodes[nid].obj = ref
        g.by_object[id(ref)] = nid
        producer[vi.name] = nid
    for t in graph.initializer:
        key = module.weight_keys.get(t.name)
        arr = state.weights.get(key) if key else None
        dtype = dtype_name(t.data_type)
        shape = tuple(int(d) for d in t.dims)
        nbytes = int(arr.nbytes) if arr is not None else 0
        nid = unique(f"weight {t.name}")
        obj = state.constant(key) if arr is not None else state.ref(("w", t.name), t.name)
        ty = f"{dtype}[{', '.join(str(d) for d in shape)}]"
        g.nodes[nid] = GraphNode(
            nid, "weight", "weight", _short(t.name), "main", ty, shape, dtype, nbytes=nbytes
        )
        g.nodes[nid].obj = obj
        g.by_object[id(obj)] = nid
        g.params[nid] = Param(_short(t.name), shape, dtype, nbytes, nid, obj)
        producer[t.name] = nid
    for node in graph.node:
        attrs = _attrs(node)
        prov, path = provenance(node)
        label = node.name or (node.output[0] if node.output else node.op_type)
        nid = unique(label)
        first = next((o for o in node.output if o), "")
        ty, shape, dtype = types.get(first, ("?", None, None))
        if sum(1 for o in node.output if o) > 1:
            outs = [type_of(o) for o in node.output if o]
            ty, shape, dtype = f"({', '.join(outs)})", None, None
        ref = state.ref(
            node_key(node, attrs),
            label,
            Provenance(
                framework=prov.get("framework", "onnx"),
                module_path=path or None,
                source_node=prov.get("node"),
                location=prov.get("file"),
            ),
        )
        g.nodes[nid] = GraphNode(
            nid, "op", op_name(node), _short(label, 80), "main", ty, shape, dtype, attrs, prov, path
        )
        g.nodes[nid].obj = ref
        g.by_object[id(ref)] = nid
        for i, value in enumerate(node.input):
            if value and value in producer:
                g.edges.append(GraphEdge(producer[value], nid, i, type_of(value)))
        for value in node.output:
            if value:
                producer[value] = nid
    outs = [o.name for o in graph.output]
    ty = f"({', '.join(type_of(o) for o in outs)}{',' if len(outs) == 1 else ''})"
    ref = state.ref(("output", tuple(outs), ty), "return")
    g.nodes["return"] = GraphNode("return", "output", "return", "return", "main", ty)
    g.nodes["return"].obj = ref
    g.by_object[id(ref)] = "return"
    for i, value in enumerate(outs):
        if value in producer:
            g.edges.append(GraphEdge(producer[value], "return", i, type_of(value)))
    return g


def text_of_onnx(model: Any) -> str:
    """The model in ONNX's textual syntax, weights by shape only (the skeleton's initializers
    carry no data)."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for t in m.graph.initializer:
        del t.external_data[:]
        t.ClearField("data_location")
    try:
        text = onnx.printer.to_text(m.graph)
    except Exception as e:  # a model the printer cannot print: its nodes, one a line
        lines = [f"# onnx.printer failed ({_short(e)}); the nodes:"]
        lines += [
            f"{', '.join(n.output)} = {op_name(n)}({', '.join(n.input)})" for n in m.graph.node
        ]
        text = "\n".join(lines)
    return text + ("\n" if not text.endswith("\n") else "")


__all__ = ["dtype_name", "graph_of_onnx", "node_key", "op_name", "provenance", "text_of_onnx"]
