"""infer-types (alias normalize): recompute every annotated type from the op definitions,
so a module whose annotations drifted (or were written wrong) gets consistent types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Call, Expr, FuncCall, If, Loop, Module, loop_type
from compiler.ir.types import join_types
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import rewrite_module


def _retype(module: Module):
    def rule(node: Expr) -> Expr | None:
        if isinstance(node, Call):
            inferred = node.inferred_type()
            return None if inferred == node.ty else node.replace(ty=inferred)
        if isinstance(node, If):
            joined = join_types(node.then_branch.result.ty, node.else_branch.result.ty)
            return None if joined == node.ty else node.replace(ty=joined)
        if isinstance(node, Loop):
            if node.func not in module:
                return None
            ty = loop_type(module[node.func], node.num_carried, node.ty)
            return None if ty is None or ty == node.ty else node.replace(ty=ty)
        if isinstance(node, FuncCall) and node.func in module:
            ret = module[node.func].ret_type
            if ret.__class__ is node.ty.__class__ and ret != node.ty and _static(ret):
                return node.replace(ty=ret)
        return None

    return rule


def _static(ty) -> bool:
    from compiler.ir.types import TensorType, TupleType

    if isinstance(ty, TupleType):
        return all(_static(f) for f in ty.fields)
    return isinstance(ty, TensorType) and ty.is_static


@register_pass
@dataclass(frozen=True)
class InferTypes(Pass):
    """Re-infer the type of every Call, If and FuncCall from its inputs."""

    name: ClassVar[str] = "infer-types"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        rule = _retype(module)
        return rewrite_module(module, lambda name, fn: rule, self.name)
