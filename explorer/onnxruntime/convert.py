"""An ONNX model as passlens's neutral graph model, and its text.

Every ONNX node becomes an op node named by its op, with the domain for contrib and fused ops
(`com.microsoft::SkipLayerNormalization`, `com.microsoft.nchwc::Conv`) and its attributes
as text; graph inputs are inputs, initializers weights (with their bytes), graph outputs one
return node. Types come from `explorer.onnxruntime.shapes` (value_info, onnx's and
ONNX Runtime's shape inference, a run for ORT's own layouts; '?' where nothing knows it).
Provenance comes from the metadata torch's exporter writes on every node
(`pkg.torch.onnx.name_scopes`: the module path; `pkg.torch.onnx.fx_node`: the FX node;
`pkg.torch.onnx.stack_trace`: file:line), which onnxscript's passes keep on the nodes they do
not replace and the recorder gives back to the nodes a stage made or saved without it
(`explorer.onnxruntime.rewrites`). The text (`text_of_onnx`) lists the inputs,
outputs and weights by name, type and bytes, then each node in ONNX's textual syntax with the
type it makes. Everything read from the file is untrusted: metadata is parsed as literals
only, and long texts are cut.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from compiler.ir import Provenance
from explorer.fmt import format_bytes
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param
from explorer.onnxruntime.shapes import UNKNOWN, dtype_name, type_text, value_types

if TYPE_CHECKING:
    from explorer.onnxruntime.module import ONNXModule

MAX_TEXT = 200  # characters of one attribute or metadata value shown
_FRAME = re.compile(r'File "([^"]{1,500})", line (\d{1,9})')
_FX_NAME = re.compile(r"^%([\w.]{1,200}) ")


def op_name(node: Any) -> str:
    """`Conv`, or `domain::Op` for an op outside the default domain."""
    domain = node.domain if node.domain not in ("", "ai.onnx") else ""
    return f"{domain}::{node.op_type}" if domain else node.op_type


def _short(text: Any, limit: int = MAX_TEXT) -> str:
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _metadata(node: Any) -> dict[str, str]:
    return {p.key: p.value for p in node.metadata_props}


INHERITED = "pkg.passlens.provenance_from"  # the nodes a recorder took a node's metadata from


def scopes_of(meta: dict[str, str]) -> list[str] | None:
    """The exporter's `name_scopes` of a node's metadata as a list of texts (None: none, or
    not a list of texts: it is read as a literal only)."""
    scopes = meta.get("pkg.torch.onnx.name_scopes")
    if not scopes or len(scopes) >= 4000:
        return None
    parts = _scopes(scopes)
    return list(parts) if parts is not None else None


@functools.lru_cache(maxsize=4096)
def _scopes(scopes: str) -> tuple[str, ...] | None:
    try:
        parts = ast.literal_eval(scopes)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    if isinstance(parts, list) and all(isinstance(p, str) for p in parts):
        return tuple(parts)
    return None


def module_path(scopes: list[str]) -> str:
    """The torch module path of a node from its `name_scopes`: the root (`''`), then each
    module's path (`layer.0`, `layer.0.attention`, ...), then the op's FX name. torch
    writes each scope as the module's full path; a scope that does not extend the one before
    it (a name relative to its parent) is joined to it."""
    path = ""
    for part in scopes[1:-1]:
        if not part:
            continue
        path = part if not path or part.startswith(path + ".") else f"{path}.{part}"
    return path


def provenance(node: Any) -> tuple[dict, str]:
    """`(provenance dict, module path)` of a node from the exporter's metadata."""
    meta = _metadata(node)
    prov: dict[str, str] = {"framework": "onnx", "op": op_name(node)}
    parts = scopes_of(meta)
    path = module_path(parts) if parts else ""
    if path:
        prov["module"] = _short(path)
    hierarchy = meta.get("pkg.torch.onnx.class_hierarchy", "")
    if hierarchy and len(hierarchy) < 4000 and path:
        try:
            classes = ast.literal_eval(hierarchy)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            classes = None
        if isinstance(classes, list) and len(classes) >= 2 and isinstance(classes[-2], str):
            prov["class"] = _short(classes[-2])  # the innermost module's (the last is the op)
    fx = _FX_NAME.match(meta.get("pkg.torch.onnx.fx_node", ""))
    if fx:
        prov["fx_node"] = fx.group(1)
        prov["framework"] = "torch"
    stack = meta.get("pkg.torch.onnx.stack_trace", "")[:20000]
    frames = _FRAME.findall(stack)
    if frames:
        user = [f for f in frames if "site-packages" not in f[0]] or frames
        prov["file"] = _short(f"{user[-1][0]}:{user[-1][1]}")
    if meta.get(INHERITED):
        prov["from"] = _short(meta[INHERITED])
    if node.name:
        prov["node"] = _short(node.name)
    elif fx:
        prov["node"] = fx.group(1)
    return prov, path


