"""dead-code-elimination: drop bindings nothing reads and private functions nobody calls.

An opaque op (an op of the source model without a converter) is dropped only when its
frontend found it pure (``pure=true``: its schema says it has no effect besides its result); an
impure one is kept, with what it reads, even when nothing reads it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Block, Expr, FuncCall, Function, If, Module
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import rewrite_function


def live_nodes(roots: list[Expr]) -> set[int]:
    """Ids of every node the roots depend on (through If branches too)."""
    live: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        if isinstance(node, If):
            stack += [node.cond, node.then_branch.result, node.else_branch.result]
        else:
            stack.extend(node.operands)
    return live


def eliminate_dead_bindings(fn: Function) -> Function:
    """``fn`` without the bindings its output does not need (same object if none)."""
    live = live_nodes([fn.output, *_effects(fn)])
    fn = fn.replace(bindings=tuple(b for b in fn.bindings if id(b) in live))

    def drop_dead_in_branches(node: Expr) -> Expr | None:
        if not isinstance(node, If):
            return None
        return node.replace(
            then_branch=_live_block(node.then_branch, live),
            else_branch=_live_block(node.else_branch, live),
        )

    # Rebuilding an If changes its identity: the rewriter also updates whoever reads it.
    return rewrite_function(fn, drop_dead_in_branches)


def _effects(fn: Function) -> list[Expr]:
    """The bindings kept for their effects: opaque ops not known to be pure."""
    return [
        n for n in fn.iter_nodes() if getattr(n, "op", None) == "opaque" and not n.attrs["pure"]
    ]


def _live_block(blk: Block, live: set[int]) -> Block:
    return blk.replace(bindings=tuple(b for b in blk.bindings if id(b) in live))


def called_functions(fn: Function) -> set[str]:
    """Names of the module functions ``fn`` calls."""
    return {n.func for n in fn.iter_nodes() if isinstance(n, FuncCall)}


@register_pass
@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Remove unused bindings, and private functions no public function reaches."""

    name: ClassVar[str] = "dead-code-elimination"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        functions = {name: eliminate_dead_bindings(fn) for name, fn in module.functions.items()}
        reachable = {n for n, f in functions.items() if not f.is_private}
        stack = list(reachable)
        while stack:
            for callee in called_functions(functions[stack.pop()]):
                if callee in functions and callee not in reachable:
                    reachable.add(callee)
                    stack.append(callee)
        if not reachable:  # a module of private functions only: keep it as is
            reachable = set(functions)
        return module.replace(functions={n: f for n, f in functions.items() if n in reachable})
