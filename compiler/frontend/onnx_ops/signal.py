"""Signal processing ONNX ops: DFT, STFT, the Hann/Hamming/Blackman windows and
MelWeightMatrix, composed of existing IR ops.

A DFT of length N along an axis is two matrix products with the cos and sin matrices of the
angles 2*pi*(n*k mod N)/N, computed in float64 and cast back (the node tests compare with
numpy's FFT to atol 1e-7). The matrices are constants when the lengths are static; a length
known only at run time (an STFT frame length, a window size given as a graph input, the
size of a symbolic dim) builds them from index ranges, so the result has dims known only at
run time.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend.onnx_context import (
    MAX_IMPORT_ELEMENTS,
    ConversionError,
    ConvertContext,
    dtype_of,
)
from compiler.frontend.onnx_ops.registry import (
    I64,
    cast_to,
    converter,
    dim_value,
    index_range,
    scalar_i64,
)
from compiler.ir.nodes import Block, Expr, If, collect_bindings
from compiler.ir.types import DType

F64 = DType.float64
MAX_LENGTH = 1 << 24
"""The largest static signal, frame, window or DFT length converted."""
MAX_MATRIX = 1 << 26
"""The largest static DFT matrix (rows x cols) converted; up to MAX_IMPORT_ELEMENTS it is a
constant, above it is computed at run time (static shapes either way)."""

Length = int | Expr  # a static length, or a 0-d i64 value known at run time


# ----- lengths: an int, or a 0-d i64 value -------------------------------------------------


def _length_of(ctx: ConvertContext, i: int, what: str) -> Length:
    """A scalar length input: its value when constant, else the value (0-d i64)."""
    value = ctx.const(i)
    if value is None:
        return scalar_i64(ctx, ctx.input(i))
    if value.size != 1 or not np.issubdtype(value.dtype, np.integer):
        raise ConversionError(f"{what} must be one integer, got {value.dtype} {value.shape}")
    n = int(value.reshape(-1)[0])
    if not 0 <= n <= MAX_LENGTH:
        raise ConversionError(f"{what} {n} is out of range (0 to {MAX_LENGTH})")
    return n


def _expr(ctx: ConvertContext, n: Length) -> Expr:
    return ctx.constant(n, I64) if isinstance(n, int) else n


def _arith(ctx: ConvertContext, op: str, a: Length, b: Length) -> Length:
    if isinstance(a, int) and isinstance(b, int):
        return {
            "add": a + b,
            "subtract": a - b,
            "floor_divide": a // b if b else 0,
            "minimum": min(a, b),
            "multiply": a * b,
        }[op]
    return ctx.call(op, _expr(ctx, a), _expr(ctx, b))


def _range(ctx: ConvertContext, n: Length) -> Expr:
    """0, 1, ..., n - 1 as a 1-D i64 tensor."""
    if isinstance(n, int):
        if n <= MAX_IMPORT_ELEMENTS:
            return ctx.constant(np.arange(n), I64)
        return ctx.call("arange", start=0, stop=n, step=1, dtype=I64)
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    return index_range(ctx, zero, n, one)


def _first(ctx: ConvertContext, x: Expr, n: Length, length: Length) -> Expr:
    """The first ``n`` entries of the last axis of ``x`` (of size ``length``)."""
    if isinstance(n, int) and isinstance(length, int):
        if n == length:
            return x
        rank = len(x.ty.shape)
        return ctx.call("strided_slice", x, begin=[0], end=[n], strides=None, axes=[rank - 1])
    return ctx.call("take", x, _range(ctx, n), axis=len(x.ty.shape) - 1)


# ----- the DFT ----------------------------------------------------------------------------


def _dft_matrices(ctx, rows: Length, cols: Length, n_fft: Length) -> tuple[Expr, Expr]:
    """cos and sin of 2*pi*(r*c mod N)/N, float64 [rows, cols]."""
    static = all(isinstance(v, int) for v in (rows, cols, n_fft))
    if static and rows * cols > MAX_MATRIX:
        raise ConversionError(f"a DFT matrix of {rows} x {cols} is too large")
    if static and rows * cols <= MAX_IMPORT_ELEMENTS:
        prod = np.outer(np.arange(rows), np.arange(cols)) % max(n_fft, 1)
        angle = 2 * np.pi * prod / max(n_fft, 1)
        return ctx.constant(np.cos(angle), F64), ctx.constant(np.sin(angle), F64)
    r = ctx.call("unsqueeze", _range(ctx, rows), axes=[1])
    c = ctx.call("unsqueeze", _range(ctx, cols), axes=[0])
    n = ctx.call("maximum", _expr(ctx, n_fft), ctx.constant(1, I64))
    prod = ctx.call("mod", ctx.call("multiply", r, c), n)
    angle = ctx.call(
        "divide",
        ctx.call("multiply", cast_to(ctx, prod, F64), ctx.constant(2 * np.pi, F64)),
        cast_to(ctx, n, F64),
    )
    return ctx.call("cos", angle), ctx.call("sin", angle)


def _transform(
    ctx, re: Expr, im: Expr | None, length: Length, n_fft: Length, inverse: bool, onesided: bool
) -> tuple[Expr, Expr | None]:
    """The DFT along the last axis of (re, im) (float64; im None: a real signal): the
    real and imaginary parts (the imaginary None for an inverse one-sided transform)."""
    mm = lambda a, b: ctx.call("matmul", a, b)  # noqa: E731
    if inverse and onesided:  # a real signal from the first N // 2 + 1 frequencies
        half = _arith(ctx, "add", _arith(ctx, "floor_divide", n_fft, 2), 1)
        rows = _arith(ctx, "minimum", length, half)
        cos, sin = _dft_matrices(ctx, rows, n_fft, n_fft)
        # each frequency but 0 and N/2 stands for itself and its conjugate
        k = _range(ctx, rows)
        single = ctx.call(
            "logical_or",
            ctx.call("equal", k, ctx.constant(0, I64)),
            ctx.call("equal", ctx.call("multiply", k, ctx.constant(2, I64)), _expr(ctx, n_fft)),
        )
        weight = ctx.call("where", single, ctx.constant(1.0, F64), ctx.constant(2.0, F64))
        weight = ctx.call("unsqueeze", weight, axes=[1])
        cos, sin = ctx.call("multiply", cos, weight), ctx.call("multiply", sin, weight)
        re = _first(ctx, re, rows, length)
        out = mm(re, cos)
        if im is not None:
            out = ctx.call("subtract", out, mm(_first(ctx, im, rows, length), sin))
        return ctx.call("divide", out, cast_to(ctx, _expr(ctx, n_fft), F64)), None
    cols = _arith(ctx, "add", _arith(ctx, "floor_divide", n_fft, 2), 1) if onesided else n_fft
    rows = _arith(ctx, "minimum", length, n_fft)  # longer: truncated; shorter: zero-padded
    cos, sin = _dft_matrices(ctx, rows, cols, n_fft)
    re = _first(ctx, re, rows, length)
    im = _first(ctx, im, rows, length) if im is not None else None
    if not inverse:  # sum (re + i im)(cos - i sin)
        out_re = mm(re, cos) if im is None else ctx.call("add", mm(re, cos), mm(im, sin))
        out_im = ctx.call("neg", mm(re, sin))
        if im is not None:
            out_im = ctx.call("add", out_im, mm(im, cos))
        return out_re, out_im
    # 1/N sum (re + i im)(cos + i sin)
    out_re, out_im = mm(re, cos), mm(re, sin)
    if im is not None:
        out_re = ctx.call("subtract", out_re, mm(im, sin))
        out_im = ctx.call("add", out_im, mm(im, cos))
    n = cast_to(ctx, _expr(ctx, n_fft), F64)
    return ctx.call("divide", out_re, n), ctx.call("divide", out_im, n)


def _complex_parts(ctx, x: Expr, what: str) -> tuple[Expr, Expr | None]:
    """x [..., 1 or 2] -> its real and imaginary parts (float64), the last dim dropped."""
    last = x.ty.shape[-1]
    if last not in (1, 2):
        raise ConversionError(f"{what}: the last dim must be 1 (real) or 2 (complex), got {last}")
    x = cast_to(ctx, x, F64)
    axis = len(x.ty.shape) - 1
    re = ctx.call("take", x, ctx.constant(0, I64), axis=axis)
    im = ctx.call("take", x, ctx.constant(1, I64), axis=axis) if last == 2 else None
    return re, im


def _stack(ctx, re: Expr, im: Expr | None, dtype: DType) -> Expr:
    """[..., 2] (or [..., 1] for a real result) in ``dtype``."""
    parts = [ctx.call("unsqueeze", p, axes=[len(p.ty.shape)]) for p in (re, im) if p is not None]
    out = parts[0] if len(parts) == 1 else ctx.call("concat", *parts, axis=-1)
    return cast_to(ctx, out, dtype)


def _dft_along(ctx, x: Expr, axis: int, n_fft: Length | None, inverse: bool, onesided: bool):
    rank = len(x.ty.shape)
    re, im = _complex_parts(ctx, x, "DFT")
    d = x.ty.shape[axis]
    length: Length = d if isinstance(d, int) else dim_value(ctx, x, axis)
    if n_fft is None:  # an inverse one-sided DFT gives an even length by default
        one_sided_length = _arith(ctx, "multiply", _arith(ctx, "subtract", length, 1), 2)
        n_fft = one_sided_length if inverse and onesided else length
    if isinstance(n_fft, int) and not 1 <= n_fft <= MAX_LENGTH:
        raise ConversionError(f"DFT length {n_fft} is out of range (1 to {MAX_LENGTH})")
    # move the axis last (of the signal dims), transform, move it back
    perm = [a for a in range(rank - 1) if a != axis] + [axis]
    back = [perm.index(a) for a in range(rank - 1)]
    moved = perm != list(range(rank - 1))
    if moved:
        re = ctx.call("permute_dims", re, axes=perm)
        im = ctx.call("permute_dims", im, axes=perm) if im is not None else None
    out_re, out_im = _transform(ctx, re, im, length, n_fft, inverse, onesided)
    if moved:
        out_re = ctx.call("permute_dims", out_re, axes=back)
        out_im = ctx.call("permute_dims", out_im, axes=back) if out_im is not None else None
    return _stack(ctx, out_re, out_im, x.ty.dtype)


@converter("DFT", attrs=("axis", "inverse", "onesided"), min_version=17)
def _dft(ctx):
    """DFT-17 (axis an attribute, default 1) and DFT-20 (axis an input, default -2): the
    signal's last dim is 1 (real) or 2 (complex); dft_length pads or truncates."""
    x = ctx.input(0)
    if not x.ty.dtype.is_float:
        raise ConversionError("DFT needs a floating-point input")
    rank = ctx.rank(0)
    if rank < 2:
        raise ConversionError(f"DFT needs a [..., signal, 1 or 2] input, got rank {rank}")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    n_fft = _length_of(ctx, 1, "dft_length") if ctx.has(1) else None
    if ctx.version >= 20:
        if ctx.has(2) and ctx.const(2) is None:  # a computed axis: one If per axis
            return _dft_computed_axis(ctx, x, ctx.input(2), n_fft, inverse, onesided)
        axis = -2
        if ctx.has(2):
            value = ctx.const(2)
            if value.size != 1 or not np.issubdtype(value.dtype, np.integer):
                raise ConversionError("axis must be one integer")
            axis = int(value.reshape(-1)[0])
    else:
        axis = ctx.attr("axis", 1)
    if not -rank <= axis < rank or axis % rank == rank - 1:
        raise ConversionError(f"DFT axis {axis} is not a signal axis of a rank-{rank} input")
    return _dft_along(ctx, x, axis % rank, n_fft, inverse, onesided)


