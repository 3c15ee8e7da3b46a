"""Vision ops composed of IR ops: the forms of Resize the ``resize`` IR op does not take.

``resize`` (shape.py's converter) takes nearest / linear / cubic resampling whose output
sizes are known in dims. Everything else is composed here, one axis at a time, as ONNX's
reference does (Resize is separable): antialiased downsampling, ``tf_crop_and_resize``
(``roi``, ``extrapolation_value``), and scales or sizes computed at run time (output dims
unknown until then, like NonZero's), in any mode (cubic: ``cubic_coeff_a``,
``exclude_outside``).

Along one axis of input length ``n`` resized to ``m`` with scale ``s``, output position ``i``
maps to the source coordinate ``x_i`` of the coordinate mode. Nearest rounds it and gathers.
Linear and cubic read ``K`` taps ``t = start_i + k`` (``K = 2`` / ``4``, wider when
antialiasing scales the kernel by ``min(s, 1)``), clamped into the input (ONNX pads with the
edge), weighted by the kernel of ``(t - x_i) * s'``: a ``take`` of an ``[m, K]`` index
tensor, a product and a sum over the taps.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend.onnx_context import ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import (
    I64,
    cast_to,
    checked_axis,
    converter,
    dim_value,
    index_range,
    item_i64,
)
from compiler.ir.nodes import Expr
from compiler.ir.symbolic import SymExpr, dim_mul, dim_str
from compiler.ir.types import DType

F64 = DType.float64
_COORDINATES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
)
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")
MAX_GRID = 1 << 16  # an AffineGrid dim from a file
MAX_SCALE = 1 << 16
MAX_SIZE = (
    1 << 24
)  # an output length from a file  # a scale from a file: more is a mistake (or an attack)


def resize_needs_composition(ctx) -> bool:
    """Whether the Resize node takes a form the ``resize`` IR op does not: antialias (not
    nearest), tf_crop_and_resize, or scales / sizes not known in dims."""
    mode = ctx.attr("mode", "nearest")
    how = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if how == "tf_crop_and_resize":
        return True
    if ctx.attr("antialias", 0) and mode in ("linear", "cubic"):
        return True
    if mode not in ("nearest", "linear", "cubic"):
        return False  # refused by the converter with its reason
    if ctx.has(3):
        return ctx.const(3) is None and ctx.dims(3) is None
    if ctx.has(2):
        given = ctx.const(2)
        return given is None
    return False


class _Ops:
    """Small helpers over a ConvertContext for f64 scalar arithmetic."""

    def __init__(self, ctx):
        self.ctx = ctx

    def f(self, v) -> Expr:
        return v if isinstance(v, Expr) else self.ctx.constant(float(v), F64)

    def __getattr__(self, op):
        ctx = self.ctx

        def call(*args, **attrs):
            return ctx.call(op, *(self.f(a) for a in args), **attrs)

        return call


def _scalar_f64(ctx, e: Expr) -> Expr:
    e = cast_to(ctx, e, F64)
    return e if e.ty.shape == () else ctx.call("reshape", e, shape=[])


def _positions(ctx, count: Expr, static: int | None) -> Expr:
    """``0 .. count-1`` as a 1-D f64 tensor (static length when known)."""
    if static is not None:
        return ctx.call("arange", stop=static, dtype=F64)
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    return cast_to(ctx, index_range(ctx, zero, count, one), F64)


def resize_composed(ctx) -> Expr:
    x = ctx.input(0)
    rank = ctx.rank(0)
    o = _Ops(ctx)
    mode = ctx.attr("mode", "nearest")
    how = ctx.attr("coordinate_transformation_mode", "half_pixel")
    nearest = ctx.attr("nearest_mode", "round_prefer_floor")
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    antialias = bool(ctx.attr("antialias", 0))
    exclude = bool(ctx.attr("exclude_outside", 0))
    a_coeff = float(ctx.attr("cubic_coeff_a", -0.75))
    extrapolation = float(ctx.attr("extrapolation_value", 0.0))
    if mode not in ("nearest", "linear", "cubic"):
        raise Unsupported(f"mode {mode}")
    if how not in _COORDINATES:
        raise Unsupported(f"coordinate_transformation_mode {how}")
    if nearest not in _NEAREST:
        raise Unsupported(f"nearest_mode {nearest}")
    if policy not in _POLICIES:
        raise ConversionError(f"keep_aspect_ratio_policy {policy!r} is not one of {_POLICIES}")
    if antialias and mode == "nearest":
        raise ConversionError("antialias applies to linear and cubic modes, not nearest")
    if mode != "nearest" and not x.ty.dtype.is_float:
        raise Unsupported(f"{mode} Resize of {x.ty.dtype} data")
    axes = ctx.attr("axes")
    axes = (
        list(range(rank))
        if axes is None
        else [checked_axis(ctx, a, rank, "axes entry") for a in axes]
    )
    if len(set(axes)) != len(axes):
        raise ConversionError(f"axes {axes} repeat an axis")

    def length_of(i: int, what: str) -> int:
        shape = ctx.ty(i).shape
        if shape is None or len(shape) != 1 or not isinstance(shape[0], int):
            raise Unsupported(f"Resize with {what} of unknown length")
        return shape[0]

    # per resized axis: input length n (i64, f64), output length m (i64, static int or None),
    # scale s (f64)
    ns = [dim_value(ctx, x, a) for a in axes]
    nfs = [_scalar_f64(ctx, n) for n in ns]
    if ctx.has(3):
        if length_of(3, "sizes") != len(axes):
            raise ConversionError(f"sizes must give one size per axis of {axes}")
        sizes = cast_to(ctx, ctx.input(3), I64)
        ms = [item_i64(ctx, sizes, i) for i in range(len(axes))]
        scales = [o.divide(_scalar_f64(ctx, m), nf) for m, nf in zip(ms, nfs, strict=True)]
        if policy != "stretch" and axes:
            pick = "minimum" if policy == "not_larger" else "maximum"
            s = scales[0]
            for other in scales[1:]:
                s = ctx.call(pick, s, other)
            scales = [s] * len(axes)
            ms = [cast_to(ctx, o.floor(o.add(o.multiply(s, nf), 0.5)), I64) for nf in nfs]
    elif ctx.has(2) and length_of(2, "scales") > 0:
        if length_of(2, "scales") != len(axes):
            raise ConversionError(f"scales must give one scale per axis of {axes}")
        given = cast_to(ctx, ctx.input(2), F64)
        scales = [ctx.call("take", given, ctx.constant(i, I64), axis=0) for i in range(len(axes))]
        ms = [
            cast_to(ctx, o.floor(o.multiply(s, nf)), I64) for s, nf in zip(scales, nfs, strict=True)
        ]
    else:
        raise ConversionError("Resize needs scales or sizes")
    known, same = _static_sizes(ctx, x, axes, policy)
    # scales known at import become constants (antialiasing then has a static tap count)
    given_scales = ctx.const(2) if ctx.has(2) and not ctx.has(3) else None
    for i, a in enumerate(axes):
        dim = x.ty.shape[a]
        if given_scales is not None and given_scales.size == len(axes):
            scales[i] = ctx.constant(float(given_scales.reshape(-1)[i]), F64)
        elif ctx.has(3) and policy == "stretch" and known[i] is not None and isinstance(dim, int):
            scales[i] = ctx.constant(known[i] / dim, F64) if dim > 0 else scales[i]
    ms = [m if k is None else ctx.constant(k, I64) for m, k in zip(ms, known, strict=True)]
    if how != "tf_crop_and_resize":  # axes left as they are (roi applies to every axis)
        keep = [i for i in range(len(axes)) if not same[i]]
        axes, ms, scales = [axes[i] for i in keep], [ms[i] for i in keep], [scales[i] for i in keep]
    rois = None
    if how == "tf_crop_and_resize":
        if not ctx.has(1):
            raise ConversionError("tf_crop_and_resize needs roi")
        if length_of(1, "roi") != 2 * len(axes):
            raise ConversionError(f"roi must give a start and an end per axis of {axes}")
        roi = cast_to(ctx, ctx.input(1), F64)
        k = len(axes)
        rois = [
            (
                ctx.call("take", roi, ctx.constant(i, I64), axis=0),
                ctx.call("take", roi, ctx.constant(k + i, I64), axis=0),
            )
            for i in range(k)
        ]
    return _compose(
        ctx,
        x,
        axes,
        ms,
        scales,
        rois,
        mode,
        how,
        nearest,
        a_coeff,
        antialias,
        exclude,
        extrapolation,
    )


def _compose(
    ctx,
    x,
    axes,
    ms,
    scales,
    rois,
    mode,
    how,
    nearest,
    a_coeff=-0.75,
    antialias=False,
    exclude=False,
    extrapolation=0.0,
):
    """Resample ``x`` along ``axes`` to the lengths ``ms`` (0-d i64) with the scales ``scales``
    (0-d f64) of the coordinate transform."""
    o = _Ops(ctx)
    rank = ctx.rank(0)
    nfs = [_scalar_f64(ctx, dim_value(ctx, x, a)) for a in axes]
    statics = [_static_int(m) for m in ms]
    y = x if mode == "nearest" else cast_to(ctx, x, F64)
    for i, a in enumerate(axes):
        pos = _positions(ctx, ms[i], statics[i])
        source, outside = _source(o, pos, nfs[i], ms[i], scales[i], how, rois and rois[i])
        if mode == "nearest":
            y = _nearest_axis(ctx, o, y, a, source, nfs[i], nearest)
        else:
            radius = 1.0 if mode == "linear" else 2.0
            y = _filter_axis(
                ctx, o, y, a, source, nfs[i], scales[i], radius, mode, a_coeff, antialias, exclude
            )
        if outside is not None:
            shape = [1] * rank
            shape[a] = -1
            mask = ctx.call("reshape", outside, shape=shape)
            y = ctx.call("where", mask, ctx.constant(extrapolation, y.ty.dtype), y)
    return cast_to(ctx, y, x.ty.dtype)


def _static_sizes(ctx, x, axes, policy) -> tuple[list, list[bool]]:
    """Per axis: the output length when the sizes or scales are constants (and, for scales or
    a keep-aspect policy, the input dim static), else None; and whether the axis is left as it
    is (scale 1 and the same length: ONNX's reference skips those axes)."""
    dims = [x.ty.shape[a] for a in axes]
    unknown = [None] * len(axes)
    if ctx.has(3):
        given = ctx.const(3)
        if given is None:
            return unknown, [False] * len(axes)
        sizes = [int(v) for v in given.reshape(-1)]
        if any(not 0 <= v <= MAX_SIZE for v in sizes):
            raise ConversionError(f"sizes {sizes} must be 0 to {MAX_SIZE}")
        if policy == "stretch":
            return sizes, [v == d for v, d in zip(sizes, dims, strict=True)]
        if not all(isinstance(d, int) and d > 0 for d in dims):
            return unknown, [False] * len(axes)
        ratios = [v / d for v, d in zip(sizes, dims, strict=True)]
        scale = min(ratios) if policy == "not_larger" else max(ratios)
        return [int(scale * d + 0.5) for d in dims], [scale == 1.0] * len(axes)
    given = ctx.const(2)
    if given is None:
        return unknown, [False] * len(axes)
    scales = [float(v) for v in given.reshape(-1)]
    if any(not (0 < v <= MAX_SCALE) for v in scales):
        raise ConversionError(f"scales {scales} must be positive and at most {MAX_SCALE}")
    known = [
        int(math.floor(v * d)) if isinstance(d, int) else None
        for v, d in zip(scales, dims, strict=True)
    ]
    return known, [v == 1.0 for v in scales]


def check_resize_values(ctx, axes) -> None:
    """Constant sizes / scales of a Resize are one per axis and in range (ConversionError):
    a size of 0 to MAX_SIZE, a positive scale up to MAX_SCALE."""
    for i, what, fits in (
        (3, "sizes", lambda v: 0 <= v <= MAX_SIZE),
        (2, "scales", lambda v: 0 < v <= MAX_SCALE),
    ):
        given = ctx.const(i) if ctx.has(i) else None
        if given is None or (i == 2 and given.size == 0):
            continue
        values = [float(v) if i == 2 else int(v) for v in given.reshape(-1)]
        if len(values) != len(axes):
            raise ConversionError(
                f"{what} must give one {what[:-1]} per axis of {axes}, got {values}"
            )
        if not all(fits(v) for v in values):
            bound = f"0 to {MAX_SIZE}" if i == 3 else f"positive and at most {MAX_SCALE}"
            raise ConversionError(f"{what} {values} must be {bound}")
        return


def _static_int(e: Expr) -> int | None:
    from compiler.ir.nodes import Constant

    if isinstance(e, Constant) and e.data.size == 1:
        return int(e.data.reshape(-1)[0])
    return None


def _static_float(e: Expr) -> float | None:
    """The value of a one-element constant (a scale known at import), else None."""
    from compiler.ir.nodes import Constant

    if isinstance(e, Constant) and e.data.size == 1:
        return float(e.data.reshape(-1)[0])
    return None


def _source(o, pos, nf, m, s, how, roi):
    """The f64 source coordinate of each output position, and (tf_crop_and_resize) the mask
    of those outside the input."""
    ctx = o.ctx
    width = o.multiply(s, nf)  # ONNX's (float) output width
    is_one = o.equal(width, 1.0)
    safe = ctx.call("where", is_one, o.f(1.0), o.subtract(width, 1.0))  # no 0-division
    half = o.subtract(o.divide(o.add(pos, 0.5), s), 0.5)
    if how == "align_corners":
        x = o.multiply(pos, o.divide(o.subtract(nf, 1.0), safe))
        return ctx.call("where", is_one, o.f(0.0), x), None
    if how == "asymmetric":
        return o.divide(pos, s), None
    if how == "pytorch_half_pixel":
        return ctx.call("where", is_one, o.f(-0.5), half), None
    if how == "half_pixel":
        return half, None
    if how == "half_pixel_symmetric":
        adjust = o.divide(_scalar_f64(ctx, m), width)
        offset = o.multiply(o.divide(nf, 2.0), o.subtract(1.0, adjust))
        return o.add(offset, half), None
    start, end = roi
    last = o.subtract(nf, 1.0)
    span = o.multiply(o.subtract(end, start), last)
    x = ctx.call("where", is_one, o.divide(span, 2.0), o.multiply(pos, o.divide(span, safe)))
    x = o.add(x, o.multiply(start, last))
    outside = ctx.call("logical_or", o.less(x, 0.0), o.greater(x, last))
    return x, outside


def _nearest_axis(ctx, o, y, axis, source, nf, how):
    down = o.floor(source)
    if how == "floor":
        index = down
    elif how == "ceil":
        index = o.ceil(source)
    else:
        frac = o.subtract(source, down)
        low = o.less_equal(frac, 0.5) if how == "round_prefer_floor" else o.less(frac, 0.5)
        index = ctx.call("where", low, down, o.add(down, 1.0))
    index = o.minimum(o.maximum(index, 0.0), o.subtract(nf, 1.0))
    return ctx.call("take", y, cast_to(ctx, index, I64), axis=axis)


def _kernel(o, d, mode, a):
    """The interpolation kernel at distances ``d`` (>= 0)."""
    ctx = o.ctx
    if mode == "linear":
        return o.maximum(o.subtract(1.0, d), 0.0)
    d2 = o.multiply(d, d)
    d3 = o.multiply(d2, d)
    near = o.add(o.subtract(o.multiply(d3, a + 2), o.multiply(d2, a + 3)), 1.0)
    far = o.add(
        o.subtract(o.multiply(d3, a), o.multiply(d2, 5 * a)),
        o.subtract(o.multiply(d, 8 * a), 4 * a),
    )
    return ctx.call(
        "where", o.less_equal(d, 1.0), near, ctx.call("where", o.less(d, 2.0), far, o.f(0.0))
    )


def _filter_axis(ctx, o, y, axis, source, nf, s, radius, mode, a, antialias, exclude):
    """Linear or cubic resampling along ``axis`` (see the module docstring)."""
    if antialias:
        given = _static_float(s)
        s = o.minimum(s, 1.0)
        # K = -2 * floor(-radius / s) taps, at least 2 * radius (a static count for a
        # constant scale, so the taps have a static shape)
        if given is not None and given > 0:
            k = ctx.call("arange", stop=int(-2 * math.floor(-radius / min(given, 1.0))), dtype=F64)
        else:
            taps = cast_to(ctx, o.multiply(o.floor(o.divide(-radius, s)), -2.0), I64)
            k = _positions(ctx, taps, None)
    else:
        s = o.f(1.0)
        k = ctx.call("arange", stop=int(2 * radius), dtype=F64)
    down = o.floor(source)
    whole = o.equal(source, down)
    # start = floor(x) - K/2 + (x not whole): the K taps nearest x, ties to the lower
    half_k = o.divide(_scalar_f64(ctx, _count(ctx, k)), 2.0)
    start = o.add(o.subtract(down, half_k), ctx.call("where", whole, o.f(0.0), o.f(1.0)))
    col = ctx.call("unsqueeze", start, axes=[1])
    taps = o.add(col, ctx.call("unsqueeze", k, axes=[0]))  # [m, K]
    dist = o.abs(o.multiply(o.subtract(taps, ctx.call("unsqueeze", source, axes=[1])), s))
    coeffs = _kernel(o, dist, mode, a)
    if exclude:
        inside = ctx.call(
            "logical_and", o.greater_equal(taps, 0.0), o.less_equal(taps, o.subtract(nf, 1.0))
        )
        coeffs = ctx.call("where", inside, coeffs, o.f(0.0))
    if antialias or exclude:
        total = ctx.call("sum", coeffs, axes=[1], keepdims=True)
        total = ctx.call("where", o.equal(total, 0.0), o.f(1.0), total)
        coeffs = o.divide(coeffs, total)
    index = cast_to(ctx, o.minimum(o.maximum(taps, 0.0), o.subtract(nf, 1.0)), I64)
    gathered = ctx.call("take", y, index, axis=axis)  # [..., m, K, ...]
    rank = len(y.ty.shape)
    tail = list(range(2, rank - axis + 1))
    weights = ctx.call("unsqueeze", coeffs, axes=tail) if tail else coeffs
    return ctx.call("sum", o.multiply(gathered, weights), axes=[axis + 1], keepdims=False)


def _count(ctx, v: Expr) -> Expr:
    """The length of a 1-D tensor as a 0-d i64 tensor."""
    return dim_value(ctx, v, 0)


# ----- Upsample (opsets 7-9; Resize since 10) ----------------------------------------------


@converter("Upsample", attrs=("mode", "scales"), min_version=7)
def _upsample(ctx):
    """Upsample-7 (scales attribute) and -9 (scales input): output dims floor(dim * scale),
    asymmetric coordinates (ONNX's and onnxruntime's), nearest rounding down."""
    x = ctx.input(0)
    rank = ctx.rank(0)
    mode = ctx.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        raise Unsupported(f"mode {mode}")
    if ctx.version < 9:
        scales = ctx.attr("scales")
        if scales is None:
            raise ConversionError("Upsample-7 needs the scales attribute")
    else:
        given = ctx.const(1)
        if given is None:
            return _upsample_computed(ctx, x, mode)
        scales = given.reshape(-1)
    scales = [float(s) for s in scales]
    if len(scales) != rank:
        raise ConversionError(f"scales {scales} must give one scale per dim of rank {rank}")
    if any(not (s >= 1) or s > MAX_SCALE for s in scales):
        raise ConversionError(f"Upsample scales must be 1 to {MAX_SCALE}, got {scales}")
    if mode != "nearest" and not x.ty.dtype.is_float:
        raise Unsupported(f"{mode} Upsample of {x.ty.dtype} data")
    sizes = []
    for d, s in zip(x.ty.shape, scales, strict=True):
        if isinstance(d, int):
            sizes.append(int(math.floor(d * s)))
        elif s == 1.0:
            sizes.append(d)
        elif s == int(s):
            sizes.append(dim_mul(d, int(s)))
        else:
            raise Unsupported(f"scale {s} of the symbolic dim {dim_str(d)}")
    return ctx.call(
        "resize",
        x,
        sizes=sizes,
        scales=scales,
        mode="nearest" if mode == "nearest" else "linear",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )


def _upsample_computed(ctx, x, mode):
    """Upsample-9 with scales computed at run time: composed, the output dims unknown."""
    rank = ctx.rank(0)
    if ctx.ty(1).shape != (rank,):
        raise Unsupported("Upsample with computed scales of unknown length")
    if mode != "nearest" and not x.ty.dtype.is_float:
        raise Unsupported(f"{mode} Upsample of {x.ty.dtype} data")
    o = _Ops(ctx)
    given = cast_to(ctx, ctx.input(1), F64)
    scales = [ctx.call("take", given, ctx.constant(i, I64), axis=0) for i in range(rank)]
    ms = [
        cast_to(ctx, o.floor(o.multiply(s, _scalar_f64(ctx, dim_value(ctx, x, a)))), I64)
        for a, s in enumerate(scales)
    ]
    mode = "nearest" if mode == "nearest" else "linear"
    return _compose(ctx, x, list(range(rank)), ms, scales, None, mode, "asymmetric", "floor")


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
    o = _Ops(ctx)
    g = cast_to(ctx, grid, F64)
    per_dim = []  # per spatial dim: [(index i64, weight f64 or validity bool)]
    for i in range(k):
        d = _scalar_f64(ctx, dim_value(ctx, x, 2 + i))
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
                        _kernel(o, o.abs(o.subtract(r, float(j))), "cubic", -0.75),
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
    o = _Ops(ctx)
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
            pos = _positions(ctx, n, None)
            count = _scalar_f64(ctx, n)
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


# ----- RoiAlign (10, 16) ----------------------------------------------------------------------

MAX_POOLED = 1 << 12  # output_height / output_width / sampling_ratio from a file


@converter(
    "RoiAlign",
    attrs=(
        "coordinate_transformation_mode",
        "mode",
        "output_height",
        "output_width",
        "sampling_ratio",
        "spatial_scale",
    ),
    min_version=10,
)
def _roi_align(ctx):
    """Per RoI, bin and sample (a fixed ``sampling_ratio`` squared per bin): the bilinear value
    at the sample (ONNX's edge rules: 0 outside [-1, size], clamped at the last pixel), its
    four corners ``take``-n from ``x`` flattened to ``[N * H * W, C]``; the bin's mean (avg)
    or the max over samples of the largest weighted corner (max, as ONNX's reference)."""
    x, rois, batch = ctx.input(0), ctx.input(1), ctx.input(2)
    if ctx.rank(0) != 4:
        raise ConversionError(f"RoiAlign needs 4-D data, got {x.ty}")
    default = "half_pixel" if ctx.version >= 16 else "output_half_pixel"
    how = ctx.attr("coordinate_transformation_mode", default)
    mode = ctx.attr("mode", "avg")
    ph_n, pw_n = int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1))
    ratio = int(ctx.attr("sampling_ratio", 0))
    scale = float(ctx.attr("spatial_scale", 1.0))
    if how not in ("half_pixel", "output_half_pixel"):
        raise ConversionError(f"coordinate_transformation_mode {how!r}")
    if mode not in ("avg", "max"):
        raise ConversionError(f"mode {mode!r} is not avg or max")
    if not (1 <= ph_n <= MAX_POOLED and 1 <= pw_n <= MAX_POOLED and 0 <= ratio <= 64):
        raise ConversionError(
            f"output {ph_n}x{pw_n} and sampling_ratio {ratio}: 1 to {MAX_POOLED}, 0 to 64"
        )
    if ratio == 0:
        raise Unsupported("RoiAlign with adaptive sampling (sampling_ratio 0)")
    if not x.ty.dtype.is_float:
        raise Unsupported(f"RoiAlign of {x.ty.dtype} data")
    rshape = rois.ty.shape
    if rshape is None or len(rshape) != 2 or rshape[1] not in (4,) and isinstance(rshape[1], int):
        raise ConversionError(f"rois {rois.ty} must be [num_rois, 4]")
    o = _Ops(ctx)
    r = cast_to(ctx, rois, F64)
    offset = 0.5 if how == "half_pixel" else 0.0

    def col(j):
        v = ctx.call("take", r, ctx.constant(j, I64), axis=1)  # [R]
        return o.subtract(o.multiply(v, scale), offset)

    starts = {"w": col(0), "h": col(1)}
    ends = {"w": col(2), "h": col(3)}
    sizes = {"h": dim_value(ctx, x, 2), "w": dim_value(ctx, x, 3)}
    pooled = {"h": ph_n, "w": pw_n}
    taps = {}  # per dim: per sample, [(index [R, P] i64, weight [R, P] f64)] for low, high
    for d in ("h", "w"):
        length = o.subtract(ends[d], starts[d])
        if how == "output_half_pixel":
            length = o.maximum(length, 1.0)
        bin_size = ctx.call("unsqueeze", o.divide(length, float(pooled[d])), axes=[1])
        start = ctx.call("unsqueeze", starts[d], axes=[1])
        base = o.add(start, o.multiply(ctx.call("arange", stop=pooled[d], dtype=F64), bin_size))
        size = _scalar_f64(ctx, sizes[d])
        last = o.subtract(size, 1.0)
        per_sample = []
        for i in range(ratio):
            v = o.add(base, o.multiply(bin_size, (i + 0.5) / ratio))  # [R, P]
            valid = ctx.call("logical_and", o.greater_equal(v, -1.0), o.less_equal(v, size))
            v = o.maximum(v, 0.0)
            low = o.floor(v)
            edge = o.greater_equal(low, last)
            low = ctx.call("where", edge, last, low)
            high = ctx.call("where", edge, last, o.add(low, 1.0))
            v = ctx.call("where", edge, low, v)
            frac = ctx.call("where", valid, o.subtract(v, low), o.f(0.0))
            keep = ctx.call("where", valid, o.subtract(1.0, frac), o.f(0.0))
            per_sample.append([(low, keep), (high, frac)])
        taps[d] = per_sample
    # x as [N * H * W, C]; the rows of image b start at b * H * W
    hw = ctx.call("multiply", sizes["h"], sizes["w"])
    flat = ctx.call("permute_dims", x, axes=[0, 2, 3, 1])
    flat = ctx.call("reshape", flat, shape=[-1, x.ty.shape[1]])
    first = ctx.call("multiply", cast_to(ctx, batch, I64), hw)
    first = ctx.call("reshape", first, shape=[-1, 1, 1])
    width = sizes["w"]
    total = None
    for ys in taps["h"]:
        for xs in taps["w"]:
            best = None
            for yi, wy in ys:
                for xi, wx in xs:
                    row = ctx.call("multiply", cast_to(ctx, yi, I64), width)
                    row = ctx.call("unsqueeze", row, axes=[2])  # [R, PH, 1]
                    col_ = ctx.call("unsqueeze", cast_to(ctx, xi, I64), axes=[1])  # [R, 1, PW]
                    index = ctx.call("add", first, ctx.call("add", row, col_))
                    vals = cast_to(ctx, ctx.call("take", flat, index, axis=0), F64)
                    w = o.multiply(
                        ctx.call("unsqueeze", wy, axes=[2]), ctx.call("unsqueeze", wx, axes=[1])
                    )
                    term = o.multiply(vals, ctx.call("unsqueeze", w, axes=[3]))  # [R,PH,PW,C]
                    if mode == "avg":
                        total = term if total is None else o.add(total, term)
                    else:
                        best = term if best is None else o.maximum(best, term)
            if mode == "max":
                total = best if total is None else o.maximum(total, best)
    if mode == "avg":
        total = o.divide(total, float(ratio * ratio))
    return cast_to(ctx, ctx.call("permute_dims", total, axes=[0, 3, 1, 2]), x.ty.dtype)


