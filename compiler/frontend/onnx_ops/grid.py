"""Sampling grids: GridSample (bilinear, bicubic or nearest reads at grid points) and
AffineGrid (the grid of an affine transform), composed of IR ops."""

from __future__ import annotations

from compiler.frontend.onnx_context import ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import (
    F64,
    I64,
    F64Ops,
    cast_to,
    converter,
    dim_value,
    index_range,
    item_i64,
    positions_f64,
    scalar_f64,
)
from compiler.frontend.onnx_ops.resize import interpolation_kernel
from compiler.ir.symbolic import SymExpr
from compiler.ir.types import DType

MAX_GRID = 1 << 16  # an AffineGrid dim from a file


# ----- GridSample (16: 4-D; 20: N-D) --------------------------------------------------------

_GRID_MODES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear", "cubic": "cubic"}


@converter("GridSample", attrs=("mode", "padding_mode", "align_corners"), min_version=16)
def _grid_sample(ctx):
    """Sample ``x [N, C, D1..Dk]`` at the normalized points ``grid [N, O1..Ok, k]``: per
    spatial dim, the point's taps (1 nearest, 2 linear, 4 cubic) with their weights and the
    padding mode's index (zeros: weight 0 outside, border: clamped, reflection: reflected);
    each combination of taps is a ``take`` from ``x`` flattened to ``[N * D1..Dk, C]``."""
    x, grid = ctx.input(0), ctx.input(1)
    rank = ctx.rank(0)
    k = rank - 2
    mode = ctx.attr("mode", "bilinear" if ctx.version < 20 else "linear")
    padding = ctx.attr("padding_mode", "zeros")
    align = bool(ctx.attr("align_corners", 0))
    if mode != "nearest":
        if mode not in _GRID_MODES or (ctx.version >= 20) != (mode in ("linear", "cubic")):
            raise Unsupported(f"mode {mode}")
        mode = _GRID_MODES[mode]
    if padding not in ("zeros", "border", "reflection"):
        raise Unsupported(f"padding_mode {padding}")
    if k < 1 or (ctx.version < 20 and k != 2):
        raise ConversionError(f"GridSample-{ctx.version} cannot sample data of rank {rank}")
    gshape = grid.ty.shape
    if (
        gshape is None
        or len(gshape) != rank
        or gshape[-1] not in (k,)
        and isinstance(gshape[-1], int)
    ):
        raise ConversionError(f"grid {grid.ty} must be [N, O1..O{k}, {k}] for data {x.ty}")
    if not x.ty.dtype.is_float or not grid.ty.dtype.is_float:
        raise Unsupported(f"GridSample of {x.ty.dtype} data or a {grid.ty.dtype} grid")
    o = F64Ops(ctx)
    g = cast_to(ctx, grid, F64)
    per_dim = []  # per spatial dim: [(index i64, weight f64 or validity bool)]
    for i in range(k):
        d = scalar_f64(ctx, dim_value(ctx, x, 2 + i))
        last = o.subtract(d, 1.0)
        v = ctx.call("take", g, ctx.constant(k - 1 - i, I64), axis=rank - 1)  # [N, O..]
        if align:
            v = o.multiply(o.divide(o.add(v, 1.0), 2.0), last)
            lo, hi = o.f(0.0), last
        else:
            v = o.divide(o.subtract(o.multiply(o.add(v, 1.0), d), 1.0), 2.0)
            lo, hi = o.f(-0.5), o.subtract(d, 0.5)
        if mode == "nearest":
            v = o.round(v)
        outside = ctx.call("logical_or", o.less(v, lo), o.greater(v, hi))
        if padding == "border":
            v = ctx.call("where", outside, o.minimum(o.maximum(v, 0.0), last), v)
        elif padding == "reflection":
            v = _reflect(ctx, o, v, lo, hi)
        if mode == "nearest":
            taps = [(v, None)]
        else:
            down = o.floor(v)
            r = o.subtract(v, down)
            if mode == "linear":
                taps = [(down, o.subtract(1.0, r)), (o.add(down, 1.0), r)]
            else:
                taps = [
                    (
                        o.add(down, float(j)),
                        interpolation_kernel(o, o.abs(o.subtract(r, float(j))), "cubic", -0.75),
                    )
                    for j in (-1, 0, 1, 2)
                ]
        dim_taps = []
        for t, w in taps:
            valid = None
            if padding == "zeros":
                valid = ctx.call("logical_and", o.greater_equal(t, 0.0), o.less_equal(t, last))
            elif padding == "reflection":
                t = _trunc(ctx, o, _reflect(ctx, o, t, lo, hi))
            index = cast_to(ctx, o.minimum(o.maximum(t, 0.0), last), I64)
            dim_taps.append((index, w, valid))
        per_dim.append(dim_taps)
    return _gather_taps(ctx, x, per_dim, mode)


