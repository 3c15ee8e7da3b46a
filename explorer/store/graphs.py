"""Graph models in trace files: a source step's graph, and the modules of another compiler
(`explorer.adapters`), which are stored as what they showed (graph model, IR text, backend texts)
rather than as IR. Their graph nodes' objects are a table of refs shared by every module of the
file (a Constant with its data, or a stand-in with its provenance), so a node a pass did not
touch is the same object in the steps before and after it once loaded, as for passlens's own
IR. The writer (`write._Writer`) or reader (`read._Reader`) is passed in: it holds the
tables (arrays, provenances, refs) and the reader checks every reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import NO_PROVENANCE, Constant, Provenance
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param, Signature

# ===== writing ===================================================================================


def encode_foreign(m: Any, writer: Any) -> dict:
    """Another compiler's module (see `explorer.adapters`) as what it showed: graph
    model (its objects as refs of `writer`), IR text and backend texts, not its IR."""
    return {
        "compiler": str(m.compiler),
        "inner": bool(getattr(m, "inner", False)),
        "text": m.text(),
        "texts": {str(k): str(v) for k, v in m.texts().items()},
        "stage": m.backend_stage,
        "graph": encode_graph(m.graph_model(), writer),
    }


def encode_ref(obj: Any, writer: Any) -> dict:
    """A graph node's object: a Constant with its data (in `writer`'s array table, so
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
    compiler's module's (with `writer`: each node's and parameter's object as a ref)."""
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


class StoredRef:
    """The stand-in of another compiler's graph node object in a loaded trace (what
    `encode_ref` kept of it: where it came from). Steps that shared the object share the
    stand-in, so diffs still match it by identity."""

    __slots__ = ("prov", "__weakref__")

    def __init__(self, prov: Provenance = NO_PROVENANCE):
        self.prov = prov

    def __repr__(self) -> str:
        return f"<StoredRef {self.prov.source_node or ''}>"


def graph_ref(reader: Any, rec: Any) -> Any:
    """A graph node's object: a Constant (its data from the array table) or a stand-in."""
    if not isinstance(rec, dict):
        raise TypeError("a ref must be a mapping")
    prov = reader.prov(rec)
    if rec.get("kind") == "const":
        return Constant(reader.array(rec["array"]), None, prov)
    if rec.get("kind") == "ref":
        return StoredRef(prov)
    raise ValueError(f"unknown ref kind {rec.get('kind')!r}")


def foreign_module(reader: Any, rec: Any) -> Any:
    """Another compiler's module as saved: its graph model and texts (no IR), rebuilt by that
    compiler's adapter (`explorer.adapters`)."""
    from explorer.adapters import get_adapter, is_adapter_name

    name = rec.get("compiler") if isinstance(rec, dict) else None
    if not is_adapter_name(name) or name == "passlens":
        raise ValueError("a foreign module must be a mapping naming another compiler")
    text, texts, stage = rec["text"], rec.get("texts") or {}, rec.get("stage")
    if not isinstance(text, str) or not isinstance(texts, dict):
        raise TypeError("a foreign module's text must be text")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in texts.items()):
        raise TypeError("a foreign module's texts must be text")
    if stage not in (None, "loops"):
        raise ValueError(f"unknown backend stage {stage!r}")
    graph = decode_graph(rec["graph"], reader)
    return get_adapter(name).load_module(rec, graph, text, dict(texts), stage)


_MAX_VALUE_DEPTH = 8  # lists nested in an attribute value
# caps on a graph model's fields (a file is untrusted; views and sums take them as they are)
MAX_NAME_CHARS = 1 << 16  # an id, name, label, op, function, group, key
MAX_TYPE_CHARS = 1 << 20  # a type's text (a tuple of many tensors)
MAX_RANK = 64
MAX_DIM = 1 << 62  # one dim; a product or a sum of bytes still fits in int64 for the views
MAX_NBYTES = 1 << 52  # one value's or parameter's bytes (4 PiB): sums of many stay in int64
MAX_SYMBOLIC_DIM_CHARS = 256  # a symbolic dim's text (``n``, ``batch * 2``)
MAX_INDEX = (1 << 31) - 1  # an edge's operand index, a signature's num_input
MAX_DTYPE_CHARS = 256  # a dtype's name (f32, float8_e4m3fn, custom[posit]32, TVM's own)


