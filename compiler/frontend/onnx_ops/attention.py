"""Transformer ops of recent opsets: Attention (23-25), RotaryEmbedding, SwiGLU, TensorScatter,
CausalConvWithState and LinearAttention, composed of existing IR ops (matmul, softmax, where,
concat, reshape, ...), so they interpret, lower, compile and export like any other graph.

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
from compiler.frontend.onnx_ops.registry import _cast, _dim_value, _static, converter
from compiler.ir.nodes import Expr
from compiler.ir.symbolic import dim_add, dim_str, dims_equal
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
    hidden = _static(x.ty.shape[2], ctx, f"{what} hidden size")
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
    n = ctx.call("reshape", _cast(ctx, nonpad, I64), shape=[-1, 1, 1, 1])
    return ctx.call("add", i, ctx.call("subtract", n, _dim_value(ctx, q, 2))), j


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
    size = _static(q.ty.shape[3], ctx, "query head size")
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
    q_len, kv_len = q.ty.shape[2], k.ty.shape[2]

    # the additive bias (None: no bias)
    bias = None
    if ctx.has(3):
        mask = ctx.input(3)
        if mask.ty.shape is None or len(mask.ty.shape) == 0:
            raise Unsupported("Attention with an attn_mask of unknown rank")
        if mask.ty.dtype is DType.bool:
            bias = _neg_inf_where(ctx, mask, dt)
        elif mask.ty.dtype.is_float:
            bias = _cast(ctx, mask, dt)
        else:
            raise ConversionError(f"attn_mask must be bool or float, got {mask.ty}")
        last = mask.ty.shape[-1]
        if not dims_equal(last, kv_len):
            if not (isinstance(last, int) and isinstance(kv_len, int)):
                raise Unsupported(
                    f"Attention with an attn_mask of {dim_str(last)} keys for "
                    f"{dim_str(kv_len)} keys (a symbolic padding)"
                )
            if last > kv_len:
                raise ConversionError(f"attn_mask has {last} keys, more than the {kv_len} keys")
            nd = len(mask.ty.shape)
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
        n = ctx.call("reshape", _cast(ctx, nonpad, I64), shape=[-1, 1, 1, 1])
        term = _neg_inf_where(ctx, ctx.call("less", j, n), dt)
        bias = term if bias is None else ctx.call("add", bias, term)

    # grouped-query attention: each KV head serves hq / hk query heads
    if dims_equal(hq, hk) is not True:
        hq_s = _static(hq, ctx, "number of query heads")
        hk_s = _static(hk, ctx, "number of key heads")
        if hk_s == 0 or hq_s % hk_s:
            raise ConversionError(f"{hq_s} query heads are not a multiple of {hk_s} KV heads")
        k = ctx.call("repeat", k, repeats=hq_s // hk_s, axis=1)
        v = ctx.call("repeat", v, repeats=hq_s // hk_s, axis=1)

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
    if softcap > 0:
        cap = ctx.constant(softcap, dt)
        scores = ctx.call("multiply", ctx.call("tanh", ctx.call("divide", scores, cap)), cap)
    elif softcap < 0 or not math.isfinite(softcap):
        raise ConversionError(f"softcap must be a non-negative number, got {softcap}")
    qk_output = scores
    biased = scores if bias is None else ctx.call("add", scores, bias)
    if mode == 2:
        qk_output = biased
    if precision is not None:
        biased = _cast(ctx, biased, _FLOAT_TYPES[precision])
    probs = ctx.call("softmax", biased, axis=-1)
    if bias is not None:  # a row whose bias is all -inf attends to nothing: zeros
        top = ctx.call("max", bias, axes=[-1], keepdims=True)
        empty = ctx.call("equal", top, ctx.constant(-np.inf, bias.ty.dtype))
        probs = ctx.call("where", empty, ctx.constant(0, probs.ty.dtype), probs)
    probs = _cast(ctx, probs, dt)
    if mode == 3:
        qk_output = probs
    y = ctx.call("matmul", probs, v)
    if rank == 3:
        dv = _static(y.ty.shape[3], ctx, "value head size")
        heads = _static(y.ty.shape[1], ctx, "number of heads")
        y = ctx.call("permute_dims", y, axes=[0, 2, 1, 3])
        y = ctx.call("reshape", y, shape=[0, 0, heads * dv], allowzero=False)
    return y, present_k, present_v, qk_output
