"""Text ONNX ops on integer token ids: TfIdfVectorizer, composed of existing IR ops.

Every n-gram of the pool is matched against every window of the row (for each length and
skip distance, the windows are a constant index matrix taken from the input), the matches
are summed per pool n-gram and put at its output index by a constant 0/1 matrix. String
pools and inputs are unsupported (the IR has no string type).
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.onnx_context import MAX_IMPORT_ELEMENTS, ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import I64, cast_to, converter, static_dim
from compiler.ir.types import DType

F32 = DType.float32
MAX_OUTPUT = 1 << 20
"""The largest output row (max of ngram_indexes + 1) converted."""
MAX_WORK = 1 << 24
"""The largest (windows x pool n-grams x length) comparison converted per length and skip."""


def _pool_ngrams(ctx, pool: list[int], counts: list[int], indexes: list[int], lo: int, hi: int):
    """{length: {ngram tuple: (output index, pool n-gram number)}} for the lengths in
    [lo, hi] (a repeated n-gram keeps its last entry, as onnxruntime's trie does)."""
    if any(c < 0 or c > len(pool) for c in counts) or counts != sorted(counts):
        raise ConversionError(f"ngram_counts {counts} must be ascending offsets into the pool")
    grams: dict[int, dict[tuple, int]] = {}
    ngram_id = 0
    for i, start in enumerate(counts):
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        size = i + 1
        items = pool[start:end]
        if len(items) % size:
            raise ConversionError(f"{len(items)} pool items are not a whole number of {size}-grams")
        for j in range(0, len(items), size):
            if ngram_id >= len(indexes):
                raise ConversionError("ngram_indexes has fewer entries than the pool has n-grams")
            if lo <= size <= hi:
                key = tuple(items[j : j + size])
                grams.setdefault(size, {})[key] = (indexes[ngram_id], ngram_id)
            ngram_id += 1
    if ngram_id != len(indexes):
        raise ConversionError(f"{len(indexes)} ngram_indexes for {ngram_id} pool n-grams")
    return grams


@converter(
    "TfIdfVectorizer",
    attrs=(
        "max_gram_length",
        "max_skip_count",
        "min_gram_length",
        "mode",
        "ngram_counts",
        "ngram_indexes",
        "pool_int64s",
        "pool_strings",
        "weights",
    ),
    min_version=9,
)
def _tfidf(ctx):
    """TfIdfVectorizer-9: counts of the pool's n-grams (lengths min..max, items
    1..max_skip_count + 1 apart; unigrams counted once) per row, then TF, IDF or TFIDF."""
    if "pool_strings" in ctx.attrs:
        raise Unsupported("a pool of strings (the IR has no string type)")
    x = ctx.input(0)
    if not x.ty.dtype.is_int:
        raise ConversionError(f"TfIdfVectorizer needs integer token ids, got {x.ty.dtype}")
    rank = ctx.rank(0)
    if rank not in (1, 2):
        raise ConversionError(f"TfIdfVectorizer needs a [C] or [N, C] input, got rank {rank}")
    length = static_dim(x.ty.shape[-1], ctx, "row length")
    mode = ctx.attr("mode")
    if mode not in ("TF", "IDF", "TFIDF"):
        raise ConversionError(f"mode must be TF, IDF or TFIDF, got {mode!r}")
    lo, hi = ctx.attr("min_gram_length"), ctx.attr("max_gram_length")
    skips = ctx.attr("max_skip_count")
    if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi <= 64):
        raise ConversionError(f"gram lengths {lo}..{hi} must satisfy 1 <= min <= max <= 64")
    if not isinstance(skips, int) or not 0 <= skips <= length:
        raise ConversionError(f"max_skip_count {skips} must be in 0..{length}")
    indexes = [int(i) for i in ctx.attr("ngram_indexes", [])]
    if any(i < 0 for i in indexes) or not indexes:
        raise ConversionError("ngram_indexes must be non-negative and not empty")
    size = max(indexes) + 1
    if size > MAX_OUTPUT:
        raise ConversionError(f"an output row of {size} values is too large")
    pool = [int(v) for v in ctx.attr("pool_int64s", [])]
    counts = [int(c) for c in ctx.attr("ngram_counts", [])]
    grams = _pool_ngrams(ctx, pool, counts, indexes, lo, hi)

    weights = ctx.attr("weights")
    if weights is not None and len(weights) != len(indexes):
        raise ConversionError(f"{len(weights)} weights for {len(indexes)} pool n-grams")
    tokens = cast_to(ctx, x, I64)
    total = None
    for n, table in sorted(grams.items()):
        keys = list(table)
        ngrams = ctx.constant(np.array(keys, dtype=np.int64).reshape(len(keys), n), I64)
        found = None  # [..., P]: how often each pool n-gram of length n occurs
        for distance in range(1, skips + 2):
            if n == 1 and distance > 1:
                break  # a unigram is counted once, not once per skip distance
            windows = length - (n - 1) * distance
            if windows <= 0:
                break
            if windows * n > MAX_IMPORT_ELEMENTS or windows * len(keys) * n > MAX_WORK:
                raise ConversionError(f"{windows} windows x {len(keys)} {n}-grams are too many")
            index = np.arange(windows)[:, None] + distance * np.arange(n)[None, :]
            taken = ctx.call("take", tokens, ctx.constant(index, I64), axis=rank - 1)
            taken = ctx.call("unsqueeze", taken, axes=[rank])  # [..., windows, 1, n]
            same = cast_to(ctx, ctx.call("equal", taken, ngrams), I64)  # [..., windows, P, n]
            hit = ctx.call("equal", ctx.call("sum", same, axes=[rank + 1]), ctx.constant(n, I64))
            part = ctx.call("sum", cast_to(ctx, hit, F32), axes=[rank - 1])
            found = part if found is None else ctx.call("add", found, part)
        if found is None:
            continue
        # the weight of each pool n-gram (the spec's and onnxruntime's reading), then its place
        w = np.array([weights[table[k][1]] if weights else 1.0 for k in keys], np.float32)
        if mode == "IDF":
            present = ctx.call("greater", found, ctx.constant(0.0, F32))
            found = ctx.call("where", present, ctx.constant(w, F32), ctx.constant(0.0, F32))
        elif mode == "TFIDF" and weights:
            found = ctx.call("multiply", found, ctx.constant(w, F32))
        placement = np.zeros((len(keys), size), dtype=np.float32)
        for p, key in enumerate(keys):
            placement[p, table[key][0]] = 1.0
        part = ctx.call("matmul", found, ctx.constant(placement, F32))
        total = part if total is None else ctx.call("add", total, part)
    if total is None:  # no n-gram of a counted length fits: zeros
        row = cast_to(ctx, ctx.call("sum", tokens, axes=[rank - 1], keepdims=True), F32)
        total = ctx.call("multiply", row, ctx.constant(np.zeros(size), F32))
    return total
