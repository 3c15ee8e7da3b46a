"""The source step's graph for each framework, and which framework a source is: what every
adapter's recorder shows as the model before its import (passlens's import of a source:
`explorer.passlens.source`).

A torch.export ExportedProgram's source step shows its FX nodes as the framework sees them
(the frontend imports the same program, so the source step and the IR share FX node names
through provenance). An ONNX model's source step shows its graph nodes.
"""

from __future__ import annotations

from typing import Any

from explorer.graph import GraphEdge, GraphModel, GraphNode, Param


def is_torch(source: Any) -> bool:
    mod = type(source).__module__ or ""
    if not mod.startswith("torch"):
        import sys

        torch = sys.modules.get("torch")
        return torch is not None and isinstance(source, torch.nn.Module)
    return True


def is_onnx(source: Any) -> bool:
    if isinstance(source, (bytes, bytearray)):
        return True
    if isinstance(source, str) or hasattr(source, "__fspath__"):
        return str(source).endswith(".onnx")
    return type(source).__name__ == "ModelProto"


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
