"""Lowerings of the indexing ops: take, gather_elements, one_hot, tril and triu (lazy values).

Negative indices count from the end of the axis, as in the reference. An index outside the
axis, which the reference reports as an error, is clamped to the axis in compiled code (a read
out of bounds would read foreign memory).
"""

from __future__ import annotations

from compiler.backend import loops as L
from compiler.backend.lower_elementwise import fill_value
from compiler.backend.lower_shape import clamp
from compiler.backend.lowering import LazyTensor, lowering
from compiler.ops.shape_inference import normalize_axis


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


__all__ = ["wrap_index"]
