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
from compiler.passes.attribute_form import attribute_form
from compiler.passes.fold_constant import fold_call
from compiler.passes.manager import Pass, PassContext, register_pass
from compiler.passes.rewrite import Rewriter

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


@register_pass
@dataclass(frozen=True)
class DynamicToStatic(Pass):
    """Fold shape computations on static shapes; constant shape inputs become attributes,
    Ifs on constant conditions are inlined, and types are re-inferred."""

    name: ClassVar[str] = "dynamic-to-static"

    def inline_branch(self, node: If, result: Expr) -> Expr:
        """The value that replaces an If whose condition is constant: its branch's result."""
        return result

    def rule(self, node: Expr) -> Expr | None:
        """The rewrite of one binding (operands already rewritten), or None to keep it."""
        if isinstance(node, If):
            taken = taken_branch(node)
            if taken is not None:
                return self.inline_branch(node, taken.result)
            joined = join_types(node.then_branch.result.ty, node.else_branch.result.ty)
            return None if joined == node.ty else node.replace(ty=joined)
        if not isinstance(node, Call):
            return None
        folded = fold_shape_computation(node)
        if folded is not None:
            return folded
        if node.op == "shape_of" and isinstance(node.args[0].ty, TensorType):
            if node.args[0].ty.is_static:
                return Constant(np.asarray(node.args[0].ty.shape, dtype=np.int64).reshape(-1))
        static = attribute_form(node)
        if static is not None:
            return static
        inferred = node.inferred_type()
        return None if inferred == node.ty else node.replace(ty=inferred)

    def transform(self, module: Module, ctx: PassContext) -> Module:
        functions = {
            name: _InliningRewriter(self.rule, self.name, name).run(fn)
            for name, fn in module.functions.items()
        }
        return module.replace(functions=functions)