def _dft_computed_axis(ctx, x, axis: Expr, n_fft, inverse: bool, onesided: bool) -> Expr:
    rank = len(x.ty.shape)
    axis = scalar_i64(ctx, axis)
    norm = ctx.call(
        "where",
        ctx.call("less", axis, ctx.constant(0, I64)),
        ctx.call("add", axis, ctx.constant(rank, I64)),
        axis,
    )
    bound = ctx.scope.bound_ids()
    branches: list[tuple[int, Expr]] = []
    problems = []
    for a in range(rank - 1):  # an axis whose transform is invalid (length 1 for irfft) is left out
        try:
            branches.append((a, _dft_along(ctx, x, a, n_fft, inverse, onesided)))
        except ConversionError as e:
            problems.append(f"axis {a}: {e}")
    if not branches:
        raise ConversionError("DFT along no axis is valid: " + "; ".join(problems))
    # the last branch is the fallback: an axis out of range is not checked at run time
    result = branches[-1][1]
    for a, then in reversed(branches[:-1]):
        cond = ctx.call("equal", norm, ctx.constant(a, I64))
        result = If(
            cond,
            Block(collect_bindings([then], bound), then),
            Block(collect_bindings([result], bound), result),
            prov=ctx.prov,
        )
    return result


# ----- STFT -------------------------------------------------------------------------------


