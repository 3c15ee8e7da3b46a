"""Converters of ATen neural-network operators: matrix products, convolution, pooling and
resampling, normalisation, softmax and attention."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import converts, op_name
from compiler.frontend.torch_ops.common import (
    as_tensor,
    cast,
    common_dtype,
    dtype_of,
    int_list,
    literal_arg,
    positive_axis,
    rank_of,
    recorded_shape,
    scaled_by,
)
from compiler.ir.nodes import Call, Constant, Expr, call
from compiler.ir.symbolic import Dim, dim_mul
from compiler.ir.types import DType


@converts(
    "aten.softmax.int", "aten._softmax.default", "aten.log_softmax.int", "aten._log_softmax.default"
)
def _softmax(ctx, node, args, kwargs):
    op = "log_softmax" if "log_softmax" in op_name(node) else "softmax"
    x = cast(args[0], ctx.out_dtype)
    return call(op, x, axis=int(args[1]))


# ----- matrix products ------------------------------------------------------------------------


@converts(
    "aten.matmul.default",
    "aten.mm.default",
    "aten.bmm.default",
    "aten.mv.default",
    "aten.dot.default",
)
def _matmul(ctx, node, args, kwargs):
    return call("matmul", args[0], args[1])


@converts("aten.linear.default")
def _linear(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    operands = [a["input"], a["weight"]] + ([a["bias"]] if a["bias"] is not None else [])
    return Call("linear", operands)


@converts("aten.addmm.default", "aten.baddbmm.default", "aten.addmv.default")
def _addmm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    names = {"addmm": ("mat1", "mat2"), "baddbmm": ("batch1", "batch2"), "addmv": ("mat", "vec")}
    lhs, rhs = names[op_name(node)]
    product = scaled_by(call("matmul", a[lhs], a[rhs]), a["alpha"])
    beta = a["beta"]
    if isinstance(beta, (int, float)) and beta == 0:
        return product
    return call("add", scaled_by(a["self"], beta), product)


# ----- einsum: diagonals, sums, then matmuls --------------------------------------------------


def _einsum_labels(equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """The labels of each operand and of the output (torch's implicit output: the labels used
    once, sorted, after the ellipsis), an ellipsis expanded into labels of its own."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise FrontendError(f"einsum {equation!r} names {len(terms)} operands, got {len(ranks)}")
    named = [t.replace("...", "") for t in terms]
    spans = [r - len(n) for t, n, r in zip(terms, named, ranks, strict=True) if "..." in t]
    ell_rank = max(spans, default=0)
    ell = [f"...{i}" for i in range(ell_rank)]
    operands = []
    for t, r in zip(terms, ranks, strict=True):
        before, dots, after = t.partition("...")
        n = r - len(before) - len(after) if dots else 0
        labels = list(before) + (ell[ell_rank - n :] if dots and n else []) + list(after)
        if len(labels) != r or (dots and n < 0):
            raise FrontendError(f"einsum operand {t!r} does not fit a rank-{r} input")
        operands.append(labels)
    letters = [c for n in named for c in n]
    if not arrow:
        return operands, ell + sorted(c for c in set(letters) if letters.count(c) == 1)
    before, dots, after = rhs.partition("...")
    out = list(before) + (ell if dots else []) + list(after)
    known = {c for labels in operands for c in labels}
    bad = [c for c in out if c not in known or not (c.isalpha() or c.startswith("..."))]
    if bad or len(set(out)) != len(out):
        why = f"label {bad[0]!r} is on no operand" if bad else "an output label is repeated"
        raise FrontendError(f"einsum {equation!r}: {why}")
    return operands, out


def _einsum_check(node) -> str | None:
    vals = [getattr(x, "meta", {}).get("val") for x in node.args[1]]
    if any(v is None for v in vals):
        return None
    try:
        operands, _ = _einsum_labels(node.args[0], [v.dim() for v in vals])
    except FrontendError as e:
        return str(e)
    sizes: dict[str, set] = {}
    for labels, v in zip(operands, vals, strict=True):
        for c, d in zip(labels, v.shape, strict=True):
            sizes.setdefault(c, set()).add(str(d))
    if any(len(s) > 1 for s in sizes.values()):
        return "einsum broadcasting a size-1 axis against a longer one"
    return None


