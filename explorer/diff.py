"""What changed between two steps: nodes, shapes, op counts, signatures, parameters, IR text.

``diff(a, b)`` is a pure function of two steps (of one trace or of two). Nodes of the two
steps' graph models are matched first by identity (a node a pass did not touch is the same IR
object on both sides), then by provenance (same source layer / op / node and same op: the node
was rewritten), then by structure (same op, attributes and matched inputs), and last by name
hint within a function. Source steps (FX / ONNX graphs, no IR objects) are matched by node id,
or against an IR step through the source node named in each IR node's provenance.

Parameters are compared by name and by content: added, removed, resized, cast, values
changed, renamed, duplicated (same content as another parameter), permuted, and broadcast
copies (N copies of another parameter, or of its transpose, along leading dims). Content is
compared through cheap fingerprints first (first and last element, a few sampled elements);
full comparisons are made only for candidates that pass them.

When ``b`` shows the very same module as ``a`` (a pass that changed nothing) the diff is empty
and costs nothing: no graph model, text or parameter data is touched.
"""

from __future__ import annotations

import dataclasses
import difflib
import html
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from compiler.ir.nodes import Constant
from explorer.fmt import format_bytes, signed_bytes
from explorer.graph import GraphModel, GraphNode, Param, Signature

if TYPE_CHECKING:
    from explorer.trace import Step

LEAF_KINDS = frozenset({"input", "weight", "const", "param"})
_PROV_KEYS = ("framework", "module", "op", "node", "file")
_SAMPLES = 32  # sampled elements per fingerprint
_WIDE_SAMPLES = 4096  # sampled elements checking a cast past the budget
CAST_CHECK_BUDGET = 1 << 23  # elements per diff whose casts and permutations are checked in full
_SHOWN = 12  # lines per section in the text summary


# ===== results ================================================================================


class ShapeChange(NamedTuple):
    """A matched node whose shape changed: its id (after), its type before and after."""

    node: str
    before: str
    after: str


@dataclass
class NodeChange:
    """A matched node that differs: what changed, as ``{field: (before, after)}``.

    Fields: ``type``, ``shape``, ``dtype``, ``op``, ``attrs`` (``{key: (before, after)}``),
    ``inputs`` (ids of the inputs, before and after), ``function``, ``kind``. ``how`` says
    how the nodes were matched.
    """

    before: GraphNode
    after: GraphNode
    how: str
    fields: dict
    inputs_text: str = ""

    def __str__(self) -> str:
        parts = []
        for key, value in self.fields.items():
            if key in ("shape", "dtype") and "type" in self.fields:
                continue
            if key == "attrs":
                parts.append(", ".join(f"{k}={o} -> {k}={n}" for k, (o, n) in value.items()))
                continue
            old, new = value
            if key == "inputs":
                parts.append(self.inputs_text or f"inputs ({', '.join(old)}) -> ({', '.join(new)})")
            else:
                parts.append(f"{key} {old} -> {new}")
        return f"{self.after.id} ({self.after.op}): " + "; ".join(parts)


@dataclass
class SignatureChange:
    """A function present on both sides whose signature differs; ``changes`` says how."""

    name: str
    before: Signature
    after: Signature
    changes: list[str]

    def __str__(self) -> str:
        return f"@{self.name}: " + "; ".join(self.changes)


@dataclass
class ParamResize:
    """A parameter kept under its name with another shape."""

    name: str
    before: tuple
    after: tuple
    nbytes_before: int
    nbytes_after: int

    @property
    def message(self) -> str:
        """One line for people."""
        return (
            f"`{self.name}` resized {_shape(self.before)} -> {_shape(self.after)} "
            f"({format_bytes(self.nbytes_before)} -> {format_bytes(self.nbytes_after)})"
        )


@dataclass
class ParamCast:
    """A parameter whose values were cast to another dtype (same shape, values within the
    lower precision's tolerance); ``source`` is the parameter it was cast from (the same name
    when the cast kept it). ``checked`` says how the values were compared: ``all`` of them,
    a ``sample`` of them (past ``CAST_CHECK_BUDGET`` elements per diff) or ``none`` (no data,
    e.g. a weight passed as a parameter)."""

    name: str
    source: str
    before: str
    after: str
    checked: str = "all"

    @property
    def message(self) -> str:
        """One line for people: ``fc.weight cast f32 -> f16``."""
        text = f"{self.source} cast {self.before} -> {self.after}"
        return text if self.name == self.source else f"{text} (now `{self.name}`)"


@dataclass
class ParamSame:
    """A parameter with the same content (dtype, shape, values) as ``source``: a duplicate
    when both are present after, a rename when the source is gone."""

    name: str
    source: str
    nbytes: int

    @property
    def message(self) -> str:
        """One line for people."""
        return (
            f"`{self.name}` has the same content as `{self.source}` ({format_bytes(self.nbytes)})"
        )


