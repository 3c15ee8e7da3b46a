"""The module tree of the graph payload (`widgets.graph_data`): the groups a step's nodes
are framed in, and the order the nodes are laid out in.

- `group_tree`: a group per function (when there are several) and per module path, with
  groups not worth a frame dropped (one member in all, or a lone child group);
- `unframed_modules`: the ops alone in their module, titled by its name;
- `segment`: a group with more than `MAX_CHILDREN` children has them split into
  segments (`nodes 1–40 of 10,000, 2 removed`: what they hold, which of how many live
  ones, and the ghosts among them), so a flat graph of 10,000 ops is drawn as a few boxes;
- `positions`: graph order, with a removed node's ghost next to what replaced it;
- `group_marks`: where each group's findings and changes are (the overview's marks and
  the zoomed-out blocks' links).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from explorer.diff import Diff
    from explorer.graph import GraphModel
    from widgets.boxes import Entry

MAX_CHILDREN = 60  # direct children of a group before they are split into segments
SEGMENT = 40  # children per segment


def group_tree(entries: list[Entry], drawn: list[int]) -> tuple[list[dict], list[int]]:
    """The groups (index 0 the root) and each entry's group, for the drawn entries."""
    fns = {e.function for e in entries if e.function}
    main = "main" if "main" in fns else (sorted(fns)[0] if fns else "")
    several = len(fns) > 1
    groups: list[dict] = [{"id": "", "label": "", "p": -1, "k": "root"}]
    by_id: dict[str, int] = {"": 0}

    def group(gid: str, label: str, parent: int, kind: str) -> int:
        i = by_id.get(gid)
        if i is None:
            i = by_id[gid] = len(groups)
            groups.append({"id": gid, "label": label, "p": parent, "k": kind})
        return i

    placed: dict[tuple[str, str], int] = {}  # (function, module path) -> its group

    def place(fn: str, path: str) -> int:
        """The group of module `path` (its ancestors made first) in function `fn`; a
        loop, not recursion: paths are bounded (`widgets.bounds.module_path`) but
        come from a file."""
        chain = []  # the path and its ancestors without a group yet, innermost first
        while path and (fn, path) not in placed:
            chain.append(path)
            path = path.rpartition(".")[0]
        if path:
            parent = placed[fn, path]
        else:
            parent = group("@" + fn, "@" + fn, 0, "function") if fn else 0
        for p in reversed(chain):
            name = p.rpartition(".")[2]
            parent = placed[fn, p] = group(f"@{fn}/{p}" if fn else p, name, parent, "module")
        return parent

    of = [0] * len(entries)
    for i in drawn:
        e = entries[i]
        fn = e.function if several and e.function and e.function != main else ""
        if e.group:
            of[i] = place(fn, e.group)
        elif fn:
            of[i] = group("@" + fn, "@" + fn, 0, "function")
    return _simplify(groups, of, drawn)


def unframed_modules(entries: list[Entry], groups: list[dict], drawn: list[int]) -> dict[int, str]:
    """The drawn ops alone in their module (`q_proj`'s linear: a module of one node gets no
    frame, `group_tree`), each with the module's name to title it by, as Netron and
    Model Explorer do: the last part of its path, unless that is a number (a Sequential's
    `block.3` says less than `linear`).
    `groups` are `group_tree`'s, before `segment`."""
    fns = {e.function for e in entries if e.function}
    main = "main" if "main" in fns else (sorted(fns)[0] if fns else "")
    several = len(fns) > 1
    framed = {g["id"] for g in groups}
    out: dict[int, str] = {}
    for i in drawn:
        e = entries[i]
        if not e.group or e.node.kind not in ("op", "call", "if"):
            continue
        fn = e.function if several and e.function and e.function != main else ""
        if (f"@{fn}/{e.group}" if fn else e.group) in framed:
            continue
        name = e.group.rpartition(".")[2]
        if not name.isdigit():  # ``block.3`` of a Sequential says less than its op
            out[i] = name
    return out


def group_shape(
    groups: list[dict], of: list[int], drawn: list[int]
) -> tuple[list[list[int]], list[int]]:
    """Each group's child groups, and how many drawn nodes sit directly in it."""
    kids: list[list[int]] = [[] for _ in groups]
    for g in range(1, len(groups)):
        kids[groups[g]["p"]].append(g)
    direct = [0] * len(groups)
    for i in drawn:
        direct[of[i]] += 1
    return kids, direct


