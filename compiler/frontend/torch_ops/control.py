"""Converters of torch's higher-order control flow: ``torch.cond`` as an IR If,
``while_loop`` as an IR Loop, and the grad-mode and autocast regions that are inlined."""

from __future__ import annotations

import numpy as np

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import ConvertContext, converts, provenance_of
from compiler.frontend.torch_ops.common import as_tensor, cast
from compiler.ir.nodes import Block, Constant, Expr, If, collect_bindings
from compiler.ir.nodes import Tuple as IRTuple
from compiler.ir.types import DType

# ----- control flow ---------------------------------------------------------------------------


@converts("higher_order.cond")
def _cond(ctx, node, args, kwargs):
    """``torch.cond(pred, true_fn, false_fn, operands)`` as an IR If whose branches are the
    converted subgraphs; each branch yields a tuple of the outputs (read with getitem)."""
    pred, then_gm, else_gm, operands = args[0], args[1], args[2], list(args[3])
    if isinstance(pred, (bool, np.bool_)):  # decided at export time: keep one branch
        return tuple(ctx.convert_graph(then_gm if pred else else_gm, operands))
    if not isinstance(pred, Expr):
        raise FrontendError(f"a cond predicate on sizes ({pred!r}) is not supported")
    branches = []
    for gm in (then_gm, else_gm):
        outs = [
            as_tensor(v, DType.int64) if not isinstance(v, Expr) else v
            for v in ctx.convert_graph(gm, operands)
        ]
        result = IRTuple(outs, prov=provenance_of(node), name=f"{node.name}_result")
        branches.append(Block.of(result, _bound_outside(ctx, operands)))
    return If(cast(pred, DType.bool), branches[0], branches[1])


@converts("higher_order.while_loop")
def _while_loop(ctx, node, args, kwargs):
    """``torch._higher_order_ops.while_loop(cond_fn, body_fn, carried, additional)`` as an
    IR Loop: the condition is checked before each iteration (so it is computed once on the
    initial values, then by the body on each new one); ``additional`` inputs and whatever the
    subgraphs read are captured."""
    from compiler.ir.closure import LoopError, build_loop

    cond_gm, body_gm = args[0], args[1]
    carried = [v if isinstance(v, Expr) else as_tensor(v, DType.int64) for v in args[2]]
    extra = list(args[3]) if len(args) > 3 else []

    def one(values: list, what: str) -> Expr:
        (c,) = values if len(values) == 1 else (None,)
        if c is None:
            raise FrontendError(f"while_loop's cond_fn must return one value, got {len(values)}")
        if not isinstance(c, Expr):
            c = as_tensor(c, DType.bool)
        return c

    def build(i, c, states):
        new = [
            v if isinstance(v, Expr) else as_tensor(v, DType.int64)
            for v in ctx.convert_graph(body_gm, [*states, *extra])
        ]
        return one(ctx.convert_graph(cond_gm, [*new, *extra]), "cond"), new, []

    first = one(ctx.convert_graph(cond_gm, [*carried, *extra]), "cond")
    trips = Constant(np.asarray(np.iinfo(np.int64).max))
    try:
        outs = build_loop(
            carried,
            build,
            lambda body: ctx.add_function(f"{node.name}_body", body),
            trips,
            first,
            prov=provenance_of(node),
        )
    except LoopError as e:
        raise FrontendError(f"while_loop {node.name}: {e}") from None
    return outs[0].tuple_value  # the Loop itself: FX's getitem nodes read its fields


@converts("higher_order.wrap_with_set_grad_enabled")
def _set_grad(ctx, node, args, kwargs):
    """A ``torch.no_grad()`` / ``enable_grad()`` region (rotary embeddings in transformers):
    gradients do not matter to an inference graph, so its subgraph is inlined."""
    return tuple(ctx.convert_graph(args[1], list(args[2:])))


@converts("higher_order.wrap_with_autocast")
def _autocast(ctx, node, args, kwargs):
    """A ``torch.autocast(...)`` region: inlined when it is disabled (models switch autocast
    off around their rotary embeddings); an enabled one would run its ops in a lower precision,
    which this frontend does not reproduce, so it is refused."""
    device, dtype, enabled = args[0], args[1], args[2]
    if enabled:
        raise FrontendError(
            f"an enabled torch.autocast({device!r}, dtype={dtype}) region: its ops would run "
            "in that precision; export the model with autocast off"
        )
    return tuple(ctx.convert_graph(args[4], list(args[5:])))


def _bound_outside(ctx: ConvertContext, operands: list) -> list[Expr]:
    """Every expression converted so far in the enclosing graph (bound before the If)."""
    outside = [v for v in ctx.values.values() if isinstance(v, Expr)]
    for v in ctx.values.values():
        if isinstance(v, (list, tuple)):
            outside.extend(x for x in v if isinstance(x, Expr))
    outside.extend(v for v in operands if isinstance(v, Expr))
    return collect_bindings(outside)
