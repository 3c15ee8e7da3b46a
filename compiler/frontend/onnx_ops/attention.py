"""Transformer ops of recent opsets: Attention (23-25), RotaryEmbedding, SwiGLU, TensorScatter,
CausalConvWithState, LinearAttention and ai.onnx.preview.FlexAttention, composed of existing IR
ops (matmul, softmax, where, concat, reshape, ...), so they interpret, lower, compile and export
like any other graph; symbolic batch and sequence dims stay symbolic (LinearAttention, a
recurrence unrolled over the sequence, needs a static sequence length).

Attention follows onnx's reference implementation (``onnx/reference/ops/op_attention.py``):
Q and K are each scaled by ``sqrt(scale)``; the additive bias is the mask (a bool mask True ->
0, False -> -inf; padded with -inf up to the key length), plus the causal bias (a query at
block index ``i`` attends key ``j`` iff ``j <= i + offset``, offset = past length, or
``nonpad_kv_seqlen[b] - q_len`` with an external cache), plus the sliding window (opset 25)
and the padding of ``nonpad_kv_seqlen``; a query row whose bias is all -inf gives zeros.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.frontend.onnx_context import ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import cast_to, converter, dim_value, static_dim
from compiler.ir.nodes import Expr
from compiler.ir.symbolic import ANY, dim_add, dim_str, dim_sub, dims_equal
from compiler.ir.types import DType

I64 = DType.int64

_FLOAT_TYPES = {1: DType.float32, 10: DType.float16, 11: DType.float64, 16: DType.bfloat16}
"""The ONNX element types softmax_precision may name."""


def _float_input(ctx, i: int, what: str) -> Expr:
    x = ctx.input(i)
    if not x.ty.dtype.is_float:
        raise ConversionError(f"{what} must be a float tensor, got {x.ty}")
    return x


def _heads_attr(ctx, name: str) -> int | None:
    value = ctx.attr(name)
    if value is None:
        return None
    if not 0 < value <= 1 << 16:
        raise ConversionError(f"{name} must be a positive number of heads, got {value}")
    return int(value)


def _split_heads(ctx, x: Expr, heads: int, what: str) -> Expr:
    """(batch, seq, heads * size) -> (batch, heads, seq, size)."""
    hidden = static_dim(x.ty.shape[2], ctx, f"{what} hidden size")
    if hidden % heads:
        raise ConversionError(f"the {what} hidden size {hidden} is not a multiple of {heads} heads")
    x = ctx.call("reshape", x, shape=[0, 0, heads, hidden // heads], allowzero=False)
    return ctx.call("permute_dims", x, axes=[0, 2, 1, 3])


def _neg_inf_where(ctx, allowed: Expr, dtype: DType) -> Expr:
    """0 where ``allowed``, -inf elsewhere, in ``dtype``."""
    return ctx.call("where", allowed, ctx.constant(0, dtype), ctx.constant(-np.inf, dtype))


def _positions(ctx, q, kv_len, offset, nonpad):
    """Query positions (i + offset) as an i64 (q, 1) tensor, or (batch, 1, q, 1) with a
    per-batch offset ``nonpad - q_len``; key positions as a (kv,) tensor."""
    q_len = q.ty.shape[2]
    j = ctx.call("arange", start=0, stop=kv_len, dtype=I64)
    if nonpad is None:
        i = ctx.call("arange", start=offset, stop=dim_add(offset, q_len), dtype=I64)
        return ctx.call("reshape", i, shape=[-1, 1]), j
    i = ctx.call("arange", start=0, stop=q_len, dtype=I64)
    i = ctx.call("reshape", i, shape=[1, 1, -1, 1])
    n = ctx.call("reshape", cast_to(ctx, nonpad, I64), shape=[-1, 1, 1, 1])
    return ctx.call("add", i, ctx.call("subtract", n, dim_value(ctx, q, 2))), j


def _softmax(ctx, x: Expr) -> Expr:
    """Softmax over the last axis; in 16-bit floats step by step (max, exp, sum, divide),
    each rounded as onnx's reference rounds it."""
    if x.ty.dtype.itemsize >= 4:
        return ctx.call("softmax", x, axis=-1)
    top = ctx.call("max", x, axes=[-1], keepdims=True)
    e = ctx.call("exp", ctx.call("subtract", x, top))
    return ctx.call("divide", e, ctx.call("sum", e, axes=[-1], keepdims=True))


