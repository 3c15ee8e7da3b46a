"""A neutral graph model of one step: nodes, edges, types, provenance, parameters and function
signatures. Diffs and widgets work on it the same way whatever the step came from (the IR,
an FX graph, an ONNX graph); each compiler's adapter builds it from its IR (passlens's IR:
`explorer.passlens.convert`)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class GraphNode:
    """One node: `kind` is input, weight, param (a weight passed as input), op, call, tuple,
    item, if or output; `obj` is the IR object it shows (None for source graphs);
    `opaque` for an opaque op (no converter): its `target` and `runner` (torch or
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
    """Value flowing from `src` into input `index` of `dst`, with its type."""

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
        """How many nodes of each op (an `If` counts as op `if`, so folding one shows)."""
        counts: dict[str, int] = {}
        for n in self.nodes.values():
            if n.kind in ("op", "call", "if"):
                counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def node_of(self, obj: Any) -> GraphNode | None:
        """The graph node showing an IR object, if any."""
        key = self.by_object.get(id(obj))
        return self.nodes.get(key) if key else None


_PLACED = ("module", "file", "from")  # provenance that says where in the model a node is
_OPS = ("op", "call", "tuple", "item", "if")


def place_added(g: GraphModel, before: Callable[[], GraphModel | None] | None = None) -> int:
    """Give each op a pass added without provenance of its own (no module path, no source
    location: a user's FX pass, a Relax pass's binding without a span, an ONNX Runtime node
    no rewrite record names) the place of the node it replaces, else of the node it reads or
    that reads it: its module path (`group`, provenance `module`), source `file` and
    `from` (the node it took them from), and, where its own type is unknown, the type of
    the node it replaces. So it is drawn in that layer and the error map finds it.

    `before` gives the graph of the step the pass was given (asked for only when some op
    needs a place): an added op replaces the node its reader read there, at the same input;
    the added ops it reads take its place. Without one, or for the rest: the place of the node
    it reads or of the node that reads it (through other added ops), the deeper of the two
    when one holds the other (a var reading the residual stream of `h.0` and read by
    `h.0.ln_1` is in `h.0.ln_1`), else the one it reads. An op with a source location
    but no module (the model's own top-level code) is left alone. Returns how many ops were
    placed."""
    nodes = g.nodes
    todo = [
        n
        for n in nodes.values()
        if n.kind in _OPS and not n.group and not any(n.provenance.get(k) for k in _PLACED)
    ]
    if not todo:
        return 0
    ins: dict[str, list[tuple[int, str]]] = {}
    outs: dict[str, list[tuple[int, str]]] = {}
    for e in g.edges:
        ins.setdefault(e.dst, []).append((e.index, e.src))
        outs.setdefault(e.src, []).append((e.index, e.dst))
    unplaced = {n.id for n in todo}
    place: dict[str, GraphNode] = {}
    prev = before() if before is not None else None
    if prev is not None and prev.nodes:
        read_before = {(e.dst, e.index): e.src for e in prev.edges}
        for n in todo:  # the node it replaces: what its reader read before, where it reads it
            for i, u in outs.get(n.id, ()):
                was, now = prev.nodes.get(u), nodes[u]
                if u in unplaced or was is None or (was.op, was.label) != (now.op, now.label):
                    continue  # an added reader, or another node under the same id
                y = prev.nodes.get(read_before.get((u, i), ""))
                if y is not None and y.kind in _OPS and y.id != n.id:
                    place[n.id] = y
                    if n.type in ("?", "") and y.type:
                        n.type, n.shape, n.dtype = y.type, y.shape, y.dtype
                    break
        for n in reversed(todo):  # what a replacement reads takes its place
            if n.id not in place:
                for _, u in outs.get(n.id, ()):
                    was = prev.nodes.get(u)
                    if u in place:
                        place[n.id] = place[u]
                    elif u not in unplaced and (was is None or was.op != nodes[u].op):
                        place[n.id] = nodes[u]  # a new node with a place of its own
                    else:
                        continue
                    break
    reads: dict[str, GraphNode] = {}  # the placed node each added op reads (through added ops)
    for n in todo:  # graph order: what it reads comes first
        for _, s in sorted(ins.get(n.id, ())):
            src = reads.get(s) if s in unplaced else nodes.get(s)
            if src is not None and src.group:
                reads[n.id] = src
                break
    readers: dict[str, GraphNode] = {}  # the placed node that reads it (through added ops)
    for n in reversed(todo):
        for _, u in outs.get(n.id, ()):
            dst = readers.get(u) if u in unplaced else nodes.get(u)
            if dst is not None and dst.group:
                readers[n.id] = dst
                break
    placed = 0
    for n in todo:
        src = place.get(n.id)
        if src is None:
            src, dst = reads.get(n.id), readers.get(n.id)
            if src is not None and dst is not None and dst.group.startswith(src.group + "."):
                src = dst  # the reader's place is inside the read one's: the more precise
            src = src or dst
        if src is not None:
            _take_place(n, src)
            placed += 1
    return placed


def _take_place(n: GraphNode, src: GraphNode) -> None:
    n.group = src.group
    prov = dict(n.provenance)
    if src.group:
        prov["module"] = src.group
    if src.provenance.get("file") and "file" not in prov:
        prov["file"] = src.provenance["file"]
    prov["from"] = src.id
    n.provenance = prov


@contextlib.contextmanager
def collector_paused():
    """The cyclic garbage collector paused: a graph model (or a diff) is some ten objects per
    node, all kept, which the collector would walk several times while they are made (and
    every other object of the process with them), freeing nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
