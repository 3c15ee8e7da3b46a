"""Lowerings of the reductions: sum, mean, prod, max, min, variance, std, argmax, argmin and
cumsum. Each is a stage: parallel loops over the kept dims, serial loops over the reduced
ones accumulating into a scalar ``local``. Float sums accumulate in f64 (as the reference
does), so they stay exact enough over long axes; max / min propagate nan like numpy.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.backend import loops as L
from compiler.backend.lowering import (
    BufferTensor,
    KernelBuilder,
    OpCall,
    Tensor,
    compute_dtype,
    lowering,
)
from compiler.ir.shape_inference import normalize_axis
from compiler.ir.types import DType


def reduced_axes(axes, ndim: int) -> tuple[int, ...]:
    """The normalised reduced axes (every axis when None)."""
    if axes is None:
        return tuple(range(ndim))
    return tuple(sorted(a % ndim for a in axes)) if ndim else ()


def accumulate_dtype(dtype: DType) -> DType:
    """The dtype sums of ``dtype`` accumulate in (f64 for floats; ints wrap in their own)."""
    return DType.float64 if dtype.is_float else dtype


def reduction_stage(
    kb: KernelBuilder,
    x: Tensor,
    axes: tuple[int, ...],
    out: L.Buffer,
    keepdims: bool,
    label: str,
    inner: Callable[[Callable[[Callable[[tuple], L.Stmt]], L.Stmt], tuple], L.Stmt],
) -> None:
    """A stage over ``out``'s index: ``inner(over, full_index_of)`` builds the body, where
    ``over(body)`` loops over the reduced axes calling ``body(input_index)``."""
    kept = [k for k in range(x.ndim) if k not in axes]

    def body(out_idx):
        if keepdims:
            kept_vals = {k: out_idx[k] for k in kept}
        else:
            kept_vals = dict(zip(kept, out_idx, strict=False))

        def over(fn):
            red = tuple(kb.var("r") for _ in axes)

            def full():
                vals = dict(kept_vals)
                vals.update(zip(axes, red, strict=False))
                return tuple(vals[k] for k in range(x.ndim))

            stmt = fn(full())
            for k in reversed(range(len(axes))):
                stmt = L.For(red[k], x.shape[axes[k]], stmt)
            return stmt

        return inner(over, out_idx)

    kb.stage(label, kb.nest(out.shape, body))


def _out_buffer(kb: KernelBuilder, call: OpCall, dest: L.Buffer | None) -> L.Buffer:
    return dest if dest is not None else kb.workspace(call.out_shape, call.out_dtype, call.op)


def _sum_into(kb, x, over, acc: L.Buffer, value: Callable[[L.Expr], L.Expr] = lambda v: v):
    """``acc = sum(value(x))`` over the reduced axes."""
    return L.seq(
        [
            L.Store(
                acc,
                (),
                L.Const(0, acc.dtype) if not acc.dtype.is_float else L.Const(0.0, acc.dtype),
            ),
            over(lambda idx: L.Store(acc, (), acc[()] + value(L.cast(acc.dtype, x.at(idx))))),
        ]
    )


def _count(x: Tensor, axes) -> L.Expr:
    return L.product([x.shape[a] for a in axes])


def nan_max(a: L.Expr, b: L.Expr, op: str) -> L.Expr:
    """max / min keeping nan (numpy semantics), for floats and ints."""
    return L.maximum(a, b) if op == "max" else L.minimum(a, b)


@lowering("sum", "mean", "prod", "variance", "std")
def _sum_like(kb, call, inputs, dest):
    (x,) = inputs
    axes = reduced_axes(call.attrs["axes"], x.ndim)
    out = _out_buffer(kb, call, dest)
    acc = kb.local(accumulate_dtype(x.dtype))
    op = call.op

    def inner(over, out_idx):
        if op == "prod":
            one = L.Const(1.0 if acc.dtype.is_float else 1, acc.dtype)
            body = L.seq(
                [
                    L.Store(acc, (), one),
                    over(lambda idx: L.Store(acc, (), acc[()] * L.cast(acc.dtype, x.at(idx)))),
                ]
            )
            return L.Local((acc,), L.seq([body, L.Store(out, out_idx, L.cast(out.dtype, acc[()]))]))
        count = L.cast(DType.float64, _count(x, axes)) if acc.dtype.is_float else None
        if op == "sum":
            result = acc[()]
            return L.Local(
                (acc,),
                L.seq(
                    [_sum_into(kb, x, over, acc), L.Store(out, out_idx, L.cast(out.dtype, result))]
                ),
            )
        if op == "mean":
            return L.Local(
                (acc,),
                L.seq(
                    [
                        _sum_into(kb, x, over, acc),
                        L.Store(out, out_idx, L.cast(out.dtype, acc[()] / count)),
                    ]
                ),
            )
        # variance / std: two passes, the mean and then the squared deviations
        mean = kb.local(DType.float64, "mean")
        denom = L.maximum(
            count - L.Const(call.attrs["correction"], DType.float64), L.Const(0.0, DType.float64)
        )
        var = acc[()] / denom
        result = L.unary("sqrt", var) if op == "std" else var
        return L.Local(
            (acc, mean),
            L.seq(
                [
                    _sum_into(kb, x, over, mean),
                    L.Store(mean, (), mean[()] / count),
                    _sum_into(kb, x, over, acc, lambda v: (v - mean[()]) * (v - mean[()])),
                    L.Store(out, out_idx, L.cast(out.dtype, result)),
                ]
            ),
        )

    reduction_stage(kb, x, axes, out, call.attrs["keepdims"], op, inner)
    return BufferTensor(out)


def lowest(dtype: DType, op: str) -> L.Expr:
    """The identity of max (``op='max'``) or min for a compute dtype."""
    if dtype.is_float:
        return L.Const(float("-inf") if op == "max" else float("inf"), dtype)
    if dtype is DType.bool:
        return L.Const(op != "max", dtype)
    import numpy as np

    info = np.iinfo(dtype.numpy)
    return L.Const(int(info.min) if op == "max" else int(info.max), dtype)


@lowering("max", "min")
def _extreme(kb, call, inputs, dest):
    (x,) = inputs
    axes = reduced_axes(call.attrs["axes"], x.ndim)
    out = _out_buffer(kb, call, dest)
    cd = compute_dtype(x.dtype)
    acc = kb.local(cd)
    op = call.op

    def inner(over, out_idx):
        update = over(lambda idx: L.Store(acc, (), nan_max(acc[()], L.cast(cd, x.at(idx)), op)))
        return L.Local(
            (acc,),
            L.seq(
                [
                    L.Store(acc, (), lowest(cd, op)),
                    update,
                    L.Store(out, out_idx, L.cast(out.dtype, acc[()])),
                ]
            ),
        )

    reduction_stage(kb, x, axes, out, call.attrs["keepdims"], op, inner)
    return BufferTensor(out)


@lowering("argmax", "argmin")
def _arg(kb, call, inputs, dest):
    (x,) = inputs
    out = _out_buffer(kb, call, dest)
    axis = call.attrs["axis"]
    keepdims = call.attrs["keepdims"]
    if x.ndim == 0:
        kb.stage(
            call.op, kb.nest(out.shape, lambda idx: L.Store(out, idx, L.Const(0, DType.int64)))
        )
        return BufferTensor(out)
    axes = tuple(range(x.ndim)) if axis is None else (normalize_axis(axis, x.ndim),)
    cd = compute_dtype(x.dtype)
    best, best_i, pos = (
        kb.local(cd, "best"),
        kb.local(DType.int64, "best_i"),
        kb.local(DType.int64, "pos"),
    )
    better = "gt" if call.op == "argmax" else "lt"

    def inner(over, out_idx):
        def step(idx):
            v = L.cast(cd, x.at(idx))
            take = L.compare(better, v, best[()])
            if cd.is_float:  # the first nan wins and stays
                take = L.logical_and(
                    L.unary("not", L.unary("isnan", best[()])),
                    L.binary("or", take, L.unary("isnan", v)),
                )
            return L.seq(
                [
                    L.IfThen(take, L.seq([L.Store(best, (), v), L.Store(best_i, (), pos[()])])),
                    L.Store(pos, (), pos[()] + 1),
                ]
            )

        start = lowest(cd, "max" if call.op == "argmax" else "min")
        init = [
            L.Store(best, (), start),
            L.Store(best_i, (), L.Const(0, DType.int64)),
            L.Store(pos, (), L.Const(0, DType.int64)),
        ]
        return L.Local(
            (best, best_i, pos), L.seq(init + [over(step), L.Store(out, out_idx, best_i[()])])
        )

    # with axis=None and keepdims, every output dim is 1; without, the output is a scalar
    reduction_stage(kb, x, axes, out, keepdims and axis is not None, call.op, inner)
    return BufferTensor(out)


@lowering("cumsum")
def _cumsum(kb, call, inputs, dest):
    (x,) = inputs
    out = _out_buffer(kb, call, dest)
    if x.ndim == 0:
        v = L.Const(0, x.dtype) if call.attrs["exclusive"] else None
        kb.stage("cumsum", L.Store(out, (), v if v is not None else x.at(())))
        return BufferTensor(out)
    axis = normalize_axis(call.attrs["axis"], x.ndim)
    acc = kb.local(accumulate_dtype(x.dtype))
    n = x.shape[axis]
    others = [d for k, d in enumerate(x.shape) if k != axis]

    def body(idx):
        k = kb.var("k")
        pos = (n - 1 - k) if call.attrs["reverse"] else k
        full = list(idx)
        full.insert(axis, pos)
        add = L.Store(acc, (), acc[()] + L.cast(acc.dtype, x.at(full)))
        store = L.Store(out, tuple(full), L.cast(out.dtype, acc[()]))
        step = L.seq([store, add] if call.attrs["exclusive"] else [add, store])
        zero = L.Const(0.0 if acc.dtype.is_float else 0, acc.dtype)
        return L.Local((acc,), L.seq([L.Store(acc, (), zero), L.For(k, n, step)]))

    kb.stage("cumsum", kb.nest(others, body))
    return BufferTensor(out)


__all__ = ["accumulate_dtype", "lowest", "nan_max", "reduced_axes", "reduction_stage"]
