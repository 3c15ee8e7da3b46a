"""A weight's first values and statistics (min, max, mean, std), as the node details of the
graph component show them (:func:`param_stats`), remembered per array."""

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
    out: dict[str, Any] = {"preview": [float(v) for v in data.flat[:preview]]}
    if flat.size and flat.dtype.kind in "biuf":
        with np.errstate(all="ignore"):  # a mask of -3.4e38 sums to -inf: shown as it is
            mean, std = _mean_std(flat)
            out.update(min=float(flat.min()), max=float(flat.max()), mean=mean, std=std)
    return jsonable(out)


CHUNK = 1 << 20  # elements upcast to float64 at a time (8 MB)


def _mean_std(flat: np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation in float64, a chunk at a time (Chan et al.'s pairwise
    update), so a 1 GiB embedding needs 8 MB of float64, not twice its size (``std`` made
    two float64 copies of the whole array: 26 s and 2 GiB for a 1B model's embedding)."""
    n, mean, m2 = 0, 0.0, 0.0
    buf = np.empty(min(CHUNK, flat.size), np.float64)
    for k in range(0, flat.size, CHUNK):
        part = buf[: min(CHUNK, flat.size - k)]
        np.copyto(part, flat[k : k + CHUNK], casting="unsafe")
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
    return mean, math.sqrt(m2 / n) if m2 >= 0 else math.nan


_STATS: OrderedDict = OrderedDict()  # id(array) -> (array, stats), most recent last


def cached_stats(data: np.ndarray) -> dict:
    """``param_stats(data)``, remembered for the array ``data`` (by identity, the array kept
    with it; the last 65536)."""
    hit = _STATS.get(id(data))
    if hit is not None and hit[0] is data:
        return hit[1]
    stats = param_stats(data)
    _STATS[id(data)] = (data, stats)
    while len(_STATS) > 65536:
        _STATS.popitem(last=False)
    return stats


__all__ = ["cached_stats", "param_stats"]
