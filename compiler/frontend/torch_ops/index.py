"""Converters of ATen indexing operators: embedding and gathers, scatters, advanced indexing
and ``index_put``, top-k and sorting, histograms, triangles and one-hot, and the windows of
``col2im`` (nn.Fold, a scatter-add) and ``Tensor.unfold`` (a gather)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import converts, op_name
from compiler.frontend.torch_ops.common import (
    as_tensor,
    cast,
    dtype_of,
    int_list,
    literal_arg,
    positive_axis,
    rank_of,
    recorded_shape,
    scaled_by,
)
from compiler.frontend.torch_ops.shape import broadcast_along
from compiler.ir.nodes import Constant, Expr, TupleGetItem, call
from compiler.ir.nodes import Tuple as IRTuple
from compiler.ir.shape_inference import broadcast_shapes
from compiler.ir.symbolic import Dim, dim_mul
from compiler.ir.types import DType


@converts("aten.tril.default", "aten.triu.default")
def _triangle(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    op = op_name(node)
    return call(op, a["self"], k=a["diagonal"])


@converts("aten.one_hot.default")
def _one_hot(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    depth = recorded_shape(ctx)[-1]
    if not isinstance(depth, int):
        raise FrontendError("one_hot needs num_classes")
    return call("one_hot", a["self"], depth=depth, dtype=ctx.out_dtype)


# ----- indexing --------------------------------------------------------------------------------


@converts("aten.embedding.default")
def _embedding(ctx, node, args, kwargs):
    weight, indices = args[0], args[1]
    return call("take", weight, indices, axis=0)


@converts("aten.index_select.default")
def _index_select(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    return call("take", x, a["index"], axis=positive_axis(int(a["dim"]), rank_of(x)))


@converts("aten.gather.default")
def _gather(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    return call("gather_elements", x, a["index"], axis=positive_axis(int(a["dim"]), rank_of(x)))


_SCATTER_REDUCE = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul",
                   "amax": "max", "amin": "min"}  # fmt: skip


def _scatter_check(node) -> str | None:
    reduce = literal_arg(node, "reduce", None)
    if reduce is not None and reduce not in _SCATTER_REDUCE:
        return f"scatter with reduce={reduce!r}"
    if op_name(node) == "scatter_reduce" and not literal_arg(node, "include_self", True):
        return "scatter_reduce with include_self=False"
    return None


@converts(
    "aten.scatter.value",
    "aten.scatter.src",
    "aten.scatter.value_reduce",
    "aten.scatter.reduce",
    "aten.scatter_add.default",
    "aten.scatter_reduce.two",
    check=_scatter_check,
)
def _scatter(ctx, node, args, kwargs):
    """``torch.scatter`` / ``scatter_add`` / ``scatter_reduce`` (include_self): a
    ``scatter_elements`` (with duplicate indices the last write wins; torch leaves that
    order unspecified)."""
    a = ctx.arg(args, kwargs)
    x, index = a["self"], a["index"]
    axis = positive_axis(int(a["dim"]), rank_of(x))
    src = a.get("src", a.get("value"))
    if isinstance(src, Expr) and rank_of(src) > 0:
        updates = cast(src, dtype_of(x))
    else:  # a number (or a 0-d tensor) written at every index
        updates = call("broadcast_to", as_tensor(src, dtype_of(x)), shape=list(index.ty.shape))
    reduce = a.get("reduce")
    if op_name(node) == "scatter_add":
        reduce = "sum"
    reduction = "none" if reduce is None else _SCATTER_REDUCE[reduce]
    return call("scatter_elements", x, index, updates, axis=axis, reduction=reduction)


@converts("aten.index_add.default")
def _index_add(ctx, node, args, kwargs):
    """``x.index_add(dim, index, source, alpha)``: ``source * alpha`` added at the rows
    ``index`` along ``dim`` (duplicates accumulate)."""
    a = ctx.arg(args, kwargs)
    x, index, source = a["self"], a["index"], a["source"]
    rank = rank_of(x)
    axis = positive_axis(int(a["dim"]), rank)
    source = scaled_by(cast(source, dtype_of(x)), a.get("alpha", 1))
    if rank == 0:
        return call("add", x, source)
    positions = broadcast_along(cast(index, DType.int64), axis, rank)
    positions = call("broadcast_to", positions, shape=list(source.ty.shape))
    return call("scatter_elements", x, positions, source, axis=axis, reduction="add")


def _index_check(node) -> str | None:
    indices = node.args[1] if len(node.args) > 1 else []
    if not [i for i in indices if i is not None]:
        return "indexing with no index tensor"
    return None


@converts("aten.index.Tensor", check=_index_check)
def _index(ctx, node, args, kwargs):
    """``x[i]`` along one axis is a take; ``x[i0, i1, ...]`` with several index tensors
    (broadcast together, as numpy's advanced indexing; transformers' mask builders do it) is a
    take of the flat index ``i0 * s0 + i1 * s1 + ...`` from ``x`` with those axes merged.
    Index tensors separated by a full slice put their dims first, as in numpy."""
    x, indices = args[0], _mask_positions(list(args[1]))
    axes = [i for i, t in enumerate(indices) if t is not None]
    if len(axes) == 1:
        return call("take", x, indices[axes[0]], axis=axes[0])
    index = [indices[a] for a in axes]
    shape = list(x.ty.shape)
    if axes != list(range(axes[0], axes[-1] + 1)):  # not adjacent: the indexed dims go first
        order = axes + [a for a in range(len(shape)) if a not in axes]
        x = call("permute_dims", x, axes=order)
        shape = [shape[a] for a in order]
        axes = list(range(len(axes)))
    dims = [shape[a] for a in axes]
    merged = shape[: axes[0]] + [_dim_prod(dims)] + shape[axes[-1] + 1 :]
    return call("take", call("reshape", x, shape=merged), _flat_index(index, dims), axis=axes[0])


def _mask_positions(indices: list) -> list:
    """Index tensors with each bool mask (covering as many axes as its rank) replaced by the
    positions of its true elements, one index tensor per axis: ``x[mask]`` is
    ``x[nonzero(mask)[0], nonzero(mask)[1], ...]``, of a length known only at run time."""
    out: list = []
    for t in indices:
        if t is None or dtype_of(t) is not DType.bool:
            out.append(t)
            continue
        positions = call("nonzero", t)
        out += [
            call("take", positions, as_tensor(k, DType.int64), axis=0) for k in range(rank_of(t))
        ]
    return out


def _dim_prod(dims: Sequence[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = dim_mul(out, d)
    return out


def _flat_index(index: list[Expr], dims: list[Dim]) -> Expr:
    """``i0 * s0 + i1 * s1 + ...``: the position in ``dims`` (static or symbolic) merged into
    one axis of the index tensors (broadcast together; a negative index counts from the end of
    its dim)."""
    zero = as_tensor(0, DType.int64)
    flat = None
    for k, (i, d) in enumerate(zip(index, dims, strict=True)):
        i = cast(i, DType.int64)
        i = call("where", call("less", i, zero), call("add", i, as_tensor(d, DType.int64)), i)
        stride = _dim_prod(dims[k + 1 :])
        term = i if stride == 1 else call("multiply", i, as_tensor(stride, DType.int64))
        flat = term if flat is None else call("add", flat, term)
    return flat


def _index_put_check(node) -> str | None:
    indices = node.args[1] if len(node.args) > 1 else []
    vals = [t.meta.get("val") if hasattr(t, "meta") else None for t in indices]
    masks = [v for v in vals if v is not None and v.dtype is torch.bool]
    if not masks:
        return None
    if len(masks) != len([t for t in indices if t is not None]):
        return "index_put mixing a bool mask with integer index tensors"
    values = node.args[2].meta.get("val") if hasattr(node.args[2], "meta") else None
    shape = list(getattr(values, "shape", ()))
    while shape and type(shape[0]) is int and shape[0] == 1:  # a SymInt may not be compared
        shape.pop(0)
    first = next(i for i, t in enumerate(indices) if t is not None)
    after = node.args[0].meta["val"].dim() - first - sum(m.dim() for m in masks)
    if len(shape) > after:  # one value per selected element: data-dependent positions
        return "index_put with a bool mask and one value per selected element (x[m] = y[m])"
    return None


@converts("aten.index_put.default", "aten.index_put_.default", check=_index_put_check)
def _index_put(ctx, node, args, kwargs):
    """``x[i0, i1, ...] = values`` (``accumulate``: ``+=``): index tensors broadcast together
    (numpy's advanced indexing), on adjacent axes or not (then the indexed dims come first in
    the shape the values broadcast to), and bool masks (``x[mask] = v``, v the same for every
    selected element: a ``where``). Integer indices are a scatter of the values along the
    merged indexed axes at the flat index ``i0 * s0 + i1 * s1 + ...``; with repeated positions
    and no accumulate the last value wins (torch leaves it unspecified)."""
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    x, indices, values = cast(a["self"], dtype), list(a["indices"]), cast(a["values"], dtype)
    accumulate = bool(a["accumulate"])
    axes = [i for i, t in enumerate(indices) if t is not None]
    if not axes:
        raise FrontendError("index_put with no index tensor")
    if any(dtype_of(indices[i]) is DType.bool for i in axes):
        return _masked_put(x, [indices[i] for i in axes], axes[0], values, accumulate)
    shape = list(x.ty.shape)
    if axes != list(range(axes[0], axes[-1] + 1)):  # not adjacent: the indexed axes go first
        order = axes + [i for i in range(len(shape)) if i not in axes]
        moved = call("permute_dims", x, axes=order)
        index = [indices[i] for i in axes]
        out = _scatter_put(moved, index, list(range(len(axes))), values, accumulate)
        return call("permute_dims", out, axes=[order.index(i) for i in range(len(shape))])
    return _scatter_put(x, [indices[i] for i in axes], axes, values, accumulate)


def _masked_put(x: Expr, masks: list[Expr], first: int, values: Expr, add: bool) -> Expr:
    """``x[..., mask, ...] = v`` (bool masks covering the axes from ``first`` on), v the
    same for every selected element: ``where(mask, v, x)`` (``x + where(mask, v, 0)``)."""
    covered = sum(rank_of(m) for m in masks)
    after = rank_of(x) - first - covered
    mask = masks[0]
    for m in masks[1:]:  # x[m1, m2]: both masks, one after the other
        inner = [1] * rank_of(mask) + list(m.ty.shape)
        left = call("reshape", mask, shape=list(mask.ty.shape) + [1] * rank_of(m))
        mask = call("logical_and", left, call("reshape", m, shape=inner))
    mask = call("reshape", mask, shape=list(mask.ty.shape) + [1] * after)
    if add:
        return call("add", x, call("where", mask, values, as_tensor(0, dtype_of(x))))
    return call("where", mask, values, x)


def _scatter_put(x: Expr, index: list[Expr], axes: list[int], values: Expr, add: bool) -> Expr:
    """``x[..., i0, i1, ..., ...] = values`` with the index tensors on the adjacent ``axes``."""
    shape = list(x.ty.shape)
    dims = [shape[i] for i in axes]
    index = [cast(t, DType.int64) for t in index]
    pre, post = shape[: axes[0]], shape[axes[-1] + 1 :]
    picked = list(broadcast_shapes(*[t.ty.shape for t in index]))  # the shape x[i0, i1] has
    n = _dim_prod(picked)
    flat = call("broadcast_to", _flat_index(index, dims), shape=picked)
    flat = call("reshape", flat, shape=[n])
    lead, tail = len(pre), len(post)
    flat = call("reshape", flat, shape=[1] * lead + [n] + [1] * tail)
    flat = call("broadcast_to", flat, shape=pre + [n] + post)
    values = call("broadcast_to", values, shape=pre + picked + post)
    values = call("reshape", values, shape=pre + [n] + post)
    merged = call("reshape", x, shape=pre + [_dim_prod(dims)] + post)
    reduction = "add" if add else "none"
    out = call("scatter_elements", merged, flat, values, axis=lead, reduction=reduction)
    return call("reshape", out, shape=shape)


@converts("aten.topk.default")
def _topk(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    # an unsorted topk may return its values in any order: the sorted order is one of them
    out = call("topk", x, k=int(a["k"]), axis=int(a["dim"]), largest=bool(a["largest"]))
    return TupleGetItem(out, 0), TupleGetItem(out, 1)


def _sort_order(x: Expr, dim: int, descending: bool, what: str) -> Expr:
    """The (values, indices) of a stable sort of ``x`` along ``dim``: a ``topk`` of the whole
    axis (its order is stable: ties keep the lower index first, ascending or descending; nan
    sorts as the largest value, last ascending and first descending, as in torch)."""
    rank = rank_of(x)
    if rank == 0:  # torch sorts a 0-d tensor as one element
        one = call("unsqueeze", x, axes=[0])
        out = call("topk", one, k=1, axis=0, largest=bool(descending))
        squeeze = [call("squeeze", TupleGetItem(out, i), axes=[0]) for i in range(2)]
        return IRTuple(squeeze)
    axis = positive_axis(int(dim), rank)
    if not 0 <= axis < rank:
        raise FrontendError(f"{what}: dim {dim} is out of range for a tensor of rank {rank}")
    n = x.ty.shape[axis]
    k = n if isinstance(n, int) else -1  # -1: the whole axis, of a symbolic size
    return call("topk", x, k=k, axis=axis, largest=bool(descending))


@converts("aten.sort.default", "aten.sort.stable")
def _sort(ctx, node, args, kwargs):
    """``torch.sort``, always stable. Without ``stable=True`` torch's CPU sort orders ties
    as std::sort leaves them (stable up to 16 elements along the axis, not beyond): the
    values agree, the indices of equal values may not (torch leaves that order unspecified;
    the same holds for ``topk``)."""
    a = ctx.arg(args, kwargs)
    out = _sort_order(a["self"], a["dim"], a["descending"], "sort")
    return TupleGetItem(out, 0), TupleGetItem(out, 1)


@converts("aten.argsort.default", "aten.argsort.stable")
def _argsort(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    return TupleGetItem(_sort_order(a["self"], a["dim"], a["descending"], "argsort"), 1)


def _rounded_steps(steps: list, dtype: DType) -> Expr:
    """``((a op1 b) op2 c) ...`` with every step rounded to ``dtype`` as IEEE arithmetic in
    ``dtype`` rounds it: for float32 each step is done in float64 and cast back (exact: a
    +, -, *, / in float64 rounded to float32 is the float32 result), so the compiled
    backend, which may contract and reassociate float arithmetic, cannot move a bin edge."""
    wide = DType.float64 if dtype is DType.float32 else dtype
    value = None
    for op, a, b in steps:
        a = value if a is None else a
        value = cast(call(op, cast(a, wide), cast(b, wide)), dtype)
    return value


@converts("aten.histc.default")
def _histc(ctx, node, args, kwargs):
    """``torch.histc``: counts of the elements in ``bins`` equal bins over [min, max] (the
    data's range when min == max, widened by 1 each way when that is one value; elements
    outside, and nans, are not counted). As torch's CPU kernel: bin
    ``int((x - min) * bins / (max - min))`` in the input's dtype, the last bin closed. A
    scatter-add of ones, the elements outside sent to an extra bin that is dropped. (A data
    range that is not finite, which torch refuses at run time, counts nothing here.)"""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    dtype = dtype_of(x)
    if not dtype.is_float:
        raise FrontendError(f"histc of {dtype} input (torch takes floating-point input only)")
    bins = int(a["bins"])
    if bins <= 0:
        raise FrontendError(f"histc needs bins > 0, got {bins}")
    lo_v, hi_v = float(a["min"]), float(a["max"])
    if lo_v > hi_v:
        raise FrontendError(f"histc: max ({hi_v}) must be larger than min ({lo_v})")
    flat = call("reshape", x, shape=[-1])
    if lo_v == hi_v:  # the data's range
        lo, hi = call("min", flat), call("max", flat)
        same = call("equal", lo, hi)
        one = as_tensor(1, dtype)
        lo = call("where", same, call("subtract", lo, one), lo)
        hi = call("where", same, call("add", hi, one), hi)
    else:
        lo, hi = as_tensor(lo_v, dtype), as_tensor(hi_v, dtype)
    inside = call("logical_and", call("greater_equal", flat, lo), call("less_equal", flat, hi))
    scaled = _rounded_steps(
        [("subtract", flat, lo), ("multiply", None, as_tensor(bins, dtype)),
         ("divide", None, call("subtract", hi, lo))], dtype)  # fmt: skip
    pos = call("cast", call("where", inside, scaled, as_tensor(0, dtype)), dtype=DType.int64)
    pos = call("minimum", pos, as_tensor(bins - 1, DType.int64))
    pos = call("where", inside, pos, as_tensor(bins, DType.int64))
    ones = call("broadcast_to", as_tensor(1, dtype), shape=list(flat.ty.shape))
    zeros = Constant(np.zeros(bins + 1, dtype.numpy))
    counts = call("scatter_elements", zeros, pos, ones, axis=0, reduction="add")
    return call("strided_slice", counts, begin=[0], end=[bins], axes=[0])


@converts("aten.bincount.default")
def _bincount(ctx, node, args, kwargs):
    """``torch.bincount``: the ``bincount`` op, whose length depends on the data (a '?' dim,
    as nonzero's; the compiled backend runs it on the host)."""
    a = ctx.arg(args, kwargs)
    x, weights, minlength = a["self"], a.get("weights"), int(a["minlength"])
    if rank_of(x) != 1 or not dtype_of(x).is_int:
        raise FrontendError(f"bincount takes a 1-D tensor of integers, got {x.ty}")
    extra = [] if weights is None else [weights]
    return call("bincount", x, *extra, minlength=minlength, dtype=ctx.out_dtype)


# ----- col2im (nn.Fold): im2col's scatter-add (im2col, a gather of slices, is in shape.py) ------


def _col2im_grid(shape, output_size, kernel_size, dilation, padding, stride) -> tuple | str:
    """col2im's geometry: (channels, (h, w), (oh, ow), kernel, dilation, padding, stride) for
    columns of ``shape``, or why they do not fit (a crafted program can name any arguments:
    that use is left to torch, whose refusal is the run's error)."""
    if len(shape) not in (2, 3):
        return f"col2im of a rank-{len(shape)} input (2-D or 3-D columns)"
    rows, length = shape[-2:]
    if not all(isinstance(d, int) for d in (rows, length, *output_size)):
        return "col2im (nn.Fold) of symbolic sizes"
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (
        int_list(v, 2) for v in (output_size, kernel_size, dilation, padding, stride)
    )
    if min(h, w, kh, kw, dh, dw, sh, sw) < 1 or min(ph, pw) < 0:
        return "col2im with a size, kernel, dilation or stride below 1, or a negative padding"
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if rows % (kh * kw) or oh < 1 or ow < 1 or oh * ow != length:
        return f"col2im: {rows} x {length} columns do not fit a {kh}x{kw} kernel on {h}x{w}"
    return rows // (kh * kw), (h, w), (oh, ow), (kh, kw), (dh, dw), (ph, pw), (sh, sw)


def _col2im_check(node) -> str | None:
    val = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
    if val is None:
        return None
    grid = _col2im_grid(list(val.shape), *node.args[1:6])
    return grid if isinstance(grid, str) else None


@converts("aten.col2im.default", check=_col2im_check)
def _col2im(ctx, node, args, kwargs):
    """torch's Fold, im2col's adjoint: row ``c * kh * kw + i * kw + j`` of the columns is the
    image of kernel offset (i, j) on the window grid; spread to the stride (zeros between)
    and padded into place (a negative pad crops what falls in the padding), the kh * kw images
    are added in torch's order (i, then j), so each pixel's sum is the one torch computes."""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    names = ("output_size", "kernel_size", "dilation", "padding", "stride")
    grid = _col2im_grid(list(x.ty.shape), *(a[n] for n in names))
    if isinstance(grid, str):
        raise FrontendError(grid)
    channels, (h, w), (oh, ow), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = grid
    lead = list(x.ty.shape[:-2])
    # [*, C, kh, kw, oh, 1, ow, 1] padded to the stride: [*, C, kh, kw, oh * sh, ow * sw]
    y = call("reshape", x, shape=[*lead, channels, kh, kw, oh, 1, ow, 1])
    if sh > 1 or sw > 1:
        ends = [0] * (len(lead) + 4) + [sh - 1, 0, sw - 1]
        y = call("pad", y, pads=[0] * len(ends) + ends, mode="constant", value=0.0)
    y = call("reshape", y, shape=[*lead, channels, kh, kw, oh * sh, ow * sw])
    axes = [len(lead) + 1, len(lead) + 2]
    out = None
    for i in range(kh):
        for j in range(kw):
            piece = call("strided_slice", y, begin=[i, j], end=[i + 1, j + 1], axes=axes)
            piece = call("reshape", piece, shape=[*lead, channels, oh * sh, ow * sw])
            top, left = i * dh - ph, j * dw - pw
            begins = [0] * (len(lead) + 1) + [top, left]
            ends = [0] * (len(lead) + 1) + [h - top - oh * sh, w - left - ow * sw]
            piece = call("pad", piece, pads=begins + ends, mode="constant", value=0.0)
            out = piece if out is None else call("add", out, piece)
    return out


# ----- Tensor.unfold (sliding windows along one axis) ------------------------------------------


def _unfold_check(node) -> str | None:
    val = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
    if val is None:
        return None
    if val.dim() == 0:
        return "unfold of a 0-d tensor"
    dim, size, step = node.args[1:4]
    if not all(isinstance(v, int) for v in (dim, size, step)) or not -val.dim() <= dim < val.dim():
        return "unfold with a dimension, size or step that is not a number in range"
    length = val.shape[positive_axis(dim, val.dim())]
    if not isinstance(length, int):
        return "unfold along an axis of symbolic size"
    if size < 1 or step < 1 or size > length:
        return f"unfold: a window of {size} by steps of {step} on {length} elements"
    return None


@converts("aten.unfold.default", check=_unfold_check)
def _unfold(ctx, node, args, kwargs):
    """``x.unfold(dim, size, step)``: window ``k`` along ``dim`` is elements ``k * step`` to
    ``k * step + size - 1``, a new last axis. One ``take`` along ``dim`` of the (windows, size)
    index table (computed from two aranges, so a long axis puts no table in the module), then
    that axis moved last."""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    rank = rank_of(x)
    dim = positive_axis(int(a["dimension"]), rank)
    size, step = int(a["size"]), int(a["step"])
    count = (int(x.ty.shape[dim]) - size) // step + 1
    starts = call("arange", start=0, stop=count * step, step=step, dtype=DType.int64)
    offsets = call("arange", start=0, stop=size, dtype=DType.int64)
    index = call("add", call("unsqueeze", starts, axes=[1]), call("unsqueeze", offsets, axes=[0]))
    y = call("take", x, index, axis=dim)  # [..., count, size, ...]
    order = [k for k in range(rank + 1) if k != dim + 1] + [dim + 1]
    return y if dim == rank - 1 else call("permute_dims", y, axes=order)
