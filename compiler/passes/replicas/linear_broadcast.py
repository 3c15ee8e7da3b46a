"""REPLICA OF A REAL BUG — do not use to compile. ``replica-linear-broadcast``.

docs/bugs.md bug 1, "Linear layers that bloat the compiled model (torch frontend)": converting
torchvision ConvNeXt-base through TVM's PyTorch frontend gave a 3.8 GB engine for a 339 MB
model. The frontend expressed a linear layer's matmul with an unnecessary broadcast of the
weight over the input's batch dimensions; folding constants then materialised that broadcast
as a new constant: the weight duplicated once per batch row.

This pass rewrites every ``linear(x, W, b)`` on an input of rank 3 or more the way that
frontend did::

    add(matmul(x, broadcast_to(permute_dims(W), batch + (in, out))), b)

where ``batch`` is ``x``'s matmul batch dims, ``x.shape[:-2]``. The results stay right (the
bug is size, not values), but after fold-constant the weight ``W`` (out x in) has become a
constant of ``prod(batch)`` copies of its transpose: 56 copies for a (1, 56, 56, 128) input,
which summed over ConvNeXt-base's 36 blocks gives the reported ~3.8 GB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Call, Expr, Module
from compiler.ir.types import TensorType
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from compiler.passes.infra.rules import Rule, Rules, op, rule_table


def broadcast_linear(node: Call) -> Expr | None:
    """The faulty form of ``linear(x, W[, b])`` on a rank >= 3 input, or None for others."""
    if node.op != "linear" or node.attrs.get("out_dtype") is not None:
        return None
    x, weight = node.args[0], node.args[1]
    if not (isinstance(x.ty, TensorType) and x.ty.shape is not None and len(x.ty.shape) >= 3):
        return None
    if not (isinstance(weight.ty, TensorType) and weight.ty.ndim == 2):
        return None
    out_features, in_features = weight.ty.shape
    batch = x.ty.shape[:-2]
    wt = Call("permute_dims", [weight], {"axes": [1, 0]})
    wide = Call("broadcast_to", [wt], {"shape": [*batch, in_features, out_features]})
    y = Call("matmul", [x, wide])
    if len(node.args) > 2:
        y = Call("add", [y, node.args[2]])
    return y


BROADCAST_WEIGHT = Rule(
    "linear-with-broadcast-weight",
    op("linear"),
    lambda n, ctx: broadcast_linear(n),
    "FAULTY (replica): linear(x, W, b) -> matmul(x, broadcast_to(W^T, batch + (in, out))) + b",
)
"""The faulty rule: the broadcast it makes is what fold-constant turns into copies of W."""

RULES = rule_table("replica-linear-broadcast", BROADCAST_WEIGHT)


@register_pass
@dataclass(frozen=True)
class ReplicaLinearBroadcast(Pass):
    """linear -> matmul with the weight broadcast over the batch dims (TVM's faulty frontend)."""

    name: ClassVar[str] = "replica-linear-broadcast"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        rules = Rules(self.name, RULES)
        return rewrite_module(module, lambda name, fn: rules, self.name)