def _einsum_diagonal(x: Expr, labels: list[str]) -> tuple[Expr, list[str]]:
    """The diagonal of every label an operand repeats (``ii->i``): a masked sum."""
    while len(set(labels)) != len(labels):
        label = next(c for c in labels if labels.count(c) > 1)
        i = labels.index(label)
        j = labels.index(label, i + 1)
        others = [k for k in range(len(labels)) if k not in (i, j)]
        x = call("permute_dims", x, axes=[*others, i, j])
        n = x.ty.shape[-1]
        idx = call("arange", start=0, stop=n, dtype=DType.int64)
        eye = call("equal", call("unsqueeze", idx, axes=[1]), call("unsqueeze", idx, axes=[0]))
        zero = as_tensor(0, dtype_of(x))
        x = call("sum", call("where", eye, x, zero), axes=[len(labels) - 1])
        labels = [labels[k] for k in others] + [label]
    return x, labels


def _einsum_permute(x: Expr, labels: list[str], order: list[str]) -> Expr:
    perm = [labels.index(c) for c in order]
    return x if perm == list(range(len(perm))) else call("permute_dims", x, axes=perm)


def _dims_product(dims) -> Dim:
    out: Dim = 1
    for d in dims:
        out = dim_mul(out, d)
    return out


def _einsum_contract(a: Expr, la: list, b: Expr, lb: list, keep: set) -> tuple[Expr, list]:
    """``a`` times ``b`` summed over the labels both have and ``keep`` lacks, as one matmul
    ``[batch..., M, K] @ [batch..., K, N]`` between reshapes and transposes."""
    batch = [c for c in la if c in lb and c in keep]
    contracted = [c for c in la if c in lb and c not in keep]
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]
    da = dict(zip(la, a.ty.shape, strict=True))
    db = dict(zip(lb, b.ty.shape, strict=True))
    a = _einsum_permute(a, la, batch + a_only + contracted)
    b = _einsum_permute(b, lb, batch + contracted + b_only)
    k = _dims_product(da[c] for c in contracted)
    a_target = [da[c] for c in batch] + [_dims_product(da[c] for c in a_only), k]
    b_target = [db[c] for c in batch] + [k, _dims_product(db[c] for c in b_only)]
    a = a if list(a.ty.shape) == a_target else call("reshape", a, shape=a_target)
    b = b if list(b.ty.shape) == b_target else call("reshape", b, shape=b_target)
    y = call("matmul", a, b)
    out = [da[c] for c in batch] + [da[c] for c in a_only] + [db[c] for c in b_only]
    y = y if list(y.ty.shape) == out else call("reshape", y, shape=out)
    return y, batch + a_only + b_only


@converts("aten.einsum.default", check=_einsum_check)
def _einsum(ctx, node, args, kwargs):
    """Per operand the diagonals of repeated labels and the sums of labels no one else has,
    then the operands contracted left to right (``path`` is only torch's order hint), then
    the sums left and a transpose to the output's order."""
    a = ctx.arg(args, kwargs)
    xs = [cast(x, ctx.out_dtype) for x in a["tensors"]]
    operands, out = _einsum_labels(a["equation"], [rank_of(x) for x in xs])
    ops = []
    for k, (x, labels) in enumerate(zip(xs, operands, strict=True)):
        x, labels = _einsum_diagonal(x, labels)
        elsewhere = set(out).union(*(set(o) for i, o in enumerate(operands) if i != k))
        alone = [i for i, c in enumerate(labels) if c not in elsewhere]
        if alone:
            x = call("sum", x, axes=alone)
            labels = [c for i, c in enumerate(labels) if i not in alone]
        ops.append((x, labels))
    y, labels = ops[0]
    for k in range(1, len(ops)):
        keep = set(out).union(*(set(o) for o in operands[k + 1 :]))
        y, labels = _einsum_contract(y, labels, *ops[k], keep)
    extra = [i for i, c in enumerate(labels) if c not in out]
    if extra:
        y = call("sum", y, axes=extra)
        labels = [c for i, c in enumerate(labels) if i not in extra]
    return _einsum_permute(y, labels, out)


# ----- convolution and pooling -------------------------------------------------------------------


def _conv_check(node) -> str | None:
    name = str(node.target)
    if "convolution" in name and literal_arg(node, "transposed", False):
        return "transposed convolution"
    weight = node.args[1].meta.get("val") if len(node.args) > 1 else None
    if weight is not None and weight.dim() not in (3, 4):
        return f"{weight.dim() - 2}-D convolution (only 1-D and 2-D)"
    return None


