"""Conversion to float8e8m0 (an 8-bit power of two, ONNX FLOAT8E8M0) with a rounding mode.

The other low-precision types (float8 / float4 / int4 / int2) are reached by ``cast``, which
converts like ml_dtypes (round to nearest even, no saturation); ONNX's saturating Cast is a
``clip`` then a ``cast``. float8e8m0 rounds up, down or to nearest, which ``cast`` cannot say.
"""

from __future__ import annotations

import numpy as np

from compiler.ir.op_registry import ELEMWISE, AttrSpec, TypeInferenceError, define_op
from compiler.ir.shape_inference import tensor_input
from compiler.ir.types import DType

ROUND_MODES = ("up", "down", "nearest")


def _infer(types, attrs):
    (t,) = types
    t = tensor_input(t)
    if t.dtype.is_storage_only or t.dtype is DType.bool:
        raise TypeInferenceError(f"needs a float or integer input, got {t.dtype}")
    if attrs["round_mode"] not in ROUND_MODES:
        raise TypeInferenceError(
            f"round_mode must be one of {', '.join(ROUND_MODES)}, got {attrs['round_mode']!r}"
        )
    return t.with_dtype(DType.float8e8m0)


def to_float8e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """``x`` (read as float32) as float8e8m0: the float32 exponent, rounded by the dropped
    mantissa bits; nan and inf give nan (0xFF); the sign is dropped. With ``saturate`` a
    rounding never goes past the largest value 2**127 (else it gives nan)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = exponent == 0xFF
    if round_mode == "nearest":
        guard = (bits & 0x400000) != 0
        rest = (bits & 0x3FFFFF) != 0
        up = guard & (rest | (exponent > 0))
    elif round_mode == "up":
        up = (bits & 0x7FFFFF) != 0
    else:
        up = np.zeros(bits.shape, dtype=bool)
    up &= ~special
    if saturate:
        up &= exponent != 0xFE
    out = np.where(special, 0xFF, exponent + up).astype(np.uint8)
    return out.view(DType.float8e8m0.numpy)


define_op(
    "to_float8e8m0",
    inputs=("x",),
    attrs={
        "saturate": AttrSpec("bool", True, "clamp to the largest value instead of nan"),
        "round_mode": AttrSpec("str", "up", "up, down or nearest"),
    },
    infer=_infer,
    compute=lambda v, a: to_float8e8m0(v[0], a["saturate"], a["round_mode"]),
    pattern=ELEMWISE,
    doc="Convert to float8e8m0 (a power of two) rounding up, down or to nearest (ONNX Cast).",
)
