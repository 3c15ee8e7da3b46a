"""Detection ops composed of IR ops: RoiAlign, NonMaxSuppression (its greedy pass unrolled)
and DeformConv."""

from __future__ import annotations

import numpy as np

from compiler.frontend.onnx_context import ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import (
    F64,
    I64,
    F64Ops,
    cast_to,
    converter,
    dim_value,
    index_range,
    scalar_f64,
)
from compiler.ir.symbolic import SymExpr
from compiler.ir.types import DType

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
    o = F64Ops(ctx)
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
        size = scalar_f64(ctx, sizes[d])
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
    o = F64Ops(ctx)
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
    o = F64Ops(ctx)
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