def _conv_padding(padding: Any, nd: int, kernel: Sequence[Dim], dilation: Sequence[int]):
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * (2 * nd)
        if padding != "same":
            raise FrontendError(f"conv padding {padding!r} is not supported")
        total = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
        return [t // 2 for t in total] + [t - t // 2 for t in total]
    pads = int_list(padding, nd)
    return pads + pads


@converts(
    "aten.conv1d.default",
    "aten.conv2d.default",
    "aten.conv1d.padding",
    "aten.conv2d.padding",
    "aten.convolution.default",
    "aten._convolution.default",
    check=_conv_check,
)
def _conv(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x, w, b = a["input"], a["weight"], a["bias"]
    nd = rank_of(w) - 2
    strides = int_list(a["stride"], nd)
    dilation = int_list(a["dilation"], nd)
    padding = _conv_padding(a["padding"], nd, w.ty.shape[2:], dilation)
    unbatched = rank_of(x) == nd + 1
    if unbatched:
        x = call("unsqueeze", x, axes=[0])
    operands = [x, w] + ([b] if b is not None else [])
    out = Call(
        f"conv{nd}d",
        operands,
        {"strides": strides, "padding": padding, "dilation": dilation, "groups": a["groups"]},
    )
    return call("squeeze", out, axes=[0]) if unbatched else out


def _pool_input(x: Expr) -> tuple[Expr, bool]:
    if rank_of(x) == 3:
        return call("unsqueeze", x, axes=[0]), True
    return x, False


def _pooled(op: str, x: Expr, **attrs) -> Expr:
    """``op`` over a batched or unbatched (C, H, W) input."""
    x, unbatched = _pool_input(x)
    out = call(op, x, **attrs)
    return call("squeeze", out, axes=[0]) if unbatched else out


def _window_counts(size: int, kernel: int, stride: int, pad: int, out: int) -> np.ndarray:
    """How many elements of the padded input (not of the ceil_mode overhang) each window
    along one axis holds: torch's divisor with count_include_pad."""
    starts = np.arange(out) * stride - pad
    return np.minimum(starts + kernel, size + pad) - starts


def _pool_nd(a: dict, kind: str, nd: int) -> Expr:
    """``max_pool{nd}d`` / ``avg_pool{nd}d`` (batched or not) from the 2-D IR ops: 1-D pools an
    (N, C, 1, W) view; 3-D is separable (a window max, and an average whose divisor is a
    product of per-axis counts, in torch as here): a 2-D pool over (H, W) of an
    (N, C*D, H, W) view, then one with a (kd, 1) window over an (N, C, D, Ho*Wo) view.
    ``divisor_override`` scales the count_include_pad average by count / divisor."""
    x = a["self"]
    kernel = int_list(a["kernel_size"], nd)
    stride = int_list(a["stride"], nd) if a["stride"] not in (None, []) else kernel
    padding = int_list(a["padding"], nd)
    dilation = int_list(a["dilation"], nd) if kind == "max" else [1] * nd
    ceil = bool(a["ceil_mode"])
    divisor = a.get("divisor_override") if kind == "avg" else None
    # with divisor_override torch divides the window sum: the count_include_pad average
    # times its count
    include = kind == "max" or bool(a["count_include_pad"]) or divisor is not None
    op = f"{kind}_pool2d"
    unbatched = rank_of(x) == nd + 1
    if rank_of(x) not in (nd + 1, nd + 2):
        raise FrontendError(f"{op[:-2]}{nd}d needs a {nd + 1}-D or {nd + 2}-D input, got {x.ty}")
    if unbatched:
        x = call("unsqueeze", x, axes=[0])

    def pool2d(y: Expr, k, s, p, d) -> Expr:
        attrs = {"dilation": list(d)} if kind == "max" else {"count_include_pad": include}
        return call(
            op, y, pool_size=list(k), strides=list(s), padding=[*p, *p], ceil_mode=ceil, **attrs
        )

    if nd == 1:
        y = pool2d(call("unsqueeze", x, axes=[2]), [1, *kernel], [1, *stride], [0, *padding],
                   [1, *dilation])  # fmt: skip
        y = call("squeeze", y, axes=[2])
    elif nd == 2:
        y = pool2d(x, kernel, stride, padding, dilation)
    else:
        n, c, d, h, w = x.ty.shape
        y = call("reshape", x, shape=[n, dim_mul(c, d), h, w])
        y = pool2d(y, kernel[1:], stride[1:], padding[1:], dilation[1:])
        ho, wo = y.ty.shape[2:]
        y = call("reshape", y, shape=[n, c, d, dim_mul(ho, wo)])
        y = pool2d(y, [kernel[0], 1], [stride[0], 1], [padding[0], 0], [dilation[0], 1])
        y = call("reshape", y, shape=[n, c, y.ty.shape[2], ho, wo])
    if divisor is not None:
        sizes, outs = x.ty.shape[2:], y.ty.shape[2:]
        if not all(isinstance(v, int) for v in (*sizes, *outs)):
            raise FrontendError(f"avg_pool{nd}d with divisor_override on symbolic spatial dims")
        count = np.ones(())
        for k in range(nd):
            count = np.multiply.outer(
                count, _window_counts(sizes[k], kernel[k], stride[k], padding[k], outs[k])
            )
        y = call("multiply", y, Constant((count / float(divisor)).astype(dtype_of(y).numpy)))
    return call("squeeze", y, axes=[0]) if unbatched else y


@converts(
    "aten.max_pool1d.default",
    "aten.max_pool2d.default",
    "aten.max_pool3d.default",
    "aten.max_pool2d_with_indices.default",
    "aten.max_pool3d_with_indices.default",
)
def _max_pool(ctx, node, args, kwargs):
    name = op_name(node)
    out = _pool_nd(ctx.arg(args, kwargs), "max", int(name[len("max_pool")]))
    if "with_indices" in name:
        return out, None  # the indices are not supported; using them is an error
    return out


@converts("aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default")
def _avg_pool(ctx, node, args, kwargs):
    return _pool_nd(ctx.arg(args, kwargs), "avg", int(op_name(node)[len("avg_pool")]))


@converts("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(ctx, node, args, kwargs):
    return _pooled("adaptive_avg_pool2d", args[0], output_size=int_list(args[1], 2))


@converts("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def _upsample_nearest2d(ctx, node, args, kwargs):
    """Nearest-neighbour resizing as a take of computed source rows and columns (torch's
    ``floor(dst * scale)`` with ``scale = in / out``, or ``1 / scale_factor`` when given)."""
    a = ctx.arg(args, kwargs)
    x = a["input"]
    out = recorded_shape(ctx)[2:]
    factors = a.get("scale_factors") or [a.get("scales_h"), a.get("scales_w")]
    for axis, (size, n) in enumerate(zip(x.ty.shape[2:], out, strict=True), start=2):
        if not (isinstance(size, int) and isinstance(n, int)):
            raise FrontendError("nearest upsampling of symbolic sizes is not supported")
        factor = factors[axis - 2] if factors and len(factors) > axis - 2 else None
        scale = np.float32(1.0 / factor if factor else size / n)
        index = np.minimum(
            np.floor(np.arange(n, dtype=np.float32) * scale).astype(np.int64), size - 1
        )
        if n != size or np.any(index != np.arange(n)):
            x = call("take", x, Constant(index), axis=axis)
    return x


def _resize_2d(ctx, args, kwargs) -> tuple:
    """What torch's 2-D upsampling ops say: (input, sizes, scales or None, the coordinate
    transformation): scales only when every factor is given and align_corners is off."""
    a = ctx.arg(args, kwargs)
    x = a["input"] if "input" in a else a["self"]
    factors = a.get("scale_factors") or [a.get("scales_h"), a.get("scales_w")]
    scales = None
    if not a["align_corners"] and factors and all(f is not None for f in factors):
        scales = [1.0, 1.0, *(float(f) for f in factors)]
    how = "align_corners" if a["align_corners"] else "half_pixel"
    sizes = [*x.ty.shape[:2], *recorded_shape(ctx)[2:]]
    return x, sizes, scales, how


@converts("aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default")
def _upsample_bilinear2d(ctx, node, args, kwargs):
    """Bilinear resizing of the last two dims. torch maps ``dst`` to ``dst * (in-1)/(out-1)``
    with align_corners, else to ``(dst + 0.5) * scale - 0.5`` clamped at 0 (ONNX half_pixel,
    not pytorch_half_pixel, which differs for an output of size 1), where ``scale`` is
    ``1 / scale_factor`` when one is given, else ``in / out``."""
    x, sizes, scales, how = _resize_2d(ctx, args, kwargs)
    return call(
        "resize", x, sizes=sizes, scales=scales, mode="linear", coordinate_transformation_mode=how
    )


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """The cubic convolution kernel (Keys) at distances ``|d|``, coefficient ``a``."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _resample_scale(size: int, out: int, align_corners: bool, factor) -> float:
    """torch's area_pixel_compute_scale: input pixels per output pixel."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / float(factor) if factor is not None and factor > 0 else size / out


def _antialias_taps(size: int, out: int, align_corners: bool, factor, mode: str) -> tuple:
    """torch's antialiased resampling along one axis (``_upsample_*_aa``, Pillow's): the
    filter (triangle, or cubic with a = -0.5) stretched by the scale when downsampling,
    over the input positions within its support around ``scale * (dst + 0.5)``, the
    weights normalised to sum 1. Positions past the taps of a row get weight 0."""
    scale = _resample_scale(size, out, align_corners, factor)
    radius = 1.0 if mode == "linear" else 2.0
    support = radius * scale if scale >= 1.0 else radius
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    rows = []
    for i in range(out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), size)
        d = (np.arange(lo, hi) - center + 0.5) * invscale
        w = np.maximum(0.0, 1.0 - np.abs(d)) if mode == "linear" else _cubic(d, -0.5)
        total = w.sum()
        rows.append((np.arange(lo, hi), w / total if total != 0 else w))
    taps = max(1, max(len(r[0]) for r in rows))
    index = np.zeros((out, taps), np.int64)
    weights = np.zeros((out, taps))
    for i, (pos, w) in enumerate(rows):
        index[i, : len(pos)], weights[i, : len(pos)] = pos, w
        index[i, len(pos) :] = pos[-1] if len(pos) else 0
    return index, weights


def _resample(x: Expr, axis: int, index: np.ndarray, weights: np.ndarray) -> Expr:
    """``sum_k x[..., index[i, k], ...] * weights[i, k]`` along ``axis``: a take of the taps,
    a product and a sum over them (the form ONNX Resize's cubic mode is composed in)."""
    dtype = dtype_of(x)
    gathered = call("take", x, Constant(index), axis=axis)  # [..., out, K, ...]
    tail = rank_of(x) - axis - 1
    w = Constant(weights.reshape(weights.shape + (1,) * tail).astype(dtype.numpy))
    return call("sum", call("multiply", gathered, w), axes=[axis + 1], keepdims=False)


@converts("aten.upsample_bicubic2d.vec", "aten.upsample_bicubic2d.default")
def _upsample_bicubic2d(ctx, node, args, kwargs):
    """Bicubic resizing of the last two dims: ``resize`` in cubic mode, as ONNX's Resize with
    torch's coefficient -0.75, taps clamped into the input (exclude_outside off) and
    torch's source positions: ``(dst + 0.5) * scale - 0.5`` (not clamped for cubic, so
    ``half_pixel`` even for an output of size 1), or align_corners; ``scale`` is ``1 /
    scale_factor`` when one is given, else ``in / out``."""
    x, sizes, scales, how = _resize_2d(ctx, args, kwargs)
    return call(
        "resize",
        x,
        sizes=sizes,
        scales=scales,
        mode="cubic",
        coordinate_transformation_mode=how,
        cubic_coeff_a=-0.75,
        exclude_outside=False,
    )


@converts(
    "aten._upsample_bicubic2d_aa.vec",
    "aten._upsample_bicubic2d_aa.default",
    "aten._upsample_bilinear2d_aa.vec",
    "aten._upsample_bilinear2d_aa.default",
)
def _upsample_taps(ctx, node, args, kwargs):
    """Antialiased bicubic and bilinear resizing of the last two dims, one axis at a time,
    with torch's taps and weights computed at import (static spatial sizes)."""
    a = ctx.arg(args, kwargs)
    x = a["input"] if "input" in a else a["self"]
    name = op_name(node)
    factors = a.get("scale_factors") or [a.get("scales_h"), a.get("scales_w")]
    align = bool(a["align_corners"])
    out = recorded_shape(ctx)
    dtype = dtype_of(x)
    y = x if dtype in (DType.float32, DType.float64) else cast(x, DType.float32)
    for axis in (2, 3):
        size, n = x.ty.shape[axis], out[axis]
        if not (isinstance(size, int) and isinstance(n, int)):
            raise FrontendError(f"{name} of symbolic spatial sizes is not supported")
        factor = factors[axis - 2] if factors and len(factors) > axis - 2 else None
        mode = "linear" if "bilinear" in name else "cubic"
        index, weights = _antialias_taps(size, n, align, factor, mode)
        y = _resample(y, axis, index, weights)
    return cast(y, dtype)


@converts("aten.adaptive_avg_pool1d.default")
def _adaptive_avg_pool1d(ctx, node, args, kwargs):
    x, size = args[0], args[1]
    x4 = call("unsqueeze", x, axes=[-2])
    out = call("adaptive_avg_pool2d", x4, output_size=[1] + int_list(size, 1))
    return call("squeeze", out, axes=[-2])


# ----- normalisation ------------------------------------------------------------------------


def _channel_param(value: Expr | None, channels: Dim, fill: float, dtype: DType) -> Expr:
    if value is not None:
        return value
    if not isinstance(channels, int):
        return call("full", shape=[channels], value=fill, dtype=dtype)
    return Constant(np.full((channels,), fill, dtype=dtype.numpy))


def _batch_norm_check(node) -> str | None:
    name = str(node.target)
    if "batch_norm.default" in name and "native" not in name:
        training = literal_arg(node, "training", False)
        if not training and len(node.args) > 3 and node.args[3] is None:
            return "batch norm without running statistics"
    return None


@converts("aten.batch_norm.default", check=_batch_norm_check)
def _batch_norm(ctx, node, args, kwargs):
    """With ``training`` (weight standardisation, a BatchNorm without running statistics) the
    batch's own statistics, as ``_native_batch_norm_legit`` computes them."""
    a = ctx.arg(args, kwargs)
    if a["training"]:
        return _batch_stats(a)
    return _batch_norm_call(
        a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"]
    )


def _batch_norm_call(x, weight, bias, mean, var, eps) -> Expr:
    c = x.ty.shape[1]
    dt = dtype_of(x)
    weight = _channel_param(weight, c, 1.0, dt)
    bias = _channel_param(bias, c, 0.0, dt)
    return call("batch_norm", x, weight, bias, mean, var, axis=1, epsilon=float(eps))


@converts("aten._native_batch_norm_legit_no_training.default")
def _native_batch_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    out = _batch_norm_call(
        a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"]
    )
    return out, None, None  # the saved statistics torch returns are not supported


@converts("aten.layer_norm.default", "aten.native_layer_norm.default")
def _layer_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["input"]
    rank = rank_of(x)
    n = len(a["normalized_shape"])
    operands = [x]
    weight, bias = a["weight"], a["bias"]
    if weight is not None or bias is not None:
        shape = list(x.ty.shape[rank - n :])
        if weight is None:
            weight = call("ones", shape=shape, dtype=dtype_of(x))
        operands.append(weight)
        if bias is not None:
            operands.append(bias)
    out = Call("layer_norm", operands, {"axes": list(range(rank - n, rank)), "epsilon": a["eps"]})
    if "native" in op_name(node):
        return out, None, None
    return out


@converts("aten._weight_norm.default", "aten._weight_norm_interface.default")
def _weight_norm(ctx, node, args, kwargs):
    """``v * (g / ||v||)``, the norm over every dim but ``dim`` (torch's norm_except_dim:
    ``dim=-1``, what ``weight_norm(dim=None)`` passes, is the norm of the whole tensor; any
    other negative dim counts from the end). ``_weight_norm_interface`` also gives the norm."""
    a = ctx.arg(args, kwargs)
    v, g, dim = a["v"], a["g"], int(a["dim"])
    dtype = common_dtype(v, g)
    v, g = cast(v, dtype), cast(g, dtype)
    rank = rank_of(v)
    keep = None if dim == -1 else positive_axis(dim, rank)
    if keep is not None and not 0 <= keep < rank:
        raise FrontendError(f"weight_norm: dim {dim} is out of range for a weight of rank {rank}")
    axes = [i for i in range(rank) if i != keep]
    norm = call("sqrt", call("sum", call("multiply", v, v), axes=axes, keepdims=keep is not None))
    out = call("multiply", v, call("divide", g, norm))
    if "interface" in op_name(node):
        return out, norm
    return out


@converts("aten.rms_norm.default")
def _rms_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["input"]
    rank = rank_of(x)
    axes = list(range(rank - len(a["normalized_shape"]), rank))
    eps = a["eps"]
    if eps is None:
        eps = float(np.finfo(dtype_of(x).numpy).eps) if dtype_of(x).is_float else 1e-6
    ms = call("mean", call("multiply", x, x), axes=axes, keepdims=True)
    y = call("multiply", x, call("rsqrt", call("add", ms, as_tensor(float(eps), dtype_of(x)))))
    return y if a["weight"] is None else call("multiply", y, a["weight"])


@converts("aten.group_norm.default", "aten.native_group_norm.default")
def _group_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["input"]
    groups = a["num_groups"] if "num_groups" in a else a["group"]
    operands = [x]
    weight, bias = a["weight"], a["bias"]
    if weight is not None or bias is not None:
        c = x.ty.shape[1]
        operands.append(_channel_param(weight, c, 1.0, dtype_of(x)))
        operands.append(_channel_param(bias, c, 0.0, dtype_of(x)))
    out = Call("group_norm", operands, {"num_groups": int(groups), "epsilon": float(a["eps"])})
    if "native" in op_name(node):
        return out, None, None
    return out


@converts("aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit.default")
def _batch_stats_norm(ctx, node, args, kwargs):
    """Batch norm with the batch's own statistics (how instance norm decomposes): a layer norm
    over every axis but the channels, then the per-channel scale and shift. Updates of running
    statistics are side effects the IR does not keep."""
    a = ctx.arg(args, kwargs)
    x = a["input"]
    if not a["training"] and a.get("running_mean") is not None:
        out = _batch_norm_call(
            x, a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"]
        )
        return out, None, None
    return _batch_stats(a), None, None


def _batch_stats(a: dict) -> Expr:
    """Batch norm by the batch's statistics: a layer norm over every axis but the channels
    (axis 1), then the per-channel scale and shift."""
    x = a["input"]
    rank = rank_of(x)
    if rank < 2:
        raise FrontendError(f"batch norm needs an input of rank >= 2, got rank {rank}")
    y = call("layer_norm", x, axes=[0, *range(2, rank)], epsilon=float(a["eps"]))
    per_channel = [-1] + [1] * (rank - 2)
    if a["weight"] is not None:
        y = call("multiply", y, call("reshape", a["weight"], shape=per_channel))
    if a["bias"] is not None:
        y = call("add", y, call("reshape", a["bias"], shape=per_channel))
    return y


@converts("aten.instance_norm.default")
def _instance_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["input"]
    c = x.ty.shape[1]
    if not a["use_input_stats"]:  # tracked running statistics: an inference batch norm
        return _batch_norm_call(
            x, a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"]
        )
    if not isinstance(c, int):
        raise FrontendError("instance norm needs a known number of channels")
    operands = [x]
    if a["weight"] is not None or a["bias"] is not None:
        operands.append(_channel_param(a["weight"], c, 1.0, dtype_of(x)))
        operands.append(_channel_param(a["bias"], c, 0.0, dtype_of(x)))
    return Call("group_norm", operands, {"num_groups": c, "epsilon": float(a["eps"])})


# ----- attention -------------------------------------------------------------------------------


def _sdpa_check(node) -> str | None:
    if literal_arg(node, "dropout_p", 0.0):
        return "attention dropout (dropout_p > 0; export the model in eval mode)"
    return None


@converts(
    "aten.scaled_dot_product_attention.default",
    "aten._scaled_dot_product_flash_attention_for_cpu.default",
    check=_sdpa_check,
)
def _sdpa(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    q, k, v = a["query"], a["key"], a["value"]
    if a.get("enable_gqa"):
        heads, kv_heads = q.ty.shape[-3], k.ty.shape[-3]
        if not (isinstance(heads, int) and isinstance(kv_heads, int)):
            raise FrontendError("grouped-query attention with symbolic head counts")
        k = call("repeat", k, repeats=heads // kv_heads, axis=-3)
        v = call("repeat", v, repeats=heads // kv_heads, axis=-3)
    operands = [q, k, v]
    mask = a.get("attn_mask")
    if mask is not None:
        operands.append(mask if dtype_of(mask) is DType.bool else cast(mask, dtype_of(q)))
    scale = a.get("scale")
    out = Call(
        "scaled_dot_product_attention",
        operands,
        {"is_causal": bool(a["is_causal"]), "scale": None if scale is None else float(scale)},
    )
    if "flash" in op_name(node):
        return out, None
    return out
