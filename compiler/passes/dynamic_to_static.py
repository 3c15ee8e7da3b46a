"""dynamic-to-static: fold the shape computations of statically shaped values, so ops that
take a shape as a tensor get the attribute form and results get static types (TVM's
DynamicToStatic).

One walk over the bindings, in SSA order, so every rule sees operands already folded:

- ``shape_of(x)`` of a static-shaped ``x`` becomes a constant;
- a call on constants whose result is a small integer or bool tensor (a shape computation:
  ``take``, ``equal``, ``concat`` of shape pieces ...) becomes its value, computed with the
  numpy reference; weights are left alone, folding them is fold-constant's job;
- ``reshape`` / ``pad`` / ``squeeze`` ... whose shape, pads or axes input is now a constant
  become the attribute form, with an inferred (static) result type;
- an ``If`` whose condition is now a constant becomes its taken branch: the branch's bindings
  become bindings of the enclosing block;
- every other call and ``If`` gets its type re-inferred, so the types downstream become
  static too (an ``If`` of unknown rank whose branches now agree gets their type).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from compiler.ir.nodes import Block, Call, Constant, Expr, If, Module
from compiler.ir.types import TensorType, join_types
from compiler.passes.fold_constant import fold_call
from compiler.passes.infra.attribute_form import attribute_form
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import Rewriter
from compiler.passes.infra.rules import Rule, Rules, kind, op, rule_table

# A shape computation yields a small tensor; bigger integer tensors are data, not shapes.
MAX_SHAPE_ELEMENTS = 1024


def _small_integer_result(node: Call) -> bool:
    ty = node.ty
    if not isinstance(ty, TensorType) or not (ty.dtype.is_int or ty.dtype.name == "bool"):
        return False
    if ty.is_static and ty.numel > MAX_SHAPE_ELEMENTS:
        return False
    return all(isinstance(a, Constant) and a.data.size <= MAX_SHAPE_ELEMENTS for a in node.args)


def fold_shape_computation(node: Call) -> Constant | None:
    """The value of a small integer/bool call on constants (an unnamed constant), or None."""
    if not _small_integer_result(node):
        return None
    value = fold_call(node, max_bytes=MAX_SHAPE_ELEMENTS * 8)  # a shape, not data
    if value is None or value.size > MAX_SHAPE_ELEMENTS:
        return None
    return Constant(value)


def taken_branch(node: If) -> Block | None:
    """The branch an If takes when its condition is a constant, else None."""
    if not isinstance(node.cond, Constant):
        return None
    return node.then_branch if bool(node.cond.data.reshape(())) else node.else_branch


class _InliningRewriter(Rewriter):
    """Rewrites only the taken branch of an If whose condition became a constant: the other
    one may no longer type-check (``squeeze(x, axes=[1])`` guarded by "dim 1 is 1" fails once
    dim 1 is known to be 2), and it is dropped anyway."""

    def branches_to_rewrite(self, node: If) -> tuple[bool, bool]:
        taken = taken_branch(node)
        if taken is None:
            return True, True
        return taken is node.then_branch, taken is node.else_branch


def _inline(node: If, ctx=None) -> Expr:
    return taken_branch(node).result


def _join_if_type(node: If, ctx=None) -> Expr | None:
    joined = join_types(node.then_branch.result.ty, node.else_branch.result.ty)
    return None if joined == node.ty else node.replace(ty=joined)


def _shape_of_static(node: Call, ctx=None) -> bool:
    return isinstance(node.args[0].ty, TensorType) and node.args[0].ty.is_static


def _reinfer(node: Call, ctx=None) -> Expr | None:
    inferred = node.inferred_type()
    return None if inferred == node.ty else node.replace(ty=inferred)


CONSTANT_IF = kind(If, lambda n, ctx: taken_branch(n) is not None, lambda n: (n.cond,))
"""An If whose condition is a constant (the replica of bug 3 rewrites these too)."""

RULES = rule_table(
    "dynamic-to-static",
    Rule("inline-constant-if", CONSTANT_IF, _inline, "if true {a} else {b} -> a"),
    Rule("join-if-type", kind(If), _join_if_type, "an If gets the type its branches agree on"),
    Rule(
        "fold-shape-computation",
        op(),
        lambda n, ctx: fold_shape_computation(n),
        "a small integer op(constants...) -> its value",
    ),
    Rule(
        "shape-of-static",
        op("shape_of", where=_shape_of_static),
        lambda n, ctx: Constant(np.asarray(n.args[0].ty.shape, dtype=np.int64).reshape(-1)),
        "shape_of(x) of a static x -> its shape",
    ),
    Rule(
        "attribute-form",
        op(),
        lambda n, ctx: attribute_form(n),
        "reshape(x, const) -> reshape(x, shape=[...]): a constant shape input as an attribute",
    ),
    Rule("reinfer-type", op(), _reinfer, "a call gets the type its inputs now give"),
)


@register_pass
@dataclass(frozen=True)
class DynamicToStatic(Pass):
    """Fold shape computations on static shapes; constant shape inputs become attributes,
    Ifs on constant conditions are inlined, and types are re-inferred."""

    name: ClassVar[str] = "dynamic-to-static"
    rules: ClassVar[tuple[Rule, ...]] = RULES

    def transform(self, module: Module, ctx: PassContext) -> Module:
        rules = Rules(self.name, self.rules, self)
        functions = {
            name: _InliningRewriter(rules, self.name, name).run(fn)
            for name, fn in module.functions.items()
        }
        return module.replace(functions=functions)
