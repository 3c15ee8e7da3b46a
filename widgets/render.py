"""Rendering as pure functions: a step (and optionally a baseline step) -> DOT, SVG or HTML.

The tables, the IR text and its diff, the badges and the trace summary are shared by the
Jupyter widgets, the Panel app and the static HTML report. The interactive graph those show is
the graph component (``static/graph.js``, fed by :mod:`widgets.graph_data`); this module also
draws a *static* picture of a graph with Graphviz (:func:`graph_svg`, for notebooks that want
an image; at most :data:`MAX_SVG_BOXES` boxes). Nothing here holds widget state; the only state
is the layout cache of :func:`graph_svg` (an LRU keyed by the step, the baseline and the view
state, backed by a cache keyed by the DOT text itself so two views that draw the same graph
share one layout).

The static graph:

- one box per node (op and key attributes; weights as cylinders with their type and size;
  inputs as ellipses; the return as a house), shapes and dtypes on edges;
- nodes clustered by function (when there are several) and by source module path (``group``),
  as nested clusters; a *collapsed* group is one box showing its path and op counts;
- ``collapsed=None`` chooses the view: nothing collapsed if the graph has at most
  ``max_boxes`` boxes, else the callee functions are hidden (their call nodes list their ops)
  and groups are collapsed at the finest module depth that fits (see
  :func:`default_collapsed`);
- against ``baseline``: added nodes green, changed amber, removed ones dashed grey ghosts;
  the node a failed pass failed on red.

Everything taken from a model (names, attributes, types, paths) is escaped: labels are
Graphviz HTML-like labels built from escaped text, and DOT names and SVG ids are generated
(``n12``, ``pl_n12``); the model's node id is added to the SVG as ``data-node-id``.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import graphviz
import numpy as np

from explorer.diff import Diff, diff, diff_params
from explorer.fmt import format_bytes, num, signed_bytes
from explorer.graph import GraphModel, GraphNode

MAX_BOXES = 300
MAX_SVG_BOXES = 2000  # boxes graph_svg lays out with Graphviz at most
PROBLEM_KINDS = ("diverged", "shape-mismatch", "param-bloat", "pass-failed")  # finding badges

COLORS = {
    "added": "#c8e6c9",  # fill
    "changed": "#ffe082",  # fill
    "removed": "#9e9e9e",  # dashed outline and text of a ghost
    "failed": "#ef9a9a",  # fill
    "failed_border": "#c62828",
    "shape": "#e65100",  # an edge whose value changed shape
    "marks": "#bf360c",  # the line of a collapsed group saying what changed inside it
}

_KIND_STYLE: dict[str, dict[str, str]] = {
    "op": {"shape": "box", "style": "filled", "fillcolor": "#ffffff"},
    "call": {"shape": "box", "style": "filled,bold", "fillcolor": "#ede7f6"},
    "input": {"shape": "ellipse", "style": "filled", "fillcolor": "#e3f2fd"},
    "param": {"shape": "cylinder", "style": "filled", "fillcolor": "#f3e5f5"},
    "weight": {"shape": "cylinder", "style": "filled", "fillcolor": "#f3e5f5"},
    "const": {"shape": "note", "style": "filled", "fillcolor": "#f5f5f5"},
    "tuple": {"shape": "box", "style": "filled", "fillcolor": "#fafafa"},
    "item": {"shape": "box", "style": "filled", "fillcolor": "#fafafa"},
    "if": {"shape": "diamond", "style": "filled", "fillcolor": "#ffffff"},
    "output": {"shape": "house", "style": "filled", "fillcolor": "#e3f2fd"},
    "group": {"shape": "folder", "style": "filled", "fillcolor": "#eceff1"},
}
_LEAVES = frozenset({"weight", "const", "param", "input"})
_FONT = "Helvetica,Arial,sans-serif"
_MAX_ATTRS = 3  # key attributes shown on a node
_DULL_ATTRS = {
    ("groups", "1"),
    ("dilation", "[1, 1]"),
    ("data_layout", '"NCHW"'),
    ("kernel_layout", '"OIHW"'),
    ("out_layout", '"NCHW"'),
}


# ===== escaping ===============================================================================

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def esc(value: Any, limit: int | None = None) -> str:
    """Text from a model made safe for HTML, SVG and Graphviz HTML-like labels: control
    characters replaced, optionally cut to ``limit`` characters, ``<>&"'`` escaped."""
    text = _CONTROL.sub("\ufffd", str(value))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=True)


# ===== the view: which boxes a graph is drawn with =============================================


@dataclass
class _Entry:
    """A node to draw (``key`` is its data-node-id): a node of the step, or a removed node of
    the baseline (a ghost)."""

    key: str
    node: GraphNode
    status: str = ""  # added, changed, removed, failed or ""
    change: str = ""
    function: str = ""
    group: str = ""


@dataclass
class _Box:
    key: str
    function: str
    cluster: str  # the group path of the cluster the box sits in
    entry: _Entry | None = None  # a single node
    group: str = ""  # a collapsed group: its path
    members: list[_Entry] = field(default_factory=list)


@dataclass
class GraphView:
    """What a graph view shows: the step's nodes (and a baseline's removed ones) assigned to
    boxes, given which groups are collapsed. Built by :func:`graph_view`."""

    step: Any
    baseline: Any
    diff: Diff | None
    collapsed: frozenset
    entries: list[_Entry]
    boxes: dict[str, _Box]
    box_of: dict[str, str]  # entry key -> box key
    hidden: set[str]  # entry keys of hidden (collapsed) functions
    callee_ops: dict[str, list[str]]

    @property
    def box_count(self) -> int:
        """How many boxes are drawn."""
        return len(self.boxes)

    def box_of_node(self, node_id: str) -> str | None:
        """The data-node-id of the box showing a node of the step (itself or its group)."""
        return self.box_of.get(node_id)


def _prefixes(path: str) -> list[str]:
    parts = path.split(".") if path else []
    return [".".join(parts[: k + 1]) for k in range(len(parts))]


