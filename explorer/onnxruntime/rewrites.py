"""What one step of an ONNX Runtime trace changed, as rewrites, and where the nodes it made
came from.

onnxscript's rules, the transformers optimizer's fusions and ORT's transformers do not say
which nodes they matched; the step's diff does. `changes` takes the nodes of the model
before and after (`explorer.onnxruntime.convert.entries`), finds those removed and those
added (a node is the same node when its op, name, inputs, outputs and attributes are; a
weight when its name and content are) and groups them by connectivity: two removed nodes
joined by a value the model after no longer has, two added nodes by a value the model before
did not have, a changed weight and the first changed node that reads it (a constant several
matches share would join them all), a removed and an added node that make a value of the
same name (a fusion keeps the name of the value it replaces), or an added node named after a
removed one (ORT names a fused node `<first node>/<transformer>`). Each group is one
rewrite (`step_rewrites`), named after the step's transformer, fusion or rule: what it
matched (the nodes removed, the one whose value the group hands on first) and what it
produced (the nodes added, likewise).

Two matches joined by a value made inside one of them are one group: the count of an onnxscript
rule's matches is in its step's options (`matches`).

ORT writes its optimized model without the exporter's node metadata, the transformers
optimizer makes nodes without it, and onnxscript's rewriter gives a node it makes the metadata
of one node it replaced. `inherit_provenance` gives it back: a node that has a namesake
in the model before shows its metadata; a node a rewrite made takes the metadata of the nodes
it replaced: the removed nodes of its group (when the group made several nodes: those that
made a value of the same name, else those that read one of its inputs, else all); the module
path is the one they share, and the node names them (`pkg.passlens.provenance_from`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from explorer.onnxruntime.convert import INHERITED, scopes_of

CHANGED_KINDS = ("op", "weight")
MAX_FROM = 8  # nodes a node's inherited provenance names


class _Sets:
    """Union-find over node ids (a dict of parents, paths halved)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def add(self, x: str) -> None:
        self.parent.setdefault(x, x)

    def find(self, x: str) -> str:
        p = self.parent
        while p[x] != x:
            p[x] = p[p[x]]
            x = p[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _diff(before: list, after: list) -> tuple[list, list]:
    """The entries of `before` not in `after` and those of `after` not in `before`
    (by key, as multisets), ops and weights only, each in its model's order."""
    return _only_in(before, after), _only_in(after, before)


def _only_in(entries: list, other: list) -> list:
    """The entries (ops and weights) of `entries` that `other` does not hold, by key as a
    multiset, in order."""
    left = Counter(e.key for e in other)
    only = []
    for e in entries:
        if left[e.key] > 0:
            left[e.key] -= 1
        elif e.kind in CHANGED_KINDS:
            only.append(e)
    return only


def _name(e: Any) -> str:
    return getattr(e.proto, "name", "") if e.kind == "op" else ""


def changes(before: list, after: list) -> list[tuple[list, list]]:
    """The groups of what changed from `before` to `after` (entries of two models), each
    `(removed, added)` in their models' order, the groups in the order they appear."""
    removed, added = _diff(before, after)
    if not removed and not added:
        return []
    sets = _Sets()
    gone = {e.nid: e for e in removed}
    new = {e.nid: e for e in added}
    for e in removed:
        sets.add("b" + e.nid)
    for e in added:
        sets.add("a" + e.nid)
    made_before = {v: e.nid for e in before for v in e.outputs if v}
    made_after = {v: e.nid for e in after for v in e.outputs if v}
    placed: dict[str, set[str]] = {"b": set(), "a": set()}
    for e in removed:
        for v in e.inputs:
            p = made_before.get(v)
            if p in gone and v not in made_after and gone[p].kind != "weight":
                sets.union("b" + e.nid, "b" + p)  # a value inside what was matched
        for v in e.outputs:
            p = made_after.get(v) if v else None
            if p in new:
                sets.union("b" + e.nid, "a" + p)
    for e in added:
        for v in e.inputs:
            p = made_after.get(v)
            if p in new and v not in made_before and new[p].kind != "weight":
                sets.union("a" + e.nid, "a" + p)  # a value inside what was produced
    for side, model, changed in (("b", removed, gone), ("a", added, new)):
        for e in model:
            for v in e.inputs:
                p = (made_before if side == "b" else made_after).get(v)
                if p in changed and changed[p].kind == "weight" and p not in placed[side]:
                    placed[side].add(p)
                    sets.union(side + e.nid, side + p)
    names = {_name(e): e.nid for e in removed if _name(e)}
    for e in added:
        n = _name(e)
        for candidate in (n, n.split("/", 1)[0]):
            if candidate and candidate in names:
                sets.union("a" + e.nid, "b" + names[candidate])
                break
    groups: dict[str, tuple[list, list]] = {}
    order: list[str] = []
    for e in removed:
        root = sets.find("b" + e.nid)
        if root not in groups:
            groups[root] = ([], [])
            order.append(root)
        groups[root][0].append(e)
    first_added: dict[str, int] = {}
    for k, e in enumerate(added):
        root = sets.find("a" + e.nid)
        if root not in groups:
            groups[root] = ([], [])
            order.append(root)
        groups[root][1].append(e)
        first_added.setdefault(root, k)
    # in the order of the model after (what the step made), then removals alone
    order.sort(key=lambda r: first_added.get(r, len(added)))
    return [groups[r] for r in order]


def _root_first(group: list) -> list:
    """`group` with its root first: the last node whose values no other node of the group
    reads (what the group hands on), ops before weights."""
    if len(group) < 2:
        return list(group)
    read = {v for e in group for v in e.inputs}
    sinks = [e for e in group if not any(v in read for v in e.outputs if v)]
    ops = [e for e in sinks if e.kind == "op"] or sinks or group
    root = ops[-1]
    return [root, *(e for e in group if e is not root)]


def step_rewrites(rule: str, groups: list[tuple[list, list]]) -> tuple:
    """The rewrites of a step whose changes are `groups` (`changes`), each named
    `rule`: matched, the removed nodes' ids; produced, the added nodes' ids, roots first."""
    from explorer.rewrites import make

    return tuple(
        make(rule, (e.nid for e in _root_first(r)), (e.nid for e in _root_first(a)))
        for r, a in groups
    )


def _common(paths: list[list[str]]) -> list[str]:
    """The scopes every one of `paths` starts with (the module levels, without the op)."""
    levels = [p[:-1] for p in paths]
    out: list[str] = []
    for parts in zip(*levels, strict=False):
        if any(x != parts[0] for x in parts):
            break
        out.append(parts[0])
    return out


def _same_props(a: Any, b: Any) -> bool:
    """Whether two lists of metadata entries (StringStringEntryProto) are the same."""
    return len(a) == len(b) and all(
        x.key == y.key and x.value == y.value for x, y in zip(a, b, strict=True)
    )


def _set_metadata(node: Any, meta: list[tuple[str, str]]) -> None:
    del node.metadata_props[:]
    for k, v in meta:
        node.metadata_props.add(key=k, value=v)


def inherit_provenance(before: list, after: list, groups: list[tuple[list, list]]) -> bool:
    """Give each op node of `after` (entries of a model this changes in place) that has a
    namesake in `before` its namesake's metadata (unless the step changed the node and gave
    it metadata of its own), and each node a rewrite made (no namesake) the metadata of the
    nodes it replaced, whatever metadata the rewriter gave it (onnxscript's gives a fused node
    its root's: a Conv with a BatchNorm folded in would be the BatchNorm's module alone). See
    the module docstring. Returns whether any node changed."""
    by_name: dict[str, Any] = {}
    for e in before:
        if e.kind == "op" and e.proto.name and e.proto.metadata_props:
            by_name.setdefault(e.proto.name, e.proto)
    made = {id(e) for g in groups for e in g[1]}
    changed = False
    has = []
    for e in after:
        if e.kind != "op":
            continue
        twin = by_name.get(e.proto.name) if e.proto.name else None
        if twin is not None and (id(e) not in made or scopes_of(_meta(e.proto)) is None):
            # a node the step kept shows what it showed before (a stage that hands on a model
            # of its own would give it the rewriter's metadata again)
            props = e.proto.metadata_props
            if not _same_props(props, twin.metadata_props):
                del props[:]
                props.extend(twin.metadata_props)
                changed = True
        elif twin is None and (id(e) in made or scopes_of(_meta(e.proto)) is None):
            has.append(e)
    group_of = {id(e): g for g in groups for e in g[1]}
    for e in has:
        node = e.proto
        group = group_of.get(id(e))
        if group is None:
            continue
        sources = [r.proto for r in group[0] if r.kind == "op" and scopes_of(_meta(r.proto))]
        if not sources:
            continue
        makes = {v for v in e.outputs if v}
        reads = {v for v in e.inputs if v}
        same = [s for s in sources if makes & set(s.output)]
        near = sources  # one node made of the group: all of it; several: each its part
        if sum(1 for a in group[1] if a.kind == "op") > 1:
            near = same or [s for s in sources if reads & set(s.input)] or sources
        read = {v for s in sources for v in s.input}
        sinks = [s for s in near if not (set(s.output) & read)]
        root = (same or sinks or near)[-1]
        meta = _meta(root)
        common = _common([scopes_of(_meta(s)) for s in near])
        root_scopes = scopes_of(meta) or [""]
        meta["pkg.torch.onnx.name_scopes"] = repr([*common, root_scopes[-1]])
        meta.pop("namespace", None)
        meta.pop("pkg.torch.onnx.class_hierarchy", None)
        names = [s.name or (s.output[0] if s.output else s.op_type) for s in near]
        more = f" and {len(names) - MAX_FROM} more" if len(names) > MAX_FROM else ""
        meta[INHERITED] = ", ".join(n[:120] for n in names[:MAX_FROM]) + more
        _set_metadata(node, list(meta.items()))
        changed = True
    return changed


def _meta(node: Any) -> dict[str, str]:
    return {p.key: p.value for p in node.metadata_props}


__all__ = ["changes", "inherit_provenance", "step_rewrites"]
