"""fuse-ops: outline groups of ops (an anchor such as conv2d or matmul with the elementwise
ops after it, injective chains, elementwise producers of a reduction) as private primitive
functions, called where the group was (TVM's FuseOps on our DAG, same rules).

A node joins the group of its immediate post-dominator when every node on the way has a
pattern the rule accepts, so a group is convex (no path leaves it and comes back) and only
its last node is read outside it. By pattern (compiler/ir/op_registry.py): an anchor takes the
elementwise / broadcast ops after it (phase 0); an elementwise / broadcast op joins an
injective, reduce or anchor group after it through at most injective ops; an injective op
joins what follows through injective ops (phase 1); a reduction ends its group; opaque ops,
tuples, calls, If and a result with a '?' dim never fuse; a group never holds two anchors.
Groups of one op stay inline; constants stay inside the fused function; ``primitive``
functions are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from compiler.ir.nodes import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    Module,
    Var,
    external_reads,
    substitute,
)
from compiler.ir.op_registry import ANCHOR, BROADCAST, ELEMWISE, INJECTIVE, OPAQUE, REDUCE, get_op
from compiler.ir.symbolic import ANY, SymExpr
from compiler.ir.types import TensorType, TupleType
from compiler.ir.verify import symbols_of
from compiler.passes.infra import rules
from compiler.passes.infra.manager import Pass, PassContext, PassError, register_pass
from compiler.passes.infra.rules import Rule, Rules, kind, rule_table

# TVM's OpPatternKind order: a pattern "at most injective" is one with a rank <= INJ.
EW, BC, INJ, RED, ANC, OPQ = 0, 1, 2, 3, 4, 8
_RANK = {ELEMWISE: EW, BROADCAST: BC, INJECTIVE: INJ, REDUCE: RED, ANCHOR: ANC, OPAQUE: OPQ}


def node_pattern(node: Expr) -> int:
    """The fusion rank of a binding: its op's pattern; opaque for non-calls, tuple results and
    a result with a '?' dim (a size only the run gives: no kernel loops over it, and alone
    it is named by legalize-ops' match_shape, so what reads it compiles)."""
    if not isinstance(node, Call) or not isinstance(node.ty, TensorType):
        return OPQ
    if node.ty.shape is not None and ANY in node.ty.shape:
        return OPQ
    return _RANK[get_op(node.op).pattern]


class _Fuser:
    """The graph of top-level bindings, its post-dominator tree, and a union-find of groups
    whose ``pattern`` and ``anchor`` are kept per group object and updated on the root, as in
    TVM. ``outputs[i]`` lists (consumer, edge pattern); ``extern[i]``: the output reads it."""

    def __init__(self, fn: Function):
        self.nodes = list(fn.bindings)
        index = {id(b): i for i, b in enumerate(self.nodes)}
        n = len(self.nodes)
        self.pattern = [node_pattern(b) for b in self.nodes]
        self.outputs: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.extern = [id(b) == id(fn.output) for b in self.nodes]
        for i, node in enumerate(self.nodes):
            for a in external_reads(node):
                j = index.get(id(a))
                if j is None or any(c == i for c, _ in self.outputs[j]):
                    continue
                edge = self.pattern[i]
                if edge == BC and isinstance(a.ty, TensorType) and a.ty.shape == node.ty.shape:
                    edge = EW  # a broadcast op reading an input of its own shape
                self.outputs[j].append((i, edge))
        self.parent: list[int | None] = [None] * n  # None: the function's output
        self.depth, self.dom_pattern = [1] * n, [OPQ] * n
        for i in reversed(range(n)):
            if self.extern[i] or not self.outputs[i]:
                continue
            lca, pattern = self.outputs[i][0][0], EW
            for c, edge in self.outputs[i]:
                lca, pattern = self._lca(lca, c, max(pattern, edge))
            self.parent[i], self.dom_pattern[i] = lca, pattern
            self.depth[i] = 1 if lca is None else self.depth[lca] + 1
        self.up = list(range(n))
        self.anchor = [p == ANC for p in self.pattern]
        self.merged: list[tuple[str, list[int]]] = []  # (merge rule, nodes merged), in order
        self.group_pattern = list(self.pattern)

    def _lca(self, a: int | None, b: int | None, pattern: int) -> tuple[int | None, int]:
        while a != b:
            if a is None or b is None:
                return None, pattern
            da, db = self.depth[a], self.depth[b]
            if da >= db:
                pattern, a = max(pattern, self.dom_pattern[a]), self.parent[a]
            if db >= da:
                pattern, b = max(pattern, self.dom_pattern[b]), self.parent[b]
        return a, pattern

    def find(self, i: int) -> int:
        while self.up[i] != i:
            self.up[i] = i = self.up[self.up[i]]
        return i

    def _path(self, src: int, sink: int) -> list[int]:
        """Every node on a path from ``src`` to ``sink``, both included."""
        out, stack, seen = [src], [src], {src}
        while stack:
            v = stack.pop()
            for c, _ in self.outputs[v] if v != sink else ():
                if c not in seen:
                    seen.add(c)
                    out.append(c)
                    stack.append(c)
        return out

    def fuse(self, src: int, ok) -> list[int] | None:
        """Merge the groups on the paths ``src`` -> its post-dominator into the latter's group
        when the group of every node after ``src`` passes ``ok(pattern, is_sink)``; the
        nodes of those paths (``src`` first), or None when they do not merge."""
        sink = self.parent[src]
        path = self._path(src, sink)
        if not all(ok(self.group_pattern[self.find(v)], v == sink) for v in path[1:]):
            return None
        roots = {self.find(v) for v in path}
        if sum(self.anchor[r] for r in roots) > 1:
            return None  # two anchors never share a group
        target = self.find(sink)
        for r in roots - {target}:
            self.up[r] = target
            if self.anchor[r]:
                self.anchor[target] = True
                self.group_pattern[target] = max(self.group_pattern[target], self.group_pattern[r])
        return path

    def run(self, phase: int) -> None:
        """One of TVM's phases: 0 fuses anchors first, 1 then the injective ops; each node
        joins the group after it by the first merge rule (MERGES) that takes it."""
        table = Rules("fuse-ops", MERGES, self)
        for i in range(len(self.nodes)):
            own, sink = self.group_pattern[i], self.parent[i]
            if own == OPQ or sink is None or self.find(i) == self.find(sink):
                continue
            fired = table.fire(Merge(i, own, self.dom_pattern[i], phase))
            if fired is not None:
                self.merged.append((fired[0].name, fired[1]))

    def groups(self) -> list[list[int]]:
        """Groups of two or more nodes, each in binding order, ordered by their last node."""
        by_root: dict[int, list[int]] = {}
        for i in range(len(self.nodes)):
            by_root.setdefault(self.find(i), []).append(i)
        return sorted((m for m in by_root.values() if len(m) > 1), key=lambda m: m[-1])


class Merge(NamedTuple):
    """A candidate merge: node ``node`` (of fusion rank ``own``) joining the group of its
    immediate post-dominator, reached through ops of rank at most ``dom``, in ``phase``."""

    node: int
    own: int
    dom: int
    phase: int


def _merge(ok):
    return lambda m, fuser: fuser.fuse(m.node, ok)


MERGES = rule_table(
    "fuse-ops",
    Rule(
        "anchor-with-epilogue",
        kind(Merge, lambda m, f: m.own == ANC and m.phase == 0 and m.dom == EW),
        _merge(lambda k, is_sink: k <= BC),
        "conv2d -> add -> relu: an anchor op takes the elementwise ops after it",
    ),
    Rule(
        "elemwise-into-consumer",
        kind(Merge, lambda m, f: m.own <= BC and (m.dom <= INJ or m.dom == RED)),
        _merge(lambda k, is_sink: k <= (ANC if is_sink else INJ)),
        "add -> sum / reshape / conv2d: an elementwise op joins the group it feeds",
    ),
    Rule(
        "injective-chain",
        kind(Merge, lambda m, f: m.own == INJ and m.phase == 1),
        _merge(lambda k, is_sink: k <= INJ),
        "reshape -> transpose -> ...: injective ops make one group",
    ),
)


def _unique(base: str, used: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``, ... if taken; the name returned is then taken."""
    name, k = base, 0
    while name in used:
        k += 1
        name = f"{base}_{k}"
    used.add(name)
    return name


def bound_symbols(types: list) -> set[str]:
    """The symbolic dims that arguments of ``types`` give a callee: a dim that is a symbol,
    then (repeatedly) the one unknown symbol of a dim linear in it, as the interpreter and the
    kernels solve them (``2*n + 1``; ``batch*seq`` once ``batch`` is known). A symbol seen only
    in ``batch*seq`` is not bound: the size does not say how it splits."""
    dims = {d for t in types for d in _dims(t) if isinstance(d, SymExpr)}
    bound: set[str] = set()
    progress = True
    while progress:
        progress = False
        for d in dims:
            unbound = set(d.free_symbols) - bound
            if len(unbound) == 1 and _linear_in(d, next(iter(unbound)), bound):
                bound |= unbound
                progress = True
    return bound


def _dims(ty) -> list:
    if isinstance(ty, TupleType):
        return [d for f in ty.fields for d in _dims(f)]
    if isinstance(ty, TensorType) and ty.shape is not None:
        return list(ty.shape)
    return []


def _linear_in(d: SymExpr, name: str, bound: set[str]) -> bool:
    """Whether ``d`` is linear in ``name`` (the others at a sample value), as solve_dim needs."""
    env = dict.fromkeys(bound, 3)
    try:
        f0, f1, f2 = (d.evaluate({**env, name: v}) for v in (0, 1, 2))
    except (ArithmeticError, KeyError):
        return False
    return f1 != f0 and f2 - f1 == f1 - f0


def _witnesses(group: list[Expr], inputs: list[Expr], fn: Function) -> list[Expr]:
    """Values of ``fn`` to pass only for their shape: the group uses a symbolic dim (in a type
    or an attribute, e.g. ``arange(stop=n)``) that none of its inputs' types binds, so the
    callee could not know it. For each such symbol, the first parameter whose type holds it
    (TVM passes a shape argument instead; the IR has tensors only)."""
    used = set().union(*(symbols_of(n.ty) | symbols_of(tuple(n.attrs.values())) for n in group))
    types = [a.ty for a in inputs]
    # ``missing``: no input's type names it; ``unsolved``: no input's type gives its value
    # (``n`` of ``n // 2 + 1`` is left to the kernels, which find it from their buffers)
    missing = used - set().union(*(symbols_of(t) for t in types))
    unsolved = used - bound_symbols(types)
    out: list[Expr] = []
    for p in fn.params:
        if any(p is i for i in inputs) or not unsolved & symbols_of(p.ty):
            continue
        now = unsolved - bound_symbols([*types, p.ty])
        if now != unsolved or missing & symbols_of(p.ty):
            out.append(p)
            types.append(p.ty)
            unsolved, missing = now, missing - symbols_of(p.ty)
    if missing:  # no parameter binds it: the function itself cannot be run
        raise PassError(
            f"fuse-ops: the group uses symbolic dims {sorted(missing)} that no parameter of "
            "the function binds",
            group[-1],
        )
    return out


def _outline(fn: Function, nodes: list[Expr], members: list[int], name: str, pass_name: str):
    """The private function computing ``members`` (a convex group whose last node is its only
    output) and the outside values it takes (constants stay inside), in order of first use,
    then any parameter of ``fn`` passed for the symbolic dims its shape binds."""
    inside = {id(nodes[i]) for i in members}
    inputs: dict[int, Expr] = {}
    for i in members:
        for a in nodes[i].operands:
            if id(a) not in inside and not isinstance(a, Constant):
                inputs.setdefault(id(a), a)
    for w in _witnesses([nodes[i] for i in members], list(inputs.values()), fn):
        inputs[id(w)] = w
    mapping: dict[int, Expr] = {}
    names: set[str] = set()
    for k, a in enumerate(inputs.values()):
        mapping[id(a)] = Var(_unique(a.name or f"p{k}", names), a.ty, prov=a.prov)
    body = list(substitute([nodes[i] for i in members], mapping))
    attrs = {"primitive": True, "private": True}
    prov = nodes[members[-1]].prov.with_pass(pass_name)
    params = [mapping[id(a)] for a in inputs.values()]
    return Function(params, body, body[-1], attrs, prov=prov), list(inputs.values())


def fuse_function(
    fn: Function, used_names: set[str], pass_name: str, fname: str = "main"
) -> tuple[Function, dict]:
    """``fn`` (named ``fname``) with each group replaced by a call, and the new functions by
    name."""
    fuser = _Fuser(fn)
    fuser.run(0)
    fuser.run(1)
    nodes, calls, new_functions = fuser.nodes, {}, {}
    for members in fuser.groups():
        for i in members[:-1]:  # cannot happen with post-dominator groups: never emit it
            if fuser.extern[i] or any(c not in members for c, _ in fuser.outputs[i]):
                raise PassError("fuse-ops made a group read outside before its end", nodes[i])
        name = _unique(("fused_" + "_".join(nodes[i].op for i in members))[:80], used_names)
        callee, inputs = _outline(fn, nodes, members, name, pass_name)
        new_functions[name] = callee
        calls[members[-1]] = (name, callee.ret_type, inputs, set(members))
    if not new_functions:
        return fn, {}
    skipped = {i for _, _, _, m in calls.values() for i in m} - set(calls)
    mapping: dict[int, Expr] = {}
    bindings = []
    for i, node in enumerate(nodes):
        if i in calls:
            name, ty, inputs, _ = calls[i]
            args = [mapping.get(id(a), a) for a in inputs]
            prov = node.prov.with_pass(pass_name)
            mapping[id(node)] = FuncCall(name, args, ty, prov=prov, name=node.name)
            bindings.append(mapping[id(node)])
        elif i not in skipped:
            bindings.extend(substitute((node,), mapping))
    output = mapping.get(id(fn.output), fn.output)
    if rules.recording():
        last = {fuser.find(m[-1]): m[-1] for m in fuser.groups()}
        for rule, path in fuser.merged:  # each merge made the call of the group it joined
            call = mapping[id(nodes[last[fuser.find(path[0])]])]
            rules.note(f"{pass_name}/{rule}", fname, [nodes[i] for i in path], [call])
    return fn.replace(bindings=tuple(bindings), output=output), new_functions


@register_pass
@dataclass(frozen=True)
class FuseOps(Pass):
    """Outline groups of fusable ops (anchor + elementwise epilogue, injective chains,
    elementwise producers of a reduction) into private primitive functions."""

    name: ClassVar[str] = "fuse-ops"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        used, functions, added = set(module.functions), dict(module.functions), {}
        for fname, fn in module.functions.items():
            if not fn.attrs.get("primitive", False):
                functions[fname], new = fuse_function(fn, used, self.name, fname)
                added.update(new)
        return module.replace(functions={**functions, **added})