class _Memo:
    """A small LRU of values computed from steps, keyed by the steps' identities (the steps
    are kept with the value, so a key is never taken by another object)."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self.table: OrderedDict = OrderedDict()

    def get(self, objs: tuple, extra: Any, make):
        key = (*map(id, objs), extra)
        hit = self.table.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], objs, strict=True)):
            self.table.move_to_end(key)
            return hit[1]
        value = make()
        self.table[key] = (objs, value)
        while len(self.table) > self.maxsize:
            self.table.popitem(last=False)
        return value


_DIFFS = _Memo(32)
_VIEWS = _Memo(32)


def step_diff(baseline, step) -> Diff:
    """``explorer.diff(baseline, step)``, remembered for the last few pairs of steps (every
    view of a step asks for it)."""
    return _DIFFS.get((baseline, step), None, lambda: diff(baseline, step))


def _entries(step, baseline) -> tuple[list[_Entry], Diff | None, GraphModel, GraphModel]:
    gb = step.graph
    d = None
    if baseline is not None:
        d = step_diff(baseline, step)
        if d.identical:
            d = None
    failed_id = None
    if getattr(step, "failed", False) and getattr(step, "failed_node", None) is not None:
        fn = gb.node_of(step.failed_node)
        failed_id = fn.id if fn is not None else None
    added = {n.id for n in d.added} if d else set()
    changed = {c.after.id: str(c) for c in d.changed} if d else {}
    entries: list[_Entry] = []
    for nid, n in gb.nodes.items():
        status = (
            "failed"
            if nid == failed_id
            else ("added" if nid in added else ("changed" if nid in changed else ""))
        )
        entries.append(_Entry(nid, n, status, changed.get(nid, "")))
    ga = baseline.graph if d is not None else GraphModel()
    if d is not None:
        for n in d.removed:
            entries.append(_Entry("removed:" + n.id, n, "removed"))
    _place(entries, gb, ga)
    return entries, d, ga, gb


def _place(entries: list[_Entry], gb: GraphModel, ga: GraphModel) -> None:
    """Each entry's function and group. A weight (module-wide) sits in its readers' function
    when they share one and, without a module path of its own, in their group when they
    share one."""
    readers: dict[tuple[bool, str], set[tuple[str, str]]] = {}
    for ghost, g in ((False, gb), (True, ga)):
        for e in g.edges:
            dst = g.nodes.get(e.dst)
            if dst is not None:
                readers.setdefault((ghost, e.src), set()).add((dst.function, dst.group))
    for e in entries:
        n = e.node
        e.function, e.group = n.function, n.group
        if n.kind in ("weight", "const"):
            homes = readers.get((e.status == "removed", n.id), set())
            fns = {f for f, _ in homes}
            if not n.function and len(fns) == 1:
                e.function = next(iter(fns))
            if not n.group and len(homes) == 1:
                e.group = next(iter(homes))[1]


def _callees(entries: Iterable[_Entry]) -> set[str]:
    return {e.node.op[1:] for e in entries if e.node.kind == "call" and e.node.op.startswith("@")}


def _assign(
    entries: list[_Entry], collapsed: frozenset
) -> tuple[dict[str, _Box], dict[str, str], set[str]]:
    boxes: dict[str, _Box] = {}
    box_of: dict[str, str] = {}
    hidden: set[str] = set()
    for e in entries:
        if e.function and "@" + e.function in collapsed:
            hidden.add(e.key)
            continue
        top = next((p for p in _prefixes(e.group) if p in collapsed), None) if collapsed else None
        if top is None:
            boxes[e.key] = _Box(e.key, e.function, e.group, entry=e)
            box_of[e.key] = e.key
            continue
        key = f"group:{e.function}/{top}"
        box = boxes.get(key)
        if box is None:
            parent = top.rpartition(".")[0]
            box = boxes[key] = _Box(key, e.function, parent, group=top)
        box.members.append(e)
        box_of[e.key] = key
    for key, box in list(boxes.items()):  # a group of one node: draw the node
        if box.group and len(box.members) == 1:
            e = box.members[0]
            del boxes[key]
            boxes[e.key] = _Box(e.key, e.function, e.group, entry=e)
            box_of[e.key] = e.key
    return boxes, box_of, hidden


def _count(entries: list[_Entry], collapsed: frozenset) -> int:
    seen: set[str] = set()
    for e in entries:
        if e.function and "@" + e.function in collapsed:
            continue
        top = next((p for p in _prefixes(e.group) if p in collapsed), None) if collapsed else None
        seen.add(e.key if top is None else f"group:{e.function}/{top}")
    return len(seen)


def _auto_collapsed(entries: list[_Entry], max_boxes: int) -> frozenset:
    if len(entries) <= max_boxes:
        return frozenset()
    keep_fns, keep_paths = set(), set()  # never hide the failed node
    for e in entries:
        if e.status == "failed":
            keep_fns.add(e.function)
            keep_paths.update(_prefixes(e.group))
    hide = frozenset("@" + f for f in _callees(entries) if f not in keep_fns)
    if _count(entries, hide) <= max_boxes:
        return hide
    groups = {e.group for e in entries if e.group}
    depth = max((len(g.split(".")) for g in groups), default=0)
    candidate = hide
    for k in range(depth, 0, -1):
        prefixes = {".".join(g.split(".")[:k]) for g in groups if len(g.split(".")) >= k}
        candidate = hide | frozenset(prefixes - keep_paths)
        if _count(entries, candidate) <= max_boxes:
            break
    return candidate


def graph_view(step, baseline=None, collapsed=None, max_boxes: int = MAX_BOXES) -> GraphView:
    """The boxes a graph of ``step`` is drawn with (see the module docstring)."""
    state = None if collapsed is None else frozenset(collapsed)
    return _VIEWS.get(
        (step, baseline), (state, max_boxes), lambda: _graph_view(step, baseline, state, max_boxes)
    )


def _graph_view(step, baseline, collapsed, max_boxes: int) -> GraphView:
    entries, d, _ga, gb = _entries(step, baseline)
    chosen = _auto_collapsed(entries, max_boxes) if collapsed is None else frozenset(collapsed)
    boxes, box_of, hidden = _assign(entries, chosen)
    callee_ops: dict[str, list[str]] = {}
    for n in gb.nodes.values():
        if n.kind in ("op", "call"):
            callee_ops.setdefault(n.function, []).append(n.op)
    return GraphView(step, baseline, d, chosen, entries, boxes, box_of, hidden, callee_ops)


def default_collapsed(step, baseline=None, max_boxes: int = MAX_BOXES) -> frozenset:
    """The groups (module paths) and functions (``@name``) collapsed by default: none when
    the graph fits in ``max_boxes`` boxes; else the callee functions, then the groups at the
    finest module depth that fits (the failed node's function and groups stay open)."""
    return graph_view(step, baseline, None, max_boxes).collapsed


# ===== DOT ====================================================================================


def _key_attrs(attrs: dict) -> list[str]:
    out = []
    for k, v in attrs.items():
        v = str(v)
        if v == "none" or (k, v) in _DULL_ATTRS:
            continue
        out.append(f"{k}={v}")
        if len(out) == _MAX_ATTRS:
            break
    return out


def _label(title: str, lines: Iterable[str] = (), bold: bool = True, marks: str = "") -> str:
    """An HTML-like label: the title, smaller lines under it, and a coloured line of marks."""
    head = f"<B>{esc(title, 48)}</B>" if bold else esc(title, 48)
    rest = "".join(f'<BR/><FONT POINT-SIZE="8">{esc(x, 48)}</FONT>' for x in lines if x)
    if marks:
        rest += f'<BR/><FONT POINT-SIZE="8" COLOR="{COLORS["marks"]}">{esc(marks, 48)}</FONT>'
    return f"<{head}{rest}>"


def _op_summary(ops: Iterable[str], limit: int = 4) -> str:
    counts = Counter(ops)
    parts = [f"{op} ×{c}" if c > 1 else op for op, c in counts.most_common(limit)]
    if len(counts) > limit:
        parts.append(f"+{len(counts) - limit} more")
    return ", ".join(parts)


def _node_label(n: GraphNode, callee_ops: dict[str, list[str]]) -> str:
    if n.kind == "op":
        return _label(n.op, _key_attrs(n.attrs))
    if n.kind == "call":
        return _label(n.op, [_op_summary(callee_ops.get(n.op[1:], []), 3)])
    if n.kind in ("weight", "param"):
        return _label(n.label, [n.type, format_bytes(n.nbytes) if n.nbytes else ""])
    if n.kind == "const":
        return _label("const", [n.type], bold=False)
    if n.kind == "input":
        return _label(n.label, [n.type])
    if n.kind == "output":
        return _label("return", bold=False)
    return _label(n.op)


def _group_label(box: _Box) -> str:
    ops = [e.node.op for e in box.members if e.node.kind in ("op", "call")]
    params = [e.node for e in box.members if e.node.kind in ("weight", "param")]
    lines = [f"{len(ops)} ops: {_op_summary(ops)}" if ops else "no ops"]
    if params:
        lines.append(f"{len(params)} params · {format_bytes(sum(p.nbytes for p in params))}")
    st = Counter(e.status for e in box.members if e.status)
    signs = (("added", "+"), ("changed", "~"), ("removed", "−"), ("failed", "!"))
    return _label(box.group, lines, marks=", ".join(f"{g}{st[s]} {s}" for s, g in signs if st[s]))


def _css(word: str) -> str:
    return re.sub(r"\W", "_", word)


def _node_attrs(box: _Box, view: GraphView) -> dict[str, str]:
    if box.entry is not None:
        e = box.entry
        kind = e.node.kind if e.node.kind in _KIND_STYLE else "op"
        status = e.status
        label = _node_label(e.node, view.callee_ops)
    else:
        kind = "group"
        statuses = {e.status for e in box.members}
        status = "failed" if "failed" in statuses else ("changed" if statuses - {""} else "")
        label = _group_label(box)
    attrs = dict(_KIND_STYLE[kind])
    attrs["label"] = label
    if status in ("added", "changed"):
        attrs["fillcolor"] = COLORS[status]
    elif status == "failed":
        attrs.update(fillcolor=COLORS["failed"], color=COLORS["failed_border"], penwidth="2")
    elif status == "removed":
        attrs.update(style="dashed", color=COLORS["removed"], fontcolor=COLORS["removed"])
    classes = ["pl_node", "pl_k_" + _css(kind)] + ([f"pl_{status}"] if status else [])
    attrs["class"] = " ".join(classes)
    return attrs


def _edges(view: GraphView, ga: GraphModel, gb: GraphModel):
    """Edges between boxes: ``(src box, dst box, label, ghost, shape changed)``, one per pair
    of boxes (values between the same two boxes merged)."""
    shape_changed = {s.node for s in view.diff.shape_changes} if view.diff else set()
    pairs: dict[tuple[str, str, bool], dict[str, str]] = {}
    for e in gb.edges:
        s, t = view.box_of.get(e.src), view.box_of.get(e.dst)
        if s is not None and t is not None and s != t:
            pairs.setdefault((s, t, False), {})[e.src] = e.type
    if view.diff is not None:
        back = {aid: bid for bid, (aid, _how) in view.diff.matches.items()}
        for e in ga.edges:
            ends = []
            for aid in (e.src, e.dst):
                key = back.get(aid)
                if key is None:
                    key = "removed:" + aid
                ends.append(view.box_of.get(key))
            s, t = ends
            ghost = "removed:" + e.src in view.box_of or "removed:" + e.dst in view.box_of
            if ghost and s is not None and t is not None and s != t:
                pairs.setdefault((s, t, True), {})[e.src] = e.type
    out = []
    for (s, t, ghost), values in pairs.items():
        label = next(iter(values.values())) if len(values) == 1 else f"{len(values)} values"
        out.append((s, t, label, ghost, any(v in shape_changed for v in values)))
    return out


@dataclass
class _Dot:
    source: str
    data: dict[str, dict[str, str]]  # svg id -> data attributes
    titles: dict[str, str]


def _build_dot(view: GraphView) -> _Dot:
    step, baseline = view.step, view.baseline
    gb = step.graph
    ga = baseline.graph if view.diff is not None else GraphModel()
    g = graphviz.Digraph(name="passlens")
    g.attr(rankdir="TB", ranksep="0.3", nodesep="0.25", fontname=_FONT, fontsize="10")
    g.attr("node", fontname=_FONT, fontsize="10", margin="0.08,0.03", height="0.3")
    g.attr("edge", fontname=_FONT, fontsize="8", color="#607d8b", arrowsize="0.6")
    data: dict[str, dict[str, str]] = {}
    titles: dict[str, str] = {}
    names: dict[str, str] = {}  # box key -> DOT name

    def add_box(parent, box: _Box) -> None:
        i = len(names)
        names[box.key] = f"n{i}"
        attrs = _node_attrs(box, view)
        parent.node(f"n{i}", id=f"pl_n{i}", **attrs)
        d = {"data-node-id": box.key}
        if box.group:
            d["data-group"] = box.group
            d["data-function"] = box.function
        data[f"pl_n{i}"] = d
        titles[f"pl_n{i}"] = box.group if box.group else box.key

    by_fn: dict[str, list[_Box]] = {}
    for box in view.boxes.values():
        by_fn.setdefault(box.function, []).append(box)
    several = len([f for f in by_fn if f]) > 1
    n_clusters = [0]

    def cluster(parent, group: str, fn: str):
        """A new cluster subgraph (a context manager) and its SVG id."""
        i = n_clusters[0]
        n_clusters[0] += 1
        cid = f"pl_c{i}"
        data[cid] = {"data-group": group, "data-function": fn}
        titles[cid] = group or "@" + fn
        return parent.subgraph(name=f"cluster_{i}"), cid

    def emit_groups(parent, fn: str, boxes: list[_Box]) -> None:
        direct: dict[str, list[_Box]] = {}
        for b in boxes:
            direct.setdefault(b.cluster, []).append(b)
        total: Counter = Counter()
        children: dict[str, set[str]] = {}
        for path, items in direct.items():
            for p in ["", *_prefixes(path)]:
                total[p] += len(items)
            chain = ["", *_prefixes(path)]
            for a, b in zip(chain, chain[1:], strict=False):
                children.setdefault(a, set()).add(b)

        def emit(graph, path: str, shown_parent: str) -> None:
            for b in direct.get(path, ()):
                add_box(graph, b)
            for child in sorted(children.get(path, ()), key=_natural):
                kids = children.get(child, set())
                if total[child] < 2 or (not direct.get(child) and len(kids) == 1):
                    emit(graph, child, shown_parent)  # not worth a frame of its own
                    continue
                label = child[len(shown_parent) + 1 :] if shown_parent else child
                sub, cid = cluster(graph, child, fn)
                with sub as c:
                    c.attr(
                        label=f"<{esc(label, 60)}>",
                        id=cid,
                        style="dashed",
                        color="#b0bec5",
                        fontsize="9",
                        fontcolor="#546e7a",
                        labeljust="l",
                        **{"class": "pl_cluster"},
                    )
                    emit(c, child, child)

        emit(parent, "", "")

    if not several:  # one function: its boxes and the module's weights in one tree
        by_fn = {next((f for f in by_fn if f), ""): [b for bs in by_fn.values() for b in bs]}
    for fn in sorted(by_fn, key=lambda f: (f != "main", f != "", f)):
        boxes = by_fn[fn]
        if several and fn:
            sub, cid = cluster(g, "", fn)
            with sub as c:
                c.attr(
                    label=f"<<B>@{esc(fn, 60)}</B>>",
                    id=cid,
                    color="#7e57c2",
                    fontsize="10",
                    labeljust="l",
                    **{"class": "pl_cluster pl_function"},
                )
                emit_groups(c, fn, boxes)
        else:
            emit_groups(g, fn, boxes)

    for i, (s, t, label, ghost, shape) in enumerate(_edges(view, ga, gb)):
        attrs = {"label": f"<{esc(label, 40)}>", "id": f"pl_e{i}"}
        cls = ["pl_edge"]
        if ghost:
            attrs.update(style="dashed", color=COLORS["removed"], fontcolor=COLORS["removed"])
            cls.append("pl_removed")
        elif shape:
            attrs.update(color=COLORS["shape"], fontcolor=COLORS["shape"])
            cls.append("pl_shape")
        attrs["class"] = " ".join(cls)
        g.edge(names[s], names[t], **attrs)
    return _Dot(g.source, data, titles)


def _natural(path: str) -> list:
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in path.split(".")]


