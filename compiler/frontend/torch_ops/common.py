"""What the converters of every family share: the dtype, rank and axes of expressions, casts,
Python numbers and sizes as tensors, torch's type promotion, int-list arguments, the recorded
result shape, and the literal arguments checks read."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import ConvertContext, dtype_of_torch
from compiler.ir.nodes import Constant, Expr, call
from compiler.ir.symbolic import Dim, SymExpr
from compiler.ir.types import DType, TensorType, torch_dtypes

# ----- helpers ------------------------------------------------------------------------------


def dtype_of(e: Expr) -> DType:
    """The dtype of a tensor expression (FrontendError for anything else)."""
    if not isinstance(e.ty, TensorType):
        raise FrontendError(f"expected a tensor, got a value of type {e.ty}")
    return e.ty.dtype


def rank_of(e: Expr) -> int:
    """The rank of a tensor expression of known rank (FrontendError otherwise)."""
    if not isinstance(e.ty, TensorType) or e.ty.shape is None:
        raise FrontendError(f"expected a tensor of known rank, got {e.ty}")
    return len(e.ty.shape)


def positive_axis(axis: int, rank: int) -> int:
    """A torch axis (maybe negative) counted from the front."""
    return axis + rank if axis < 0 else axis


def cast(e: Expr, dtype: DType) -> Expr:
    """`e` converted to `dtype` (the same expression when it already has it)."""
    return e if dtype_of(e) is dtype else call("cast", e, dtype=dtype)


def dim_tensor(d: Dim, dtype: DType = DType.int64) -> Expr:
    """A 0-d tensor holding a size; a symbolic size is read as `arange(d, d + 1)`."""
    if isinstance(d, SymExpr):
        one = call("arange", start=d, stop=d + 1, dtype=DType.int64)
        return cast(call("reshape", one, shape=[]), dtype)
    return Constant(np.asarray(d, dtype=dtype.numpy))


def as_tensor(value: Any, dtype: DType) -> Expr:
    """A tensor argument, a Python number or a size as an expression of `dtype`."""
    if isinstance(value, Expr):
        return cast(value, dtype)
    if isinstance(value, SymExpr):
        return dim_tensor(value, dtype)
    if isinstance(value, (bool, int, float, np.number)):
        if dtype.is_int and isinstance(value, float) and not float(value).is_integer():
            raise FrontendError(f"the scalar {value} does not fit the integer dtype {dtype}")
        if dtype.is_int and isinstance(value, float) and math.isinf(value):
            raise FrontendError(f"the scalar {value} does not fit the integer dtype {dtype}")
        return Constant(np.asarray(value).astype(dtype.numpy))
    raise FrontendError(f"cannot use {value!r} as a tensor value")


def _torch_dtype(dtype: DType):
    return torch_dtypes()[dtype]


def _probe(value: Any):
    """Something torch.result_type accepts that promotes like `value`."""
    if isinstance(value, Expr):
        shape = () if rank_of(value) == 0 else (0,)
        return torch.empty(shape, dtype=_torch_dtype(dtype_of(value)))
    if isinstance(value, SymExpr):
        return 1
    return value


def common_dtype(a: Any, b: Any) -> DType:
    """torch's type promotion of two operands (tensors, Python numbers or sizes)."""
    return dtype_of_torch(torch.result_type(_probe(a), _probe(b)))


def binary_call(ctx: ConvertContext, op: str, a: Any, b: Any, dtype: DType | None = None) -> Expr:
    """`op(a, b)` with both operands as tensors of `dtype` (the node's result dtype)."""
    dtype = dtype or ctx.out_dtype
    return call(op, as_tensor(a, dtype), as_tensor(b, dtype))


def scaled_by(x: Expr, factor: Any) -> Expr:
    """`x * factor` for a Python number (nothing when it is 1)."""
    if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor == 1:
        return x
    return call("multiply", x, as_tensor(factor, dtype_of(x)))


def int_list(value: Any, count: int) -> list[int]:
    """A torch int-list argument (maybe a single int or shorter) as `count` ints."""
    if isinstance(value, (int, np.integer)):
        return [int(value)] * count
    values = [int(v) for v in value]
    if len(values) == 1 and count > 1:
        values = values * count
    return values


def recorded_shape(ctx: ConvertContext) -> list[Dim]:
    """The result shape torch.export recorded for the node being converted."""
    shape = ctx.out_shape
    if shape is None:
        raise FrontendError(f"torch recorded no shape for {ctx.node.name}")
    return shape


# ----- helpers for checks --------------------------------------------------------------------


def literal_arg(node, name: str, default: Any) -> Any:
    """An argument of an FX node by schema name, as written in the graph (for checks)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return default
    for i, arg in enumerate(schema.arguments):
        if arg.name != name:
            continue
        if name in node.kwargs:
            return node.kwargs[name]
        if i < len(node.args) and not arg.kwarg_only:
            return node.args[i]
        return arg.default_value if arg.has_default_value() else default
    return default