@dataclass
class ParamCopy:
    """A parameter whose data is ``copies`` copies of ``source`` (or of ``source`` with its
    axes permuted by ``axes``) along the leading dims ``lead``; with one copy, a permuted or
    reshaped form of the source. ``checked``: ``all`` values compared, or a ``sample`` (a
    single permuted copy past ``CAST_CHECK_BUDGET`` elements per diff)."""

    name: str
    source: str
    lead: tuple
    copies: int
    axes: tuple | None
    nbytes: int
    source_nbytes: int
    checked: str = "all"

    @property
    def transposed(self) -> bool:
        """Whether the copies are of a permutation of the source's axes."""
        return self.axes is not None and tuple(self.axes) != tuple(range(len(self.axes)))

    @property
    def message(self) -> str:
        """One line for people: ``x is 1 × 56 = 56 copies of `linear.weight` (...)``."""
        how = (
            "transposed"
            if self.axes is not None and len(self.axes) == 2
            else f"axes {list(self.axes or ())}"
        )
        if self.copies == 1:
            form = how if self.transposed else "reshaped"
            return f"`{self.name}` is `{self.source}` {form} ({format_bytes(self.nbytes)})"
        count = " × ".join(str(d) for d in self.lead)
        if len(self.lead) > 1:
            count += f" = {self.copies}"
        extra = f", {how}" if self.transposed else ""
        sizes = f"{self.copies} x {format_bytes(self.source_nbytes)} = {format_bytes(self.nbytes)}"
        return f"`{self.name}` is {count} copies of `{self.source}` ({sizes}{extra})"


@dataclass
class ParamGrowth:
    """A parameter that made the total grow: its bytes and the net bytes it added (after
    subtracting the parameter it replaced, if any), and why."""

    name: str
    nbytes: int
    delta: int
    reason: str


@dataclass
class ParamDiff:
    """How the parameters changed between two graph models."""

    added: list[Param] = field(default_factory=list)
    removed: list[Param] = field(default_factory=list)
    resized: list[ParamResize] = field(default_factory=list)
    cast: list[ParamCast] = field(default_factory=list)
    values_changed: list[str] = field(default_factory=list)
    renamed: list[ParamSame] = field(default_factory=list)
    duplicated: list[ParamSame] = field(default_factory=list)
    broadcast: list[ParamCopy] = field(default_factory=list)
    permuted: list[ParamCopy] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    growth: list[ParamGrowth] = field(default_factory=list)

    @property
    def bytes_delta(self) -> int:
        """Bytes after minus bytes before."""
        return self.bytes_after - self.bytes_before

    @property
    def count(self) -> int:
        """How many parameters (by name, before or after) were added, removed, resized, cast,
        renamed or given new values."""
        names = {p.name for p in (*self.added, *self.removed)}
        names.update(x.name for x in (*self.resized, *self.cast, *self.renamed))
        names.update(x.source for x in (*self.cast, *self.renamed))
        return len(names | set(self.values_changed))

    @property
    def is_empty(self) -> bool:
        """Whether no parameter changed."""
        return self.count == 0

    def messages(self) -> list[str]:
        """One line per finding, the broadcast copies (bloat) first."""
        out = [c.message for c in self.broadcast]
        out += [f"{s.message}: a duplicate" for s in self.duplicated]
        out += [r.message for r in self.resized]
        out += [c.message for c in self.cast]
        out += [f"`{s.source}` is now `{s.name}`" for s in self.renamed]
        out += [c.message for c in self.permuted]
        out += [f"`{n}` has new values" for n in self.values_changed]
        explained = {
            x.name
            for x in (*self.broadcast, *self.duplicated, *self.cast, *self.renamed, *self.permuted)
        }
        sources = {x.source for x in (*self.cast, *self.renamed, *self.permuted, *self.broadcast)}
        out += [
            f"+ `{p.name}` {_shape(p.shape)} {p.dtype} ({format_bytes(p.nbytes)})"
            for p in self.added
            if p.name not in explained
        ]
        out += [
            f"- `{p.name}` {_shape(p.shape)} {p.dtype} ({format_bytes(p.nbytes)})"
            for p in self.removed
            if p.name not in sources
        ]
        return out


