"""Comparing computed values: equality, errors against the reference, tolerance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(x is y or _same_value(x, y) for x, y in zip(a, b, strict=True))
        )
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    )


def _leaves(value: Any) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def _compare(a: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> tuple[float, float, int]:
    """(max abs error, max rel error, elements beyond ``atol + rtol * |ref|``)."""
    a64 = np.asarray(a, dtype=np.float64)
    r64 = np.asarray(ref, dtype=np.float64)
    if a64.size == 0:
        return 0.0, 0.0, 0
    with np.errstate(invalid="ignore"):  # inf - inf
        diff = np.abs(a64 - r64)
    same = (a64 == r64) | (np.isnan(a64) & np.isnan(r64))  # equal infinities are equal too
    diff = np.where(same, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    beyond = int(np.count_nonzero(diff > atol + rtol * np.abs(np.nan_to_num(r64))))
    rel = diff / (np.abs(np.nan_to_num(r64)) + atol)
    return float(diff.max()), float(rel.max()), beyond


@dataclass
class _OutputsCompared:
    """Outputs against the reference: elements beyond tolerance, worst errors, the output
    with the largest error, and a note when shapes or counts differ."""

    beyond: int
    max_abs: float
    max_rel: float
    worst: int = 0
    note: str = ""


def _compare_outputs(got: tuple, want: tuple, rtol: float, atol: float) -> _OutputsCompared:
    got, want = _leaves(got), _leaves(want)
    inf = float("inf")
    if len(got) != len(want):
        note = f"the module returns {len(got)} output(s), the reference {len(want)}"
        return _OutputsCompared(1, inf, inf, 0, note)
    out = _OutputsCompared(0, 0.0, 0.0)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            note = f"output {i} has shape {list(g.shape)}, the reference {list(w.shape)}"
            return _OutputsCompared(1, inf, inf, i, note)
        a, r, n = _compare(g, w, rtol, atol)
        if a > out.max_abs:
            out.worst = i
        out.max_abs, out.max_rel, out.beyond = (
            max(out.max_abs, a),
            max(out.max_rel, r),
            out.beyond + n,
        )
    return out


def _allclose(a: tuple | None, b: tuple | None, rtol: float, atol: float) -> bool:
    if a is None or b is None:
        return False
    la, lb = _leaves(a), _leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        if x is y:
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or _compare(x, y, rtol, atol)[2]:
            return False
    return True


# ----- per-node reference values ---------------------------------------------------------------
