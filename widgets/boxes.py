"""The nodes a step's graph is drawn with, before they become the graph payload
(`widgets.graph_data`): the step's nodes and, against a baseline, the baseline's removed
nodes as ghosts, each marked added / changed / removed / failed and placed in its function and
source module path (`drawn_entries`); `MAX_BOXES`, the boxes a first view holds at most; and
`step_diff`, the diffs every view of a step asks for, remembered.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from explorer.diff import Diff, diff
from explorer.graph import GraphModel, GraphNode
from widgets.bounds import module_path

MAX_BOXES = 300


@dataclass
class Entry:
    """A node to draw (`key` is its data-node-id): a node of the step, or a removed node of
    the baseline (a ghost)."""

    key: str
    node: GraphNode
    status: str = ""  # added, changed, moved, removed, failed or ""
    change: str = ""
    function: str = ""
    group: str = ""


def prefixes(path: str) -> list[str]:
    """The dotted prefixes of `path` (`a.b.c` -> `a`, `a.b`, `a.b.c`); none for `""`."""
    parts = path.split(".") if path else []
    return [".".join(parts[: k + 1]) for k in range(len(parts))]


class Memo:
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


_DIFFS = Memo(32)
_ENTRIES = Memo(8)
_PLACED_KINDS = ("weight", "const")  # placed where their readers are


def step_diff(baseline, step) -> Diff:
    """`explorer.diff(baseline, step)`, remembered for the last few pairs of steps (every
    view of a step asks for it)."""
    return _DIFFS.get((baseline, step), None, lambda: diff(baseline, step))


def drawn_entries(step, baseline) -> tuple[list[Entry], Diff | None, GraphModel, GraphModel]:
    """The nodes to draw of `step` against `baseline` (and of the baseline's removed nodes,
    as ghosts), placed in their function and group; with the diff (None when there is no
    baseline or nothing changed) and the two graphs. Remembered for the last few pairs of
    steps: a payload and the payload of its baseline share them. Do not change them."""
    return _ENTRIES.get((step, baseline), None, lambda: _make_entries(step, baseline))


def _make_entries(step, baseline) -> tuple[list[Entry], Diff | None, GraphModel, GraphModel]:
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
    moved = {c.after.id: "moved " + _moved(c) for c in d.moved} if d else {}
    entries: list[Entry] = []
    for nid, n in gb.nodes.items():
        status = (
            "failed"
            if nid == failed_id
            else (
                "added"
                if nid in added
                else ("changed" if nid in changed else ("moved" if nid in moved else ""))
            )
        )
        entries.append(Entry(nid, n, status, changed.get(nid, "") or moved.get(nid, "")))
    ga = baseline.graph if d is not None else GraphModel()
    if d is not None:
        for n in d.removed:
            entries.append(Entry("removed:" + n.id, n, "removed"))
    _place(entries, gb, ga)
    return entries, d, ga, gb


def _moved(c) -> str:
    """Where a moved node was and is: `from @main to @fused_add_relu`."""
    old, new = c.fields["function"]
    return f"from @{old} to @{new}, same values"


def _place(entries: list[Entry], gb: GraphModel, ga: GraphModel) -> None:
    """Each entry's function and group (its module path bounded to MAX_GROUP_DEPTH levels:
    `widgets.bounds.module_path`). A weight (module-wide) sits in its readers' function
    when they share one and, without a module path of its own, in their group when they
    share one."""
    homeless = {False: set(), True: set()}  # the weights and constants, by graph (ghost or not)
    for e in entries:
        n = e.node
        e.function, e.group = n.function, module_path(n.group)  # (bounded: from a file)
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
                    home = (dst.function, module_path(dst.group))
                    readers.setdefault((ghost, e.src), set()).add(home)
    for e in entries:
        n = e.node
        if n.kind in _PLACED_KINDS:
            homes = readers.get((e.status == "removed", n.id), set())
            fns = {f for f, _ in homes}
            if not n.function and len(fns) == 1:
                e.function = next(iter(fns))
            if not n.group and len(homes) == 1:
                e.group = next(iter(homes))[1]


__all__ = [
    "MAX_BOXES",
    "Entry",
    "Memo",
    "drawn_entries",
    "prefixes",
    "step_diff",
]
