"""What changed between two steps: nodes, shapes, op counts, signatures, parameters, IR text.

`diff(a, b)` is a pure function of two steps (of one trace or of two). Nodes of the two
steps' graph models are matched first by identity (a node a pass did not touch is the same IR
object on both sides), then by provenance (same source layer / op / node and same op: the node
was rewritten), then by structure (same op, attributes and matched inputs), and last by name
hint within a function. Source steps (FX / ONNX graphs, no IR objects) are matched by node id,
or against an IR step through the source node named in each IR node's provenance.

Parameters are compared by name and by content (explorer/params.py); nodes are matched in
explorer/matching.py.

When `b` shows the very same module as `a` (a pass that changed nothing) the diff is empty
and costs nothing: no graph model, text or parameter data is touched.
"""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, Protocol

from explorer.fmt import format_bytes, signed_bytes
from explorer.graph import GraphModel, GraphNode, Signature, collector_paused
from explorer.matching import is_source, match_nodes, ordered_inputs, through_calls
from explorer.params import (
    DTYPE_ALIASES,
    ParamCast,
    ParamCopy,
    ParamDiff,
    ParamGrowth,
    ParamResize,
    ParamSame,
    diff_params,
)

_SHOWN = 12  # lines per section in the text summary
MAX_DIFF_LINES = 10_000
"""Lines of each step's IR text the text diff compares (difflib's cost grows faster than the
texts; a 1,000,000-line module text fits in a 14 KB trace file)."""


# ===== results ================================================================================


class DiffedStep(Protocol):
    """A step as a diff reads it (an `explorer.step.Step` is one; the step module
    imports this one, so the annotations here name this protocol): its number and name, its
    graph model (or the source graph it shows), its module, its IR text and its weights' bytes."""

    index: int
    name: str
    source_graph: GraphModel | None

    @property
    def graph(self) -> GraphModel: ...

    @property
    def shown_module(self) -> Any: ...

    @property
    def text(self) -> str: ...

    @property
    def param_bytes(self) -> int: ...


class ShapeChange(NamedTuple):
    """A matched node whose shape changed: its id (after), its type before and after."""

    node: str
    before: str
    after: str