def graph_dot(step, baseline=None, collapsed=None, max_boxes: int = MAX_BOXES) -> str:
    """The DOT source of a step's graph (see the module docstring for what it shows)."""
    return _build_dot(graph_view(step, baseline, collapsed, max_boxes)).source


# ===== SVG and its cache ======================================================================


class LayoutCache:
    """An LRU of rendered SVGs keyed by (step, baseline, view state), over a second LRU keyed
    by the DOT text (two views drawing the same graph share one layout)."""

    def __init__(self, maxsize: int = 64):
        self.maxsize = maxsize
        self.views: OrderedDict = OrderedDict()
        self.layouts: OrderedDict = OrderedDict()
        self.hits = 0  # views found
        self.misses = 0  # views rendered
        self.layout_runs = 0  # times ``dot`` ran

    def clear(self) -> None:
        """Forget every layout and reset the counters."""
        self.views.clear()
        self.layouts.clear()
        self.hits = self.misses = self.layout_runs = 0

    def _get(self, table: OrderedDict, key):
        value = table.get(key)
        if value is not None:
            table.move_to_end(key)
        return value

    def _put(self, table: OrderedDict, key, value) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.maxsize:
            table.popitem(last=False)


LAYOUTS = LayoutCache()

_G_OPEN = re.compile(r'<g id="(pl_[nce]\d+)" class="([^"]*)">\n<title>[^<]*</title>')


