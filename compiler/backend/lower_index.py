"""Lowerings of the indexing ops: take, gather_elements, one_hot, tril and triu (lazy values),
scatter_elements and topk (stages).

Negative indices count from the end of the axis, as in the reference. An index outside the
axis, which the reference reports as an error, is clamped to the axis in compiled code (a read
or write out of bounds would touch foreign memory).

``scatter_elements`` copies data into its result (a parallel stage), then walks the indices in
order in a sequential stage, storing (or combining) each update at its computed position, so
with duplicate indices the last update wins, as in the reference. Float add / mul accumulate
in f64 (a workspace), as the reference does, and are rounded to the dtype once at the end.

``topk`` is a selection per row (O(n * k)): output position j gets the element that comes
first, in the sorted order, among those after the (j-1)-th one. The order: larger first
(smaller with ``largest=false``), nan counted larger than everything, ties by lower index
first. A kernel computes one field of the (values, indices) result: legalize-ops lowers the
indices and gathers the values from them (gather_elements).
"""

from __future__ import annotations

from compiler.backend import loops as L
from compiler.backend.lower_elementwise import fill_value
from compiler.backend.lower_shape import clamp
from compiler.backend.lowering import BufferTensor, LazyTensor, compute_dtype, lowering
from compiler.ir.shape_inference import normalize_axis
from compiler.ir.types import DType


def wrap_index(i: L.Expr, size: L.Expr) -> L.Expr:
    """An integer index as i64 in ``[0, size)``: negative counts from the end, then clamped."""
    i = L.cast(L.INDEX, i)
    return clamp(L.select(L.compare("lt", i, 0), i + size, i), size)


@lowering("take")
def _take(kb, call, inputs, dest):
    data, indices = inputs
    axis = normalize_axis(call.attrs["axis"], data.ndim)
    r = indices.ndim

    def at(idx):
        i = wrap_index(indices.at(idx[axis : axis + r]), data.shape[axis])
        return data.at((*idx[:axis], i, *idx[axis + r :]))

    return LazyTensor(call.out_shape, call.out_dtype, at)


@lowering("gather_elements")
def _gather_elements(kb, call, inputs, dest):
    data, indices = inputs
    if data.ndim == 0:
        return LazyTensor(call.out_shape, call.out_dtype, lambda idx: data.at(()))
    axis = normalize_axis(call.attrs["axis"], data.ndim)

    def at(idx):
        src = list(idx)
        src[axis] = wrap_index(indices.at(idx), data.shape[axis])
        return data.at(src)

    return LazyTensor(call.out_shape, call.out_dtype, at)


@lowering("one_hot")
def _one_hot(kb, call, inputs, dest):
    (indices,) = inputs
    depth = call.attrs["depth"]
    axis = normalize_axis(call.attrs["axis"], indices.ndim + 1)
    on = fill_value(call.attrs["on_value"], call.out_dtype)
    off = fill_value(call.attrs["off_value"], call.out_dtype)

    def at(idx):
        cls = idx[axis]
        i = L.cast(L.INDEX, indices.at((*idx[:axis], *idx[axis + 1 :])))
        i = L.select(L.compare("lt", i, 0), i + depth, i)  # out of range: no class matches
        return L.select(L.compare("eq", i, cls), on, off)

    return LazyTensor(call.out_shape, call.out_dtype, at)


@lowering("tril", "triu")
def _triangle(kb, call, inputs, dest):
    (x,) = inputs
    k = L.as_expr(call.attrs["k"])
    zero = fill_value(0, x.dtype)
    keep_op = "le" if call.op == "tril" else "ge"

    def at(idx):
        row, col = idx[-2], idx[-1]
        return L.select(L.compare(keep_op, col - row, k), x.at(idx), zero)

    return LazyTensor(call.out_shape, call.out_dtype, at)


# ----- scatter_elements ---------------------------------------------------------------------

_BOOL_SCATTER = {"add": "or", "mul": "and", "max": "or", "min": "and"}  # numpy on bools


def _combine(reduction: str, old: L.Expr, new: L.Expr) -> L.Expr:
    """``old`` reduced with an update ``new`` (both of one compute dtype)."""
    if old.dtype is DType.bool:
        return L.binary(_BOOL_SCATTER[reduction], old, new)
    if reduction == "add":
        return old + new
    if reduction == "mul":
        return old * new
    return L.maximum(old, new) if reduction == "max" else L.minimum(old, new)  # nan propagates


