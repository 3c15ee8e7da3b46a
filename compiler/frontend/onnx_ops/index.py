"""Indexing: gather, scatter, one-hot, trilu, top-k, non-zero."""

from __future__ import annotations

import math

from compiler.frontend.onnx_context import (
    ConversionError,
)
from compiler.frontend.onnx_ops.registry import (
    I64,
    cast_to,
    checked_axis,
    converter,
    dim_value,
    float_scalar,
    index_range,
    scalar_i64,
    static_dim,
)
from compiler.ir.nodes import Expr
from compiler.ir.types import DType

# ----- indexing ---------------------------------------------------------------------------


@converter("Gather", attrs=("axis",))
def _gather(ctx):
    return ctx.call("take", ctx.input(0), ctx.input(1), axis=ctx.attr("axis", 0))


@converter("GatherND", attrs=("batch_dims",), min_version=11)
def _gather_nd(ctx):
    """``out[i..., :] = data[b..., idx[b..., i..., 0], ..., idx[b..., i..., k-1], ...]``: the
    leading ``batch_dims`` axes of data and indices are shared and the last axis of indices
    (of static length k) addresses the next k axes of data. Expressed as a ``take`` on data
    with those axes (and the batch axes) merged into one, at the flat index
    ``batch * K + i0 * s0 + ... + i(k-1)``; a negative index counts from the end of its dim."""
    data, indices = ctx.input(0), cast_to(ctx, ctx.input(1), I64)
    b = ctx.attr("batch_dims", 0)
    r, q = ctx.rank(0), ctx.rank(1)
    if q < 1:
        raise ConversionError("GatherND indices must have rank 1 or more")
    k = static_dim(indices.ty.shape[-1], ctx, "last dim of indices")
    if not 0 <= b < min(r, q):
        raise ConversionError(f"batch_dims {b} must be less than the ranks {r} and {q}")
    if b + k > r:
        raise ConversionError(f"indices address {k} axes after {b} batch axes of a rank-{r} input")
    if k == 0:  # each index selects the whole of data[b...]: index 0 of a new unit axis
        data = ctx.call("unsqueeze", data, axes=[b])
        zero = ctx.call("sum", indices, axes=[q - 1], keepdims=True)  # zeros, shape Q[:-1] + [1]
        return _gather_nd_flat(ctx, data, zero, b, 1)
    return _gather_nd_flat(ctx, data, indices, b, k)


def _gather_nd_flat(ctx, data: Expr, indices: Expr, b: int, k: int) -> Expr:
    q = len(indices.ty.shape)
    dims = [dim_value(ctx, data, b + j) for j in range(k)]
    flat = None
    stride = None  # the product of the dims after the current one, built from the last
    for j in reversed(range(k)):
        i = ctx.call("take", indices, ctx.constant(j, I64), axis=q - 1)
        negative = ctx.call("less", i, ctx.constant(0, I64))
        i = ctx.call("where", negative, ctx.call("add", i, dims[j]), i)
        term = i if stride is None else ctx.call("multiply", i, stride)
        flat = term if flat is None else ctx.call("add", flat, term)
        stride = dims[j] if stride is None else ctx.call("multiply", stride, dims[j])
    if b:
        batch = [static_dim(d, ctx, "batch dim") for d in data.ty.shape[:b]]
        if [static_dim(d, ctx, "batch dim") for d in indices.ty.shape[:b]] != batch:
            raise ConversionError(
                f"the batch dims of data {batch} and indices {indices.ty.shape[:b]} differ"
            )
        # each batch element's position, an op: the batch has the size the types declare,
        # which a few bytes of model can make huge (fold-constant folds the small ones)
        position = ctx.call("arange", stop=math.prod(batch), dtype=I64)
        position = ctx.call("reshape", position, shape=batch + [1] * (q - 1 - b))
        flat = ctx.call("add", flat, ctx.call("multiply", position, stride))
    merged = ctx.call("flatten", data, start_dim=0, end_dim=b + k - 1) if b + k > 1 else data
    return ctx.call("take", merged, flat, axis=0)


@converter("NonZero", min_version=9)
def _non_zero(ctx):
    return ctx.call("nonzero", ctx.input(0))


@converter("GatherElements", attrs=("axis",))
def _gather_elements(ctx):
    return ctx.call("gather_elements", ctx.input(0), ctx.input(1), axis=ctx.attr("axis", 0))


