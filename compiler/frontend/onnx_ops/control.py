"""Control flow: If."""

from __future__ import annotations

from compiler.frontend.onnx_ops.registry import (
    converter,
)
from compiler.ir.nodes import If

# ----- control flow -----------------------------------------------------------------------


@converter("If", attrs=("then_branch", "else_branch"))
def _if(ctx):
    cond = ctx.input(0)
    ct = cond.ty
    if not (ct.shape == () or (ct.shape is not None and ct.numel == 1)):
        cond = ctx.call("reshape", cond, shape=[])
    then_b = ctx.subgraph("then_branch")
    else_b = ctx.subgraph("else_branch")
    node = If(cond, then_b, else_b, prov=ctx.prov)
    outs = len(ctx.node.output)
    if outs == 1:
        return node
    return [ctx.tuple_item(node, i) for i in range(outs)]
