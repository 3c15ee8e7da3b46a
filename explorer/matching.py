"""Matching the nodes of two steps' graph models: first by identity (a node a pass did not
touch is the same IR object on both sides), then by provenance (same source layer / op / node
and same op: the node was rewritten), then by structure (same op, attributes and matched
inputs), and last by name hint within a function. Source steps (FX / ONNX graphs, no IR
objects) are matched by node id, or against an IR step through the source node named in each
IR node's provenance."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from compiler.ir import Constant
from explorer.graph import GraphModel, GraphNode

LEAF_KINDS = frozenset({"input", "weight", "const", "param"})
_PROV_KEYS = ("framework", "module", "op", "node", "file")


def is_source(g: GraphModel) -> bool:
    """A graph model without IR objects (an FX or ONNX source graph)."""
    return bool(g.nodes) and all(n.obj is None for n in g.nodes.values() if n.kind != "output")


def ordered_inputs(g: GraphModel) -> dict[str, list[str]]:
    """Each node's inputs in `g` (by node id), in argument order."""
    ins: dict[str, list[tuple[int, str]]] = {}
    for e in g.edges:
        ins.setdefault(e.dst, []).append((e.index, e.src))
    return {k: [s for _, s in sorted(v)] for k, v in ins.items()}


# ----- node matching --------------------------------------------------------------------------


def match_nodes(ga: GraphModel, gb: GraphModel) -> dict[str, tuple[str, str]]:
    """Match nodes of `gb` to nodes of `ga`: `{id in b: (id in a, how)}`, one to one.

    Identity first (the same IR object), then leaves by name (weights, inputs, parameters),
    then provenance (same source layer / op / node and same op), then structure (same op,
    attributes and matched inputs) in topological order, then name hint and op within a
    function. Between a source graph and an IR graph: leaves by name, ops through the source
    node named in the IR node's provenance.
    """
    m = _Matcher(ga, gb)
    src_a, src_b = is_source(ga), is_source(gb)
    if not (src_a or src_b):
        m.by_identity()
    m.leaves()
    if src_a != src_b:
        m.by_source_node(ga if src_a else gb, reverse=src_b)
    else:
        if src_a:
            m.by_id()
        m.by_provenance()
        m.by_structure()
        m.by_name()
    m.outputs()
    return m.out


class _Matcher:
    def __init__(self, ga: GraphModel, gb: GraphModel):
        self.ga, self.gb = ga, gb
        self.ins_a, self.ins_b = ordered_inputs(ga), ordered_inputs(gb)
        self.out: dict[str, tuple[str, str]] = {}
        self.used_a: set[str] = set()
        # what a node stands for across calls (a fused function's parameter: the argument of
        # its one call), so a node moved into a function matches by the inputs it reads
        self.via_a, self.via_b = through_calls(ga, self.ins_a), through_calls(gb, self.ins_b)
        self.ops_b = [
            nid for nid, n in gb.nodes.items() if n.kind not in LEAF_KINDS and n.kind != "output"
        ]

    def pair(self, aid: str, bid: str, how: str) -> None:
        self.out[bid] = (aid, how)
        self.used_a.add(aid)

    def free_a(self, kinds=None) -> Iterable[tuple[str, GraphNode]]:
        for nid, n in self.ga.nodes.items():
            if nid not in self.used_a and (kinds is None or n.kind in kinds):
                yield nid, n

    def mapped_inputs(self, bid: str) -> list[str | None]:
        via, out = self.via_b, self.out
        ins = (via.get(i, i) for i in self.ins_b.get(bid, []))
        return [out[i][0] if i in out else None for i in ins]

    def _agreement(self, want: list[str | None], aid: str) -> int:
        """How many inputs of `aid` are the matches of the wanted inputs, position by position."""
        via = self.via_a
        have = (via.get(x, x) for x in self.ins_a.get(aid, []))
        return sum(x == y for x, y in zip(want, have, strict=False))

    def by_identity(self) -> None:
        index: dict[int, list[str]] = {}
        for nid, n in self.ga.nodes.items():
            if n.obj is not None:
                index.setdefault(id(n.obj), []).append(nid)
        for bid, n in self.gb.nodes.items():
            cands = index.get(id(n.obj)) if n.obj is not None else None
            if not cands:
                continue
            free = [c for c in cands if c not in self.used_a]
            if free:
                same_fn = [c for c in free if self.ga.nodes[c].function == n.function]
                self.pair((same_fn or free)[0], bid, "identity")

    def leaves(self) -> None:
        index: dict[tuple, list[str]] = {}
        for nid, n in self.free_a(LEAF_KINDS):
            index.setdefault(_leaf_key(n), []).append(nid)
        for bid, n in self.gb.nodes.items():
            if n.kind in LEAF_KINDS and bid not in self.out:
                cands = [c for c in index.get(_leaf_key(n), []) if c not in self.used_a]
                if cands:
                    self.pair(cands[0], bid, "name")

    def by_id(self) -> None:
        for bid in self.ops_b:
            n = self.gb.nodes[bid]
            other = self.ga.nodes.get(bid)
            if (
                bid not in self.out
                and other is not None
                and bid not in self.used_a
                and other.kind == n.kind
            ):
                self.pair(bid, bid, "name")

    def by_source_node(self, src: GraphModel, reverse: bool) -> None:
        """Pair each source node with the last IR node whose provenance names it (the one
        holding its value); `reverse` when the source graph is `b`."""
        by_key = {}
        for nid, n in src.nodes.items():
            if n.kind not in LEAF_KINDS and n.kind != "output":
                by_key.setdefault(n.provenance.get("node") or nid, nid)
        ir = self.ga if reverse else self.gb
        last: dict[str, str] = {}
        for nid, n in ir.nodes.items():
            key = n.provenance.get("node")
            if key in by_key and n.kind not in LEAF_KINDS and n.kind != "output":
                last[key] = nid
        for key, ir_id in last.items():
            aid, bid = (ir_id, by_key[key]) if reverse else (by_key[key], ir_id)
            if bid not in self.out and aid not in self.used_a:
                self.pair(aid, bid, "source-node")

    def by_provenance(self) -> None:
        groups: dict[tuple, list[str]] = {}
        for nid, n in self.free_a():
            key = _prov_key(n)
            if key is not None and n.kind not in LEAF_KINDS and n.kind != "output":
                groups.setdefault((key, n.kind, n.op), []).append(nid)
        if not groups:
            return
        for bid in self.ops_b:
            n = self.gb.nodes[bid]
            key = _prov_key(n)
            if bid in self.out or key is None:
                continue
            cands = [c for c in groups.get((key, n.kind, n.op), ()) if c not in self.used_a]
            if not cands:
                continue
            if len(cands) > 1:  # several nodes from one layer: prefer one reading the same inputs
                cands.sort(key=partial(self._agreement, self.mapped_inputs(bid)), reverse=True)
            self.pair(cands[0], bid, "provenance")

    def by_structure(self) -> None:
        index: dict[tuple, list[str]] = {}
        for nid, n in self.free_a():
            if n.kind not in LEAF_KINDS and n.kind != "output":
                ins = [self.via_a.get(x, x) for x in self.ins_a.get(nid, [])]
                index.setdefault(_struct_key(n, ins), []).append(nid)
        for bid in self.ops_b:
            if bid in self.out:
                continue
            ins = self.mapped_inputs(bid)
            if any(i is None for i in ins):
                continue
            cands = [
                c
                for c in index.get(_struct_key(self.gb.nodes[bid], ins), ())
                if c not in self.used_a
            ]
            if cands:
                self.pair(cands[0], bid, "structure")

    def by_name(self) -> None:
        index: dict[tuple, list[str]] = {}
        for nid, n in self.free_a():
            if n.kind not in LEAF_KINDS and n.kind != "output":
                index.setdefault((n.function, n.kind, n.op, n.label), []).append(nid)
        for bid in self.ops_b:
            n = self.gb.nodes[bid]
            if bid not in self.out:
                cands = [
                    c
                    for c in index.get((n.function, n.kind, n.op, n.label), ())
                    if c not in self.used_a
                ]
                if cands:
                    self.pair(cands[0], bid, "name")

    def outputs(self) -> None:
        outs_a = [nid for nid, n in self.free_a({"output"})]
        for bid, n in self.gb.nodes.items():
            if n.kind != "output" or bid in self.out:
                continue
            same = [
                a
                for a in outs_a
                if a not in self.used_a and self.ga.nodes[a].function == n.function
            ]
            any_ = [a for a in outs_a if a not in self.used_a]
            pick = same or (any_ if is_source(self.ga) or is_source(self.gb) else [])
            if pick:
                self.pair(pick[0], bid, "name")