SHOWN_VALUES = 8  # a tensor attribute this small shows its values


def _tensor_attr(t: Any) -> str:
    """`tensor f32[] 0.125` (values for a small tensor held in the node), else its type."""
    import onnx
    from onnx import numpy_helper

    text = f"tensor {type_text(dtype_name(t.data_type), tuple(int(d) for d in t.dims))}"
    if _elements(t.dims) <= SHOWN_VALUES and t.data_location != onnx.TensorProto.EXTERNAL:
        try:
            values = numpy_helper.to_array(t).reshape(-1)
        except Exception:  # a tensor onnx cannot read: its type only
            return text
        text += " " + ", ".join(str(v) for v in values.tolist()[:SHOWN_VALUES])
    return _short(text)


def _attrs(node: Any) -> dict[str, str]:
    import onnx

    out: dict[str, str] = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            out[a.name] = "<subgraph>"
            continue
        if a.type == onnx.AttributeProto.TENSOR:
            out[a.name] = _tensor_attr(a.t)
            continue
        if a.type == onnx.AttributeProto.FLOAT:  # float32: its shortest float32 text
            out[a.name] = str(np.float32(a.f))
            continue
        if a.type == onnx.AttributeProto.FLOATS:
            out[a.name] = _short("[" + ", ".join(str(np.float32(f)) for f in a.floats) + "]")
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


class Entry(NamedTuple):
    """One node of the graph model of an ONNX model, before its types: its id (unique in the
    model), kind (`input`, `weight`, `op`, `output`), label, the value names it reads
    and makes, what makes it the same node in another step (`key`), and the proto it shows
    (a ValueInfoProto, TensorProto or NodeProto; None for the return)."""

    nid: str
    kind: str
    label: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    key: tuple
    proto: Any = None
    attrs: dict | None = None


def entries(model: Any, weight_keys: dict[str, str]) -> list[Entry]:
    """The nodes of `model` in graph-model order with their ids (the ids every view and
    every rewrite names): inputs, weights (`weight_keys`: their content keys), op nodes,
    the return."""
    graph = model.graph
    used: set[str] = set()

    def unique(base: str) -> str:
        base = _short(base or "node", 120)
        name, k = base, 1
        while name in used:
            k += 1
            name = f"{base}#{k}"
        used.add(name)
        return name

    out: list[Entry] = []
    for vi in graph.input:
        if vi.name in weight_keys:
            continue  # an initializer also listed as an input (older exporters): a weight
        nid = unique(f"input {vi.name}")
        out.append(Entry(nid, "input", _short(vi.name), (), (vi.name,), ("input", vi.name), vi))
    for t in graph.initializer:
        key = ("weight", t.name, weight_keys.get(t.name))
        nid = unique(f"weight {t.name}")
        out.append(Entry(nid, "weight", _short(t.name), (), (t.name,), key, t))
    for node in graph.node:
        attrs = _attrs(node)
        label = node.name or (node.output[0] if node.output else node.op_type)
        nid = unique(label)
        key = node_key(node, attrs)
        out.append(
            Entry(
                nid,
                "op",
                _short(label, 80),
                tuple(node.input),
                tuple(node.output),
                key,
                node,
                attrs,
            )
        )
    outs = tuple(o.name for o in graph.output)
    out.append(Entry("return", "output", "return", outs, (), ("output", outs)))
    return out