def _gather_taps(ctx, x, per_dim, mode):
    """Sum over the combinations of taps of weight * x[n, :, index...] (see GridSample)."""
    import itertools

    rank = ctx.rank(0)
    k = rank - 2
    shape = x.ty.shape
    # x as [N * S, C]: the rows of sample n start at n * S
    dims = [dim_value(ctx, x, 2 + i) for i in range(k)]
    strides = [ctx.constant(1, I64)]
    for dim in reversed(dims[1:]):
        strides.insert(0, ctx.call("multiply", strides[0], dim))
    size = ctx.call("multiply", strides[0], dims[0])
    flat = ctx.call("permute_dims", x, axes=[0, *range(2, rank), 1])
    flat = ctx.call("reshape", flat, shape=[-1, shape[1]])
    n = shape[0]
    if isinstance(n, int | SymExpr):
        batch = ctx.call("arange", stop=n, dtype=I64)
    else:
        zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
        batch = index_range(ctx, zero, dim_value(ctx, x, 0), one)
    batch = ctx.call("multiply", batch, size)
    out_rank = len(per_dim[0][0][0].ty.shape)
    batch = ctx.call("reshape", batch, shape=[-1] + [1] * (out_rank - 1))
    total = None
    zero = ctx.constant(0.0, x.ty.dtype)
    for combo in itertools.product(*per_dim):
        lin = batch
        weight = None
        valid = None
        for (index, w, ok), stride in zip(combo, strides, strict=True):
            lin = ctx.call("add", lin, ctx.call("multiply", index, stride))
            if w is not None:
                weight = w if weight is None else ctx.call("multiply", weight, w)
            if ok is not None:
                valid = ok if valid is None else ctx.call("logical_and", valid, ok)
        vals = ctx.call("take", flat, lin, axis=0)  # [N, O.., C]
        if weight is not None:
            if valid is not None:
                weight = ctx.call("where", valid, weight, ctx.constant(0.0, F64))
            w = cast_to(ctx, ctx.call("unsqueeze", weight, axes=[out_rank]), DType.float64)
            term = ctx.call("multiply", cast_to(ctx, vals, F64), w)
        else:
            term = vals
            if valid is not None:
                term = ctx.call("where", ctx.call("unsqueeze", valid, axes=[out_rank]), vals, zero)
        total = term if total is None else ctx.call("add", total, term)
    total = cast_to(ctx, total, x.ty.dtype)
    return ctx.call("permute_dims", total, axes=[0, out_rank, *range(1, out_rank)])


def _trunc(ctx, o, v):
    return ctx.call("where", o.less(v, 0.0), o.ceil(v), o.floor(v))