def through_calls(g: GraphModel, ins: dict[str, list[str]]) -> dict[str, str]:
    """What a node stands for across function calls in `g` (`ins`: its
    `ordered_inputs`): a parameter of a function called once, the argument that call
    passes; a call, the node its function returns. Followed to the end (a fused function's
    parameter may be a parameter of its caller); nodes that stand for themselves are left
    out."""
    calls: dict[str, list[str]] = {}
    params: dict[str, list[str]] = {}
    returns: dict[str, str] = {}
    for nid, n in g.nodes.items():
        if n.kind == "call" and n.op.startswith("@"):
            calls.setdefault(n.op[1:], []).append(nid)
        elif n.kind in ("input", "param") and n.function:
            params.setdefault(n.function, []).append(nid)
        elif n.kind == "output" and n.function:
            returned = ins.get(nid, [])
            if len(returned) == 1:
                returns[n.function] = returned[0]
    step: dict[str, str] = {}
    for fn, sites in calls.items():
        if fn in returns:
            for c in sites:
                step[c] = returns[fn]
        if len(sites) == 1:
            args = ins.get(sites[0], [])
            for k, p in enumerate(params.get(fn, ())):
                if k < len(args):
                    step[p] = args[k]
    out: dict[str, str] = {}
    for start in step:
        x, seen = start, {start}
        while x in step and step[x] not in seen:  # a cycle (a recursive call) ends the walk
            x = step[x]
            seen.add(x)
        out[start] = x
    return out


def _leaf_key(n: GraphNode) -> tuple:
    if n.kind == "weight":
        return ("weight", n.label)
    if n.kind == "const":
        data = n.obj.data if isinstance(n.obj, Constant) else None
        digest = data.tobytes() if data is not None and data.nbytes <= 256 else None
        return ("const", n.function, n.type, digest)
    return (n.kind, n.function, n.label)


def _prov_key(n: GraphNode) -> tuple | None:
    key = tuple(n.provenance.get(k) for k in _PROV_KEYS)
    return None if all(v is None for v in key) else key


def _struct_key(n: GraphNode, inputs: list) -> tuple:
    return (n.kind, n.op, tuple(sorted(n.attrs.items())), tuple(inputs))


__all__ = [
    "LEAF_KINDS",
    "is_source",
    "match_nodes",
    "ordered_inputs",
    "through_calls",
]
