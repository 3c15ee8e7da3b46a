"""OpCases for to_float8e8m0, checked against onnx's reference conversion (every rounding
mode, with and without saturation, nan / inf / zero / subnormal / the largest values)."""

from __future__ import annotations

import numpy as np
from onnx.numpy_helper import to_float8e8m0

import compiler.ops.lowp  # noqa: F401  (registers the op)
from tests.compiler.ops.opcase import OpCase

_rng = np.random.default_rng(0)
_x = np.concatenate(
    [
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, 1.7e38, 1e-40, 1.5, 0.75, -6.0]),
        _rng.standard_normal(21) * 10.0 ** _rng.integers(-30, 30, 21),
    ]
).astype(np.float32)

CASES: list[OpCase] = [
    OpCase(
        "to_float8e8m0",
        [_x.reshape(4, 8)],
        {"saturate": sat, "round_mode": mode},
        expected=to_float8e8m0(_x, sat, mode).reshape(4, 8),
        id=f"to_float8e8m0-{mode}-{'sat' if sat else 'nosat'}",
    )
    for mode in ("up", "down", "nearest")
    for sat in (True, False)
] + [
    OpCase(
        "to_float8e8m0",
        [np.array([1, 2, 3, 1000], np.int32)],
        expected=to_float8e8m0(np.array([1, 2, 3, 1000], np.float32)),
        id="to_float8e8m0-from-int32",
    )
]