def _reflect(ctx, o, v, lo, hi):
    """ONNX GridSample's reflection of ``v`` into ``[lo, hi]`` (v itself inside)."""
    span = o.subtract(hi, lo)
    safe = ctx.call("where", o.equal(span, 0.0), o.f(1.0), span)

    def fold(dx):
        times = o.floor(o.divide(dx, safe))
        rest = o.subtract(dx, o.multiply(times, safe))
        even = o.equal(o.subtract(times, o.multiply(o.floor(o.divide(times, 2.0)), 2.0)), 0.0)
        return rest, even

    below_r, below_even = fold(o.subtract(lo, v))
    above_r, above_even = fold(o.subtract(v, hi))
    below = ctx.call("where", below_even, o.add(lo, below_r), o.subtract(hi, below_r))
    above = ctx.call("where", above_even, o.subtract(hi, above_r), o.add(lo, above_r))
    return ctx.call("where", o.less(v, lo), below, ctx.call("where", o.greater(v, hi), above, v))


# ----- AffineGrid (20) -----------------------------------------------------------------------


@converter("AffineGrid", attrs=("align_corners",), min_version=20)
def _affine_grid(ctx):
    """``theta [N, k, k+1]`` applied to the normalized base grid of ``size`` (N, C, D.., W):
    component c of the result is ``sum_j theta[:, c, j] * base_j + theta[:, c, k]``, each
    base_j a broadcast 1-D ramp over its axis (x over W first, as GridSample reads it)."""
    theta = ctx.input(0)
    align = bool(ctx.attr("align_corners", 0))
    tshape = theta.ty.shape
    if tshape is None or len(tshape) != 3 or not isinstance(tshape[1], int):
        raise Unsupported(f"AffineGrid of a theta {theta.ty} of unknown [N, k, k+1] shape")
    k = tshape[1]
    if k not in (2, 3) or tshape[2] not in (k + 1,) and isinstance(tshape[2], int):
        raise ConversionError(f"theta {theta.ty} must be [N, 2, 3] or [N, 3, 4]")
    if not theta.ty.dtype.is_float:
        raise ConversionError(f"theta must be floating-point, got {theta.ty.dtype}")
    if ctx.ty(1).shape != (k + 2,):
        raise ConversionError(f"size must hold {k + 2} values for a theta {theta.ty}")
    o = F64Ops(ctx)
    given = ctx.const(1)
    size = cast_to(ctx, ctx.input(1), I64)
    ramps = []  # per spatial axis (D, H, W order), broadcast over the k spatial dims
    for i in range(k):
        if given is not None:
            length = int(given.reshape(-1)[2 + i])
            if not 0 <= length <= MAX_GRID:
                raise ConversionError(f"size {list(given.reshape(-1))}: dims of 0 to {MAX_GRID}")
            pos = ctx.call("arange", stop=length, dtype=F64)
            count = ctx.constant(float(length), F64)
        else:
            n = item_i64(ctx, size, 2 + i)
            pos = positions_f64(ctx, n, None)
            count = scalar_f64(ctx, n)
        if align:
            denom = o.subtract(count, 1.0)
            denom = ctx.call("where", o.equal(denom, 0.0), o.f(1.0), denom)
            ramp = o.add(o.divide(o.multiply(pos, 2.0), denom), -1.0)
        else:
            ramp = o.add(o.divide(o.add(o.multiply(pos, 2.0), 1.0), count), -1.0)
        shape = [1] * (k + 1)
        shape[1 + i] = -1
        ramps.append(ctx.call("reshape", ramp, shape=shape))  # [1, .., L_i, .., 1]
    base = list(reversed(ramps))  # x (W) first
    t = cast_to(ctx, theta, F64)
    comps = []
    for c in range(k):
        row = ctx.call("take", t, ctx.constant(c, I64), axis=1)  # [N, k+1]

        def coef(j, row=row):
            v = ctx.call("take", row, ctx.constant(j, I64), axis=1)
            return ctx.call("reshape", v, shape=[-1] + [1] * k)

        acc = coef(k)
        for j in range(k):
            acc = o.add(acc, o.multiply(coef(j), base[j]))
        comps.append(ctx.call("unsqueeze", acc, axes=[k + 1]))
    grid = ctx.call("concat", *comps, axis=k + 1)
    return cast_to(ctx, grid, theta.ty.dtype)
