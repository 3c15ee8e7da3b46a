"""OpCases for the bitwise ops, checked against torch's bitwise ops (signed and unsigned
types, broadcasting, bools)."""

from __future__ import annotations

import numpy as np
import torch

import compiler.ops.bitwise  # noqa: F401  (registers the ops)
from tests.compiler.ops.opcase import OpCase

_rng = np.random.default_rng(0)


def _ints(shape, dtype):
    info = np.iinfo(dtype)
    return _rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


_TORCH = {
    "bitwise_and": (torch.bitwise_and, np.bitwise_and),
    "bitwise_or": (torch.bitwise_or, np.bitwise_or),
    "bitwise_xor": (torch.bitwise_xor, np.bitwise_xor),
}

CASES: list[OpCase] = []
for _op, (_fn, _np) in _TORCH.items():
    _a, _b = _ints((2, 3), np.uint64), _ints((3,), np.uint64)
    CASES += [
        OpCase(_op, [_ints((3, 4), np.int32), _ints((3, 4), np.int32)], reference=_fn),
        OpCase(
            _op,
            [_ints((2, 3, 4), np.int8), _ints((4,), np.int8)],
            reference=_fn,
            id=f"{_op}-i8-broadcast",
        ),
        OpCase(_op, [_ints((5,), np.uint8), _ints((5,), np.uint8)], reference=_fn, id=f"{_op}-u8"),
        OpCase(
            _op,
            [_a, _b],
            expected=_np(_a, _b),  # (torch has no uint64 bitwise ops)
            id=f"{_op}-u64",
        ),
        OpCase(
            _op,
            [_rng.random((4,)) < 0.5, _rng.random((4,)) < 0.5],
            reference=_fn,
            id=f"{_op}-bool",
        ),
    ]
CASES += [
    OpCase("bitwise_not", [_ints((3, 4), np.int64)], reference=torch.bitwise_not),
    OpCase("bitwise_not", [_ints((6,), np.uint8)], reference=torch.bitwise_not, id="not-u8"),
    OpCase(
        "bitwise_not",
        [np.array([0, 1, 65535, 1234], np.uint16)],
        expected=np.array([65535, 65534, 0, 64301], np.uint16),
        id="not-u16",
    ),
    OpCase("bitwise_not", [_rng.random((5,)) < 0.5], reference=torch.bitwise_not, id="not-bool"),
]

_f = np.array([[1.5, -0.0, np.inf], [np.nan, 1e-40, -3.25]], np.float32)
CASES += [
    OpCase(
        "bitcast",
        [_f],
        {"dtype": "int32"},
        reference=lambda x, dtype: x.view(torch.int32),
        id="bitcast-f32-i32",
    ),
    OpCase(
        "bitcast",
        [_i64 := _ints((2, 3), np.int64)],
        {"dtype": "float64"},
        expected=_i64.view(np.float64),
        id="bitcast-i64-f64",
    ),
    OpCase(
        "bitcast",
        [_ints((5,), np.int8)],
        {"dtype": "uint8"},
        reference=lambda x, dtype: x.view(torch.uint8),
        id="bitcast-i8-u8",
    ),
    OpCase(
        "bitcast",
        [np.array([True, False, True])],
        {"dtype": "uint8"},
        expected=np.array([1, 0, 1], np.uint8),
        id="bitcast-bool-u8",
    ),
    OpCase(
        "bitcast",
        [np.array([0, 1, 2, 255], np.uint8)],
        {"dtype": "bool"},
        expected=np.array([False, True, True, True]),
        id="bitcast-u8-bool",
    ),
    OpCase(
        "bitcast",
        [np.array([1.0, -2.5, 65504.0], np.float16)],
        {"dtype": "uint16"},
        expected=np.array([1.0, -2.5, 65504.0], np.float16).view(np.uint16),
        id="bitcast-f16-u16",
    ),
    OpCase(
        "bitcast",
        [np.float32(1.0)],
        {"dtype": "uint32"},
        expected=np.uint32(0x3F800000),
        id="bitcast-scalar",
    ),
]
