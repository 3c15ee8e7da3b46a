"""canonicalize-bindings: remove bindings that only forward a value, so later passes and
readers see the real producer (TVM Relax's CanonicalizeBindings, for our DAG IR)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Call, Expr, Module, Tuple, TupleGetItem
from compiler.ir.types import TensorType
from compiler.passes.manager import Pass, PassContext, register_pass
from compiler.passes.rewrite import rewrite_module


def _forwarded(node: Expr) -> Expr | None:
    if isinstance(node, TupleGetItem) and isinstance(node.tuple_value, Tuple):
        return node.tuple_value.fields[node.index]  # (a, b)[0] -> a
    if isinstance(node, Tuple) and node.fields:
        first = node.fields[0]
        if (
            all(isinstance(f, TupleGetItem) for f in node.fields)
            and all(f.tuple_value is first.tuple_value for f in node.fields)
            and [f.index for f in node.fields] == list(range(len(first.tuple_value.ty.fields)))
        ):
            return first.tuple_value  # (t[0], t[1]) of a 2-tuple t -> t
    if isinstance(node, Call) and node.args:
        x = node.args[0]
        same = isinstance(x.ty, TensorType) and x.ty == node.ty and x.ty.is_static
        if node.op == "identity":
            return x  # identity(x) -> x
        if node.op == "cast" and x.ty == node.ty:
            return x  # cast to the dtype it has -> x
        if node.op in ("reshape", "broadcast_to") and same and len(node.args) == 1:
            return x  # reshape / broadcast to its own static shape -> x
        if node.op == "permute_dims" and node.attrs.get("axes") is not None:
            if list(node.attrs["axes"]) == list(range(len(node.attrs["axes"]))):
                return x  # permutation that moves nothing -> x
    return None


@register_pass
@dataclass(frozen=True)
class CanonicalizeBindings(Pass):
    """Forward trivial bindings: tuple items of tuples, identity ops, no-op casts/reshapes."""

    name: ClassVar[str] = "canonicalize-bindings"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        return rewrite_module(module, lambda name, fn: _forwarded, self.name)
