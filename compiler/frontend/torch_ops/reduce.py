"""Converters of ATen reductions: sums, means, extrema, arg-extrema, variance, cumulative sums
and norms."""

from __future__ import annotations

from typing import Any

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import converts, op_name
from compiler.frontend.torch_ops.common import cast, positive_axis, rank_of
from compiler.frontend.torch_ops.elementwise import truth
from compiler.ir.nodes import call

# ----- reductions -------------------------------------------------------------------------------


def _reduce_axes(dims: Any, rank: int) -> list[int] | None:
    if dims is None:
        return None
    if isinstance(dims, int):
        dims = [dims]
    dims = [positive_axis(int(d), rank) for d in dims]
    return dims or None  # torch reads [] as every axis


@converts(
    "aten.sum.dim_IntList",
    "aten.sum.default",
    "aten.mean.dim",
    "aten.mean.default",
    "aten.prod.dim_int",
    "aten.prod.default",
    "aten.amax.default",
    "aten.amin.default",
    "aten.max.default",
    "aten.min.default",
)
def _reduce(ctx, node, args, kwargs):
    name = op_name(node)
    a = ctx.arg(args, kwargs)
    x = a["self"]
    rank = rank_of(x)
    dims = a.get("dim")
    keepdim = bool(a.get("keepdim", False))
    axes = _reduce_axes(dims, rank)
    op = {"amax": "max", "amin": "min"}.get(name, name)
    if name in ("sum", "mean", "prod"):
        x = cast(x, ctx.out_dtype)
    if rank == 0:
        return x
    return call(op, x, axes=axes, keepdims=keepdim)


@converts(
    "aten.any.dim",
    "aten.any.dims",
    "aten.any.default",
    "aten.all.dim",
    "aten.all.dims",
    "aten.all.default",
)
def _any_all(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    x = truth(x)
    if rank_of(x) == 0:
        return x
    op = "max" if op_name(node).startswith("any") else "min"
    axes = _reduce_axes(a.get("dim"), rank_of(x))
    return call(op, x, axes=axes, keepdims=bool(a.get("keepdim", False)))


@converts("aten.max.dim", "aten.min.dim")
def _max_dim(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = positive_axis(int(a["dim"]), rank_of(x))
    keepdim = bool(a["keepdim"])
    name = op_name(node)
    values = call(name, x, axes=[axis], keepdims=keepdim)
    indices = call("arg" + name, x, axis=axis, keepdims=keepdim)
    return values, indices


@converts("aten.argmax.default", "aten.argmin.default")
def _argmax(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    op = op_name(node)
    dim = a["dim"]
    return call(op, x, axis=None if dim is None else int(dim), keepdims=bool(a["keepdim"]))


def _correction(a: dict) -> float:
    """What torch's var / std subtract from N: ``correction`` (default 1) or ``unbiased``."""
    if "correction" in a:
        return 1.0 if a["correction"] is None else float(a["correction"])
    return 1.0 if a.get("unbiased", True) else 0.0


@converts(
    "aten.var.correction",
    "aten.var.dim",
    "aten.var.default",
    "aten.std.correction",
    "aten.std.dim",
    "aten.std.default",
    "aten.var_mean.correction",
    "aten.var_mean.dim",
    "aten.var_mean.default",
    "aten.std_mean.correction",
    "aten.std_mean.dim",
    "aten.std_mean.default",
)
def _var(ctx, node, args, kwargs):
    name = op_name(node)
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    axes = _reduce_axes(a.get("dim"), rank_of(x))
    keep = bool(a.get("keepdim", False))
    op = "variance" if name.startswith("var") else "std"
    spread = call(op, x, axes=axes, keepdims=keep, correction=_correction(a))
    if name.endswith("_mean"):
        return spread, call("mean", x, axes=axes, keepdims=keep)
    return spread


@converts("aten.cumsum.default")
def _cumsum(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    return call("cumsum", x, axis=int(a["dim"]))


@converts("aten.logsumexp.default")
def _logsumexp(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    axes = _reduce_axes(a["dim"], rank_of(x))
    keep = bool(a["keepdim"])
    top = call("max", x, axes=axes, keepdims=True)
    total = call("sum", call("exp", call("subtract", x, top)), axes=axes, keepdims=keep)
    top = top if keep else call("squeeze", top, axes=axes or list(range(rank_of(x))))
    return call("add", call("log", total), top)


@converts("aten.linalg_vector_norm.default")
def _vector_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    if float(a["ord"]) != 2:
        raise FrontendError(f"vector norm of order {a['ord']} is not supported (only 2)")
    axes = _reduce_axes(a["dim"], rank_of(x))
    total = call("sum", call("multiply", x, x), axes=axes, keepdims=bool(a["keepdim"]))
    return call("sqrt", total)