def _svg_of(dot: _Dot) -> str:
    digest = hashlib.sha1(dot.source.encode()).hexdigest()
    raw = LAYOUTS._get(LAYOUTS.layouts, digest)
    if raw is None:
        LAYOUTS.layout_runs += 1
        raw = graphviz.Source(dot.source).pipe(format="svg", encoding="utf-8")
        LAYOUTS._put(LAYOUTS.layouts, digest, raw)
    return _finish_svg(raw, dot)


def _finish_svg(raw: str, dot: _Dot) -> str:
    """Drop the XML prolog and comments; add data attributes and readable titles."""
    start = raw.find("<svg")
    svg = re.sub(r"<!--.*?-->\n?", "", raw[start:], flags=re.S)

    def sub(m: re.Match) -> str:
        sid, cls = m.group(1), m.group(2)
        extra = "".join(f' {k}="{esc(v)}"' for k, v in dot.data.get(sid, {}).items())
        title = dot.titles.get(sid)
        tail = f"\n<title>{esc(title)}</title>" if title else ""
        return f'<g id="{sid}" class="{cls}"{extra}>{tail}'

    svg = _G_OPEN.sub(sub, svg).replace(f' font-family="{_FONT}"', "")
    return svg.replace(
        '<svg width="', f'<svg class="pl_graph" style="font-family:{_FONT}" width="', 1
    )