@dataclass
class NodeChange:
    """A matched node that differs: what changed, as `{field: (before, after)}`.

    Fields: `type`, `shape`, `dtype`, `op`, `attrs` (`{key: (before, after)}`),
    `inputs` (ids of the inputs, before and after), `function`, `kind`. `how` says
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
    """A function present on both sides whose signature differs; `changes` says how."""

    name: str
    before: Signature
    after: Signature
    changes: list[str]

    def __str__(self) -> str:
        return f"@{self.name}: " + "; ".join(self.changes)


@dataclass(eq=False)
class Diff:
    """What changed from step `a` to step `b` (see the module docstring).

    `matches` maps each matched node id of `b` to `(id in a, how)` where `how` is
    identity, provenance, structure, name or source-node. `added` are nodes of `b` with no
    match, `removed` nodes of `a` with none, `changed` matched nodes that differ in what
    they compute, `moved` matched nodes that only moved into or out of a function (fuse-ops
    outlining a group, an inliner): same op, attributes and type, and their inputs the same
    nodes seen through the call (a parameter of the function stands for the argument the one
    call passes; a call for what its function returns).
    """

    a: DiffedStep = field(repr=False)
    b: DiffedStep = field(repr=False)
    identical: bool = False
    matches: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)
    added: list[GraphNode] = field(default_factory=list)
    removed: list[GraphNode] = field(default_factory=list)
    changed: list[NodeChange] = field(default_factory=list)
    moved: list[NodeChange] = field(default_factory=list)
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
            or self.moved
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
        """The op-count changes in one line: `+3 matmul, -1 linear`."""
        return ", ".join(f"{v:+d} {k}" for k, v in self.op_count_changes.items())

    @property
    def param_bytes_before(self) -> int:
        """Bytes of every weight of `a`."""
        return self.a.param_bytes if self.identical else self.params.bytes_before

    @property
    def param_bytes_after(self) -> int:
        """Bytes of every weight of `b`."""
        return self.b.param_bytes if self.identical else self.params.bytes_after

    @property
    def param_bytes_delta(self) -> int:
        """Bytes after minus bytes before."""
        return 0 if self.identical else self.params.bytes_delta

    # ----- the IR text ----------------------------------------------------------------------
    @cached_property
    def _lines(self) -> tuple[list[str], list[str], str]:
        """The two texts' lines the text diff compares (at most MAX_DIFF_LINES of each) and
        a note when some were left out."""
        left, right = self.a.text.splitlines(), self.b.text.splitlines()
        note = ""
        if max(len(left), len(right)) > MAX_DIFF_LINES:
            note = (
                f"the IR diff covers the first {MAX_DIFF_LINES:,} lines of each text "
                f"(#{self.a.index} has {len(left):,}, #{self.b.index} {len(right):,}); the whole "
                f"texts: trace[{self.a.index}].text and trace[{self.b.index}].text, or "
                f"passlens show TRACE --step N"
            )
            left, right = left[:MAX_DIFF_LINES], right[:MAX_DIFF_LINES]
        return left, right, note

    @property
    def text_diff_note(self) -> str:
        """Why the text diff is not the whole of both texts ("" when it is)."""
        return "" if self.identical else self._lines[2]

    @property
    def text_same(self) -> bool:
        """Whether the lines the text diff compares are the same (no unified diff made)."""
        if self.identical:
            return True
        left, right, _ = self._lines
        return left == right

    @cached_property
    def text_diff(self) -> str:
        """A unified diff of the two steps' IR text ("" when they show the same module); of
        their first MAX_DIFF_LINES lines when longer (`text_diff_note` says so)."""
        if self.identical:
            return ""
        left, right, _ = self._lines
        return "".join(
            difflib.unified_diff(
                [line + "\n" for line in left],
                [line + "\n" for line in right],
                fromfile=_step_name(self.a),
                tofile=_step_name(self.b),
            )
        )

    @cached_property
    def _opcodes(self) -> tuple[list[str], list[str], list]:
        if self.identical:
            left, right = self.a.text.splitlines(), self.b.text.splitlines()
            return left, right, [("equal", 0, len(left), 0, len(right))]
        left, right, _ = self._lines
        return left, right, difflib.SequenceMatcher(None, left, right).get_opcodes()

    def side_by_side(self, context: int | None = None) -> list[tuple[str | None, str | None, str]]:
        """Rows `(left line, right line, tag)` for a two-column view; tag is equal, replace,
        delete or insert (a missing side is None). With `context`, runs of equal lines longer
        than twice that are cut to `context` lines each side of a `("…", "…", "skip")` row."""
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
        if self.moved:
            out.append(("moved", [_moved_line(c) for c in self.moved]))
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
            + (f", {len(self.moved)} moved (same values)" if self.moved else "")
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


def diff(a: DiffedStep, b: DiffedStep) -> Diff:
    """What changed from step `a` to step `b` (any two steps, even of different traces)."""
    if a is b or _same_module(a, b):
        return Diff(a, b, identical=True)
    ga, gb = a.graph, b.graph
    with collector_paused():
        return _diff(a, b, ga, gb)


def _diff(a: DiffedStep, b: DiffedStep, ga: GraphModel, gb: GraphModel) -> Diff:
    matches = match_nodes(ga, gb)
    cross = is_source(ga) != is_source(gb)
    d = Diff(a, b, matches=matches)
    matched_a = {aid for aid, _ in matches.values()}
    d.added = [n for nid, n in gb.nodes.items() if nid not in matches]
    d.removed = [n for nid, n in ga.nodes.items() if nid not in matched_a]
    ins_a, ins_b = ordered_inputs(ga), ordered_inputs(gb)
    through: tuple[dict[str, str], dict[str, str]] | None = None  # made when first needed
    for bid, (aid, how) in matches.items():
        na, nb = ga.nodes[aid], gb.nodes[bid]
        fields = _node_changes(na, nb, how, cross, ins_a.get(aid, []), ins_b.get(bid, []), matches)
        if fields and not cross and fields.keys() <= {"function", "inputs"}:
            if "inputs" in fields:
                if through is None:
                    through = through_calls(ga, ins_a), through_calls(gb, ins_b)
                if _same_inputs(*fields["inputs"], through, matches):
                    del fields["inputs"]
            if fields.keys() == {"function"}:
                d.moved.append(NodeChange(na, nb, how, fields))
                continue
        if fields:
            change = NodeChange(na, nb, how, fields)
            if "inputs" in fields:
                change.inputs_text = _inputs_text(*fields["inputs"], ga, gb, matches)
            d.changed.append(change)
            if "shape" in fields:
                d.shape_changes.append(ShapeChange(bid, na.type, nb.type))
    d.op_counts_before, d.op_counts_after = ga.op_counts(), gb.op_counts()
    if not (is_source(ga) or is_source(gb)):
        d.functions_added, d.functions_removed, d.signature_changes = diff_signatures(
            ga.signatures, gb.signatures
        )
    d.params = diff_params(ga.params, gb.params)
    return d


def _same_module(a: DiffedStep, b: DiffedStep) -> bool:
    if a.source_graph is not None or b.source_graph is not None:
        return a.source_graph is b.source_graph
    ma, mb = a.shown_module, b.shown_module
    return ma is not None and ma is mb


def _step_name(s: DiffedStep) -> str:
    return f"#{s.index} {s.name}"


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
        da, db = DTYPE_ALIASES.get(na.dtype, na.dtype), DTYPE_ALIASES.get(nb.dtype, nb.dtype)
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


def _same_inputs(ins_a, ins_b, through, matches) -> bool:
    """Whether the inputs of a matched pair are the same nodes once seen through calls."""
    ta, tb = through
    if len(ins_a) != len(ins_b):
        return False
    for x, y in zip(ins_a, ins_b, strict=True):
        y = tb.get(y, y)
        if matches.get(y, (None,))[0] != ta.get(x, x):
            return False
    return True


def _inputs_text(
    ins_a: list[str], ins_b: list[str], ga: GraphModel, gb: GraphModel, matches
) -> str:
    """The inputs that differ, by position: `input 1: %t (permute_dims) -> $w.t`."""
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


# ===== formatting =============================================================================


def _shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _moved_line(c: NodeChange) -> str:
    old, new = c.fields["function"]
    return f"{c.after.id} ({c.after.op}): @{old} -> @{new}"


def _node_line(n: GraphNode) -> str:
    if n.kind in ("weight", "const"):
        return f"{n.id}: {n.type}"
    return f"{n.id} = {n.op} : {n.type}" + (f"  ({n.group})" if n.group else "")


__all__ = [
    "Diff",
    "NodeChange",
    "ShapeChange",
    "SignatureChange",
    "through_calls",
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
