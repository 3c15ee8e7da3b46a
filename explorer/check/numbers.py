"""Comparing computed values: equality, errors against the reference, tolerance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def to_numpy(x: Any) -> np.ndarray:
    """`x` (a torch tensor, bfloat16 as float32, or anything array-like) as a numpy array."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def same_value(a: Any, b: Any) -> bool:
    """Whether `a` and `b` (arrays or nested tuples of them) hold the same values: same
    shape, dtype and elements (NaNs equal)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(x is y or same_value(x, y) for x, y in zip(a, b, strict=True))
        )
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    )


def leaves(value: Any) -> list:
    """The arrays of `value`, its nested tuples and lists flattened in order."""
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in leaves(v)]
    return [value]


COMPARE_CHUNK = 1 << 16  # elements compared at a time, in float64 (512 kB: in cache)


def same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether arrays `a` and `b` are views of the very same elements, read the same way (a
    value torch's reference took from the import's run and the import's own)."""
    return a is b or (
        a.shape == b.shape
        and a.strides == b.strides
        and a.dtype == b.dtype
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )


def compare(a: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> tuple[float, float, int]:
    """(max abs error, max rel error, elements beyond `atol + rtol * |ref|`), in float64, a
    chunk at a time (whole-array float64 temporaries of a 1B model's logits took 0.2 s per
    comparison, and their memory)."""
    a, ref = np.asarray(a), np.asarray(ref)
    if a.size == 0 or same_memory(a, ref):  # (an element against itself: NaN and inf too)
        return 0.0, 0.0, 0
    af, rf = a.reshape(-1), ref.reshape(-1)
    worst_abs = worst_rel = 0.0
    beyond = 0
    for k in range(0, af.size, COMPARE_CHUNK):
        a64 = af[k : k + COMPARE_CHUNK].astype(np.float64)
        r64 = rf[k : k + COMPARE_CHUNK].astype(np.float64)
        with np.errstate(invalid="ignore"):  # inf - inf
            diff = np.abs(a64 - r64)
        if np.isnan(diff).any():
            # equal infinities (an attention mask's -inf) and NaN beside NaN are equal
            same = (a64 == r64) | (np.isnan(a64) & np.isnan(r64))
            diff = np.where(same, 0.0, diff)
            diff = np.where(np.isnan(diff), np.inf, diff)
        scale = np.abs(np.nan_to_num(r64))
        beyond += int(np.count_nonzero(diff > atol + rtol * scale))
        scale += atol
        worst_abs = max(worst_abs, float(diff.max()))
        worst_rel = max(worst_rel, float((diff / scale).max()))
    return worst_abs, worst_rel, beyond


@dataclass
class OutputsCompared:
    """Outputs against the reference: elements beyond tolerance, worst errors, the output
    with the largest error, a note when shapes or counts differ, and the verdict: `wrong`
    and the rule that judged it (`judge.py`: "tolerance", or "float64" when every output
    beyond the tolerance was judged against the float64 run; `float64` is then the
    judgement of the output furthest over its allowance)."""

    beyond: int
    max_abs: float
    max_rel: float
    worst: int = 0
    note: str = ""
    rule: str = "tolerance"
    wrong: bool | None = None  # None: as ``beyond`` says (no float64 judgement made)
    float64: Any = None  # the deciding Float64Judgement

    @property
    def diverged(self) -> bool:
        return bool(self.beyond) if self.wrong is None else self.wrong


def judge_outputs(got: tuple, want: tuple, float64, rtol: float, atol: float) -> OutputsCompared:
    """Outputs against the reference by the tolerance, then, where elements are beyond it,
    against the float64 run `float64` (a `judge.Float64Reference` or None; run here on
    first need)."""
    from explorer.check.judge import FLOAT64, judge_float64

    cmp = compare_outputs(got, want, rtol, atol)
    if not cmp.beyond or cmp.note or float64 is None or not float64.available:
        return cmp
    wrong, judged = False, []
    for i, (g, w) in enumerate(zip(leaves(got), leaves(want), strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        if g is w or not compare(g, w, rtol, atol)[2]:
            continue
        j = judge_float64(g, w, float64.output(i), atol)
        if j is None:
            return cmp  # an output the rule cannot judge: the tolerance judges them all
        judged.append(j)
        wrong = wrong or j.wrong
    cmp.rule, cmp.wrong = FLOAT64, wrong
    cmp.float64 = max(judged, key=lambda j: j.share) if judged else None
    return cmp


def compare_outputs(got: tuple, want: tuple, rtol: float, atol: float) -> OutputsCompared:
    """How the outputs `got` compare with the reference's `want` (flattened): the worst
    output, the max errors and the elements beyond the tolerance; a count or shape mismatch is
    one output wrong, with a note."""
    got, want = leaves(got), leaves(want)
    inf = float("inf")
    if len(got) != len(want):
        note = f"the module returns {len(got)} output(s), the reference {len(want)}"
        return OutputsCompared(1, inf, inf, 0, note)
    out = OutputsCompared(0, 0.0, 0.0)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            note = f"output {i} has shape {list(g.shape)}, the reference {list(w.shape)}"
            return OutputsCompared(1, inf, inf, i, note)
        a, r, n = compare(g, w, rtol, atol)
        if a > out.max_abs:
            out.worst = i
        out.max_abs, out.max_rel, out.beyond = (
            max(out.max_abs, a),
            max(out.max_rel, r),
            out.beyond + n,
        )
    return out


def allclose(a: tuple | None, b: tuple | None, rtol: float, atol: float) -> bool:
    """Whether the outputs `a` and `b` (None: never) hold as many arrays, each within
    `rtol` / `atol` of the other."""
    if a is None or b is None:
        return False
    la, lb = leaves(a), leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        if x is y:
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or compare(x, y, rtol, atol)[2]:
            return False
    return True


# ----- per-node reference values ---------------------------------------------------------------
