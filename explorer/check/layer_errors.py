"""The numbers of the error map, taken while the check runs: node values are released after
the last step that uses them, so each step's layer errors are computed when the step is run
and kept as a few floats (see `layers.py` for what a layer is)."""

from __future__ import annotations

import math
import os
import sys
import warnings
import weakref
from typing import TYPE_CHECKING

import numpy as np

from explorer.check.judge import judge_float64
from explorer.check.layers import LayerError, layer_of
from explorer.check.numbers import same_memory
from explorer.check.references import group_roots, input_reference, matched_reference, root_key
from explorer.check.ties import tied

CHUNK = 1 << 15  # elements compared at a time (128 kB of float32: in cache)
TORCH_MIN = 1 << 15
"""A strided value of at least this many elements is compared by torch's kernels when torch is
loaded (``_torch_errors``): read in place, where numpy's ``reshape(-1)`` would copy it. A
contiguous one is compared by numpy's cache-sized chunks, twice as fast as torch's whole-block
passes on one thread (and shared with a second thread when big)."""
TORCH_BLOCK = 1 << 22  # a contiguous value is compared by torch this many elements at a time

if TYPE_CHECKING:
    from compiler.ir import Function
    from explorer.check.facts import Reference


class LayerErrors:
    """Each layer's output against the reference, step by step. A comparison is made once per
    (value, reference value) pair: most nodes of a later step hold the very arrays an earlier
    step computed (shared nodes, and the memo's rebuilt ones), so those cost nothing."""

    def __init__(self, rtol: float, atol: float):
        self.rtol, self.atol = rtol, atol
        # id(value) -> (the value, weakly; id(reference value); max rel; share of tolerance;
        # share of the float64 rule's allowance or None)
        self._seen: dict[int, tuple] = {}

    def of_step(self, main: Function, values: dict, reference: Reference) -> dict[str, LayerError]:
        """Per layer of `main`: its last root node (in binding order) whose value in
        `values` is matched with a reference value, and the error of that value."""
        fx, node_ref = reference.fx_values, reference.node_values
        if not fx and not node_ref:
            return {}
        found: dict[str, LayerError] = {}
        within = input_reference(fx, node_ref)
        for node in reversed(group_roots(main, root_key(fx))):
            layer = layer_of(node)
            if layer is None or layer in found:
                continue
            value = values.get(node)
            if not isinstance(value, np.ndarray):
                continue
            ref = matched_reference(node, value, fx, node_ref)
            if ref is not None and tied(node, value, ref, values, self.rtol, self.atol, within):
                found[layer] = LayerError(0.0, 0.0, node, None)  # ties ordered otherwise
            elif ref is not None:
                name = node.prov.source_node if fx else None
                rel, share, f64 = self._compare(value, ref, name, reference.float64)
                found[layer] = LayerError(rel, share, node, f64)
        return found

    def _compare(
        self, value: np.ndarray, ref: np.ndarray, name: str | None, float64
    ) -> tuple[float, float, float | None]:
        """(max rel, share of the tolerance, share of the float64 rule's allowance or None):
        a layer beyond the tolerance is judged against the float64 run of FX node `name`
        (`float64`: a `judge.Float64Reference`, run here on first need), as outputs are."""
        seen = self._seen.get(id(value))
        if seen is not None and seen[0]() is value and seen[1] == id(ref):
            return seen[2], seen[3], seen[4]
        if same_memory(value, ref):  # (torch's reference took the import's)
            rel = ratio = 0.0
        else:
            rel, ratio = _errors(value, ref, self.rtol, self.atol)
        share = None
        if ratio > 1 and name is not None and float64 is not None and float64.available:
            judged = judge_float64(
                value, ref, float64.node(name), self.atol, float64.reference_error(name, ref)
            )
            share = judged.share if judged is not None else None
        try:
            self._seen[id(value)] = (weakref.ref(value), id(ref), rel, ratio, share)
        except TypeError:  # a value that cannot be referenced weakly is compared each time
            pass
        return rel, ratio, share


PARALLEL_CHUNKS = 4  # a value of at least twice this many chunks is compared on two threads
_POOL: list = []


def _pool():
    """The one worker thread comparisons share (made on first use)."""
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(1, thread_name_prefix="passlens-errors"))
    return _POOL[0]