def graph_svg(step, baseline=None, collapsed=None, max_boxes: int = MAX_BOXES) -> str:
    """The graph of ``step`` as an inline SVG (laid out by Graphviz ``dot``); node groups
    carry ``data-node-id`` (and ``data-group`` for collapsed groups and clusters). Cached per
    (step, baseline, view state) in :data:`LAYOUTS`."""
    state = None if collapsed is None else frozenset(collapsed)
    key = (id(step), id(baseline), state, max_boxes)
    hit = LAYOUTS._get(LAYOUTS.views, key)
    if hit is not None and hit[0] is step and hit[1] is baseline:
        LAYOUTS.hits += 1
        return hit[2]
    LAYOUTS.misses += 1
    view = graph_view(step, baseline, collapsed, max_boxes)
    if view.box_count > MAX_SVG_BOXES:  # Graphviz's time and memory grow fast past this
        raise ValueError(
            f"#{step.index} {step.name}: {view.box_count} boxes to draw, more than the "
            f"{MAX_SVG_BOXES} a static SVG is laid out for; collapse groups, or use the "
            "interactive view (GraphView, trace.stepper(), trace.to_html()), which lays out "
            "a group at a time"
        )
    svg = _svg_of(_build_dot(view))
    LAYOUTS._put(LAYOUTS.views, key, (step, baseline, svg))
    return svg


# ===== node details ===========================================================================


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return str(x)


def param_stats(data: np.ndarray, preview: int = 8) -> dict:
    """A weight's first values and its statistics (min, max, mean, std), for people."""
    # ravel(order="K") reads the array as it lies in memory (no copy for a transposed view);
    # the preview is in logical order
    flat = data.ravel(order="K")
    if flat.dtype.kind not in "biuf":
        flat = flat.astype(np.float32)
    out: dict[str, Any] = {"preview": [float(v) for v in data.flat[:preview]]}
    if flat.size and flat.dtype.kind in "biuf":
        with np.errstate(all="ignore"):  # a mask of -3.4e38 sums to -inf: shown as it is
            out.update(
                min=float(flat.min()),
                max=float(flat.max()),
                mean=float(flat.mean(dtype=np.float64)),
                std=float(flat.std(dtype=np.float64)),
            )
    return _jsonable(out)


_STATS: OrderedDict = OrderedDict()  # id(array) -> (array, stats), most recent last


def _cached_stats(data: np.ndarray) -> dict:
    hit = _STATS.get(id(data))
    if hit is not None and hit[0] is data:
        return hit[1]
    stats = param_stats(data)
    _STATS[id(data)] = (data, stats)
    while len(_STATS) > 65536:
        _STATS.popitem(last=False)
    return stats


# ===== tables =================================================================================

# Sorts a table by the clicked column (numbers by data-v); inline so it also works where
# <script> tags are not run (ipywidgets.HTML).
_SORT_JS = (
    "var t=this.closest('table'),b=t.tBodies[0],i=this.cellIndex,"
    "d=this.dataset.dir=this.dataset.dir==='a'?'d':'a';"
    "Array.from(b.rows).sort(function(x,y){"
    "var p=x.cells[i],q=y.cells[i],m=parseFloat(p.dataset.v),n=parseFloat(q.dataset.v),"
    "c=isNaN(m)||isNaN(n)?p.textContent.localeCompare(q.textContent):m-n;"
    "return d==='a'?c:-c}).forEach(function(r){b.appendChild(r)})"
)

TABLE_CSS = """
.pl-table{border-collapse:collapse;font:12px/1.4 system-ui,sans-serif}
.pl-table th,.pl-table td{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;
vertical-align:top}
.pl-table th{cursor:pointer;background:#f5f5f5;position:sticky;top:0}
.pl-table td.num{text-align:right;font-variant-numeric:tabular-nums}
.pl-table tr.pl-s-new td,.pl-table tr.pl-s-added td{background:#e8f5e9}
.pl-table tr.pl-s-removed td{background:#f5f5f5;color:#888;text-decoration:line-through}
.pl-table tr.pl-s-bloat td{background:#ffebee}
.pl-table tr.pl-s-changed td{background:#fff8e1}
.pl-table tfoot td{font-weight:600;border-top:2px solid #ccc}
.pl-diff{border-collapse:collapse;font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;
width:100%;table-layout:fixed}
.pl-diff td{white-space:pre-wrap;word-break:break-all;padding:0 6px;vertical-align:top}
.pl-diff td.ln{width:3.5em;color:#999;text-align:right;user-select:none}
.pl-diff .pl-del{background:#ffebee}.pl-diff .pl-ins{background:#e8f5e9}
.pl-diff .pl-rep{background:#fff8e1}.pl-diff .pl-skip td{color:#999;background:#fafafa}
.pl-unified{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;
word-break:break-all;margin:0}
.pl-unified .pl-del{background:#ffebee;display:block}
.pl-unified .pl-ins{background:#e8f5e9;display:block}
.pl-unified .pl-hunk{color:#6a1b9a;display:block}
.pl-badge{display:inline-block;padding:0 5px;margin-left:4px;border-radius:8px;
font-size:11px;background:#eceff1;color:#37474f}
.pl-badge.pl-b-changed{background:#e3f2fd;color:#0d47a1}
.pl-badge.pl-b-unchanged{background:#f5f5f5;color:#9e9e9e}
.pl-badge.pl-b-failed{background:#ffcdd2;color:#b71c1c}
.pl-badge.pl-b-grow{background:#ffebee;color:#b71c1c}
.pl-badge.pl-b-shrink{background:#e8f5e9;color:#1b5e20}
.pl-badge.pl-b-finding{background:#fff3e0;color:#e65100}
"""


