"""Shape ops: reshape, transpose, concat, split, slice, pad, resize, expand, tile, ranges."""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.frontend.onnx_context import (
    MAX_IMPORT_ELEMENTS,
    MAX_RANK,
    ConversionError,
    Unsupported,
    dtype_of,
    tensor_value,
)
from compiler.frontend.onnx_ops.registry import (
    I64,
    cast_to,
    checked_axis,
    contains_value,
    converter,
    dim_value,
    filled_tensor,
    float_scalar,
    index_range,
    item_i64,
    normalized_axes,
    scalar_i64,
    select_if,
    static_dim,
)
from compiler.ir.nn_compute import scaled_dim
from compiler.ir.nodes import Expr, IRError
from compiler.ir.shape_inference import broadcast_shapes
from compiler.ir.symbolic import ANY, SymExpr, dim_add, dim_mul, dim_str
from compiler.ir.symbolic import floordiv as dim_floordiv
from compiler.ir.types import DType

# ----- shapes -----------------------------------------------------------------------------


@converter("Reshape", attrs=("allowzero",), min_version=5)
def _reshape(ctx):
    x = ctx.input(0)
    allowzero = bool(ctx.attr("allowzero", 0))
    target = ctx.const(1)
    if target is None:
        # known in dims ([batch, seq, 4, 16]), or in ints from static shapes alone (GroupNorm's
        # Reshape(x, Shape(y)) of a static y): the attribute form keeps the result's dims known
        dims = ctx.dims(1, symbolic=False)
        if dims is not None and _is_shape(dims):
            try:
                return ctx.call("reshape", x, shape=dims, allowzero=allowzero)
            except IRError:
                pass  # not expressible in dims (a -1 over symbolic sizes): computed below
        return ctx.call("reshape", x, cast_to(ctx, ctx.input(1), I64), allowzero=allowzero)
    return ctx.call("reshape", x, shape=[int(v) for v in target.reshape(-1)], allowzero=allowzero)


