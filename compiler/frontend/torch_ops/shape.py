"""Converters of ATen operators on sizes and shapes: arithmetic on sizes (SymInt values), tuple
results, reshapes, permutations, concatenation and splits, slices, padding and tensor
factories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import ConvertContext, converts, op_name, target_name
from compiler.frontend.torch_ops.common import (
    as_tensor,
    cast,
    dim_tensor,
    dtype_of,
    int_list,
    literal_arg,
    positive_axis,
    rank_of,
    recorded_shape,
)
from compiler.ir.nodes import Call, Expr, TupleGetItem, call
from compiler.ir.symbolic import ANY, Dim, SymExpr
from compiler.ir.types import DType, TensorType, TupleType

# A slice bound this large means "to the end" for strided_slice (torch uses INT64_MAX).
_TO_END = 2**63 - 1


# ----- sizes (SymInt values) -------------------------------------------------------------------


@converts(
    "aten.sym_size.int",
    "aten.sym_numel.default",
    "operator.add",
    "operator.sub",
    "operator.mul",
    "operator.floordiv",
    "operator.mod",
    "operator.neg",
    "operator.pow",
    "operator.truediv",
    "torch.sym_max",
    "torch.sym_min",
    "torch.sym_float",
    "torch.sym_int",
    "torch.sym_not",
    "math.ceil",
    "math.floor",
)
def _size_value(ctx, node, args, kwargs):
    """Arithmetic on sizes: the value torch.export recorded, as a dim (or a plain number)."""
    val = node.meta.get("val")
    if val is None:
        raise FrontendError("torch recorded no value for this size computation")
    if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
        return ctx.dim(val)
    if isinstance(val, (torch.SymFloat, float)):
        expr = getattr(getattr(val, "node", None), "expr", val)
        try:
            return float(expr)
        except TypeError:
            return _SymbolicScalar(str(expr))
    return _SymbolicScalar(str(val))  # a SymBool, used only by torch.export's assertions


_SIZE_COMPARISONS = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}


@converts(*(f"operator.{name}" for name in _SIZE_COMPARISONS))
def _size_compare(ctx, node, args, kwargs):
    """A comparison of sizes: a Python bool when torch knows it, else a 0-d bool tensor
    computed from the sizes (a ``torch.cond`` predicate such as ``x.shape[0] > 4``)."""
    val = node.meta.get("val")
    if isinstance(val, bool):
        return val
    expr = getattr(getattr(val, "node", None), "expr", None)
    if expr is not None and expr.is_Boolean:
        return bool(expr)
    a, b = args[0], args[1]
    if not all(isinstance(v, (int, SymExpr)) and not isinstance(v, bool) for v in (a, b)):
        return _SymbolicScalar(str(val))
    op = _SIZE_COMPARISONS[target_name(node.target).split(".")[-1]]
    return call(op, dim_tensor(a), dim_tensor(b))


class _SymbolicScalar:
    """A symbolic float or bool the IR cannot hold; fine unless a tensor op needs it."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"the symbolic scalar {self.text}"


# Results of tuple-returning operators that converters do not produce (saved statistics,
# pooling indices): reading one is reported by the up-front check.
_UNSUPPORTED_RESULTS = {
    "aten._native_batch_norm_legit_no_training.default": {1: "saved mean", 2: "saved rstd"},
    "aten._native_batch_norm_legit.no_stats": {1: "saved mean", 2: "saved rstd"},
    "aten._native_batch_norm_legit.default": {1: "saved mean", 2: "saved rstd"},
    "aten.native_layer_norm.default": {1: "saved mean", 2: "saved rstd"},
    "aten.native_group_norm.default": {1: "saved mean", 2: "saved rstd"},
    "aten.max_pool2d_with_indices.default": {1: "indices"},
    "aten._scaled_dot_product_flash_attention_for_cpu.default": {1: "logsumexp"},
}