@dataclass(eq=False)
class Diff:
    """What changed from step ``a`` to step ``b`` (see the module docstring).

    ``matches`` maps each matched node id of ``b`` to ``(id in a, how)`` where ``how`` is
    identity, provenance, structure, name or source-node. ``added`` are nodes of ``b`` with no
    match, ``removed`` nodes of ``a`` with none, ``changed`` matched nodes that differ.
    """

    a: Step = field(repr=False)
    b: Step = field(repr=False)
    identical: bool = False
    matches: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)
    added: list[GraphNode] = field(default_factory=list)
    removed: list[GraphNode] = field(default_factory=list)
    changed: list[NodeChange] = field(default_factory=list)
    shape_changes: list[ShapeChange] = field(default_factory=list)
    op_counts_before: dict[str, int] = field(default_factory=dict)
    op_counts_after: dict[str, int] = field(default_factory=dict)
    functions_added: list[Signature] = field(default_factory=list)
    functions_removed: list[Signature] = field(default_factory=list)
    signature_changes: list[SignatureChange] = field(default_factory=list)
    params: ParamDiff = field(default_factory=ParamDiff)

    # ----- summaries ------------------------------------------------------------------------
    @property
    def is_empty(self) -> bool:
        """Whether nothing at all changed."""
        return self.identical or not (
            self.added
            or self.removed
            or self.changed
            or self.op_count_changes
            or self.functions_added
            or self.functions_removed
            or self.signature_changes
            or not self.params.is_empty
        )

    def __bool__(self) -> bool:
        return not self.is_empty

    @property
    def op_count_changes(self) -> dict[str, int]:
        """Op -> change in its count (nonzero only): growth first, then shrinkage."""
        ops = set(self.op_counts_before) | set(self.op_counts_after)
        deltas = {
            op: self.op_counts_after.get(op, 0) - self.op_counts_before.get(op, 0) for op in ops
        }
        return dict(
            sorted(
                ((k, v) for k, v in deltas.items() if v),
                key=lambda kv: (kv[1] < 0, -abs(kv[1]), kv[0]),
            )
        )

    def op_count_text(self) -> str:
        """The op-count changes in one line: ``+3 matmul, -1 linear``."""
        return ", ".join(f"{v:+d} {k}" for k, v in self.op_count_changes.items())

    @property
    def param_bytes_before(self) -> int:
        """Bytes of every weight of ``a``."""
        return self.a.param_bytes if self.identical else self.params.bytes_before

    @property
    def param_bytes_after(self) -> int:
        """Bytes of every weight of ``b``."""
        return self.b.param_bytes if self.identical else self.params.bytes_after

    @property
    def param_bytes_delta(self) -> int:
        """Bytes after minus bytes before."""
        return 0 if self.identical else self.params.bytes_delta

    # ----- the IR text ----------------------------------------------------------------------
    @cached_property
    def text_diff(self) -> str:
        """A unified diff of the two steps' IR text ("" when they show the same module)."""
        if self.identical:
            return ""
        return "".join(
            difflib.unified_diff(
                self.a.text.splitlines(keepends=True),
                self.b.text.splitlines(keepends=True),
                fromfile=_step_name(self.a),
                tofile=_step_name(self.b),
            )
        )

    @cached_property
    def _opcodes(self) -> tuple[list[str], list[str], list]:
        left, right = self.a.text.splitlines(), self.b.text.splitlines()
        if self.identical:
            return left, right, [("equal", 0, len(left), 0, len(right))]
        return left, right, difflib.SequenceMatcher(None, left, right).get_opcodes()

    def side_by_side(self, context: int | None = None) -> list[tuple[str | None, str | None, str]]:
        """Rows ``(left line, right line, tag)`` for a two-column view; tag is equal, replace,
        delete or insert (a missing side is None). With ``context``, runs of equal lines longer
        than twice that are cut to ``context`` lines each side of a ``("…", "…", "skip")`` row."""
        left, right, opcodes = self._opcodes
        rows: list[tuple[str | None, str | None, str]] = []
        for tag, i1, i2, j1, j2 in opcodes:
            if tag == "equal":
                pairs = [(left[i], right[j1 + k], "equal") for k, i in enumerate(range(i1, i2))]
                if context is not None and len(pairs) > 2 * context + 1:
                    head = pairs[:context] if rows else []
                    tail = (
                        pairs[len(pairs) - context :] if i2 < len(left) or j2 < len(right) else []
                    )
                    skipped = len(pairs) - len(head) - len(tail)
                    pairs = [*head, (f"… {skipped} lines", f"… {skipped} lines", "skip"), *tail]
                rows.extend(pairs)
                continue
            n = max(i2 - i1, j2 - j1)
            for k in range(n):
                lt = left[i1 + k] if i1 + k < i2 else None
                rt = right[j1 + k] if j1 + k < j2 else None
                rows.append(
                    (
                        lt,
                        rt,
                        tag
                        if lt is not None and rt is not None
                        else ("delete" if rt is None else "insert"),
                    )
                )
        return rows

    # ----- display ----------------------------------------------------------------------------
    def sections(self) -> list[tuple[str, list[str]]]:
        """The summary as (title, lines) sections, shared by the text and HTML forms."""
        if self.identical:
            return []
        out: list[tuple[str, list[str]]] = []
        if self.op_count_changes:
            out.append(("ops", [self.op_count_text()]))
        if self.removed:
            out.append(("removed", [_node_line(n) for n in self.removed]))
        if self.added:
            out.append(("added", [_node_line(n) for n in self.added]))
        if self.changed:
            out.append(("changed", [str(c) for c in self.changed]))
        if self.shape_changes:
            out.append(
                ("shapes", [f"{s.node}: {s.before} -> {s.after}" for s in self.shape_changes])
            )
        sigs = [f"+ {s}" for s in self.functions_added] + [f"- {s}" for s in self.functions_removed]
        sigs += [str(c) for c in self.signature_changes]
        if sigs:
            out.append(("functions", sigs))
        if not self.params.is_empty:
            p = self.params
            head = (
                f"{format_bytes(p.bytes_before)} -> {format_bytes(p.bytes_after)}"
                f" ({signed_bytes(p.bytes_delta)})"
            )
            lines = [head, *self.params.messages()]
            if self.params.growth:
                lines.append(
                    "grew most: "
                    + ", ".join(
                        f"`{g.name}` +{format_bytes(g.delta)}" for g in self.params.growth[:5]
                    )
                )
            out.append(("params", lines))
        return out

    def headline(self) -> str:
        """One line: the two steps and the counts."""
        head = f"{_step_name(self.a)} -> {_step_name(self.b)}"
        if self.identical:
            return f"{head}: no change (same module)"
        if self.is_empty:
            return f"{head}: no change"
        return (
            f"{head}: {len(self.added)} added, {len(self.removed)} removed, "
            f"{len(self.changed)} changed nodes"
            + (f", {len(self.shape_changes)} shape changes" if self.shape_changes else "")
            + (f", {self.params.count} params changed" if self.params.count else "")
            + (f" ({signed_bytes(self.params.bytes_delta)})" if self.params.bytes_delta else "")
        )

    def __str__(self) -> str:
        lines = [self.headline()]
        for title, items in self.sections():
            lines.append(f"  {title}:")
            lines += [f"    {x}" for x in items[:_SHOWN]]
            if len(items) > _SHOWN:
                lines.append(f"    … and {len(items) - _SHOWN} more")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Diff {self.headline()}>"

    def _repr_html_(self) -> str:
        parts = [f"<div class='pl-diff'><b>{html.escape(self.headline())}</b>"]
        for title, items in self.sections():
            shown = "".join(f"<li><code>{html.escape(x)}</code></li>" for x in items[:50])
            more = f"<li>… and {len(items) - 50} more</li>" if len(items) > 50 else ""
            summary = f"<summary>{html.escape(title)} ({len(items)})</summary>"
            parts.append(f"<details open>{summary}<ul>{shown}{more}</ul></details>")
        return "".join(parts) + "</div>"


