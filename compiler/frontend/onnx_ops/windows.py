"""Window ops the IR has no op for, composed of existing ones (the converters are in ``nn``,
beside their 2-D forms; they call these): LpPool, 3-D max / average pooling, average pooling
with dilations, MaxPool's indices, MaxUnpool, Col2Im, 3-D Conv and ConvTranspose.

- A window *maximum* is separable: a 3-D max pool is ``max_pool2d`` over (H, W) on an
  (N, C*D, H, W) view, then ``max_pool2d`` with a (kd, 1) window over an (N, C, D, Ho*Wo)
  view. Padding, strides, dilations and ceil_mode act on each axis alone, so this is exact.
- A window *sum* is a depthwise convolution with a kernel of ones (``conv1d`` / ``conv2d``,
  zero padding, any dilation), separable the same way in 3-D. ceil_mode adds zero padding at
  the end for the last window (zeros add nothing) and drops a window that would start past
  the input and its begin padding (torch's and onnx's rule).
- An *average* is that sum divided by the count of counted window elements (the input only,
  or the input and its explicit padding with count_include_pad, never the ceil_mode
  overhang): a box intersected with a box, so the product of per-axis counts, a constant
  computed at import time from the static spatial dims.
- ``LpPool`` is ``window_sum(|x|^p) ^ (1/p)``.
- MaxPool's indices: one strided slice per kernel position compared with the pooled maximum,
  the first match in scan order kept (onnx's reference), its position from a constant grid.
- ``MaxUnpool`` is a ``scatter_elements`` into zeros; ``Col2Im`` a product with a constant
  0/1 matrix, or, with computed shapes, an add-scatter at indices computed from them.
- A 3-D convolution is kd 2-D ones over the depth slices, summed; a 3-D transposed one is a
  convolution of the input spread by the strides with the flipped kernel (as in 2-D).

Every size that drives a loop or a constant is static and checked (``MAX_WINDOW``,
``MAX_COL2IM_MATRIX``) before anything is allocated.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend.onnx_context import MAX_RANK, ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import I64, dim_value, filled_tensor, static_dim
from compiler.ir.nodes import Expr

MAX_WINDOW = 4096
"""Kernel sizes, strides and dilations above this are refused (a corrupt model)."""


def check_window(ctx, kernel, strides, dilations, pads) -> None:
    """Window sizes, strides, dilations and pads are ints in range (ConversionError)."""
    for name, vals, low in (
        ("kernel_shape", kernel, 1),
        ("strides", strides, 1),
        ("dilations", dilations, 1),
        ("pads", pads, 0),
    ):
        for v in vals:
            if not isinstance(v, int) or not low <= v <= MAX_WINDOW:
                raise ConversionError(f"{name} {list(vals)} must be in [{low}, {MAX_WINDOW}]")


def _out_size(size: int, pb: int, pe: int, k: int, s: int, d: int, ceil: bool) -> int:
    span = size + pb + pe - (d * (k - 1) + 1)
    out = span // s + 1 if not ceil else -(-span // s) + 1
    if ceil and (out - 1) * s >= size + pb:
        out -= 1  # the last window must start inside the input or its begin padding
    if out < 1:  # (with ceil_mode, a kernel larger than the input still has one window)
        raise ConversionError(
            f"a spatial dim of size {size} with padding {pb}+{pe} is smaller than the kernel "
            f"{k} (dilation {d})"
        )
    return out


def _layout(ctx, x: Expr, kernel, strides, dilations, pads, ceil: bool):
    """Static spatial dims, the output sizes and the end pads that give exactly them."""
    nd = len(kernel)
    spatial = [static_dim(d, ctx, "spatial dim") for d in x.ty.shape[2:]]
    out, ends = [], []
    for k in range(nd):
        o = _out_size(spatial[k], pads[k], pads[k + nd], kernel[k], strides[k], dilations[k], ceil)
        need = (o - 1) * strides[k] + dilations[k] * (kernel[k] - 1) + 1
        ends.append(max(pads[k + nd], need - spatial[k] - pads[k]))
        out.append(o)
    return spatial, out, ends


def _depthwise_sum(ctx, x: Expr, kernel, strides, dilations, begins, ends) -> Expr:
    """Sum over windows of a 1-D or 2-D (N, C, ...) tensor: a depthwise conv with ones."""
    nd = len(kernel)
    c = static_dim(x.ty.shape[1], ctx, "channel count")
    ones = ctx.constant(np.ones((c, 1, *kernel)), x.ty.dtype)
    return ctx.call(
        f"conv{nd}d",
        x,
        ones,
        strides=list(strides),
        padding=[*begins, *ends],
        dilation=list(dilations),
        groups=c,
    )


def _separable(ctx, x: Expr, pool2d, kernel, strides, dilations, begins, ends) -> Expr:
    """A 3-D window op as a 2-D one over (H, W) then one over D; ``pool2d(x4, kernel,
    strides, dilations, begins, ends)`` does a 2-D window op on an (N, C', H, W) tensor."""
    n, c, d, h, w = x.ty.shape
    c, d = static_dim(c, ctx, "channel count"), static_dim(d, ctx, "spatial dim")
    y = ctx.call("reshape", x, shape=[n, c * d, h, w])
    y = pool2d(y, kernel[1:], strides[1:], dilations[1:], begins[1:], ends[1:])
    ho, wo = y.ty.shape[2:]
    y = ctx.call("reshape", y, shape=[n, c, d, ho * wo])
    y = pool2d(y, [kernel[0], 1], [strides[0], 1], [dilations[0], 1], [begins[0], 0], [ends[0], 0])
    return ctx.call("reshape", y, shape=[n, c, y.ty.shape[2], ho, wo])


def window_sum(ctx, x: Expr, kernel, strides, dilations, pads, ceil: bool) -> Expr:
    """The sum over each window of x (N, C, *spatial), zero padded, onnx's output size."""
    nd = len(kernel)
    _, out, ends = _layout(ctx, x, kernel, strides, dilations, pads, ceil)
    begins = list(pads[:nd])

    def pool2d(y, k, s, dl, b, e):
        return _depthwise_sum(ctx, y, k, s, dl, b, e)

    if nd in (1, 2):
        y = pool2d(x, kernel, strides, dilations, begins, ends)
    elif nd == 3:
        y = _separable(ctx, x, pool2d, kernel, strides, dilations, begins, ends)
    else:
        raise Unsupported(f"{nd}-D pooling")
    if list(y.ty.shape[2:]) != out:  # the conv keeps a last window onnx drops
        y = ctx.call("strided_slice", y, begin=[0] * nd, end=out, axes=list(range(2, nd + 2)))
    return y


def window_count(kernel, strides, dilations, pads, spatial, out, include_pad: bool):
    """How many counted elements each window holds: the outer product of per-axis counts."""
    nd = len(kernel)
    total = np.ones(())
    for k in range(nd):
        starts = np.arange(out[k]) * strides[k] - pads[k]
        taps = starts[:, None] + np.arange(kernel[k])[None, :] * dilations[k]
        low, high = (-pads[k], spatial[k] + pads[k + nd]) if include_pad else (0, spatial[k])
        counts = ((taps >= low) & (taps < high)).sum(axis=1)
        total = np.multiply.outer(total, counts)
    return total


def window_max(ctx, x: Expr, kernel, strides, dilations, pads, ceil: bool) -> Expr:
    """A 3-D max pool from two ``max_pool2d``."""
    nd = len(kernel)

    def pool2d(y, k, s, dl, b, e):
        return ctx.call(
            "max_pool2d",
            y,
            pool_size=list(k),
            strides=list(s),
            padding=[*b, *e],
            dilation=list(dl),
            ceil_mode=ceil,
        )

    return _separable(ctx, x, pool2d, kernel, strides, dilations, pads[:nd], pads[nd:])


def window_average(ctx, x: Expr, kernel, strides, dilations, pads, ceil, include_pad) -> Expr:
    total = window_sum(ctx, x, kernel, strides, dilations, pads, ceil)
    spatial, out, _ = _layout(ctx, x, kernel, strides, dilations, pads, ceil)
    count = window_count(kernel, strides, dilations, pads, spatial, out, include_pad)
    return ctx.call("divide", total, ctx.constant(count, x.ty.dtype))


def lp_pool(ctx, x: Expr, kernel, strides, dilations, pads) -> Expr:
    """LpPool: ``window_sum(|x|^p) ^ (1/p)`` (the converter is in ``nn``, beside MaxPool)."""
    if not x.ty.dtype.is_float:
        raise ConversionError(f"LpPool needs a floating-point input, got {x.ty.dtype}")
    check_window(ctx, kernel, strides, dilations, pads)
    p = ctx.attr("p", 2)
    if not isinstance(p, int) or not 1 <= p <= 64:
        raise ConversionError(f"p must be an integer in [1, 64], got {p}")
    ceil = bool(ctx.attr("ceil_mode", 0))
    if p == 2:
        powered = ctx.call("multiply", x, x)
    elif p == 1:
        powered = ctx.call("abs", x)
    else:
        powered = ctx.call("power", ctx.call("abs", x), ctx.like(p, x))
    total = window_sum(ctx, powered, kernel, strides, dilations, pads, ceil)
    if p == 1:
        return total
    if p == 2:
        return ctx.call("sqrt", total)
    return ctx.call("power", total, ctx.like(1.0 / p, x))


MAX_COL2IM_MATRIX = 1 << 22
"""Col2Im's constant scatter matrix holds at most this many elements."""


def _col2im_matrix(image, block, strides, dilations, pads) -> np.ndarray:
    """The 0/1 matrix (K*L, P) adding column (j, l) into image position p."""
    nd = len(image)
    out = [
        _out_size(image[k], pads[k], pads[k + nd], block[k], strides[k], dilations[k], False)
        for k in range(nd)
    ]
    size_k, size_l, size_p = math.prod(block), math.prod(out), math.prod(image)
    if size_k * size_l * size_p > MAX_COL2IM_MATRIX:
        raise Unsupported(
            f"Col2Im of {size_k}x{size_l} columns into {size_p} pixels (the scatter matrix is "
            f"limited to {MAX_COL2IM_MATRIX} elements)"
        )
    js = np.indices(block).reshape(nd, -1)  # (nd, K)
    ls = np.indices(out).reshape(nd, -1)  # (nd, L)
    pos = [
        ls[k][None, :] * strides[k] + js[k][:, None] * dilations[k] - pads[k] for k in range(nd)
    ]  # each (K, L)
    inside = np.ones((size_k, size_l), bool)
    flat = np.zeros((size_k, size_l), np.int64)
    for k in range(nd):
        inside &= (pos[k] >= 0) & (pos[k] < image[k])
        flat = flat * image[k] + pos[k]
    matrix = np.zeros((size_k * size_l, size_p))
    rows = np.arange(size_k * size_l).reshape(size_k, size_l)
    matrix[rows[inside], flat[inside]] = 1.0
    return matrix


def _shape_vector(ctx, i: int, what: str) -> tuple[list[int] | None, Expr, int]:
    """Input i (image_shape / block_shape): its values when constant, as an i64 vector, and
    its length."""
    e = ctx.input(i)
    if e.ty.shape is None or len(e.ty.shape) != 1 or not isinstance(e.ty.shape[0], int):
        raise Unsupported(f"a {what} of unknown length")
    if ctx.const(i) is not None:
        values = ctx.const_ints(i, what)
        if any(not 1 <= v <= MAX_COL2IM_MATRIX for v in values):
            raise ConversionError(f"{what} {values} must hold positive sizes")
        return values, ctx.constant(values, I64), len(values)
    return None, _cast_i64(ctx, e), e.ty.shape[0]


def col2im(ctx) -> Expr:
    """Col2Im: the blocks in the columns of x (N, C*K, L) summed into (N, C, *image). With
    constant shapes, a product with a constant 0/1 matrix (K*L, P); with computed ones (or
    a matrix too large), an add-scatter at indices computed from them."""
    x = ctx.input(0)
    image, image_vec, nd = _shape_vector(ctx, 1, "image_shape")
    block, block_vec, nd_block = _shape_vector(ctx, 2, "block_shape")
    if nd != nd_block or nd == 0:
        raise ConversionError("image_shape and block_shape must have the same length (> 0)")
    if nd > MAX_RANK:
        raise ConversionError(f"image_shape has {nd} values: more than {MAX_RANK} dims")
    strides = list(ctx.attr("strides") or [1] * nd)
    dilations = list(ctx.attr("dilations") or [1] * nd)
    pads = list(ctx.attr("pads") or [0] * (2 * nd))
    if len(strides) != nd or len(dilations) != nd or len(pads) != 2 * nd:
        raise ConversionError(
            f"strides {strides}, dilations {dilations}, pads {pads} do not fit {nd} dims"
        )
    check_window(ctx, block or [1] * nd, strides, dilations, pads)
    if not x.ty.dtype.is_float:
        raise ConversionError(f"Col2Im needs a floating-point input, got {x.ty.dtype}")
    if ctx.rank(0) != 3:
        raise ConversionError(f"needs an (N, C*K, L) input, got {x.ty}")
    n, ck, length = x.ty.shape
    ck = static_dim(ck, ctx, "column count")
    length = static_dim(length, ctx, "column count")
    if image is not None and block is not None:
        k = math.prod(block)
        if ck % k:
            raise ConversionError(f"{ck} column rows are not a multiple of the block size {k}")
        out = [
            _out_size(image[a], pads[a], pads[a + nd], block[a], strides[a], dilations[a], False)
            for a in range(nd)
        ]
        if length != math.prod(out):
            raise ConversionError(
                f"the input has {length} columns, the image and block shapes make {math.prod(out)}"
            )
        if k * length * math.prod(image) <= MAX_COL2IM_MATRIX:
            matrix = _col2im_matrix(image, block, strides, dilations, pads)
            cols = ctx.call("reshape", x, shape=[n, ck // k, matrix.shape[0]])
            y = ctx.call("matmul", cols, ctx.constant(matrix, x.ty.dtype))
            return ctx.call("reshape", y, shape=[n, ck // k, *image])
        static = [n, ck // k, *image]
    else:
        static = None
    return _col2im_scatter(ctx, x, image_vec, block_vec, nd, strides, dilations, pads, static)


def _col2im_scatter(ctx, x, image_vec, block_vec, nd, strides, dilations, pads, static_shape):
    """Col2Im with an add-scatter: row r = c*K + j and column l of x go to image position
    pos_a = l_a * stride_a + j_a * dilation_a - pad_a (j_a, l_a: r % K and l unravelled over
    the block and the window grid), or to a dropped extra slot when outside the image."""
    n, ck, length = x.ty.shape

    def c(v):
        return ctx.constant(v, I64)

    def call(op, *args):
        return ctx.call(op, *args)

    img = [ctx.call("take", image_vec, c(a), axis=0) for a in range(nd)]
    blk = [ctx.call("take", block_vec, c(a), axis=0) for a in range(nd)]
    k = ctx.call("prod", block_vec)
    # the window grid: out_a = (img + pads - dilation*(block-1) - 1) // stride + 1
    outs = []
    for a in range(nd):
        span = call(
            "subtract",
            call("add", img[a], c(pads[a] + pads[a + nd] - 1)),
            call("multiply", call("subtract", blk[a], c(1)), c(dilations[a])),
        )
        outs.append(call("add", call("floor_divide", span, c(strides[a])), c(1)))
    rows = c(np.arange(ck).reshape(ck, 1))
    cols = c(np.arange(length).reshape(1, length))
    channel = call("floor_divide", rows, k)
    j, lrem = call("mod", rows, k), cols
    j_parts, l_parts = [None] * nd, [None] * nd
    for a in reversed(range(nd)):
        j_parts[a], j = call("mod", j, blk[a]), call("floor_divide", j, blk[a])
        l_parts[a], lrem = call("mod", lrem, outs[a]), call("floor_divide", lrem, outs[a])
    valid, flat = None, None
    for a in range(nd):
        pos = call(
            "add",
            call("multiply", l_parts[a], c(strides[a])),
            call("subtract", call("multiply", j_parts[a], c(dilations[a])), c(pads[a])),
        )
        inside = call("logical_and", call("greater_equal", pos, c(0)), call("less", pos, img[a]))
        valid = inside if valid is None else call("logical_and", valid, inside)
        flat = pos if flat is None else call("add", call("multiply", flat, img[a]), pos)
    plane = ctx.call("prod", image_vec)
    channels = call("floor_divide", c(ck), k)
    dump = call("multiply", channels, plane)
    index = call("where", valid, call("add", call("multiply", channel, plane), flat), dump)
    index = ctx.call("reshape", index, shape=[1, ck * length])
    index = ctx.call("broadcast_to", index, shape=[n, ck * length])
    size = call("add", dump, c(1))
    batch = dim_value(ctx, x, 0)
    if static_shape is not None:  # constant shapes: zeros of a known shape
        _, c_out, *image = static_shape
        y = ctx.call("zeros", shape=[n, c_out * math.prod(image) + 1], dtype=x.ty.dtype)
    else:
        zeros_shape = ctx.call(
            "concat",
            ctx.call("reshape", batch, shape=[1]),
            ctx.call("reshape", size, shape=[1]),
            axis=0,
        )
        y = filled_tensor(ctx, zeros_shape, 0, x.ty.dtype)
    updates = ctx.call("reshape", x, shape=[n, ck * length])
    y = ctx.call("scatter_elements", y, index, updates, axis=1, reduction="add")
    y = ctx.call("strided_slice", y, begin=[0], end=[-1], axes=[1])
    if static_shape is not None:
        return ctx.call("reshape", y, shape=static_shape)
    shape = ctx.call(
        "concat",
        ctx.call("reshape", batch, shape=[1]),
        ctx.call("reshape", channels, shape=[1]),
        image_vec,
        axis=0,
    )
    return ctx.call("reshape", y, shape)


def max_pool_indices(ctx, x: Expr, y: Expr, kernel, strides, dilations, pads, storage_order):
    """MaxPool's second output: the flat index (over the whole input, the spatial part
    row-major, or column-major with storage_order 1) of the first element of each window,
    in scan order, equal to the window's maximum ``y``. One strided slice per kernel
    position, compared with y; a constant grid gives each position's spatial index."""
    nd = len(kernel)
    if x.ty.shape is None or y.ty.shape is None:
        raise Unsupported("MaxPool indices of a value of unknown rank")
    spatial = [static_dim(d, ctx, "spatial dim") for d in x.ty.shape[2:]]
    out = [static_dim(d, ctx, "output dim") for d in y.ty.shape[2:]]
    c = static_dim(x.ty.shape[1], ctx, "channel count")
    if math.prod(kernel) > MAX_WINDOW:
        raise Unsupported(f"MaxPool indices over windows of {math.prod(kernel)} elements")
    ends = [
        max(
            pads[k + nd],
            (out[k] - 1) * strides[k] + dilations[k] * (kernel[k] - 1) + 1 - spatial[k] - pads[k],
        )
        for k in range(nd)
    ]
    grid = np.arange(math.prod(spatial), dtype=np.int64)
    if storage_order:
        grid = grid.reshape(spatial[::-1]).transpose()
    grid = np.pad(
        grid.reshape(spatial), list(zip(pads[:nd], ends, strict=True)), constant_values=-1
    )
    xp = ctx.call("pad", x, pads=[0, 0, *pads[:nd], 0, 0, *ends])
    taps = list(np.ndindex(*kernel))
    index = ctx.constant(-1, I64)
    for offsets in reversed(taps):  # the first match wins
        sl = tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offsets, dilations, strides, out, strict=True)
        )
        positions = grid[sl]
        if (positions < 0).all():
            continue
        window = ctx.call(
            "strided_slice",
            xp,
            begin=[s.start for s in sl],
            end=[s.stop for s in sl],
            strides=list(strides),
            axes=list(range(2, nd + 2)),
        )
        hit = ctx.call("equal", window, y)
        if (positions < 0).any():
            hit = ctx.call("logical_and", hit, ctx.constant(positions >= 0, "bool"))
        index = ctx.call("where", hit, ctx.constant(positions, I64), index)
    # plus (n * C + c) * prod(spatial)
    plane = math.prod(spatial)
    channel = ctx.constant(np.arange(c).reshape(c, *(1,) * nd) * plane, I64)
    first = ctx.call(
        "strided_slice", y, begin=[0] * (nd + 1), end=[1] * (nd + 1), axes=list(range(1, nd + 2))
    )
    batch = ctx.call("cumsum", ctx.call("ones_like", first, dtype=I64), axis=0, exclusive=True)
    batch = ctx.call("multiply", batch, ctx.constant(c * plane, I64))
    return ctx.call("add", index, ctx.call("add", channel, batch))


def max_unpool(ctx, x: Expr, indices: Expr, kernel, strides, pads) -> Expr:
    """MaxUnpool: x scattered at its flat indices into zeros of the inferred shape
    (N, C, (in - 1) * stride - pads + kernel ...), then, given output_shape, padded at the end
    to it (onnx's reference: the indices address the inferred shape)."""
    nd = len(kernel)
    if x.ty.shape is None or len(x.ty.shape) != nd + 2:
        raise ConversionError(f"needs an (N, C, ...) input of rank {nd + 2}, got {x.ty}")
    check_window(ctx, kernel, strides, [1] * nd, pads)
    n, c, *size = x.ty.shape
    size = [static_dim(d, ctx, "spatial dim") for d in size]
    inferred = [(size[k] - 1) * strides[k] - pads[k] - pads[k + nd] + kernel[k] for k in range(nd)]
    if any(d < 1 for d in inferred):
        raise ConversionError(f"the output would have spatial dims {inferred}")
    if indices.ty.shape is None or len(indices.ty.shape) != nd + 2:
        raise ConversionError(f"the indices must have the rank of the input, got {indices.ty}")
    total = n * c * math.prod(inferred)
    flat = ctx.call("zeros", shape=[total], dtype=x.ty.dtype)
    flat = ctx.call(
        "scatter_elements",
        flat,
        ctx.call("reshape", _cast_i64(ctx, indices), shape=[-1]),
        ctx.call("reshape", x, shape=[-1]),
        axis=0,
    )
    y = ctx.call("reshape", flat, shape=[n, c, *inferred])
    if not ctx.has(2):
        return y
    shape = ctx.const(2)
    if shape is None:  # computed: pad by output_shape - inferred at the end
        wanted = _cast_i64(ctx, ctx.input(2))
        grow = ctx.call("subtract", wanted, ctx.call("shape_of", y))
        zeros = ctx.constant(np.zeros(nd + 2), I64)
        return ctx.call("pad", y, ctx.call("concat", zeros, grow, axis=0))
    shape = [int(v) for v in shape.reshape(-1)]
    if len(shape) != nd + 2 or any(w < d for w, d in zip(shape[2:], inferred, strict=True)):
        raise ConversionError(f"output_shape {shape} must be at least {inferred} spatially")
    return ctx.call(
        "pad",
        y,
        pads=[0] * (nd + 2) + [0, 0] + [w - d for w, d in zip(shape[2:], inferred, strict=True)],
    )


def _cast_i64(ctx, e: Expr) -> Expr:
    return e if e.ty.dtype is I64 else ctx.call("cast", e, dtype=I64)


# ----- 3-D convolutions ---------------------------------------------------------------------


def conv3d(ctx, x: Expr, w: Expr, bias: Expr | None, strides, pads, dilations, groups) -> Expr:
    """A 3-D convolution as kd 2-D ones: the depth taps j each convolve the input's depth
    slices j*dd, j*dd + sd, ... (as a batch of (H, W) images) with w[:, :, j], summed."""
    if x.ty.shape is None or len(x.ty.shape) != 5 or w.ty.shape is None or len(w.ty.shape) != 5:
        raise ConversionError(f"needs 5-D data and weight, got {x.ty} and {w.ty}")
    check_window(ctx, [1, 1, 1], strides, dilations, pads)
    n, c, d, h, wd = x.ty.shape
    c, d = static_dim(c, ctx, "channel count"), static_dim(d, ctx, "spatial dim")
    o, _, kd, _, _ = (static_dim(v, ctx, "weight dim") for v in w.ty.shape)
    sd, dd = strides[0], dilations[0]
    out_d = _out_size(d, pads[0], pads[3], kd, sd, dd, False)
    xp = ctx.call("pad", x, pads=[0, 0, pads[0], 0, 0, 0, 0, pads[3], 0, 0])
    total = None
    for j in range(kd):
        xs = ctx.call(
            "strided_slice",
            xp,
            begin=[j * dd],
            end=[j * dd + sd * (out_d - 1) + 1],
            strides=[sd],
            axes=[2],
        )
        xs = ctx.call("permute_dims", xs, axes=[0, 2, 1, 3, 4])
        xs = ctx.call("reshape", xs, shape=[-1, c, h, wd])
        wj = ctx.call("strided_slice", w, begin=[j], end=[j + 1], axes=[2])
        wj = ctx.call("squeeze", wj, axes=[2])
        y = ctx.call(
            "conv2d",
            xs,
            wj,
            *([bias] if bias is not None and j == 0 else []),
            strides=list(strides[1:]),
            padding=[pads[1], pads[2], pads[4], pads[5]],
            dilation=list(dilations[1:]),
            groups=groups,
        )
        total = y if total is None else ctx.call("add", total, y)
    ho, wo = total.ty.shape[2:]
    total = ctx.call("reshape", total, shape=[n, out_d, o, ho, wo])
    return ctx.call("permute_dims", total, axes=[0, 2, 1, 3, 4])


def conv_transpose3d(ctx, x, w, bias, kernel, strides, dilations, pads, out_pad, groups):
    """A 3-D transposed convolution as a convolution: the input spread by the strides (zeros
    between elements), padded by dilation*(kernel-1) - pads (+ output_padding at the end;
    negative pads crop), convolved with the kernel flipped and its channel axes swapped."""
    check_window(ctx, kernel, strides, dilations, [abs(p) for p in pads])
    n, c, *size = x.ty.shape
    size = [static_dim(v, ctx, "spatial dim") for v in size]
    c_in, c_out_g, *_ = (static_dim(v, ctx, "weight dim") for v in w.ty.shape)
    y = x
    if any(s > 1 for s in strides):
        y = ctx.call("unsqueeze", y, axes=[3, 5, 7])
        y = ctx.call(
            "pad", y, pads=[0] * 8 + [0, 0, 0, strides[0] - 1, 0, strides[1] - 1, 0, strides[2] - 1]
        )
        y = ctx.call(
            "reshape", y, shape=[n, c, *(v * s for v, s in zip(size, strides, strict=True))]
        )
        y = ctx.call(
            "strided_slice",
            y,
            begin=[0, 0, 0],
            end=[(v - 1) * s + 1 for v, s in zip(size, strides, strict=True)],
            axes=[2, 3, 4],
        )
    edge = [(k - 1) * d for k, d in zip(kernel, dilations, strict=True)]
    y = ctx.call(
        "pad",
        y,
        pads=[
            0,
            0,
            *(e - p for e, p in zip(edge, pads[:3], strict=True)),
            0,
            0,
            *(e - p + op for e, p, op in zip(edge, pads[3:], out_pad, strict=True)),
        ],
    )
    kd, kh, kw = kernel
    wt = ctx.call("reshape", w, shape=[groups, c_in // groups, c_out_g, kd, kh, kw])
    wt = ctx.call("permute_dims", wt, axes=[0, 2, 1, 3, 4, 5])
    wt = ctx.call("reshape", wt, shape=[groups * c_out_g, c_in // groups, kd, kh, kw])
    wt = ctx.call(
        "strided_slice",
        wt,
        begin=[-1, -1, -1],
        end=[-(2**62)] * 3,
        strides=[-1, -1, -1],
        axes=[2, 3, 4],
    )
    return conv3d(ctx, y, wt, bias, [1, 1, 1], [0] * 6, dilations, groups)