@converter("STFT", attrs=("onesided",), min_version=17)
def _stft(ctx):
    """STFT-17: frames of frame_length at each frame_step, times the window, DFT'd:
    [batch, frames, bins, 2]."""
    signal = ctx.input(0)
    if not signal.ty.dtype.is_float:
        raise ConversionError("STFT needs a floating-point signal")
    if ctx.rank(0) != 3:
        raise ConversionError(f"STFT needs a [batch, length, 1 or 2] signal, got {signal.ty}")
    onesided = bool(ctx.attr("onesided", 1))
    step = _length_of(ctx, 1, "frame_step")
    if isinstance(step, int) and step < 1:
        raise ConversionError(f"frame_step must be positive, got {step}")
    window = ctx.input(2) if ctx.has(2) else None
    if ctx.has(3):
        n = _length_of(ctx, 3, "frame_length")
    elif window is not None:
        if window.ty.shape is None or len(window.ty.shape) != 1:
            raise ConversionError(f"the window must be 1-D, got {window.ty}")
        d = window.ty.shape[0]
        n = d if isinstance(d, int) else dim_value(ctx, window, 0)
    else:
        raise ConversionError("STFT needs a window or a frame_length")
    d = signal.ty.shape[1]
    length: Length = d if isinstance(d, int) else dim_value(ctx, signal, 1)
    if isinstance(length, int) and isinstance(n, int) and n > length:
        raise ConversionError(f"frame_length {n} is longer than the signal ({length})")
    frames = _arith(
        ctx, "add", _arith(ctx, "floor_divide", _arith(ctx, "subtract", length, n), step), 1
    )
    if isinstance(frames, int) and isinstance(n, int) and frames * n > MAX_LENGTH:
        raise ConversionError(f"{frames} frames of {n} samples are too many")
    # index [frame, t] = frame * step + t, taken along the signal axis
    starts = ctx.call("multiply", _range(ctx, frames), _expr(ctx, step))
    index = ctx.call(
        "add",
        ctx.call("unsqueeze", starts, axes=[1]),
        ctx.call("unsqueeze", _range(ctx, n), axes=[0]),
    )
    framed = ctx.call("take", signal, index, axis=1)  # [batch, frames, n, 1 or 2]
    re, im = _complex_parts(ctx, framed, "STFT")  # [batch, frames, n]
    if window is not None:
        w = cast_to(ctx, window, F64)
        re = ctx.call("multiply", re, w)
        im = ctx.call("multiply", im, w) if im is not None else None
    out_re, out_im = _transform(ctx, re, im, n, n, False, onesided)
    return _stack(ctx, out_re, out_im, signal.ty.dtype)


