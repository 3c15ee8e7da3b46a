"""Where a reduction starts: the smallest cuts of @main around the nodes the finding names,
widened step by step.

A finding names nodes of its step's module (the node a pass failed on, the node whose shape is
wrong, the first node that differs, the weights that grew: for those, the nodes reading them).
Each is found again in the imported module: the very same node when the passes before kept it,
else the nodes with the same provenance (the pass that made it aside), else with the same name
and op. Such a group of nodes, with the nodes between them, is the first region; a cut keeps
the region only: its last nodes become @main's outputs, what it reads from outside becomes new
inputs (or constants, see `module.py`). Regions then grow by 1, 2, 4, ... hops through
operands and users. Groups reading the fewest weight bytes go first (the smallest test)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from compiler.ir import Constant, Expr, Function, If, Module, Tuple, Var
from explorer.passlens.reduce.module import Cut, Cutter, reads

if TYPE_CHECKING:
    from explorer.check import Finding

LEVELS = (0, 1, 2, 4, 8, 16, 32)  # hops a region grows by, in turn
GROUPS_TRIED = 3  # groups of named nodes tried at each level


class _Graph:
    """The top-level bindings of @main: what each reads and who reads it (through branches)."""

    def __init__(self, main: Function):
        out = main.output
        skip = id(out) if isinstance(out, Tuple) else None  # outputs are its fields
        self.bindings = [b for b in main.bindings if id(b) != skip]
        self.order = {id(b): i for i, b in enumerate(self.bindings)}
        self.producers: dict[int, set[int]] = {id(b): reads(b, self.order) for b in self.bindings}
        self.users: dict[int, set[int]] = {i: set() for i in self.order}
        for b, ps in self.producers.items():
            for p in ps:
                self.users[p].add(b)

    def between(self, group: set[int]) -> set[int]:
        """`group` and every node on a path from one of its nodes to another."""
        return group | (_closure(group, self.users) & _closure(group, self.producers))

    def widen(self, region: set[int], hops: int) -> set[int]:
        region = set(region)
        for _ in range(hops):
            grown = set(region)
            for i in region:
                grown |= self.producers[i] | self.users[i]
            if grown == region:
                break
            region = grown
        return region

    def cut(self, region: set[int], base: Cut) -> Cut:
        """Keep `region` only: its nodes no other node of it reads are the outputs, the nodes
        it reads from outside are the frontier."""
        outputs = tuple(
            b for b in self.bindings if id(b) in region and not self.users[id(b)] & region
        )
        frontier = {("main", p) for i in region for p in self.producers[i] if p not in region}
        return Cut(outputs, frozenset(frontier), base.dropped, base.generated)


def _closure(start: set[int], edges: dict[int, set[int]]) -> set[int]:
    seen, stack = set(start), list(start)
    while stack:
        for j in edges[stack.pop()]:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return seen


def named_nodes(finding: Finding) -> list[Expr]:
    """The nodes a finding names, and for a named weight (a leaf), the nodes reading it."""
    nodes = [n for n in finding.nodes if isinstance(n, Expr)]
    leaves = {id(n) for n in nodes if isinstance(n, (Var, Constant))}
    module = finding.step.shown_module
    if leaves and module is not None:
        for fn in module.functions.values():
            nodes += [n for n in fn.iter_nodes() if any(id(o) in leaves for o in n.operands)]
    return nodes


def groups(finding: Finding, module: Module) -> list[set[int]]:
    """Groups of top-level bindings of @main in `module` standing for the named nodes, the
    ones reading the fewest weight bytes first."""
    main = module["main"]
    top_of: dict[int, Expr] = {}
    by_prov: dict = {}
    by_name: dict = {}
    for b in main.bindings:
        for n in (b, *_inside(b)):
            top_of[id(n)] = b
            if not n.prov.is_empty:
                by_prov.setdefault(n.prov.with_pass(None), []).append(b)
            if n.name:
                by_name.setdefault((n.name, getattr(n, "op", None)), []).append(b)
    found: list[set[int]] = []
    for n in named_nodes(finding):
        if id(n) in top_of:
            match = [top_of[id(n)]]
        elif not n.prov.is_empty and n.prov.with_pass(None) in by_prov:
            match = by_prov[n.prov.with_pass(None)]
        else:
            match = by_name.get((n.name, getattr(n, "op", None)), []) if n.name else []
        group = {id(b) for b in match}
        if group and group not in found:
            found.append(group)
    order = {id(b): i for i, b in enumerate(main.bindings)}
    nodes = {id(b): b for b in main.bindings}

    def cost(group: set[int]) -> tuple[int, int]:
        weights = {
            id(o): o.nbytes for i in group for o in nodes[i].operands if isinstance(o, Constant)
        }
        return sum(weights.values()), min(order[i] for i in group)

    return sorted(found, key=cost)


def _inside(node: Expr) -> list[Expr]:
    """The nodes bound inside an If's branches (nested ones too)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, If):
            for blk in (n.then_branch, n.else_branch):
                out.extend(blk.bindings)
                stack.extend(blk.bindings)
    return out


def candidates(finding: Finding, cutter: Cutter) -> Iterator[Cut]:
    """Cuts around the named nodes, smallest first (none when no named node is in @main)."""
    found = groups(finding, cutter.module)
    if not found:
        return
    graph = _Graph(cutter.module["main"])
    found = [g & set(graph.order) for g in found]
    found = [g for g in found if g]
    base, seen = cutter.start(), set()
    for hops in LEVELS:
        whole = True
        for group in found[:GROUPS_TRIED]:
            region = graph.widen(graph.between(group), hops)
            whole = whole and len(region) == len(graph.order)
            cut = graph.cut(region, base)
            if cut not in seen:
                seen.add(cut)
                yield cut
        if whole:
            return
