"""Closure conversion: the part of an expression that depends on some Vars, as a function of
those Vars and of the outer values it reads (a loop body, see ``Loop``).

Building a loop body with ordinary constructors lets it read any value of the enclosing
function (a weight, the input sequence, a value computed before the loop). A body function
must not: ``close_over`` splits the expression into what depends on the body's parameters
(it stays in the body) and the largest outer values it reads (they become extra parameters,
*captured*, passed unchanged to every iteration — loop-invariant code is hoisted for free).
Constants stay in the body; they are leaves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compiler.ir.names import fresh_name
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
    children,
    collect_bindings,
    is_leaf,
)


def _dependent(roots: Sequence[Expr], params: set[int]) -> dict[int, bool]:
    """For every node reachable from ``roots``: whether it reads one of ``params``."""
    dep: dict[int, bool] = {}
    stack: list[tuple[Expr, bool]] = [(r, False) for r in roots]
    while stack:
        node, expanded = stack.pop()
        if id(node) in dep:
            continue
        if is_leaf(node):
            dep[id(node)] = id(node) in params
            continue
        kids = children(node)
        if expanded:
            dep[id(node)] = any(dep[id(c)] for c in kids)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in kids if id(c) not in dep)
    return dep


def close_over(
    params: Sequence[Var], output: Expr, attrs: Mapping[str, Any] | None = None
) -> tuple[Function, list[Expr]]:
    """``(body, captured)``: ``body`` takes ``params`` then one parameter per captured outer
    value and computes ``output``; ``captured`` are those outer values, in parameter order."""
    pids = {id(p) for p in params}
    dep = _dependent([output], pids)
    inside: set[int] = set()
    captured: dict[int, Expr] = {}

    def classify(e: Expr, forced: bool = False) -> None:
        if isinstance(e, Constant) or id(e) in pids:
            return
        if isinstance(e, Var) or not (dep[id(e)] or forced):
            captured.setdefault(id(e), e)
        elif id(e) not in inside:
            inside.add(id(e))
            stack.append(e)

    stack: list[Expr] = []
    classify(output)
    while stack:
        node = stack.pop()
        if isinstance(node, If):
            # a branch's bindings stay in the branch (computed only when it is taken)
            for blk in (node.then_branch, node.else_branch):
                for b in blk.bindings:
                    dep.setdefault(id(b), True)
                    classify(b, forced=True)
                classify(blk.result, forced=id(blk.result) in {id(b) for b in blk.bindings})
            classify(node.cond)
        else:
            for c in node.operands:
                classify(c)
    used = {p.name for p in params}
    mapping: dict[int, Expr] = {}
    extra = []
    for e in captured.values():
        v = Var(fresh_name(e.name or "captured", used), e.ty, e.prov)
        mapping[id(e)] = v
        extra.append(v)
    bindings = _rebuild(collect_bindings([output], set(captured)), mapping)
    out = mapping.get(id(output), output)
    return Function([*params, *extra], bindings, out, attrs), list(captured.values())


def _rebuild(bindings: Sequence[Expr], mapping: dict[int, Expr]) -> list[Expr]:
    out = []
    for b in bindings:
        new = _remapped(b, mapping)
        if new is not b:
            mapping[id(b)] = new
        out.append(new)
    return out


def _remapped(node: Expr, mapping: dict[int, Expr]) -> Expr:
    def m(e: Expr) -> Expr:
        return mapping.get(id(e), e)

    if isinstance(node, (Call, FuncCall)):
        return node.replace(args=tuple(m(a) for a in node.args))
    if isinstance(node, Tuple):
        return node.replace(fields=tuple(m(f) for f in node.fields))
    if isinstance(node, TupleGetItem):
        return node.replace(tuple_value=m(node.tuple_value))
    if isinstance(node, If):
        blocks = []
        for blk in (node.then_branch, node.else_branch):
            bindings = _rebuild(blk.bindings, mapping)
            blocks.append(Block(bindings, m(blk.result)))
        return node.replace(cond=m(node.cond), then_branch=blocks[0], else_branch=blocks[1])
    return node


__all__ = ["close_over"]
