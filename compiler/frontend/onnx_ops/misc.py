"""Einsum and the remaining index and shape ops (CumProd, ScatterND, Unique, Compress,
CenterCropPad, ReverseSequence, Pad's wrap mode), each composed of existing IR ops.

Einsum lowers each equation to per-operand diagonals (a masked sum) and sums of the labels
only one operand has, then contracts the operands left to right with ``matmul`` (batch
labels first, the contracted ones merged into one axis) and permutes to the output order.
Unique's result length is known only at run time: like NonZero, its positions come from
``nonzero`` of a mask (the first occurrence of each element), built from pairwise
comparisons (O(n^2) memory, so the element count is bounded).
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend.onnx_context import (
    MAX_IMPORT_ELEMENTS,
    ConversionError,
    Unsupported,
)
from compiler.frontend.onnx_ops.registry import (
    I64,
    cast_to,
    checked_axis,
    converter,
    dim_value,
    index_range,
    item_i64,
    normalized_axes,
    select_if,
    static_dim,
)
from compiler.ir.nodes import Expr
from compiler.ir.symbolic import ANY, dim_mul
from compiler.ir.types import DType

MAX_PAIRWISE_ELEMENTS = 1 << 24
"""CumProd and Unique compare every pair of positions along an axis: at most this many pairs
(times the rest of the tensor) when the sizes are static."""


def _arange(ctx, x: Expr, axis: int) -> Expr:
    """``0 .. dim(axis) - 1`` of ``x`` as a 1-D i64 tensor (a constant when static)."""
    d = x.ty.shape[axis]
    if isinstance(d, int):
        return ctx.constant(np.arange(d), I64)
    if d is not ANY:  # a symbolic length: the loop backend sizes it from the dim
        return ctx.call("arange", start=0, stop=d, step=1, dtype=I64)
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    return index_range(ctx, zero, dim_value(ctx, x, axis), one)


def _numel(shape) -> int | None:
    return math.prod(shape) if all(isinstance(d, int) for d in shape) else None


def _check_pairwise(ctx, shape, n, what: str) -> None:
    numel = _numel(shape)
    if numel is not None and isinstance(n, int) and numel * n > MAX_PAIRWISE_ELEMENTS:
        raise Unsupported(
            f"{ctx.node.op_type} {what} of {n} elements: the composed form compares every "
            f"pair ({numel * n} values, more than {MAX_PAIRWISE_ELEMENTS})"
        )


# ----- Einsum -----------------------------------------------------------------------------


def _parse_einsum(ctx, equation: str, ranks: list[int]):
    """The labels of each operand and of the output, an ellipsis expanded into labels of its
    own (right-aligned across operands, as numpy broadcasts them)."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ConversionError(f"equation {equation!r} has more than one '->'")
    lhs, rhs = eq.split("->") if "->" in eq else (eq, None)
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ConversionError(
            f"equation {equation!r} has {len(terms)} operands, the node {len(ranks)} inputs"
        )
    ell_rank = 0
    for t, r in zip(terms, ranks, strict=True):
        if t.count("...") > 1 or t.replace("...", "").count("."):
            raise ConversionError(f"equation {equation!r}: a bad ellipsis in {t!r}")
        named = t.replace("...", "")
        if not all(c.isalpha() and c.isascii() for c in named):
            raise ConversionError(f"equation {equation!r}: labels must be letters, got {t!r}")
        if "..." in t:
            if len(named) > r:
                raise ConversionError(f"operand {t!r} names {len(named)} axes of a rank-{r} input")
            ell_rank = max(ell_rank, r - len(named))
        elif len(named) != r:
            raise ConversionError(f"operand {t!r} names {len(named)} axes of a rank-{r} input")
    ell = [f"...{i}" for i in range(ell_rank)]
    operands = []
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            before, after = t.split("...")
            n = r - len(before) - len(after)
            operands.append(list(before) + ell[ell_rank - n :] + list(after))
        else:
            operands.append(list(t))
    letters = [c for t in terms for c in t if c.isalpha()]
    if rhs is None:
        out = ell + sorted(c for c in set(letters) if letters.count(c) == 1)
    else:
        if rhs.count("...") > 1 or rhs.replace("...", "").count("."):
            raise ConversionError(f"equation {equation!r}: a bad ellipsis in the output")
        before, _, after = rhs.partition("...")
        named = before + after
        if not all(c.isalpha() and c.isascii() for c in named):
            raise ConversionError(f"equation {equation!r}: output labels must be letters")
        if len(set(named)) != len(named):
            raise ConversionError(f"equation {equation!r}: an output label repeats")
        missing = [c for c in named if c not in letters]
        if missing:
            raise ConversionError(f"equation {equation!r}: output label {missing[0]} is no input's")
        out = list(before) + (ell if "..." in rhs else []) + list(after)
    return operands, out


