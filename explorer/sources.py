"""What ``explore`` accepts, and the source graph for each framework.

A torch model is exported once with torch.export; the ExportedProgram is both the source
step's graph (FX nodes as the framework sees them) and what the frontend imports, so the
source step and the IR share FX node names through provenance. An ONNX model's source step
shows its graph nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.ir import Module
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param


@dataclass
class Imported:
    """An imported source: the IR module, the source graph as the framework shows it (or
    None) and the framework's name for it, the import step's name, the source object kept for
    reference runs, the frontend's name."""

    module: Module
    source_graph: GraphModel | None
    source_label: str
    name: str
    source: Any
    frontend: str


def import_source(source: Any, example_inputs: Any = None, **options) -> Imported:
    """Import any supported source into an IR module (see ``explorer.explore``)."""
    if isinstance(source, Module):
        return Imported(source, None, "", "module", source, "ir")
    if isinstance(source, str) and ("def @" in source or source.lstrip().startswith("#")):
        from compiler.ir import parse

        module = parse(source, params=options.get("params"))
        return Imported(module, None, "", "parse", source, "text")
    if _is_torch(source):
        return _import_torch(source, example_inputs, **options)
    if _is_onnx(source):
        return _import_onnx(source, **options)
    raise TypeError(
        "explore() takes a torch.nn.Module, an ExportedProgram, an ONNX path / bytes / "
        f"ModelProto, an IR Module or IR text; got {type(source).__name__}"
    )


def _is_torch(source: Any) -> bool:
    mod = type(source).__module__ or ""
    if not mod.startswith("torch"):
        import sys

        torch = sys.modules.get("torch")
        return torch is not None and isinstance(source, torch.nn.Module)
    return True


def _is_onnx(source: Any) -> bool:
    if isinstance(source, (bytes, bytearray)):
        return True
    if isinstance(source, str) or hasattr(source, "__fspath__"):
        return str(source).endswith(".onnx")
    return type(source).__name__ == "ModelProto"


def _import_torch(model, example_inputs, dynamic_shapes=None, **options) -> Imported:
    from compiler.frontend import export_torch, from_torch

    args = example_inputs
    if args is not None and not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    # an ExportedProgram too: one that writes into views is functionalised, and the graph
    # shown and the per-node reference come from the program imported
    ep = export_torch(model, args, dynamic_shapes)
    module = from_torch(ep, args, dynamic_shapes=dynamic_shapes, **options)
    graph = fx_graph_model(ep)
    return Imported(
        module, graph, "torch.export", "from_torch", {"model": model, "exported": ep}, "torch"
    )


def _import_onnx(source, **options) -> Imported:
    from compiler.frontend import from_onnx, load_onnx

    proto = load_onnx(source)  # read once, checked: a clear error for a damaged file
    module = from_onnx(proto, **options)
    return Imported(module, onnx_graph_model(proto), "onnx", "from_onnx", {"model": proto}, "onnx")


def fx_graph_model(ep) -> GraphModel:
    """The graph model of a torch.export ExportedProgram's FX graph."""
    g = GraphModel()
    sig = ep.graph_signature
    kinds = {s.arg.name: (s.kind.name, getattr(s, "target", None)) for s in sig.input_specs}
    state = ep.state_dict
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        shape = (
            tuple(int(d) if str(d).isdigit() else str(d) for d in val.shape)
            if hasattr(val, "shape")
            else None
        )
        dtype = str(val.dtype).replace("torch.", "") if hasattr(val, "dtype") else None
        stack = node.meta.get("nn_module_stack") or {}
        path = list(stack.values())[-1][0] if stack else ""
        if node.op == "placeholder":
            kind, target = kinds.get(node.name, ("USER_INPUT", None))
            k = "input" if kind == "USER_INPUT" else "weight"
            nbytes = 0
            if target in state:
                t = state[target]
                nbytes = t.numel() * t.element_size()
                g.params[target] = Param(
                    target, tuple(t.shape), str(t.dtype).replace("torch.", ""), nbytes, node.name
                )
            g.nodes[node.name] = GraphNode(
                node.name,
                k,
                "placeholder",
                target or node.name,
                "main",
                f"{dtype}{list(shape) if shape else ''}",
                shape,
                dtype,
                nbytes=nbytes,
                group=(target or "").rpartition(".")[0],
            )
        elif node.op == "output":
            g.nodes[node.name] = GraphNode(node.name, "output", "output", "output", "main", "")
            outs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
            for i, o in enumerate(outs):
                if hasattr(o, "name"):
                    g.edges.append(GraphEdge(o.name, node.name, i, ""))
        else:
            g.nodes[node.name] = GraphNode(
                node.name,
                "op",
                str(node.target),
                node.name,
                "main",
                f"{dtype}{list(shape) if shape is not None else ''}",
                shape,
                dtype,
                provenance={"module": path, "op": str(node.target), "node": node.name},
                group=path,
            )
            i = 0
            for a in _flat_args(node.args):
                if hasattr(a, "name") and hasattr(a, "op"):
                    g.edges.append(GraphEdge(a.name, node.name, i, ""))
                    i += 1
    return g


def _flat_args(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _flat_args(a)
        else:
            yield a


def onnx_graph_model(proto) -> GraphModel:
    """The graph model of an ONNX model's main graph."""
    import numpy as np
    from onnx import numpy_helper

    g = GraphModel()
    graph = proto.graph
    producers: dict[str, str] = {}
    for init in graph.initializer:
        arr = numpy_helper.to_array(init)
        nid = f"${init.name}"
        g.nodes[nid] = GraphNode(
            nid,
            "weight",
            "initializer",
            init.name,
            "main",
            f"{arr.dtype}{list(arr.shape)}",
            tuple(arr.shape),
            str(arr.dtype),
            nbytes=int(arr.nbytes),
        )
        g.params[init.name] = Param(
            init.name, tuple(arr.shape), str(arr.dtype), int(arr.nbytes), nid
        )
        producers[init.name] = nid
    for inp in graph.input:
        if inp.name in producers:
            continue
        g.nodes[inp.name] = GraphNode(inp.name, "input", "input", inp.name, "main", "")
        producers[inp.name] = inp.name
    for i, node in enumerate(graph.node):
        nid = node.name or f"{node.op_type}_{i}"
        if nid in g.nodes:
            nid = f"{nid}#{i}"
        path = ".".join(p for p in node.name.split("/")[1:-1]) if node.name.startswith("/") else ""
        g.nodes[nid] = GraphNode(
            nid,
            "op",
            node.op_type,
            node.name or node.op_type,
            "main",
            "",
            provenance={"node": node.name, "op": node.op_type},
            group=path,
        )
        for j, name in enumerate(node.input):
            if name in producers:
                g.edges.append(GraphEdge(producers[name], nid, j, ""))
        for name in node.output:
            producers[name] = nid
    for j, out in enumerate(graph.output):
        nid = f"output:{out.name}"
        g.nodes[nid] = GraphNode(nid, "output", "output", out.name, "main", "")
        if out.name in producers:
            g.edges.append(GraphEdge(producers[out.name], nid, j, ""))
    del np
    return g
