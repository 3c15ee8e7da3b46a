"""Which boxes a step's graph is drawn with: the view behind the static picture of a graph.

:func:`graph_view` takes the step's nodes (and, against ``baseline``, the removed nodes of the
baseline as ghosts), marks each added / changed / removed / failed, and assigns them to boxes
given which groups are collapsed:

- one box per node, nodes placed in their function and source module path (``group``); a
  *collapsed* group is one box (its path and op counts), a collapsed function (``@name``) is
  hidden (its call nodes list its ops);
- ``collapsed=None`` chooses the view: nothing collapsed if the graph has at most
  ``max_boxes`` boxes, else the callee functions are hidden and groups are collapsed at the
  finest module depth that fits (see :func:`default_collapsed`).

:func:`widgets.dot.graph_dot` draws a view; the graph payload (:mod:`widgets.graph_data`)
starts from the same entries. :func:`step_diff` remembers the diffs every view of a step asks
for.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from explorer.diff import Diff, diff
from explorer.graph import GraphModel, GraphNode

MAX_BOXES = 300


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
_ENTRIES = _Memo(8)
_PLACED_KINDS = ("weight", "const")  # placed where their readers are


def step_diff(baseline, step) -> Diff:
    """``explorer.diff(baseline, step)``, remembered for the last few pairs of steps (every
    view of a step asks for it)."""
    return _DIFFS.get((baseline, step), None, lambda: diff(baseline, step))


def _entries(step, baseline) -> tuple[list[_Entry], Diff | None, GraphModel, GraphModel]:
    """The nodes to draw of ``step`` against ``baseline`` (and of the baseline's removed nodes,
    as ghosts), placed in their function and group; with the diff (None when there is no
    baseline or nothing changed) and the two graphs. Remembered for the last few pairs of
    steps: a payload and the payload of its baseline share them. Do not change them."""
    return _ENTRIES.get((step, baseline), None, lambda: _make_entries(step, baseline))


def _make_entries(step, baseline) -> tuple[list[_Entry], Diff | None, GraphModel, GraphModel]:
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
    homeless = {False: set(), True: set()}  # the weights and constants, by graph (ghost or not)
    for e in entries:
        n = e.node
        e.function, e.group = n.function, n.group
        if n.kind in _PLACED_KINDS:
            homeless[e.status == "removed"].add(n.id)
    readers: dict[tuple[bool, str], set[tuple[str, str]]] = {}
    for ghost, g in ((False, gb), (True, ga)):
        wanted, nodes = homeless[ghost], g.nodes
        if not wanted:
            continue
        for e in g.edges:
            if e.src in wanted:
                dst = nodes.get(e.dst)
                if dst is not None:
                    readers.setdefault((ghost, e.src), set()).add((dst.function, dst.group))
    for e in entries:
        n = e.node
        if n.kind in _PLACED_KINDS:
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


__all__ = ["MAX_BOXES", "GraphView", "default_collapsed", "graph_view", "step_diff"]