def _chunk_errors(v: np.ndarray, r: np.ndarray, starts, rtol: float, atol: float):
    """(max rel, max share) over the chunks of flat `v` against `r` starting at `starts`,
    in their own dtype; None when one holds NaN or infinities (then judged in float64)."""
    one, tiny = v.dtype.type, np.finfo(v.dtype).tiny
    n = min(CHUNK, v.size)
    diff, buf = np.empty(n, v.dtype), np.empty(n, v.dtype)
    rel = ratio = 0.0
    for k in starts:
        a, b = v[k : k + CHUNK], r[k : k + CHUNK]
        d, t = diff[: a.size], buf[: a.size]
        np.subtract(a, b, out=d)
        np.abs(d, out=d)
        np.abs(b, out=t)  # atol + rtol * |ref|
        t *= one(rtol)
        t += one(atol)
        if atol <= 0:  # no zero divisors
            np.maximum(t, tiny, out=t)
        np.divide(d, t, out=t)
        share = float(t.max())
        np.abs(b, out=t)  # |ref| + atol
        t += one(atol)
        if atol <= 0:
            np.maximum(t, tiny, out=t)
        np.divide(d, t, out=d)
        most = float(d.max())
        if not (math.isfinite(share) and math.isfinite(most)):
            return None  # NaN or infinities: counted as the check counts them
        rel, ratio = max(rel, most), max(ratio, share)
    return rel, ratio


def _torch_errors(
    value: np.ndarray, ref: np.ndarray, rtol: float, atol: float
) -> tuple[float, float] | None:
    """`_chunk_errors` by torch's kernels (the same float32 / float64 operations, each
    rounded alike, so the same numbers), on torch's threads, a strided value read in place
    (numpy's `reshape(-1)` copies it); None when torch cannot take the arrays (negative
    strides) or a value is not finite (then judged in float64)."""
    torch = sys.modules["torch"]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a read-only array: nothing here writes it
            v, r = torch.from_numpy(value), torch.from_numpy(ref)
    except (ValueError, TypeError, RuntimeError):
        return None
    if v.is_contiguous() and r.is_contiguous():
        v, r = v.reshape(-1), r.reshape(-1)
        blocks = [
            (v[k : k + TORCH_BLOCK], r[k : k + TORCH_BLOCK])
            for k in range(0, v.numel(), TORCH_BLOCK)
        ]
    else:
        blocks = [(v, r)]
    tiny = float(np.finfo(value.dtype).tiny)
    rel = ratio = 0.0
    with torch.inference_mode():
        for a, b in blocks:
            d = torch.sub(a, b)
            d.abs_()
            t = torch.abs(b)  # atol + rtol * |ref|
            t.mul_(rtol).add_(atol)
            if atol <= 0:
                t.clamp_(min=tiny)
            torch.div(d, t, out=t)
            share = float(t.max())
            torch.abs(b, out=t)  # |ref| + atol
            t.add_(atol)
            if atol <= 0:
                t.clamp_(min=tiny)
            torch.div(d, t, out=d)
            most = float(d.max())
            if not (math.isfinite(share) and math.isfinite(most)):
                return None
            rel, ratio = max(rel, most), max(ratio, share)
    return rel, ratio


def _errors(value: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> tuple[float, float]:
    """The max relative error `|value - ref| / (|ref| + atol)` (as `numbers.compare`)
    and the max share of the tolerance used, `|value - ref| / (atol + rtol * |ref|)`
    (above 1: beyond tolerance). This runs for every layer of every step, so when both are
    float32 or float64 and all is finite it works in their own precision (float32 rounding
    moves the numbers in their 7th digit at most), a cache-sized chunk at a time in two small
    buffers: five times faster than whole-array temporaries, which also slowed the rest of the
    check (allocating and faulting in megabytes per layer); a big value's chunks are shared
    with a second thread. A value of `TORCH_MIN` elements or more is compared by torch's
    kernels when torch is loaded if it is strided (the same numbers, without numpy's copy)."""
    if value.size == 0:
        return 0.0, 0.0
    if value.dtype == ref.dtype and value.dtype in (np.float32, np.float64):
        contiguous = value.flags.c_contiguous and ref.flags.c_contiguous
        if value.size >= TORCH_MIN and not contiguous and "torch" in sys.modules:
            done = _torch_errors(value, ref, rtol, atol)
            if done is not None:
                return done
        v, r = value.reshape(-1), ref.reshape(-1)
        starts = range(0, v.size, CHUNK)
        if len(starts) < 2 * PARALLEL_CHUNKS or (os.cpu_count() or 1) < 2:
            done = _chunk_errors(v, r, starts, rtol, atol)
        else:  # half the chunks on a second thread (numpy computes without the GIL)
            half = len(starts) // 2
            other = _pool().submit(_chunk_errors, v, r, starts[half:], rtol, atol)
            mine = _chunk_errors(v, r, starts[:half], rtol, atol)
            theirs = other.result()
            both = mine is not None and theirs is not None
            done = (max(mine[0], theirs[0]), max(mine[1], theirs[1])) if both else None
        if done is not None:
            return done
    # NaN, infinities, other dtypes: in float64, NaN against NaN equal, other NaN infinitely off
    a, r = np.asarray(value, np.float64), np.asarray(ref, np.float64)
    diff = np.abs(a - r)
    diff = np.where(np.isnan(a) & np.isnan(r), 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    scale = np.abs(np.nan_to_num(r))
    ratio = diff / np.maximum(atol + rtol * scale, 1e-300)  # no NaN: diff has none
    rel = diff / np.maximum(scale + atol, 1e-300)
    return float(rel.max()), float(ratio.max())