# ----- windows ----------------------------------------------------------------------------

# (a0, a1, a2): a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
_WINDOWS = {
    "HannWindow": (0.5, 0.5, 0.0),
    "HammingWindow": (25.0 / 46.0, 21.0 / 46.0, 0.0),
    "BlackmanWindow": (0.42, 0.5, 0.08),
}


def _window(kind: str):
    a0, a1, a2 = _WINDOWS[kind]

    def convert(ctx: ConvertContext) -> Expr:
        dtype = dtype_of(ctx.attr("output_datatype", 1))
        periodic = bool(ctx.attr("periodic", 1))
        size = _length_of(ctx, 0, "size")
        if isinstance(size, int) and size <= MAX_IMPORT_ELEMENTS:
            n = np.arange(size, dtype=np.float64)
            with np.errstate(all="ignore"):
                angle = 2 * np.pi * n / (size if periodic else size - 1)
                w = a0 - a1 * np.cos(angle) + a2 * np.cos(2 * angle)
            return ctx.constant(w, dtype)
        n = cast_to(ctx, _range(ctx, size), F64)
        denom = _arith(ctx, "subtract", size, 0 if periodic else 1)
        angle = ctx.call(
            "divide",
            ctx.call("multiply", n, ctx.constant(2 * np.pi, F64)),
            cast_to(ctx, _expr(ctx, denom), F64),
        )
        w = ctx.call(
            "subtract",
            ctx.constant(a0, F64),
            ctx.call("multiply", ctx.call("cos", angle), ctx.constant(a1, F64)),
        )
        if a2:
            twice = ctx.call("multiply", angle, ctx.constant(2.0, F64))
            w = ctx.call(
                "add", w, ctx.call("multiply", ctx.call("cos", twice), ctx.constant(a2, F64))
            )
        return cast_to(ctx, w, dtype)

    return convert