# ===== the diff =============================================================================


def diff(a: Step, b: Step) -> Diff:
    """What changed from step ``a`` to step ``b`` (any two steps, even of different traces)."""
    if a is b or _same_module(a, b):
        return Diff(a, b, identical=True)
    ga, gb = a.graph, b.graph
    matches = match_nodes(ga, gb)
    cross = _is_source(ga) != _is_source(gb)
    d = Diff(a, b, matches=matches)
    matched_a = {aid for aid, _ in matches.values()}
    d.added = [n for nid, n in gb.nodes.items() if nid not in matches]
    d.removed = [n for nid, n in ga.nodes.items() if nid not in matched_a]
    ins_a, ins_b = _inputs(ga), _inputs(gb)
    for bid, (aid, how) in matches.items():
        na, nb = ga.nodes[aid], gb.nodes[bid]
        fields = _node_changes(na, nb, how, cross, ins_a.get(aid, []), ins_b.get(bid, []), matches)
        if fields:
            change = NodeChange(na, nb, how, fields)
            if "inputs" in fields:
                change.inputs_text = _inputs_text(*fields["inputs"], ga, gb, matches)
            d.changed.append(change)
            if "shape" in fields:
                d.shape_changes.append(ShapeChange(bid, na.type, nb.type))
    d.op_counts_before, d.op_counts_after = ga.op_counts(), gb.op_counts()
    if not (_is_source(ga) or _is_source(gb)):
        d.functions_added, d.functions_removed, d.signature_changes = diff_signatures(
            ga.signatures, gb.signatures
        )
    d.params = diff_params(ga.params, gb.params)
    return d


def _same_module(a: Step, b: Step) -> bool:
    if a.source_graph is not None or b.source_graph is not None:
        return a.source_graph is b.source_graph
    ma, mb = a.shown_module, b.shown_module
    return ma is not None and ma is mb


def _step_name(s: Step) -> str:
    return f"#{s.index} {s.name}"


def _is_source(g: GraphModel) -> bool:
    """A graph model without IR objects (an FX or ONNX source graph)."""
    return bool(g.nodes) and all(n.obj is None for n in g.nodes.values() if n.kind != "output")


def _inputs(g: GraphModel) -> dict[str, list[str]]:
    ins: dict[str, list[tuple[int, str]]] = {}
    for e in g.edges:
        ins.setdefault(e.dst, []).append((e.index, e.src))
    return {k: [s for _, s in sorted(v)] for k, v in ins.items()}


# ----- node matching --------------------------------------------------------------------------