@lowering("scatter_elements")
def _scatter_elements(kb, call, inputs, dest):
    data, indices, updates = inputs
    reduction = call.attrs["reduction"]
    dtype = data.dtype
    # float add / mul accumulate in f64 like the reference, then round once
    wide = reduction in ("add", "mul") and dtype.is_float and dtype is not DType.float64
    if wide:
        buf = kb.workspace(data.shape, DType.float64, "acc")
    else:
        buf = dest if dest is not None else kb.workspace(call.out_shape, dtype, call.op)
    cd = compute_dtype(buf.dtype)
    kb.stage(
        call.op,
        kb.nest(data.shape, lambda idx: L.Store(buf, idx, L.cast(buf.dtype, data.at(idx)))),
    )
    axis = normalize_axis(call.attrs["axis"], data.ndim) if data.ndim else None

    def body(idx):
        pos = list(idx)
        if axis is not None:
            pos[axis] = wrap_index(indices.at(idx), data.shape[axis])
        pos = tuple(pos)
        update = updates.at(idx)  # updates may be larger: its leading block
        if reduction == "none":
            return L.Store(buf, pos, L.cast(buf.dtype, update))
        value = _combine(reduction, L.cast(cd, buf[pos]), L.cast(cd, update))
        return L.Store(buf, pos, L.cast(buf.dtype, value))

    # sequential: duplicate positions are written in the order of the indices
    kb.stage(call.op, kb.nest(indices.shape, body, parallel=0))
    if wide:
        return LazyTensor(call.out_shape, dtype, lambda idx: L.cast(dtype, buf[idx]))
    return BufferTensor(buf)


# ----- topk ---------------------------------------------------------------------------------


def _sorts_after(a: L.Expr, b: L.Expr) -> L.Expr:
    """``a > b`` in numpy's sort order (nan is larger than everything)."""
    gt = L.compare("gt", a, b)
    if a.dtype.is_float:
        nan_a = L.logical_and(L.unary("isnan", a), L.unary("not", L.unary("isnan", b)))
        gt = L.binary("or", gt, nan_a)
    return gt


def _sorts_equal(a: L.Expr, b: L.Expr) -> L.Expr:
    """``a == b`` in numpy's sort order (nans are equal)."""
    eq = L.compare("eq", a, b)
    if a.dtype.is_float:
        eq = L.binary("or", eq, L.logical_and(L.unary("isnan", a), L.unary("isnan", b)))
    return eq


@lowering("topk")
def _topk(kb, call, inputs, dest):
    (x,) = inputs
    axis = normalize_axis(call.attrs["axis"], x.ndim)
    largest = call.attrs["largest"]
    n = x.shape[axis]
    k = n if call.attrs["k"] == -1 else call.attrs["k"]  # -1: the whole axis (a sort)
    if dest is not None and call.field == 1:
        order = dest
    else:
        order = kb.workspace(call.out_shape, DType.int64, "order")
    cd = compute_dtype(x.dtype)
    best_v, best_i = kb.local(cd, "best"), kb.local(DType.int64, "best_i")
    prev_v, prev_i = kb.local(cd, "prev"), kb.local(DType.int64, "prev_i")
    zero, none = L.Const(0, cd), L.Const(-1, DType.int64)

    def precedes(a, ia, b, ib):
        """Whether element (a, index ia) comes before (b, ib) in the result."""
        first = _sorts_after(a, b) if largest else _sorts_after(b, a)
        return L.binary("or", first, L.logical_and(_sorts_equal(a, b), L.compare("lt", ia, ib)))

    others = [d for a, d in enumerate(x.shape) if a != axis]

    def body(idx):
        j, r = kb.var("j"), kb.var("r")

        def at(pos):
            full = list(idx)
            full.insert(axis, pos)
            return tuple(full)

        v = L.cast(cd, x.at(at(r)))
        after_prev = L.binary(
            "or", L.compare("lt", prev_i[()], 0), precedes(prev_v[()], prev_i[()], v, r)
        )
        # the scan runs in index order: an equal value never beats the best one found
        better = _sorts_after(v, best_v[()]) if largest else _sorts_after(best_v[()], v)
        beats_best = L.binary("or", L.compare("lt", best_i[()], 0), better)
        take = L.logical_and(after_prev, beats_best)
        scan = L.For(r, n, L.IfThen(take, L.seq([L.Store(best_v, (), v), L.Store(best_i, (), r)])))
        pick = L.seq(
            [
                L.Store(best_v, (), zero),
                L.Store(best_i, (), none),
                scan,
                L.Store(order, at(j), best_i[()]),
                L.Store(prev_v, (), best_v[()]),
                L.Store(prev_i, (), best_i[()]),
            ]
        )
        init = [L.Store(prev_v, (), zero), L.Store(prev_i, (), none)]
        return L.Local((best_v, best_i, prev_v, prev_i), L.seq([*init, L.For(j, k, pick)]))

    kb.stage(call.op, kb.nest(others, body))

    def value_at(idx):
        src = list(idx)
        src[axis] = order[tuple(idx)]
        return x.at(src)

    return LazyTensor(call.out_shape, x.dtype, value_at), BufferTensor(order)


__all__ = ["wrap_index"]
