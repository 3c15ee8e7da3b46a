"""Matrix products, convolutions, pooling and normalisation."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.frontend.onnx_context import (
    MAX_RANK,
    ConversionError,
    Unsupported,
)
from compiler.frontend.onnx_ops import windows  # pooling composed of 2-D ops and convs
from compiler.frontend.onnx_ops.registry import (
    cast_to,
    checked_axis,
    converter,
    static_dim,
)
from compiler.ir.nodes import Expr
from compiler.ir.symbolic import Dim, dims_equal
from compiler.ir.types import DType

# ----- matrix products and convolutions ---------------------------------------------------


@converter("MatMul")
def _matmul(ctx):
    return ctx.call("matmul", ctx.input(0), ctx.input(1))


@converter("Gemm", attrs=("alpha", "beta", "transA", "transB"), min_version=7)
def gemm(ctx):
    """The Gemm converter (also the legacy Gemm-6's once its broadcast is checked): a
    ``linear`` where the node is torch's Linear, else matmul, scale and add."""
    a, b = ctx.input(0), ctx.input(1)
    c = ctx.inputs[2] if ctx.has(2) else None
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    if ctx.attr("transA", 0):
        a = ctx.call("permute_dims", a, axes=[1, 0])
    trans_b = bool(ctx.attr("transB", 0))
    bshape = b.ty.shape
    as_linear = (
        trans_b
        and alpha == 1.0
        and bshape is not None
        and len(bshape) == 2
        and (
            c is None
            or (
                beta == 1.0
                and c.ty.shape is not None
                and len(c.ty.shape) == 1
                and dims_equal(c.ty.shape[0], bshape[0])
            )
        )
    )
    if as_linear:  # torch's Linear, exported as Gemm(transB=1)
        return ctx.call("linear", a, b, *([c] if c is not None else []))
    if trans_b:
        b = ctx.call("permute_dims", b, axes=[1, 0])
    y = ctx.call("matmul", a, b)
    if alpha != 1.0:
        y = ctx.call("multiply", y, ctx.like(alpha, y))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = ctx.call("multiply", c, ctx.like(beta, c))
        y = ctx.call("add", y, c)
    return y


def _auto_pads(ctx, spatial, kernel, strides, dilations) -> list[int]:
    """Explicit pads (begins then ends) for auto_pad SAME_UPPER / SAME_LOWER / VALID."""
    mode = ctx.attr("auto_pad", "NOTSET")
    nd = len(kernel)
    if mode in ("NOTSET", ""):
        pads = ctx.attr("pads") or [0] * (2 * nd)
        if len(pads) != 2 * nd:
            raise ConversionError(f"pads {pads} must have {2 * nd} values")
        return list(pads)
    if mode == "VALID":
        return [0] * (2 * nd)
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise ConversionError(f"unknown auto_pad {mode!r}")
    begins, ends = [], []
    for d, k, s, dil in zip(spatial, kernel, strides, dilations, strict=True):
        extent = (k - 1) * dil + 1
        if isinstance(d, int):
            out = -(-d // s)
            total = max((out - 1) * s + extent - d, 0)
        elif s == 1:
            total = extent - 1
        else:
            raise Unsupported(f"auto_pad {mode} with stride {s} on the symbolic dim {d}")
        small = total // 2
        begin = small if mode == "SAME_UPPER" else total - small
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def window_attrs(ctx, x: Expr, kernel: Sequence[int] | None = None):
    """The window of a conv or pool node over ``x``: ``(nd, kernel, strides, dilations, pads)``
    (``kernel`` defaults to the kernel_shape attribute; pads resolved from auto_pad)."""
    rank = ctx.rank(0)
    nd = rank - 2
    if nd < 1:
        raise ConversionError(f"needs a (batch, channels, ...) input, got {x.ty}")
    kernel = list(kernel if kernel is not None else ctx.attr("kernel_shape") or [])
    if len(kernel) != nd:
        raise ConversionError(f"kernel_shape {kernel} must have {nd} values")
    strides = list(ctx.attr("strides") or [1] * nd)
    dilations = list(ctx.attr("dilations") or [1] * nd)
    pads = _auto_pads(ctx, x.ty.shape[2:], kernel, strides, dilations)
    return nd, kernel, strides, dilations, pads


@converter("Conv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def _conv(ctx):
    x, w = ctx.input(0), ctx.input(1)
    wshape = w.ty.shape
    if wshape is None:
        raise Unsupported("a weight of unknown rank")
    kernel = ctx.attr("kernel_shape") or [static_dim(d, ctx, "kernel size") for d in wshape[2:]]
    nd, kernel, strides, dilations, pads = window_attrs(ctx, x, kernel)
    if nd == 3:
        bias = ctx.input(2) if ctx.has(2) else None
        return windows.conv3d(ctx, x, w, bias, strides, pads, dilations, ctx.attr("group", 1))
    if nd > 2:
        raise Unsupported(f"{nd}-D convolution")
    bias = [ctx.input(2)] if ctx.has(2) else []
    return ctx.call(
        f"conv{nd}d",
        x,
        w,
        *bias,
        strides=strides,
        padding=pads,
        dilation=dilations,
        groups=ctx.attr("group", 1),
    )


@converter(
    "ConvTranspose",
    attrs=(
        "auto_pad",
        "dilations",
        "group",
        "kernel_shape",
        "output_padding",
        "output_shape",
        "pads",
        "strides",
    ),
)
def _conv_transpose(ctx):
    """A transposed convolution as a convolution: the input spread out by the strides (zeros
    between elements), padded by dilation*(kernel-1) - pads (negative pads crop), convolved
    with the kernel flipped and its channel axes swapped."""
    x, w = ctx.input(0), ctx.input(1)
    rank = ctx.rank(0)
    nd = rank - 2
    if nd not in (1, 2, 3):
        raise Unsupported(f"{nd}-D transposed convolution")
    if w.ty.shape is None or len(w.ty.shape) != rank:
        raise ConversionError(f"the weight must have rank {rank}, got {w.ty}")
    c_in, c_out_g, *kernel = (static_dim(d, ctx, "weight dim") for d in w.ty.shape)
    kernel = list(ctx.attr("kernel_shape") or kernel)
    strides = list(ctx.attr("strides") or [1] * nd)
    dilations = list(ctx.attr("dilations") or [1] * nd)
    out_pad = list(ctx.attr("output_padding") or [0] * nd)
    groups = ctx.attr("group", 1)
    spatial = x.ty.shape[2:]
    if "output_shape" in ctx.attrs or ctx.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        out_shape = list(ctx.attr("output_shape") or [])
        if "output_shape" not in ctx.attrs:
            out_shape = [
                static_dim(d, ctx, "spatial dim") * s for d, s in zip(spatial, strides, strict=True)
            ]
        out_shape = out_shape[-nd:]
        total = [
            s * (static_dim(d, ctx, "spatial dim") - 1) + op + (k - 1) * dl + 1 - o
            for d, s, op, k, dl, o in zip(
                spatial, strides, out_pad, kernel, dilations, out_shape, strict=True
            )
        ]
        upper = ctx.attr("auto_pad", "NOTSET") == "SAME_UPPER"
        begins = [t // 2 if upper else t - t // 2 for t in total]
        pads = begins + [t - b for t, b in zip(total, begins, strict=True)]
    else:
        pads = list(ctx.attr("pads") or [0] * (2 * nd))
    if nd == 3:
        bias = ctx.input(2) if ctx.has(2) else None
        return windows.conv_transpose3d(
            ctx, x, w, bias, kernel, strides, dilations, pads, out_pad, groups
        )
    if nd == 1:  # work on (N, C, 1, W)
        x = ctx.call("unsqueeze", x, axes=[2])
        w = ctx.call("unsqueeze", w, axes=[2])
        kernel, strides, dilations, out_pad = (
            [1, *kernel],
            [1, *strides],
            [1, *dilations],
            [0, *out_pad],
        )
        pads = [0, pads[0], 0, pads[1]]
    # spread the input: (N, C, H, 1, W, 1) padded to (N, C, H, s, W, s), merged, last s-1 cut
    n, c, h, wd = x.ty.shape
    y = x
    if any(s > 1 for s in strides):
        y = ctx.call("unsqueeze", y, axes=[3, 5])
        y = ctx.call("pad", y, pads=[0] * 6 + [0, 0, 0, strides[0] - 1, 0, strides[1] - 1])
        y = ctx.call("reshape", y, shape=[n, c, h * strides[0], wd * strides[1]])
        y = ctx.call(
            "strided_slice",
            y,
            begin=[0, 0],
            end=[-(strides[0] - 1) or 2**62, -(strides[1] - 1) or 2**62],
            axes=[2, 3],
        )
    edge = [(k - 1) * d for k, d in zip(kernel, dilations, strict=True)]
    y = ctx.call(
        "pad",
        y,
        pads=[
            0,
            0,
            edge[0] - pads[0],
            edge[1] - pads[1],
            0,
            0,
            edge[0] - pads[2] + out_pad[0],
            edge[1] - pads[3] + out_pad[1],
        ],
    )
    # weight (C_in, C_out/g, kh, kw) -> (C_out, C_in/g, kh, kw), flipped
    kh, kw = kernel
    wt = ctx.call("reshape", w, shape=[groups, c_in // groups, c_out_g, kh, kw])
    wt = ctx.call("permute_dims", wt, axes=[0, 2, 1, 3, 4])
    wt = ctx.call("reshape", wt, shape=[groups * c_out_g, c_in // groups, kh, kw])
    wt = ctx.call(
        "strided_slice", wt, begin=[-1, -1], end=[-(2**62), -(2**62)], strides=[-1, -1], axes=[2, 3]
    )
    bias = [ctx.input(2)] if ctx.has(2) else []
    out = ctx.call("conv2d", y, wt, *bias, dilation=dilations, groups=groups)
    return ctx.call("squeeze", out, axes=[2]) if nd == 1 else out


def _pool(ctx, ir_op: str, **extra):
    x = ctx.input(0)
    nd, kernel, strides, dilations, pads = window_attrs(ctx, x)
    ceil = bool(ctx.attr("ceil_mode", 0))
    if nd == 3 or (ir_op == "avg_pool2d" and any(d != 1 for d in dilations)):
        windows.check_window(ctx, kernel, strides, dilations, pads)
        if ir_op == "max_pool2d":
            return windows.window_max(ctx, x, kernel, strides, dilations, pads, ceil)
        include = extra["count_include_pad"]
        return windows.window_average(ctx, x, kernel, strides, dilations, pads, ceil, include)
    if nd > 2:
        raise Unsupported(f"{nd}-D pooling")
    attrs = dict(extra, ceil_mode=ceil)
    if ir_op == "max_pool2d":
        attrs["dilation"] = dilations if nd == 2 else [1, *dilations]
    elif any(d != 1 for d in dilations):
        raise Unsupported("dilations")
    if nd == 2:
        return ctx.call(ir_op, x, pool_size=kernel, strides=strides, padding=pads, **attrs)
    # 1-D: pool a (N, C, 1, W) view
    x4 = ctx.call("unsqueeze", x, axes=[2])
    y = ctx.call(
        ir_op,
        x4,
        pool_size=[1, *kernel],
        strides=[1, *strides],
        padding=[0, pads[0], 0, pads[1]],
        **attrs,
    )
    return ctx.call("squeeze", y, axes=[2])


@converter(
    "MaxPool",
    attrs=(
        "auto_pad",
        "ceil_mode",
        "dilations",
        "kernel_shape",
        "pads",
        "storage_order",
        "strides",
    ),  # v1-v7: no Indices output, no storage_order/ceil_mode/dilations (their defaults)
)
def _max_pool(ctx):
    y = _pool(ctx, "max_pool2d")
    if len(ctx.node.output) < 2 or not ctx.node.output[1]:
        return y
    x = ctx.input(0)
    _, kernel, strides, dilations, pads = window_attrs(ctx, x)
    order = ctx.attr("storage_order", 0)
    return y, windows.max_pool_indices(ctx, x, y, kernel, strides, dilations, pads, order)


@converter(
    "AveragePool",
    attrs=(
        "auto_pad",
        "ceil_mode",
        "count_include_pad",
        "dilations",
        "kernel_shape",
        "pads",
        "strides",
    ),  # v1: no count_include_pad (its default, 0)
)
def _avg_pool(ctx):
    if not ctx.ty(0).dtype.is_float:
        raise ConversionError("AveragePool needs a floating-point input")
    return _pool(ctx, "avg_pool2d", count_include_pad=bool(ctx.attr("count_include_pad", 0)))


@converter(
    "LpPool",
    attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"),
    min_version=11,
)
def _lp_pool(ctx):
    x = ctx.input(0)
    _, kernel, strides, dilations, pads = window_attrs(ctx, x)
    return windows.lp_pool(ctx, x, kernel, strides, dilations, pads)


@converter("Col2Im", attrs=("dilations", "pads", "strides"), min_version=18)
def _col2im(ctx):
    return windows.col2im(ctx)


@converter("MaxUnpool", attrs=("kernel_shape", "pads", "strides"), min_version=11)
def _max_unpool(ctx):
    kernel = list(ctx.attr("kernel_shape") or [])
    nd = len(kernel)
    strides = list(ctx.attr("strides") or [1] * nd)
    pads = list(ctx.attr("pads") or [0] * (2 * nd))
    if nd == 0 or len(strides) != nd or len(pads) != 2 * nd:
        raise ConversionError(f"kernel_shape {kernel}, strides {strides}, pads {pads} do not fit")
    return windows.max_unpool(ctx, ctx.input(0), ctx.input(1), kernel, strides, pads)


def _spatial_axes(ctx) -> list[int]:
    rank = ctx.rank(0)
    if rank < 3:
        raise ConversionError(f"needs a (batch, channels, ...) input, got {ctx.ty(0)}")
    return list(range(2, rank))


@converter("GlobalAveragePool")
def _global_avg(ctx):
    return ctx.call("mean", ctx.input(0), axes=_spatial_axes(ctx), keepdims=True)


@converter("GlobalMaxPool")
def _global_max(ctx):
    return ctx.call("max", ctx.input(0), axes=_spatial_axes(ctx), keepdims=True)


def _lp_norm(ctx, x: Expr, axes, p: int, keepdims: bool = True) -> Expr:
    if p == 1:
        return ctx.call("sum", ctx.call("abs", x), axes=axes, keepdims=keepdims)
    if p == 2:
        sq = ctx.call("multiply", x, x)
        return ctx.call("sqrt", ctx.call("sum", sq, axes=axes, keepdims=keepdims))
    powered = ctx.call("power", ctx.call("abs", x), ctx.like(p, x))
    total = ctx.call("sum", powered, axes=axes, keepdims=keepdims)
    return ctx.call("power", total, ctx.like(1.0 / p, x))


@converter("GlobalLpPool", attrs=("p",))
def _global_lp(ctx):
    return _lp_norm(ctx, ctx.input(0), _spatial_axes(ctx), ctx.attr("p", 2))


@converter("LpNormalization", attrs=("axis", "p"))
def _lp_normalization(ctx):
    x = ctx.input(0)
    p = ctx.attr("p", 2)
    if p not in (1, 2):
        raise ConversionError(f"p must be 1 or 2, got {p}")
    axis = checked_axis(ctx, ctx.attr("axis", -1), ctx.rank(0))
    norm = _lp_norm(ctx, x, [axis], p)
    zero = ctx.like(0, x)
    # a zero norm gives 0, not 0 / 0
    safe = ctx.call("where", ctx.call("equal", norm, zero), ctx.like(1, x), norm)
    return ctx.call("where", ctx.call("equal", norm, zero), zero, ctx.call("divide", x, safe))


# ----- normalisation ----------------------------------------------------------------------


@converter(
    "BatchNormalization", attrs=("epsilon", "momentum", "training_mode", "spatial"), min_version=9
)
def _batch_norm(ctx):
    args = [ctx.input(i) for i in range(5)]
    eps = ctx.attr("epsilon", 1e-5)
    if not ctx.attr("training_mode", 0):
        return ctx.call("batch_norm", *args, axis=1, epsilon=eps)
    # training: normalise with the batch statistics (population variance), and give the
    # running ones, input * momentum + batch * (1 - momentum)
    x, scale, bias, mean, var = args
    axes = [a for a in range(ctx.rank(0)) if a != 1]
    batch_mean = ctx.call("mean", x, axes=axes)
    batch_var = ctx.call("variance", x, axes=axes)
    y = ctx.call("batch_norm", x, scale, bias, batch_mean, batch_var, axis=1, epsilon=eps)
    momentum = ctx.attr("momentum", 0.9)

    def running(old, new):
        return ctx.call(
            "add",
            ctx.call("multiply", old, ctx.like(momentum, old)),
            ctx.call("multiply", cast_to(ctx, new, old.ty.dtype), ctx.like(1 - momentum, old)),
        )

    return y, running(mean, batch_mean), running(var, batch_var)


@converter("InstanceNormalization", attrs=("epsilon",))
def _instance_norm(ctx):
    x = ctx.input(0)
    if ctx.rank(0) < 3:
        raise ConversionError(f"needs a (batch, channels, ...) input, got {x.ty}")
    channels = static_dim(x.ty.shape[1], ctx, "channel count")
    return ctx.call(
        "group_norm",
        x,
        ctx.input(1),
        ctx.input(2),
        num_groups=channels,
        epsilon=ctx.attr("epsilon", 1e-5),
    )


def _same_dims(a: tuple | None, b: Sequence[Dim]) -> bool:
    return (
        a is not None
        and len(a) == len(b)
        and all(dims_equal(x, y) is True for x, y in zip(a, b, strict=True))
    )


@converter("LayerNormalization", attrs=("axis", "epsilon", "stash_type"))
def _layer_norm(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = checked_axis(ctx, ctx.attr("axis", -1), rank)
    axes = list(range(axis, rank))
    eps = ctx.attr("epsilon", 1e-5)
    scale = ctx.input(1)
    bias = ctx.inputs[2] if ctx.has(2) else None
    normalized = x.ty.shape[axis:]
    params_fit = _same_dims(scale.ty.shape, normalized) and (
        bias is None or _same_dims(bias.ty.shape, normalized)
    )
    if params_fit:
        y = ctx.call("layer_norm", x, scale, *([bias] if bias else []), axes=axes, epsilon=eps)
    else:  # scale / bias broadcast to the normalized dims
        y = ctx.call("layer_norm", x, axes=axes, epsilon=eps)
        y = ctx.call("multiply", y, scale)
        if bias is not None:
            y = ctx.call("add", y, bias)
    wanted = [bool(n) for n in ctx.node.output]
    if len(wanted) < 2 or not any(wanted[1:]):
        return y
    stats = cast_to(ctx, x, DType.float32)  # Mean and InvStdDev are float32 (stash_type 1)
    if ctx.attr("stash_type", 1) != 1:
        raise Unsupported("stash_type other than 1 (float32)")
    mean = ctx.call("mean", stats, axes=axes, keepdims=True)
    var = ctx.call("variance", stats, axes=axes, keepdims=True)
    inv_std = ctx.call("rsqrt", ctx.call("add", var, ctx.like(eps, var)))
    return y, mean, inv_std


@converter("GroupNormalization", attrs=("epsilon", "num_groups", "stash_type"), min_version=18)
def _group_norm(ctx):
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    groups = ctx.attr("num_groups")
    if groups is None:
        raise ConversionError("needs num_groups")
    if ctx.rank(0) < 2:
        raise ConversionError(f"needs a (batch, channels, ...) input, got {x.ty}")
    channels = x.ty.shape[1]
    if ctx.version < 21:  # opset 18: one scale and bias per group
        c = static_dim(channels, ctx, "channel count")
        if c % groups:
            raise ConversionError(f"{c} channels are not divisible by num_groups={groups}")
        scale = ctx.call("repeat", scale, repeats=c // groups, axis=0)
        bias = ctx.call("repeat", bias, repeats=c // groups, axis=0)
    return ctx.call(
        "group_norm", x, scale, bias, num_groups=groups, epsilon=ctx.attr("epsilon", 1e-5)
    )


@converter("MeanVarianceNormalization", attrs=("axes",))
def _mvn(ctx):
    x = ctx.input(0)
    axes = list(ctx.attr("axes", [0, 2, 3]))
    mean = ctx.call("mean", x, axes=axes, keepdims=True)
    mean_sq = ctx.call("mean", ctx.call("multiply", x, x), axes=axes, keepdims=True)
    std = ctx.call("sqrt", ctx.call("subtract", mean_sq, ctx.call("multiply", mean, mean)))
    return ctx.call(
        "divide", ctx.call("subtract", x, mean), ctx.call("add", std, ctx.like(1e-9, x))
    )


@converter("RMSNormalization", attrs=("axis", "epsilon", "stash_type"))
def _rms_norm(ctx):
    x, scale = ctx.input(0), ctx.input(1)
    rank = ctx.rank(0)
    axes = list(range(checked_axis(ctx, ctx.attr("axis", -1), rank), rank))
    xf = cast_to(ctx, x, DType.float32) if ctx.attr("stash_type", 1) == 1 else x
    ms = ctx.call("mean", ctx.call("multiply", xf, xf), axes=axes, keepdims=True)
    inv = ctx.call("rsqrt", ctx.call("add", ms, ctx.like(ctx.attr("epsilon", 1e-5), ms)))
    y = cast_to(ctx, ctx.call("multiply", xf, inv), x.ty.dtype)
    return ctx.call("multiply", y, scale)


@converter("LRN", attrs=("alpha", "beta", "bias", "size"))
def _lrn(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    size = ctx.attr("size")
    alpha, beta, bias = ctx.attr("alpha", 1e-4), ctx.attr("beta", 0.75), ctx.attr("bias", 1.0)
    channels = static_dim(x.ty.shape[1], ctx, "channel count")
    if not isinstance(size, int) or not 1 <= size <= 2 * channels + 1 or size > MAX_RANK:
        raise ConversionError(f"size {size} must be a window of at most {MAX_RANK} channels")
    sq = ctx.call("multiply", x, x)
    before = (size - 1) // 2
    pads = [0] * (2 * rank)
    pads[1], pads[rank + 1] = before, size - 1 - before
    padded = ctx.call("pad", sq, pads=pads)
    total = None
    for k in range(size):
        window = ctx.call("strided_slice", padded, begin=[k], end=[k + channels], axes=[1])
        total = window if total is None else ctx.call("add", total, window)
    scale = ctx.call(
        "add", ctx.like(bias, x), ctx.call("multiply", total, ctx.like(alpha / size, x))
    )
    return ctx.call("divide", x, ctx.call("power", scale, ctx.like(beta, x)))


@converter("Softmax", "LogSoftmax", attrs=("axis",), min_version=13)
def _softmax(ctx):
    op = "softmax" if ctx.node.op_type == "Softmax" else "log_softmax"
    return ctx.call(op, ctx.input(0), axis=ctx.attr("axis", -1))


@converter("Hardmax", attrs=("axis",), min_version=13)
def _hardmax(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = checked_axis(ctx, ctx.attr("axis", -1), rank)
    depth = static_dim(x.ty.shape[axis], ctx, "axis size")
    idx = ctx.call("argmax", x, axis=axis, keepdims=False)
    return ctx.call("one_hot", idx, depth=depth, axis=axis, dtype=x.ty.dtype)