def graph_of_onnx(model: Any, module: ONNXModule) -> GraphModel:
    """The graph model of an ONNX model (weights as the trace's shared Constants)."""
    state = module.state
    g = GraphModel()
    types = value_types(model, module.weights())
    module.value_types = types
    producer: dict[str, str] = {}

    def type_of(value: str) -> str:
        return types.get(value, UNKNOWN)[0]

    for e in module.entries():
        nid = e.nid
        if e.kind == "input":
            ty, shape, dtype = types.get(e.outputs[0], UNKNOWN)
            ref = state.ref(e.key + (ty,), e.outputs[0], Provenance(framework="onnx"))
            node = GraphNode(nid, "input", "input", e.label, "main", ty, shape, dtype)
        elif e.kind == "weight":
            t = e.proto
            content = e.key[2]
            arr = state.weights.get(content) if content else None
            dtype = dtype_name(t.data_type)
            shape = tuple(int(d) for d in t.dims)
            nbytes = int(arr.nbytes) if arr is not None else 0
            ref = state.constant(content) if arr is not None else state.ref(("w", t.name), t.name)
            ty = type_text(dtype, shape)
            node = GraphNode(
                nid, "weight", "weight", e.label, "main", ty, shape, dtype, nbytes=nbytes
            )
            g.params[nid] = Param(e.label, shape, dtype, nbytes, nid, ref)
        elif e.kind == "op":
            n = e.proto
            prov, path = provenance(n)
            outs = [o for o in e.outputs if o]
            ty, shape, dtype = types.get(outs[0], UNKNOWN) if outs else UNKNOWN
            if len(outs) > 1:
                ty, shape, dtype = f"({', '.join(type_of(o) for o in outs)})", None, None
            ref = state.ref(
                e.key,
                e.label,
                Provenance(
                    framework=prov.get("framework", "onnx"),
                    module_path=path or None,
                    source_node=prov.get("node"),
                    location=prov.get("file"),
                ),
            )
            node = GraphNode(
                nid, "op", op_name(n), e.label, "main", ty, shape, dtype, e.attrs, prov, path
            )
        else:
            ty = f"({', '.join(type_of(o) for o in e.inputs)}{',' if len(e.inputs) == 1 else ''})"
            ref = state.ref(e.key + (ty,), "return")
            node = GraphNode("return", "output", "return", "return", "main", ty)
        node.obj = ref
        g.nodes[nid] = node
        g.by_object[id(ref)] = nid
        for i, value in enumerate(e.inputs):
            if value and value in producer:
                g.edges.append(GraphEdge(producer[value], nid, i, type_of(value)))
        for value in e.outputs:
            if value:
                producer[value] = nid
    return g


MAX_WEIGHT_LINES = 200  # weights the text lists by name (then how many more)
MAX_NODE_CHARS = 4000  # characters of one node's text (a node holding a subgraph is long)
MAX_LINE_CHARS = 1000  # characters of one line of the text
SHOWN_ELEMENTS = 16  # a tensor attribute with more elements is printed by its type only


def _line(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}… ({len(text) - MAX_LINE_CHARS:,} more characters)"


