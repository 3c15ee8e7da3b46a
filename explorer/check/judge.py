"""How a value is judged against the reference: by the tolerance, and where that fails, the way
float32 rounds.

A value is first compared with the float32 reference (torch eager, onnxruntime) under
`atol + rtol * |ref|`: cheap, and enough for most steps. Where elements are beyond that, the
value is judged as torch's accuracy minifier judges a compiled result (`torch._dynamo.utils
.same(..., fp64_ref=...)`): against the same model run in float64, a value is wrong only when
it is further from float64 than the float32 reference is, by more than `FLOAT64_MULTIPLIER`
(plus `atol / 10`). On a 2048-wide decoder float32 summation order alone moves a layer's
output by more than 1e-4 relative at elements near zero; a real bug (a layer's values changed
by 1e-3 relative) is hundreds of times further from float64 than eager float32 is.

Unlike torch (RMSE) the distance is the largest element's: a bug that changes a few elements
is not averaged away. The float64 run is made once per check, only when some value was beyond
the tolerance (see `references._torch_float64` / `_onnx_float64`). A value in a narrower
dtype than the reference (a float16 step) is judged by the tolerance alone: float32's rounding
says nothing about float16's, so such a step needs a tolerance of its own (`rtol=1e-2`).

The rule that judged is named in every verdict: `"tolerance"` (all within it, or no float64
run to judge with) or `"float64"`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

FLOAT64_MULTIPLIER = 3.0  # torch uses 2 (3 for half precision and small tensors)

TOLERANCE, FLOAT64 = "tolerance", "float64"

RULES = {
    TOLERANCE: "atol + rtol * |ref| against the reference",
    FLOAT64: (
        "beyond the tolerance, judged against a float64 run: wrong only when further from "
        f"float64 than the float32 reference is, by over {FLOAT64_MULTIPLIER:g}x"
    ),
}


@dataclass(frozen=True)
class Float64Judgement:
    """A value against the float64 run: its largest distance from it (`error`), the float32
    reference's (`reference_error`), and the share of the allowance used (`share`:
    `error / (FLOAT64_MULTIPLIER * reference_error + atol / 10)`, above 1 wrong)."""

    error: float
    reference_error: float
    share: float

    @property
    def wrong(self) -> bool:
        return not self.share <= 1  # NaN is wrong


def max_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The largest `|a - b|` in float64 (NaN against NaN and equal infinities, an attention
    mask's -inf, are 0; NaN against a number inf)."""
    if a.size == 0:
        return 0.0
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf
        d = np.abs(a64 - b64)
    worst = float(d.max())
    if math.isnan(worst):
        same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
        d = np.where(same, 0.0, np.where(np.isnan(d), np.inf, d))
        worst = float(d.max())
    return worst


def judge_float64(
    value: np.ndarray,
    reference: np.ndarray,
    float64: np.ndarray | None,
    atol: float,
    reference_error: float | None = None,
) -> Float64Judgement | None:
    """`value` judged against the float64 run `float64` (None when the rule does not
    apply: no float64 value, another shape, a non-float or narrower dtype than the
    reference, or a float64 value that is not finite where the reference is)."""
    if float64 is None or value.shape != float64.shape or reference.shape != value.shape:
        return None
    if value.dtype.kind != "f" or reference.dtype.kind != "f":
        return None
    if value.dtype.itemsize < reference.dtype.itemsize:
        return None  # a float16 step: float32's rounding does not bound it
    if reference_error is None:
        reference_error = max_distance(reference, float64)
    if not math.isfinite(reference_error):
        return None  # the float64 run overflowed, or the reference did: no bound
    error = max_distance(value, float64)
    allowed = FLOAT64_MULTIPLIER * reference_error + atol / 10
    share = error / allowed if allowed > 0 else (0.0 if error == 0 else math.inf)
    return Float64Judgement(error, reference_error, share)


class Float64Reference:
    """The float64 run of the reference model, made on first use (`compute` returns its
    outputs and its per-node values by FX node name, or raises; a failure is kept as
    `failure` and the rule is then not used). Each node's float32-reference distance
    from float64 is computed once."""

    def __init__(self, compute=None, description: str = ""):
        self._compute = compute
        self.description = description
        self.outputs: tuple | None = None
        self.nodes: dict[str, np.ndarray] = {}
        self.failure: str | None = None
        self.noted = False  # whether the check's notes say the run failed
        self.seconds = 0.0  # how long the run took
        self._done = compute is None
        self._reference_errors: dict[str, float] = {}
        self.on_start = None  # called just before the run is made (the check's progress phase)

    @property
    def available(self) -> bool:
        """Whether a float64 run exists (running it now if it was not made yet)."""
        self._ensure()
        return self.outputs is not None

    @property
    def made(self) -> bool:
        """Whether the float64 run was made (without making it)."""
        return self._done and self.outputs is not None

    def _ensure(self) -> None:
        if self._done:
            return
        self._done = True
        if self.on_start is not None:
            self.on_start()
        start = time.perf_counter()
        try:
            result = self._compute()
            self.outputs, self.nodes = result[0], result[1]
            if len(result) > 2:  # the run says how it was made
                self.description = result[2]
            self.seconds = time.perf_counter() - start
        except ImportError as e:
            self.failure = f"{e.name or e} is not installed"
        except Exception as e:  # the rule is a refinement: without it, the tolerance judges
            self.failure = f"{type(e).__name__}: {str(e)[:300]}"

    def output(self, i: int) -> np.ndarray | None:
        self._ensure()
        if self.outputs is None or i >= len(self.outputs):
            return None
        return self.outputs[i]

    def node(self, name: str | None) -> np.ndarray | None:
        self._ensure()
        return self.nodes.get(name) if name is not None else None

    def reference_error(self, name: str, reference: np.ndarray) -> float | None:
        """The float32 reference's largest distance from float64 at FX node `name`."""
        if name not in self._reference_errors:
            f64 = self.node(name)
            if f64 is None or f64.shape != reference.shape:
                return None
            self._reference_errors[name] = max_distance(reference, f64)
        return self._reference_errors[name]


def failure_note(float64: Float64Reference | None, notes: list[str]) -> None:
    """Add to a check's `notes`, once, that the float64 run failed and why."""
    if float64 is not None and float64.failure and not float64.noted:
        float64.noted = True
        notes.append(
            f"no float64 run to judge values beyond the tolerance ({float64.failure}): "
            "the tolerance alone judged them"
        )


def used_note(reference, notes: list[str]) -> None:
    """Add to a check's `notes` that values were judged against the float64 run."""
    f64 = reference.float64
    if f64 is not None and f64.made:
        notes.append(
            f"values beyond the tolerance were judged against {f64.description} "
            f"({f64.seconds:.2f} s): wrong only when further from float64 than "
            f"{reference.name} is, by over {FLOAT64_MULTIPLIER:g}x (statuses marked float64)"
        )


__all__ = [
    "FLOAT64",
    "FLOAT64_MULTIPLIER",
    "RULES",
    "TOLERANCE",
    "Float64Judgement",
    "Float64Reference",
    "judge_float64",
    "failure_note",
    "max_distance",
    "used_note",
]