def _getitem_check(node) -> str | None:
    source, index = node.args[0], node.args[1]
    if not hasattr(source, "target") or not node.users:
        return None
    what = _UNSUPPORTED_RESULTS.get(target_name(source.target), {}).get(index)
    return f"the {what} output of {source.target}" if what else None


@converts("operator.getitem", check=_getitem_check)
def _getitem(ctx, node, args, kwargs):
    value, index = args
    if isinstance(value, Expr) and isinstance(value.ty, TupleType):
        return TupleGetItem(value, index)
    if isinstance(value, (list, tuple)):
        item = value[index]
        if item is None:
            raise FrontendError(f"output {index} of {node.args[0].name} is not supported")
        return item
    raise FrontendError(f"cannot index {value!r}")


# ----- shapes ----------------------------------------------------------------------------------


@converts(
    "aten.view.default",
    "aten.reshape.default",
    "aten._unsafe_view.default",
    "aten.view_copy.default",
    "aten._reshape_alias.default",
    "aten.unflatten.int",
)
def _reshape(ctx, node, args, kwargs):
    x = args[0]
    shape = recorded_shape(ctx)
    if ANY in shape:  # a data-dependent size (x[mask].view(-1, 4)): the rest determines it
        if shape.count(ANY) > 1:
            raise FrontendError("a reshape to a shape with several data-dependent sizes")
        shape = [-1 if d is ANY else d for d in shape]
    if isinstance(x.ty, TensorType) and x.ty.shape == tuple(shape):
        return x
    return call("reshape", x, shape=shape)