def _node_text(node: Any) -> str:
    """One node in ONNX's textual syntax (`[name] out = Op <attrs> (inputs)`), a big tensor
    attribute's data left out."""
    import onnx

    n = node
    big = [
        a
        for a in node.attribute
        if a.type == onnx.AttributeProto.TENSOR and _elements(a.t.dims) > SHOWN_ELEMENTS
    ]
    if big:
        n = onnx.NodeProto()
        n.CopyFrom(node)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and _elements(a.t.dims) > SHOWN_ELEMENTS:
                a.t.CopyFrom(
                    onnx.TensorProto(name=a.t.name, data_type=a.t.data_type, dims=list(a.t.dims))
                )
    try:
        text = onnx.printer.to_text(n).strip()
    except Exception as e:  # a node the printer cannot print: its parts
        text = (
            f"{', '.join(node.output)} = {op_name(node)} ({', '.join(node.input)})  "
            f"# onnx.printer: {_short(e, 80)}"
        )
    if len(text) > MAX_NODE_CHARS:
        text = f"{text[:MAX_NODE_CHARS]}… ({len(text) - MAX_NODE_CHARS:,} more characters)"
    return text


def _elements(dims) -> int:
    n = 1
    for d in dims:
        n *= max(int(d), 0)
    return n


def text_of_onnx(model: Any, module: ONNXModule | None = None) -> str:
    """The model as text: a header (graph, opsets), its inputs and outputs with their types,
    its weights by name, type and bytes (at most `MAX_WEIGHT_LINES`; their data is not
    shown), then every node in ONNX's textual syntax, each followed by the type it makes."""
    g = model.graph
    types = getattr(module, "value_types", None) or {}
    weights = module.weights() if module is not None else {}

    def ty(value: str) -> str:
        return types.get(value, UNKNOWN)[0]

    used = {n.domain or "ai.onnx" for n in g.node} | {"ai.onnx"}
    opsets = [(o.domain or "ai.onnx", o.version) for o in model.opset_import]
    shown = ", ".join(f"{d} {v}" for d, v in opsets if d in used)
    unused = len(opsets) - sum(1 for d, _ in opsets if d in used)
    more = f" (and {unused} more imported, unused)" if unused else ""
    lines = [_line(f"# graph {g.name!r}, opsets: {shown or 'none'}{more}")]
    inits = {t.name for t in g.initializer}
    ins = [vi.name for vi in g.input if vi.name not in inits]
    lines.append(_line(f"# inputs: {', '.join(f'{v}: {ty(v)}' for v in ins) or 'none'}"))
    lines.append(_line(f"# outputs: {', '.join(f'{o.name}: {ty(o.name)}' for o in g.output)}"))
    total = sum(int(a.nbytes) for a in weights.values())
    lines.append(
        f"# {len(g.initializer)} weights, {format_bytes(total)} (by name; their data is not shown)"
    )
    listed = list(g.initializer)[:MAX_WEIGHT_LINES]
    rows = []
    for t in listed:
        arr = weights.get(t.name)
        shape = tuple(int(d) for d in t.dims)
        size = format_bytes(arr.nbytes) if arr is not None else ""
        rows.append((_short(t.name, 80), type_text(dtype_name(t.data_type), shape), size))
    wide = max((len(r[0]) for r in rows), default=0)
    wide_type = max((len(r[1]) for r in rows), default=0)
    for name, ty_text, size in rows:
        lines.append(_line(f"#   {name.ljust(wide)}  {ty_text.ljust(wide_type)}  {size}".rstrip()))
    if len(g.initializer) > MAX_WEIGHT_LINES:
        lines.append(f"#   +{len(g.initializer) - MAX_WEIGHT_LINES:,} more weights")
    lines.append(f"# {len(g.node)} nodes")
    for node in g.node:
        outs = [o for o in node.output if o]
        text = _node_text(node)
        head, _, rest = text.partition("\n")
        typed = f"{head}    # {', '.join(ty(o) for o in outs)}" if outs else head
        lines.append(_line(typed))
        lines.extend(_line(r) for r in rest.splitlines())
    return "\n".join(lines) + "\n"


__all__ = [
    "Entry",
    "dtype_name",
    "entries",
    "graph_of_onnx",
    "module_path",
    "node_key",
    "op_name",
    "provenance",
    "scopes_of",
    "text_of_onnx",
]