@converter("ScatterElements", attrs=("axis", "reduction"))
def _scatter_elements(ctx):
    return ctx.call(
        "scatter_elements",
        ctx.input(0),
        ctx.input(1),
        ctx.input(2),
        axis=ctx.attr("axis", 0),
        reduction=ctx.attr("reduction", "none"),
    )


@converter("OneHot", attrs=("axis",))
def _one_hot(ctx):
    indices = ctx.input(0)
    if not indices.ty.dtype.is_int:
        indices = cast_to(ctx, indices, I64)
    depth, values = ctx.const(1), ctx.const(2)
    axis = ctx.attr("axis", -1)
    if depth is not None and values is not None:
        if values.size != 2:
            raise ConversionError(f"values must hold [off_value, on_value], got {values.shape}")
        off, on = (v.item() for v in values.reshape(-1))
        return ctx.call(
            "one_hot",
            indices,
            depth=int(float_scalar(depth, "depth")),
            axis=axis,
            dtype=DType.of(values.dtype),
            on_value=float(on),
            off_value=float(off),
        )
    # computed depth or values: compare each index with every class
    rank = ctx.rank(0) + 1
    axis = checked_axis(ctx, axis, rank)
    n = scalar_i64(ctx, ctx.input(1))
    idx = cast_to(ctx, indices, I64)
    negative = ctx.call("less", idx, ctx.constant(0, I64))
    idx = ctx.call("where", negative, ctx.call("add", idx, n), idx)
    classes = index_range(ctx, ctx.constant(0, I64), n, ctx.constant(1, I64))
    others = [p for p in range(rank) if p != axis]
    hot = ctx.call(
        "equal",
        ctx.call("unsqueeze", idx, axes=[axis]),
        ctx.call("unsqueeze", classes, axes=others) if others else classes,
    )
    vals = ctx.input(2)
    off, on = (ctx.call("take", vals, ctx.constant(i, I64), axis=0) for i in (0, 1))
    return ctx.call("where", hot, on, off)


@converter("Trilu", attrs=("upper",))
def _trilu(ctx):
    x = ctx.input(0)
    upper = bool(ctx.attr("upper", 1))
    if not ctx.has(1) or ctx.const(1) is not None:
        k = ctx.const_ints(1, "k")
        return ctx.call("triu" if upper else "tril", x, k=k[0] if k else 0)
    # a computed k: keep where (column - row) >= k (upper) or <= k (lower)
    rank = ctx.rank(0)
    if rank < 2:
        raise ConversionError(f"needs a matrix or a batch of matrices, got {x.ty}")
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    rows = index_range(ctx, zero, dim_value(ctx, x, rank - 2), one)
    cols = index_range(ctx, zero, dim_value(ctx, x, rank - 1), one)
    diff = ctx.call(
        "subtract",
        ctx.call("unsqueeze", cols, axes=[0]),
        ctx.call("unsqueeze", rows, axes=[1]),
    )
    k = scalar_i64(ctx, ctx.input(1))
    keep = ctx.call("greater_equal" if upper else "less_equal", diff, k)
    return ctx.call("where", keep, x, ctx.call("zeros_like", x))


@converter("TopK", attrs=("axis", "largest", "sorted"), min_version=10)
def _topk(ctx):
    x = ctx.input(0)
    largest = bool(ctx.attr("largest", 1))
    if ctx.const(1) is not None:
        k = ctx.const_ints(1, "k")
        if len(k) != 1:
            raise ConversionError("needs one k")
        out = ctx.call("topk", x, k=k[0], axis=ctx.attr("axis", -1), largest=largest)
        return ctx.tuple_item(out, 0), ctx.tuple_item(out, 1)
    # a computed k: sort the whole axis (k=-1 when its size is symbolic), keep the first k
    rank = ctx.rank(0)
    axis = checked_axis(ctx, ctx.attr("axis", -1), rank)
    n = x.ty.shape[axis]
    out = ctx.call("topk", x, k=n if isinstance(n, int) else -1, axis=axis, largest=largest)
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    first = index_range(ctx, zero, scalar_i64(ctx, ctx.input(1)), one)
    return (
        ctx.call("take", ctx.tuple_item(out, 0), first, axis=axis),
        ctx.call("take", ctx.tuple_item(out, 1), first, axis=axis),
    )
