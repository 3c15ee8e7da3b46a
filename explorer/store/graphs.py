"""Graph models in trace files: a source step's graph, and the modules of another compiler
(``explorer.tvm``), which are stored as what they showed (graph model, IR text, backend texts)
rather than as IR. Their graph nodes' objects are a table of refs shared by every module of the
file (a Constant with its data, or a stand-in with its provenance), so a node a pass did not
touch is the same object in the steps before and after it once loaded, as for passlens's own
IR. The writer (``write._Writer``) or reader (``read._Reader``) is passed in: it holds the
tables (arrays, provenances, refs) and the reader checks every reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import NO_PROVENANCE, Constant, Provenance
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param, Signature

# ===== writing ===================================================================================


def encode_foreign(m: Any, writer: Any) -> dict:
    """Another compiler's module (a ``explorer.tvm.TVMModule``) as what it showed: graph
    model (its objects as refs of ``writer``), IR text and backend texts, not its IR."""
    return {
        "compiler": str(m.compiler),
        "inner": bool(getattr(m, "inner", False)),
        "text": m.text(),
        "texts": {str(k): str(v) for k, v in m.texts().items()},
        "stage": m.backend_stage,
        "graph": encode_graph(m.graph_model(), writer),
    }


def encode_ref(obj: Any, writer: Any) -> dict:
    """A graph node's object: a Constant with its data (in ``writer``'s array table, so
    parameter content compares after loading), else a stand-in with its provenance."""
    prov = getattr(obj, "prov", NO_PROVENANCE)
    if not isinstance(prov, Provenance):
        prov = NO_PROVENANCE
    if isinstance(obj, Constant):
        return {"kind": "const", "array": writer.array(obj.data), "prov": writer.prov(prov)}
    return {"kind": "ref", "prov": writer.prov(prov)}


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if np.isfinite(f) else str(f)
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def encode_graph(g: GraphModel, writer: Any = None) -> dict:
    """A graph model (nodes, edges, params, signatures) as JSON: a source step's, or another
    compiler's module's (with ``writer``: each node's and parameter's object as a ref)."""
    out = {
        "nodes": [
            {
                "id": n.id,
                "kind": n.kind,
                "op": n.op,
                "label": n.label,
                "function": n.function,
                "type": n.type,
                "shape": _jsonable(n.shape),
                "dtype": n.dtype,
                "attrs": _jsonable(n.attrs),
                "provenance": _jsonable(n.provenance),
                "group": n.group,
                "nbytes": int(n.nbytes),
            }
            for n in g.nodes.values()
        ],
        "edges": [[e.src, e.dst, e.index, e.type] for e in g.edges],
        "params": [
            {
                "key": key,
                "name": p.name,
                "shape": _jsonable(p.shape),
                "dtype": p.dtype,
                "nbytes": int(p.nbytes),
                "node_id": p.node_id,
            }
            for key, p in g.params.items()
        ],
        "signatures": [
            {
                "name": s.name,
                "params": _jsonable(s.params),
                "result": s.result,
                "num_input": s.num_input,
                "attrs": _jsonable(s.attrs),
            }
            for s in g.signatures.values()
        ],
    }
    if writer is not None:
        for rec, n in zip(out["nodes"], g.nodes.values(), strict=True):
            if n.obj is not None:
                rec["ref"] = writer.ref(n.obj)
        for rec, p in zip(out["params"], g.params.values(), strict=True):
            if p.obj is not None:
                rec["ref"] = writer.ref(p.obj)
    return out


# ===== reading ===================================================================================


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

    if not isinstance(rec, dict) or rec.get("compiler") not in ("tvm", "inductor"):
        raise ValueError("a foreign module must be a mapping of compiler 'tvm' or 'inductor'")
    text, texts, stage = rec["text"], rec.get("texts") or {}, rec.get("stage")
    if not isinstance(text, str) or not isinstance(texts, dict):
        raise TypeError("a foreign module's text must be text")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in texts.items()):
        raise TypeError("a foreign module's texts must be text")
    if stage not in (None, "loops"):
        raise ValueError(f"unknown backend stage {stage!r}")
    if rec["compiler"] == "inductor":  # a torch.compile FX graph: no GraphModule once loaded
        from explorer.inductor.module import FXModule

        graph = decode_graph(rec["graph"], reader)
        return FXModule(model=graph, text=text, extra_texts=dict(texts) or None, stage=stage)
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
