"""A weight's first values and statistics (min, max, mean, std), as the node details of the
graph component show them (`param_stats`), remembered per array."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from widgets.escape import jsonable


def param_stats(data: np.ndarray, preview: int = 8) -> dict:
    """A weight's first values and its statistics (min, max, mean, std), for people."""
    # ravel(order="K") reads the array as it lies in memory (no copy for a transposed view);
    # the preview is in logical order
    flat = data.ravel(order="K")
    if flat.dtype.kind not in "biuf":
        flat = flat.astype(np.float32)
    out: dict[str, Any] = {"preview": [float(v) for v in data.flat[:preview]]}  # (as _preview)
    if flat.size and flat.dtype.kind in "biuf":
        with np.errstate(all="ignore"):  # a mask of -3.4e38 sums to -inf: shown as it is
            lo, hi, mean, std = _min_max_mean_std(flat)
            out.update(min=lo, max=hi, mean=mean, std=std)
    return jsonable(out)


CHUNK = 1 << 18  # elements upcast to float64 at a time (2 MB: they stay in the cache)


def _min_max_mean_std(flat: np.ndarray) -> tuple[float, float, float, float]:
    """Min, max, mean and standard deviation in float64, in one read of the array, a chunk
    at a time (Chan et al.'s pairwise update for the mean and variance), so a 1 GiB
    embedding needs 2 MB of float64, not twice its size (`std` made two float64 copies of
    the whole array: 26 s and 2 GiB for a 1B model's embedding), and is read from memory
    once (min and max are taken of the chunk, in the cache)."""
    n, mean, m2 = 0, 0.0, 0.0
    lo, hi = math.inf, -math.inf
    nan = False
    buf = np.empty(min(CHUNK, flat.size), np.float64)
    for k in range(0, flat.size, CHUNK):
        part = buf[: min(CHUNK, flat.size - k)]
        np.copyto(part, flat[k : k + CHUNK], casting="unsafe")
        clo, chi = float(part.min()), float(part.max())
        if clo != clo or chi != chi:  # NaN: min and max are NaN, as numpy's
            nan = True
        lo, hi = min(lo, clo), max(hi, chi)
        m = len(part)
        cmean = float(part.mean())
        part -= cmean
        np.square(part, out=part)  # not np.dot: BLAS threads waiting on a busy machine
        cm2 = float(part.sum())
        delta = cmean - mean
        total = n + m
        mean += delta * m / total
        m2 += cm2 + delta * delta * n * m / total
        n = total
    if nan:
        lo = hi = math.nan
    return lo, hi, mean, math.sqrt(m2 / n) if m2 >= 0 else math.nan


_STATS: OrderedDict = OrderedDict()  # id(array) -> (array, stats), most recent last


def _preview(data: np.ndarray, preview: int = 8) -> list:
    """The first values in logical order, as `param_stats` gives them."""
    return jsonable([float(v) for v in data.flat[:preview]])


def whole_view_of(data: np.ndarray) -> np.ndarray:
    """The array whose memory `data` reads whole, each element once, as a transposed or
    reshaped view (a pass's `w.T`): `data`'s values in memory order are that array's, so
    are its statistics. `data` itself when it is not such a view."""
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is data or root.dtype != data.dtype or root.size != data.size or not data.size:
        return data
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        return data
    if data.__array_interface__["data"][0] != root.__array_interface__["data"][0]:
        return data
    # the axes by stride, smallest first, must step through the memory densely (no element
    # skipped or read twice: a broadcast view has a zero stride, a flipped one a negative)
    step = data.itemsize
    for size, stride in sorted(zip(data.shape, data.strides, strict=True), key=lambda t: t[1]):
        if size == 1:
            continue
        if stride != step:
            return data
        step *= size
    return root


def cached_stats(data: np.ndarray) -> dict:
    """`param_stats(data)`, remembered for the array `data` (by identity, the array kept
    with it; the last 65536). A transposed or reshaped view of a whole array (a pass's
    `w.T`) takes the statistics of that array (the same values, read in the same order:
    the same numbers), with its own first values."""
    hit = _STATS.get(id(data))
    if hit is not None and hit[0] is data:
        return hit[1]
    root = whole_view_of(data)
    if root is data:
        stats = param_stats(data)
    else:
        stats = {**cached_stats(root), "preview": _preview(data)}
    _STATS[id(data)] = (data, stats)
    while len(_STATS) > 65536:
        _STATS.popitem(last=False)
    return stats


__all__ = ["cached_stats", "param_stats", "whole_view_of"]