# ----- NonMaxSuppression (10, 11) -------------------------------------------------------------

MAX_NMS_BOXES = 512  # the greedy pass is unrolled, one step per box


@converter("NonMaxSuppression", attrs=("center_point_box",), min_version=10)
def _non_max_suppression(ctx):
    """Per batch and class, boxes in descending score (``topk``; ties: lower index first),
    the matrix of "IoU above the threshold" between them, then ONNX's greedy pass unrolled
    over the (static) box count: box i is kept when it passes the score threshold and no
    kept box before it overlaps it. The first ``max_output_boxes_per_class`` kept boxes are
    selected; ``nonzero`` lists them (batch, class, then score order) as [n, 3] indices."""
    boxes, scores = ctx.input(0), ctx.input(1)
    center = int(ctx.attr("center_point_box", 0))
    if center not in (0, 1):
        raise ConversionError(f"center_point_box must be 0 or 1, got {center}")
    bshape, sshape = boxes.ty.shape, scores.ty.shape
    if bshape is None or len(bshape) != 3 or sshape is None or len(sshape) != 3:
        raise ConversionError(f"boxes {boxes.ty} and scores {scores.ty} must be 3-D")
    count = bshape[1]
    if not isinstance(count, int) or sshape[2] != count:
        raise Unsupported("NonMaxSuppression of an unknown number of boxes")
    if count > MAX_NMS_BOXES:
        raise Unsupported(f"NonMaxSuppression of more than {MAX_NMS_BOXES} boxes")
    if not boxes.ty.dtype.is_float or not scores.ty.dtype.is_float:
        raise ConversionError("boxes and scores must be floating-point")
    o = _Ops(ctx)
    dt = boxes.ty.dtype

    def scalar(i, dtype):
        if not ctx.has(i):
            return None
        v = ctx.input(i)
        v = cast_to(ctx, v, dtype)
        return v if v.ty.shape == () else ctx.call("reshape", v, shape=[])

    if count == 0:
        return ctx.call("zeros", shape=[0, 3], dtype=I64)
    most = scalar(2, I64)
    iou = scalar(3, dt)
    least = scalar(4, scores.ty.dtype)
    # boxes sorted by score per (batch, class): [B, C, S, 4]
    out = ctx.call("topk", scores, k=count, axis=-1, largest=True)
    order = ctx.tuple_item(out, 1)  # [B, C, S]
    batch = ctx.call("arange", stop=bshape[0], dtype=I64) if _is_dim(bshape[0]) else None
    if batch is None:
        zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
        batch = index_range(ctx, zero, dim_value(ctx, boxes, 0), one)
    first = ctx.call(
        "reshape", ctx.call("multiply", batch, ctx.constant(count, I64)), shape=[-1, 1, 1]
    )
    flat = ctx.call("reshape", boxes, shape=[-1, 4])
    sorted_boxes = ctx.call("take", flat, ctx.call("add", first, order), axis=0)

    def coord(j):
        return ctx.call("take", sorted_boxes, ctx.constant(j, I64), axis=3)  # [B, C, S]

    if center:
        two = ctx.constant(2.0, dt)
        half_w, half_h = o.divide(coord(2), two), o.divide(coord(3), two)
        x0, x1 = o.subtract(coord(0), half_w), o.add(coord(0), half_w)
        y0, y1 = o.subtract(coord(1), half_h), o.add(coord(1), half_h)
    else:
        y0, y1 = o.minimum(coord(0), coord(2)), o.maximum(coord(0), coord(2))
        x0, x1 = o.minimum(coord(1), coord(3)), o.maximum(coord(1), coord(3))
    x0, x1, y0, y1 = (cast_to(ctx, v, dt) for v in (x0, x1, y0, y1))

    def pair(v, op):  # [B, C, S, S]: op(v_i, v_j)
        return ctx.call(op, ctx.call("unsqueeze", v, axes=[3]), ctx.call("unsqueeze", v, axes=[2]))

    wide = ctx.call("subtract", pair(x1, "minimum"), pair(x0, "maximum"))
    high = ctx.call("subtract", pair(y1, "minimum"), pair(y0, "maximum"))
    zero = ctx.constant(0.0, dt)
    area = ctx.call("multiply", ctx.call("subtract", x1, x0), ctx.call("subtract", y1, y0))
    inter = ctx.call("multiply", wide, high)
    union = ctx.call("subtract", pair(area, "add"), inter)
    over = ctx.call("logical_and", ctx.call("greater", wide, zero), ctx.call("greater", high, zero))
    over = ctx.call("logical_and", over, ctx.call("greater", inter, zero))
    positive = ctx.call("greater", area, zero)
    over = ctx.call("logical_and", over, pair(positive, "logical_and"))
    over = ctx.call("logical_and", over, ctx.call("greater", union, zero))
    safe = ctx.call("where", ctx.call("greater", union, zero), union, ctx.constant(1.0, dt))
    ratio = ctx.call("divide", inter, safe)
    limit = iou if iou is not None else zero
    over = ctx.call("logical_and", over, ctx.call("greater", ratio, limit))
    sorted_scores = ctx.tuple_item(out, 0)
    if least is not None:
        valid = ctx.call("greater", sorted_scores, least)
    else:
        valid = ctx.call("full_like", sorted_scores, value=1.0, dtype=DType.bool)
    keep = ctx.call("full_like", sorted_scores, value=0.0, dtype=DType.bool)
    for i in range(count):
        at = ctx.constant(i, I64)
        row = ctx.call("take", over, at, axis=2)  # [B, C, S]: overlaps of box i
        blocked = ctx.call("max", ctx.call("logical_and", keep, row), axes=[2], keepdims=False)
        ok = ctx.call(
            "logical_and", ctx.call("take", valid, at, axis=2), ctx.call("logical_not", blocked)
        )
        hot = ctx.constant(np.arange(count) == i, DType.bool)
        keep = ctx.call(
            "logical_or", keep, ctx.call("logical_and", hot, ctx.call("unsqueeze", ok, axes=[2]))
        )
    if most is None:
        keep = ctx.call("logical_and", keep, ctx.constant(False, DType.bool))
    else:
        rank = ctx.call("cumsum", cast_to(ctx, keep, I64), axis=2)
        keep = ctx.call("logical_and", keep, ctx.call("less_equal", rank, most))
    where = ctx.call("nonzero", keep)  # [3, n]: batch, class, position in score order
    b, c, pos = (ctx.call("take", where, ctx.constant(j, I64), axis=0) for j in range(3))
    classes = dim_value(ctx, scores, 1)
    flat_index = ctx.call(
        "add",
        ctx.call(
            "multiply",
            ctx.call("add", ctx.call("multiply", b, classes), c),
            ctx.constant(count, I64),
        ),
        pos,
    )
    box = ctx.call("take", ctx.call("reshape", order, shape=[-1]), flat_index, axis=0)
    rows = [ctx.call("unsqueeze", v, axes=[1]) for v in (b, c, cast_to(ctx, box, I64))]
    return ctx.call("concat", *rows, axis=1)


