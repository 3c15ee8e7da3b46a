"""The numpy computations of the nn ops (their ``compute``, the op registry's reference;
compiler/ops/nn.py declares the ops and infers their types), and the window and layout helpers
type inference shares with them.

Float ops compute in float64 and round to the result dtype, so float16/bfloat16 results are
correctly rounded; but a float32 matmul / linear accumulates in float32 (BLAS sgemm, on BLAS's
threads: blas_threads.py), and float32 attention is computed op by op as
decompose-ops writes it (each part rounded to float32), as torch's CPU kernels compute them.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from compiler.blas_threads import cpu_threads, one_blas_thread, parallel_chunks
from compiler.errors import LimitError
from compiler.ir.op_registry import (
    Attrs,
    TypeInferenceError,
    get_op,
)
from compiler.ir.symbolic import (
    ANY,
    Dim,
    dim_add,
    dim_mul,
    dim_str,
    dim_sub,
    floordiv,
)
from compiler.ir.types import DType, is_float_dtype

# ----- shared helpers ---------------------------------------------------------------------


def _np_out_dtype(attrs: Attrs, dtype: np.dtype) -> np.dtype:
    out = attrs.get("out_dtype")
    return out.numpy if out is not None else dtype


def _f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


def layout_perm(layout: str, canonical: str, what: str) -> tuple[int, ...]:
    """For each letter of ``canonical``, its position in ``layout``."""
    if len(layout) != len(canonical) or sorted(layout) != sorted(canonical):
        raise TypeInferenceError(
            f"{what} {layout!r} must be a permutation of the letters of {canonical!r}"
        )
    return tuple(layout.index(c) for c in canonical)


def check_ints(attrs: Attrs, name: str, count: int, minimum: int, meaning: str) -> tuple:
    """The int-list attribute ``name``: ``count`` values (``meaning`` says which), each at
    least ``minimum``."""
    values = attrs[name]
    if len(values) != count:
        raise TypeInferenceError(f"{name} must have {count} values ({meaning}), got {list(values)}")
    for v in values:
        if v < minimum:
            raise TypeInferenceError(f"{name} must be >= {minimum}, got {list(values)}")
    return tuple(values)


def window_count(
    size: Dim,
    pad_begin: int,
    pad_end: int,
    kernel: Dim,
    stride: int,
    dilation: int,
    ceil_mode: bool = False,
    what: str = "spatial dim",
) -> Dim:
    """How many windows fit along one spatial dim: floor (or ceil) of
    ``(size + pads - dilation*(kernel-1) - 1) / stride`` plus one, on symbolic dims."""
    extent = dim_add(dim_mul(dilation, dim_sub(kernel, 1)), 1)  # the dilated kernel
    span = dim_sub(dim_add(size, pad_begin + pad_end), extent)
    if isinstance(span, int) and (span < 0 if not ceil_mode else span + stride - 1 < 0):
        # (with ceil_mode, a kernel larger than the padded input still gives the one window
        # that starts at its beginning, as torch and ONNX do)
        raise TypeInferenceError(
            f"{what} of size {dim_str(size)} with padding {pad_begin}+{pad_end} is smaller than "
            f"the kernel {dim_str(kernel)} (dilation {dilation}): no output"
        )
    if not ceil_mode:
        return dim_add(floordiv(span, stride), 1)
    out = dim_add(floordiv(dim_add(span, stride - 1), stride), 1)
    if isinstance(out, int) and isinstance(size, int):
        # torch: the last window must start inside the input or its begin padding
        out = out - 1 if (out - 1) * stride >= size + pad_begin else out
        if out < 1:
            raise TypeInferenceError(
                f"{what} of size {dim_str(size)} with padding {pad_begin}+{pad_end}: no "
                f"window of the kernel {dim_str(kernel)} starts inside it: no output"
            )
        return out
    if not isinstance(extent, int):
        return ANY
    # Symbolically: the last window can start past the input only if the stride exceeds
    # the part of the kernel not covered by the end padding.
    excess = extent - 1 - pad_end
    if stride <= excess + 1:
        return out
    if stride == 1:
        return dim_sub(out, 1)
    return ANY


def _window_slices(offsets, dilation, strides, out_sizes) -> tuple[slice, ...]:
    """Slices picking, for one kernel position, the input element of every output window."""
    return tuple(
        slice(o * d, o * d + s * (n - 1) + 1, s)
        for o, d, s, n in zip(offsets, dilation, strides, out_sizes, strict=True)
    )


# ----- matmul and linear ------------------------------------------------------------------


# A weight bigger than this is upcast for a float64 matmul a block at a time (see matmul_f64).
MATMUL_BLOCK_BYTES = 1 << 20
# A product reading a transposed weight by at most this many rows is computed transposed
# (``(w @ a.T).T``): OpenBLAS is several times faster with the big matrix on the left.
FEW_ROWS = 256
# Such a product of fewer multiply-adds is one BLAS call; a bigger one is split in blocks of
# about this many bytes of the weight (and at least two per thread).
PARALLEL_MIN_MACS = 1 << 22
MATMUL_CHUNK_BYTES = 4 << 20


def matmul(a: np.ndarray, b: np.ndarray, out: np.dtype | None = None) -> np.ndarray:
    """``a @ b`` for the interpreter, with a result meant to be rounded to ``out`` (default:
    ``a``'s dtype). float32 operands with a float32 result: float32 products accumulated in
    float32 (BLAS sgemm, on BLAS's threads), as torch eager's kernels and the compiled
    runtime compute them; other floats accumulated in float64 (so a float16 result is
    correctly rounded); integers in int64, wrapping like a framework kernel."""
    out = np.dtype(out) if out is not None else a.dtype
    if a.dtype == np.float32 and b.dtype == np.float32 and out == np.float32:
        return _matmul_f32(a, b)
    if is_float_dtype(a.dtype) or is_float_dtype(b.dtype):
        return matmul_f64(a, b)
    return np.matmul(a.astype(np.int64), b.astype(np.int64))


def _transposed_weight(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a @ b`` reads a 2-D ``b`` that is a transposed view of a row-major (n, k)
    matrix (a linear's weight, a tied embedding) by few rows."""
    return (
        b.ndim == 2
        and a.ndim >= 1
        and b.flags.f_contiguous
        and not b.flags.c_contiguous
        and a.size // max(1, b.shape[0]) <= FEW_ROWS
    )


def _rows_of(a: np.ndarray, k: int) -> np.ndarray:
    """``a`` as a C-contiguous (rows, k) matrix (a 1-D ``a`` is one row)."""
    return np.ascontiguousarray(a.reshape(-1, k))


def _matmul_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 ``a @ b`` accumulated in float32 (BLAS sgemm). A transposed weight read by
    few rows is multiplied as ``(w @ a.T).T`` (the same float32 products and sums, the
    weight streamed once: a 1 GiB embedding read by 16 rows in 0.26 s against 0.47 s), in
    blocks of the weight's rows shared among our threads, one BLAS thread each: OpenBLAS's
    own threads wait for each other on a busy machine (a 512-wide layer 20x slower), while
    a thread of ours that is held up just takes fewer blocks. The blocks depend on the
    shapes alone, so equal operands give equal bits."""
    if not _transposed_weight(a, b):
        return _matmul_f32_rows(a, b)
    k, n = b.shape
    w = b.T  # (n, k), row-major
    x = _rows_of(a, k)
    y = np.empty((n, x.shape[0]), np.float32)
    chunks = min(max(1, n // 64), max(2 * cpu_threads(), w.nbytes // MATMUL_CHUNK_BYTES))
    if x.shape[0] * n * k < PARALLEL_MIN_MACS:
        chunks = 1
    bounds = [n * c // chunks for c in range(chunks + 1)]

    def block(c: int) -> None:
        lo, hi = bounds[c], bounds[c + 1]
        np.matmul(w[lo:hi], x.T, out=y[lo:hi])

    with one_blas_thread():
        parallel_chunks(chunks, block)
    return np.ascontiguousarray(y.T).reshape(*a.shape[:-1], n)


def _matmul_f32_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 ``a @ b`` on one BLAS thread; a big product by a 2-D ``b`` in blocks of rows
    of ``a`` shared among our threads (as ``_matmul_f32``, and for the same reason)."""
    k = b.shape[0] if b.ndim >= 1 else 1
    rows = a.size // max(1, k) if a.ndim >= 2 else 1
    if b.ndim != 2 or a.ndim < 2 or rows * k * b.shape[1] < PARALLEL_MIN_MACS or rows < 2:
        with one_blas_thread():
            return np.matmul(a, b)
    x = _rows_of(a, k)
    n = b.shape[1]
    y = np.empty((rows, n), np.float32)
    chunks = min(rows, 2 * cpu_threads())
    bounds = [rows * c // chunks for c in range(chunks + 1)]

    def block(c: int) -> None:
        lo, hi = bounds[c], bounds[c + 1]
        np.matmul(x[lo:hi], b, out=y[lo:hi])

    with one_blas_thread():
        parallel_chunks(chunks, block)
    return y.reshape(*a.shape[:-1], n)


def matmul_f64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` accumulated in float64 like ``np.matmul(_f64(a), _f64(b))``. A 2-D ``b``
    bigger than ``MATMUL_BLOCK_BYTES`` in float64 (a weight: a 1B-parameter model's
    embedding is 1 GiB) is upcast a block at a time into cache-sized buffers instead of as a
    whole (no float64 copy twice its size; memory read once, as a float32 kernel reads it),
    the blocks shared among the CPUs' threads, one BLAS thread each (thousands of small
    calls on a multi-threaded OpenBLAS wait for its threads: on a busy 2-core machine 30x
    slower). Each output element is the same float64 dot product as the whole upcast's."""
    if not (b.ndim == 2 and b.size * 8 > MATMUL_BLOCK_BYTES and a.ndim >= 1):
        return np.matmul(_f64(a), _f64(b))
    k, n = b.shape
    a64 = _rows_of(_f64(a), k)  # (rows, k)
    # a transposed weight (a linear's) is read by rows of its (n, k) storage:
    # (w @ a.T).T, the big matrix on the left; otherwise by blocks of columns of b
    by_rows = b.flags.f_contiguous and not b.flags.c_contiguous
    width = max(1, MATMUL_BLOCK_BYTES // (8 * max(1, k)))
    starts = range(0, n, width)
    y = np.empty((n, a64.shape[0]) if by_rows else (a64.shape[0], n), np.float64)
    buffers: dict[int, np.ndarray] = {}
    a64t = a64.T

    def block(c: int) -> None:
        j = starts[c]
        w = min(width, n - j)
        me = threading.get_ident()
        buf = buffers.get(me)
        if buf is None:
            buf = buffers[me] = np.empty((width, k) if by_rows else (k, width), np.float64)
        if by_rows:
            np.copyto(buf[:w], b.T[j : j + w], casting="unsafe")
            np.matmul(buf[:w], a64t, out=y[j : j + w])
        else:
            np.copyto(buf[:, :w], b[:, j : j + w], casting="unsafe")
            np.matmul(a64, buf[:, :w], out=y[:, j : j + w])

    with one_blas_thread():
        parallel_chunks(len(starts), block)
    rows = y.T if by_rows else y
    return np.ascontiguousarray(rows).reshape(*a.shape[:-1], n)


def matmul_compute(values, attrs):
    """matmul: ``lhs @ rhs`` (``rhs`` read transposed with ``transpose_b``), see :func:`matmul`."""
    a, b = values
    if attrs["transpose_b"]:
        b = np.swapaxes(b, -1, -2)
    out = _np_out_dtype(attrs, a.dtype)
    return np.asarray(matmul(a, b, out)).astype(out)


# Result dtypes in which linear rounds like its decomposition (the product, then the bias added
# in the result dtype): decompose-ops then changes no value, and the check reuses everything
# after it (explorer/passlens/memo.py). Half precision rounds once, as frameworks' kernels do.
LINEAR_ROUNDS_AS_DECOMPOSED = (np.dtype(np.float32), np.dtype(np.float64))


def linear_compute(values, attrs):
    """linear: ``x @ weight.T + bias``, rounded like its decomposition where it is exact."""
    x, w = values[0], values[1]
    out = _np_out_dtype(attrs, x.dtype)
    if len(values) > 2 and out in LINEAR_ROUNDS_AS_DECOMPOSED:
        y = np.asarray(matmul(x, w.T, out)).astype(out)
        return np.asarray(y + values[2].astype(out)).astype(out)
    y = matmul(x, w.T, out)
    if len(values) > 2:
        y = y + (_f64(values[2]) if is_float_dtype(y.dtype) else values[2].astype(np.int64))
    return np.asarray(y).astype(out)


# ----- convolution ------------------------------------------------------------------------


CONV_LAYOUTS = {1: ("NCW", "OIW"), 2: ("NCHW", "OIHW")}


def _conv(x: np.ndarray, w: np.ndarray, strides, padding, dilation, groups) -> np.ndarray:
    """Convolution of x (N, C, *S) with w (O, C/groups, *K) in float64; no bias."""
    nd = x.ndim - 2
    x = np.pad(_f64(x), [(0, 0), (0, 0)] + [(padding[k], padding[k + nd]) for k in range(nd)])
    w = _f64(w)
    n, c, *size = x.shape
    o, cg, *kernel = w.shape
    out_sizes = [(size[k] - dilation[k] * (kernel[k] - 1) - 1) // strides[k] + 1 for k in range(nd)]
    og = o // groups
    xg = x.reshape(n, groups, cg, *size)
    wg = w.reshape(groups, og, cg, *kernel)
    if cg == 1:  # depthwise: a multiply-accumulate per kernel position beats tiny matmuls
        y = np.zeros((n, groups, og, *out_sizes))
        spatial_ones = (1,) * nd
        for offsets in np.ndindex(*kernel):
            sl = _window_slices(offsets, dilation, strides, out_sizes)
            patch = xg[(slice(None), slice(None), slice(0, 1)) + sl]  # (n, groups, 1, *out)
            y += patch * wg[(slice(None), slice(None), 0) + offsets].reshape(
                groups, og, *spatial_ones
            )
        return y.reshape(n, o, *out_sizes)
    acc = np.zeros((groups, n * math.prod(out_sizes), og))
    # One batched matrix product per kernel position: little memory, BLAS speed.
    for offsets in np.ndindex(*kernel):
        patch = xg[(slice(None),) * 3 + _window_slices(offsets, dilation, strides, out_sizes)]
        patch = np.moveaxis(np.moveaxis(patch, 2, -1), 1, 0).reshape(groups, -1, cg)
        acc += patch @ wg[(slice(None),) * 3 + offsets].transpose(0, 2, 1)
    y = acc.reshape(groups, n, *out_sizes, og)
    y = y.transpose(1, 0, nd + 2, *range(2, nd + 2))  # (n, groups, og, *out)
    return y.reshape(n, o, *out_sizes)


def conv_compute(nd: int):
    """The compute of ``conv{nd}d`` (any layout: computed in NC.../OI... and permuted back)."""
    canon_data, canon_kernel = CONV_LAYOUTS[nd]

    def compute(values, attrs):
        data, weight = values[0], values[1]
        layout = attrs["data_layout"]
        dperm = layout_perm(layout, canon_data, "data_layout")
        kperm = layout_perm(attrs["kernel_layout"], canon_kernel, "kernel_layout")
        x = np.transpose(data, dperm)
        w = np.transpose(weight, kperm)
        y = _conv(x, w, attrs["strides"], attrs["padding"], attrs["dilation"], attrs["groups"])
        if len(values) > 2:
            y += _f64(values[2]).reshape(-1, *(1,) * nd)
        y = np.transpose(y, layout_perm(canon_data, layout, "data_layout"))
        return y.astype(_np_out_dtype(attrs, data.dtype))

    return compute


# ----- pooling ----------------------------------------------------------------------------


def pool_params(attrs: Attrs) -> tuple[tuple, tuple, tuple, tuple]:
    """A 2-D pool's ``(pool_size, strides, dilation, padding)`` checked (strides default to the
    pool size, dilation to 1)."""
    pool = check_ints(attrs, "pool_size", 2, 1, "height, width")
    if attrs["strides"] is None:
        strides = pool
    else:
        strides = check_ints(attrs, "strides", 2, 1, "height, width")
    dilation = (
        check_ints(attrs, "dilation", 2, 1, "height, width") if "dilation" in attrs else (1, 1)
    )
    padding = check_ints(attrs, "padding", 4, 0, "top, left, bottom, right")
    return pool, strides, dilation, padding


def pool_compute(kind: str):
    """The compute of ``{kind}_pool2d`` (``max`` or ``avg``), its windows as torch has them."""

    def compute(values, attrs):
        (data,) = values
        layout = attrs["layout"]
        x = np.transpose(data, layout_perm(layout, "NCHW", "layout"))
        pool, strides, dilation, padding = pool_params(attrs)
        size = x.shape[2:]
        out = [
            window_count(
                size[k],
                padding[k],
                padding[k + 2],
                pool[k],
                strides[k],
                dilation[k],
                attrs["ceil_mode"],
            )
            for k in range(2)
        ]
        # ceil_mode windows may run past the end padding: pad further (never counted).
        extra = [
            max(
                0,
                (out[k] - 1) * strides[k]
                + dilation[k] * (pool[k] - 1)
                + 1
                - (size[k] + padding[k] + padding[k + 2]),
            )
            for k in range(2)
        ]
        widths = [(0, 0), (0, 0)] + [(padding[k], padding[k + 2] + extra[k]) for k in range(2)]
        if kind == "max":
            low = -np.inf if is_float_dtype(x.dtype) else np.iinfo(x.dtype).min
            xp = np.pad(x, widths, constant_values=np.asarray(low).astype(x.dtype))
            y = None
            for offsets in np.ndindex(*pool):
                win = xp[(slice(None),) * 2 + _window_slices(offsets, dilation, strides, out)]
                y = win if y is None else np.maximum(y, win)
        else:
            xp = np.pad(_f64(x), widths)
            if attrs["count_include_pad"]:
                counted = np.pad(
                    np.ones([size[k] + padding[k] + padding[k + 2] for k in range(2)]),
                    [(0, e) for e in extra],
                )
            else:
                counted = np.pad(
                    np.ones(size), [(padding[k], padding[k + 2] + extra[k]) for k in range(2)]
                )
            total = np.zeros(x.shape[:2] + tuple(out))
            count = np.zeros(out)
            for offsets in np.ndindex(*pool):
                sl = _window_slices(offsets, dilation, strides, out)
                total += xp[(slice(None),) * 2 + sl]
                count += counted[sl]
            y = total / count
        y = np.transpose(y, layout_perm("NCHW", layout, "layout"))
        return np.asarray(y).astype(data.dtype)

    return compute


def _adaptive_mean(x: np.ndarray, axis: int, out: int) -> np.ndarray:
    """Average ``x`` along ``axis`` into ``out`` bins [floor(i*n/out), ceil((i+1)*n/out))."""
    n = x.shape[axis]
    bins = [
        np.mean(np.take(x, range((i * n) // out, -((-(i + 1) * n) // out)), axis=axis), axis=axis)
        for i in range(out)
    ]
    return np.stack(bins, axis=axis)


def adaptive_compute(values, attrs):
    """adaptive_avg_pool2d: torch's adaptive windows, one mean per output position."""
    (data,) = values
    layout = attrs["layout"]
    x = _f64(np.transpose(data, layout_perm(layout, "NCHW", "layout")))
    size = attrs["output_size"] or x.shape[2:]
    # The mean over a rectangle is the mean over its rows of the means over its columns.
    y = _adaptive_mean(_adaptive_mean(x, 2, size[0]), 3, size[1])
    return np.transpose(y, layout_perm("NCHW", layout, "layout")).astype(data.dtype)


# ----- normalisation ----------------------------------------------------------------------


def batch_norm_compute(values, attrs):
    """batch_norm (inference): normalised with the running mean and variance, scaled, shifted."""
    data, gamma, beta, mean, var = values
    axis = attrs["axis"] % data.ndim
    shape = [1] * data.ndim
    shape[axis] = -1
    g, b, m, v = (_f64(p).reshape(shape) for p in (gamma, beta, mean, var))
    y = (_f64(data) - m) / np.sqrt(v + attrs["epsilon"]) * g + b
    return y.astype(data.dtype)


def _normalize(x: np.ndarray, axes: tuple[int, ...], epsilon: float) -> np.ndarray:
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon)


def layer_norm_compute(values, attrs):
    """layer_norm over ``axes``, then the optional gamma and beta."""
    data = values[0]
    axes = tuple(sorted(a % data.ndim for a in attrs["axes"]))
    y = _normalize(_f64(data), axes, attrs["epsilon"])
    shape = [data.shape[a] if a in axes else 1 for a in range(data.ndim)]
    for p, op in zip(values[1:], (np.multiply, np.add), strict=False):
        y = op(y, _f64(p).reshape(shape))
    return y.astype(data.dtype)


def group_norm_compute(values, attrs):
    """group_norm: each group of channels normalised, then per-channel gamma and beta."""
    data = values[0]
    axis = attrs["channel_axis"] % data.ndim
    x = np.moveaxis(_f64(data), axis, 1)
    n, c = x.shape[:2]
    y = _normalize(x.reshape(n, attrs["num_groups"], -1), (2,), attrs["epsilon"]).reshape(x.shape)
    shape = (c,) + (1,) * (x.ndim - 2)
    for p, op in zip(values[1:], (np.multiply, np.add), strict=False):
        y = op(y, _f64(p).reshape(shape))
    return np.moveaxis(y, 1, axis).astype(data.dtype)


# ----- softmax ----------------------------------------------------------------------------


def softmax64(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    """(Log-)softmax of ``x`` along ``axis`` in float64, max-shifted for stability."""
    x = _f64(x)
    if x.ndim == 0:
        return np.zeros(()) if log else np.ones(())
    shifted = x - np.max(x, axis=axis, keepdims=True)
    total = np.sum(np.exp(shifted), axis=axis, keepdims=True)
    return shifted - np.log(total) if log else np.exp(shifted) / total


# ----- attention --------------------------------------------------------------------------


# Result dtypes in which attention is computed as its decomposition (decompose-ops' ``_attention``:
# scores, scale, mask, softmax and product each rounded to the dtype, as torch's kernels do):
# decompose-ops then changes no value (but where a query has no key left: zeros here, NaN there)
# and the check reuses everything after it. Other dtypes are computed in float64, rounded once.
SDPA_ROUNDS_AS_DECOMPOSED = (np.dtype(np.float32), np.dtype(np.float64))


def _part(op: str, values: list, **attrs) -> np.ndarray:
    """The value of op ``op`` on ``values``, computed as the interpreter computes a call."""
    d = get_op(op)
    return d.compute(values, d.normalize_attrs(attrs))


def sdpa_parts(values, attrs, part=_part) -> np.ndarray:
    """Attention op by op, exactly as decompose-ops' ``_attention`` writes it, each op's value
    by ``part(op, values, **attrs)`` (the reference's by default; the torch kernels give
    theirs); a query row with no key left gives zeros (its decomposition: NaN)."""
    q, k, v, *mask = values
    dtype = q.dtype
    scale = attrs["scale"] if attrs["scale"] is not None else 1.0 / math.sqrt(q.shape[-1])
    axes = list(range(k.ndim))
    axes[-2:] = axes[-1], axes[-2]
    kt = part("permute_dims", [k], axes=axes)
    scores = part("multiply", [part("matmul", [q, kt]), np.asarray(scale, dtype)])
    keep = None
    if mask and mask[0].dtype == np.bool_:
        keep = mask[0]
    elif mask:
        scores = part("add", [scores, mask[0]])
    if attrs["is_causal"]:
        ones = part("ones", [], shape=[q.shape[-2], k.shape[-2]], dtype=DType.bool)
        causal = part("tril", [ones])
        keep = causal if keep is None else part("logical_and", [keep, causal])
    if keep is not None:
        scores = part("where", [keep, scores, np.asarray(-np.inf, dtype)])
    with np.errstate(invalid="ignore"):  # a row with no key left: zeros below
        probs = part("softmax", [scores], axis=-1)
    out = part("matmul", [probs, v])
    dead = np.max(scores, axis=-1, keepdims=True) == -np.inf  # no key left (NaN above)
    if dead.any():
        out = np.where(dead, np.zeros((), dtype), out).astype(dtype)
    return out


def sdpa_compute(values, attrs):
    """scaled_dot_product_attention: op by op in float32/float64, else in float64, rounded once."""
    if values[0].dtype in SDPA_ROUNDS_AS_DECOMPOSED:
        return sdpa_parts(values, attrs)
    q, k, v = (_f64(x) for x in values[:3])
    scale = attrs["scale"] if attrs["scale"] is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = (q @ np.swapaxes(k, -1, -2)) * scale
    keep = np.ones(scores.shape[-2:], dtype=bool)
    if attrs["is_causal"]:
        keep = np.tril(keep)
    if len(values) > 3:
        mask = values[3]
        if mask.dtype == np.bool_:
            keep = keep & mask
        else:
            scores = scores + _f64(mask)
    scores = np.where(keep, scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    weights = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = np.sum(weights, axis=-1, keepdims=True)
    # A row with nothing to attend to gives zeros, as torch does.
    probs = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
    return (probs @ v).astype(values[0].dtype)


# ----- resize -----------------------------------------------------------------------------


def _resize_source(out: int, size: int, scale: float, how: str) -> np.ndarray:
    """For each result position along one axis, its (fractional) position in the input:
    ONNX Resize's coordinate transformations. ``scale`` is the given scale, which ONNX uses
    instead of ``out / size`` when the model gives scales."""
    x = np.arange(out, dtype=np.float64)
    if how == "align_corners":
        return x * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    if how == "asymmetric":
        return x / scale
    if how == "pytorch_half_pixel" and out == 1:
        return np.zeros(out)
    source = (x + 0.5) / scale - 0.5
    if how == "half_pixel_symmetric":
        source += size / 2 * (1 - out / (scale * size))
    return source


def _nearest_index(source: np.ndarray, how: str) -> np.ndarray:
    if how == "floor":
        return np.floor(source)
    if how == "ceil":
        return np.ceil(source)
    halfway = source - np.floor(source) == 0.5
    tie = np.floor(source) if how == "round_prefer_floor" else np.ceil(source)
    return np.where(halfway, tie, np.round(source))


def cubic_weights(t, a: float) -> list:
    """The weights of the 4 taps ``floor(x) - 1 .. floor(x) + 2`` for ``t = x - floor(x)``
    (in [0, 1)): the cubic convolution kernel with coefficient ``a`` at distances ``t + 1``,
    ``t``, ``1 - t``, ``2 - t`` (ONNX Resize's cubic mode, torch's bicubic with -0.75). Works
    on numpy arrays and, with the same arithmetic, on the lowering's expressions."""

    def near(d):  # distance <= 1
        return ((d * (a + 2) - (a + 3)) * d) * d + 1

    def far(d):  # 1 <= distance < 2
        return ((d * a - 5 * a) * d + 8 * a) * d - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_axis(y: np.ndarray, axis: int, source: np.ndarray, size: int, attrs: Attrs):
    low = np.floor(source)
    w = np.stack(cubic_weights(source - low, float(attrs["cubic_coeff_a"])), axis=1)
    taps = low.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    if attrs["exclude_outside"]:  # taps outside the input weigh 0, the rest renormalised
        w = np.where((taps >= 0) & (taps < size), w, 0.0)
        w = w / w.sum(axis=1, keepdims=True)
    taps = np.clip(taps, 0, size - 1)  # else the edge repeats
    out = 0.0
    for k in range(4):
        wk = w[:, k].reshape((-1,) + (1,) * (y.ndim - axis - 1))
        out = out + np.take(y, taps[:, k], axis=axis) * wk
    return out


def scaled_length(size: int, scale: float) -> int:
    """ONNX Resize's result length for an input ``size`` long and a ``scale``, as onnxruntime
    computes it: the product in float32 (the type of the scales), truncated. The double
    product ONNX's reference and shape inference take differs where float32 rounds it up to a
    whole number: 10 x 0.7 is 7 in onnxruntime (and in torch eager), 6 in the reference."""
    return int(np.float32(scale) * np.float32(size))


RESIZE_MAX_DENOMINATOR = 16
"""The largest denominator of a scale (a binary fraction p / q) whose result length stays
exact in dims for a symbolic size (``(3*h) // 2`` for 1.5): the float32 product onnxruntime
takes (:func:`scaled_length`) is the exact floor while the result is under 2**24 / q (a
million for q = 16); a scale with a wider fraction (0.7) leaves the length '?'."""


def scaled_dim(d: Dim, scale: float) -> Dim:
    """The result length of a dim ``d`` resized by ``scale``: :func:`scaled_length` of a
    number; of a symbolic dim, ``(d * p) // q`` for a scale ``p / q`` with q at most
    :data:`RESIZE_MAX_DENOMINATOR`; '?' for an unknown dim or another scale."""
    if isinstance(d, int):
        return scaled_length(d, scale)
    if d is ANY or not (scale > 0 and math.isfinite(scale)):
        return ANY
    p, q = float(np.float32(scale)).as_integer_ratio()
    if q > RESIZE_MAX_DENOMINATOR:
        return ANY
    return floordiv(dim_mul(d, p), q)


def resize_length(size: int, out, scales, axis: int) -> int:
    """The result length along ``axis`` of an input ``size`` long: ``out`` from the sizes
    attribute, or for a dim left unknown at import ('?'), ONNX's ``floor(size * scale)`` as
    onnxruntime computes it (:func:`scaled_length`; the input's length where no scale is given:
    an axis the sizes did not resize)."""
    if isinstance(out, (int, np.integer)):
        return int(out)
    if out is ANY:
        return scaled_length(size, scales[axis]) if scales is not None else int(size)
    raise ValueError(f"resize: the size {out} along axis {axis} is not resolved to a number")


# the most a result sized only when it runs may hold: the interpreter's limit for one value
# (compiler.interpret.MAX_VALUE_BYTES), stated here so that an op's reference needs no
# interpreter (as compiler.opaque.run.MAX_RESULT_BYTES)
MAX_RESULT_BYTES = 4 << 30


def _check_resize_size(data: np.ndarray, lengths: list[int], attrs: Attrs) -> None:
    """A size left unknown at import ('?') is known only now, from the input: the result is
    sized before any of it is made (a crafted file's scales would otherwise take the machine's
    memory), against the interpreter's limit for one value (in float64 for the n-linear and
    n-cubic modes, which compute in it)."""
    if all(isinstance(o, (int, np.integer)) for o in attrs["sizes"]):
        return  # sized at import: the interpreter's check_size saw the annotated type
    itemsize = data.dtype.itemsize if attrs["mode"] == "nearest" else max(8, data.dtype.itemsize)
    if math.prod(lengths) * itemsize > MAX_RESULT_BYTES:
        raise LimitError(
            f"resize of {list(data.shape)} to {lengths} would hold {math.prod(lengths):,} "
            f"elements, over the interpreter's limit of {MAX_RESULT_BYTES >> 30} GiB for one "
            "value (compiler.ir.nn_compute.MAX_RESULT_BYTES)"
        )


def resize_compute(values: list[np.ndarray], attrs: Attrs) -> np.ndarray:
    """resize: nearest, n-linear or n-cubic, one axis at a time, with ONNX's coordinate modes."""
    (data,) = values
    lengths = [
        resize_length(size, out, attrs["scales"], axis)
        for axis, (size, out) in enumerate(zip(data.shape, attrs["sizes"], strict=True))
    ]
    _check_resize_size(data, lengths, attrs)
    y = data if attrs["mode"] == "nearest" else _f64(data)
    how = attrs["coordinate_transformation_mode"]
    for axis, (size, out) in enumerate(zip(data.shape, lengths, strict=True)):
        scale = attrs["scales"][axis] if attrs["scales"] is not None else out / size
        if out == 0 or size == 0:  # nothing to read: an empty result along this axis
            y = np.take(y, np.zeros(0, dtype=np.int64), axis=axis)
            continue
        source = _resize_source(out, size, scale, how)
        if attrs["mode"] == "nearest":
            index = np.clip(_nearest_index(source, attrs["nearest_mode"]), 0, size - 1)
            y = np.take(y, index.astype(np.int64), axis=axis)
            continue
        if attrs["mode"] == "cubic":
            if out != size or scale != 1.0:  # (ONNX's reference leaves such axes as they are)
                y = _cubic_axis(y, axis, source, size, attrs)
            continue
        source = np.clip(source, 0, size - 1)  # ONNX and torch repeat the edge
        low = np.floor(source).astype(np.int64)
        high = np.minimum(low + 1, size - 1)
        w = (source - low).reshape((-1,) + (1,) * (data.ndim - axis - 1))
        y = np.take(y, low, axis=axis) * (1 - w) + np.take(y, high, axis=axis) * w
    return np.asarray(y).astype(data.dtype)
