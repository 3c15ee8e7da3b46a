"""ONNX Cast / CastLike to and from the low-precision types (float8, float4, int4, int2, ...)
with Cast's ``saturate`` and ``round_mode``, as onnx's reference (op_cast.py) defines them:

- to a float8 type other than float8e8m0, ``saturate`` (the default) clamps to the type's
  largest finite value (nan stays nan): a ``clip`` before the non-saturating ``cast``;
- to float8e8m0, the value is rounded up, down or to nearest (``to_float8e8m0``);
- every other conversion ignores both attributes.

The Cast / CastLike converters themselves are in elementwise.py and call :func:`cast_node`.
"""

from __future__ import annotations

import compiler.ops.lowp  # noqa: F401  (registers to_float8e8m0)
from compiler.frontend.onnx_context import ConversionError, ConvertContext
from compiler.ir.nodes import Expr
from compiler.ir.types import DType
from compiler.ops.lowp import ROUND_MODES

_SATURATING = (DType.float8e4m3fn, DType.float8e4m3fnuz, DType.float8e5m2, DType.float8e5m2fnuz)


def cast_node(ctx: ConvertContext, x: Expr, dtype: DType) -> Expr:
    """``x`` converted to ``dtype`` as this Cast / CastLike node says."""
    round_mode = ctx.attr("round_mode", "up")
    if round_mode not in ROUND_MODES:
        raise ConversionError(f"round_mode must be one of {', '.join(ROUND_MODES)}")
    saturate = ctx.attr("saturate", 1)
    if saturate not in (0, 1):
        raise ConversionError(f"saturate must be 0 or 1, got {saturate!r}")
    src = x.ty.dtype
    if dtype is DType.float8e8m0:
        if src.is_storage_only or src is DType.bool:  # (read as float32, like the reference)
            x = ctx.call("cast", x, dtype=DType.float32)
        return ctx.call("to_float8e8m0", x, saturate=bool(saturate), round_mode=round_mode)
    if dtype in _SATURATING and saturate and src is not DType.bool:
        if not src.is_float or src.is_storage_only:
            # the bounds may not fit the source type (uint8, float8e4m3fn): clip in float32,
            # exact for every value that does not saturate
            x = ctx.call("cast", x, dtype=DType.float32)
        largest = _finfo_max(dtype)
        x = ctx.call("clip", x, min=-largest, max=largest)
    return ctx.call("cast", x, dtype=dtype)


def _finfo_max(dtype: DType) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(dtype.numpy).max)
