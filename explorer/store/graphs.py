"""Graph models in trace files: a source step's graph, and the modules of another compiler
(``explorer.tvm``), which are stored as what they showed (graph model, IR text, backend texts)
rather than as IR. Their graph nodes' objects are a table of refs shared by every module of the
file (a Constant with its data, or a stand-in with its provenance), so a node a pass did not
touch is the same object in the steps before and after it once loaded, as for passlens's own
IR. The reader (``read._Reader``) is passed in: it holds the tables and checks references."""

from __future__ import annotations

from typing import Any

from compiler.ir import Constant
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param, Signature


def graph_ref(reader: Any, rec: Any) -> Any:
    """A graph node's object: a Constant (its data from the array table) or a stand-in."""
    from explorer.tvm.module import TVMRef

    if not isinstance(rec, dict):
        raise TypeError("a ref must be a mapping")
    prov = reader.prov(rec)
    if rec.get("kind") == "const":
        return Constant(reader.array(rec["array"]), None, prov)
    if rec.get("kind") == "ref":
        return TVMRef(prov)
    raise ValueError(f"unknown ref kind {rec.get('kind')!r}")


def foreign_module(reader: Any, rec: Any) -> Any:
    """Another compiler's module as saved: its graph model and texts (no IR)."""
    from explorer.tvm.module import TVMModule

    if not isinstance(rec, dict) or rec.get("compiler") != "tvm":
        raise ValueError("a foreign module must be a mapping of compiler 'tvm'")
    text, texts, stage = rec["text"], rec.get("texts") or {}, rec.get("stage")
    if not isinstance(text, str) or not isinstance(texts, dict):
        raise TypeError("a foreign module's text must be text")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in texts.items()):
        raise TypeError("a foreign module's texts must be text")
    if stage not in (None, "loops"):
        raise ValueError(f"unknown backend stage {stage!r}")
    return TVMModule(
        None,
        inner=bool(rec.get("inner")),
        graph=decode_graph(rec["graph"], reader),
        text=text,
        texts=dict(texts),
        stage=stage,
    )


def _tuple_shape(value: Any) -> tuple | None:
    return None if value is None else tuple(value)


def decode_graph(rec: dict, reader: Any = None) -> GraphModel:
    """A saved graph model; with ``reader``, node and parameter objects from its ref table."""
    g = GraphModel()
    refs = reader.refs if reader is not None else []

    def obj(r: dict) -> Any:
        i = r.get("ref")
        if i is None or reader is None:
            return None
        return reader.ref(refs, i, "graph object reference")

    for n in rec["nodes"]:
        node = GraphNode(
            id=str(n["id"]),
            kind=str(n["kind"]),
            op=str(n["op"]),
            label=str(n["label"]),
            function=str(n["function"]),
            type=str(n["type"]),
            shape=_tuple_shape(n.get("shape")),
            dtype=n.get("dtype"),
            attrs=dict(n.get("attrs") or {}),
            provenance=dict(n.get("provenance") or {}),
            group=str(n.get("group") or ""),
            nbytes=int(n.get("nbytes") or 0),
            obj=obj(n),
        )
        g.nodes[node.id] = node
        if node.obj is not None:
            g.by_object[id(node.obj)] = node.id
    for src, dst, index, ty in rec["edges"]:
        g.edges.append(GraphEdge(str(src), str(dst), int(index), str(ty)))
    for p in rec["params"]:
        g.params[str(p["key"])] = Param(
            str(p["name"]),
            tuple(p["shape"] or ()),
            str(p["dtype"]),
            int(p["nbytes"]),
            str(p["node_id"]),
            obj(p),
        )
    for s in rec.get("signatures") or []:
        g.signatures[str(s["name"])] = Signature(
            str(s["name"]),
            [tuple(x) for x in s["params"]],
            str(s["result"]),
            s.get("num_input"),
            dict(s.get("attrs") or {}),
        )
    return g