def _share_kv_heads(ctx, hq, hk, k: Expr, v: Expr) -> tuple[Expr, Expr]:
    """Grouped-query attention: each of the ``hk`` KV heads serves ``hq / hk`` query heads,
    so K and V (heads on axis 1) are repeated to ``hq`` heads."""
    if dims_equal(hq, hk) is True:
        return k, v
    hq_s = static_dim(hq, ctx, "number of query heads")
    hk_s = static_dim(hk, ctx, "number of key heads")
    if hk_s == 0 or hq_s % hk_s:
        raise ConversionError(f"{hq_s} query heads are not a multiple of {hk_s} KV heads")
    k = ctx.call("repeat", k, repeats=hq_s // hk_s, axis=1)
    v = ctx.call("repeat", v, repeats=hq_s // hk_s, axis=1)
    return k, v


@converter(
    "Attention",
    attrs=(
        "is_causal",
        "kv_num_heads",
        "q_num_heads",
        "qk_matmul_output_mode",
        "scale",
        "softcap",
        "softmax_precision",
        "left_window_size",
        "right_window_size",
    ),
    min_version=23,
)
def _attention(ctx):
    q = _float_input(ctx, 0, "Q")
    k = _float_input(ctx, 1, "K")
    v = _float_input(ctx, 2, "V")
    dt = q.ty.dtype
    if k.ty.dtype is not dt or v.ty.dtype is not dt:
        raise ConversionError(f"Q, K and V must have one dtype, got {q.ty}, {k.ty}, {v.ty}")
    rank = ctx.rank(0)
    if rank not in (3, 4) or ctx.rank(1) != rank or ctx.rank(2) != rank:
        raise ConversionError(f"Q, K and V must all be 3-D or all 4-D, got {q.ty}, {k.ty}, {v.ty}")
    q_heads, kv_heads = _heads_attr(ctx, "q_num_heads"), _heads_attr(ctx, "kv_num_heads")
    if rank == 3:
        if q_heads is None or kv_heads is None:
            raise ConversionError("3-D Q, K, V need the attributes q_num_heads and kv_num_heads")
        q = _split_heads(ctx, q, q_heads, "Q")
        k = _split_heads(ctx, k, kv_heads, "K")
        v = _split_heads(ctx, v, kv_heads, "V")
    elif ctx.version >= 25 and (q_heads is not None or kv_heads is not None):
        raise ConversionError("q_num_heads and kv_num_heads must not be given for 4-D inputs")
    mode = ctx.attr("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        raise ConversionError(f"qk_matmul_output_mode must be 0 to 3, got {mode}")
    left, right = ctx.attr("left_window_size", -1), ctx.attr("right_window_size", -1)
    if left < -1 or right < -1:
        raise ConversionError(f"window sizes must be -1 or non-negative, got {left}, {right}")
    precision = ctx.attr("softmax_precision")
    if precision is not None and precision not in _FLOAT_TYPES:
        raise ConversionError(f"softmax_precision must be a float type, got {precision}")
    softcap = float(ctx.attr("softcap", 0.0))

    # head counts and sizes
    hq, hk, hv = q.ty.shape[1], k.ty.shape[1], v.ty.shape[1]
    size = static_dim(q.ty.shape[3], ctx, "query head size")
    if dims_equal(k.ty.shape[3], size) is False:
        raise ConversionError(f"Q and K head sizes differ: {q.ty} vs {k.ty}")
    if dims_equal(hk, hv) is False:
        raise ConversionError(f"K and V have different head counts: {k.ty} vs {v.ty}")
    if rank == 4 and q_heads is not None and dims_equal(hq, q_heads) is False:
        raise ConversionError(f"q_num_heads {q_heads} differs from the {dim_str(hq)} heads of Q")

    # the KV cache
    has_past_k, has_past_v = ctx.has(4), ctx.has(5)
    if has_past_k != has_past_v:
        raise ConversionError("past_key and past_value must be given together")
    nonpad = ctx.input(6) if ctx.has(6) else None
    if nonpad is not None and has_past_k:
        raise ConversionError("nonpad_kv_seqlen cannot be combined with past_key / past_value")
    past_len = 0
    if has_past_k:
        pk, pv = ctx.input(4), ctx.input(5)
        if pk.ty.dtype is not dt or pv.ty.dtype is not dt:
            raise ConversionError(f"past_key and past_value must be {dt}, got {pk.ty}, {pv.ty}")
        if ctx.rank(4) != 4 or ctx.rank(5) != 4:
            raise ConversionError(f"past_key and past_value must be 4-D, got {pk.ty}, {pv.ty}")
        past_len = pk.ty.shape[2]
        k = ctx.call("concat", pk, k, axis=2)
        v = ctx.call("concat", pv, v, axis=2)
    present_k, present_v = k, v
    kv_len = k.ty.shape[2]

    # the additive bias (None: no bias)
    bias = None
    if ctx.has(3):
        mask = ctx.input(3)
        if mask.ty.shape is None or len(mask.ty.shape) == 0:
            raise Unsupported("Attention with an attn_mask of unknown rank")
        if mask.ty.dtype is DType.bool:
            bias = _neg_inf_where(ctx, mask, dt)
        elif mask.ty.dtype.is_float:
            bias = cast_to(ctx, mask, dt)
        else:
            raise ConversionError(f"attn_mask must be bool or float, got {mask.ty}")
        last = mask.ty.shape[-1]
        if not dims_equal(last, kv_len):
            nd = len(mask.ty.shape)
            if not (isinstance(last, int) and isinstance(kv_len, int)):
                # pad with a -inf filled (..., kv - mask keys): a mask longer than the keys
                # fails at run time (a negative dim), as in the reference
                if any(d is ANY for d in (*mask.ty.shape, kv_len)):
                    raise Unsupported(
                        f"Attention with an attn_mask of {dim_str(last)} keys for "
                        f"{dim_str(kv_len)} keys (a padding of unknown size)"
                    )
                fill = ctx.call(
                    "full",
                    shape=[*mask.ty.shape[:-1], dim_sub(kv_len, last)],
                    value=-math.inf,
                    dtype=dt,
                )
                bias = ctx.call("concat", bias, fill, axis=-1)
            elif last > kv_len:
                raise ConversionError(f"attn_mask has {last} keys, more than the {kv_len} keys")
            else:
                pads = [0] * nd + [0] * (nd - 1) + [kv_len - last]
                bias = ctx.call("pad", bias, pads=pads, value=-math.inf)
    causal = bool(ctx.attr("is_causal", 0))
    windowed = left >= 0 or right >= 0
    if causal or windowed:
        i, j = _positions(ctx, q, kv_len, past_len, nonpad)
        diff = ctx.call("subtract", i, j)  # query position - key position
        zero = ctx.constant(0, I64)
        if causal:
            allowed = ctx.call("greater_equal", diff, zero)
            term = _neg_inf_where(ctx, allowed, dt)
            bias = term if bias is None else ctx.call("add", bias, term)
        if windowed:
            allowed = None
            if left >= 0:
                allowed = ctx.call("less_equal", diff, ctx.constant(left, I64))
            if right >= 0:
                r = ctx.call("greater_equal", diff, ctx.constant(-right, I64))
                allowed = r if allowed is None else ctx.call("logical_and", allowed, r)
            term = _neg_inf_where(ctx, allowed, dt)
            bias = term if bias is None else ctx.call("add", bias, term)
    if nonpad is not None:
        j = ctx.call("arange", start=0, stop=kv_len, dtype=I64)
        n = ctx.call("reshape", cast_to(ctx, nonpad, I64), shape=[-1, 1, 1, 1])
        term = _neg_inf_where(ctx, ctx.call("less", j, n), dt)
        bias = term if bias is None else ctx.call("add", bias, term)

    k, v = _share_kv_heads(ctx, hq, hk, k, v)

    # scores
    scale = ctx.attr("scale")
    scale = 1.0 / math.sqrt(size) if scale is None else float(scale)
    if not math.isfinite(scale):
        raise ConversionError(f"scale must be finite, got {scale}")
    if scale < 0:
        raise Unsupported(f"Attention with a negative scale {scale}")
    root = ctx.constant(math.sqrt(scale), dt)
    scores = ctx.call(
        "matmul",
        ctx.call("multiply", q, root),
        ctx.call("permute_dims", ctx.call("multiply", k, root), axes=[0, 1, 3, 2]),
    )
    raw = scores
    if softcap > 0:
        cap = ctx.constant(softcap, dt)
        scores = ctx.call("multiply", ctx.call("tanh", ctx.call("divide", scores, cap)), cap)
    elif softcap < 0 or not math.isfinite(softcap):
        raise ConversionError(f"softcap must be a non-negative number, got {softcap}")
    qk_output = raw if mode == 0 else scores  # mode 0: before the softcap (the spec)
    biased = scores if bias is None else ctx.call("add", scores, bias)
    if mode == 2:
        qk_output = biased
    if precision is not None:
        biased = cast_to(ctx, biased, _FLOAT_TYPES[precision])
    if bias is None:
        probs = _softmax(ctx, biased)
    else:  # a row whose bias is all -inf attends to nothing: zeros (softmax of 0s, no NaN)
        top = ctx.call("max", bias, axes=[-1], keepdims=True)
        empty = ctx.call("equal", top, ctx.constant(-np.inf, bias.ty.dtype))
        zero = ctx.constant(0, biased.ty.dtype)
        probs = _softmax(ctx, ctx.call("where", empty, zero, biased))
        probs = ctx.call("where", empty, zero, probs)
    probs = cast_to(ctx, probs, dt)
    if mode == 3:
        qk_output = probs
    y = ctx.call("matmul", probs, v)
    if rank == 3:
        dv = static_dim(y.ty.shape[3], ctx, "value head size")
        heads = static_dim(y.ty.shape[1], ctx, "number of heads")
        y = ctx.call("permute_dims", y, axes=[0, 2, 1, 3])
        y = ctx.call("reshape", y, shape=[0, 0, heads * dv], allowzero=False)
    return y, present_k, present_v, qk_output


# ----- RotaryEmbedding ----------------------------------------------------------------------


def _slice_last(ctx, x: Expr, begin: int, end: int, step: int = 1) -> Expr:
    return ctx.call("strided_slice", x, begin=[begin], end=[end], strides=[step], axes=[-1])


@converter(
    "RotaryEmbedding", attrs=("interleaved", "num_heads", "rotary_embedding_dim"), min_version=23
)
def _rotary_embedding(ctx):
    x = _float_input(ctx, 0, "input")
    cos, sin = ctx.input(1), ctx.input(2)
    rank = ctx.rank(0)
    if rank == 4:  # (batch, heads, seq, size) -> (batch, seq, heads, size)
        x4 = ctx.call("permute_dims", x, axes=[0, 2, 1, 3])
    elif rank == 3:
        heads = _heads_attr(ctx, "num_heads")
        if heads is None:
            raise ConversionError("a 3-D input needs the attribute num_heads")
        hidden = static_dim(x.ty.shape[2], ctx, "hidden size")
        if hidden % heads:
            raise ConversionError(f"the hidden size {hidden} is not a multiple of {heads} heads")
        x4 = ctx.call("reshape", x, shape=[0, 0, heads, hidden // heads], allowzero=False)
    else:
        raise ConversionError(f"the input must be 3-D or 4-D, got {x.ty}")
    size = static_dim(x4.ty.shape[3], ctx, "head size")
    rdim = ctx.attr("rotary_embedding_dim", 0) or size
    if not 0 < rdim <= size or rdim % 2:
        raise ConversionError(
            f"rotary_embedding_dim {rdim} must be even and at most the head size {size}"
        )
    half = rdim // 2
    if ctx.has(3):
        pos = ctx.input(3)
        if not pos.ty.dtype.is_int:
            raise ConversionError(f"position_ids must be integers, got {pos.ty}")
        if ctx.rank(1) != 2 or ctx.rank(2) != 2:
            raise ConversionError(f"with position_ids the caches must be 2-D, got {cos.ty}")
        cos = ctx.call("take", cos, cast_to(ctx, pos, I64), axis=0)
        sin = ctx.call("take", sin, cast_to(ctx, pos, I64), axis=0)
    elif ctx.rank(1) != 3 or ctx.rank(2) != 3:
        raise ConversionError(f"without position_ids the caches must be 3-D, got {cos.ty}")
    for c in (cos, sin):
        if dims_equal(c.ty.shape[-1], half) is False:
            raise ConversionError(f"the caches must have rotary_embedding_dim/2 = {half} values")
    cos = cast_to(ctx, ctx.call("unsqueeze", cos, axes=[2]), x.ty.dtype)
    sin = cast_to(ctx, ctx.call("unsqueeze", sin, axes=[2]), x.ty.dtype)
    rot = x4 if rdim == size else _slice_last(ctx, x4, 0, rdim)
    interleaved = bool(ctx.attr("interleaved", 0))
    if interleaved:
        x1, x2 = _slice_last(ctx, rot, 0, rdim, 2), _slice_last(ctx, rot, 1, rdim, 2)
    else:
        x1, x2 = _slice_last(ctx, rot, 0, half), _slice_last(ctx, rot, half, rdim)
    real = ctx.call("subtract", ctx.call("multiply", cos, x1), ctx.call("multiply", sin, x2))
    imag = ctx.call("add", ctx.call("multiply", sin, x1), ctx.call("multiply", cos, x2))
    if interleaved:
        pairs = ctx.call(
            "concat",
            ctx.call("unsqueeze", real, axes=[-1]),
            ctx.call("unsqueeze", imag, axes=[-1]),
            axis=-1,
        )
        rot = ctx.call("reshape", pairs, shape=[0, 0, 0, rdim], allowzero=False)
    else:
        rot = ctx.call("concat", real, imag, axis=-1)
    if rdim < size:
        rot = ctx.call("concat", rot, _slice_last(ctx, x4, rdim, size), axis=-1)
    if rank == 4:
        return ctx.call("permute_dims", rot, axes=[0, 2, 1, 3])
    return ctx.call("reshape", rot, shape=[0, 0, size * x4.ty.shape[2]], allowzero=False)


# ----- SwiGLU -------------------------------------------------------------------------------


@converter("SwiGLU", attrs=("alpha",))
def _swiglu(ctx):
    a, b = _float_input(ctx, 0, "A"), _float_input(ctx, 1, "B")
    if a.ty.dtype is not b.ty.dtype:
        raise ConversionError(f"A and B must have one dtype, got {a.ty} and {b.ty}")
    if a.ty.shape is not None and b.ty.shape is not None:
        same = len(a.ty.shape) == len(b.ty.shape) and all(
            dims_equal(p, r) is not False for p, r in zip(a.ty.shape, b.ty.shape, strict=False)
        )
        if not same:
            raise ConversionError(f"A and B must have one shape (no broadcasting): {a.ty}, {b.ty}")
    alpha = float(ctx.attr("alpha", 1.0))
    if not math.isfinite(alpha):
        raise ConversionError(f"alpha must be finite, got {alpha}")
    gate_in = a if alpha == 1.0 else ctx.call("multiply", a, ctx.like(alpha, a))
    swish = ctx.call("multiply", a, ctx.call("sigmoid", gate_in))
    return ctx.call("multiply", swish, b)


# ----- TensorScatter ------------------------------------------------------------------------


@converter("TensorScatter", attrs=("axis", "mode"), min_version=24)
def _tensor_scatter(ctx):
    cache, update = ctx.input(0), ctx.input(1)
    if cache.ty.dtype is not update.ty.dtype:
        raise ConversionError(f"past_cache and update must have one dtype: {cache.ty}, {update.ty}")
    rank = ctx.rank(0)
    if ctx.rank(1) != rank or rank < 2:
        raise ConversionError(f"past_cache and update must have one rank >= 2: {cache.ty}")
    axis = ctx.attr("axis", -2)
    if not -rank <= axis < rank:
        raise ConversionError(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    if axis == 0:
        raise ConversionError("axis must not be the batch axis 0")
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ConversionError(f"mode must be linear or circular, got {mode!r}")
    for i, (c, u) in enumerate(zip(cache.ty.shape, update.ty.shape, strict=True)):
        if i != axis and dims_equal(c, u) is False:
            raise ConversionError(
                f"past_cache {cache.ty} and update {update.ty} differ on axis {i}"
            )
        if i == axis and isinstance(c, int) and isinstance(u, int) and u > c:
            raise ConversionError(f"update {update.ty} is longer than past_cache {cache.ty}")
    seq = ctx.call("arange", start=0, stop=update.ty.shape[axis], dtype=I64)
    index = ctx.call("reshape", seq, shape=[-1] + [1] * (rank - axis - 1))
    if ctx.has(2):
        w = ctx.input(2)
        if not w.ty.dtype.is_int:
            raise ConversionError(f"write_indices must be integers, got {w.ty}")
        w = ctx.call("reshape", cast_to(ctx, w, I64), shape=[-1] + [1] * (rank - 1))
        index = ctx.call("add", index, w)
    if mode == "circular":
        index = ctx.call("mod", index, dim_value(ctx, cache, axis))
    zeros = ctx.call("zeros_like", update, dtype=I64)
    index = ctx.call("add", zeros, index)  # the shape of update
    return ctx.call("scatter_elements", cache, index, update, axis=axis)


# ----- CausalConvWithState ------------------------------------------------------------------


@converter("CausalConvWithState", attrs=("activation",), min_version=27)
def _causal_conv_with_state(ctx):
    x = _float_input(ctx, 0, "input")
    w = ctx.input(1)
    if ctx.rank(0) != 3 or ctx.rank(1) != 3:
        raise ConversionError(f"input and weight must be 3-D, got {x.ty} and {w.ty}")
    channels = static_dim(x.ty.shape[1], ctx, "channel count")
    c_out, one, kernel = (static_dim(d, ctx, "weight dim") for d in w.ty.shape)
    if c_out != channels or one != 1 or kernel < 1:
        raise ConversionError(f"weight must be ({channels}, 1, k) with k >= 1, got {w.ty}")
    activation = ctx.attr("activation", "none")
    if activation not in ("none", "silu", "swish"):
        raise ConversionError(f"activation must be none, silu or swish, got {activation!r}")
    w = cast_to(ctx, w, x.ty.dtype)
    if ctx.has(3):
        past = ctx.input(3)
        if ctx.rank(3) != 3 or dims_equal(past.ty.shape[2], kernel - 1) is False:
            raise ConversionError(f"past_state must be (batch, {channels}, {kernel - 1})")
        padded = ctx.call("concat", cast_to(ctx, past, x.ty.dtype), x, axis=2)
    else:
        padded = ctx.call("pad", x, pads=[0, 0, kernel - 1, 0, 0, 0])
    bias = [cast_to(ctx, ctx.input(2), x.ty.dtype)] if ctx.has(2) else []
    y = ctx.call(
        "conv1d",
        padded,
        w,
        *bias,
        strides=[1],
        padding=[0, 0],
        dilation=[1],
        groups=channels,
    )
    if activation != "none":  # in float32 at least, as the reference
        wide = y if y.ty.dtype.itemsize >= 4 else cast_to(ctx, y, DType.float32)
        y = cast_to(ctx, ctx.call("multiply", wide, ctx.call("sigmoid", wide)), x.ty.dtype)
    end = 1 << 62
    begin = -(kernel - 1) if kernel > 1 else end
    state = ctx.call("strided_slice", padded, begin=[begin], end=[end], axes=[2])
    return y, state


# ----- LinearAttention ----------------------------------------------------------------------

MAX_UNROLLED_STEPS = 512
"""LinearAttention is unrolled over the sequence: at most this many steps."""


@converter(
    "LinearAttention",
    attrs=("chunk_size", "kv_num_heads", "q_num_heads", "scale", "update_rule"),
    min_version=27,
)
def _linear_attention(ctx):
    """The reference's recurrence (in float32), unrolled over a static sequence length:
    state *= exp(decay_t) (gated); v_t = beta_t * (v_t - state^T k_t) (delta);
    state += k_t v_t^T; out_t = scale * q_t state (KV heads repeated for the query heads)."""
    rule = ctx.attr("update_rule", "gated_delta")
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise ConversionError(f"unknown update_rule {rule!r}")
    hq, hkv = _heads_attr(ctx, "q_num_heads"), _heads_attr(ctx, "kv_num_heads")
    if hq is None or hkv is None:
        raise ConversionError("q_num_heads and kv_num_heads are required")
    if hq % hkv:
        raise ConversionError(f"q_num_heads {hq} is not a multiple of kv_num_heads {hkv}")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gating != ctx.has(4):
        raise ConversionError(f"update_rule {rule} {'needs' if gating else 'forbids'} decay")
    if delta != ctx.has(5):
        raise ConversionError(f"update_rule {rule} {'needs' if delta else 'forbids'} beta")
    q, k, v = (_float_input(ctx, i, n) for i, n in enumerate(("query", "key", "value")))
    for i in range(3):
        if ctx.rank(i) != 3:
            raise ConversionError(f"query, key and value must be 3-D, got {ctx.input(i).ty}")
    out_dtype = q.ty.dtype
    steps = static_dim(q.ty.shape[1], ctx, "sequence length (the recurrence is unrolled)")
    if not 0 < steps <= MAX_UNROLLED_STEPS:
        raise Unsupported(f"LinearAttention over {steps} steps (1 to {MAX_UNROLLED_STEPS})")
    f32 = DType.float32

    def heads4(x, heads, what):
        return cast_to(ctx, _split_heads(ctx, x, heads, what), f32)

    q4, k4, v4 = heads4(q, hq, "query"), heads4(k, hkv, "key"), heads4(v, hkv, "value")
    dk, dv = (
        static_dim(k4.ty.shape[3], ctx, "key size"),
        static_dim(v4.ty.shape[3], ctx, "value size"),
    )
    if static_dim(q4.ty.shape[3], ctx, "query size") != dk:
        raise ConversionError(f"query and key head sizes differ: {q.ty}, {k.ty}")

    def per_step(i, what, allowed):  # (B, T, n) -> (B, n or H, T, 1 or d)
        x = _float_input(ctx, i, what)
        if ctx.rank(i) != 3:
            raise ConversionError(f"{what} must be 3-D, got {x.ty}")
        last = static_dim(x.ty.shape[2], ctx, f"{what} size")
        if last not in allowed:
            raise ConversionError(f"{what} last dim {last} must be one of {sorted(set(allowed))}")
        d = 1 if last in allowed[:2] else dk
        y = ctx.call("reshape", x, shape=[0, 0, last // d, d], allowzero=False)
        return cast_to(ctx, ctx.call("permute_dims", y, axes=[0, 2, 1, 3]), f32)

    decay = per_step(4, "decay", (hkv, hkv, hkv * dk)) if gating else None
    beta = per_step(5, "beta", (hkv, 1)) if delta else None
    if ctx.has(3):
        past = ctx.input(3)
        shape = past.ty.shape
        if (
            shape is None
            or len(shape) != 4
            or [dims_equal(a, b) for a, b in zip(shape[1:], (hkv, dk, dv), strict=True)].count(
                False
            )
        ):
            raise ConversionError(f"past_state must be (batch, {hkv}, {dk}, {dv}), got {past.ty}")
        state_dtype = past.ty.dtype
        state = cast_to(ctx, past, f32)
    else:
        state_dtype = out_dtype
        state = ctx.call("zeros", shape=[q.ty.shape[0], hkv, dk, dv], dtype=f32)
    scale = ctx.attr("scale")
    scale = 1.0 / math.sqrt(dk) if not scale else float(scale)
    group = hq // hkv
    outs = []
    for t in range(steps):
        idx = ctx.constant([t], I64)

        def at(x, idx=idx):  # (B, H, 1, d)
            return ctx.call("take", x, idx, axis=2)

        k_t, v_t = at(k4), at(v4)
        if gating:  # state (B,H,dk,dv) *= exp(g_t) over dk
            g = ctx.call("permute_dims", ctx.call("exp", at(decay)), axes=[0, 1, 3, 2])
            state = ctx.call("multiply", state, g)
        if delta:
            retrieved = ctx.call("matmul", k_t, state)  # (B, H, 1, dv)
            v_t = ctx.call("multiply", at(beta), ctx.call("subtract", v_t, retrieved))
        outer = ctx.call("matmul", ctx.call("permute_dims", k_t, axes=[0, 1, 3, 2]), v_t)
        state = ctx.call("add", state, outer)
        read = state if group == 1 else ctx.call("repeat", state, repeats=group, axis=1)
        o = ctx.call("matmul", at(q4), read)  # (B, Hq, 1, dv)
        outs.append(ctx.call("multiply", o, ctx.constant(scale, f32)))
    out = outs[0] if len(outs) == 1 else ctx.call("concat", *outs, axis=2)
    out = ctx.call("permute_dims", out, axes=[0, 2, 1, 3])
    out = ctx.call("reshape", out, shape=[0, 0, hq * dv], allowzero=False)
    return cast_to(ctx, out, out_dtype), cast_to(ctx, state, state_dtype)


# ----- ai.onnx.preview.FlexAttention --------------------------------------------------------


def _inline_modifier(ctx, name: str, value: Expr) -> Expr:
    """The graph attribute ``name`` (one input, one output) applied to ``value``: its nodes
    converted in a scope where its input is ``value`` (absent: ``value``)."""
    from compiler.frontend.onnx_context import Scope

    a = ctx.attrs.get(name)
    if a is None:
        return value
    if a.type != 5:
        raise ConversionError(f"attribute {name} must be a graph")
    g = a.g
    if len(g.input) != 1 or len(g.output) != 1:
        raise ConversionError(f"the {name} graph must have one input and one output")
    scope = Scope(parent=ctx.scope)
    prefix = f"{ctx.label}/{name}:"
    ctx.importer.initializers(g, scope, prefix)
    scope.values[g.input[0].name] = value
    ctx.importer.nodes(g, scope, prefix)
    out = scope.lookup(g.output[0].name)
    if not isinstance(out, Expr):
        raise Unsupported(f"a {name} graph with unsupported nodes")
    shape, want = out.ty.shape, value.ty.shape
    if shape is not None and (
        len(shape) != len(want)
        or any(dims_equal(s, w) is False for s, w in zip(shape, want, strict=True))
    ):
        raise ConversionError(f"the {name} graph changes the shape {value.ty} to {out.ty}")
    return cast_to(ctx, out, value.ty.dtype)


@converter(
    "ai.onnx.preview.FlexAttention",
    attrs=("prob_mod", "scale", "score_mod", "softmax_precision"),
    min_version=1,
)
def _flex_attention(ctx):
    """The reference: scores = (Q sqrt(scale)) (K sqrt(scale))^T in the input dtype, then in
    the softmax precision (float32 for 16-bit inputs): score_mod, softmax, prob_mod, @ V."""
    q = _float_input(ctx, 0, "Q")
    k = _float_input(ctx, 1, "K")
    v = _float_input(ctx, 2, "V")
    dt = q.ty.dtype
    if k.ty.dtype is not dt or v.ty.dtype is not dt:
        raise ConversionError(f"Q, K and V must have one dtype, got {q.ty}, {k.ty}, {v.ty}")
    if ctx.rank(0) != 4 or ctx.rank(1) != 4 or ctx.rank(2) != 4:
        raise ConversionError(f"Q, K and V must be 4-D, got {q.ty}, {k.ty}, {v.ty}")
    size = static_dim(q.ty.shape[3], ctx, "query head size")
    if dims_equal(k.ty.shape[3], size) is False:
        raise ConversionError(f"Q and K head sizes differ: {q.ty} vs {k.ty}")
    hq, hk = q.ty.shape[1], k.ty.shape[1]
    if dims_equal(hk, v.ty.shape[1]) is False:
        raise ConversionError(f"K and V have different head counts: {k.ty} vs {v.ty}")
    k, v = _share_kv_heads(ctx, hq, hk, k, v)
    scale = ctx.attr("scale")
    scale = 1.0 / math.sqrt(size) if scale is None else float(scale)
    if not (math.isfinite(scale) and scale >= 0):
        raise Unsupported(f"FlexAttention with the scale {scale}")
    root = ctx.constant(np.sqrt(np.float32(scale)), dt)
    scores = ctx.call(
        "matmul",
        ctx.call("multiply", q, root),
        ctx.call("permute_dims", ctx.call("multiply", k, root), axes=[0, 1, 3, 2]),
    )
    precision = ctx.attr("softmax_precision")
    if precision is None:
        work = DType.float32 if dt.itemsize < 4 else dt
    elif precision in _FLOAT_TYPES:
        work = _FLOAT_TYPES[precision]
    else:
        raise ConversionError(f"softmax_precision must be a float type, got {precision}")
    scores = _inline_modifier(ctx, "score_mod", cast_to(ctx, scores, work))
    probs = _inline_modifier(ctx, "prob_mod", ctx.call("softmax", scores, axis=-1))
    return cast_to(ctx, ctx.call("matmul", probs, cast_to(ctx, v, work)), dt)