def _simplify(groups: list[dict], of: list[int], drawn: list[int]) -> tuple[list[dict], list[int]]:
    """Drop groups not worth a frame (one member in all, or a lone child group and no
    nodes of their own: the child takes the parent's place, its label the joined path). A
    label that starts with a number (a Sequential's index: `3`, or a chain `0.blocks`)
    reads with its parent's name: `block.3`, `stages.0.blocks`."""
    n = len(groups)
    kids, direct = group_shape(groups, of, drawn)
    total = direct[:]
    for g in range(n - 1, 0, -1):  # children come after their parents
        total[groups[g]["p"]] += total[g]
    alias = list(range(n))  # group -> the group that stands for it

    def resolve(g: int) -> int:
        while alias[g] != g:
            g = alias[g]
        return g

    for g in range(1, n):
        if groups[g]["k"] == "function":
            continue
        if total[g] < 2:
            alias[g] = groups[g]["p"]
        elif direct[g] == 0 and len(kids[g]) == 1 and groups[kids[g][0]]["k"] == "module":
            child = kids[g][0]
            groups[child]["label"] = groups[g]["label"] + "." + groups[child]["label"]
            alias[g] = groups[g]["p"]
    keep = [g for g in range(n) if resolve(g) == g]
    for g in keep:  # "3" says little on its own: "block.3"; so does a chain "0.blocks"
        label, parent = groups[g]["label"], resolve(groups[g]["p"]) if g else -1
        if g and label.partition(".")[0].isdigit() and parent > 0:
            groups[g]["label"] = groups[parent]["label"].rsplit(".", 1)[-1] + "." + label
    new_index = {g: k for k, g in enumerate(keep)}
    out = []
    for g in keep:
        d = dict(groups[g])
        d["p"] = -1 if g == 0 else new_index[resolve(d["p"])]
        out.append(d)
    of = [new_index[resolve(of[i])] for i in range(len(of))]
    return out, of


