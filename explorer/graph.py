"""A neutral graph model of one step: nodes, edges, types, provenance, parameters and function
signatures. Diffs and widgets work on it the same way whatever the step came from (the IR,
an FX graph, an ONNX graph); each compiler's adapter builds it from its IR (passlens's IR:
``explorer.passlens.convert``)."""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, field
from typing import Any


@dataclass
class GraphNode:
    """One node: ``kind`` is input, weight, param (a weight passed as input), op, call, tuple,
    item, if or output; ``obj`` is the IR object it shows (None for source graphs);
    ``opaque`` for an opaque op (no converter): its ``target`` and ``runner`` (torch or
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
    """Value flowing from ``src`` into input ``index`` of ``dst``, with its type."""

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
        """How many nodes of each op (an ``If`` counts as op ``if``, so folding one shows)."""
        counts: dict[str, int] = {}
        for n in self.nodes.values():
            if n.kind in ("op", "call", "if"):
                counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def node_of(self, obj: Any) -> GraphNode | None:
        """The graph node showing an IR object, if any."""
        key = self.by_object.get(id(obj))
        return self.nodes.get(key) if key else None


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
