"""A step's graph as Graphviz DOT: the static picture of a graph (:func:`graph_dot`, laid out
as SVG by :mod:`widgets.svg`), for notebooks that want an image. The interactive graph is the
graph component (``static/graph.js``, fed by :mod:`widgets.graph_data`), which shares the key
attributes and op summaries written here.

What the picture shows:

- one box per node (op and key attributes; weights as cylinders with their type and size;
  inputs as ellipses; the return as a house), shapes and dtypes on edges;
- nodes clustered by function (when there are several) and by source module path (``group``),
  as nested clusters; a *collapsed* group is one box showing its path and op counts (which
  boxes there are is the view of :mod:`widgets.boxes`);
- against ``baseline``: added nodes green, changed amber, removed ones dashed grey ghosts;
  the node a failed pass failed on red.

Everything taken from a model (names, attributes, types, paths) is escaped: labels are
Graphviz HTML-like labels built from escaped text, and DOT names and SVG ids are generated
(``n12``, ``pl_n12``); the model's node id is added to the SVG as ``data-node-id``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import graphviz

from explorer.fmt import format_bytes
from explorer.graph import GraphModel, GraphNode
from widgets.boxes import MAX_BOXES, GraphView, _Box, _prefixes, graph_view
from widgets.escape import esc

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
_FONT = "Helvetica,Arial,sans-serif"
_MAX_ATTRS = 3  # key attributes shown on a node
_DULL_ATTRS = {
    ("groups", "1"),
    ("dilation", "[1, 1]"),
    ("data_layout", '"NCHW"'),
    ("kernel_layout", '"OIHW"'),
    ("out_layout", '"NCHW"'),
}


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
    if n.opaque:  # an op without a converter: named by the op it stands for
        return _label(n.opaque["target"], [f"opaque · {n.opaque['runner']}"])
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
    if box.entry is not None and box.entry.node.opaque and not status:
        attrs.update(style="filled,dashed", fillcolor="#e0f2f1", color="#00695c", penwidth="2")
    classes = ["pl_node", "pl_k_" + _css(kind)] + ([f"pl_{status}"] if status else [])
    if box.entry is not None and box.entry.node.opaque:
        classes.append("pl_opaque")
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


__all__ = ["COLORS", "graph_dot"]