def _text(rec: dict, key: str, what: str, default: Any = ..., cap: int = MAX_NAME_CHARS) -> Any:
    """`rec[key]`, which must be text of at most `cap` characters (`default` when
    missing or None, if given)."""
    value = rec.get(key) if default is not ... else rec[key]
    if value is None and default is not ...:
        return default
    if not isinstance(value, str):
        raise TypeError(f"{what}: {key} must be text, not {type(value).__name__}")
    if len(value) > cap:
        raise ValueError(f"{what}: {key} is {len(value):,} characters, over {cap:,}")
    return value


def _int(value: Any, what: str, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}")
    if high is not None and not 0 <= value <= high:
        raise ValueError(f"{what} must be between 0 and {high:,}, not {str(value)[:80]}")
    return value


def _nbytes(value: Any, what: str) -> int:
    if _int(value, what) < 0:
        raise ValueError(f"{what} must not be negative")
    if value > MAX_NBYTES:
        raise ValueError(f"{what} is {str(value)[:80]}, over {MAX_NBYTES:,} (4 PiB)")
    return value


def _dtype(value: Any, what: str) -> str | None:
    """None, or a dtype's name: short text on one line (views escape it; any compiler's
    dtype names are accepted, so it is not matched against a list)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what}: dtype must be text, not {type(value).__name__}")
    if len(value) > MAX_DTYPE_CHARS or any(ord(c) < 32 for c in value):
        raise ValueError(f"{what}: dtype {value[:80]!r} is not a dtype's name")
    return value


def _shape(value: Any, what: str) -> tuple | None:
    """None, or a list of at most MAX_RANK dims: integers from 0 to MAX_DIM, or short text
    for a symbolic dim (`n`)."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(d, str) or (isinstance(d, int) and not isinstance(d, bool)) for d in value
    ):
        raise TypeError(f"{what}: a shape must be a list of integers and names, not {value!r:.80}")
    if len(value) > MAX_RANK:
        raise ValueError(f"{what}: a shape of {len(value):,} dims, more than {MAX_RANK}")
    for d in value:
        if isinstance(d, str) and not 0 < len(d) <= MAX_SYMBOLIC_DIM_CHARS:
            raise ValueError(
                f"{what}: a symbolic dim must be 1 to {MAX_SYMBOLIC_DIM_CHARS} characters"
            )
        if isinstance(d, int) and not 0 <= d <= MAX_DIM:
            raise ValueError(f"{what}: a dim must be between 0 and 2**62, not {str(d)[:80]}")
    return tuple(value)