def _permute(ctx, x: Expr, labels: list, order: list) -> Expr:
    perm = [labels.index(label) for label in order]
    if perm == list(range(len(perm))):
        return x
    return ctx.call("permute_dims", x, axes=perm)


def _einsum_diagonal(ctx, x: Expr, labels: list) -> tuple[Expr, list]:
    """Take the diagonal of every label an operand repeats (``ii->i``)."""
    while len(set(labels)) != len(labels):
        label = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(label)
        j = labels.index(label, i + 1)
        others = [k for k in range(len(labels)) if k not in (i, j)]
        x = ctx.call("permute_dims", x, axes=[*others, i, j]) if others or i > j else x
        rank = len(labels)
        n = x.ty.shape[rank - 2]
        if isinstance(n, int) and n * n > MAX_IMPORT_ELEMENTS:
            raise Unsupported(f"Einsum diagonal of a {n}-element axis")
        idx = _arange(ctx, x, rank - 2)
        eye = ctx.call(
            "equal", ctx.call("unsqueeze", idx, axes=[1]), ctx.call("unsqueeze", idx, axes=[0])
        )
        x = ctx.call("sum", ctx.call("where", eye, x, ctx.like(0, x)), axes=[rank - 1])
        labels = [labels[k] for k in others] + [label]
    return x, labels


def _merged_shape(ctx, dims: list) -> list:
    """A reshape target from dims and dim products; one unknown becomes -1."""
    if sum(d is ANY for d in dims) > 1:
        raise Unsupported("Einsum merging several axes of unknown size")
    return [-1 if d is ANY else d for d in dims]


def _product(dims) -> object:
    p: object = 1
    for d in dims:
        p = dim_mul(p, d)
    return p


def _einsum_contract(ctx, a: Expr, la: list, b: Expr, lb: list, keep: set) -> tuple[Expr, list]:
    """``a`` times ``b`` summed over the labels both have and ``keep`` lacks, as a matmul
    ``[batch..., M, K] @ [batch..., K, N]``."""
    batch = [c for c in la if c in lb and c in keep]
    contracted = [c for c in la if c in lb and c not in keep]
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]
    da = dict(zip(la, a.ty.shape, strict=True))
    db = dict(zip(lb, b.ty.shape, strict=True))
    a = _permute(ctx, a, la, batch + a_only + contracted)
    b = _permute(ctx, b, lb, batch + contracted + b_only)
    m, k_, n = (
        _product(da[c] for c in a_only),
        _product(da[c] for c in contracted),
        _product(db[c] for c in b_only),
    )
    a_target = [da[c] for c in batch] + [m, k_]
    b_target = [db[c] for c in batch] + [k_, n]
    if list(a.ty.shape) != a_target:
        a = ctx.call("reshape", a, shape=_merged_shape(ctx, a_target))
    if list(b.ty.shape) != b_target:
        b = ctx.call("reshape", b, shape=_merged_shape(ctx, b_target))
    y = ctx.call("matmul", a, b)
    out_dims = list(y.ty.shape[: len(batch)]) + [da[c] for c in a_only] + [db[c] for c in b_only]
    if list(y.ty.shape) != out_dims:
        y = ctx.call("reshape", y, shape=_merged_shape(ctx, out_dims))
    return y, batch + a_only + b_only


