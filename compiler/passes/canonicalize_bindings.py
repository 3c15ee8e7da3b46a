"""canonicalize-bindings: remove bindings that only forward a value, so later passes and
readers see the real producer (TVM Relax's CanonicalizeBindings, for our DAG IR)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Call, Module, Tuple, TupleGetItem
from compiler.ir.types import TensorType
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from compiler.passes.infra.rules import ITEM_OF_TUPLE, Rule, Rules, kind, op, rule_table


def _items_of_whole_tuple(t: Tuple, ctx=None) -> bool:
    """``(t[0], t[1], ...)`` listing every field of one tuple ``t``, in order."""
    first = t.fields[0] if t.fields else None
    return (
        first is not None
        and all(isinstance(f, TupleGetItem) for f in t.fields)
        and all(f.tuple_value is first.tuple_value for f in t.fields)
        and [f.index for f in t.fields] == list(range(len(first.tuple_value.ty.fields)))
    )


def _same_static_type(n: Call, ctx=None) -> bool:
    x = n.args[0]
    return isinstance(x.ty, TensorType) and x.ty == n.ty and x.ty.is_static and len(n.args) == 1


def _moves_nothing(n: Call, ctx=None) -> bool:
    axes = n.attrs.get("axes")
    return axes is not None and list(axes) == list(range(len(axes)))


def _first_arg(n: Call, ctx=None):
    return n.args[0]


RULES = rule_table(
    "canonicalize-bindings",
    Rule(
        "item-of-tuple",
        ITEM_OF_TUPLE,
        lambda n, ctx: n.tuple_value.fields[n.index],
        "(a, b)[0] -> a",
    ),
    Rule(
        "tuple-of-items",
        kind(Tuple, _items_of_whole_tuple, lambda n: tuple(n.fields)),
        lambda n, ctx: n.fields[0].tuple_value,
        "(t[0], t[1]) of a 2-tuple t -> t",
    ),
    Rule(
        "identity",
        op("identity", where=lambda n, ctx: bool(n.args)),
        _first_arg,
        "identity(x) -> x",
    ),
    Rule(
        "no-op-cast",
        op("cast", where=lambda n, ctx: bool(n.args) and n.args[0].ty == n.ty),
        _first_arg,
        "cast(x) to the dtype x has -> x",
    ),
    Rule(
        "no-op-reshape",
        op("reshape", "broadcast_to", where=_same_static_type),
        _first_arg,
        "reshape / broadcast_to(x) to x's own static shape -> x",
    ),
    Rule(
        "no-op-permute",
        op("permute_dims", where=_moves_nothing),
        _first_arg,
        "permute_dims(x) that moves no axis -> x",
    ),
)


@register_pass
@dataclass(frozen=True)
class CanonicalizeBindings(Pass):
    """Forward trivial bindings: tuple items of tuples, identity ops, no-op casts/reshapes."""

    name: ClassVar[str] = "canonicalize-bindings"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        rules = Rules(self.name, RULES)
        return rewrite_module(module, lambda name, fn: rules, self.name)
