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

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from compiler.ir.names import fresh_name
from compiler.ir.nodes import (
    Constant,
    Expr,
    Function,
    If,
    Var,
    children,
    collect_bindings,
    is_leaf,
    substitute,
)
from compiler.ir.provenance import Provenance


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
    bindings = substitute(collect_bindings([output], set(captured)), mapping)
    out = mapping.get(id(output), output)
    return Function([*params, *extra], bindings, out, attrs), list(captured.values())


class LoopError(ValueError):
    """A loop body that cannot be a Loop node (the message says why)."""


def build_loop(
    carried: Sequence[Expr],
    build: Callable,
    add_function: Callable[[Function], str],
    max_trips: Expr,
    cond: Expr | None = None,
    length: Any = None,
    prov: Provenance | None = None,
) -> list[Expr]:
    """A Loop node over a body made by ``build(i, cond, states) -> (cond', states',
    scanned)``: expressions over the body's parameters (whatever else they read is captured),
    started from ``carried``. ``add_function(body)`` adds the body to the module and returns
    its name. Returns the final states, then the scanned outputs stacked along a new first
    axis of length ``length`` (None: ``?``). A carried value whose shape changes between
    iterations gets ``?`` for the dims that do (the body is built again, at most twice)."""
    from compiler.ir.nodes import Loop, Tuple, TupleGetItem, call
    from compiler.ir.symbolic import ANY
    from compiler.ir.types import DType, TensorType, TupleType, join_types

    for v in carried:
        if not isinstance(v.ty, TensorType):
            raise LoopError(f"a loop carrying a value that is not a tensor ({v.ty})")
    types = [v.ty for v in carried]
    for _attempt in range(3):
        i = Var("i", TensorType((), DType.int64))
        c = Var("cond", TensorType((), DType.bool))
        states = [Var(f"state{j}", t) for j, t in enumerate(types)]
        cond_out, new, scans = build(i, c, states)
        if len(new) != len(types):
            raise LoopError(f"the body gives {len(new)} carried values, expected {len(types)}")
        try:
            joined = [join_types(t, n.ty) for t, n in zip(types, new, strict=True)]
        except TypeError as e:
            raise LoopError(f"a loop-carried value changes type: {e}") from None
        if joined == types:
            break
        types = joined
    else:
        raise LoopError("a loop-carried value whose shape never settles")

    def scalar(e: Expr, dtype, what: str) -> Expr:
        t = e.ty
        if not (isinstance(t, TensorType) and t.shape is not None and t.numel == 1):
            raise LoopError(f"the loop's {what} must hold one value, got {t}")
        if t.dtype is not dtype:
            e = call("cast", e, dtype=dtype, prov=prov)
        return e if e.ty.shape == () else call("reshape", e, shape=[], prov=prov)

    cond_out = scalar(cond_out, DType.bool, "condition")
    for s in scans:
        if not isinstance(s.ty, TensorType) or s.ty.shape is None:
            raise LoopError(f"a scanned output of unknown rank or not a tensor ({s.ty})")
    body, captured = close_over([i, c, *states], Tuple([cond_out, *new, *scans]))
    name = add_function(body)
    lead = ANY if length is None else length
    ty = TupleType([*types, *[s.ty.with_shape((lead, *s.ty.shape)) for s in scans]])
    trips = scalar(max_trips, DType.int64, "trip count")
    if cond is None:
        from compiler.ir.nodes import Constant

        first = Constant(np.asarray(True))
    else:
        first = scalar(cond, DType.bool, "condition")
    node = Loop(name, [trips, first, *carried, *captured], ty, len(carried), prov=prov)
    return [TupleGetItem(node, j, prov=prov) for j in range(len(ty.fields))]


__all__ = ["LoopError", "build_loop", "close_over"]