for _kind in _WINDOWS:
    converter(_kind, attrs=("output_datatype", "periodic"), min_version=17)(_window(_kind))


# ----- MelWeightMatrix --------------------------------------------------------------------


@converter("MelWeightMatrix", attrs=("output_datatype",), min_version=17)
def _mel_weight_matrix(ctx):
    """MelWeightMatrix-17: [dft_length // 2 + 1, num_mel_bins] triangular filters between
    mel-spaced frequencies (the reference's arithmetic: the edges in the input type, the
    rest in float64, the bin indices floored)."""
    dtype = dtype_of(ctx.attr("output_datatype", 1))
    mels = _length_of(ctx, 0, "num_mel_bins")
    dft_length = _length_of(ctx, 1, "dft_length")
    rate = cast_to(ctx, ctx.input(2), F64)
    bins = _arith(ctx, "add", _arith(ctx, "floor_divide", dft_length, 2), 1)
    ln10 = ctx.constant(math.log(10), F64)

    def mel(i: int) -> Expr:
        hz = ctx.input(i)
        if not hz.ty.dtype.is_float:
            hz = cast_to(ctx, hz, F64)
        v = ctx.call("log1p", ctx.call("divide", hz, ctx.like(700, hz)))
        return ctx.call(
            "divide", cast_to(ctx, ctx.call("multiply", v, ctx.like(2595, v)), F64), ln10
        )

    low, high = mel(3), mel(4)
    points = _arith(ctx, "add", mels, 2)
    step = ctx.call(
        "divide", ctx.call("subtract", high, low), cast_to(ctx, _expr(ctx, points), F64)
    )
    f = ctx.call("add", ctx.call("multiply", cast_to(ctx, _range(ctx, points), F64), step), low)
    f = ctx.call("divide", ctx.call("multiply", f, ln10), ctx.constant(2595.0, F64))
    f = ctx.call("multiply", ctx.call("expm1", f), ctx.constant(700.0, F64))
    scale = cast_to(ctx, _arith(ctx, "add", dft_length, 1), F64)
    f = ctx.call(
        "floor_divide", ctx.call("multiply", f, scale), ctx.call("reshape", rate, shape=[])
    )
    f = cast_to(ctx, f, I64)  # non-negative: the cast floors as astype(int)
    row = lambda begin, end: ctx.call(  # noqa: E731
        "unsqueeze",
        ctx.call("strided_slice", f, begin=[begin], end=[end], strides=None, axes=[0]),
        axes=[0],
    )
    lo, mid, hi = row(0, -2), row(1, -1), row(2, 2**62)  # [1, mels]
    j = ctx.call("unsqueeze", _range(ctx, bins), axes=[1])  # [bins, 1]

    def ratio(num: Expr, den: Expr) -> Expr:
        safe = ctx.call(
            "where", ctx.call("equal", den, ctx.constant(0, I64)), ctx.constant(1, I64), den
        )
        return ctx.call("divide", cast_to(ctx, num, F64), cast_to(ctx, safe, F64))

    both = lambda a, b: ctx.call("logical_and", a, b)  # noqa: E731
    zero = ctx.constant(0.0, F64)
    flat = ctx.call("equal", mid, lo)
    rising = ctx.call(
        "where",
        flat,
        cast_to(ctx, ctx.call("equal", j, mid), F64),
        ctx.call(
            "where",
            both(ctx.call("greater_equal", j, lo), ctx.call("less_equal", j, mid)),
            ratio(ctx.call("subtract", j, lo), ctx.call("subtract", mid, lo)),
            zero,
        ),
    )
    falling = both(
        ctx.call("greater", hi, mid),
        both(ctx.call("greater_equal", j, mid), ctx.call("less", j, hi)),
    )
    out = ctx.call(
        "where", falling, ratio(ctx.call("subtract", hi, j), ctx.call("subtract", hi, mid)), rising
    )
    return cast_to(ctx, out, dtype)
