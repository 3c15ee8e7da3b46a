"""Rewriting a function binding by binding, keeping every node the rule does not change.

``rewrite_function(fn, rule)`` visits the bindings in order. Each node first gets its operands
replaced by their rewritten versions (``replace`` returns the very same node when none
changed), then ``rule(node)`` may return a replacement expression: a new subgraph whose
fresh nodes are bound automatically just before their first use. Fresh nodes without
provenance inherit the provenance of the node they replace, marked with the current pass, and
the replacing node inherits its name hint, so the explorer can match nodes across passes.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.ir.nodes import (
    Block,
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Tuple,
    TupleGetItem,
    Var,
    _outer_operands,
    function_constants,
    is_leaf,
)
from compiler.ir.provenance import Provenance
from compiler.passes import rewrite_records

Rule = Callable[[Expr], Expr | None]


class _Progress:
    """Which function and binding the current pass is working on (shown when a pass fails)."""

    function: str | None = None
    node: Expr | None = None


progress = _Progress()


def remap_operands(node: Expr, mapping: dict[int, Expr]) -> Expr:
    """``node`` with each operand replaced through ``mapping`` (same object if none changes)."""

    def m(e: Expr) -> Expr:
        return mapping.get(id(e), e)

    if isinstance(node, Call):
        return node.replace(args=tuple(m(a) for a in node.args))
    if isinstance(node, FuncCall):
        return node.replace(args=tuple(m(a) for a in node.args))
    if isinstance(node, Tuple):
        return node.replace(fields=tuple(m(f) for f in node.fields))
    if isinstance(node, TupleGetItem):
        return node.replace(tuple_value=m(node.tuple_value))
    if isinstance(node, If):
        return node.replace(cond=m(node.cond))
    return node


def with_provenance(expr: Expr, prov: Provenance, known: set[int], name: str | None = None) -> Expr:
    """Give every fresh node of ``expr`` (not in ``known``) lacking provenance ``prov``;
    the root gets ``name`` as its hint if it has none. Returns the rebuilt expression."""
    memo: dict[int, Expr] = {}

    def visit(e: Expr) -> Expr:
        if id(e) in known or isinstance(e, Var):
            return e
        if id(e) in memo:
            return memo[id(e)]
        out = e
        if not isinstance(e, Constant):
            out = remap_operands(e, {id(o): visit(o) for o in e.operands})
        if out.prov.is_empty and not prov.is_empty:
            out = out.replace(prov=prov)
        memo[id(e)] = out
        return out

    out = visit(expr)
    if name and not out.name and not is_leaf(out) and id(out) not in known:
        out = out.replace(name=name)
    return out


class Rewriter:
    """Applies a rule to every binding of a function (entering If branches)."""

    def __init__(self, rule: Rule, pass_name: str | None = None, function: str = "main"):
        self.rule = rule
        self.pass_name = pass_name
        self.function = function
        self.mapping: dict[int, Expr] = {}
        self.known: set[int] = set()  # ids of nodes that exist before the rule's output
        self.applied: list[tuple[Expr, Expr, set[int]]] = []  # (matched, root, known then)

    def _bind(self, expr: Expr, out: list[Expr], bound: set[int]) -> None:
        """Append the unbound non-leaf nodes ``expr`` needs (and ``expr``), in order."""
        stack: list[tuple[Expr, bool]] = [(expr, False)]
        while stack:
            node, expanded = stack.pop()
            if is_leaf(node) or (id(node) in bound and not expanded):
                continue
            if expanded:
                if id(node) not in bound:
                    bound.add(id(node))
                    out.append(node)
                continue
            stack.append((node, True))
            for op in reversed(_outer_operands(node)):
                if not is_leaf(op) and id(op) not in bound:
                    stack.append((op, False))

    def bindings(self, bindings: tuple[Expr, ...], visible: set[int]) -> tuple[Expr, ...]:
        out: list[Expr] = []
        bound = set(visible)
        for node in bindings:
            progress.node = node
            new = remap_operands(node, self.mapping)
            if isinstance(new, If):
                then_ok, else_ok = self.branches_to_rewrite(new)
                new = new.replace(
                    then_branch=self.block(new.then_branch, bound) if then_ok else new.then_branch,
                    else_branch=self.block(new.else_branch, bound) if else_ok else new.else_branch,
                )
            replacement = self.rule(new)
            if replacement is not None and replacement is not new:
                prov = node.prov.with_pass(self.pass_name) if self.pass_name else node.prov
                known = self.known | bound
                replacement = with_provenance(replacement, prov, known, node.name)
                new = replacement
                if rewrite_records.collecting():
                    self.applied.append((node, new, known))
            if new is not node:
                self.mapping[id(node)] = new
            self._bind(new, out, bound)
            self.known.add(id(new))
        return tuple(out)

    def branches_to_rewrite(self, node: If) -> tuple[bool, bool]:
        """Which branches of an If to rewrite (override to skip a branch that will be dropped,
        e.g. when the condition became a constant)."""
        return True, True

    def block(self, blk: Block, outer: set[int]) -> Block:
        bindings = self.bindings(blk.bindings, outer)
        result = self.mapping.get(id(blk.result), blk.result)
        return blk.replace(bindings=bindings, result=result)

    def run(self, fn: Function) -> Function:
        progress.function = self.function
        self.known = {id(p) for p in fn.params}
        self.known.update(id(c) for c in function_constants(fn))  # existing weights stay as is
        for node in fn.iter_nodes():
            self.known.add(id(node))
        bindings = self.bindings(fn.bindings, set())
        output = self.mapping.get(id(fn.output), fn.output)
        if output is not fn.output and not is_leaf(output):
            extra: list[Expr] = []
            self._bind(output, extra, {id(b) for b in bindings} | {id(b) for b in fn.params})
            bindings = bindings + tuple(extra)
        progress.node = None
        out = fn.replace(bindings=bindings, output=output)
        if self.applied:
            self._record(fn, out)
        return out

    def _record(self, before: Function, after: Function) -> None:
        """A RewriteRecord per replacement (the stand-in naming: ``pass/op``)."""
        old, new = rewrite_records.binding_names(before), rewrite_records.binding_names(after)
        for node, root, known in self.applied:
            fresh: list[Expr] = []
            stack, seen = [root], set()
            while stack:
                e = stack.pop()
                if id(e) in seen or (id(e) in known and e is not root):
                    continue
                seen.add(id(e))
                fresh.append(e)
                if not isinstance(e, Constant):
                    stack.extend(reversed(e.operands))
            produced = [rewrite_records.name_of(e, new) for e in fresh]
            matched = rewrite_records.name_of(node, old)
            what = node.op if isinstance(node, Call) else type(node).__name__.lower()
            rewrite_records.add(
                rewrite_records.RewriteRecord(
                    f"{self.pass_name or 'rewrite'}/{what}",
                    (matched,) if matched else (),
                    tuple(n for n in produced if n),
                    self.function,
                )
            )
        self.applied = []


def rewrite_function(
    fn: Function, rule: Rule, pass_name: str | None = None, function: str = "main"
) -> Function:
    """Apply ``rule`` to every binding of ``fn``; returns ``fn`` itself when nothing changes."""
    return Rewriter(rule, pass_name, function).run(fn)


def rewrite_module(module, rule_for: Callable[[str, Function], Rule | None], pass_name=None):
    """Rewrite every function with the rule ``rule_for(name, fn)`` gives (None skips it)."""
    functions = {}
    for name, fn in module.functions.items():
        rule = rule_for(name, fn)
        functions[name] = fn if rule is None else rewrite_function(fn, rule, pass_name, name)
    return module.replace(functions=functions)