@converter("Flatten", attrs=("axis",))
def _flatten(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = ctx.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise ConversionError(f"axis {axis} is out of range for rank {rank}")
    if axis < 0:
        axis += rank
    if rank == 0:
        return ctx.call("reshape", x, shape=[1, 1])
    if axis == 0:
        y = ctx.call("flatten", x)
        return ctx.call("unsqueeze", y, axes=[0])
    if axis == rank:
        y = ctx.call("flatten", x)
        return ctx.call("unsqueeze", y, axes=[1])
    y = ctx.call("flatten", x, start_dim=axis, end_dim=-1)
    return ctx.call("flatten", y, start_dim=0, end_dim=axis - 1)


@converter("Transpose", attrs=("perm",))
def _transpose(ctx):
    perm = ctx.attr("perm")
    return ctx.call("permute_dims", ctx.input(0), axes=list(perm) if perm else None)


def _axes_of(ctx, required: bool) -> list[int] | None:
    if "axes" in ctx.attrs:
        return list(ctx.attr("axes"))
    axes = ctx.const_ints(1, "axes")
    if axes is None and required:
        raise ConversionError("needs axes")
    return axes


def _computed_axes(ctx) -> Expr | None:
    """The axes input when it is computed (not an attribute nor a constant), else None."""
    if "axes" in ctx.attrs or not ctx.has(1) or ctx.const(1) is not None:
        return None
    return ctx.input(1)


@converter("Squeeze", attrs=("axes",))
def _squeeze(ctx):
    x = ctx.input(0)
    computed = _computed_axes(ctx)
    if computed is None:
        axes = _axes_of(ctx, required=False)
        return ctx.call("squeeze", x, axes=axes if axes else None)
    # one If per axis that may have size 1, from the last
    rank = ctx.rank(0)
    norm = normalized_axes(ctx, computed, rank)
    y = x
    for a in reversed(range(rank)):
        d = x.ty.shape[a]
        if isinstance(d, int) and d != 1:
            continue  # cannot be squeezed: listing it is an error ONNX reports at run time
        y = select_if(ctx, contains_value(ctx, norm, a), ctx.call("squeeze", y, axes=[a]), y)
    return y if y is not x else ctx.call("identity", x)


@converter("Unsqueeze", attrs=("axes",))
def _unsqueeze(ctx):
    x = ctx.input(0)
    computed = _computed_axes(ctx)
    if computed is None:
        return ctx.call("unsqueeze", x, axes=_axes_of(ctx, required=True))
    shape = computed.ty.shape
    if shape is None or len(shape) != 1 or not isinstance(shape[0], int):
        raise Unsupported("Unsqueeze with computed axes of unknown length")
    out_rank = ctx.rank(0) + shape[0]
    if out_rank > MAX_RANK:
        raise ConversionError(f"the result would have rank {out_rank}")
    norm = normalized_axes(ctx, computed, out_rank)
    y = x
    for p in range(out_rank):  # ascending: each insertion is at its final position
        y = select_if(ctx, contains_value(ctx, norm, p), ctx.call("unsqueeze", y, axes=[p]), y)
    return y


@converter("Concat", attrs=("axis",), min_version=4)
def _concat(ctx):
    args = [ctx.input(i) for i in range(ctx.num_inputs)]
    return ctx.call("concat", *args, axis=ctx.attr("axis"))


@converter("Split", attrs=("axis", "split", "num_outputs"), min_version=2)
def _split(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = checked_axis(ctx, ctx.attr("axis", 0), rank)
    count = len(ctx.node.output)
    if "split" not in ctx.attrs and ctx.has(1) and ctx.const(1) is None:
        return split_computed(ctx, x, ctx.input(1), axis, count)
    sizes = list(ctx.attr("split")) if "split" in ctx.attrs else ctx.const_ints(1, "split")
    d = x.ty.shape[axis]
    spec: Any = None
    if sizes is None:
        n = ctx.attr("num_outputs", count)
        if isinstance(d, int) and d % n:  # opset 18: uneven, the last chunk is smaller
            chunk = -(-d // n)
            sizes = [min(chunk, d - i * chunk) for i in range(n)]
        else:
            spec = n
    if sizes is not None:
        if len(sizes) != count:
            raise ConversionError(f"split {sizes} must have one size per output ({count})")
        spec = tuple(int(v) for v in np.cumsum(sizes)[:-1])
    if spec == 1 or spec == ():
        return [ctx.call("identity", x)]
    parts = ctx.call("split", x, indices_or_sections=spec, axis=axis)
    return [ctx.tuple_item(parts, i) for i in range(count)]


def split_computed(ctx, x: Expr, sizes: Expr, axis: int, count: int) -> list[Expr]:
    """Split by computed sizes: each part takes its index range along the axis."""
    sizes = cast_to(ctx, sizes, I64)
    starts = ctx.call("cumsum", sizes, axis=0, exclusive=True)
    one = ctx.constant(1, I64)
    parts = []
    for i in range(count):
        begin = item_i64(ctx, starts, i)
        end = ctx.call("add", begin, item_i64(ctx, sizes, i))
        parts.append(ctx.call("take", x, index_range(ctx, begin, end, one), axis=axis))
    return parts


@converter("Slice", min_version=10)
def _slice(ctx):
    x = ctx.input(0)
    if not (ctx.has(1) and ctx.has(2)):
        raise ConversionError("needs starts and ends")
    computed = [i for i in (1, 2, 3, 4) if ctx.has(i) and ctx.const(i) is None]
    if not computed:
        starts, ends = ctx.const_ints(1, "starts"), ctx.const_ints(2, "ends")
        axes, steps = ctx.const_ints(3, "axes"), ctx.const_ints(4, "steps")
        return ctx.call("strided_slice", x, begin=starts, end=ends, strides=steps, axes=axes)
    symbolic = _slice_symbolic(ctx, x)
    return symbolic if symbolic is not None else _slice_computed(ctx, x)


def _slice_symbolic(ctx, x: Expr) -> Expr | None:
    """Slice whose computed bounds are known in dims (``x[:, :seq]`` of a longer buffer, as
    exported models slice their causal masks): per axis a strided_slice for int bounds, or a
    take of ``arange(start, end)`` for symbolic ones (assumed inside the dim, as the torch
    path does; an index outside it is an error in the interpreter, clamped in compiled code).
    None when a bound is not known or a step is not 1 with symbolic bounds."""
    if not ctx.reads_symbolic_dims(1, 2, 3, 4):
        return None  # computed from static sizes: dynamic-to-static folds it
    starts, ends = ctx.dims(1, symbolic=False), ctx.dims(2, symbolic=False)
    axes = ctx.dims(3, symbolic=False) if ctx.has(3) else None
    steps = ctx.dims(4, symbolic=False) if ctx.has(4) else None
    if starts is None or ends is None or len(starts) != len(ends):
        return None
    if (ctx.has(3) and axes is None) or (ctx.has(4) and steps is None):
        return None
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not all(isinstance(v, int) for v in (*axes, *steps)) or len(axes) != len(starts):
        return None
    rank = ctx.rank(0)
    y = x
    for a, start, end, step in zip(axes, starts, ends, steps, strict=True):
        a = checked_axis(ctx, a, rank)
        size = x.ty.shape[a]
        if isinstance(start, int) and isinstance(end, int):
            y = ctx.call("strided_slice", y, begin=[start], end=[end], strides=[step], axes=[a])
            continue
        if step != 1 or size is ANY:
            return None
        if isinstance(start, int) and start < 0:
            start = dim_add(size, start)
        if isinstance(end, int):
            end = size if end >= 2**62 else (dim_add(size, end) if end < 0 else end)
        if isinstance(start, int) and start == 0 and isinstance(end, SymExpr) and end == size:
            continue  # the whole axis
        index = ctx.call("arange", start=start, stop=end, step=1, dtype=I64)
        y = ctx.call("take", y, index, axis=a)
    return y


def _slice_indices(ctx, x: Expr, a: int, start: Expr, end: Expr, step: Expr, backward: Expr):
    """The indices ``range(len)[start:end:step]`` of axis ``a`` of ``x`` (0-d i64 bounds)."""
    zero, one, minus_one = ctx.constant(0, I64), ctx.constant(1, I64), ctx.constant(-1, I64)
    n = dim_value(ctx, x, a)
    last = ctx.call("subtract", n, one)

    def clamp(v: Expr, low_fwd: Expr, high_fwd: Expr, low_bwd: Expr, high_bwd: Expr) -> Expr:
        v = ctx.call("where", ctx.call("less", v, zero), ctx.call("add", v, n), v)
        low = ctx.call("where", backward, low_bwd, low_fwd)
        high = ctx.call("where", backward, high_bwd, high_fwd)
        return ctx.call("minimum", ctx.call("maximum", v, low), high)

    begin = clamp(start, zero, n, zero, last)
    stop = clamp(end, zero, n, minus_one, last)
    return index_range(ctx, begin, stop, step)


def _slice_computed(ctx, x: Expr) -> Expr:
    """Slice with computed starts, ends, axes or steps: per sliced axis, clamp the bounds as
    Python slicing does and take the index range; a computed axis is chosen by Ifs."""
    rank = ctx.rank(0)
    starts = cast_to(ctx, ctx.input(1), I64)
    count = starts.ty.shape[0] if starts.ty.shape and len(starts.ty.shape) == 1 else ANY
    if not isinstance(count, int):
        raise Unsupported("Slice with computed starts of unknown length")
    if count > rank:
        raise ConversionError(f"{count} starts for an input of rank {rank}")
    ends = cast_to(ctx, ctx.input(2), I64)
    steps = cast_to(ctx, ctx.input(4), I64) if ctx.has(4) else None
    axes: Any = list(range(count))
    if ctx.has(3):
        axes = ctx.const_ints(3, "axes") if ctx.const(3) is not None else ctx.input(3)
    computed_axes = normalized_axes(ctx, axes, rank) if isinstance(axes, Expr) else None
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    y = x
    for k in range(count):
        step = item_i64(ctx, steps, k) if steps is not None else one
        backward = ctx.call("less", step, zero)

        def indices(a: int, k: int = k, step: Expr = step, backward: Expr = backward) -> Expr:
            return _slice_indices(
                ctx, x, a, item_i64(ctx, starts, k), item_i64(ctx, ends, k), step, backward
            )

        if computed_axes is None:
            a = checked_axis(ctx, axes[k], rank, "axes entry")
            y = ctx.call("take", y, indices(a), axis=a)
            continue
        axis_k = item_i64(ctx, computed_axes, k)
        chosen = y
        for a in range(rank):
            is_a = ctx.call("equal", axis_k, ctx.constant(a, I64))
            chosen = select_if(ctx, is_a, ctx.call("take", y, indices(a), axis=a), chosen)
        y = chosen
    return y


@converter("Pad", attrs=("mode",), min_version=11)
def _pad(ctx):
    x = ctx.input(0)
    mode = ctx.attr("mode", "constant")
    if mode == "wrap":
        from compiler.frontend.onnx_ops.misc import pad_wrap

        return pad_wrap(ctx)
    if mode not in ("constant", "reflect", "edge"):
        raise Unsupported(f"mode {mode}")
    value, computed_value = 0.0, None
    if ctx.has(2):
        cv = ctx.const(2)
        if cv is None:
            computed_value = ctx.input(2)
        else:
            value = float_scalar(cv, "constant_value") if cv.size else 0.0
    axes = ctx.const_ints(3, "axes") if ctx.const(3) is not None or not ctx.has(3) else None
    pads = ctx.const(1)
    if pads is not None:
        pads = [int(p) for p in pads.reshape(-1)]
    else:  # computed from static sizes (Swin's window padding of a static image): ints
        pads = ctx.dims(1)
        if pads is not None and not all(isinstance(p, int) for p in pads):
            pads = None  # symbolic pad sizes: pad's attribute holds ints only
    if pads is None or (ctx.has(3) and axes is None):
        pads_in = _pads_tensor(ctx, ctx.input(1), ctx.inputs[3] if ctx.has(3) else None)
        y = ctx.call("pad", x, pads_in, mode=mode, value=value)
    else:
        if axes is not None:
            rank = ctx.rank(0)
            full = [0] * (2 * rank)
            if len(pads) != 2 * len(axes):
                raise ConversionError(f"pads {pads} must have two values per axis of {axes}")
            for k, a in enumerate(axes):
                a = checked_axis(ctx, a, rank, "axes entry")
                full[a], full[a + rank] = pads[k], pads[k + len(axes)]
            pads = full
        pads_in = None
        y = ctx.call("pad", x, pads=pads, mode=mode, value=value)
    if computed_value is None or mode != "constant":
        return y
    # a computed fill value: pad with 0, then put the value where a padded mask is false
    inside = ctx.call("full_like", x, value=1.0, dtype=DType.bool)
    if pads_in is None:
        mask = ctx.call("pad", inside, pads=pads, mode="constant")
    else:
        mask = ctx.call("pad", inside, pads_in, mode="constant")
    fill = ctx.call("reshape", cast_to(ctx, computed_value, x.ty.dtype), shape=[])
    return ctx.call("where", mask, y, fill)


_RESIZE_COORDINATES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
)


@converter(
    "Resize",
    attrs=(
        "mode",
        "coordinate_transformation_mode",
        "nearest_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "antialias",
        "axes",
        "keep_aspect_ratio_policy",
    ),
    min_version=11,
)
def _resize(ctx):
    from compiler.frontend.onnx_ops import resize  # the forms the resize IR op does not take

    if resize.resize_needs_composition(ctx):
        return resize.resize_composed(ctx)
    x = ctx.input(0)
    rank = ctx.rank(0)
    mode = ctx.attr("mode", "nearest")
    how = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear", "cubic"):
        raise Unsupported(f"mode {mode}")
    if how not in _RESIZE_COORDINATES:
        raise Unsupported(f"coordinate_transformation_mode {how}")
    nearest = ctx.attr("nearest_mode", "round_prefer_floor")
    if nearest not in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        raise Unsupported(f"nearest_mode {nearest}")
    if ctx.attr("antialias", 0) and mode != "nearest":  # antialias changes linear downsampling
        raise Unsupported("antialias")
    # extrapolation_value acts in tf_crop_and_resize only (composed in resize.py)
    cubic = {}
    if mode == "cubic":
        cubic = {
            "cubic_coeff_a": float(ctx.attr("cubic_coeff_a", -0.75)),
            "exclude_outside": bool(ctx.attr("exclude_outside", 0)),
        }
    if mode != "nearest" and not x.ty.dtype.is_float:
        raise Unsupported(f"{mode} Resize of {x.ty.dtype} data")
    axes = ctx.attr("axes")
    axes = (
        list(range(rank))
        if axes is None
        else [checked_axis(ctx, a, rank, "axes entry") for a in axes]
    )
    in_shape = list(x.ty.shape)
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    resize.check_resize_values(ctx, axes)  # sizes and scales in range (from a file)
    scales = None
    if ctx.has(3):  # sizes
        given = ctx.const(3)
        picked = (
            [int(v) for v in given.reshape(-1)]
            if given is not None
            else ctx.dims(3, symbolic=False)
        )
        if picked is None:
            raise Unsupported("Resize with computed sizes")
        if len(picked) != len(axes):
            raise ConversionError(f"sizes {picked} must give one size per axis of {axes}")
        sizes = list(in_shape)
        for a, n in zip(axes, picked, strict=True):
            sizes[a] = n
        if policy != "stretch":
            known = [in_shape[a] for a in axes] + picked
            if not all(isinstance(d, int) for d in known):
                raise Unsupported(f"keep_aspect_ratio_policy {policy} with symbolic sizes")
            ratios = [sizes[a] / in_shape[a] for a in axes]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if a in axes else 1.0 for a in range(rank)]
            for a in axes:
                sizes[a] = int(scale * in_shape[a] + 0.5)  # ONNX rounds half up
    else:
        given = ctx.const(2) if ctx.has(2) else None
        if given is None or given.size == 0:
            raise Unsupported("Resize without constant scales or sizes")
        picked = [float(v) for v in given.reshape(-1)]
        if len(picked) != len(axes):
            raise ConversionError(f"scales {picked} must give one scale per axis of {axes}")
        scales = [1.0] * rank
        for a, v in zip(axes, picked, strict=True):
            scales[a] = v
        sizes = []
        for d, v in zip(in_shape, scales, strict=True):
            # floor(d * v) as onnxruntime takes it; '?' (an unknown dim, or a symbolic one
            # by a scale like 0.7): the resize op computes it from the value when run
            sizes.append(d if v == 1.0 else scaled_dim(d, v))
    return ctx.call(
        "resize",
        x,
        sizes=sizes,
        scales=scales,
        mode=mode,
        coordinate_transformation_mode=how,
        nearest_mode=nearest,
        **cubic,
    )


def _pads_tensor(ctx, pads: Expr, axes: Expr | None) -> Expr:
    """A pads input as the full i64 pads tensor (all begins, then all ends) of the data's rank;
    with axes, each given pair is placed at its axis (a one-hot product summed over axes)."""
    pads = cast_to(ctx, pads, I64)
    if axes is None:
        return pads
    rank = ctx.rank(0)
    axes_shape = axes.ty.shape
    if axes_shape is None or len(axes_shape) != 1 or not isinstance(axes_shape[0], int):
        raise Unsupported("Pad with axes of unknown length")
    k = axes_shape[0]
    norm = normalized_axes(ctx, axes, rank)
    # hot[i, a] = (axes[i] == a), shape (k, rank)
    hot = ctx.call(
        "equal",
        ctx.call("unsqueeze", norm, axes=[1]),
        ctx.constant(np.arange(rank)[None, :], I64),
    )
    hot = cast_to(ctx, hot, I64)
    halves = []
    for lo in (0, k):
        part = ctx.call("strided_slice", pads, begin=[lo], end=[lo + k], axes=[0])
        spread = ctx.call("multiply", hot, ctx.call("unsqueeze", part, axes=[1]))
        halves.append(ctx.call("sum", spread, axes=[0]))
    return ctx.call("concat", *halves, axis=0)


@converter("Expand", min_version=8)
def _expand(ctx):
    x = ctx.input(0)
    target = ctx.const(1)
    # known in dims, from static shapes too (``Expand(y, Shape(x))`` of a static x)
    dims = ctx.dims(1, symbolic=False) if target is None else [int(v) for v in target.reshape(-1)]
    if dims is None or not _is_shape(dims, minus_one=False):
        # computed shape: broadcast against a filled tensor of that shape
        cond = filled_tensor(ctx, ctx.input(1), True, DType.bool)
        return ctx.call("where", cond, x, x)
    if x.ty.shape is None:
        raise Unsupported("Expand of a value of unknown rank")
    try:
        shape = broadcast_shapes(x.ty.shape, tuple(dims))
    except TypeError as e:
        raise ConversionError(str(e)) from None
    return ctx.call("broadcast_to", x, shape=list(shape))


@converter("Tile", min_version=6)
def _tile(ctx):
    x = ctx.input(0)
    if ctx.const(1) is not None:
        return ctx.call("tile", x, repeats=ctx.const_ints(1, "repeats"))
    reps = ctx.dims(1, symbolic=False)  # known in dims, from static shapes too
    shape = x.ty.shape
    if reps is not None and shape is not None and ANY not in shape and ANY not in reps:
        if len(reps) != len(shape) or not _is_shape(reps, minus_one=False):
            raise ConversionError(
                f"repeats {[dim_str(r) for r in reps]} for a rank-{len(shape)} input"
            )
        if all(isinstance(r, int) for r in reps):  # computed from static shapes alone
            return ctx.call("tile", x, repeats=reps)
        # repeats known in dims (``Tile(x, Concat(Shape(ids)[:1], [1]))``: a batch): the same
        # spreading with every size known, so the result has dims, not '?'
        split = [d for s in shape for d in (1, s)]
        wide = [d for r, s in zip(reps, shape, strict=True) for d in (r, s)]
        y = ctx.call("broadcast_to", ctx.call("reshape", x, shape=split), shape=wide)
        out = [dim_mul(r, s) for r, s in zip(reps, shape, strict=True)]
        return ctx.call("reshape", y, shape=out)
    # computed repeats: (1, d0, 1, d1, ...) broadcast to (r0, d0, r1, d1, ...), then merged
    rank = ctx.rank(0)
    reps = cast_to(ctx, ctx.input(1), I64)
    spread = ctx.call("unsqueeze", x, axes=[2 * i for i in range(rank)])
    shape = ctx.call("shape_of", x)
    pairs = ctx.call(
        "concat",
        ctx.call("unsqueeze", reps, axes=[1]),
        ctx.call("unsqueeze", shape, axes=[1]),
        axis=1,
    )
    target = ctx.call("reshape", pairs, shape=[2 * rank])
    cond = filled_tensor(ctx, target, True, DType.bool)
    big = ctx.call("where", cond, spread, spread)
    return ctx.call("reshape", big, ctx.call("multiply", reps, shape))


@converter("ConstantOfShape", attrs=("value",))
def _constant_of_shape(ctx):
    if "value" in ctx.attrs:
        v = tensor_value(ctx.attr("value"))
        if v.size != 1:
            raise ConversionError(f"value must hold one element, got shape {list(v.shape)}")
        dtype, value = DType.of(v.dtype), v.reshape(-1)[0]
    else:
        dtype, value = DType.float32, np.float32(0)
    shape = ctx.const(0)
    if shape is None:
        # known in dims, static ones included: a tensor of computed shape would be all '?'
        # (exporters build zeros this way inside their pads computations)
        dims = ctx.dims(0, symbolic=False)
        if dims is None or not _is_shape(dims, minus_one=False):
            return filled_tensor(ctx, ctx.input(0), value, dtype)
    else:
        if shape.size > MAX_RANK:
            raise ConversionError(f"the shape has {shape.size} values: more than {MAX_RANK} dims")
        dims = [int(d) for d in shape.reshape(-1)]
    if value == 0:
        return ctx.call("zeros", shape=dims, dtype=dtype)
    if value == 1:
        return ctx.call("ones", shape=dims, dtype=dtype)
    if dtype.is_int and abs(int(value)) >= 2**53:  # not exact as the float attribute
        return ctx.call("broadcast_to", ctx.constant(value, dtype), shape=dims)
    return ctx.call("full", shape=dims, value=float(value), dtype=dtype)


@converter("Range", attrs=("stash_type",))
def _range(ctx):
    if ctx.version >= 27 and ctx.attr("stash_type", 1) == 1:
        dtype = ctx.ty(0).dtype
        if dtype in (DType.float16, DType.bfloat16):  # Range-27: accumulated in float32
            ctx.inputs = [
                cast_to(ctx, ctx.input(i), DType.float32)
                if ctx.const(i) is None
                else ctx.constant(ctx.const(i).astype(np.float32), DType.float32)
                for i in range(3)
            ]
            return cast_to(ctx, _range(ctx), dtype)
    values = [ctx.const(i) for i in range(3)]
    if any(v is None for v in values):
        bounds = [ctx.dims(i, symbolic=False) for i in range(3)]
        dtype = ctx.ty(0).dtype
        known = all(b is not None and len(b) == 1 for b in bounds)
        if dtype.is_int and known and ctx.reads_symbolic_dims(0, 1, 2):
            (start,), (stop,), (step,) = bounds
            if isinstance(start, int) and isinstance(step, int) and step == 1:
                # range(start, seq): a symbolic length (other steps stay computed)
                return ctx.call("arange", start=start, stop=stop, step=1, dtype=dtype)
        return _computed_range(ctx)
    start, limit, delta = (v.reshape(-1)[0] for v in values)
    dtype = DType.of(values[0].dtype)
    if delta == 0:
        raise ConversionError("delta must not be 0")
    if dtype.is_float:
        # the length in the inputs' own precision, as the ONNX reference computes it
        with np.errstate(all="ignore"):
            span = np.ceil((limit - start) / delta)
        if not np.isfinite(span) or span > MAX_IMPORT_ELEMENTS:
            return ctx.call(
                "arange", start=float(start), stop=float(limit), step=float(delta), dtype=dtype
            )
        n = max(int(span), 0)
        out = start + delta * np.arange(n, dtype=values[0].dtype)
        return ctx.call("identity", ctx.constant(out.astype(values[0].dtype), dtype))
    return ctx.call("arange", start=int(start), stop=int(limit), step=int(delta), dtype=dtype)


def _is_shape(dims: list, minus_one: bool = True) -> bool:
    """Whether ``dims`` can be a shape attribute: symbolic dims or sizes (and -1 / 0 for
    Reshape's "infer" and "copy"), no other negative."""
    low = -1 if minus_one else 0
    return all(not isinstance(d, int) or d >= low for d in dims)


def _computed_range(ctx):
    """Range with computed bounds: start + delta * exclusive_cumsum(ones(n)) with
    n = max(ceil((limit - start) / delta), 0)."""
    start, limit, delta = (ctx.input(i) for i in range(3))
    dtype = start.ty.dtype
    if not dtype.is_float:
        bounds = [scalar_i64(ctx, v) for v in (start, limit, delta)]
        return cast_to(ctx, index_range(ctx, *bounds), dtype)
    span = ctx.call("divide", ctx.call("subtract", limit, start), delta)
    n = cast_to(ctx, ctx.call("ceil", span), I64)
    n = ctx.call("maximum", ctx.call("reshape", n, shape=[1]), ctx.constant([0], I64))
    steps = ctx.call("cumsum", filled_tensor(ctx, n, 1, dtype), axis=0, exclusive=True)
    return ctx.call("add", ctx.call("reshape", start, shape=[]), ctx.call("multiply", steps, delta))


@converter("Shape", attrs=("start", "end"))
def _shape(ctx):
    x = ctx.input(0)
    shape = ctx.call("shape_of", x)
    start, end = ctx.attr("start", 0), ctx.attr("end")
    if start == 0 and end is None:
        return shape
    return ctx.call(
        "strided_slice", shape, begin=[start], end=[2**63 - 1 if end is None else end], axes=[0]
    )


@converter("Size")
def _size(ctx):
    return ctx.call("prod", ctx.call("shape_of", ctx.input(0)))


@converter("DepthToSpace", attrs=("blocksize", "mode"))
def _depth_to_space(ctx):
    x = ctx.input(0)
    if ctx.rank(0) != 4:
        raise ConversionError(f"needs a 4-D input, got {x.ty}")
    b = ctx.attr("blocksize")
    n, c, h, w = x.ty.shape
    c = static_dim(c, ctx, "channel count")
    if c % (b * b):
        raise ConversionError(f"{c} channels are not divisible by blocksize^2 = {b * b}")
    if ctx.attr("mode", "DCR") == "DCR":
        y = ctx.call("reshape", x, shape=[n, b, b, c // (b * b), h, w])
        y = ctx.call("permute_dims", y, axes=[0, 3, 4, 1, 5, 2])
    else:
        y = ctx.call("reshape", x, shape=[n, c // (b * b), b, b, h, w])
        y = ctx.call("permute_dims", y, axes=[0, 1, 4, 2, 5, 3])
    return ctx.call("reshape", y, shape=[n, c // (b * b), h * b, w * b])


@converter("SpaceToDepth", attrs=("blocksize", "mode"))
def _space_to_depth(ctx):
    x = ctx.input(0)
    if ctx.rank(0) != 4:
        raise ConversionError(f"needs a 4-D input, got {x.ty}")
    b = ctx.attr("blocksize")
    n, c, h, w = x.ty.shape
    hb, wb = dim_floordiv(h, b), dim_floordiv(w, b)
    if ANY in (hb, wb):
        raise Unsupported("unknown spatial dims")
    mode = ctx.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise ConversionError(f"mode must be DCR or CRD, got {mode!r}")
    y = ctx.call("reshape", x, shape=[n, c, hb, b, wb, b])
    # DCR: channel = (row offset * b + column offset) * C + c; CRD: c * b * b + offsets
    perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    y = ctx.call("permute_dims", y, axes=perm)
    return ctx.call("reshape", y, shape=[n, c * b * b, hb, wb])


@converter("EyeLike", attrs=("dtype", "k"))
def _eye_like(ctx):
    t = ctx.ty(0)
    if not t.is_static or len(t.shape) != 2:
        raise Unsupported("EyeLike of a non-static or non-2-D input")
    if t.shape[0] * t.shape[1] > MAX_IMPORT_ELEMENTS:
        raise Unsupported(f"EyeLike of more than {MAX_IMPORT_ELEMENTS} elements")
    dtype = dtype_of(ctx.attr("dtype")) if "dtype" in ctx.attrs else t.dtype
    eye = np.eye(t.shape[0], t.shape[1], k=ctx.attr("k", 0))
    return ctx.call("identity", ctx.constant(eye, dtype))