def _plain(value: Any, what: str, depth: int = 0) -> Any:
    """An attribute value: text, a number, true/false, null, or a list of those (nested a
    few levels); a mapping is not one (views show attributes as text)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, list) and depth < _MAX_VALUE_DEPTH:
        return [_plain(v, what, depth + 1) for v in value]
    raise TypeError(f"{what} must be text, a number or a list of them, not {value!r:.80}")


def _mapping(value: Any, what: str, values=_plain) -> dict:
    """A mapping of text keys to plain values (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be a mapping, not {type(value).__name__}")
    return {str(k): values(v, f"{what} {str(k)[:40]!r}") for k, v in value.items()}


def _prov_value(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{what} must be text, not {type(value).__name__}")


def _list(rec: dict, key: str, what: str) -> list:
    value = rec.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"{what}: {key} must be a list, not {type(value).__name__}")
    return value


def decode_graph(rec: Any, reader: Any = None) -> GraphModel:
    """A saved graph model; with `reader`, node and parameter objects from its ref table.
    Every field's type is checked (a file is untrusted): a wrong one is a TypeError, which
    `load` reports as a damaged trace file."""
    if not isinstance(rec, dict):
        raise TypeError("a graph must be a mapping")
    g = GraphModel()
    refs = reader.refs if reader is not None else []

    def obj(r: dict) -> Any:
        i = r.get("ref")
        if i is None or reader is None:
            return None
        return reader.ref(refs, i, "graph object reference")

    for k, n in enumerate(_list(rec, "nodes", "a graph")):
        if not isinstance(n, dict):
            raise TypeError(f"graph node {k} must be a mapping")
        what = f"graph node {k}"
        dtype = _dtype(n.get("dtype"), what)
        node = GraphNode(
            id=_text(n, "id", what),
            kind=_text(n, "kind", what),
            op=_text(n, "op", what),
            label=_text(n, "label", what),
            function=_text(n, "function", what),
            type=_text(n, "type", what, cap=MAX_TYPE_CHARS),
            shape=_shape(n.get("shape"), what),
            dtype=dtype,
            attrs=_mapping(n.get("attrs"), f"{what}'s attribute"),
            provenance=_mapping(n.get("provenance"), f"{what}'s provenance", _prov_value),
            group=_text(n, "group", what, ""),
            nbytes=_nbytes(n.get("nbytes") or 0, f"{what}'s nbytes"),
            obj=obj(n),
        )
        g.nodes[node.id] = node
        if node.obj is not None:
            g.by_object[id(node.obj)] = node.id
    for e in _list(rec, "edges", "a graph"):
        if not (isinstance(e, list) and len(e) == 4):
            raise TypeError(f"a graph edge must be [src, dst, index, type], not {e!r:.80}")
        src, dst, index, ty = e
        if not all(isinstance(x, str) for x in (src, dst, ty)):
            raise TypeError(f"a graph edge's ends and type must be text: {e!r:.80}")
        if max(len(src), len(dst)) > MAX_NAME_CHARS or len(ty) > MAX_TYPE_CHARS:
            raise ValueError("a graph edge's ends or type are over their length caps")
        g.edges.append(GraphEdge(src, dst, _int(index, "a graph edge's index", MAX_INDEX), ty))
    for k, p in enumerate(_list(rec, "params", "a graph")):
        if not isinstance(p, dict):
            raise TypeError(f"graph parameter {k} must be a mapping")
        what = f"graph parameter {k}"
        g.params[_text(p, "key", what)] = Param(
            _text(p, "name", what),
            _shape(p.get("shape"), what) or (),
            _dtype(_text(p, "dtype", what), what) or "",
            _nbytes(p.get("nbytes"), f"{what}'s nbytes"),
            _text(p, "node_id", what),
            obj(p),
        )
    for k, sig in enumerate(_list(rec, "signatures", "a graph")):
        if not isinstance(sig, dict):
            raise TypeError(f"signature {k} must be a mapping")
        what = f"signature {k}"
        params = _list(sig, "params", what)
        if not all(
            isinstance(x, list)
            and len(x) == 2
            and all(isinstance(t, str) for t in x)
            and len(x[0]) <= MAX_NAME_CHARS
            and len(x[1]) <= MAX_TYPE_CHARS
            for x in params
        ):
            raise TypeError(f"{what}: params must be [name, type] pairs of text (within caps)")
        num_input = sig.get("num_input")
        g.signatures[_text(sig, "name", what)] = Signature(
            _text(sig, "name", what),
            [tuple(x) for x in params],
            _text(sig, "result", what, cap=MAX_TYPE_CHARS),
            None if num_input is None else _int(num_input, f"{what}'s num_input", MAX_INDEX),
            _mapping(sig.get("attrs"), f"{what}'s attribute"),
        )
    return g
