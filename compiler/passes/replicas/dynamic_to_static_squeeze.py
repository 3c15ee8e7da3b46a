"""REPLICA OF A REAL BUG — do not use to compile. ``replica-dynamic-to-static-squeeze``.

docs/bugs.md bug 3, "A wrong shape after DynamicToStatic (ONNX Squeeze inside an If)":
``ReflectionPad3d(padding=(0, 0, -43, 0, 0, -46))`` then ``squeeze(1)`` on a (13, 1, 47, 44, 1)
input, exported to ONNX by the TorchScript exporter, wraps the Squeeze in
``If(Equal(Gather(Shape(x), 1), 1))``. The report saw, after TVM's DynamicToStatic, the
squeeze's result annotated (13, 13, 1, 1) where (13, 1, 1, 1) is right.

Upstream's fix (apache/tvm#17383) shows the cause was not DynamicToStatic: Relay's ONNX ``If``
converter forced both branches to one rank with a right-aligned ``broadcast_to_like``, so 13
landed in dim 1; DynamicToStatic only made it visible. That mechanism is replicated by
``replica-relay-onnx-if`` (replicas/relay_onnx_if.py). This pass models only the symptom as the
report saw it, for the second half of notebook 03: it is dynamic-to-static except that, when it
inlines an If branch whose result is a squeeze, it annotates the squeeze with the reported shape
(the squeezed axis filled with the dim before it, the last dim dropped: (13, 1, 1, 1, 1) ->
(13, 13, 1, 1)). That rule is not TVM's code. The values stay right; only the annotation is
wrong, so ``interpret.evaluate(..., check_types=True)`` reports a mismatch at the squeeze node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Call, Expr, If
from compiler.ir.types import TensorType
from compiler.passes.dynamic_to_static import CONSTANT_IF, DynamicToStatic, taken_branch
from compiler.passes.infra.manager import register_pass
from compiler.passes.infra.rules import Pattern, Rule, rule_table


def faulty_squeeze_type(squeeze: Call) -> TensorType:
    """The wrong annotation: each squeezed axis takes the dim before it; the rank drops at
    the end."""
    data = squeeze.args[0].ty
    shape = list(data.shape)
    axes = squeeze.attrs["axes"]
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    for a in sorted(a % len(shape) for a in axes):
        if a > 0:
            shape[a] = shape[a - 1]
    return data.with_shape(shape[: len(shape) - len(axes)])


def _inlines_static_squeeze(node: If, ctx=None) -> bool:
    """An If on a constant condition whose taken branch's result is a squeeze of a static
    value."""
    result = taken_branch(node).result
    if not (isinstance(result, Call) and result.op == "squeeze"):
        return False
    data = result.args[0].ty
    return isinstance(data, TensorType) and data.is_static and bool(data.shape)


def _misannotated_squeeze(node: If, ctx: ReplicaDynamicToStaticSqueeze) -> Expr:
    result = taken_branch(node).result
    return result.replace(ty=faulty_squeeze_type(result), prov=result.prov.with_pass(ctx.name))


FAULTY_RULE = Rule(
    "inline-squeeze-misannotated",
    Pattern(
        If,
        None,
        lambda n, ctx: CONSTANT_IF.matches(n) and _inlines_static_squeeze(n),
        CONSTANT_IF.also,
    ),
    _misannotated_squeeze,
    "FAULTY (replica): if true {squeeze(x)} -> squeeze(x) annotated with the shape TVM's report "
    "saw",
)


@register_pass
@dataclass(frozen=True)
class ReplicaDynamicToStaticSqueeze(DynamicToStatic):
    """dynamic-to-static annotating a squeeze inlined out of a folded If with the shape the
    upstream report saw (the symptom; the cause is replica-relay-onnx-if)."""

    name: ClassVar[str] = "replica-dynamic-to-static-squeeze"
    rules: ClassVar[tuple[Rule, ...]] = rule_table(
        "replica-dynamic-to-static-squeeze", FAULTY_RULE, *DynamicToStatic.rules
    )