@converter("Einsum", attrs=("equation",), min_version=12)
def _einsum(ctx):
    equation = ctx.attr("equation")
    if not isinstance(equation, str):
        raise ConversionError("needs an equation")
    xs = [ctx.input(i) for i in range(ctx.num_inputs)]
    if not xs:
        raise ConversionError("needs at least one input")
    ranks = [ctx.rank(i) for i in range(len(xs))]
    operands, out = _parse_einsum(ctx, equation, ranks)
    dtype = xs[0].ty.dtype
    if any(x.ty.dtype is not dtype for x in xs):
        raise ConversionError("the inputs must have one dtype")
    ops = []
    for k, (x, labels) in enumerate(zip(xs, operands, strict=True)):
        x, labels = _einsum_diagonal(ctx, x, labels)
        elsewhere = set(out).union(*(set(o) for i, o in enumerate(operands) if i != k))
        alone = [i for i, c in enumerate(labels) if c not in elsewhere]
        if alone:
            x = ctx.call("sum", x, axes=alone)
            labels = [c for i, c in enumerate(labels) if i not in alone]
        ops.append((x, labels))
    y, labels = ops[0]
    for k in range(1, len(ops)):
        keep = set(out).union(*(set(o) for o in operands[k + 1 :]))
        y, labels = _einsum_contract(ctx, y, labels, *ops[k], keep)
    extra = [i for i, c in enumerate(labels) if c not in out]
    if extra:
        y = ctx.call("sum", y, axes=extra)
        labels = [c for i, c in enumerate(labels) if i not in extra]
    y = _permute(ctx, y, labels, out)
    return y if y is not xs[0] else ctx.call("identity", y)


# ----- CumProd ----------------------------------------------------------------------------


def _cumprod_along(ctx, x: Expr, axis: int, exclusive: bool, reverse: bool) -> Expr:
    """The product of x[j] over the j before (or after) each i: a masked product over a new
    axis j (the masked-out factors are 1)."""
    rank = len(x.ty.shape)
    _check_pairwise(ctx, x.ty.shape, x.ty.shape[axis], "along an axis")
    idx = _arange(ctx, x, axis)
    i = ctx.call("unsqueeze", idx, axes=[1])
    j = ctx.call("unsqueeze", idx, axes=[0])
    cmp = {
        (False, False): "less_equal",
        (True, False): "less",
        (False, True): "greater_equal",
        (True, True): "greater",
    }[(exclusive, reverse)]
    mask = ctx.call(cmp, j, i)  # [i, j]
    others = [k for k in range(rank + 1) if k not in (axis, axis + 1)]
    if others:
        mask = ctx.call("unsqueeze", mask, axes=others)
    spread = ctx.call("unsqueeze", x, axes=[axis])  # x[..., 1, j, ...]
    factors = ctx.call("where", mask, spread, ctx.like(1, x))
    return ctx.call("prod", factors, axes=[axis + 1])