SORT_ONCLICK = f'onclick="{html.escape(_SORT_JS)}"'


def _th(name: str) -> str:
    return f'<th {SORT_ONCLICK} title="sort">{esc(name)}</th>'


def _td(text: Any, v: Any = None, num: bool = False) -> str:
    attrs = (' class="num"' if num else "") + (f' data-v="{esc(v)}"' if v is not None else "")
    return f"<td{attrs}>{esc(text)}</td>"


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"




def param_rows(step, baseline=None) -> list[dict]:
    """One row per parameter of ``step`` (and per parameter of ``baseline`` it no longer
    has): name, shape, dtype, bytes, status, and ``bloat`` when it made the total grow.
    Status against ``baseline``: new, removed, resized, cast, new values, renamed from X,
    duplicate of X, N copies of X, X transposed; without a baseline, only duplicates and
    copies within the step."""
    params = step.graph.params
    if baseline is not None:
        pd = step_diff(baseline, step).params if baseline is not step else None
    else:
        pd = diff_params({}, params)
    status: dict[str, str] = {}
    bloat: set[str] = set()
    if pd is not None:
        if baseline is not None:
            for p in pd.added:
                status[p.name] = "new"
            for r in pd.resized:
                status[r.name] = f"resized {_shape_text(r.before)} -> {_shape_text(r.after)}"
            for n in pd.values_changed:
                status[n] = "new values"
            for s in pd.renamed:
                status[s.name] = f"renamed from {s.source}"
            for c in pd.cast:
                status[c.name] = f"cast {c.before} -> {c.after}" + (
                    "" if c.name == c.source else f" from {c.source}"
                )
            for c in pd.permuted:
                status[c.name] = f"{c.source} {'transposed' if c.transposed else 'reshaped'}"
            bloat = {g.name for g in pd.growth}
        order = {k: i for i, k in enumerate(params)}
        for s in pd.duplicated:
            # within one step both of a pair look like duplicates: the later one is the copy
            if baseline is not None or order.get(s.source, -1) < order.get(s.name, -1):
                status[s.name] = f"duplicate of {s.source}"
        for c in pd.broadcast:
            status[c.name] = f"{c.copies} copies of {c.source}" + (
                " (transposed)" if c.transposed else ""
            )
    rows = []
    for key, p in params.items():
        rows.append(
            {
                "name": key,
                "shape": tuple(p.shape),
                "dtype": p.dtype,
                "nbytes": p.nbytes,
                "status": status.get(key, ""),
                "bloat": key in bloat,
            }
        )
    if baseline is not None and pd is not None:
        for p in pd.removed:
            rows.append(
                {
                    "name": p.name,
                    "shape": tuple(p.shape),
                    "dtype": p.dtype,
                    "nbytes": p.nbytes,
                    "status": "removed",
                    "bloat": False,
                }
            )
    order = {"": 2, "removed": 3}
    rows.sort(
        key=lambda r: (not r["bloat"], order.get(r["status"], 1), -r["nbytes"] if r["bloat"] else 0)
    )
    return rows


def param_table_html(step, baseline=None) -> str:
    """The parameter table (sortable): name, shape, dtype, bytes, status; totals, and the
    delta against ``baseline``."""
    rows = param_rows(step, baseline)
    body = []
    for r in rows:
        st = r["status"]
        cls = (
            "bloat"
            if r["bloat"]
            else {"new": "new", "removed": "removed", "": ""}.get(st, "changed")
        )
        body.append(
            f"<tr class='pl-s-{cls}'>"
            + _td(r["name"])
            + _td(_shape_text(r["shape"]), v=math.prod(r["shape"]) if r["shape"] else 1, num=True)
            + _td(r["dtype"])
            + _td(format_bytes(r["nbytes"]), v=r["nbytes"], num=True)
            + _td(st)
            + "</tr>"
        )
    after = step.graph.param_bytes
    n = sum(1 for r in rows if r["status"] != "removed")
    foot = f"{n} params · {format_bytes(after)}"
    if baseline is not None:
        before = baseline.graph.param_bytes
        foot += f" (was {format_bytes(before)}, {signed_bytes(after - before)})"
    changed = sum(1 for r in rows if r["status"])
    if changed:
        foot += f" · {changed} with a status"
    head = "".join(_th(h) for h in ("name", "shape", "dtype", "bytes", "status"))
    return (
        f"<table class='pl-table pl-params'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody>"
        f"<tfoot><tr><td colspan='5'>{esc(foot)}</td></tr></tfoot></table>"
    )


def findings_of(report, step, kinds: Iterable[str] | None = None) -> list:
    """A check report's findings about ``step`` (of the given kinds; a finding's ``step`` may
    be a Step or an index). The report is used through its ``findings`` only."""
    if report is None:
        return []
    kinds = set(kinds) if kinds is not None else None
    out = []
    for f in getattr(report, "findings", None) or []:
        fs = getattr(f, "step", None)
        same = (
            fs is step
            or (isinstance(fs, int) and fs == step.index)
            or (
                getattr(fs, "index", None) == step.index
                and getattr(fs, "trace", None) is step.trace
            )
        )
        if same and (kinds is None or getattr(f, "kind", None) in kinds):
            out.append(f)
    return out


