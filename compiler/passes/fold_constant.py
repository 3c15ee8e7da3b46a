"""fold-constant: evaluate, with the numpy reference, every op whose inputs are all constants,
and replace it by a new named constant. Folding never compiles anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from compiler.ir.names import fresh_name
from compiler.ir.nodes import Call, Constant, Expr, Module, Tuple, TupleGetItem
from compiler.ir.symbolic import SymExpr
from compiler.ops.registry import get_op
from compiler.passes.manager import Pass, PassContext, register_pass
from compiler.passes.rewrite import rewrite_module

# Ops whose value must not be frozen into the module even with constant inputs.
NOT_FOLDABLE: set[str] = set()


def _has_symbols(value) -> bool:
    if isinstance(value, SymExpr):
        return True
    return isinstance(value, tuple) and any(_has_symbols(v) for v in value)


class ConstantNamer:
    """Names for folded constants: the first named input's name plus the op
    (``fc.weight.permute_dims``), unique within the module."""

    def __init__(self, module: Module):
        self.used = set(module.constants())

    def name(self, node: Call) -> str:
        base = next((a.name for a in node.args if isinstance(a, Constant) and a.name), None)
        base = f"{base}.{node.op}" if base else f"const.{node.name or node.op}"
        return fresh_name(base, self.used)


def fold_call(node: Call) -> np.ndarray | None:
    """The value of a call whose arguments are all constants, or None if it cannot fold."""
    if node.op in NOT_FOLDABLE or not all(isinstance(a, Constant) for a in node.args):
        return None
    if any(_has_symbols(v) for v in node.attrs.values()):
        return None
    out = get_op(node.op).compute([a.data for a in node.args], node.attrs)
    if not isinstance(out, np.ndarray):
        return None  # ops with several outputs stay as they are
    return out


@register_pass
@dataclass(frozen=True)
class FoldConstant(Pass):
    """Replace ops on constants by their values; simplify tuple items of constant tuples."""

    name: ClassVar[str] = "fold-constant"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        namer = ConstantNamer(module)

        def rule(node: Expr) -> Expr | None:
            if isinstance(node, Call):
                value = fold_call(node)
                if value is None:
                    return None
                return Constant(value, name=namer.name(node), prov=node.prov.with_pass(self.name))
            if isinstance(node, TupleGetItem) and isinstance(node.tuple_value, Tuple):
                field = node.tuple_value.fields[node.index]
                return field if isinstance(field, Constant) else None
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)