@converter("CumProd", attrs=("exclusive", "reverse"))
def _cumprod(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    if rank == 0:
        raise ConversionError("needs an input of rank 1 or more")
    exclusive, reverse = bool(ctx.attr("exclusive", 0)), bool(ctx.attr("reverse", 0))
    if ctx.const(1) is not None:
        axis = ctx.const_ints(1, "axis")
        if len(axis) != 1:
            raise ConversionError("needs one axis")
        return _cumprod_along(ctx, x, checked_axis(ctx, axis[0], rank), exclusive, reverse)
    # a computed axis: the product along each possible axis, chosen by Ifs
    axis = normalized_axes(ctx, ctx.input(1), rank)
    if axis.ty.shape != ():
        axis = ctx.call("reshape", axis, shape=[])
    out = _cumprod_along(ctx, x, 0, exclusive, reverse)
    for a in range(1, rank):
        is_a = ctx.call("equal", axis, ctx.constant(a, I64))
        out = select_if(ctx, is_a, _cumprod_along(ctx, x, a, exclusive, reverse), out)
    return out


# ----- ScatterND --------------------------------------------------------------------------

_SCATTER_ND_REDUCTIONS = {"none": "none", "add": "add", "mul": "mul", "max": "max", "min": "min"}


@converter("ScatterND", attrs=("reduction",), min_version=11)
def _scatter_nd(ctx):
    """``out[idx[i..., :]] (op)= updates[i...]``: data's first k axes merged into one (k the
    static last dim of indices), the flat index of each update row computed as in GatherND,
    then a ``scatter_elements`` along the merged axis."""
    data, indices, updates = ctx.input(0), cast_to(ctx, ctx.input(1), I64), ctx.input(2)
    reduction = ctx.attr("reduction", "none")
    if reduction not in _SCATTER_ND_REDUCTIONS:
        raise Unsupported(f"reduction {reduction}")
    r, q = ctx.rank(0), ctx.rank(1)
    ctx.rank(2)
    if q < 1:
        raise ConversionError("indices must have rank 1 or more")
    k = static_dim(indices.ty.shape[-1], ctx, "last dim of indices")
    if not 1 <= k <= r:
        if k == 0:
            raise Unsupported("ScatterND with an empty index (k = 0)")
        raise ConversionError(f"indices address {k} axes of a rank-{r} input")
    if len(updates.ty.shape) != q - 1 + r - k:
        raise ConversionError(
            f"updates {updates.ty} must have rank {q - 1 + r - k} "
            f"(indices {q} - 1 + data {r} - {k})"
        )
    flat = None
    stride = None
    for j in reversed(range(k)):
        d = dim_value(ctx, data, j)
        i = ctx.call("take", indices, ctx.constant(j, I64), axis=q - 1)
        negative = ctx.call("less", i, ctx.constant(0, I64))
        i = ctx.call("where", negative, ctx.call("add", i, d), i)
        term = i if stride is None else ctx.call("multiply", i, stride)
        flat = term if flat is None else ctx.call("add", flat, term)
        stride = d if stride is None else ctx.call("multiply", stride, d)
    merged = ctx.call("flatten", data, start_dim=0, end_dim=k - 1) if k > 1 else data
    rest = r - k
    if q == 1:
        rows = ctx.call("unsqueeze", updates, axes=[0])
        flat = ctx.call("reshape", flat, shape=[1])
    elif q > 2:
        rows = ctx.call("flatten", updates, start_dim=0, end_dim=q - 2)
        flat = ctx.call("reshape", flat, shape=[-1])
    else:
        rows = updates
    if rest:
        flat = ctx.call("unsqueeze", flat, axes=list(range(1, rest + 1)))
    where = ctx.call("add", flat, ctx.call("zeros_like", rows, dtype=I64))
    out = ctx.call(
        "scatter_elements",
        merged,
        where,
        rows,
        axis=0,
        reduction=_SCATTER_ND_REDUCTIONS[reduction],
    )
    if k == 1:
        return out
    shape = list(data.ty.shape)
    if ANY in shape:
        return ctx.call("reshape", out, ctx.call("shape_of", data))
    return ctx.call("reshape", out, shape=shape)


# ----- Compress, ReverseSequence ----------------------------------------------------------


@converter("Compress", attrs=("axis",), min_version=9)
def _compress(ctx):
    x, cond = ctx.input(0), ctx.input(1)
    if ctx.rank(1) != 1:
        raise ConversionError(f"condition must be 1-D, got {cond.ty}")
    if cond.ty.dtype is not DType.bool:
        cond = ctx.call("not_equal", cond, ctx.like(0, cond))
    axis = ctx.attr("axis")
    if axis is None:
        x = ctx.call("reshape", x, shape=[-1])
        axis = 0
    else:
        axis = checked_axis(ctx, axis, ctx.rank(0))
    # a condition longer than the axis is valid when its extra entries are false; a true
    # one past the axis is an out-of-range position, which take reports at run time
    positions = ctx.call("take", ctx.call("nonzero", cond), ctx.constant(0, I64), axis=0)
    return ctx.call("take", x, positions, axis=axis)


@converter("ReverseSequence", attrs=("batch_axis", "time_axis"), min_version=10)
def _reverse_sequence(ctx):
    """``out[b, t] = x[b, len[b] - 1 - t]`` for ``t < len[b]``, else ``x[b, t]``: a
    ``gather_elements`` along the time axis."""
    x = ctx.input(0)
    rank = ctx.rank(0)
    if rank < 2:
        raise ConversionError(f"needs an input of rank 2 or more, got {x.ty}")
    b = checked_axis(ctx, ctx.attr("batch_axis", 1), rank, "batch_axis")
    t = checked_axis(ctx, ctx.attr("time_axis", 0), rank, "time_axis")
    if b == t or b > 1 or t > 1:
        raise ConversionError(f"batch_axis {b} and time_axis {t} must be 0 and 1 in some order")
    lens = cast_to(ctx, ctx.input(1), I64)
    if ctx.rank(1) != 1:
        raise ConversionError(f"sequence_lens must be 1-D, got {lens.ty}")
    steps = _arange(ctx, x, t)
    lens = ctx.call("unsqueeze", lens, axes=[k for k in range(rank) if k != b])
    steps = ctx.call("unsqueeze", steps, axes=[k for k in range(rank) if k != t])
    back = ctx.call("subtract", ctx.call("subtract", lens, ctx.constant(1, I64)), steps)
    idx = ctx.call("where", ctx.call("less", steps, lens), back, steps)
    idx = ctx.call("add", idx, ctx.call("zeros_like", x, dtype=I64))
    return ctx.call("gather_elements", x, idx, axis=t)


# ----- CenterCropPad ----------------------------------------------------------------------


@converter("CenterCropPad", attrs=("axes",), min_version=18)
def _center_crop_pad(ctx):
    """Each axis cropped to its centre (start ``(d - t) // 2``) or padded with zeros around
    it (``(t - d) // 2`` before) to the target size."""
    x = ctx.input(0)
    rank = ctx.rank(0)
    axes = ctx.attr("axes")
    axes = (
        list(range(rank))
        if axes is None
        else [checked_axis(ctx, a, rank, "axes entry") for a in axes]
    )
    if len(set(axes)) != len(axes):
        raise ConversionError(f"axes {axes} repeat an axis")
    shape = ctx.input(1)
    sshape = shape.ty.shape
    if sshape is None or len(sshape) != 1 or sshape[0] not in (len(axes), ANY):
        raise ConversionError(f"shape must hold one size per axis of {axes}, got {shape.ty}")
    given = ctx.const(1)
    if given is not None and all(isinstance(x.ty.shape[a], int) for a in axes):
        targets = [int(v) for v in given.reshape(-1)]
        if any(v < 0 for v in targets):
            raise ConversionError(f"shape {targets} has a negative size")
        begin, end, pads = [], [], [0] * (2 * rank)
        for a, tgt in zip(axes, targets, strict=True):
            d = x.ty.shape[a]
            start = max(d - tgt, 0) // 2
            begin.append(start)
            end.append(start + min(d, tgt))
            grow = max(tgt - d, 0)
            pads[a], pads[rank + a] = grow // 2, grow - grow // 2
        y = ctx.call("strided_slice", x, begin=begin, end=end, axes=axes)
        return ctx.call("pad", y, pads=pads) if any(pads) else y
    shape = cast_to(ctx, shape, I64)
    zero, one, two = (ctx.constant(v, I64) for v in (0, 1, 2))
    y = x
    before = [ctx.constant([0], I64)] * rank
    after = [ctx.constant([0], I64)] * rank
    for k, a in enumerate(axes):
        tgt = item_i64(ctx, shape, k)
        d = dim_value(ctx, x, a)
        crop = ctx.call("maximum", ctx.call("subtract", d, tgt), zero)
        start = ctx.call("floor_divide", crop, two)
        stop = ctx.call("add", start, ctx.call("minimum", d, tgt))
        y = ctx.call("take", y, index_range(ctx, start, stop, one), axis=a)
        grow = ctx.call("maximum", ctx.call("subtract", tgt, d), zero)
        lo = ctx.call("floor_divide", grow, two)
        before[a] = ctx.call("reshape", lo, shape=[1])
        after[a] = ctx.call("reshape", ctx.call("subtract", grow, lo), shape=[1])
    pads = ctx.call("concat", *before, *after, axis=0)
    return ctx.call("pad", y, pads)


# ----- Pad mode wrap (called by the Pad converter) ----------------------------------------


def pad_wrap(ctx) -> Expr:
    """Pad in ``wrap`` mode: along each axis, positions ``-begin .. d + end - 1`` taken modulo
    the axis size ``d`` (a negative pad crops)."""
    x = ctx.input(0)
    rank = ctx.rank(0)
    axes = list(range(rank))
    if ctx.has(3):
        if ctx.const(3) is None:
            raise Unsupported("Pad wrap with computed axes")
        axes = [checked_axis(ctx, a, rank, "axes entry") for a in ctx.const_ints(3, "axes")]
    n = len(axes)
    given = ctx.const(1)
    pads = None if given is None else [int(p) for p in given.reshape(-1)]
    if pads is not None and len(pads) != 2 * n:
        raise ConversionError(f"pads {pads} must have two values per axis of {axes}")
    if pads is None:
        pt = ctx.input(1).ty.shape
        if pt is None or len(pt) != 1 or pt[0] not in (2 * n, ANY):
            raise ConversionError(f"pads must have {2 * n} values, got {ctx.input(1).ty}")
    padded = cast_to(ctx, ctx.input(1), I64) if pads is None else None
    y = x
    for k, a in enumerate(axes):
        d = x.ty.shape[a]
        if pads is not None:
            lo, hi = pads[k], pads[k + n]
            if lo == 0 and hi == 0:
                continue
            if isinstance(d, int):
                if d == 0:
                    raise ConversionError(f"cannot wrap-pad the empty axis {a}")
                if d + lo + hi < 0:
                    raise ConversionError(f"pads {lo}, {hi} crop more than axis {a} holds")
                if d + lo + hi > MAX_IMPORT_ELEMENTS:
                    raise Unsupported(f"Pad wrap to {d + lo + hi} positions")
                idx = ctx.constant(np.arange(-lo, d + hi) % d, I64)
                y = ctx.call("take", y, idx, axis=a)
                continue
            lo_e, hi_e = ctx.constant(lo, I64), ctx.constant(hi, I64)
        else:
            lo_e, hi_e = item_i64(ctx, padded, k), item_i64(ctx, padded, k + n)
        size = dim_value(ctx, x, a)
        stop = ctx.call("add", size, hi_e)
        idx = index_range(ctx, ctx.call("neg", lo_e), stop, ctx.constant(1, I64))
        idx = ctx.call("mod", idx, size)
        y = ctx.call("take", y, idx, axis=a)
    return y if y is not x else ctx.call("identity", x)


# ----- Unique -----------------------------------------------------------------------------


@converter("Unique", attrs=("axis", "sorted"), min_version=11)
def _unique(ctx):
    """The distinct elements (or slices along ``axis``), sorted or in order of first
    occurrence, with their first indices, each element's group and the group sizes. Rows
    (slices flattened) are compared pairwise: ``eq[p, q]``, and ``less[p, q]`` from the first
    column where they differ; the first occurrences are ``nonzero`` of "no equal row before"."""
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = ctx.attr("axis")
    sort = bool(ctx.attr("sorted", 1))
    if axis is None:
        flat = ctx.call("reshape", x, shape=[-1])
        rows = ctx.call("unsqueeze", flat, axes=[1])
        source, along = flat, 0
    else:
        if rank == 0:
            raise ConversionError("axis given for a scalar input")
        along = checked_axis(ctx, axis, rank)
        moved = x
        if along:
            perm = [along] + [k for k in range(rank) if k != along]
            moved = ctx.call("permute_dims", x, axes=perm)
        rows = (
            ctx.call("flatten", moved, start_dim=1, end_dim=rank - 1)
            if rank > 1
            else ctx.call("unsqueeze", moved, axes=[1])
        )
        source = x
    n, m = rows.ty.shape
    if isinstance(m, int) and m == 0:
        raise Unsupported("Unique of empty slices")
    if m is ANY and axis is not None:
        raise Unsupported("Unique along an axis with slices of unknown size")
    _check_pairwise(ctx, rows.ty.shape, n, "of")
    rp = ctx.call("unsqueeze", rows, axes=[1])  # [n, 1, m]
    rq = ctx.call("unsqueeze", rows, axes=[0])  # [1, n, m]
    ne = ctx.call("not_equal", rp, rq)
    ne_i = cast_to(ctx, ne, I64)
    eq = ctx.call("equal", ctx.call("sum", ne_i, axes=[2]), ctx.constant(0, I64))  # [p, q]
    eq_i = cast_to(ctx, eq, I64)
    idx = _arange(ctx, rows, 0)
    earlier = ctx.call(
        "less", ctx.call("unsqueeze", idx, axes=[1]), ctx.call("unsqueeze", idx, axes=[0])
    )
    repeats = cast_to(ctx, ctx.call("logical_and", eq, earlier), I64)
    first = ctx.call("equal", ctx.call("sum", repeats, axes=[0]), ctx.constant(0, I64))  # [q]
    first_i = cast_to(ctx, first, I64)
    pos = ctx.call("take", ctx.call("nonzero", first), ctx.constant(0, I64), axis=0)  # [u]
    counts_all = ctx.call("sum", eq_i, axes=[0])
    if sort:
        differs = ctx.call("argmax", ne_i, axis=2, keepdims=True)
        lt = ctx.call("less", rp, rq)
        less = ctx.call("squeeze", ctx.call("gather_elements", lt, differs, axis=2), axes=[2])
        first_col = ctx.call("unsqueeze", first_i, axes=[1])
        below = ctx.call("multiply", first_col, cast_to(ctx, less, I64))
        inverse = ctx.call("sum", below, axes=[0])  # unique rows less than each row
        order = ctx.call(
            "scatter_elements", pos, ctx.call("take", inverse, pos, axis=0), pos, axis=0
        )
    else:
        order = pos
        group_first = ctx.call("argmax", eq_i, axis=0)  # the first row equal to each
        before = ctx.call("cumsum", first_i, axis=0, exclusive=True)
        inverse = ctx.call("take", before, group_first, axis=0)
    y = ctx.call("take", source, order, axis=along)
    counts = ctx.call("take", counts_all, order, axis=0)
    return y, order, inverse, counts
