"""REPLICA OF A REAL BUG — do not use to compile. ``replica-dynamic-to-static-squeeze``.

docs/bugs.md bug 3, "A wrong shape after DynamicToStatic (ONNX Squeeze inside an If)":
``ReflectionPad3d(padding=(0, 0, -43, 0, 0, -46))`` then ``squeeze(1)`` on a (13, 1, 47, 44, 1)
input, exported to ONNX by the TorchScript exporter, wraps the Squeeze in
``If(Equal(Gather(Shape(x), 1), 1))``. After TVM's DynamicToStatic folded that If, the
squeeze's result was annotated (13, 13, 1, 1) where (13, 1, 1, 1) is right.

This pass is dynamic-to-static except for that one place: when it inlines an If branch whose
result is a squeeze, it annotates the squeeze with the shape TVM reported. The reported shape
is what a shape rule with an off-by-one gives: the squeezed axis is filled with the dim before
it, and the last dim is dropped (13, 1, 1, 1, 1) -> (13, 13, 1, 1). That rule is a model of
the symptom, not a copy of TVM's code. The values stay right; only the annotation is wrong,
so ``interpret.evaluate(..., check_types=True)`` reports a mismatch at the squeeze node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Call, Expr, If
from compiler.ir.types import TensorType
from compiler.passes.dynamic_to_static import DynamicToStatic
from compiler.passes.manager import register_pass


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


@register_pass
@dataclass(frozen=True)
class ReplicaDynamicToStaticSqueeze(DynamicToStatic):
    """dynamic-to-static with TVM's wrong shape for a squeeze inlined out of a folded If."""

    name: ClassVar[str] = "replica-dynamic-to-static-squeeze"

    def inline_branch(self, node: If, result: Expr) -> Expr:
        if not (isinstance(result, Call) and result.op == "squeeze"):
            return result
        data = result.args[0].ty
        if not (isinstance(data, TensorType) and data.is_static and data.shape):
            return result
        return result.replace(ty=faulty_squeeze_type(result), prov=result.prov.with_pass(self.name))