@converts("aten.flatten.using_ints")
def _flatten(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    if rank_of(x) == 0:
        return call("reshape", x, shape=[1])
    return call("flatten", x, start_dim=a["start_dim"], end_dim=a["end_dim"])


@converts("aten.permute.default", "aten.permute_copy.default")
def _permute(ctx, node, args, kwargs):
    x, dims = args[0], args[1]
    rank = rank_of(x)
    axes = [positive_axis(int(d), rank) for d in dims]
    if axes == list(range(rank)):
        return x
    return call("permute_dims", x, axes=axes)


@converts("aten.transpose.int", "aten.swapaxes.default", "aten.swapdims.default")
def _transpose(ctx, node, args, kwargs):
    x, d0, d1 = args[0], args[1], args[2]
    rank = rank_of(x)
    d0, d1 = positive_axis(int(d0), rank), positive_axis(int(d1), rank)
    if d0 == d1:
        return x
    axes = list(range(rank))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return call("permute_dims", x, axes=axes)


@converts("aten.t.default", "aten.numpy_T.default")
def _t(ctx, node, args, kwargs):
    x = args[0]
    if rank_of(x) < 2:
        return x
    return call("permute_dims", x, axes=list(reversed(range(rank_of(x)))))


@converts("aten.unsqueeze.default")
def _unsqueeze(ctx, node, args, kwargs):
    return call("unsqueeze", args[0], axes=[int(args[1])])


@converts("aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default")
def _squeeze(ctx, node, args, kwargs):
    x = args[0]
    rank = rank_of(x)
    out_rank = len(recorded_shape(ctx))
    if out_rank == rank:
        return x  # torch's squeeze of a dim whose size is not 1 does nothing
    if len(args) > 1:
        dims = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
        axes = [a for a in (positive_axis(int(d), rank) for d in dims) if x.ty.shape[a] == 1]
    else:
        axes = [i for i, d in enumerate(x.ty.shape) if d == 1]
    return call("squeeze", x, axes=axes)


@converts(
    "aten.expand.default",
    "aten.expand_copy.default",
    "aten.expand_as.default",
    "aten.broadcast_to.default",
)
def _expand(ctx, node, args, kwargs):
    x = args[0]
    shape = recorded_shape(ctx)
    if x.ty.shape == tuple(shape):
        return x
    return call("expand", x, shape=shape)


@converts("aten.repeat.default")
def _repeat(ctx, node, args, kwargs):
    x, reps = args[0], list(args[1])
    if all(isinstance(r, int) for r in reps):
        return call("tile", x, repeats=[int(r) for r in reps])
    # a symbolic count (``ids.repeat(batch, 1)``): tile's counts are static, so each axis of
    # size s repeated r times is (1, s) broadcast to (r, s) and merged into r * s
    shape = x.ty.shape if isinstance(x.ty, TensorType) else None
    if shape is None or ANY in shape:
        raise FrontendError("repeat by a symbolic count of a tensor of unknown shape")
    shape = (1,) * (len(reps) - len(shape)) + tuple(shape)
    split = [d for s in shape for d in (1, s)]
    wide = [d for r, s in zip(reps, shape, strict=True) for d in (r, s)]
    y = call("expand", call("reshape", x, shape=split), shape=wide)
    return call("reshape", y, shape=recorded_shape(ctx))


@converts("aten.repeat_interleave.self_int")
def _repeat_interleave(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    return call("repeat", a["self"], repeats=int(a["repeats"]), axis=a["dim"])


@converts("aten.meshgrid.default", "aten.meshgrid.indexing")
def _meshgrid(ctx, node, args, kwargs):
    """``torch.meshgrid``: each 0-d or 1-d input broadcast over the grid of all; ``xy``
    indexing swaps the first two grid dims (torch's default is ``ij``)."""
    a = ctx.arg(args, kwargs)
    tensors, indexing = list(a["tensors"]), a.get("indexing") or "ij"
    if indexing not in ("ij", "xy"):
        raise FrontendError(f"meshgrid indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if rank_of(t) > 1:
            raise FrontendError(f"meshgrid takes 0-d or 1-d tensors, got {t.ty}")
    flat = [call("reshape", t, shape=[1]) if rank_of(t) == 0 else t for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    order = list(range(len(flat)))
    if swap:  # the grid of (b, a, c, ...) with each input at its place in that order
        order[0], order[1] = 1, 0
    shape = [flat[i].ty.shape[0] for i in order]
    out = []
    for i, t in enumerate(flat):
        view = [1] * len(flat)
        view[order.index(i)] = t.ty.shape[0]
        out.append(call("broadcast_to", call("reshape", t, shape=view), shape=shape))
    return out


@converts("aten.cat.default", "aten.concat.default", "aten.concatenate.default")
def _cat(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    # torch skips 1-D empty tensors (the legacy "empty" tensor) in cat
    tensors = [cast(t, dtype) for t in a["tensors"] if t.ty.shape != (0,)]
    if len(tensors) == 1:
        return tensors[0]
    return Call("concat", tensors, {"axis": int(a["dim"])})


@converts("aten.stack.default")
def _stack(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    tensors = a["tensors"]
    rank = rank_of(tensors[0]) + 1
    axis = positive_axis(int(a["dim"]), rank)
    parts = [call("unsqueeze", cast(t, dtype), axes=[axis]) for t in tensors]
    return parts[0] if len(parts) == 1 else Call("concat", parts, {"axis": axis})


def _piece_sizes(ctx: ConvertContext, axis: int) -> list[Dim]:
    vals = ctx.node.meta.get("val")
    return [ctx.dim(v.shape[axis]) for v in vals]


def _split_by_sizes(x: Expr, axis: int, sizes: Sequence[Dim]) -> Expr | list[Expr]:
    """Pieces of ``x`` along ``axis``: one split op (a tuple value) when the split points are
    known numbers, else one take of an arange per piece."""
    points: list[Dim] = []
    total: Dim = 0
    for s in sizes[:-1]:
        total = total + s
        points.append(total)
    if all(isinstance(p, int) for p in points):
        if len(sizes) == 1:
            return [x]
        return call("split", x, indices_or_sections=points, axis=axis)
    pieces, start = [], 0
    for s in sizes:
        pieces.append(_slice_sym(x, axis, start, start + s, 1))
        start = start + s
    return pieces


@converts(
    "aten.split.Tensor",
    "aten.split_with_sizes.default",
    "aten.chunk.default",
    "aten.tensor_split.sections",
    "aten.tensor_split.indices",
    "aten.unsafe_split.Tensor",
    "aten.split_with_sizes_copy.default",
)
def _split(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = positive_axis(int(a["dim"]), rank_of(x))
    return _split_by_sizes(x, axis, _piece_sizes(ctx, axis))


@converts("aten.unbind.int")
def _unbind(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = positive_axis(int(a["dim"]), rank_of(x))
    n = x.ty.shape[axis]
    if not isinstance(n, int):
        raise FrontendError("unbind along a symbolic dim is not supported")
    pieces = _split_by_sizes(x, axis, [1] * n)
    if isinstance(pieces, list):
        return [call("squeeze", p, axes=[axis]) for p in pieces]
    return [call("squeeze", TupleGetItem(pieces, i), axes=[axis]) for i in range(n)]


def _slice_sym(x: Expr, axis: int, start: Dim, end: Dim, step: int) -> Expr:
    """``x[start:end:step]`` along ``axis`` with symbolic bounds (assumed inside the dim, as
    torch.export's guards say): a take of the indices ``arange(start, end, step)``."""
    idx = call("arange", start=start, stop=end, step=step, dtype=DType.int64)
    return call("take", x, idx, axis=axis)


@converts("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    rank = rank_of(x)
    axis = positive_axis(int(a["dim"]), rank)
    start = 0 if a["start"] is None else a["start"]
    end = _TO_END if a["end"] is None else a["end"]
    step = int(a["step"])
    size = x.ty.shape[axis]
    if isinstance(start, int) and isinstance(end, int):
        if isinstance(size, int):  # resolve the bounds so the IR shows plain indices
            start, end, _ = slice(start, end, step).indices(size)
            if start == 0 and end == size and step == 1:
                return x
        elif start == 0 and step == 1 and end >= _TO_END:
            return x
        strides = None if step == 1 else [step]
        return call("strided_slice", x, begin=[start], end=[end], strides=strides, axes=[axis])
    if isinstance(end, SymExpr) and end == size and start == 0 and step == 1:
        return x
    # a symbolic bound: count a negative int bound from the end, then take the indices
    start = size + start if isinstance(start, int) and start < 0 else start
    end = size if isinstance(end, int) and end >= _TO_END else end
    end = size + end if isinstance(end, int) and end < 0 else end
    return _slice_sym(x, axis, start, end, step)


def _positions(size: Dim) -> Expr:
    """``0 .. size-1`` (i64) along an axis of ``size``, static or symbolic."""
    return call("arange", start=0, stop=size, dtype=DType.int64)


def broadcast_along(v: Expr, axis: int, rank: int) -> Expr:
    """A 1-D ``v`` shaped to broadcast along ``axis`` of a rank-``rank`` tensor."""
    shape: list[Dim] = [1] * rank
    shape[axis] = v.ty.shape[0]
    return call("reshape", v, shape=shape)


@converts("aten.slice_scatter.default")
def _slice_scatter(ctx, node, args, kwargs):
    """``x`` with ``x[start:end:step]`` along ``dim`` replaced by ``src`` (what torch's
    functionalisation makes of a write into a slice): a ``where`` over the positions of the
    axis, reading ``src`` at ``(p - start) // step``."""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    src = cast(a["src"], dtype_of(x))
    rank = rank_of(x)
    axis = positive_axis(int(a["dim"]), rank)
    size = x.ty.shape[axis]
    step = int(a["step"])
    start = 0 if a["start"] is None else a["start"]
    end = _TO_END if a["end"] is None else a["end"]
    if isinstance(size, int) and isinstance(start, int) and isinstance(end, int):
        start, end, _ = slice(start, end, step).indices(size)
    else:  # a symbolic size or bound: count a negative int from the end (as ``slice``)
        start = size + start if isinstance(start, int) and start < 0 else start
        end = size if isinstance(end, int) and end >= _TO_END else end
        end = size + end if isinstance(end, int) and end < 0 else end
    count = src.ty.shape[axis]
    if isinstance(count, int) and count == 0:
        return x
    p = _positions(size)
    offset = call("subtract", p, dim_tensor(start))
    inside = call(
        "logical_and",
        call("greater_equal", p, dim_tensor(start)),
        call("less", p, dim_tensor(end)),
    )
    if step != 1:
        on_step = call("equal", call("mod", offset, as_tensor(step, DType.int64)),
                       as_tensor(0, DType.int64))  # fmt: skip
        inside = call("logical_and", inside, on_step)
        offset = call("floor_divide", offset, as_tensor(step, DType.int64))
    last = call("subtract", dim_tensor(count), as_tensor(1, DType.int64))
    index = call("minimum", call("maximum", offset, as_tensor(0, DType.int64)), last)
    spread = call("take", src, index, axis=axis)
    return call("where", broadcast_along(inside, axis, rank), spread, x)


@converts("aten.select_scatter.default")
def _select_scatter(ctx, node, args, kwargs):
    """``x`` with ``x.select(dim, index)`` replaced by ``src``."""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    rank = rank_of(x)
    axis = positive_axis(int(a["dim"]), rank)
    size = x.ty.shape[axis]
    index = a["index"]
    if isinstance(index, int) and index < 0:
        index = size + index
    src = call("unsqueeze", cast(a["src"], dtype_of(x)), axes=[axis])
    mask = call("equal", _positions(size), dim_tensor(index))
    return call("where", broadcast_along(mask, axis, rank), src, x)


@converts("aten.copy.default")
def _copy(ctx, node, args, kwargs):
    """``x.copy_(src)`` made functional: ``src`` in ``x``'s dtype and shape."""
    a = ctx.arg(args, kwargs)
    x, src = a["self"], a["src"]
    src = as_tensor(src, dtype_of(x))
    if src.ty.shape != x.ty.shape:
        src = call("broadcast_to", src, shape=list(x.ty.shape))
    return src


@converts("aten.diff.default")
def _diff(ctx, node, args, kwargs):
    """``torch.diff``: ``x[1:] - x[:-1]`` along ``dim``, ``n`` times, after ``prepend`` and
    ``append`` are joined on (for bool, ``x[1:] != x[:-1]``: torch's logical xor)."""
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    x = cast(a["self"], dtype)
    axis = positive_axis(int(a["dim"]), rank_of(x))
    parts = [cast(a["prepend"], dtype)] if a.get("prepend") is not None else []
    parts.append(x)
    if a.get("append") is not None:
        parts.append(cast(a["append"], dtype))
    if len(parts) > 1:
        x = Call("concat", parts, {"axis": axis})
    for _ in range(int(a["n"])):
        size = x.ty.shape[axis]
        if isinstance(size, int):
            hi = call("strided_slice", x, begin=[1], end=[size], axes=[axis])
            lo = call("strided_slice", x, begin=[0], end=[size - 1], axes=[axis])
        else:
            hi, lo = _slice_sym(x, axis, 1, size, 1), _slice_sym(x, axis, 0, size - 1, 1)
        x = call("not_equal" if dtype is DType.bool else "subtract", hi, lo)
    return x


@converts("aten.narrow.default", "aten.narrow_copy.default")
def _narrow(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = positive_axis(int(a["dim"]), rank_of(x))
    start, length = a["start"], a["length"]
    if isinstance(start, int) and isinstance(length, int):
        if start < 0:
            start = start + x.ty.shape[axis]
        if isinstance(start, int):
            return call("strided_slice", x, begin=[start], end=[start + length], axes=[axis])
    return _slice_sym(x, axis, start, start + length, 1)


@converts("aten.select.int", "aten.select_copy.int")
def _select(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = positive_axis(int(a["dim"]), rank_of(x))
    index = a["index"]
    if isinstance(index, int):
        size = x.ty.shape[axis]
        if isinstance(size, int) and -size <= index < 0:
            index += size
        end = index + 1 if index != -1 else _TO_END
        piece = call("strided_slice", x, begin=[index], end=[end], axes=[axis])
        return call("squeeze", piece, axes=[axis])
    return call("take", x, dim_tensor(index), axis=axis)


@converts("aten.flip.default")
def _flip(ctx, node, args, kwargs):
    x, dims = args[0], args[1]
    rank = rank_of(x)
    axes = [positive_axis(int(d), rank) for d in dims]
    n = len(axes)
    return call("strided_slice", x, begin=[-1] * n, end=[-_TO_END] * n, strides=[-1] * n, axes=axes)


@converts("aten.roll.default")
def _roll(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    shifts, dims = list(a["shifts"]), list(a["dims"])
    if not dims:
        flat = call("reshape", x, shape=[-1])
        out = _roll_axis(flat, 0, int(shifts[0]))
        return call("reshape", out, shape=list(x.ty.shape))
    for s, d in zip(shifts, dims, strict=True):
        x = _roll_axis(x, positive_axis(int(d), rank_of(x)), int(s))
    return x


def _roll_axis(x: Expr, axis: int, shift: int) -> Expr:
    n = x.ty.shape[axis]
    if not isinstance(n, int):
        raise FrontendError("roll along a symbolic dim is not supported")
    shift %= max(n, 1)
    if shift == 0:
        return x
    tail = call("strided_slice", x, begin=[n - shift], end=[n], axes=[axis])
    head = call("strided_slice", x, begin=[0], end=[n - shift], axes=[axis])
    return call("concat", tail, head, axis=axis)


def _torch_pads(pad: Sequence[int], rank: int) -> list[int]:
    """torch's pad list (last dim first, (begin, end) pairs) in ONNX order (begins, ends)."""
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise FrontendError(f"pad {pad} does not fit a rank-{rank} input")
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i] = pad[2 * i]
        ends[rank - 1 - i] = pad[2 * i + 1]
    return begins + ends


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def _pad_check(node) -> str | None:
    mode = literal_arg(node, "mode", "constant")
    if mode not in _PAD_MODES:
        return f"pad mode {mode!r}"
    return None


@converts("aten.constant_pad_nd.default", "aten.pad.default", check=_pad_check)
def _pad(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    mode = _PAD_MODES[a.get("mode") or "constant"]
    value = a.get("value")
    pads = _torch_pads(a["pad"], rank_of(x))
    return call("pad", x, pads=pads, mode=mode, value=float(value or 0.0))


for _nd in (1, 2, 3):
    for _kind, _mode in (("reflection", "reflect"), ("replication", "edge")):

        def _pad_nd(ctx, node, args, kwargs, _mode=_mode):
            x, padding = args[0], args[1]
            return call("pad", x, pads=_torch_pads(padding, rank_of(x)), mode=_mode)

        converts(f"aten.{_kind}_pad{_nd}d.default")(_pad_nd)


# ----- tensor factories ------------------------------------------------------------------------


@converts("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    start = a.get("start", 0)
    end = a["end"]
    step = a.get("step", 1)
    for v in (start, end, step):
        if isinstance(v, _SymbolicScalar):
            raise FrontendError(f"arange bound {v} is not supported")
    return call("arange", start=start, stop=end, step=step, dtype=ctx.out_dtype)


def _fill_value(value: Any) -> float:
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.number)):
        return float(value)
    raise FrontendError(f"fill value {value!r} must be a number")


@converts(
    "aten.full.default",
    "aten.zeros.default",
    "aten.ones.default",
    "aten.empty.memory_format",
    "aten.new_full.default",
    "aten.new_zeros.default",
    "aten.new_ones.default",
    "aten.new_empty.default",
    "aten.scalar_tensor.default",
)
def _full(ctx, node, args, kwargs):
    name = op_name(node)
    shape = recorded_shape(ctx)
    dtype = ctx.out_dtype
    if name in ("full", "new_full"):
        value = ctx.arg(args, kwargs)["fill_value"]
        if isinstance(value, Expr):
            return call("expand", cast(value, dtype), shape=shape)
        return call("full", shape=shape, value=_fill_value(value), dtype=dtype)
    if name == "scalar_tensor":
        return as_tensor(args[0], dtype)
    if name in ("ones", "new_ones"):
        return call("ones", shape=shape, dtype=dtype)
    return call("zeros", shape=shape, dtype=dtype)  # empty: any value will do; zeros is one


@converts(
    "aten.full_like.default",
    "aten.zeros_like.default",
    "aten.ones_like.default",
    "aten.empty_like.default",
)
def _like(ctx, node, args, kwargs):
    name = op_name(node)
    x = args[0]
    dtype = ctx.out_dtype
    if name == "full_like":
        value = ctx.arg(args, kwargs)["fill_value"]
        return call("full_like", x, value=_fill_value(value), dtype=dtype)
    op = "ones_like" if name == "ones_like" else "zeros_like"
    return call(op, x, dtype=dtype)


@converts("aten.fill.Scalar", "aten.fill.Tensor", "aten.zero.default")
def _fill(ctx, node, args, kwargs):
    x = args[0]
    if op_name(node).startswith("zero"):
        return call("zeros_like", x)
    value = args[1]
    if isinstance(value, Expr):
        return call("expand", cast(value, dtype_of(x)), shape=list(x.ty.shape))
    return call("full_like", x, value=_fill_value(value))


# ----- im2col (nn.Unfold) ------------------------------------------------------------------------


def _im2col_check(node) -> str | None:
    val = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
    if val is not None and not all(isinstance(d, int) for d in val.shape[-2:]):
        return "im2col (nn.Unfold) of an image of symbolic height or width"
    return None


@converts("aten.im2col.default", check=_im2col_check)
def _im2col(ctx, node, args, kwargs):
    """torch's Unfold: the padded image's window at each kernel offset (i, j) is a strided
    slice; the kh * kw slices stacked after the channels give row ``c * kh * kw + i * kw + j``
    of the result, one column per window position."""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    rank = rank_of(x)
    if rank not in (3, 4):
        raise FrontendError(f"im2col needs a 3-D or 4-D input, got rank {rank}")
    kh, kw = int_list(a["kernel_size"], 2)
    dh, dw = int_list(a["dilation"], 2)
    ph, pw = int_list(a["padding"], 2)
    sh, sw = int_list(a["stride"], 2)
    if ph or pw:
        begins = [0] * (rank - 2) + [ph, pw]
        x = call("pad", x, pads=begins + begins, mode="constant", value=0.0)
    h, w = x.ty.shape[-2:]
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise FrontendError(f"im2col: a {kh}x{kw} kernel does not fit the {h}x{w} padded image")
    windows = []
    for i in range(kh):
        for j in range(kw):
            begin = [i * dh, j * dw]
            end = [i * dh + sh * (oh - 1) + 1, j * dw + sw * (ow - 1) + 1]
            axes = [rank - 2, rank - 1]
            piece = call("strided_slice", x, begin=begin, end=end, strides=[sh, sw], axes=axes)
            windows.append(call("unsqueeze", piece, axes=[rank - 2]))
    y = windows[0] if len(windows) == 1 else call("concat", *windows, axis=rank - 2)
    return call("reshape", y, shape=recorded_shape(ctx))
