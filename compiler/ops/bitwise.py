"""Bitwise ops on integers (two's complement) and bools: and, or, xor, not; and bitcast.

Shifts have no IR op: the ONNX frontend composes them from a multiply / floor-divide by a
power of two read from a constant table (see compiler/frontend/onnx_ops/bitwise.py).
"""

from __future__ import annotations

import numpy as np

from compiler.ir.op_registry import BROADCAST, ELEMWISE, AttrSpec, TypeInferenceError, define_op
from compiler.ir.shape_inference import broadcast_shapes, same_dtype, tensor_input
from compiler.ir.types import DType, TensorType


def _check_integral(dtype: DType) -> None:
    if not (dtype.is_int or dtype is DType.bool) or dtype.is_storage_only:
        raise TypeInferenceError(f"needs integer or bool inputs, got {dtype}")


def _binary_infer(types, attrs):
    a, b = (tensor_input(t, w) for t, w in zip(types, ("lhs", "rhs"), strict=True))
    dtype = same_dtype([a, b])
    _check_integral(dtype)
    return TensorType(broadcast_shapes(a.shape, b.shape), dtype)


def _not_infer(types, attrs):
    (t,) = types
    t = tensor_input(t)
    _check_integral(t.dtype)
    return t


_BINARY = {
    "bitwise_and": (np.bitwise_and, "and"),
    "bitwise_or": (np.bitwise_or, "or"),
    "bitwise_xor": (np.bitwise_xor, "exclusive or"),
}

for _name, (_fn, _what) in _BINARY.items():
    define_op(
        _name,
        inputs=("lhs", "rhs"),
        infer=_binary_infer,
        compute=lambda v, a, _fn=_fn: np.asarray(_fn(v[0], v[1]), dtype=v[0].dtype),
        pattern=BROADCAST,
        doc=f"Bitwise {_what} of integers (or bools) with numpy broadcasting; one dtype.",
    )

define_op(
    "bitwise_not",
    inputs=("x",),
    infer=_not_infer,
    compute=lambda v, a: np.asarray(np.invert(v[0]), dtype=v[0].dtype),
    pattern=ELEMWISE,
    doc="Bitwise complement of integers (~x, two's complement), logical not of bools.",
)


# ----- bitcast -----------------------------------------------------------------------------


def _bitcast_infer(types, attrs):
    (t,) = types
    t = tensor_input(t)
    src, dst = t.dtype, attrs["dtype"]
    for d in (src, dst):
        if d.is_storage_only:
            raise TypeInferenceError(f"cannot bitcast {d} values (a low-precision type)")
    if src.itemsize != dst.itemsize:
        raise TypeInferenceError(
            f"bitcast needs types of one width, got {src} ({8 * src.itemsize} bits) and "
            f"{dst} ({8 * dst.itemsize} bits)"
        )
    return t.with_dtype(dst)


def _bitcast_compute(values, attrs):
    (x,) = values
    x = x if x.flags.c_contiguous else x.copy()  # (ascontiguousarray makes 0-d 1-d)
    if attrs["dtype"] is DType.bool:  # a byte other than 0 / 1 is true
        return x.view(np.uint8) != 0
    return x.view(attrs["dtype"].numpy)


define_op(
    "bitcast",
    inputs=("x",),
    attrs={"dtype": AttrSpec("dtype", doc="the target dtype, of the same width")},
    infer=_bitcast_infer,
    compute=_bitcast_compute,
    pattern=ELEMWISE,
    doc="Reinterpret each element's bits as another dtype of the same width (ONNX BitCast).",
)