def problems_of(report, step) -> list:
    """The findings about ``step`` that are problems (not info such as a signature change)."""
    return [
        f
        for f in findings_of(report, step)
        if getattr(f, "is_failure", getattr(f, "kind", "") in PROBLEM_KINDS)
    ]


def _finding_nodes(f, graph: GraphModel) -> list[str]:
    ids = []
    for n in getattr(f, "nodes", None) or []:
        if isinstance(n, str):
            ids.append(n)
        elif isinstance(n, GraphNode):
            ids.append(n.id)
        else:
            gn = graph.node_of(n)
            if gn is not None:
                ids.append(gn.id)
    return ids


def shape_table_html(step, report=None) -> str:
    """Every value's annotated type (sortable), shape changes against the previous step and
    the report's shape mismatches first (annotated vs computed, when a check ran)."""
    g = step.graph
    prev = step.previous if getattr(step, "trace", None) is not None else None
    changes = {}
    if prev is not None:
        d = step_diff(prev, step)
        changes = {s.node: f"was {s.before}" for s in d.shape_changes}
    mismatch: dict[str, str] = {}
    for f in findings_of(report, step, ("shape-mismatch",)):
        for nid in _finding_nodes(f, g) or [""]:
            mismatch[nid] = str(getattr(f, "message", ""))
    rows = []
    for nid, n in g.nodes.items():
        if n.kind in ("output",) or not n.type:
            continue
        note = mismatch.get(nid) or changes.get(nid, "")
        rank = 0 if nid in mismatch else (1 if nid in changes else 2)
        rows.append((rank, nid, n, note))
    rows.sort(key=lambda r: r[0])
    body = []
    for rank, nid, n, note in rows:
        cls = {0: "bloat", 1: "changed", 2: ""}[rank]
        body.append(
            f"<tr class='pl-s-{cls}'>"
            + _td(nid)
            + _td(n.op)
            + _td(n.type)
            + _td(n.group)
            + _td(note)
            + "</tr>"
        )
    head = "".join(_th(h) for h in ("node", "op", "type", "module", "note"))
    foot = f"{len(rows)} values · {len(changes)} shape changes"
    if report is not None:
        foot += f" · {len(mismatch)} mismatches against computed shapes"
    return (
        f"<table class='pl-table pl-shapes'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody><tfoot><tr><td colspan='5'>{esc(foot)}</td></tr>"
        "</tfoot></table>"
    )


def _step_check(report, step):
    """The report's numbers for ``step`` (an entry of ``report.steps`` whose ``step`` is it)."""
    for c in getattr(report, "steps", None) or []:
        if getattr(c, "step", None) is step:
            return c
    return None


