"""A weight's first values and statistics (min, max, mean, std), as the node details of the
graph component show them (:func:`param_stats`), remembered per array."""

from __future__ import annotations

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
            out.update(
                min=float(flat.min()),
                max=float(flat.max()),
                mean=float(flat.mean(dtype=np.float64)),
                std=float(flat.std(dtype=np.float64)),
            )
    return jsonable(out)


_STATS: OrderedDict = OrderedDict()  # id(array) -> (array, stats), most recent last


def _cached_stats(data: np.ndarray) -> dict:
    hit = _STATS.get(id(data))
    if hit is not None and hit[0] is data:
        return hit[1]
    stats = param_stats(data)
    _STATS[id(data)] = (data, stats)
    while len(_STATS) > 65536:
        _STATS.popitem(last=False)
    return stats


__all__ = ["param_stats"]
