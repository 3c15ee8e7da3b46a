"""Quantization ops: ``quantize`` (float -> integer) and ``dequantize`` (integer -> float).

Both are elementwise with numpy broadcasting of ``scale`` and ``zero_point`` against ``x``
(the result has ``x``'s shape): a per-tensor scale is one element, a per-axis scale of a
(N, C, H, W) tensor along C has shape (C, 1, 1), a blocked scale is repeated along its axis
first (the ONNX converters build these shapes). The quantized dtype is the zero point's.

- ``quantize(x, scale, zero_point) = saturate(round_half_even(x / scale) + zero_point)``,
  computed in f32 (f64 when an input is f64) and clamped to the range of the zero point's
  dtype before the conversion.
- ``dequantize(x, scale, zero_point) = (x - zero_point) * scale`` in f32 (f64 for an f64
  scale), of the scale's dtype.

The integer dtypes are read from :class:`DType` (``dtype.is_int`` and its numpy range), so
narrower or wider integer dtypes added to the IR work without changes here. Float8 / float4
targets (saturating conversions, no rounding to integers) are not these ops: the ONNX
converter composes them of ``divide``, ``clip`` and ``cast``.
"""

from __future__ import annotations

import numpy as np

from compiler.ir.op_registry import ELEMWISE, TypeInferenceError, define_op
from compiler.ir.shape_inference import broadcast_shapes, tensor_input
from compiler.ir.types import DType, TensorType


def quant_range(dtype: DType) -> tuple[int, int]:
    """The (lowest, highest) value of an integer dtype quantized values are saturated to."""
    if not dtype.is_int:
        raise TypeInferenceError(f"quantized values must be integers, got {dtype}")
    try:
        info = np.iinfo(dtype.numpy)
    except ValueError:  # ml_dtypes' narrow integers (int4, ...) have their own iinfo
        import ml_dtypes

        info = ml_dtypes.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def compute_float(*dtypes: DType) -> DType:
    """The float dtype quantization arithmetic is done in: f64 if any input is f64, else f32."""
    return DType.float64 if DType.float64 in dtypes else DType.float32


def _check_broadcast(x: TensorType, other: TensorType, what: str) -> None:
    if x.shape is None or other.shape is None:
        return
    if len(other.shape) > len(x.shape):
        raise TypeInferenceError(f"{what} of rank {len(other.shape)} exceeds x's rank")
    broadcast_shapes(x.shape, other.shape)
    for dx, do in zip(reversed(x.shape), reversed(other.shape), strict=False):
        if isinstance(do, int) and do != 1 and isinstance(dx, int) and dx != do:
            raise TypeInferenceError(f"{what} of shape {other.shape} does not fit x {x.shape}")


def _quantize_infer(types, attrs):
    x, scale, zp = (tensor_input(t) for t in types)
    if not x.dtype.is_float or not scale.dtype.is_float:
        raise TypeInferenceError(f"quantize needs float x and scale, got {x.dtype}, {scale.dtype}")
    quant_range(zp.dtype)
    _check_broadcast(x, scale, "scale")
    _check_broadcast(x, zp, "zero_point")
    return x.with_dtype(zp.dtype)


def _quantize_compute(values, attrs):
    x, scale, zp = values
    ct = compute_float(DType.of(x.dtype), DType.of(scale.dtype)).numpy
    lo, hi = quant_range(DType.of(zp.dtype))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.rint(x.astype(ct) / scale.astype(ct)) + zp.astype(ct)
    q = np.clip(np.nan_to_num(q, nan=0.0), lo, hi)
    return np.broadcast_to(q, x.shape).astype(zp.dtype)


define_op(
    "quantize",
    inputs=("x", "scale", "zero_point"),
    infer=_quantize_infer,
    compute=_quantize_compute,
    pattern=ELEMWISE,
    doc="saturate(round_half_even(x / scale) + zero_point) in the zero point's integer dtype; "
    "scale and zero_point broadcast to x (per tensor, per axis or per block).",
)


def _dequantize_infer(types, attrs):
    x, scale, zp = (tensor_input(t) for t in types)
    if not scale.dtype.is_float:
        raise TypeInferenceError(f"dequantize needs a float scale, got {scale.dtype}")
    quant_range(x.dtype)
    if zp.dtype is not x.dtype:
        raise TypeInferenceError(f"zero_point is {zp.dtype} but x is {x.dtype}")
    _check_broadcast(x, scale, "scale")
    _check_broadcast(x, zp, "zero_point")
    return x.with_dtype(scale.dtype)


def _dequantize_compute(values, attrs):
    x, scale, zp = values
    ct = compute_float(DType.of(scale.dtype)).numpy
    y = (x.astype(ct) - zp.astype(ct)) * scale.astype(ct)
    return np.broadcast_to(y, x.shape).astype(scale.dtype)


define_op(
    "dequantize",
    inputs=("x", "scale", "zero_point"),
    infer=_dequantize_infer,
    compute=_dequantize_compute,
    pattern=ELEMWISE,
    doc="(x - zero_point) * scale, of the scale's float dtype; scale and zero_point broadcast "
    "to x (per tensor, per axis or per block).",
)