def numerics_table_html(step, report=None) -> str:
    """What a check ``report`` says about ``step``: its status and error against the
    reference, its findings, and the per-node errors of a divergence (earliest first, each
    node with where it came from in the source)."""
    if report is None:
        return "<p class='pl-note'>No numerics yet: run <code>trace.check(inputs)</code>.</p>"
    parts = []
    c = _step_check(report, step)
    if c is not None:
        line = f"status {c.status}"
        if getattr(c, "max_abs", None) is not None:
            line += f" · max abs error {num(c.max_abs)} · max rel {num(c.max_rel)}"
        if getattr(c, "same_as", None) is not None:
            line += f" · same module as #{c.same_as}, its results reused"
        parts.append(f"<p class='pl-step-check'>{esc(line)}</p>")
    findings = findings_of(report, step)
    if findings:
        items = "".join(
            f"<li><b>{esc(getattr(f, 'kind', ''))}</b>: {esc(getattr(f, 'message', ''))}</li>"
            for f in findings
        )
        parts.append(f"<ul class='pl-findings'>{items}</ul>")
    rows = []
    for f in findings:
        for e in (getattr(f, "details", None) or {}).get("node_errors", []):
            node = step.graph.node_of(getattr(e, "node", None))
            rows.append(
                "<tr>"
                + _td(node.id if node is not None else "")
                + _td(node.op if node is not None else "")
                + _td(getattr(e, "where", ""))
                + _td(num(e.max_abs), v=e.max_abs if math.isfinite(e.max_abs) else None, num=True)
                + _td(num(e.max_rel), v=e.max_rel if math.isfinite(e.max_rel) else None, num=True)
                + _td(_shape_text(getattr(e, "shape", ())))
                + "</tr>"
            )
    if rows:
        head = "".join(_th(h) for h in ("node", "op", "source", "max abs", "max rel", "shape"))
        parts.append(
            f"<table class='pl-table pl-numerics'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
    if not parts:
        parts.append("<p class='pl-note'>The report has nothing about this step.</p>")
    return "".join(parts)


# ===== IR text and its diff ===================================================================


# Characters of a backend text (LLVM IR, assembly) shown in HTML; the rest is cut with a note.
MAX_BACKEND_TEXT = 400_000


def ir_text_html(step) -> str:
    """The step's IR text; the binding a failed pass failed on marked. After legalize-ops
    also the loop IR of its kernels (open), after codegen the LLVM IR and the assembly
    (folded), each cut at MAX_BACKEND_TEXT characters."""
    failed = step.failed_line
    lines = step.text.splitlines()
    out = []
    for i, line in enumerate(lines):
        cls = " class='pl-failed-line'" if i == failed else ""
        out.append(f"<span{cls}>{esc(line)}</span>")
    html = "<pre class='pl-ir'>" + "\n".join(out) + "</pre>"
    if getattr(step, "backend_stage", None) is None:
        return html
    parts = [f"<details open><summary>graph IR</summary>{html}</details>"]
    for name, text in step.texts.items():
        if name == "IR":
            continue
        note = ""
        if len(text) > MAX_BACKEND_TEXT:
            note = (
                f"<p class='pl-note'>{esc(name)}: first {MAX_BACKEND_TEXT:,} of {len(text):,} "
                f"characters; all of it: <code>{esc(f'step.texts[{name!r}]')}</code> or "
                f"<code>passlens show TRACE --step {step.index} --view '{esc(name)}'</code></p>"
            )
            text = text[:MAX_BACKEND_TEXT]
        opened = " open" if name == "loop IR" else ""
        parts.append(
            f"<details{opened}><summary>{esc(name)}</summary>{note}"
            f"<pre class='pl-ir'>{esc(text)}</pre></details>"
        )
    return "".join(parts)


_DIFF_CLASS = {"delete": "pl-del", "insert": "pl-ins", "replace": "pl-rep", "equal": ""}


def text_diff_html(d: Diff, mode: str = "both", context: int = 3) -> str:
    """The IR diff as HTML: ``side-by-side`` (two columns, runs of equal lines cut to
    ``context`` lines), ``unified``, or ``both``."""
    if mode not in ("both", "side-by-side", "unified"):
        raise ValueError(f"mode must be 'both', 'side-by-side' or 'unified', not {mode!r}")
    if d.identical or not d.text_diff:
        return f"<p class='pl-note'>{esc(d.headline())}: the IR text is the same.</p>"
    parts = []
    if mode in ("both", "side-by-side"):
        rows = []
        ln = rn = 0
        for left, right, tag in d.side_by_side(context=context):
            if tag == "skip":
                skipped = int(left.split()[1]) if left and left.split()[1].isdigit() else 0
                ln += skipped
                rn += skipped
                rows.append(f"<tr class='pl-skip'><td></td><td colspan='3'>{esc(left)}</td></tr>")
                continue
            cls = f" class='{_DIFF_CLASS[tag]}'" if _DIFF_CLASS[tag] else ""
            lcls = cls if left is not None else ""
            rcls = cls if right is not None else ""
            if left is not None:
                ln += 1
            if right is not None:
                rn += 1
            rows.append(
                f"<tr><td class='ln'>{ln if left is not None else ''}</td>"
                f"<td{lcls}>{esc(left or '')}</td>"
                f"<td class='ln'>{rn if right is not None else ''}</td>"
                f"<td{rcls}>{esc(right or '')}</td></tr>"
            )
        parts.append(
            "<table class='pl-diff pl-side-by-side'><colgroup><col style='width:3.5em'><col>"
            "<col style='width:3.5em'><col></colgroup>" + "".join(rows) + "</table>"
        )
    if mode in ("both", "unified"):
        out = []
        for line in d.text_diff.splitlines():
            if line.startswith(("+++", "---")):
                out.append(f"<b>{esc(line)}</b>\n")
            elif line.startswith("@@"):
                out.append(f"<span class='pl-hunk'>{esc(line)}</span>")
            elif line.startswith("+"):
                out.append(f"<span class='pl-ins'>{esc(line)}</span>")
            elif line.startswith("-"):
                out.append(f"<span class='pl-del'>{esc(line)}</span>")
            else:
                out.append(esc(line) + "\n")
        parts.append("<pre class='pl-unified'>" + "".join(out) + "</pre>")
    return "".join(parts)


# ===== the trace summary ======================================================================


def step_badges(row: dict, findings: int = 0) -> list[tuple[str, str]]:
    """Badges of one summary row (``Trace.summary()``): ``(css class, text)`` for its status,
    node delta, parameter-bytes delta, time, and findings."""
    out = [(f"pl-b-{row['status']}", row["status"])]
    if row["node_delta"]:
        out.append(("pl-b-nodes", f"{row['node_delta']:+d} nodes"))
    if row["param_delta"]:
        cls = "pl-b-grow" if row["param_delta"] > 0 else "pl-b-shrink"
        out.append((cls, signed_bytes(row["param_delta"])))
    if row["kind"] == "pass":
        out.append(("pl-b-time", f"{row['ms']:.1f} ms"))
    if findings:
        out.append(("pl-b-finding", f"{findings} finding{'s' if findings > 1 else ''}"))
    return out


def badges_html(badges: list[tuple[str, str]]) -> str:
    """Badges as HTML spans."""
    return "".join(f"<span class='pl-badge {c}'>{esc(t)}</span>" for c, t in badges)


def summary_html(trace, report=None) -> str:
    """The trace's steps as a table with badges (one row per step, ``data-step`` its
    index; nested passes indented)."""
    rows = []
    for r in trace.summary():
        step = trace.steps[r["step"]]
        n = len(problems_of(report, step))
        pad = "&nbsp;" * 4 * r["depth"]
        rows.append(
            f"<tr class='pl-step pl-st-{r['status']}' data-step='{r['step']}'>"
            f"<td class='num'>{r['step']}</td><td>{pad}{esc(r['pass'])}</td>"
            f"<td>{badges_html(step_badges(r, n))}</td>"
            f"<td class='num' data-v='{r['nodes']}'>{r['nodes']}</td>"
            + _td(format_bytes(r["param_bytes"]), v=r["param_bytes"], num=True)
            + f"<td>{esc(r['ops'])}</td></tr>"
        )
    head = (
        "<tr><th>#</th><th>step</th><th>badges</th><th>nodes</th><th>params</th><th>ops</th></tr>"
    )
    return (
        f"<table class='pl-table pl-summary'><thead>{head}</thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def json_script(data: Any) -> str:
    """JSON that is safe inside a ``<script type="application/json">`` element."""
    try:  # most data is JSON-ready already: walking it to convert costs more than dumping it
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = json.dumps(_jsonable(data), separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


__all__ = [
    "COLORS",
    "LAYOUTS",
    "MAX_BOXES",
    "GraphView",
    "LayoutCache",
    "badges_html",
    "default_collapsed",
    "esc",
    "findings_of",
    "graph_dot",
    "graph_svg",
    "graph_view",
    "ir_text_html",
    "json_script",
    "numerics_table_html",
    "param_rows",
    "param_stats",
    "param_table_html",
    "problems_of",
    "shape_table_html",
    "step_diff",
    "step_badges",
    "summary_html",
    "text_diff_html",
]
