"""Resize composed of IR ops (and Upsample, its older form): the forms of Resize the
``resize`` IR op does not take.

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

from compiler.frontend.onnx_context import ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import (
    F64,
    I64,
    F64Ops,
    cast_to,
    checked_axis,
    converter,
    dim_value,
    item_i64,
    positions_f64,
    scalar_f64,
)
from compiler.ir.nn_compute import scaled_dim, scaled_length
from compiler.ir.nodes import Expr
from compiler.ir.types import DType

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
MAX_SCALE = 1 << 16  # a scale from a file: more is a mistake (or an attack)
MAX_SIZE = 1 << 24  # an output length from a file


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
    if ctx.has(3):  # sizes known in dims (from static shapes too) are the resize op's
        return ctx.const(3) is None and ctx.dims(3, symbolic=False) is None
    if ctx.has(2):
        given = ctx.const(2)
        return given is None
    return False


def resize_composed(ctx) -> Expr:
    x = ctx.input(0)
    rank = ctx.rank(0)
    o = F64Ops(ctx)
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
    nfs = [scalar_f64(ctx, n) for n in ns]
    if ctx.has(3):
        if length_of(3, "sizes") != len(axes):
            raise ConversionError(f"sizes must give one size per axis of {axes}")
        sizes = cast_to(ctx, ctx.input(3), I64)
        ms = [item_i64(ctx, sizes, i) for i in range(len(axes))]
        scales = [o.divide(scalar_f64(ctx, m), nf) for m, nf in zip(ms, nfs, strict=True)]
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
        ms = [scaled_length_of(ctx, s, n) for s, n in zip(scales, ns, strict=True)]
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
    o = F64Ops(ctx)
    rank = ctx.rank(0)
    nfs = [scalar_f64(ctx, dim_value(ctx, x, a)) for a in axes]
    statics = [_static_int(m) for m in ms]
    y = x if mode == "nearest" else cast_to(ctx, x, F64)
    for i, a in enumerate(axes):
        pos = positions_f64(ctx, ms[i], statics[i])
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
        scaled_length(d, v) if isinstance(d, int) else None
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


def scaled_length_of(ctx, scale: Expr, n: Expr) -> Expr:
    """The result length (0-d i64) of an input ``n`` long (0-d i64) resized by ``scale``
    (0-d float), computed as onnxruntime computes it: the product in float32, truncated
    (compiler.ir.nn_compute.scaled_length)."""
    f32 = DType.float32
    product = ctx.call("multiply", cast_to(ctx, scale, f32), cast_to(ctx, n, f32))
    return cast_to(ctx, ctx.call("floor", product), I64)


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
        adjust = o.divide(scalar_f64(ctx, m), width)
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


def interpolation_kernel(o, d, mode, a):
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
            k = positions_f64(ctx, taps, None)
    else:
        s = o.f(1.0)
        k = ctx.call("arange", stop=int(2 * radius), dtype=F64)
    down = o.floor(source)
    whole = o.equal(source, down)
    # start = floor(x) - K/2 + (x not whole): the K taps nearest x, ties to the lower
    half_k = o.divide(scalar_f64(ctx, _count(ctx, k)), 2.0)
    start = o.add(o.subtract(down, half_k), ctx.call("where", whole, o.f(0.0), o.f(1.0)))
    col = ctx.call("unsqueeze", start, axes=[1])
    taps = o.add(col, ctx.call("unsqueeze", k, axes=[0]))  # [m, K]
    dist = o.abs(o.multiply(o.subtract(taps, ctx.call("unsqueeze", source, axes=[1])), s))
    coeffs = interpolation_kernel(o, dist, mode, a)
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
    # floor(d * s) as onnxruntime takes it ('?' where the dims cannot say: computed when run)
    sizes = [d if s == 1.0 else scaled_dim(d, s) for d, s in zip(x.ty.shape, scales, strict=True)]
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
    given = cast_to(ctx, ctx.input(1), F64)
    scales = [ctx.call("take", given, ctx.constant(i, I64), axis=0) for i in range(rank)]
    ms = [scaled_length_of(ctx, s, dim_value(ctx, x, a)) for a, s in enumerate(scales)]
    mode = "nearest" if mode == "nearest" else "linear"
    return _compose(ctx, x, list(range(rank)), ms, scales, None, mode, "asymmetric", "floor")
