"""The graph payload: what the graph component (`static/graph.js`) draws for one step.

One JSON-able dict per (step, baseline, report), shared by the three front ends (the Jupyter
`widgets.graph_view.GraphView`, the Panel app and the HTML report). The browser lays it
out itself, a module group at a time when the group is opened, so the payload holds the whole
graph but the cost of drawing follows what is visible.

`graph_payload(step, baseline, report)`:

- `nodes`: every node of the step and, against `baseline`, a *ghost* of every removed node
  (status `removed`), in graph order: `id`, kind `k`, title `t`, lines `s`, group
  `g` (index into `groups`), status `st` (added / changed / moved / removed / failed /
  ""; moved: only moved into or out of a function, values unchanged, not among `changes`),
  type `ty` (index into `types`), bytes `b`, and: `inl` (the index of the node it is
  drawn on: a weight or constant this step did not touch is a line of its reader, like
  Netron, not a box of its own), `w` (those lines on a reader), `mark` (a finding's badge,
  e.g. `×8 copies`), `bad` (a finding names it: red outline), `err` (its error against
  the reference after a check, for the error overlay), `chg` (what changed, in words),
  `opq` (an opaque op, no converter: who runs it, torch or onnxruntime; its title is the op
  it stands for, e.g. `aten.cummax.default`), `mod` (an op alone in its frameless module,
  titled by it: `q_proj`, the op its first line);
- `edges`: `[src, dst, type index, flags]` (flags: 1 ghost, 2 its shape changed);
- `groups`: the module hierarchy as a tree (index 0 the root): `id` (a module path,
  `@function`, or a segment), `label`, parent `p`, kind `k` (module / function /
  segment), and (every group: drawn as a box, or a row of the overview) `n` (live nodes
  inside: ghosts are not counted), `ops` (an op summary), `b` (parameter bytes inside),
  `db` (their change against the baseline), `ch` (counts of added / changed / moved /
  removed / failed nodes inside), `bad`, `f` (nodes inside that a finding names), `fm`
  (the first one's badge), `fi` (the first one), `ci` (the first changed node inside; see
  `widgets.graph_groups.group_marks`);
  more than `MAX_CHILDREN` children are split into segments (10,000 ops: a few boxes);
- `collapsed`: the groups collapsed at first (the finest level that fits `max_boxes`
  boxes, the groups holding the focus opened first), `changes` (the changed nodes in graph
  order: `n` / `p` step through them), `focus` (where the view opens: the node the
  header's first finding names first, `widgets.findings.named_first`, else the first
  finding's node in graph order, else the first change), `pairs` (after index -> baseline
  node id where the matched ids differ), `details` (per node: name, function, attributes,
  provenance with paths relative to the model's folder, a weight's preview and statistics,
  `why`: the rule and the step that made it, from the steps' rewrites).

The group tree and the node order come from `widgets.graph_groups`, the findings' marks
from `widgets.findings.graph_marks`. Everything here is data: strings from the model are
escaped by the component when drawn (it only ever sets `textContent`).
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from typing import Any

import numpy as np

from explorer.fmt import format_bytes
from explorer.graph import collector_paused
from explorer.rewrites import whys
from widgets.bounds import (
    MAX_PAYLOAD_BYTES,
    MAX_TEXT,
    check_budget,
    clip,
    clip_id,
    clip_tree,
)
from widgets.boxes import MAX_BOXES, Memo, drawn_entries, prefixes
from widgets.findings import graph_marks, named_first
from widgets.graph_groups import (
    MAX_CHILDREN,
    SEGMENT,
    group_marks,
    group_shape,
    group_tree,
    positions,
    segment,
    unframed_modules,
)
from widgets.stats import cached_stats

MAX_INLINE = 4  # weight lines drawn on one node
MAX_OPENED_CHANGES = 50  # changes whose groups are opened at first (while they fit)
MAX_WHYS = 20_000  # nodes of a step whose why lines a payload holds (the rest: a note)
_MAX_ATTRS = 3  # key attributes shown on an op's box
_DULL_ATTRS = {  # attributes at their usual value: not worth a line on the box
    *(("groups", "1"), ("dilation", "[1, 1]"), ("data_layout", '"NCHW"')),
    *(("kernel_layout", '"OIHW"'), ("out_layout", '"NCHW"')),
}
_INLINE_KINDS = _STATS_KINDS = ("weight", "const")
_BYTE_KINDS = ("weight", "param")  # counted in a group's parameter bytes

_PAYLOADS = Memo(16)


def graph_payload(
    step, baseline=None, report=None, max_boxes: int = MAX_BOXES, stats: bool = True
) -> dict:
    """The payload of `step`'s graph, diff-coloured against `baseline`, with the findings
    of a check `report` drawn on it (see the module docstring). `stats`: weights' first
    values and statistics in the details (a live view leaves them out and sends a weight's
    when it is selected: `weight_stats`). Cached per (step, baseline, report,
    max_boxes, stats): the dict returned is shared, do not change it."""
    build = lambda: _build(step, baseline, report, stats, max_boxes)  # noqa: E731
    return _PAYLOADS.get((step, baseline, report), (max_boxes, stats), build)


def _build(step, baseline, report, stats: bool, max_boxes: int) -> dict:
    # A payload is some 20 small objects per node, all kept: the cyclic garbage collector
    # would walk every object of the process several times while it is built (a third of the
    # time of a 10,000-node payload) and find nothing to free. It is paused meanwhile.
    with collector_paused():
        return _Builder(step, baseline, report, stats).build(max_boxes)


def weight_stats(step, node_id: str) -> dict:
    """A weight's first values and statistics (what the details show), by its node id in
    `step` (or in the step's baseline, for a ghost `removed:...`); empty for other
    nodes."""
    graph = step.graph
    if node_id.startswith("removed:"):
        node_id = node_id[len("removed:") :]
        prev = step.previous
        graph = prev.graph if prev is not None else graph
    node = graph.nodes.get(node_id)
    data = getattr(getattr(node, "obj", None), "data", None)
    if node is None or node.kind not in _STATS_KINDS or data is None:
        return {}
    return cached_stats(data)


# ===== helpers =================================================================================


_size = functools.lru_cache(maxsize=1024)(format_bytes)  # weights share a few sizes


def _key_attrs(attrs: dict) -> list[str]:
    """The first few attributes of an op worth a line on its box (`strides=[2, 2]`)."""
    out = []
    for k, v in attrs.items():
        v = str(v)
        if v == "none" or (k, v) in _DULL_ATTRS:
            continue
        out.append(f"{k}={v}")
        if len(out) == _MAX_ATTRS:
            break
    return out


def _common_dir(paths: list[str]) -> str:
    dirs = [os.path.dirname(p) for p in paths if p and os.path.isabs(p)]
    if not dirs:
        return ""
    try:
        return os.path.commonpath(dirs)
    except ValueError:
        return ""


_FILE_LINE = re.compile(r"^(.*?)(:\d+)?$")


@functools.lru_cache(maxsize=4096)
def short_path(path: str, root: str) -> str:
    """`path` (`file` or `file:line`) relative to `root` when it lies under it."""
    m = _FILE_LINE.match(path)
    file, line = m.group(1), m.group(2) or ""
    if root and os.path.isabs(file):
        rel = os.path.relpath(file, root)
        if not rel.startswith(".."):
            return rel + line
    return os.path.basename(file) + line if os.path.isabs(file) else path


# ----- tallies summed over the group tree -------------------------------------------------------
# A tally is ``{key: [count, first]}``: how often a key was met among a group's members and the
# position of the first one, so a tally summed from the children's lists its keys in the order
# they were first met, as a Counter of the members would.


def _tally(t: dict[str, list[int]], key: str, pos: int) -> None:
    seen = t.get(key)
    if seen is None:
        t[key] = [1, pos]
    else:
        seen[0] += 1


def _merge(into: dict[str, list[int]], t: dict[str, list[int]]) -> None:
    for key, (c, first) in t.items():
        seen = into.get(key)
        if seen is None:
            into[key] = [c, first]
        else:
            seen[0] += c
            if first < seen[1]:
                seen[1] = first


def _by_first(t: dict[str, list[int]]) -> list[tuple[str, list[int]]]:
    return sorted(t.items(), key=lambda kv: kv[1][1])


def _op_line(t: dict[str, list[int]], limit: int = 3) -> str:
    """`12 ops: add ×4, matmul ×3, exp, +2 more`: the commonest ops first (ties in the order
    first met)."""
    common = sorted(t.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    parts = [f"{op} ×{c}" if c > 1 else op for op, (c, _first) in common[:limit]]
    if len(common) > limit:
        parts.append(f"+{len(common) - limit} more")
    return clip(f"{sum(c for c, _first in t.values())} ops: {', '.join(parts)}")


# ===== the builder =============================================================================


class _Builder:
    def __init__(self, step, baseline, report, stats: bool = True):
        self.step, self.baseline, self.report, self.stats = step, baseline, report, stats
        self.entries, self.diff, self.ga, self.gb = drawn_entries(step, baseline)
        self.index = {e.key: i for i, e in enumerate(self.entries)}
        self.types: dict[str, int] = {}
        self._functions: tuple[str, bool] | None = None  # the main function, several or not

    def type_index(self, text: str) -> int:
        i = self.types.get(text)
        if i is None:
            i = self.types[text] = len(self.types)
        return i

    # ----- which weights are drawn as lines of their readers --------------------------------
    def inline(self, bad: set[int], marks: dict[int, str]) -> dict[int, int]:
        readers: dict[str, list[str]] = {}
        for e in self.gb.edges:
            readers.setdefault(e.src, []).append(e.dst)
        out: dict[int, int] = {}
        for i, e in enumerate(self.entries):
            if e.node.kind not in _INLINE_KINDS or e.status or i in bad or i in marks:
                continue
            hosts = [self.index[r] for r in readers.get(e.key, []) if r in self.index]
            if hosts:
                out[i] = hosts[0]
        return out

    # ----- the payload ---------------------------------------------------------------------
    def build(self, max_boxes: int) -> dict:
        entries = self.entries
        marks, bad, errors = graph_marks(
            self.step, self.report, self.diff, entries, self.index, self.gb
        )
        inline = self.inline(bad, marks)
        drawn = [i for i in range(len(entries)) if i not in inline]
        pos = positions(entries, self.diff, self.ga, self.index)
        groups, of = group_tree(entries, drawn)
        alone = unframed_modules(entries, groups, drawn)
        segment(groups, of, drawn, pos, {i for i in drawn if entries[i].status == "removed"})
        for i, host in inline.items():
            of[i] = of[host]
        roots = self._provenance_root()

        nodes = []
        size = 0  # about the payload's bytes as JSON (its budget: MAX_PAYLOAD_BYTES)
        lines_on: dict[int, list[str]] = {}
        for i, host in inline.items():
            lines_on.setdefault(host, []).append(i)
        title, lines, type_index = self._title, self._lines, self.type_index
        for i, e in enumerate(entries):
            n = e.node
            node: dict[str, Any] = {
                "id": clip_id(e.key),
                "k": n.kind,
                "t": clip(alone[i] if i in alone else title(n, e.group)),
                "s": [clip(x) for x in lines(n)],
                "g": of[i],
                "ty": type_index(n.type),
            }
            if e.status:
                node["st"] = e.status
            if e.change:
                node["chg"] = clip(e.change)
            if n.nbytes:
                node["b"] = n.nbytes
            if i in inline:
                node["inl"] = inline[i]
            if i in lines_on:
                node["w"] = self._weight_lines(lines_on[i], e.group)
                node["wi"] = lines_on[i][:MAX_INLINE]  # the nodes of those lines
            if i in marks:
                node["mark"] = clip(str(marks[i]))
            if i in bad:
                node["bad"] = 1
            if i in errors:
                node["err"] = errors[i]
            if n.opaque:
                node["opq"] = clip(n.opaque["runner"])
            if i in alone:  # titled by its module (q_proj): the op is the first line
                node["s"][:0], node["mod"] = [clip(title(n, e.group))], 1
            nodes.append(node)
            size += 80 + len(node["id"]) + len(node["t"]) + sum(map(len, node["s"]))

        edges = []
        shape_changed = {s.node for s in self.diff.shape_changes} if self.diff else set()
        for e in self.gb.edges:
            s, t = self.index.get(e.src), self.index.get(e.dst)
            if s is not None and t is not None:
                edges.append([s, t, self.type_index(e.type), 2 if e.src in shape_changed else 0])
        if self.diff is not None:
            back = {aid: bid for bid, (aid, _how) in self.diff.matches.items()}
            for e in self.ga.edges:
                ends = []
                for aid in (e.src, e.dst):
                    ghost = "removed:" + aid
                    ends.append(self.index.get(ghost, self.index.get(back.get(aid, ""))))
                s, t = ends
                is_ghost = "removed:" + e.src in self.index or "removed:" + e.dst in self.index
                if is_ghost and s is not None and t is not None:
                    edges.append([s, t, self.type_index(e.type), 1])

        self._group_summaries(groups, of, drawn, bad, inline)
        changes = sorted(
            (i for i in drawn if entries[i].status not in ("", "moved")), key=lambda i: (pos[i], i)
        )
        findings_first = sorted(bad | set(marks), key=lambda i: (pos[i], i))
        group_marks(groups, of, findings_first, marks, changes)
        focus = named_first(self.report, self.step, self.index, self.gb)  # the header's first
        if focus is None:  # else the first finding or change
            focus = (findings_first or changes or [None])[0]
        if focus is not None and focus in inline:
            focus = inline[focus]
        pairs = []
        if self.diff is not None:
            for bid, (aid, _how) in self.diff.matches.items():
                if aid != bid and bid in self.index:
                    pairs.append([self.index[bid], clip_id(aid)])
        details, details_size = self._details(roots)
        types = [clip(t) for t in self.types]
        for grp in groups:
            grp["id"], grp["label"] = clip_id(grp["id"]), clip(grp["label"])
            if "fm" in grp:
                grp["fm"] = clip(str(grp["fm"]))
        size += details_size + 16 * len(edges) + sum(map(len, types)) + 120 * len(groups)
        size += sum(len(grp["id"]) + len(grp["label"]) + len(grp.get("ops", "")) for grp in groups)
        check_budget(
            size,
            MAX_PAYLOAD_BYTES,
            f"the graph of step #{self.step.index} ({len(nodes):,} nodes, {len(edges):,} edges)",
            "its nodes' texts are long or it has very many nodes: view fewer steps, or a smaller "
            "part of the model",
        )
        payload = {
            "step": {"index": self.step.index, "name": clip(self.step.name)},
            "baseline": None
            if self.baseline is None
            else {"index": self.baseline.index, "name": clip(self.baseline.name)},
            "nodes": nodes,
            "edges": edges,
            "types": types,
            "groups": groups,
            "changes": changes,
            "focus": focus,
            "pairs": pairs,
            "details": details,
        }
        payload["collapsed"] = self._initial_collapsed(groups, of, drawn, focus, changes, max_boxes)
        return payload  # every piece is JSON-ready

    def _title(self, n, group: str) -> str:
        if n.kind in ("weight", "param", "input"):
            # inside its module's frame a weight needs no module path: ``weight``, not
            # ``features.1.0.block.3.weight`` (the whole name is in the details)
            if group and n.label.startswith(group + ".") and n.kind == "weight":
                return n.label[len(group) + 1 :]
            return n.label
        if n.kind == "const":
            return "const"
        if n.kind == "output":
            return "return"
        if n.opaque:
            return n.opaque["target"]
        return n.op

    def _lines(self, n) -> list[str]:
        if n.opaque:
            return [f"opaque · {n.opaque['runner']}"]
        if n.kind in ("op",):
            return _key_attrs(n.attrs)
        if n.kind in ("weight", "param"):
            return [x for x in (n.type, _size(n.nbytes) if n.nbytes else "") if x]
        if n.kind in ("const", "input"):
            return [n.type]
        return []

    def _weight_lines(self, items: list[int], group: str) -> list[str]:
        out = []
        for i in items[:MAX_INLINE]:
            n = self.entries[i].node
            name = n.label if n.kind == "weight" else "const"
            if group and name.startswith(group + "."):
                name = name[len(group) + 1 :]
            out.append(clip(f"{name} {n.type}"))
        if len(items) > MAX_INLINE:
            out.append(f"+{len(items) - MAX_INLINE} more")
        return out

    def _provenance_root(self) -> str:
        files = {str(e.node.provenance.get("file", "")) for e in self.entries}
        return _common_dir(sorted({f.rsplit(":", 1)[0] for f in files}))

    def _details(self, root: str) -> tuple[list[dict], int]:
        """What the details drawer shows beyond the node itself (its inputs and users come
        from the edges): name, function, attributes, provenance (file paths relative to
        `root`), and a weight's first values and statistics when `stats`; every text cut
        at MAX_TEXT characters with a note. With about their bytes as JSON."""
        out = []
        stats = self.stats
        why = self._whys()
        size = 0
        for e in self.entries:
            n = e.node
            info: dict[str, Any] = {"name": clip(n.label)}
            if e.key in why:
                info["why"] = why[e.key]
            if n.function:
                info["function"] = clip(n.function)
            if n.attrs:
                info["attrs"], k = clip_tree(n.attrs)
                size += k
            if n.provenance:
                prov = dict(n.provenance)
                if "file" in prov:
                    prov["file"] = short_path(str(prov["file"]), root)
                info["provenance"], k = clip_tree(prov)
                size += k
            size += 40 + len(info["name"]) + len(info.get("why", "")) + len(n.function)
            if stats and n.kind in _STATS_KINDS:
                data = getattr(n.obj, "data", None)
                if isinstance(data, np.ndarray):
                    info.update(cached_stats(data))
                    size += 400
            out.append(info)
        return out, size

    def _whys(self) -> dict[str, str]:
        """Why each node changed, by entry key: the rule and the step that made it
        (`explorer.rewrites.whys`), and for a removed node the rule of this step that
        replaced it (when the baseline is the step this pass was given); for MAX_WHYS nodes
        at most (the others say so), each cut at 4 x MAX_TEXT characters."""
        out = whys(self.step)
        if self.baseline is not None and self.baseline is self.step.previous:
            where = f"#{self.step.index} {self.step.name}"
            for r in self.step.rewrites:
                for nid in r.matched:
                    out.setdefault(f"removed:{nid}", f"replaced by rule {r.rule} at {where}")
                if len(out) > 2 * MAX_WHYS:
                    break
        if len(out) > MAX_WHYS:
            keys = list(out)
            n = len(keys) - MAX_WHYS
            note = f"(why lines kept for {MAX_WHYS:,} nodes, not {n:,} more: step.why(node))"
            out = {k: out[k] for k in keys[:MAX_WHYS]} | dict.fromkeys(keys[MAX_WHYS:], note)
        return {k: clip(v, 4 * MAX_TEXT) for k, v in out.items()}

    def _group_summaries(self, groups, of, drawn, bad, inline) -> None:
        """Each group's box: live nodes inside, op summary, parameter bytes and their change,
        counts of changes, whether a finding is inside. Summed bottom-up: the groups come
        parents first (`segment` orders them so)."""
        n = len(groups)
        parent = [grp["p"] for grp in groups]
        assert all(parent[g] < g for g in range(1, n)), "groups must come parents first"
        # op -> [count, first position among the members] per group: the summary lists the
        # commonest ops, ties in the order first met (as Counter.most_common does)
        ops: list[dict[str, list[int]]] = [{} for _ in range(n)]
        live = [0] * n
        nbytes = [0] * n
        ch: list[dict[str, list[int]]] = [{} for _ in range(n)]  # status -> [count, first]
        has_bad = [False] * n
        members = drawn + list(inline)
        entries = self.entries
        for pos, i in enumerate(members):
            e = entries[i]
            node, g = e.node, of[i]
            if e.status != "removed":
                if node.kind in ("op", "call", "if"):
                    _tally(ops[g], node.op, pos)
                if i not in inline:
                    live[g] += 1
                if node.kind in ("weight", "param"):
                    nbytes[g] += node.nbytes
            if e.status:
                _tally(ch[g], e.status, pos)
            if i in bad:
                has_bad[g] = True
        for g in range(n - 1, 0, -1):  # children into their parents
            p = parent[g]
            live[p] += live[g]
            nbytes[p] += nbytes[g]
            has_bad[p] = has_bad[p] or has_bad[g]
            _merge(ch[p], ch[g])
            _merge(ops[p], ops[g])
        before = self._baseline_bytes()
        after = self._bytes_by_path(e for e in self.entries if e.status != "removed")
        for g, grp in enumerate(groups):
            grp["n"] = live[g]
            if ops[g]:
                grp["ops"] = _op_line(ops[g])
            if grp["k"] != "segment":  # a module's weights, wherever they are drawn
                nbytes[g] = after.get(grp["id"], 0)
            if nbytes[g]:
                grp["b"] = nbytes[g]
            if before is not None and grp["k"] != "segment":
                delta = nbytes[g] - before.get(grp["id"], 0)
                if delta:
                    grp["db"] = delta
            if ch[g]:
                grp["ch"] = {k: c for k, (c, _first) in _by_first(ch[g])}
            if has_bad[g]:
                grp["bad"] = 1

    def _bytes_by_path(self, entries, here: dict | None = None) -> dict[str, int]:
        """Parameter bytes per group id (a module path, `@fn` or `@fn/path`; "" the
        whole graph) of `entries`, each placed where `here` (key -> entry of this step)
        places it, else where it is."""
        if self._functions is None:
            fns = {e.function for e in self.entries if e.function}
            self._functions = ("main" if "main" in fns else min(fns, default=""), len(fns) > 1)
        main, several = self._functions
        placed: dict[tuple[str, str], int] = {}  # (function or "", module path) -> bytes
        for e in entries:
            if e.node.kind not in _BYTE_KINDS:
                continue
            place = here.get(e.key, e) if here else e
            fn = place.function if several and place.function and place.function != main else ""
            placed[fn, place.group] = placed.get((fn, place.group), 0) + e.node.nbytes
        out: Counter = Counter()
        for (fn, group), nbytes in placed.items():
            prefix = ""
            if fn:
                prefix = f"@{fn}/"
                out["@" + fn] += nbytes
            out[""] += nbytes
            for p in prefixes(group):
                out[prefix + p] += nbytes
        return dict(out)

    def _baseline_bytes(self) -> dict[str, int] | None:
        """Parameter bytes of the baseline per group id. A weight both steps have is counted
        where this step places it: a weight whose readers moved to another module is not a
        change of bytes."""
        if self.diff is None:
            return None
        entries, _d, _ga, _gb = drawn_entries(self.baseline, None)
        here = {e.key: e for e in self.entries if e.status != "removed"}
        return self._bytes_by_path(entries, here)

    def _initial_collapsed(self, groups, of, drawn, focus, changes, max_boxes: int) -> list[str]:
        """The groups holding the focus are open; then those holding the other changes, then
        groups breadth first, while the number of boxes stays within `max_boxes`; the rest
        start collapsed."""
        n = len(groups)
        kids, direct = group_shape(groups, of, drawn)
        opened = {0}
        boxes = direct[0] + len(kids[0])

        def cost(g: int) -> int:
            return direct[g] + len(kids[g]) - 1  # its children replace its box

        focus_chain: list[int] = []
        if focus is not None:
            g = of[focus]
            while g > 0:
                focus_chain.append(g)
                g = groups[g]["p"]
        for g in reversed(focus_chain):  # the focus is always shown
            opened.add(g)
            boxes += cost(g)
        for i in changes[:MAX_OPENED_CHANGES]:  # then the other changes, while they fit
            chain = []
            g = of[i]
            while g > 0 and g not in opened:
                chain.append(g)
                g = groups[g]["p"]
            extra = sum(cost(c) for c in chain)
            if boxes + extra <= max_boxes:
                opened.update(chain)
                boxes += extra
        queue = list(kids[0])
        while queue:
            nxt = []
            for g in queue:
                if g not in opened:
                    if boxes + cost(g) > max_boxes:
                        continue
                    opened.add(g)
                    boxes += cost(g)
                nxt.extend(kids[g])  # only the children of an opened group are shown
            queue = nxt
        return [groups[g]["id"] for g in range(1, n) if g not in opened]


__all__ = ["MAX_CHILDREN", "SEGMENT", "graph_payload", "short_path", "weight_stats"]
