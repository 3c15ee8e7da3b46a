"""Rewriting a function binding by binding, keeping every node the rule does not change.

`rewrite_function(fn, rule)` visits the bindings in order. Each node first gets its operands
replaced by their rewritten versions (`replace` returns the very same node when none
changed), then `rule(node)` may return a replacement expression: a new subgraph whose
fresh nodes are bound automatically just before their first use. Fresh nodes without
provenance inherit the provenance of the node they replace, marked with the current pass, and
the replacing node inherits its name hint, so the explorer can match nodes across passes.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.ir.nodes import (
    Block,
    Constant,
    Expr,
    Function,
    If,
    Var,
    function_constants,
    is_leaf,
    outer_operands,
    remap_operands,
)
from compiler.ir.provenance import Provenance
from compiler.passes.infra import rules

Rule = Callable[[Expr], Expr | None]


class _Progress:
    """Which function and binding the current pass is working on (shown when a pass fails)."""

    function: str | None = None
    node: Expr | None = None


progress = _Progress()


def with_provenance(
    expr: Expr,
    prov: Provenance,
    known: set[int],
    name: str | None = None,
    fresh: list[Expr] | None = None,
) -> Expr:
    """Give every fresh node of `expr` (not in `known`) lacking provenance `prov`;
    the root gets `name` as its hint if it has none. Returns the rebuilt expression; the
    fresh nodes of the result are appended to `fresh` when given (the root excepted)."""
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

    root = out = visit(expr)
    if name and not out.name and not is_leaf(out) and id(out) not in known:
        out = out.replace(name=name)
    if fresh is not None:
        fresh.extend(e for e in memo.values() if e is not root and not is_leaf(e))
    return out


class Rewriter:
    """Applies a rule to every binding of a function (entering If branches)."""

    def __init__(self, rule: Rule, pass_name: str | None = None, function: str = "main"):
        self.rule = rule
        self.pass_name = pass_name
        self.function = function
        self.mapping: dict[int, Expr] = {}
        self.known: set[int] = set()  # ids of nodes that exist before the rule's output
        # when rule applications are recorded: the node each rewritten one stands for
        self.frame = rules.current_frame() if isinstance(rule, rules.Rules) else None
        self.origin: dict[int, Expr] = {}

    def _bind(self, expr: Expr, out: list[Expr], bound: set[int]) -> None:
        """Append the unbound non-leaf nodes `expr` needs (and `expr`), in order."""
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
            for op in reversed(outer_operands(node)):
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
            if self.frame is None:
                fired, replacement = None, self.rule(new)
            else:
                fired = self.rule.fire(new)
                replacement = fired[1] if fired is not None else None
            if replacement is not None and replacement is not new:
                prov = node.prov.with_pass(self.pass_name) if self.pass_name else node.prov
                known = self.known | bound
                fresh: list[Expr] | None = [] if fired is not None else None
                replacement = with_provenance(replacement, prov, known, node.name, fresh)
                if fired is not None:
                    self.note(fired[0], node, new, replacement, fresh)
                new = replacement
            if new is not node:
                self.mapping[id(node)] = new
                if self.frame is not None:
                    self.origin[id(new)] = node
            self._bind(new, out, bound)
            self.known.add(id(new))
        return tuple(out)

    def note(self, rule, node: Expr, seen: Expr, replacement: Expr, fresh: list[Expr]) -> None:
        """Record that `rule` rewrote `node` (seen by the rule as `seen`, its operands
        rewritten) into `replacement` with the `fresh` nodes."""
        also = rule.pattern.also(seen) if rule.pattern.also is not None else ()
        matched = (node, *(self.origin.get(id(e), e) for e in also))
        name = f"{self.rule.pass_name}/{rule.name}"
        rules.note(name, self.function, matched, (replacement, *fresh))

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
        return fn.replace(bindings=bindings, output=output)


def rewrite_function(
    fn: Function, rule: Rule, pass_name: str | None = None, function: str = "main"
) -> Function:
    """Apply `rule` to every binding of `fn`; returns `fn` itself when nothing changes."""
    return Rewriter(rule, pass_name, function).run(fn)


def rewrite_module(module, rule_for: Callable[[str, Function], Rule | None], pass_name=None):
    """Rewrite every function with the rule `rule_for(name, fn)` gives (None skips it)."""
    functions = {}
    for name, fn in module.functions.items():
        rule = rule_for(name, fn)
        functions[name] = fn if rule is None else rewrite_function(fn, rule, pass_name, name)
    return module.replace(functions=functions)
