"""OpCases for quantize / dequantize, checked against torch's quantized tensors (per tensor,
per channel) and exact expected values (ties round half to even, saturation)."""

from __future__ import annotations

import warnings

import numpy as np
import torch

import compiler.ops.quantize  # noqa: F401  (registers the ops)
from tests.compiler.ops.opcase import OpCase

_rng = np.random.default_rng(0)
_TORCH_Q = {np.dtype(np.uint8): torch.quint8, np.dtype(np.int8): torch.qint8}


def _q_per_tensor(x, scale, zp):
    warnings.filterwarnings("ignore", "torch.quantize_per", UserWarning)
    q = torch.quantize_per_tensor(x, float(scale), int(zp), _TORCH_Q[np.dtype(zp.numpy().dtype)])
    return q.int_repr()


def _q_per_channel(x, scale, zp):  # scale, zp of shape (C, 1): axis 0
    warnings.filterwarnings("ignore", "torch.quantize_per", UserWarning)
    qd = _TORCH_Q[np.dtype(zp.numpy().dtype)]
    q = torch.quantize_per_channel(x, scale.reshape(-1).double(), zp.reshape(-1).long(), 0, qd)
    return q.int_repr()


def _dq_per_tensor(x, scale, zp):
    return (x.double() - float(zp)) * float(scale)


x = (_rng.standard_normal((4, 6)) * 3).astype(np.float32)
CASES: list[OpCase] = [
    OpCase(
        "quantize",
        [x, np.float32(0.05), np.uint8(128)],
        reference=_q_per_tensor,
        id="quantize-u8-per-tensor",
    ),
    OpCase(
        "quantize",
        [x, np.float32(0.02), np.int8(-3)],
        reference=_q_per_tensor,
        id="quantize-i8-saturating",
    ),
    OpCase(
        "quantize",
        [x, np.array([[0.01], [0.02], [0.05], [0.1]], np.float32), np.zeros((4, 1), np.int8)],
        reference=_q_per_channel,
        id="quantize-i8-per-axis",
    ),
    OpCase(
        "quantize",
        [
            np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1e9, -1e9], np.float32),
            np.float32(1.0),
            np.int16(0),
        ],
        expected=np.array([0, 2, 2, 0, -2, 32767, -32768], np.int16),
        id="quantize-i16-half-even",
    ),
    OpCase(
        "quantize",
        [np.array([[1.0, 2.0], [3.0, 4.0]], np.float64), np.array([2.0, 0.5]), np.int32(1)],
        expected=np.array([[1, 5], [3, 9]], np.int32),  # 0.5 -> 0,
        id="quantize-f64-i32",
    ),
    OpCase(
        "dequantize",
        [_rng.integers(0, 256, (3, 5)).astype(np.uint8), np.float32(0.1), np.uint8(100)],
        reference=_dq_per_tensor,
        id="dequantize-u8",
    ),
    OpCase(
        "dequantize",
        [
            _rng.integers(-128, 128, (3, 2)).astype(np.int8),
            np.array([[0.5], [0.25], [2.0]], np.float32),
            np.array([[0], [1], [-1]], np.int8),
        ],
        reference=lambda x, s, z: (x.double() - z.double()) * s.double(),
        id="dequantize-i8-per-axis",
    ),
    OpCase(
        "dequantize",
        [np.array([-70000, 3, 12], np.int32), np.float16(0.5), np.int32(0)],
        expected=np.array([-35000, 1.5, 6], np.float16),
        rtol=1e-3,
        id="dequantize-i32-f16",
    ),
]
