"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, composed of existing IR ops.

Both read ``-x[n, target[n, d...], d...]`` with ``gather_elements`` along the class axis (1),
after the targets equal to ``ignore_index`` (which may lie outside ``[0, C)``, even be
negative) are replaced by class 0; their loss and weight are then set to 0 with ``where``.
``mean`` divides the weighted sum by the sum of the weights of the targets not ignored (the
count of those when there is no weight input), as onnx's reference does.
"""

from __future__ import annotations

from compiler.frontend.onnx_context import ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import I64, cast_to, converter
from compiler.ir.nodes import Expr

_REDUCTIONS = ("none", "sum", "mean")


def _nll(ctx, logp: Expr) -> Expr:
    """The loss of the log-probabilities ``logp`` (N, C, d1...) for the node's targets
    (input 1), weights (input 2) and attributes."""
    target = ctx.input(1)
    rank = ctx.rank(0)
    if rank < 2:
        raise ConversionError(f"needs an (N, C, ...) input, got {logp.ty}")
    if ctx.rank(1) != rank - 1:
        raise ConversionError(f"the target must have rank {rank - 1}, got {target.ty}")
    if not target.ty.dtype.is_int:
        raise ConversionError(f"the target must be integers, got {target.ty.dtype}")
    if not logp.ty.dtype.is_float:
        raise ConversionError(f"needs a floating-point input, got {logp.ty.dtype}")
    reduction = ctx.attr("reduction", "mean")
    if reduction not in _REDUCTIONS:
        raise ConversionError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    ignore = ctx.attr("ignore_index")
    target = cast_to(ctx, target, I64)
    kept = None
    if ignore is not None:
        kept = ctx.call("not_equal", target, ctx.constant(ignore, I64))
        target = ctx.call("where", kept, target, ctx.constant(0, I64))
    picked = ctx.call("gather_elements", logp, ctx.call("unsqueeze", target, axes=[1]), axis=1)
    loss = ctx.call("neg", ctx.call("squeeze", picked, axes=[1]))
    weight = None
    if ctx.has(2):
        w = ctx.input(2)
        if ctx.rank(2) != 1:
            raise ConversionError(f"the weight must be 1-D, got {w.ty}")
        weight = ctx.call("take", cast_to(ctx, w, logp.ty.dtype), target, axis=0)
    zero = ctx.like(0, loss)
    if kept is not None:
        weight = ctx.call(
            "where", kept, ctx.call("ones_like", loss) if weight is None else weight, zero
        )
    if weight is not None:
        loss = ctx.call("multiply", loss, weight)
    if reduction == "none":
        return loss
    total = ctx.call("sum", loss)
    if reduction == "sum":
        return total
    if weight is None:
        return ctx.call("mean", loss)
    return ctx.call("divide", total, ctx.call("sum", weight))


@converter("NegativeLogLikelihoodLoss", attrs=("ignore_index", "reduction"), min_version=12)
def _nll_loss(ctx):
    return _nll(ctx, ctx.input(0))


@converter("SoftmaxCrossEntropyLoss", attrs=("ignore_index", "reduction"), min_version=12)
def _softmax_cross_entropy(ctx):
    if ctx.rank(0) < 2:
        raise ConversionError(f"needs an (N, C, ...) input, got {ctx.ty(0)}")
    if not ctx.ty(0).dtype.is_float:
        raise Unsupported(f"a {ctx.ty(0).dtype} input")
    logp = ctx.call("log_softmax", ctx.input(0), axis=1)
    return _nll(ctx, logp), logp