def _is_dim(d) -> bool:
    return isinstance(d, int | SymExpr)


# ----- DeformConv (19) ------------------------------------------------------------------------


@converter(
    "DeformConv",
    attrs=("dilations", "group", "kernel_shape", "offset_group", "pads", "strides"),
    min_version=19,
)
def _deform_conv(ctx):
    """2-D deformable convolution: per kernel position, the input sampled bilinearly (zeros
    outside, as ONNX's reference samples with GridSample) at the output position's offset
    point, times the mask; the columns ``[N, C * kH * kW, oH * oW]`` then meet the weights in
    one ``matmul`` per group."""
    x, w, off = ctx.input(0), ctx.input(1), ctx.input(2)
    xs, ws, offs = x.ty.shape, w.ty.shape, off.ty.shape
    if xs is None or len(xs) != 4 or ws is None or len(ws) != 4 or offs is None:
        raise Unsupported("DeformConv other than 2-D of known rank")
    if not all(isinstance(d, int) for d in (*xs[1:], *ws, *offs[1:])):
        raise Unsupported("DeformConv with symbolic dims other than the batch")
    if not x.ty.dtype.is_float:
        raise ConversionError(f"DeformConv needs floating-point data, got {x.ty.dtype}")
    _, c, h, wd = xs
    oc, cg, kh, kw = ws
    ks = [int(v) for v in ctx.attr("kernel_shape", [kh, kw])]
    group = int(ctx.attr("group", 1))
    goff = int(ctx.attr("offset_group", 1))
    dil = [int(v) for v in ctx.attr("dilations", [1, 1])]
    strides = [int(v) for v in ctx.attr("strides", [1, 1])]
    pads = [int(v) for v in ctx.attr("pads", [0, 0, 0, 0])]
    if ks != [kh, kw] or len(dil) != 2 or len(strides) != 2 or len(pads) != 4:
        raise ConversionError(f"kernel_shape {ks}, dilations, strides, pads must fit {w.ty}")
    if group < 1 or goff < 1 or c % group or oc % group or cg * group != c or c % goff:
        raise ConversionError(f"group {group} / offset_group {goff} do not divide {x.ty}, {w.ty}")
    if min(dil) < 1 or min(strides) < 1 or min(pads) < 0:
        raise ConversionError("dilations and strides must be positive, pads not negative")
    oh = (h + pads[0] + pads[2] - (kh - 1) * dil[0] - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - (kw - 1) * dil[1] - 1) // strides[1] + 1
    k = kh * kw
    if list(offs[1:]) != [goff * k * 2, oh, ow]:
        raise ConversionError(f"offset {off.ty} must be [N, {goff * k * 2}, {oh}, {ow}]")
    mask = ctx.input(4) if ctx.has(4) else None
    if mask is not None and list(mask.ty.shape or ())[1:] != [goff * k, oh, ow]:
        raise ConversionError(f"mask {mask.ty} must be [N, {goff * k}, {oh}, {ow}]")
    o = _Ops(ctx)
    dt = x.ty.dtype
    off = ctx.call("reshape", cast_to(ctx, off, F64), shape=[-1, goff, kh, kw, 2, oh, ow])
    if mask is not None:
        mask = ctx.call("reshape", cast_to(ctx, mask, F64), shape=[-1, goff, kh, kw, oh, ow])
    ci = c // goff
    # x as [N * goff * H * W, C / goff]; sample (n, g) starts at row (n * goff + g) * H * W
    flat = ctx.call("reshape", x, shape=[-1, goff, ci, h, wd])
    flat = ctx.call("permute_dims", flat, axes=[0, 1, 3, 4, 2])
    flat = ctx.call("reshape", flat, shape=[-1, ci])
    n = xs[0]
    if _is_dim(n):
        batch = ctx.call("arange", stop=n, dtype=I64)
    else:
        zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
        batch = index_range(ctx, zero, dim_value(ctx, x, 0), one)
    first = ctx.call(
        "add",
        ctx.call("reshape", ctx.call("multiply", batch, ctx.constant(goff, I64)), shape=[-1, 1]),
        ctx.call("arange", stop=goff, dtype=I64),
    )
    first = ctx.call(
        "reshape", ctx.call("multiply", first, ctx.constant(h * wd, I64)), shape=[-1, goff, 1, 1]
    )
    rows = ctx.call("reshape", ctx.call("arange", stop=oh, dtype=F64), shape=[-1, 1])
    cols = ctx.call("arange", stop=ow, dtype=F64)
    base_y = o.subtract(o.multiply(rows, float(strides[0])), float(pads[0]))  # [oH, 1]
    base_x = o.subtract(o.multiply(cols, float(strides[1])), float(pads[1]))  # [oW]
    columns = []
    for i in range(kh):
        for j in range(kw):

            def part(t, i=i, j=j):
                v = ctx.call("take", off, ctx.constant(i, I64), axis=2)
                v = ctx.call("take", v, ctx.constant(j, I64), axis=2)
                return ctx.call("take", v, ctx.constant(t, I64), axis=2)  # [N, goff, oH, oW]

            y = o.add(part(0), o.add(base_y, float(i * dil[0])))
            xx = o.add(part(1), o.add(base_x, float(j * dil[1])))
            total = None
            y0, x0 = o.floor(y), o.floor(xx)
            for yi, wy in (
                (y0, o.subtract(1.0, o.subtract(y, y0))),
                (o.add(y0, 1.0), o.subtract(y, y0)),
            ):
                for xi, wx in (
                    (x0, o.subtract(1.0, o.subtract(xx, x0))),
                    (o.add(x0, 1.0), o.subtract(xx, x0)),
                ):
                    inside = ctx.call(
                        "logical_and",
                        ctx.call(
                            "logical_and", o.greater_equal(yi, 0.0), o.less_equal(yi, float(h - 1))
                        ),
                        ctx.call(
                            "logical_and", o.greater_equal(xi, 0.0), o.less_equal(xi, float(wd - 1))
                        ),
                    )
                    weight = ctx.call("where", inside, o.multiply(wy, wx), o.f(0.0))
                    cy = cast_to(ctx, o.minimum(o.maximum(yi, 0.0), float(h - 1)), I64)
                    cx = cast_to(ctx, o.minimum(o.maximum(xi, 0.0), float(wd - 1)), I64)
                    index = ctx.call(
                        "add",
                        first,
                        ctx.call("add", ctx.call("multiply", cy, ctx.constant(wd, I64)), cx),
                    )
                    vals = cast_to(
                        ctx, ctx.call("take", flat, index, axis=0), F64
                    )  # [N,goff,oH,oW,ci]
                    term = o.multiply(vals, ctx.call("unsqueeze", weight, axes=[4]))
                    total = term if total is None else o.add(total, term)
            if mask is not None:
                m = ctx.call(
                    "take",
                    ctx.call("take", mask, ctx.constant(i, I64), axis=2),
                    ctx.constant(j, I64),
                    axis=2,
                )
                total = o.multiply(total, ctx.call("unsqueeze", m, axes=[4]))
            # [N, goff, oH, oW, ci] -> [N, C, 1, oH * oW]
            total = ctx.call("permute_dims", total, axes=[0, 1, 4, 2, 3])
            columns.append(ctx.call("reshape", total, shape=[-1, c, 1, oh * ow]))
    col = ctx.call("concat", *columns, axis=2)  # [N, C, K, oH * oW]
    col = ctx.call("reshape", col, shape=[-1, group, cg * k, oh * ow])
    weights = ctx.call("reshape", cast_to(ctx, w, F64), shape=[group, oc // group, cg * k])
    out = ctx.call("matmul", weights, col)  # [N, group, oc / group, oH * oW]
    out = ctx.call("reshape", out, shape=[-1, oc, oh, ow])
    if ctx.has(3):
        bias = ctx.call("reshape", cast_to(ctx, ctx.input(3), F64), shape=[1, oc, 1, 1])
        out = o.add(out, bias)
    return cast_to(ctx, out, dt)