def segment(
    groups: list[dict],
    of: list[int],
    drawn: list[int],
    pos: list[float],
    ghosts: frozenset[int] | set[int] = frozenset(),
) -> None:
    """Split a group's children into segments where it has more than MAX_CHILDREN
    (segments of segments when there are very many). A segment's label counts live members:
    `nodes 41–80 of 10,000` numbers and counts the run's members that are not ghosts
    (`ghosts`: indices of removed nodes drawn as ghosts), and says `, 2 removed` when it
    holds ghosts too."""
    first: dict[int, float] = {}
    for i in drawn:  # the earliest position inside every group
        g, p = of[i], pos[i]
        while g >= 0 and first.get(g, float("inf")) > p:
            first[g] = p
            g = groups[g]["p"] if g > 0 else -1
    members: dict[int, list[tuple[float, str, int]]] = {}
    for i in drawn:
        members.setdefault(of[i], []).append((pos[i], "n", i))
    for g in range(1, len(groups)):
        members.setdefault(groups[g]["p"], []).append((first.get(g, 0.0), "g", g))

    def live(item: tuple[float, str, int]) -> bool:
        return item[1] == "g" or item[2] not in ghosts

    def split(g: int, items: list[tuple[float, str, int]]) -> None:
        total = sum(map(live, items))  # the run's live members (its segments say "of N")
        todo = [(g, items, 0, 0)]  # a stack, not recursion; live members and members before
        while todo:
            g, items, before, label_from = todo.pop()
            if len(items) <= MAX_CHILDREN:
                for _pos, what, idx in items:
                    if what == "n":
                        of[idx] = g
                    else:
                        groups[idx]["p"] = g
                continue
            many = len(items) > SEGMENT * MAX_CHILDREN
            size = -(-len(items) // MAX_CHILDREN) if many else SEGMENT
            gid = groups[g]["id"]
            for k in range(0, len(items), size):
                chunk = items[k : k + size]
                n = sum(map(live, chunk))
                gone = len(chunk) - n
                lo, hi = before + 1, before + n
                s = len(groups)
                what = _members(chunk)
                if n:
                    span = f"{lo}–{hi}" if hi > lo else f"{lo}"
                    label = f"{what if hi > lo else what.rstrip('s')} {span} of {total:,}"
                    label += f", {gone:,} removed" if gone else ""
                else:  # ghosts alone, next to the live member `before`
                    at = f"after {before:,}" if before else "before 1"
                    label = f"{gone:,} removed, {at} of {total:,}"
                gid_k = f"{gid}#{label_from + k + 1}-{label_from + k + len(chunk)}"
                groups.append({"id": gid_k, "label": label, "p": g, "k": "segment"})
                todo.append((s, chunk, before, label_from + k))
                before += n

    for g, items in list(members.items()):
        if len(items) > MAX_CHILDREN:
            items.sort()
            split(g, items)
    # parents must come before children for the front end's bottom-up sums
    order = _topo_groups(groups)
    if order != list(range(len(groups))):
        new = {g: k for k, g in enumerate(order)}
        groups[:] = [dict(groups[g], p=new.get(groups[g]["p"], -1)) for g in order]
        for i in drawn:
            of[i] = new[of[i]]


def _members(items: list[tuple[float, str, int]]) -> str:
    """What a segment holds, for its label: `nodes`, `groups` or `nodes & groups`."""
    kinds = {what for _pos, what, _idx in items}
    return "nodes" if kinds == {"n"} else "groups" if kinds == {"g"} else "nodes & groups"


def _topo_groups(groups: list[dict]) -> list[int]:
    kids: dict[int, list[int]] = {}
    for g in range(1, len(groups)):
        kids.setdefault(groups[g]["p"], []).append(g)
    out, stack = [], [0]
    while stack:
        g = stack.pop()
        out.append(g)
        stack.extend(reversed(kids.get(g, [])))
    return out


def positions(
    entries: list[Entry], diff: Diff | None, ga: GraphModel, index: dict[str, int]
) -> list[float]:
    """Each entry's position in graph order; a ghost (a removed node of the baseline `ga`)
    just before the first node of the step its values flowed into (matched by `diff`)."""
    pos = [float(i) for i in range(len(entries))]
    if diff is None:
        return pos
    back = {aid: bid for bid, (aid, _how) in diff.matches.items()}
    out_edges: dict[str, list[str]] = {}
    for e in ga.edges:
        out_edges.setdefault(e.src, []).append(e.dst)
    for i, e in enumerate(entries):
        if e.status != "removed":
            continue
        aid = e.key[len("removed:") :]
        seen, frontier, found = {aid}, [aid], None
        while frontier and found is None:
            nxt = []
            for a in frontier:
                for t in out_edges.get(a, ()):
                    b = back.get(t)
                    if b is not None and b in index:
                        found = index[b]
                        break
                    if t not in seen:
                        seen.add(t)
                        nxt.append(t)
                if found is not None:
                    break
            frontier = nxt
        if found is not None:
            pos[i] = found - 0.5 + i * 1e-6
    return pos


def group_marks(
    groups: list[dict],
    of: list[int],
    findings: list[int],
    marks: dict[int, str],
    changes: list[int],
) -> None:
    """Add to each group what the overview and the zoomed-out blocks show of its findings
    and changes: `f` how many nodes inside it a finding names, `fm` the badge of the
    first of them that has one (e.g. `×8 copies of weight`), `fi` the first of them
    (the node a click on the group's finding mark goes to), `ci` its first changed node.
    `findings` and `changes` are node indices in graph order, `of` each node's group
    (parents come before children). O(groups + findings x depth + changes)."""
    for i in findings:
        g = of[i]
        while g >= 0:
            grp = groups[g]
            grp["f"] = grp.get("f", 0) + 1
            grp.setdefault("fi", i)
            if i in marks and "fm" not in grp:
                grp["fm"] = marks[i]
            g = grp["p"]
    for i in changes:
        g = of[i]
        while g >= 0 and "ci" not in groups[g]:  # an ancestor with one has an earlier one
            groups[g]["ci"] = i
            g = groups[g]["p"]


__all__ = [
    "MAX_CHILDREN",
    "SEGMENT",
    "group_marks",
    "group_shape",
    "group_tree",
    "positions",
    "segment",
    "unframed_modules",
]