def match_nodes(ga: GraphModel, gb: GraphModel) -> dict[str, tuple[str, str]]:
    """Match nodes of ``gb`` to nodes of ``ga``: ``{id in b: (id in a, how)}``, one to one.

    Identity first (the same IR object), then leaves by name (weights, inputs, parameters),
    then provenance (same source layer / op / node and same op), then structure (same op,
    attributes and matched inputs) in topological order, then name hint and op within a
    function. Between a source graph and an IR graph: leaves by name, ops through the source
    node named in the IR node's provenance.
    """
    m = _Matcher(ga, gb)
    src_a, src_b = _is_source(ga), _is_source(gb)
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
        self.ins_a, self.ins_b = _inputs(ga), _inputs(gb)
        self.out: dict[str, tuple[str, str]] = {}
        self.used_a: set[str] = set()
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
        return [self.out[i][0] if i in self.out else None for i in self.ins_b.get(bid, [])]

    def _agreement(self, want: list[str | None], aid: str) -> int:
        """How many inputs of ``aid`` are the matches of the wanted inputs, position by position."""
        return sum(x == y for x, y in zip(want, self.ins_a.get(aid, []), strict=False))

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
        holding its value); ``reverse`` when the source graph is ``b``."""
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
                index.setdefault(_struct_key(n, self.ins_a.get(nid, [])), []).append(nid)
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
            pick = same or (any_ if _is_source(self.ga) or _is_source(self.gb) else [])
            if pick:
                self.pair(pick[0], bid, "name")


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


_DTYPE_ALIASES = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "bool": "bool",
}


def _node_changes(na, nb, how, cross, ins_a, ins_b, matches) -> dict:
    fields: dict = {}
    if how == "identity":  # the same object: only where it sits can differ
        if na.function != nb.function:
            fields["function"] = (na.function, nb.function)
        if na.kind != nb.kind:
            fields["kind"] = (na.kind, nb.kind)
        return fields
    if cross:  # a source graph and an IR graph: compare what both formats can say
        if (
            na.shape is not None
            and nb.shape is not None
            and _shape_key(na.shape) != _shape_key(nb.shape)
        ):
            fields["shape"] = (na.shape, nb.shape)
        da, db = _DTYPE_ALIASES.get(na.dtype, na.dtype), _DTYPE_ALIASES.get(nb.dtype, nb.dtype)
        if da and db and da != db:
            fields["dtype"] = (na.dtype, nb.dtype)
        return fields
    if na.type != nb.type:
        fields["type"] = (na.type, nb.type)
        if na.shape != nb.shape:
            fields["shape"] = (na.shape, nb.shape)
        if na.dtype != nb.dtype:
            fields["dtype"] = (na.dtype, nb.dtype)
    if na.op != nb.op:
        fields["op"] = (na.op, nb.op)
    if na.attrs != nb.attrs:
        keys = list(dict.fromkeys([*na.attrs, *nb.attrs]))
        fields["attrs"] = {
            k: (na.attrs.get(k), nb.attrs.get(k))
            for k in keys
            if na.attrs.get(k) != nb.attrs.get(k)
        }
    if na.function != nb.function:
        fields["function"] = (na.function, nb.function)
    mapped = [matches[i][0] if i in matches else None for i in ins_b]
    if mapped != list(ins_a):
        fields["inputs"] = (list(ins_a), list(ins_b))
    return fields


def _inputs_text(
    ins_a: list[str], ins_b: list[str], ga: GraphModel, gb: GraphModel, matches
) -> str:
    """The inputs that differ, by position: ``input 1: %t (permute_dims) -> $w.t``."""
    parts = []
    for i in range(max(len(ins_a), len(ins_b))):
        x = ins_a[i] if i < len(ins_a) else None
        y = ins_b[i] if i < len(ins_b) else None
        if y is not None and x is not None and matches.get(y, (None,))[0] == x:
            continue
        if x is not None and y is not None and x == y:  # same name, other node: say which
            x, y = (
                f"{x} ({ga.nodes[x].op})" if x in ga.nodes else x,
                f"{y} ({gb.nodes[y].op})" if y in gb.nodes else y,
            )
        parts.append(f"input {i}: {x or '(none)'} -> {y or '(none)'}")
    return "; ".join(parts)


def _shape_key(shape) -> tuple:
    return tuple(str(d) for d in shape)


# ----- signatures ------------------------------------------------------------------------------


def diff_signatures(
    sa: dict[str, Signature], sb: dict[str, Signature]
) -> tuple[list[Signature], list[Signature], list[SignatureChange]]:
    """Functions added, functions removed, and signature changes of functions on both sides."""
    added = [s for n, s in sb.items() if n not in sa]
    removed = [s for n, s in sa.items() if n not in sb]
    changes = []
    for name in sa.keys() & sb.keys():
        a, b = sa[name], sb[name]
        what = []
        if a.params != b.params:
            fmt = lambda ps: ", ".join(f"%{n}: {t}" for n, t in ps)  # noqa: E731
            what.append(f"params ({fmt(a.params)}) -> ({fmt(b.params)})")
        if a.num_input != b.num_input:
            what.append(f"num_input {a.num_input} -> {b.num_input}")
        if a.result != b.result:
            what.append(f"result {a.result} -> {b.result}")
        other_a = {k: v for k, v in a.attrs.items() if k != "num_input"}
        other_b = {k: v for k, v in b.attrs.items() if k != "num_input"}
        if other_a != other_b:
            what.append(f"attrs {other_a} -> {other_b}")
        if what:
            changes.append(SignatureChange(name, a, b, what))
    changes.sort(key=lambda c: list(sb).index(c.name))
    return added, removed, changes


# ----- parameters ------------------------------------------------------------------------------


def diff_params(pa: dict[str, Param], pb: dict[str, Param]) -> ParamDiff:
    """How the parameters changed from ``pa`` to ``pb`` (graph-model params, keyed by name:
    a weight's name, or ``@function/name`` for a weight passed as a parameter)."""
    pa, pb = _keyed(pa), _keyed(pb)
    out = ParamDiff(
        bytes_before=sum(p.nbytes for p in pa.values()),
        bytes_after=sum(p.nbytes for p in pb.values()),
    )
    # the same weight object under another key (a weight parameter moved to another function)
    a_by_obj = {id(p.obj): n for n, p in pa.items() if p.obj is not None}
    moved = {}
    for n, p in pb.items():
        src = a_by_obj.get(id(p.obj)) if p.obj is not None and n not in pa else None
        if src is not None and src not in pb:
            moved[n] = src
            out.renamed.append(ParamSame(n, src, p.nbytes))
    out.added = [p for n, p in pb.items() if n not in pa and n not in moved]
    out.removed = [p for n, p in pa.items() if n not in pb and n not in moved.values()]
    budget = [CAST_CHECK_BUDGET]  # elements left to check casts in full
    fresh: list[Param] = list(out.added)  # parameters whose content is new after
    replaced: dict[str, int] = {}  # name after -> bytes of what it replaced
    for name in pa.keys() & pb.keys():
        a, b = pa[name], pb[name]
        if a.obj is not None and a.obj is b.obj:
            continue
        if tuple(a.shape) != tuple(b.shape):
            out.resized.append(
                ParamResize(name, tuple(a.shape), tuple(b.shape), a.nbytes, b.nbytes)
            )
            fresh.append(b)
            replaced[name] = a.nbytes
        elif a.dtype != b.dtype:
            da, db = _data(a), _data(b)
            checked = "none" if da is None or db is None else _cast_equal(da, db, budget)
            if checked:
                out.cast.append(ParamCast(name, name, a.dtype, b.dtype, checked))
            else:
                out.values_changed.append(name)
        else:
            da, db = _data(a), _data(b)
            if da is not None and db is not None and not _same_content(da, db):
                out.values_changed.append(name)
                fresh.append(b)
                replaced[name] = a.nbytes
    out.resized.sort(key=lambda r: list(pb).index(r.name))
    _explain_fresh(out, pa, pb, fresh, replaced, budget)
    out.broadcast.sort(key=lambda c: -c.nbytes)  # the biggest bloat first
    growth = []
    for p in fresh if out.bytes_delta > 0 else ():
        delta = p.nbytes - replaced.get(p.name, 0)
        if delta > 0:
            growth.append(ParamGrowth(p.name, p.nbytes, delta, _reason(out, p.name)))
    out.growth = sorted(growth, key=lambda g: (-g.delta, g.name))
    return out


def _keyed(params: dict[str, Param]) -> dict[str, Param]:
    """Params named by their key, dtypes in the IR's short names (``float32`` -> ``f32``)."""
    out = {}
    for k, p in params.items():
        dtype = _DTYPE_ALIASES.get(p.dtype, p.dtype)
        out[k] = (
            p if p.name == k and p.dtype == dtype else dataclasses.replace(p, name=k, dtype=dtype)
        )
    return out


def _reason(out: ParamDiff, name: str) -> str:
    for x in (
        *out.broadcast,
        *out.duplicated,
        *out.resized,
        *out.cast,
        *out.renamed,
        *out.permuted,
    ):
        if x.name == name:
            return x.message
    return "new"


def _data(p: Param) -> np.ndarray | None:
    return p.obj.data if isinstance(p.obj, Constant) else None


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_CHUNK = 1 << 24  # elements compared at a time (bounds the temporary boolean array)


def _bits(x: np.ndarray) -> np.ndarray:
    """The array's bits as unsigned integers: bitwise comparison is the fastest, and treats
    two NaNs with the same bits as equal."""
    u = _UINT.get(x.dtype.itemsize)
    return x.view(u) if u is not None and x.dtype.kind != "O" else x


def _at(x: np.ndarray, flat_index: np.ndarray) -> np.ndarray:
    """Elements at C-order flat positions, without copying a non-contiguous array."""
    if x.flags.c_contiguous or x.ndim <= 1:
        return x.reshape(-1)[flat_index]
    return x[np.unravel_index(flat_index, x.shape)]


def _sample_index(n: int, k: int = _SAMPLES) -> np.ndarray:
    """``k`` fixed, spread-out positions in ``range(n)`` (first and last included)."""
    if n <= k:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, k).astype(np.int64))


def _same_view(x: np.ndarray, y: np.ndarray) -> bool:
    """The same memory seen the same way (a folded view of a weight): equal without looking."""
    return (
        x.shape == y.shape
        and x.strides == y.strides
        and x.dtype == y.dtype
        and x.__array_interface__["data"][0] == y.__array_interface__["data"][0]
    )


def _squeezed(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays without their leading 1-dims (views)."""
    while x.ndim > 1 and x.shape[0] == 1:
        x, y = x[0], y[0]
    return x, y


def _full_equal(x: np.ndarray, y: np.ndarray) -> bool:
    """Bitwise comparison of two arrays of one shape, in chunks (the only full pass over
    data, made only for candidates that passed the sampled fingerprints)."""
    x, y = _squeezed(x, y)  # so chunks are rows
    if _same_view(x, y):
        return True
    rows = x.shape[0] if x.ndim else 1
    step = max(1, _CHUNK // max(1, x.size // max(rows, 1)))
    if x.ndim == 0 or step >= rows:
        return bool(np.array_equal(_bits(x), _bits(y)))
    return all(
        np.array_equal(_bits(x[i : i + step]), _bits(y[i : i + step])) for i in range(0, rows, step)
    )


def _same_content(x: np.ndarray, y: np.ndarray) -> bool:
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    idx = _sample_index(x.size)
    if not np.array_equal(_bits(_at(x, idx)), _bits(_at(y, idx))):
        return False
    return _full_equal(x, y)


def _cast_close(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether ``x`` and ``y`` (same shape, different dtypes) hold the same values up to the
    lower precision: the wider one cast to the narrower one's dtype, then compared bitwise, or
    within a couple of units in the last place (another rounding)."""
    lo, hi = (x, y) if x.dtype.itemsize <= y.dtype.itemsize else (y, x)
    if lo.dtype.kind == "b" or hi.dtype.kind == "b":
        return bool(np.array_equal(lo.astype(bool), hi.astype(bool)))
    narrowed = hi.astype(lo.dtype)
    if np.array_equal(_bits(narrowed), _bits(lo)):
        return True
    if not _has_nan(lo.dtype):
        return False
    eps = float(np.finfo(lo.dtype).eps) if lo.dtype.kind == "f" else 2.0**-7
    return bool(
        np.allclose(
            narrowed.astype(np.float32), lo.astype(np.float32), rtol=2 * eps, atol=0, equal_nan=True
        )
    )


def _has_nan(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def _cast_equal(x: np.ndarray, y: np.ndarray, budget: list[int]) -> str:
    """How ``y`` was found to be ``x`` cast (``all`` values compared, or a ``sample`` of them
    once ``budget[0]`` elements have been spent), or "" if it is not."""
    if x.shape != y.shape:
        return ""
    idx = _sample_index(x.size)
    if not _cast_close(_at(x, idx), _at(y, idx)):
        return ""
    if x.size > budget[0]:
        wide = _sample_index(x.size, _WIDE_SAMPLES)
        return "sample" if _cast_close(_at(x, wide), _at(y, wide)) else ""
    budget[0] -= x.size
    return "all" if _full_cast_close(x, y) else ""


def _full_cast_close(x: np.ndarray, y: np.ndarray) -> bool:
    """``_cast_close`` over whole arrays, in chunks of rows."""
    while x.ndim > 1 and x.shape[0] == 1:
        x, y = x[0], y[0]
    rows = x.shape[0] if x.ndim else 1
    step = max(1, _CHUNK // max(1, x.size // max(rows, 1)))
    if x.ndim == 0 or step >= rows:
        return _cast_close(x, y)
    return all(_cast_close(x[i : i + step], y[i : i + step]) for i in range(0, rows, step))


def _explain_fresh(
    out: ParamDiff, pa, pb, fresh: list[Param], replaced: dict[str, int], budget: list[int]
) -> None:
    """Say where each new parameter's content came from: a duplicate or rename of another,
    a cast of a removed one, a permutation, or broadcast copies of one."""
    if not fresh:
        return
    removed = {p.name: p for p in out.removed}
    # every parameter with data that a fresh one could come from, by (dtype, first, last)
    pool: dict[tuple, list[tuple[str, Param, bool]]] = {}
    for name, p in pb.items():
        d = _data(p)
        if d is not None and d.size:
            pool.setdefault(_ends_key(d), []).append((name, p, True))
    for name, p in pa.items():
        d = _data(p)
        if d is not None and d.size and (name not in pb or pb[name].obj is not p.obj):
            pool.setdefault(_ends_key(d), []).append((name, p, False))
    by_shape: dict[tuple, list[Param]] = {}
    for p in out.removed:
        by_shape.setdefault(tuple(p.shape), []).append(p)
    consumed: set[str] = set()

    def take(p: Param, source: str) -> None:
        """``p`` replaces ``source`` when that is gone (for the net growth)."""
        if source in removed and source not in consumed and p.name not in replaced:
            consumed.add(source)
            replaced[p.name] = removed[source].nbytes

    for p in fresh:
        data = _data(p)
        if data is None or data.size == 0:
            # no data (a weight passed as a parameter): a cast is all that can be said
            src, _ = _cast_candidate(p, by_shape, consumed, None)
            if src is not None and p.name not in pa:
                out.cast.append(ParamCast(p.name, src.name, src.dtype, p.dtype, "none"))
                take(p, src.name)
            continue
        cands = [c for c in pool.get(_ends_key(data), []) if not (c[0] == p.name and c[2])]
        # a source named in the new name first, then one still there after, then the biggest
        cands.sort(key=lambda c: (not p.name.startswith(c[0] + "."), not c[2], -c[1].nbytes))
        found = False
        for name, q, after in cands:
            qd = _data(q)
            if qd.size < 2 or data.size % qd.size:
                continue
            if qd.size == data.size and qd.shape == data.shape and _same_content(qd, data):
                same = ParamSame(p.name, name, p.nbytes)
                (out.duplicated if after else out.renamed).append(same)
                take(p, name)
                found = True
                break
            copy = _copies_of(data, qd, budget)
            if copy is not None:
                lead, axes, checked = copy
                pc = ParamCopy(
                    p.name, name, lead, data.size // qd.size, axes, p.nbytes, q.nbytes, checked
                )
                (out.permuted if pc.copies == 1 else out.broadcast).append(pc)
                take(p, name)
                found = True
                break
        if not found and p.name not in pa:
            src, checked = _cast_candidate(p, by_shape, consumed, budget)
            if src is not None:
                out.cast.append(ParamCast(p.name, src.name, src.dtype, p.dtype, checked))
                take(p, src.name)


def _ends_key(d: np.ndarray) -> tuple:
    """The cheapest fingerprint: dtype, first and last element. Copies of an array along
    leading dims, and any permutation of its axes, start and end with the same elements."""
    return (d.dtype.str, d.flat[0].tobytes(), d.flat[d.size - 1].tobytes())


def _cast_candidate(
    p: Param, by_shape, consumed: set[str], budget: list | None
) -> tuple[Param | None, str]:
    """A removed parameter of the same shape and another dtype whose values ``p`` holds."""
    cands = [
        q for q in by_shape.get(tuple(p.shape), []) if q.dtype != p.dtype and q.name not in consumed
    ]
    cands.sort(key=lambda q: not (p.name.startswith(q.name + ".") or p.name == q.name))
    for q in cands:
        if budget is None:  # no data to compare: only a name or a single candidate says it
            if p.name.startswith(q.name + ".") or len(cands) == 1:
                return q, "none"
            continue
        qd, pd = _data(q), _data(p)
        checked = _cast_equal(qd, pd, budget) if qd is not None and pd is not None else ""
        if checked:
            return q, checked
    return None, ""


def _copies_of(
    data: np.ndarray, src: np.ndarray, budget: list[int]
) -> tuple[tuple, tuple | None, str] | None:
    """``(lead dims, axes, checked)`` when ``data`` is copies of ``src`` (its axes permuted
    by ``axes``; None: the same elements in C order) along its leading dims; else None.
    Several copies (bloat) are always compared in full; a single permuted copy in full while
    ``budget`` lasts (or when it is a view of the same memory), else on a wide sample."""
    n, q = data.size // src.size, src.size
    # the trailing dims of ``data`` holding one copy (leading 1s count as copies' dims)
    split = next((j for j in range(data.ndim, -1, -1) if math.prod(data.shape[j:]) == q), None)
    if split is None:
        return None
    lead, row_shape = tuple(data.shape[:split]), tuple(data.shape[split:])
    transforms: list[tuple | None] = []
    if len(row_shape) == src.ndim:
        perms = (
            itertools.permutations(range(src.ndim)) if src.ndim <= 5 else [tuple(range(src.ndim))]
        )
        transforms += [ax for ax in perms if tuple(src.shape[i] for i in ax) == row_shape]
    transforms.append(None)
    idx = _sample_index(q)
    got = [_bits(_at(data, r * q + idx)) for r in sorted({0, n // 2, n - 1})]
    for axes in transforms:
        if n == 1 and row_shape == src.shape and (axes is None or axes == tuple(range(src.ndim))):
            continue  # the same array: a duplicate, which the caller checks
        view = src.transpose(axes) if axes is not None else src
        want = _bits(_at(view, idx))
        if not all(np.array_equal(g, want) for g in got):
            continue
        target = view.reshape(row_shape)
        if n == 1 and not _same_view(*_squeezed(data, np.broadcast_to(target, data.shape))):
            if data.size > budget[0]:
                wide = _sample_index(q, _WIDE_SAMPLES)
                if np.array_equal(_bits(_at(data, wide)), _bits(_at(view, wide))):
                    return ((), axes, "sample")
                continue
            budget[0] -= data.size
        if n > 1 and not target.flags.c_contiguous:
            target = np.ascontiguousarray(target)  # once, so each copy compares contiguously
        if _full_equal(data, np.broadcast_to(target, data.shape)):
            return (lead if n > 1 else (), axes, "all")
    return None


# ===== formatting =============================================================================


def _shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _node_line(n: GraphNode) -> str:
    if n.kind in ("weight", "const"):
        return f"{n.id}: {n.type}"
    return f"{n.id} = {n.op} : {n.type}" + (f"  ({n.group})" if n.group else "")


__all__ = [
    "Diff",
    "NodeChange",
    "ShapeChange",
    "SignatureChange",
    "ParamDiff",
    "ParamResize",
    "ParamCast",
    "ParamSame",
    "ParamCopy",
    "ParamGrowth",
    "diff",
    "match_nodes",
    "diff_signatures",
    "diff_params",
    "format_bytes",
]
