"""Converters from ATen operators (as ``torch.export`` emits them) to IR ops.

Each converter is registered with :func:`converts` for one or more targets and called as
``fn(ctx, node, args, kwargs)`` with the FX node's arguments already converted: tensors are IR
expressions, symbolic sizes are dims (``int`` or :class:`SymExpr`), lists stay lists. It
returns an expression, a Python value (a dim, a list of expressions for ``split``) or a tuple.
``ctx.arg(args, kwargs)`` binds the arguments to the operator's schema by name, with defaults.

Types follow torch: every converter gives its result the dtype torch.export recorded for the
node (``ctx.out_dtype``), so ``int_tensor * 2`` stays an integer tensor and ``int / int`` is a
float division; Python scalars become 0-d constants of the dtype they combine with. Shapes that
torch already computed (reshape targets, factory sizes) are read from the node's recorded shape
rather than recomputed, so ``-1`` and symbolic sizes are resolved the way torch resolved them.

A converter may also register a *check* (``converts(..., check=fn)``): ``fn(node)`` returns why
an otherwise supported operator cannot be converted with these arguments (a transposed
convolution, batch norm in training mode), so the up-front check lists it with the others.

In-place variants (``relu_``, ``add_``) use the converter of the functional op; the frontend
rebinds the mutated value. View/copy distinctions disappear: the IR has values, not storage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import (
    ATEN_CHECKS,
    ConvertContext,
    converts,
    dtype_of_torch,
    op_name,
    provenance_of,
    target_name,
)
from compiler.ir.nodes import Block, Call, Constant, Expr, If, TupleGetItem, call, collect_bindings
from compiler.ir.nodes import Tuple as IRTuple
from compiler.ir.shape_inference import broadcast_shapes
from compiler.ir.symbolic import ANY, Dim, SymExpr, dim_mul
from compiler.ir.types import DType, TensorType, TupleType, torch_dtypes

# A slice bound this large means "to the end" for strided_slice (torch uses INT64_MAX).
_TO_END = 2**63 - 1

# ----- helpers ------------------------------------------------------------------------------


def _dtype(e: Expr) -> DType:
    if not isinstance(e.ty, TensorType):
        raise FrontendError(f"expected a tensor, got a value of type {e.ty}")
    return e.ty.dtype


def _rank(e: Expr) -> int:
    if not isinstance(e.ty, TensorType) or e.ty.shape is None:
        raise FrontendError(f"expected a tensor of known rank, got {e.ty}")
    return len(e.ty.shape)


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def cast(e: Expr, dtype: DType) -> Expr:
    """``e`` converted to ``dtype`` (the same expression when it already has it)."""
    return e if _dtype(e) is dtype else call("cast", e, dtype=dtype)


def dim_tensor(d: Dim, dtype: DType = DType.int64) -> Expr:
    """A 0-d tensor holding a size; a symbolic size is read as ``arange(d, d + 1)``."""
    if isinstance(d, SymExpr):
        one = call("arange", start=d, stop=d + 1, dtype=DType.int64)
        return cast(call("reshape", one, shape=[]), dtype)
    return Constant(np.asarray(d, dtype=dtype.numpy))


def as_tensor(value: Any, dtype: DType) -> Expr:
    """A tensor argument, a Python number or a size as an expression of ``dtype``."""
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
    """Something torch.result_type accepts that promotes like ``value``."""
    if isinstance(value, Expr):
        shape = () if _rank(value) == 0 else (0,)
        return torch.empty(shape, dtype=_torch_dtype(_dtype(value)))
    if isinstance(value, SymExpr):
        return 1
    return value


def common_dtype(a: Any, b: Any) -> DType:
    """torch's type promotion of two operands (tensors, Python numbers or sizes)."""
    return dtype_of_torch(torch.result_type(_probe(a), _probe(b)))


def _binary(ctx: ConvertContext, op: str, a: Any, b: Any, dtype: DType | None = None) -> Expr:
    dtype = dtype or ctx.out_dtype
    return call(op, as_tensor(a, dtype), as_tensor(b, dtype))


def _scale(x: Expr, factor: Any) -> Expr:
    """``x * factor`` for a Python number (nothing when it is 1)."""
    if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor == 1:
        return x
    return call("multiply", x, as_tensor(factor, _dtype(x)))


def _ints(value: Any, count: int) -> list[int]:
    """A torch int-list argument (maybe a single int or shorter) as ``count`` ints."""
    if isinstance(value, (int, np.integer)):
        return [int(value)] * count
    values = [int(v) for v in value]
    if len(values) == 1 and count > 1:
        values = values * count
    return values


def _out_shape(ctx: ConvertContext) -> list[Dim]:
    shape = ctx.out_shape
    if shape is None:
        raise FrontendError(f"torch recorded no shape for {ctx.node.name}")
    return shape


# ----- identity, cast and assertions -----------------------------------------------------------


@converts(
    "aten.contiguous.default",
    "aten.clone.default",
    "aten.alias.default",
    "aten.detach.default",
    "aten.lift_fresh_copy.default",
    "aten.lift_fresh.default",
    "aten.view_as.default",
    "aten.reshape_as.default",
    "aten.resolve_conj.default",
    "aten.resolve_neg.default",
)
def _identity(ctx, node, args, kwargs):
    x = args[0]
    if op_name(node).startswith(("view_as", "reshape_as")):
        return call("reshape", x, shape=_out_shape(ctx))
    return x


def _dropout_check(node) -> str | None:
    train = _literal_arg(node, "train", False)
    p = _literal_arg(node, "p", 0.0)
    if train and p:
        return "dropout in training mode (call model.eval() before exporting)"
    return None


@converts(
    "aten.dropout.default",
    "aten.feature_dropout.default",
    "aten.alpha_dropout.default",
    "aten.feature_alpha_dropout.default",
    check=_dropout_check,
)
def _dropout(ctx, node, args, kwargs):
    return args[0]


@converts("aten.native_dropout.default", check=_dropout_check)
def _native_dropout(ctx, node, args, kwargs):
    x = args[0]
    return x, call("ones_like", x, dtype=DType.bool)


@converts(
    "aten._to_copy.default",
    "aten.to.dtype",
    "aten.to.dtype_layout",
    "aten.to.device",
    "aten.to.other",
    "aten.type_as.default",
    "aten._assert_tensor_metadata.default",
)
def _to(ctx, node, args, kwargs):
    if op_name(node).startswith("_assert_tensor_metadata"):
        return None
    return cast(args[0], ctx.out_dtype)


@converts(
    "aten._assert_scalar.default",
    "aten._assert_async.msg",
    "aten._assert_async.default",
    "aten.sym_constrain_range_for_size.default",
    "aten.sym_constrain_range.default",
    "aten._check_is_size.default",
)
def _assertion(ctx, node, args, kwargs):
    return None  # torch.export's guards on sizes; the IR's symbolic dims assume them


# ----- sizes (SymInt values) -------------------------------------------------------------------


@converts(
    "aten.sym_size.int",
    "aten.sym_numel.default",
    "operator.add",
    "operator.sub",
    "operator.mul",
    "operator.floordiv",
    "operator.mod",
    "operator.neg",
    "operator.pow",
    "operator.truediv",
    "torch.sym_max",
    "torch.sym_min",
    "torch.sym_float",
    "torch.sym_int",
    "torch.sym_not",
    "math.ceil",
    "math.floor",
)
def _size_value(ctx, node, args, kwargs):
    """Arithmetic on sizes: the value torch.export recorded, as a dim (or a plain number)."""
    val = node.meta.get("val")
    if val is None:
        raise FrontendError("torch recorded no value for this size computation")
    if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
        return ctx.dim(val)
    if isinstance(val, (torch.SymFloat, float)):
        expr = getattr(getattr(val, "node", None), "expr", val)
        try:
            return float(expr)
        except TypeError:
            return _SymbolicScalar(str(expr))
    return _SymbolicScalar(str(val))  # a SymBool, used only by torch.export's assertions


_SIZE_COMPARISONS = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}


@converts(*(f"operator.{name}" for name in _SIZE_COMPARISONS))
def _size_compare(ctx, node, args, kwargs):
    """A comparison of sizes: a Python bool when torch knows it, else a 0-d bool tensor
    computed from the sizes (a ``torch.cond`` predicate such as ``x.shape[0] > 4``)."""
    val = node.meta.get("val")
    if isinstance(val, bool):
        return val
    expr = getattr(getattr(val, "node", None), "expr", None)
    if expr is not None and expr.is_Boolean:
        return bool(expr)
    a, b = args[0], args[1]
    if not all(isinstance(v, (int, SymExpr)) and not isinstance(v, bool) for v in (a, b)):
        return _SymbolicScalar(str(val))
    op = _SIZE_COMPARISONS[target_name(node.target).split(".")[-1]]
    return call(op, dim_tensor(a), dim_tensor(b))


class _SymbolicScalar:
    """A symbolic float or bool the IR cannot hold; fine unless a tensor op needs it."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"the symbolic scalar {self.text}"


# Results of tuple-returning operators that converters do not produce (saved statistics,
# pooling indices): reading one is reported by the up-front check.
_UNSUPPORTED_RESULTS = {
    "aten._native_batch_norm_legit_no_training.default": {1: "saved mean", 2: "saved rstd"},
    "aten._native_batch_norm_legit.no_stats": {1: "saved mean", 2: "saved rstd"},
    "aten._native_batch_norm_legit.default": {1: "saved mean", 2: "saved rstd"},
    "aten.native_layer_norm.default": {1: "saved mean", 2: "saved rstd"},
    "aten.native_group_norm.default": {1: "saved mean", 2: "saved rstd"},
    "aten.max_pool2d_with_indices.default": {1: "indices"},
    "aten._scaled_dot_product_flash_attention_for_cpu.default": {1: "logsumexp"},
}


def _getitem_check(node) -> str | None:
    source, index = node.args[0], node.args[1]
    if not hasattr(source, "target") or not node.users:
        return None
    what = _UNSUPPORTED_RESULTS.get(target_name(source.target), {}).get(index)
    return f"the {what} output of {source.target}" if what else None


@converts("operator.getitem", check=_getitem_check)
def _getitem(ctx, node, args, kwargs):
    value, index = args
    if isinstance(value, Expr) and isinstance(value.ty, TupleType):
        return TupleGetItem(value, index)
    if isinstance(value, (list, tuple)):
        item = value[index]
        if item is None:
            raise FrontendError(f"output {index} of {node.args[0].name} is not supported")
        return item
    raise FrontendError(f"cannot index {value!r}")


# ----- elementwise unary -----------------------------------------------------------------------

_UNARY = {
    "relu": "relu",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "silu": "silu",
    "erf": "erf",
    "sin": "sin",
    "cos": "cos",
    "floor": "floor",
    "ceil": "ceil",
    "round": "round",
    "reciprocal": "reciprocal",
    "neg": "neg",
    "abs": "abs",
    "sign": "sign",
    "log1p": "log1p",
    "expm1": "expm1",
    "logical_not": "logical_not",
    "isnan": "isnan",
}


def _unary_converter(op: str):
    def convert(ctx, node, args, kwargs):
        x = args[0]
        float_op = op not in ("relu", "neg", "abs", "sign", "logical_not", "isnan")
        if float_op and not _dtype(x).is_float:
            x = cast(x, ctx.out_dtype)  # torch computes exp(int) etc. in the default float
        if op == "logical_not":
            x = _truth(x)
        if op in ("floor", "ceil", "round") and not _dtype(x).is_float:
            return x
        return call(op, x)

    return convert


for _torch_name, _op in _UNARY.items():
    converts(f"aten.{_torch_name}.default")(_unary_converter(_op))


@converts("aten.bitwise_not.default")
def _bitwise_not(ctx, node, args, kwargs):
    x = args[0]
    if _dtype(x) is not DType.bool:
        raise FrontendError("bitwise_not of an integer tensor is not supported (only bool)")
    return call("logical_not", x)


@converts("aten.gelu.default")
def _gelu(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    return call("gelu", a["self"], approximate=a["approximate"])


@converts("aten.leaky_relu.default")
def _leaky_relu(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    return call("leaky_relu", a["self"], alpha=float(a["negative_slope"]))


@converts("aten.hardtanh.default", "aten.relu6.default", "aten.clamp.default")
def _clamp(ctx, node, args, kwargs):
    name = op_name(node)
    a = ctx.arg(args, kwargs)
    if name == "relu6":
        lo, hi = 0.0, 6.0
    elif name == "hardtanh":
        lo, hi = a["min_val"], a["max_val"]
    else:
        lo, hi = a["min"], a["max"]
    x = cast(a["self"], ctx.out_dtype)
    return call(
        "clip",
        x,
        min=None if lo is None else float(lo),
        max=None if hi is None else float(hi),
    )


@converts("aten.clamp_min.default", "aten.clamp_max.default")
def _clamp_one(ctx, node, args, kwargs):
    x, bound = args[0], args[1]
    key = "min" if op_name(node).startswith("clamp_min") else "max"
    return call("clip", cast(x, ctx.out_dtype), **{key: float(bound)})


@converts("aten.clamp.Tensor", "aten.clamp_min.Tensor", "aten.clamp_max.Tensor")
def _clamp_tensor(ctx, node, args, kwargs):
    name = op_name(node)
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    lo = a.get("min") if name == "clamp" else (a["min"] if name == "clamp_min" else None)
    hi = a.get("max") if name == "clamp" else (a["max"] if name == "clamp_max" else None)
    if lo is not None:
        x = call("maximum", x, as_tensor(lo, ctx.out_dtype))
    if hi is not None:
        x = call("minimum", x, as_tensor(hi, ctx.out_dtype))
    return x


@converts("aten.hardsigmoid.default", "aten.hardswish.default")
def _hard(ctx, node, args, kwargs):
    x = args[0]
    dt = _dtype(x)
    gate = call(
        "clip",
        call("add", call("divide", x, as_tensor(6.0, dt)), as_tensor(0.5, dt)),
        min=0.0,
        max=1.0,
    )
    return gate if op_name(node).startswith("hardsigmoid") else call("multiply", x, gate)


@converts("aten.elu.default")
def _elu(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    dt = _dtype(x)
    neg = call("subtract", call("exp", x), as_tensor(1.0, dt))
    neg = _scale(neg, float(a["alpha"]) * float(a["scale"]))
    pos = _scale(x, float(a["scale"]))
    if float(a["input_scale"]) != 1:
        raise FrontendError("elu with input_scale != 1 is not supported")
    return call("where", call("greater", x, as_tensor(0.0, dt)), pos, neg)


@converts("aten.softplus.default")
def _softplus(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x, beta = a["self"], float(a["beta"])
    y = call("softplus", _scale(x, beta))
    y = y if beta == 1 else call("divide", y, as_tensor(beta, _dtype(x)))
    # torch returns x itself where beta * x > threshold; softplus there differs by < 1e-8
    return y


@converts("aten.square.default")
def _square(ctx, node, args, kwargs):
    x = cast(args[0], ctx.out_dtype)
    return call("multiply", x, x)


# ----- elementwise binary ----------------------------------------------------------------------


@converts("aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar")
def _add_sub(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    other = as_tensor(a["other"], dtype)
    other = _scale(other, a.get("alpha", 1))
    op = "add" if op_name(node).startswith("add") else "subtract"
    return call(op, as_tensor(a["self"], dtype), other)


@converts("aten.rsub.Tensor", "aten.rsub.Scalar")
def _rsub(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    x = _scale(as_tensor(a["self"], dtype), a.get("alpha", 1))
    return call("subtract", as_tensor(a["other"], dtype), x)


@converts("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(ctx, node, args, kwargs):
    return _binary(ctx, "multiply", args[0], args[1])


@converts("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    mode = a.get("rounding_mode")
    dtype = ctx.out_dtype
    x, y = as_tensor(a["self"], dtype), as_tensor(a["other"], dtype)
    if mode is None or (mode == "trunc" and dtype.is_int):
        return call("divide", x, y)  # integer division truncates, like torch's "trunc"
    if mode == "floor":
        return call("floor_divide", x, y)
    q = call("divide", x, y)  # float "trunc": floor toward zero
    return call("multiply", call("sign", q), call("floor", call("abs", q)))


@converts("aten.floor_divide.default", "aten.floor_divide.Scalar")
def _floor_divide(ctx, node, args, kwargs):
    return _binary(ctx, "floor_divide", args[0], args[1])


@converts("aten.remainder.Tensor", "aten.remainder.Scalar")
def _remainder(ctx, node, args, kwargs):
    return _binary(ctx, "mod", args[0], args[1])


@converts("aten.fmod.Tensor", "aten.fmod.Scalar")
def _fmod(ctx, node, args, kwargs):
    dtype = ctx.out_dtype
    a, b = as_tensor(args[0], dtype), as_tensor(args[1], dtype)
    q = call("divide", a, b)  # integer division truncates toward zero already
    if dtype.is_float:
        q = call("multiply", call("sign", q), call("floor", call("abs", q)))
    return call("subtract", a, call("multiply", q, b))  # the sign follows the dividend


@converts("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")
def _pow(ctx, node, args, kwargs):
    base, exponent = args[0], args[1]
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        b = as_tensor(base, ctx.out_dtype)
        if exponent == 1:
            return b
        if exponent == 2:
            return call("multiply", b, b)
        if exponent == 0.5 and ctx.out_dtype.is_float:
            return call("sqrt", b)
    return _binary(ctx, "power", base, exponent)


@converts(
    "aten.maximum.default",
    "aten.minimum.default",
    "aten.fmax.default",
    "aten.fmin.default",
    "aten.max.other",  # torch.max(a, b): element-wise, as maximum
    "aten.min.other",
)
def _max_min(ctx, node, args, kwargs):
    op = "maximum" if op_name(node) in ("maximum", "fmax", "max") else "minimum"
    return _binary(ctx, op, args[0], args[1])


_COMPARE = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}


def _compare_converter(op: str):
    def convert(ctx, node, args, kwargs):
        a, b = args[0], args[1]
        return _binary(ctx, op, a, b, common_dtype(a, b))

    return convert


for _torch_name, _op in _COMPARE.items():
    converts(f"aten.{_torch_name}.Tensor", f"aten.{_torch_name}.Scalar")(_compare_converter(_op))


def _truth(value: Any) -> Expr:
    """A value as a bool tensor (non-zero is true), like torch's logical ops read it."""
    if not isinstance(value, Expr):
        return as_tensor(bool(value), DType.bool)
    if _dtype(value) is DType.bool:
        return value
    return call("not_equal", value, as_tensor(0, _dtype(value)))


def _logical_converter(op: str):
    def convert(ctx, node, args, kwargs):
        return call(op, _truth(args[0]), _truth(args[1]))

    return convert


for _name in ("logical_and", "logical_or", "logical_xor"):
    converts(f"aten.{_name}.default")(_logical_converter(_name))
converts("aten.bitwise_and.Tensor", "aten.__and__.Tensor")(_logical_converter("logical_and"))
converts("aten.bitwise_or.Tensor", "aten.__or__.Tensor")(_logical_converter("logical_or"))
converts("aten.bitwise_xor.Tensor", "aten.__xor__.Tensor")(_logical_converter("logical_xor"))


def _bool_only_check(node) -> str | None:
    val = node.meta.get("val")
    if val is not None and getattr(val, "dtype", torch.bool) is not torch.bool:
        return "bitwise ops on integer tensors (only bool tensors are supported)"
    return None


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "__and__", "__or__", "__xor__"):
    ATEN_CHECKS[f"aten.{_name}.Tensor"] = _bool_only_check


@converts("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(ctx, node, args, kwargs):
    cond, x, y = args[0], args[1], args[2]
    dtype = ctx.out_dtype
    return call("where", cast(cond, DType.bool), as_tensor(x, dtype), as_tensor(y, dtype))


@converts("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(ctx, node, args, kwargs):
    x, mask, value = args[0], args[1], args[2]
    dtype = ctx.out_dtype
    return call("where", cast(mask, DType.bool), as_tensor(value, dtype), cast(x, dtype))


# ----- shapes ----------------------------------------------------------------------------------


@converts(
    "aten.view.default",
    "aten.reshape.default",
    "aten._unsafe_view.default",
    "aten.view_copy.default",
    "aten._reshape_alias.default",
    "aten.unflatten.int",
)
def _reshape(ctx, node, args, kwargs):
    x = args[0]
    shape = _out_shape(ctx)
    if ANY in shape:  # a data-dependent size (x[mask].view(-1, 4)): the rest determines it
        if shape.count(ANY) > 1:
            raise FrontendError("a reshape to a shape with several data-dependent sizes")
        shape = [-1 if d is ANY else d for d in shape]
    if isinstance(x.ty, TensorType) and x.ty.shape == tuple(shape):
        return x
    return call("reshape", x, shape=shape)


@converts("aten.flatten.using_ints")
def _flatten(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    if _rank(x) == 0:
        return call("reshape", x, shape=[1])
    return call("flatten", x, start_dim=a["start_dim"], end_dim=a["end_dim"])


@converts("aten.permute.default", "aten.permute_copy.default")
def _permute(ctx, node, args, kwargs):
    x, dims = args[0], args[1]
    rank = _rank(x)
    axes = [_axis(int(d), rank) for d in dims]
    if axes == list(range(rank)):
        return x
    return call("permute_dims", x, axes=axes)


@converts("aten.transpose.int", "aten.swapaxes.default", "aten.swapdims.default")
def _transpose(ctx, node, args, kwargs):
    x, d0, d1 = args[0], args[1], args[2]
    rank = _rank(x)
    d0, d1 = _axis(int(d0), rank), _axis(int(d1), rank)
    if d0 == d1:
        return x
    axes = list(range(rank))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return call("permute_dims", x, axes=axes)


@converts("aten.t.default", "aten.numpy_T.default")
def _t(ctx, node, args, kwargs):
    x = args[0]
    if _rank(x) < 2:
        return x
    return call("permute_dims", x, axes=list(reversed(range(_rank(x)))))


@converts("aten.unsqueeze.default")
def _unsqueeze(ctx, node, args, kwargs):
    return call("unsqueeze", args[0], axes=[int(args[1])])


@converts("aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default")
def _squeeze(ctx, node, args, kwargs):
    x = args[0]
    rank = _rank(x)
    out_rank = len(_out_shape(ctx))
    if out_rank == rank:
        return x  # torch's squeeze of a dim whose size is not 1 does nothing
    if len(args) > 1:
        dims = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
        axes = [a for a in (_axis(int(d), rank) for d in dims) if x.ty.shape[a] == 1]
    else:
        axes = [i for i, d in enumerate(x.ty.shape) if d == 1]
    return call("squeeze", x, axes=axes)


@converts(
    "aten.expand.default",
    "aten.expand_copy.default",
    "aten.expand_as.default",
    "aten.broadcast_to.default",
)
def _expand(ctx, node, args, kwargs):
    x = args[0]
    shape = _out_shape(ctx)
    if x.ty.shape == tuple(shape):
        return x
    return call("expand", x, shape=shape)


@converts("aten.repeat.default")
def _repeat(ctx, node, args, kwargs):
    x, reps = args[0], list(args[1])
    if all(isinstance(r, int) for r in reps):
        return call("tile", x, repeats=[int(r) for r in reps])
    # a symbolic count (``ids.repeat(batch, 1)``): tile's counts are static, so each axis of
    # size s repeated r times is (1, s) broadcast to (r, s) and merged into r * s
    shape = x.ty.shape if isinstance(x.ty, TensorType) else None
    if shape is None or ANY in shape:
        raise FrontendError("repeat by a symbolic count of a tensor of unknown shape")
    shape = (1,) * (len(reps) - len(shape)) + tuple(shape)
    split = [d for s in shape for d in (1, s)]
    wide = [d for r, s in zip(reps, shape, strict=True) for d in (r, s)]
    y = call("expand", call("reshape", x, shape=split), shape=wide)
    return call("reshape", y, shape=_out_shape(ctx))


@converts("aten.repeat_interleave.self_int")
def _repeat_interleave(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    return call("repeat", a["self"], repeats=int(a["repeats"]), axis=a["dim"])


@converts("aten.meshgrid.default", "aten.meshgrid.indexing")
def _meshgrid(ctx, node, args, kwargs):
    """``torch.meshgrid``: each 0-d or 1-d input broadcast over the grid of all; ``xy``
    indexing swaps the first two grid dims (torch's default is ``ij``)."""
    a = ctx.arg(args, kwargs)
    tensors, indexing = list(a["tensors"]), a.get("indexing") or "ij"
    if indexing not in ("ij", "xy"):
        raise FrontendError(f"meshgrid indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if _rank(t) > 1:
            raise FrontendError(f"meshgrid takes 0-d or 1-d tensors, got {t.ty}")
    flat = [call("reshape", t, shape=[1]) if _rank(t) == 0 else t for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    order = list(range(len(flat)))
    if swap:  # the grid of (b, a, c, ...) with each input at its place in that order
        order[0], order[1] = 1, 0
    shape = [flat[i].ty.shape[0] for i in order]
    out = []
    for i, t in enumerate(flat):
        view = [1] * len(flat)
        view[order.index(i)] = t.ty.shape[0]
        out.append(call("broadcast_to", call("reshape", t, shape=view), shape=shape))
    return out


@converts("aten.cat.default", "aten.concat.default", "aten.concatenate.default")
def _cat(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    # torch skips 1-D empty tensors (the legacy "empty" tensor) in cat
    tensors = [cast(t, dtype) for t in a["tensors"] if t.ty.shape != (0,)]
    if len(tensors) == 1:
        return tensors[0]
    return Call("concat", tensors, {"axis": int(a["dim"])})


@converts("aten.stack.default")
def _stack(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    tensors = a["tensors"]
    rank = _rank(tensors[0]) + 1
    axis = _axis(int(a["dim"]), rank)
    parts = [call("unsqueeze", cast(t, dtype), axes=[axis]) for t in tensors]
    return parts[0] if len(parts) == 1 else Call("concat", parts, {"axis": axis})


def _piece_sizes(ctx: ConvertContext, axis: int) -> list[Dim]:
    vals = ctx.node.meta.get("val")
    return [ctx.dim(v.shape[axis]) for v in vals]


def _split_by_sizes(x: Expr, axis: int, sizes: Sequence[Dim]) -> Expr | list[Expr]:
    """Pieces of ``x`` along ``axis``: one split op (a tuple value) when the split points are
    known numbers, else one take of an arange per piece."""
    points: list[Dim] = []
    total: Dim = 0
    for s in sizes[:-1]:
        total = total + s
        points.append(total)
    if all(isinstance(p, int) for p in points):
        if len(sizes) == 1:
            return [x]
        return call("split", x, indices_or_sections=points, axis=axis)
    pieces, start = [], 0
    for s in sizes:
        pieces.append(_slice_sym(x, axis, start, start + s, 1))
        start = start + s
    return pieces


@converts(
    "aten.split.Tensor",
    "aten.split_with_sizes.default",
    "aten.chunk.default",
    "aten.tensor_split.sections",
    "aten.tensor_split.indices",
    "aten.unsafe_split.Tensor",
    "aten.split_with_sizes_copy.default",
)
def _split(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = _axis(int(a["dim"]), _rank(x))
    return _split_by_sizes(x, axis, _piece_sizes(ctx, axis))


@converts("aten.unbind.int")
def _unbind(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = _axis(int(a["dim"]), _rank(x))
    n = x.ty.shape[axis]
    if not isinstance(n, int):
        raise FrontendError("unbind along a symbolic dim is not supported")
    pieces = _split_by_sizes(x, axis, [1] * n)
    if isinstance(pieces, list):
        return [call("squeeze", p, axes=[axis]) for p in pieces]
    return [call("squeeze", TupleGetItem(pieces, i), axes=[axis]) for i in range(n)]


def _slice_sym(x: Expr, axis: int, start: Dim, end: Dim, step: int) -> Expr:
    """``x[start:end:step]`` along ``axis`` with symbolic bounds (assumed inside the dim, as
    torch.export's guards say): a take of the indices ``arange(start, end, step)``."""
    idx = call("arange", start=start, stop=end, step=step, dtype=DType.int64)
    return call("take", x, idx, axis=axis)


@converts("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    rank = _rank(x)
    axis = _axis(int(a["dim"]), rank)
    start = 0 if a["start"] is None else a["start"]
    end = _TO_END if a["end"] is None else a["end"]
    step = int(a["step"])
    size = x.ty.shape[axis]
    if isinstance(start, int) and isinstance(end, int):
        if isinstance(size, int):  # resolve the bounds so the IR shows plain indices
            start, end, _ = slice(start, end, step).indices(size)
            if start == 0 and end == size and step == 1:
                return x
        elif start == 0 and step == 1 and end >= _TO_END:
            return x
        strides = None if step == 1 else [step]
        return call("strided_slice", x, begin=[start], end=[end], strides=strides, axes=[axis])
    if isinstance(end, SymExpr) and end == size and start == 0 and step == 1:
        return x
    # a symbolic bound: count a negative int bound from the end, then take the indices
    start = size + start if isinstance(start, int) and start < 0 else start
    end = size if isinstance(end, int) and end >= _TO_END else end
    end = size + end if isinstance(end, int) and end < 0 else end
    return _slice_sym(x, axis, start, end, step)


def _positions(size: Dim) -> Expr:
    """``0 .. size-1`` (i64) along an axis of ``size``, static or symbolic."""
    return call("arange", start=0, stop=size, dtype=DType.int64)


def _along(v: Expr, axis: int, rank: int) -> Expr:
    """A 1-D ``v`` shaped to broadcast along ``axis`` of a rank-``rank`` tensor."""
    shape: list[Dim] = [1] * rank
    shape[axis] = v.ty.shape[0]
    return call("reshape", v, shape=shape)


@converts("aten.slice_scatter.default")
def _slice_scatter(ctx, node, args, kwargs):
    """``x`` with ``x[start:end:step]`` along ``dim`` replaced by ``src`` (what torch's
    functionalisation makes of a write into a slice): a ``where`` over the positions of the
    axis, reading ``src`` at ``(p - start) // step``."""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    src = cast(a["src"], _dtype(x))
    rank = _rank(x)
    axis = _axis(int(a["dim"]), rank)
    size = x.ty.shape[axis]
    step = int(a["step"])
    start = 0 if a["start"] is None else a["start"]
    end = _TO_END if a["end"] is None else a["end"]
    if isinstance(size, int) and isinstance(start, int) and isinstance(end, int):
        start, end, _ = slice(start, end, step).indices(size)
    else:  # a symbolic size or bound: count a negative int from the end (as ``slice``)
        start = size + start if isinstance(start, int) and start < 0 else start
        end = size if isinstance(end, int) and end >= _TO_END else end
        end = size + end if isinstance(end, int) and end < 0 else end
    count = src.ty.shape[axis]
    if isinstance(count, int) and count == 0:
        return x
    p = _positions(size)
    offset = call("subtract", p, dim_tensor(start))
    inside = call(
        "logical_and",
        call("greater_equal", p, dim_tensor(start)),
        call("less", p, dim_tensor(end)),
    )
    if step != 1:
        on_step = call("equal", call("mod", offset, as_tensor(step, DType.int64)),
                       as_tensor(0, DType.int64))  # fmt: skip
        inside = call("logical_and", inside, on_step)
        offset = call("floor_divide", offset, as_tensor(step, DType.int64))
    last = call("subtract", dim_tensor(count), as_tensor(1, DType.int64))
    index = call("minimum", call("maximum", offset, as_tensor(0, DType.int64)), last)
    spread = call("take", src, index, axis=axis)
    return call("where", _along(inside, axis, rank), spread, x)


@converts("aten.select_scatter.default")
def _select_scatter(ctx, node, args, kwargs):
    """``x`` with ``x.select(dim, index)`` replaced by ``src``."""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    rank = _rank(x)
    axis = _axis(int(a["dim"]), rank)
    size = x.ty.shape[axis]
    index = a["index"]
    if isinstance(index, int) and index < 0:
        index = size + index
    src = call("unsqueeze", cast(a["src"], _dtype(x)), axes=[axis])
    mask = call("equal", _positions(size), dim_tensor(index))
    return call("where", _along(mask, axis, rank), src, x)


@converts("aten.copy.default")
def _copy(ctx, node, args, kwargs):
    """``x.copy_(src)`` made functional: ``src`` in ``x``'s dtype and shape."""
    a = ctx.arg(args, kwargs)
    x, src = a["self"], a["src"]
    src = as_tensor(src, _dtype(x))
    if src.ty.shape != x.ty.shape:
        src = call("broadcast_to", src, shape=list(x.ty.shape))
    return src


@converts("aten.diff.default")
def _diff(ctx, node, args, kwargs):
    """``torch.diff``: ``x[1:] - x[:-1]`` along ``dim``, ``n`` times, after ``prepend`` and
    ``append`` are joined on (for bool, ``x[1:] != x[:-1]``: torch's logical xor)."""
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    x = cast(a["self"], dtype)
    axis = _axis(int(a["dim"]), _rank(x))
    parts = [cast(a["prepend"], dtype)] if a.get("prepend") is not None else []
    parts.append(x)
    if a.get("append") is not None:
        parts.append(cast(a["append"], dtype))
    if len(parts) > 1:
        x = Call("concat", parts, {"axis": axis})
    for _ in range(int(a["n"])):
        size = x.ty.shape[axis]
        if isinstance(size, int):
            hi = call("strided_slice", x, begin=[1], end=[size], axes=[axis])
            lo = call("strided_slice", x, begin=[0], end=[size - 1], axes=[axis])
        else:
            hi, lo = _slice_sym(x, axis, 1, size, 1), _slice_sym(x, axis, 0, size - 1, 1)
        x = call("not_equal" if dtype is DType.bool else "subtract", hi, lo)
    return x


@converts("aten.narrow.default", "aten.narrow_copy.default")
def _narrow(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = _axis(int(a["dim"]), _rank(x))
    start, length = a["start"], a["length"]
    if isinstance(start, int) and isinstance(length, int):
        if start < 0:
            start = start + x.ty.shape[axis]
        if isinstance(start, int):
            return call("strided_slice", x, begin=[start], end=[start + length], axes=[axis])
    return _slice_sym(x, axis, start, start + length, 1)


@converts("aten.select.int", "aten.select_copy.int")
def _select(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = _axis(int(a["dim"]), _rank(x))
    index = a["index"]
    if isinstance(index, int):
        size = x.ty.shape[axis]
        if isinstance(size, int) and -size <= index < 0:
            index += size
        end = index + 1 if index != -1 else _TO_END
        piece = call("strided_slice", x, begin=[index], end=[end], axes=[axis])
        return call("squeeze", piece, axes=[axis])
    return call("take", x, dim_tensor(index), axis=axis)


@converts("aten.flip.default")
def _flip(ctx, node, args, kwargs):
    x, dims = args[0], args[1]
    rank = _rank(x)
    axes = [_axis(int(d), rank) for d in dims]
    n = len(axes)
    return call("strided_slice", x, begin=[-1] * n, end=[-_TO_END] * n, strides=[-1] * n, axes=axes)


@converts("aten.roll.default")
def _roll(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    shifts, dims = list(a["shifts"]), list(a["dims"])
    if not dims:
        flat = call("reshape", x, shape=[-1])
        out = _roll_axis(flat, 0, int(shifts[0]))
        return call("reshape", out, shape=list(x.ty.shape))
    for s, d in zip(shifts, dims, strict=True):
        x = _roll_axis(x, _axis(int(d), _rank(x)), int(s))
    return x


def _roll_axis(x: Expr, axis: int, shift: int) -> Expr:
    n = x.ty.shape[axis]
    if not isinstance(n, int):
        raise FrontendError("roll along a symbolic dim is not supported")
    shift %= max(n, 1)
    if shift == 0:
        return x
    tail = call("strided_slice", x, begin=[n - shift], end=[n], axes=[axis])
    head = call("strided_slice", x, begin=[0], end=[n - shift], axes=[axis])
    return call("concat", tail, head, axis=axis)


def _torch_pads(pad: Sequence[int], rank: int) -> list[int]:
    """torch's pad list (last dim first, (begin, end) pairs) in ONNX order (begins, ends)."""
    pad = [int(p) for p in pad]
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise FrontendError(f"pad {pad} does not fit a rank-{rank} input")
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i] = pad[2 * i]
        ends[rank - 1 - i] = pad[2 * i + 1]
    return begins + ends


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def _pad_check(node) -> str | None:
    mode = _literal_arg(node, "mode", "constant")
    if mode not in _PAD_MODES:
        return f"pad mode {mode!r}"
    return None


@converts("aten.constant_pad_nd.default", "aten.pad.default", check=_pad_check)
def _pad(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    mode = _PAD_MODES[a.get("mode") or "constant"]
    value = a.get("value")
    pads = _torch_pads(a["pad"], _rank(x))
    return call("pad", x, pads=pads, mode=mode, value=float(value or 0.0))


for _nd in (1, 2, 3):
    for _kind, _mode in (("reflection", "reflect"), ("replication", "edge")):

        def _pad_nd(ctx, node, args, kwargs, _mode=_mode):
            x, padding = args[0], args[1]
            return call("pad", x, pads=_torch_pads(padding, _rank(x)), mode=_mode)

        converts(f"aten.{_kind}_pad{_nd}d.default")(_pad_nd)


# ----- tensor factories ------------------------------------------------------------------------


@converts("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    start = a.get("start", 0)
    end = a["end"]
    step = a.get("step", 1)
    for v in (start, end, step):
        if isinstance(v, _SymbolicScalar):
            raise FrontendError(f"arange bound {v} is not supported")
    return call("arange", start=start, stop=end, step=step, dtype=ctx.out_dtype)


def _fill_value(value: Any) -> float:
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.number)):
        return float(value)
    raise FrontendError(f"fill value {value!r} must be a number")


@converts(
    "aten.full.default",
    "aten.zeros.default",
    "aten.ones.default",
    "aten.empty.memory_format",
    "aten.new_full.default",
    "aten.new_zeros.default",
    "aten.new_ones.default",
    "aten.new_empty.default",
    "aten.scalar_tensor.default",
)
def _full(ctx, node, args, kwargs):
    name = op_name(node)
    shape = _out_shape(ctx)
    dtype = ctx.out_dtype
    if name in ("full", "new_full"):
        value = ctx.arg(args, kwargs)["fill_value"]
        if isinstance(value, Expr):
            return call("expand", cast(value, dtype), shape=shape)
        return call("full", shape=shape, value=_fill_value(value), dtype=dtype)
    if name == "scalar_tensor":
        return as_tensor(args[0], dtype)
    if name in ("ones", "new_ones"):
        return call("ones", shape=shape, dtype=dtype)
    return call("zeros", shape=shape, dtype=dtype)  # empty: any value will do; zeros is one


@converts(
    "aten.full_like.default",
    "aten.zeros_like.default",
    "aten.ones_like.default",
    "aten.empty_like.default",
)
def _like(ctx, node, args, kwargs):
    name = op_name(node)
    x = args[0]
    dtype = ctx.out_dtype
    if name == "full_like":
        value = ctx.arg(args, kwargs)["fill_value"]
        return call("full_like", x, value=_fill_value(value), dtype=dtype)
    op = "ones_like" if name == "ones_like" else "zeros_like"
    return call(op, x, dtype=dtype)


@converts("aten.fill.Scalar", "aten.fill.Tensor", "aten.zero.default")
def _fill(ctx, node, args, kwargs):
    x = args[0]
    if op_name(node).startswith("zero"):
        return call("zeros_like", x)
    value = args[1]
    if isinstance(value, Expr):
        return call("expand", cast(value, _dtype(x)), shape=list(x.ty.shape))
    return call("full_like", x, value=_fill_value(value))


@converts("aten.tril.default", "aten.triu.default")
def _triangle(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    op = op_name(node)
    return call(op, a["self"], k=a["diagonal"])


@converts("aten.one_hot.default")
def _one_hot(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    depth = _out_shape(ctx)[-1]
    if not isinstance(depth, int):
        raise FrontendError("one_hot needs num_classes")
    return call("one_hot", a["self"], depth=depth, dtype=ctx.out_dtype)


# ----- reductions -------------------------------------------------------------------------------


def _reduce_axes(dims: Any, rank: int) -> list[int] | None:
    if dims is None:
        return None
    if isinstance(dims, int):
        dims = [dims]
    dims = [_axis(int(d), rank) for d in dims]
    return dims or None  # torch reads [] as every axis


@converts(
    "aten.sum.dim_IntList",
    "aten.sum.default",
    "aten.mean.dim",
    "aten.mean.default",
    "aten.prod.dim_int",
    "aten.prod.default",
    "aten.amax.default",
    "aten.amin.default",
    "aten.max.default",
    "aten.min.default",
)
def _reduce(ctx, node, args, kwargs):
    name = op_name(node)
    a = ctx.arg(args, kwargs)
    x = a["self"]
    rank = _rank(x)
    dims = a.get("dim")
    keepdim = bool(a.get("keepdim", False))
    axes = _reduce_axes(dims, rank)
    op = {"amax": "max", "amin": "min"}.get(name, name)
    if name in ("sum", "mean", "prod"):
        x = cast(x, ctx.out_dtype)
    if rank == 0:
        return x
    return call(op, x, axes=axes, keepdims=keepdim)


@converts(
    "aten.any.dim",
    "aten.any.dims",
    "aten.any.default",
    "aten.all.dim",
    "aten.all.dims",
    "aten.all.default",
)
def _any_all(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    x = _truth(x)
    if _rank(x) == 0:
        return x
    op = "max" if op_name(node).startswith("any") else "min"
    axes = _reduce_axes(a.get("dim"), _rank(x))
    return call(op, x, axes=axes, keepdims=bool(a.get("keepdim", False)))


@converts("aten.max.dim", "aten.min.dim")
def _max_dim(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    axis = _axis(int(a["dim"]), _rank(x))
    keepdim = bool(a["keepdim"])
    name = op_name(node)
    values = call(name, x, axes=[axis], keepdims=keepdim)
    indices = call("arg" + name, x, axis=axis, keepdims=keepdim)
    return values, indices


@converts("aten.argmax.default", "aten.argmin.default")
def _argmax(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    op = op_name(node)
    dim = a["dim"]
    return call(op, x, axis=None if dim is None else int(dim), keepdims=bool(a["keepdim"]))


def _correction(a: dict) -> float:
    """What torch's var / std subtract from N: ``correction`` (default 1) or ``unbiased``."""
    if "correction" in a:
        return 1.0 if a["correction"] is None else float(a["correction"])
    return 1.0 if a.get("unbiased", True) else 0.0


@converts(
    "aten.var.correction",
    "aten.var.dim",
    "aten.var.default",
    "aten.std.correction",
    "aten.std.dim",
    "aten.std.default",
    "aten.var_mean.correction",
    "aten.var_mean.dim",
    "aten.var_mean.default",
    "aten.std_mean.correction",
    "aten.std_mean.dim",
    "aten.std_mean.default",
)
def _var(ctx, node, args, kwargs):
    name = op_name(node)
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    axes = _reduce_axes(a.get("dim"), _rank(x))
    keep = bool(a.get("keepdim", False))
    op = "variance" if name.startswith("var") else "std"
    spread = call(op, x, axes=axes, keepdims=keep, correction=_correction(a))
    if name.endswith("_mean"):
        return spread, call("mean", x, axes=axes, keepdims=keep)
    return spread


@converts("aten.cumsum.default")
def _cumsum(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    return call("cumsum", x, axis=int(a["dim"]))


@converts("aten.logsumexp.default")
def _logsumexp(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    axes = _reduce_axes(a["dim"], _rank(x))
    keep = bool(a["keepdim"])
    top = call("max", x, axes=axes, keepdims=True)
    total = call("sum", call("exp", call("subtract", x, top)), axes=axes, keepdims=keep)
    top = top if keep else call("squeeze", top, axes=axes or list(range(_rank(x))))
    return call("add", call("log", total), top)


@converts("aten.linalg_vector_norm.default")
def _vector_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = cast(a["self"], ctx.out_dtype)
    if float(a["ord"]) != 2:
        raise FrontendError(f"vector norm of order {a['ord']} is not supported (only 2)")
    axes = _reduce_axes(a["dim"], _rank(x))
    total = call("sum", call("multiply", x, x), axes=axes, keepdims=bool(a["keepdim"]))
    return call("sqrt", total)


@converts(
    "aten.softmax.int", "aten._softmax.default", "aten.log_softmax.int", "aten._log_softmax.default"
)
def _softmax(ctx, node, args, kwargs):
    op = "log_softmax" if "log_softmax" in op_name(node) else "softmax"
    x = cast(args[0], ctx.out_dtype)
    return call(op, x, axis=int(args[1]))


# ----- matrix products ------------------------------------------------------------------------


@converts(
    "aten.matmul.default",
    "aten.mm.default",
    "aten.bmm.default",
    "aten.mv.default",
    "aten.dot.default",
)
def _matmul(ctx, node, args, kwargs):
    return call("matmul", args[0], args[1])


@converts("aten.linear.default")
def _linear(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    operands = [a["input"], a["weight"]] + ([a["bias"]] if a["bias"] is not None else [])
    return Call("linear", operands)


@converts("aten.addmm.default", "aten.baddbmm.default", "aten.addmv.default")
def _addmm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    names = {"addmm": ("mat1", "mat2"), "baddbmm": ("batch1", "batch2"), "addmv": ("mat", "vec")}
    lhs, rhs = names[op_name(node)]
    product = _scale(call("matmul", a[lhs], a[rhs]), a["alpha"])
    beta = a["beta"]
    if isinstance(beta, (int, float)) and beta == 0:
        return product
    return call("add", _scale(a["self"], beta), product)


# ----- convolution and pooling -------------------------------------------------------------------


def _conv_check(node) -> str | None:
    name = str(node.target)
    if "convolution" in name and _literal_arg(node, "transposed", False):
        return "transposed convolution"
    weight = node.args[1].meta.get("val") if len(node.args) > 1 else None
    if weight is not None and weight.dim() not in (3, 4):
        return f"{weight.dim() - 2}-D convolution (only 1-D and 2-D)"
    return None


def _conv_padding(padding: Any, nd: int, kernel: Sequence[Dim], dilation: Sequence[int]):
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * (2 * nd)
        if padding != "same":
            raise FrontendError(f"conv padding {padding!r} is not supported")
        total = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
        return [t // 2 for t in total] + [t - t // 2 for t in total]
    pads = _ints(padding, nd)
    return pads + pads


@converts(
    "aten.conv1d.default",
    "aten.conv2d.default",
    "aten.conv1d.padding",
    "aten.conv2d.padding",
    "aten.convolution.default",
    "aten._convolution.default",
    check=_conv_check,
)
def _conv(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x, w, b = a["input"], a["weight"], a["bias"]
    nd = _rank(w) - 2
    strides = _ints(a["stride"], nd)
    dilation = _ints(a["dilation"], nd)
    padding = _conv_padding(a["padding"], nd, w.ty.shape[2:], dilation)
    unbatched = _rank(x) == nd + 1
    if unbatched:
        x = call("unsqueeze", x, axes=[0])
    operands = [x, w] + ([b] if b is not None else [])
    out = Call(
        f"conv{nd}d",
        operands,
        {"strides": strides, "padding": padding, "dilation": dilation, "groups": a["groups"]},
    )
    return call("squeeze", out, axes=[0]) if unbatched else out


def _pool_input(x: Expr) -> tuple[Expr, bool]:
    if _rank(x) == 3:
        return call("unsqueeze", x, axes=[0]), True
    return x, False


def _pooled(op: str, x: Expr, **attrs) -> Expr:
    """``op`` over a batched or unbatched (C, H, W) input."""
    x, unbatched = _pool_input(x)
    out = call(op, x, **attrs)
    return call("squeeze", out, axes=[0]) if unbatched else out


def _window_counts(size: int, kernel: int, stride: int, pad: int, out: int) -> np.ndarray:
    """How many elements of the padded input (not of the ceil_mode overhang) each window
    along one axis holds: torch's divisor with count_include_pad."""
    starts = np.arange(out) * stride - pad
    return np.minimum(starts + kernel, size + pad) - starts


def _pool_nd(a: dict, kind: str, nd: int) -> Expr:
    """``max_pool{nd}d`` / ``avg_pool{nd}d`` (batched or not) from the 2-D IR ops: 1-D pools an
    (N, C, 1, W) view; 3-D is separable (a window max, and an average whose divisor is a
    product of per-axis counts, in torch as here): a 2-D pool over (H, W) of an
    (N, C*D, H, W) view, then one with a (kd, 1) window over an (N, C, D, Ho*Wo) view.
    ``divisor_override`` scales the count_include_pad average by count / divisor."""
    x = a["self"]
    kernel = _ints(a["kernel_size"], nd)
    stride = _ints(a["stride"], nd) if a["stride"] not in (None, []) else kernel
    padding = _ints(a["padding"], nd)
    dilation = _ints(a["dilation"], nd) if kind == "max" else [1] * nd
    ceil = bool(a["ceil_mode"])
    divisor = a.get("divisor_override") if kind == "avg" else None
    # with divisor_override torch divides the window sum: the count_include_pad average
    # times its count
    include = kind == "max" or bool(a["count_include_pad"]) or divisor is not None
    op = f"{kind}_pool2d"
    unbatched = _rank(x) == nd + 1
    if _rank(x) not in (nd + 1, nd + 2):
        raise FrontendError(f"{op[:-2]}{nd}d needs a {nd + 1}-D or {nd + 2}-D input, got {x.ty}")
    if unbatched:
        x = call("unsqueeze", x, axes=[0])

    def pool2d(y: Expr, k, s, p, d) -> Expr:
        attrs = {"dilation": list(d)} if kind == "max" else {"count_include_pad": include}
        return call(
            op, y, pool_size=list(k), strides=list(s), padding=[*p, *p], ceil_mode=ceil, **attrs
        )

    if nd == 1:
        y = pool2d(call("unsqueeze", x, axes=[2]), [1, *kernel], [1, *stride], [0, *padding],
                   [1, *dilation])  # fmt: skip
        y = call("squeeze", y, axes=[2])
    elif nd == 2:
        y = pool2d(x, kernel, stride, padding, dilation)
    else:
        n, c, d, h, w = x.ty.shape
        y = call("reshape", x, shape=[n, dim_mul(c, d), h, w])
        y = pool2d(y, kernel[1:], stride[1:], padding[1:], dilation[1:])
        ho, wo = y.ty.shape[2:]
        y = call("reshape", y, shape=[n, c, d, dim_mul(ho, wo)])
        y = pool2d(y, [kernel[0], 1], [stride[0], 1], [padding[0], 0], [dilation[0], 1])
        y = call("reshape", y, shape=[n, c, y.ty.shape[2], ho, wo])
    if divisor is not None:
        sizes, outs = x.ty.shape[2:], y.ty.shape[2:]
        if not all(isinstance(v, int) for v in (*sizes, *outs)):
            raise FrontendError(f"avg_pool{nd}d with divisor_override on symbolic spatial dims")
        count = np.ones(())
        for k in range(nd):
            count = np.multiply.outer(
                count, _window_counts(sizes[k], kernel[k], stride[k], padding[k], outs[k])
            )
        y = call("multiply", y, Constant((count / float(divisor)).astype(_dtype(y).numpy)))
    return call("squeeze", y, axes=[0]) if unbatched else y


@converts(
    "aten.max_pool1d.default",
    "aten.max_pool2d.default",
    "aten.max_pool3d.default",
    "aten.max_pool2d_with_indices.default",
    "aten.max_pool3d_with_indices.default",
)
def _max_pool(ctx, node, args, kwargs):
    name = op_name(node)
    out = _pool_nd(ctx.arg(args, kwargs), "max", int(name[len("max_pool")]))
    if "with_indices" in name:
        return out, None  # the indices are not supported; using them is an error
    return out


@converts("aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default")
def _avg_pool(ctx, node, args, kwargs):
    return _pool_nd(ctx.arg(args, kwargs), "avg", int(op_name(node)[len("avg_pool")]))


@converts("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default")
def _adaptive_avg_pool2d(ctx, node, args, kwargs):
    return _pooled("adaptive_avg_pool2d", args[0], output_size=_ints(args[1], 2))


@converts("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def _upsample_nearest2d(ctx, node, args, kwargs):
    """Nearest-neighbour resizing as a take of computed source rows and columns (torch's
    ``floor(dst * scale)`` with ``scale = in / out``, or ``1 / scale_factor`` when given)."""
    a = ctx.arg(args, kwargs)
    x = a["input"]
    out = _out_shape(ctx)[2:]
    factors = a.get("scale_factors") or [a.get("scales_h"), a.get("scales_w")]
    for axis, (size, n) in enumerate(zip(x.ty.shape[2:], out, strict=True), start=2):
        if not (isinstance(size, int) and isinstance(n, int)):
            raise FrontendError("nearest upsampling of symbolic sizes is not supported")
        factor = factors[axis - 2] if factors and len(factors) > axis - 2 else None
        scale = np.float32(1.0 / factor if factor else size / n)
        index = np.minimum(
            np.floor(np.arange(n, dtype=np.float32) * scale).astype(np.int64), size - 1
        )
        if n != size or np.any(index != np.arange(n)):
            x = call("take", x, Constant(index), axis=axis)
    return x


def _resize_2d(ctx, args, kwargs) -> tuple:
    """What torch's 2-D upsampling ops say: (input, sizes, scales or None, the coordinate
    transformation): scales only when every factor is given and align_corners is off."""
    a = ctx.arg(args, kwargs)
    x = a["input"] if "input" in a else a["self"]
    factors = a.get("scale_factors") or [a.get("scales_h"), a.get("scales_w")]
    scales = None
    if not a["align_corners"] and factors and all(f is not None for f in factors):
        scales = [1.0, 1.0, *(float(f) for f in factors)]
    how = "align_corners" if a["align_corners"] else "half_pixel"
    sizes = [*x.ty.shape[:2], *_out_shape(ctx)[2:]]
    return x, sizes, scales, how


@converts("aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default")
def _upsample_bilinear2d(ctx, node, args, kwargs):
    """Bilinear resizing of the last two dims. torch maps ``dst`` to ``dst * (in-1)/(out-1)``
    with align_corners, else to ``(dst + 0.5) * scale - 0.5`` clamped at 0 (ONNX half_pixel,
    not pytorch_half_pixel, which differs for an output of size 1), where ``scale`` is
    ``1 / scale_factor`` when one is given, else ``in / out``."""
    x, sizes, scales, how = _resize_2d(ctx, args, kwargs)
    return call(
        "resize", x, sizes=sizes, scales=scales, mode="linear", coordinate_transformation_mode=how
    )


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """The cubic convolution kernel (Keys) at distances ``|d|``, coefficient ``a``."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _resample_scale(size: int, out: int, align_corners: bool, factor) -> float:
    """torch's area_pixel_compute_scale: input pixels per output pixel."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / float(factor) if factor is not None and factor > 0 else size / out


def _antialias_taps(size: int, out: int, align_corners: bool, factor, mode: str) -> tuple:
    """torch's antialiased resampling along one axis (``_upsample_*_aa``, Pillow's): the
    filter (triangle, or cubic with a = -0.5) stretched by the scale when downsampling,
    over the input positions within its support around ``scale * (dst + 0.5)``, the
    weights normalised to sum 1. Positions past the taps of a row get weight 0."""
    scale = _resample_scale(size, out, align_corners, factor)
    radius = 1.0 if mode == "linear" else 2.0
    support = radius * scale if scale >= 1.0 else radius
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    rows = []
    for i in range(out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), size)
        d = (np.arange(lo, hi) - center + 0.5) * invscale
        w = np.maximum(0.0, 1.0 - np.abs(d)) if mode == "linear" else _cubic(d, -0.5)
        total = w.sum()
        rows.append((np.arange(lo, hi), w / total if total != 0 else w))
    taps = max(1, max(len(r[0]) for r in rows))
    index = np.zeros((out, taps), np.int64)
    weights = np.zeros((out, taps))
    for i, (pos, w) in enumerate(rows):
        index[i, : len(pos)], weights[i, : len(pos)] = pos, w
        index[i, len(pos) :] = pos[-1] if len(pos) else 0
    return index, weights


def _resample(x: Expr, axis: int, index: np.ndarray, weights: np.ndarray) -> Expr:
    """``sum_k x[..., index[i, k], ...] * weights[i, k]`` along ``axis``: a take of the taps,
    a product and a sum over them (the form ONNX Resize's cubic mode is composed in)."""
    dtype = _dtype(x)
    gathered = call("take", x, Constant(index), axis=axis)  # [..., out, K, ...]
    tail = _rank(x) - axis - 1
    w = Constant(weights.reshape(weights.shape + (1,) * tail).astype(dtype.numpy))
    return call("sum", call("multiply", gathered, w), axes=[axis + 1], keepdims=False)


@converts("aten.upsample_bicubic2d.vec", "aten.upsample_bicubic2d.default")
def _upsample_bicubic2d(ctx, node, args, kwargs):
    """Bicubic resizing of the last two dims: ``resize`` in cubic mode, as ONNX's Resize with
    torch's coefficient -0.75, taps clamped into the input (exclude_outside off) and
    torch's source positions: ``(dst + 0.5) * scale - 0.5`` (not clamped for cubic, so
    ``half_pixel`` even for an output of size 1), or align_corners; ``scale`` is ``1 /
    scale_factor`` when one is given, else ``in / out``."""
    x, sizes, scales, how = _resize_2d(ctx, args, kwargs)
    return call(
        "resize",
        x,
        sizes=sizes,
        scales=scales,
        mode="cubic",
        coordinate_transformation_mode=how,
        cubic_coeff_a=-0.75,
        exclude_outside=False,
    )


@converts(
    "aten._upsample_bicubic2d_aa.vec",
    "aten._upsample_bicubic2d_aa.default",
    "aten._upsample_bilinear2d_aa.vec",
    "aten._upsample_bilinear2d_aa.default",
)
def _upsample_taps(ctx, node, args, kwargs):
    """Antialiased bicubic and bilinear resizing of the last two dims, one axis at a time,
    with torch's taps and weights computed at import (static spatial sizes)."""
    a = ctx.arg(args, kwargs)
    x = a["input"] if "input" in a else a["self"]
    name = op_name(node)
    factors = a.get("scale_factors") or [a.get("scales_h"), a.get("scales_w")]
    align = bool(a["align_corners"])
    out = _out_shape(ctx)
    dtype = _dtype(x)
    y = x if dtype in (DType.float32, DType.float64) else cast(x, DType.float32)
    for axis in (2, 3):
        size, n = x.ty.shape[axis], out[axis]
        if not (isinstance(size, int) and isinstance(n, int)):
            raise FrontendError(f"{name} of symbolic spatial sizes is not supported")
        factor = factors[axis - 2] if factors and len(factors) > axis - 2 else None
        mode = "linear" if "bilinear" in name else "cubic"
        index, weights = _antialias_taps(size, n, align, factor, mode)
        y = _resample(y, axis, index, weights)
    return cast(y, dtype)


@converts("aten.adaptive_avg_pool1d.default")
def _adaptive_avg_pool1d(ctx, node, args, kwargs):
    x, size = args[0], args[1]
    x4 = call("unsqueeze", x, axes=[-2])
    out = call("adaptive_avg_pool2d", x4, output_size=[1] + _ints(size, 1))
    return call("squeeze", out, axes=[-2])


# ----- normalisation ------------------------------------------------------------------------


def _channel_param(value: Expr | None, channels: Dim, fill: float, dtype: DType) -> Expr:
    if value is not None:
        return value
    if not isinstance(channels, int):
        return call("full", shape=[channels], value=fill, dtype=dtype)
    return Constant(np.full((channels,), fill, dtype=dtype.numpy))


def _batch_norm_check(node) -> str | None:
    name = str(node.target)
    if "batch_norm.default" in name and "native" not in name:
        training = _literal_arg(node, "training", False)
        if training:
            return "batch norm in training mode (call model.eval() before exporting)"
        if len(node.args) > 3 and node.args[3] is None:
            return "batch norm without running statistics"
    return None


@converts("aten.batch_norm.default", check=_batch_norm_check)
def _batch_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    return _batch_norm_call(
        a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"]
    )


def _batch_norm_call(x, weight, bias, mean, var, eps) -> Expr:
    c = x.ty.shape[1]
    dt = _dtype(x)
    weight = _channel_param(weight, c, 1.0, dt)
    bias = _channel_param(bias, c, 0.0, dt)
    return call("batch_norm", x, weight, bias, mean, var, axis=1, epsilon=float(eps))


@converts("aten._native_batch_norm_legit_no_training.default")
def _native_batch_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    out = _batch_norm_call(
        a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"]
    )
    return out, None, None  # the saved statistics torch returns are not supported


@converts("aten.layer_norm.default", "aten.native_layer_norm.default")
def _layer_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["input"]
    rank = _rank(x)
    n = len(a["normalized_shape"])
    operands = [x]
    weight, bias = a["weight"], a["bias"]
    if weight is not None or bias is not None:
        shape = list(x.ty.shape[rank - n :])
        if weight is None:
            weight = call("ones", shape=shape, dtype=_dtype(x))
        operands.append(weight)
        if bias is not None:
            operands.append(bias)
    out = Call("layer_norm", operands, {"axes": list(range(rank - n, rank)), "epsilon": a["eps"]})
    if "native" in op_name(node):
        return out, None, None
    return out


@converts("aten._weight_norm.default", "aten._weight_norm_interface.default")
def _weight_norm(ctx, node, args, kwargs):
    """``v * (g / ||v||)``, the norm over every dim but ``dim`` (torch's norm_except_dim:
    ``dim=-1``, what ``weight_norm(dim=None)`` passes, is the norm of the whole tensor; any
    other negative dim counts from the end). ``_weight_norm_interface`` also gives the norm."""
    a = ctx.arg(args, kwargs)
    v, g, dim = a["v"], a["g"], int(a["dim"])
    dtype = common_dtype(v, g)
    v, g = cast(v, dtype), cast(g, dtype)
    rank = _rank(v)
    keep = None if dim == -1 else _axis(dim, rank)
    if keep is not None and not 0 <= keep < rank:
        raise FrontendError(f"weight_norm: dim {dim} is out of range for a weight of rank {rank}")
    axes = [i for i in range(rank) if i != keep]
    norm = call("sqrt", call("sum", call("multiply", v, v), axes=axes, keepdims=keep is not None))
    out = call("multiply", v, call("divide", g, norm))
    if "interface" in op_name(node):
        return out, norm
    return out


@converts("aten.rms_norm.default")
def _rms_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["input"]
    rank = _rank(x)
    axes = list(range(rank - len(a["normalized_shape"]), rank))
    eps = a["eps"]
    if eps is None:
        eps = float(np.finfo(_dtype(x).numpy).eps) if _dtype(x).is_float else 1e-6
    ms = call("mean", call("multiply", x, x), axes=axes, keepdims=True)
    y = call("multiply", x, call("rsqrt", call("add", ms, as_tensor(float(eps), _dtype(x)))))
    return y if a["weight"] is None else call("multiply", y, a["weight"])


@converts("aten.group_norm.default", "aten.native_group_norm.default")
def _group_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["input"]
    groups = a["num_groups"] if "num_groups" in a else a["group"]
    operands = [x]
    weight, bias = a["weight"], a["bias"]
    if weight is not None or bias is not None:
        c = x.ty.shape[1]
        operands.append(_channel_param(weight, c, 1.0, _dtype(x)))
        operands.append(_channel_param(bias, c, 0.0, _dtype(x)))
    out = Call("group_norm", operands, {"num_groups": int(groups), "epsilon": float(a["eps"])})
    if "native" in op_name(node):
        return out, None, None
    return out


@converts("aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit.default")
def _batch_stats_norm(ctx, node, args, kwargs):
    """Batch norm with the batch's own statistics (how instance norm decomposes): a layer norm
    over every axis but the channels, then the per-channel scale and shift. Updates of running
    statistics are side effects the IR does not keep."""
    a = ctx.arg(args, kwargs)
    x = a["input"]
    if not a["training"] and a.get("running_mean") is not None:
        out = _batch_norm_call(
            x, a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"]
        )
        return out, None, None
    rank = _rank(x)
    y = call("layer_norm", x, axes=[0, *range(2, rank)], epsilon=float(a["eps"]))
    per_channel = [-1] + [1] * (rank - 2)
    if a["weight"] is not None:
        y = call("multiply", y, call("reshape", a["weight"], shape=per_channel))
    if a["bias"] is not None:
        y = call("add", y, call("reshape", a["bias"], shape=per_channel))
    return y, None, None


@converts("aten.instance_norm.default")
def _instance_norm(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["input"]
    c = x.ty.shape[1]
    if not a["use_input_stats"]:  # tracked running statistics: an inference batch norm
        return _batch_norm_call(
            x, a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"]
        )
    if not isinstance(c, int):
        raise FrontendError("instance norm needs a known number of channels")
    operands = [x]
    if a["weight"] is not None or a["bias"] is not None:
        operands.append(_channel_param(a["weight"], c, 1.0, _dtype(x)))
        operands.append(_channel_param(a["bias"], c, 0.0, _dtype(x)))
    return Call("group_norm", operands, {"num_groups": c, "epsilon": float(a["eps"])})


# ----- indexing --------------------------------------------------------------------------------


@converts("aten.embedding.default")
def _embedding(ctx, node, args, kwargs):
    weight, indices = args[0], args[1]
    return call("take", weight, indices, axis=0)


@converts("aten.index_select.default")
def _index_select(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    return call("take", x, a["index"], axis=_axis(int(a["dim"]), _rank(x)))


@converts("aten.gather.default")
def _gather(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    return call("gather_elements", x, a["index"], axis=_axis(int(a["dim"]), _rank(x)))


_SCATTER_REDUCE = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul",
                   "amax": "max", "amin": "min"}  # fmt: skip


def _scatter_check(node) -> str | None:
    reduce = _literal_arg(node, "reduce", None)
    if reduce is not None and reduce not in _SCATTER_REDUCE:
        return f"scatter with reduce={reduce!r}"
    if op_name(node) == "scatter_reduce" and not _literal_arg(node, "include_self", True):
        return "scatter_reduce with include_self=False"
    return None


@converts(
    "aten.scatter.value",
    "aten.scatter.src",
    "aten.scatter.value_reduce",
    "aten.scatter.reduce",
    "aten.scatter_add.default",
    "aten.scatter_reduce.two",
    check=_scatter_check,
)
def _scatter(ctx, node, args, kwargs):
    """``torch.scatter`` / ``scatter_add`` / ``scatter_reduce`` (include_self): a
    ``scatter_elements`` (with duplicate indices the last write wins; torch leaves that
    order unspecified)."""
    a = ctx.arg(args, kwargs)
    x, index = a["self"], a["index"]
    axis = _axis(int(a["dim"]), _rank(x))
    src = a.get("src", a.get("value"))
    if isinstance(src, Expr) and _rank(src) > 0:
        updates = cast(src, _dtype(x))
    else:  # a number (or a 0-d tensor) written at every index
        updates = call("broadcast_to", as_tensor(src, _dtype(x)), shape=list(index.ty.shape))
    reduce = a.get("reduce")
    if op_name(node) == "scatter_add":
        reduce = "sum"
    reduction = "none" if reduce is None else _SCATTER_REDUCE[reduce]
    return call("scatter_elements", x, index, updates, axis=axis, reduction=reduction)


@converts("aten.index_add.default")
def _index_add(ctx, node, args, kwargs):
    """``x.index_add(dim, index, source, alpha)``: ``source * alpha`` added at the rows
    ``index`` along ``dim`` (duplicates accumulate)."""
    a = ctx.arg(args, kwargs)
    x, index, source = a["self"], a["index"], a["source"]
    rank = _rank(x)
    axis = _axis(int(a["dim"]), rank)
    source = _scale(cast(source, _dtype(x)), a.get("alpha", 1))
    if rank == 0:
        return call("add", x, source)
    positions = _along(cast(index, DType.int64), axis, rank)
    positions = call("broadcast_to", positions, shape=list(source.ty.shape))
    return call("scatter_elements", x, positions, source, axis=axis, reduction="add")


def _index_check(node) -> str | None:
    indices = node.args[1] if len(node.args) > 1 else []
    if not [i for i in indices if i is not None]:
        return "indexing with no index tensor"
    return None


@converts("aten.index.Tensor", check=_index_check)
def _index(ctx, node, args, kwargs):
    """``x[i]`` along one axis is a take; ``x[i0, i1, ...]`` with several index tensors
    (broadcast together, as numpy's advanced indexing; transformers' mask builders do it) is a
    take of the flat index ``i0 * s0 + i1 * s1 + ...`` from ``x`` with those axes merged.
    Index tensors separated by a full slice put their dims first, as in numpy."""
    x, indices = args[0], _mask_positions(list(args[1]))
    axes = [i for i, t in enumerate(indices) if t is not None]
    if len(axes) == 1:
        return call("take", x, indices[axes[0]], axis=axes[0])
    index = [indices[a] for a in axes]
    shape = list(x.ty.shape)
    if axes != list(range(axes[0], axes[-1] + 1)):  # not adjacent: the indexed dims go first
        order = axes + [a for a in range(len(shape)) if a not in axes]
        x = call("permute_dims", x, axes=order)
        shape = [shape[a] for a in order]
        axes = list(range(len(axes)))
    dims = [shape[a] for a in axes]
    merged = shape[: axes[0]] + [_dim_prod(dims)] + shape[axes[-1] + 1 :]
    return call("take", call("reshape", x, shape=merged), _flat_index(index, dims), axis=axes[0])


def _mask_positions(indices: list) -> list:
    """Index tensors with each bool mask (covering as many axes as its rank) replaced by the
    positions of its true elements, one index tensor per axis: ``x[mask]`` is
    ``x[nonzero(mask)[0], nonzero(mask)[1], ...]``, of a length known only at run time."""
    out: list = []
    for t in indices:
        if t is None or _dtype(t) is not DType.bool:
            out.append(t)
            continue
        positions = call("nonzero", t)
        out += [call("take", positions, as_tensor(k, DType.int64), axis=0) for k in range(_rank(t))]
    return out


def _dim_prod(dims: Sequence[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = dim_mul(out, d)
    return out


def _flat_index(index: list[Expr], dims: list[Dim]) -> Expr:
    """``i0 * s0 + i1 * s1 + ...``: the position in ``dims`` (static or symbolic) merged into
    one axis of the index tensors (broadcast together; a negative index counts from the end of
    its dim)."""
    zero = as_tensor(0, DType.int64)
    flat = None
    for k, (i, d) in enumerate(zip(index, dims, strict=True)):
        i = cast(i, DType.int64)
        i = call("where", call("less", i, zero), call("add", i, as_tensor(d, DType.int64)), i)
        stride = _dim_prod(dims[k + 1 :])
        term = i if stride == 1 else call("multiply", i, as_tensor(stride, DType.int64))
        flat = term if flat is None else call("add", flat, term)
    return flat


def _index_put_check(node) -> str | None:
    indices = node.args[1] if len(node.args) > 1 else []
    vals = [t.meta.get("val") if hasattr(t, "meta") else None for t in indices]
    masks = [v for v in vals if v is not None and v.dtype is torch.bool]
    if not masks:
        return None
    if len(masks) != len([t for t in indices if t is not None]):
        return "index_put mixing a bool mask with integer index tensors"
    values = node.args[2].meta.get("val") if hasattr(node.args[2], "meta") else None
    shape = list(getattr(values, "shape", ()))
    while shape and type(shape[0]) is int and shape[0] == 1:  # a SymInt may not be compared
        shape.pop(0)
    first = next(i for i, t in enumerate(indices) if t is not None)
    after = node.args[0].meta["val"].dim() - first - sum(m.dim() for m in masks)
    if len(shape) > after:  # one value per selected element: data-dependent positions
        return "index_put with a bool mask and one value per selected element (x[m] = y[m])"
    return None


@converts("aten.index_put.default", "aten.index_put_.default", check=_index_put_check)
def _index_put(ctx, node, args, kwargs):
    """``x[i0, i1, ...] = values`` (``accumulate``: ``+=``): index tensors broadcast together
    (numpy's advanced indexing), on adjacent axes or not (then the indexed dims come first in
    the shape the values broadcast to), and bool masks (``x[mask] = v``, v the same for every
    selected element: a ``where``). Integer indices are a scatter of the values along the
    merged indexed axes at the flat index ``i0 * s0 + i1 * s1 + ...``; with repeated positions
    and no accumulate the last value wins (torch leaves it unspecified)."""
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    x, indices, values = cast(a["self"], dtype), list(a["indices"]), cast(a["values"], dtype)
    accumulate = bool(a["accumulate"])
    axes = [i for i, t in enumerate(indices) if t is not None]
    if not axes:
        raise FrontendError("index_put with no index tensor")
    if any(_dtype(indices[i]) is DType.bool for i in axes):
        return _masked_put(x, [indices[i] for i in axes], axes[0], values, accumulate)
    shape = list(x.ty.shape)
    if axes != list(range(axes[0], axes[-1] + 1)):  # not adjacent: the indexed axes go first
        order = axes + [i for i in range(len(shape)) if i not in axes]
        moved = call("permute_dims", x, axes=order)
        index = [indices[i] for i in axes]
        out = _scatter_put(moved, index, list(range(len(axes))), values, accumulate)
        return call("permute_dims", out, axes=[order.index(i) for i in range(len(shape))])
    return _scatter_put(x, [indices[i] for i in axes], axes, values, accumulate)


def _masked_put(x: Expr, masks: list[Expr], first: int, values: Expr, add: bool) -> Expr:
    """``x[..., mask, ...] = v`` (bool masks covering the axes from ``first`` on), v the
    same for every selected element: ``where(mask, v, x)`` (``x + where(mask, v, 0)``)."""
    covered = sum(_rank(m) for m in masks)
    after = _rank(x) - first - covered
    mask = masks[0]
    for m in masks[1:]:  # x[m1, m2]: both masks, one after the other
        inner = [1] * _rank(mask) + list(m.ty.shape)
        left = call("reshape", mask, shape=list(mask.ty.shape) + [1] * _rank(m))
        mask = call("logical_and", left, call("reshape", m, shape=inner))
    mask = call("reshape", mask, shape=list(mask.ty.shape) + [1] * after)
    if add:
        return call("add", x, call("where", mask, values, as_tensor(0, _dtype(x))))
    return call("where", mask, values, x)


def _scatter_put(x: Expr, index: list[Expr], axes: list[int], values: Expr, add: bool) -> Expr:
    """``x[..., i0, i1, ..., ...] = values`` with the index tensors on the adjacent ``axes``."""
    shape = list(x.ty.shape)
    dims = [shape[i] for i in axes]
    index = [cast(t, DType.int64) for t in index]
    pre, post = shape[: axes[0]], shape[axes[-1] + 1 :]
    picked = list(broadcast_shapes(*[t.ty.shape for t in index]))  # the shape x[i0, i1] has
    n = _dim_prod(picked)
    flat = call("broadcast_to", _flat_index(index, dims), shape=picked)
    flat = call("reshape", flat, shape=[n])
    lead, tail = len(pre), len(post)
    flat = call("reshape", flat, shape=[1] * lead + [n] + [1] * tail)
    flat = call("broadcast_to", flat, shape=pre + [n] + post)
    values = call("broadcast_to", values, shape=pre + picked + post)
    values = call("reshape", values, shape=pre + [n] + post)
    merged = call("reshape", x, shape=pre + [_dim_prod(dims)] + post)
    reduction = "add" if add else "none"
    out = call("scatter_elements", merged, flat, values, axis=lead, reduction=reduction)
    return call("reshape", out, shape=shape)


@converts("aten.topk.default")
def _topk(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x = a["self"]
    # an unsorted topk may return its values in any order: the sorted order is one of them
    out = call("topk", x, k=int(a["k"]), axis=int(a["dim"]), largest=bool(a["largest"]))
    return TupleGetItem(out, 0), TupleGetItem(out, 1)


def _sort_order(x: Expr, dim: int, descending: bool, what: str) -> Expr:
    """The (values, indices) of a stable sort of ``x`` along ``dim``: a ``topk`` of the whole
    axis (its order is stable: ties keep the lower index first, ascending or descending; nan
    sorts as the largest value, last ascending and first descending, as in torch)."""
    rank = _rank(x)
    if rank == 0:  # torch sorts a 0-d tensor as one element
        one = call("unsqueeze", x, axes=[0])
        out = call("topk", one, k=1, axis=0, largest=bool(descending))
        squeeze = [call("squeeze", TupleGetItem(out, i), axes=[0]) for i in range(2)]
        return IRTuple(squeeze)
    axis = _axis(int(dim), rank)
    if not 0 <= axis < rank:
        raise FrontendError(f"{what}: dim {dim} is out of range for a tensor of rank {rank}")
    n = x.ty.shape[axis]
    k = n if isinstance(n, int) else -1  # -1: the whole axis, of a symbolic size
    return call("topk", x, k=k, axis=axis, largest=bool(descending))


@converts("aten.sort.default", "aten.sort.stable")
def _sort(ctx, node, args, kwargs):
    """``torch.sort``, always stable. Without ``stable=True`` torch's CPU sort orders ties
    as std::sort leaves them (stable up to 16 elements along the axis, not beyond): the
    values agree, the indices of equal values may not (torch leaves that order unspecified;
    the same holds for ``topk``)."""
    a = ctx.arg(args, kwargs)
    out = _sort_order(a["self"], a["dim"], a["descending"], "sort")
    return TupleGetItem(out, 0), TupleGetItem(out, 1)


@converts("aten.argsort.default", "aten.argsort.stable")
def _argsort(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    return TupleGetItem(_sort_order(a["self"], a["dim"], a["descending"], "argsort"), 1)


def _rounded_steps(steps: list, dtype: DType) -> Expr:
    """``((a op1 b) op2 c) ...`` with every step rounded to ``dtype`` as IEEE arithmetic in
    ``dtype`` rounds it: for float32 each step is done in float64 and cast back (exact: a
    +, -, *, / in float64 rounded to float32 is the float32 result), so the compiled
    backend, which may contract and reassociate float arithmetic, cannot move a bin edge."""
    wide = DType.float64 if dtype is DType.float32 else dtype
    value = None
    for op, a, b in steps:
        a = value if a is None else a
        value = cast(call(op, cast(a, wide), cast(b, wide)), dtype)
    return value


@converts("aten.histc.default")
def _histc(ctx, node, args, kwargs):
    """``torch.histc``: counts of the elements in ``bins`` equal bins over [min, max] (the
    data's range when min == max, widened by 1 each way when that is one value; elements
    outside, and nans, are not counted). As torch's CPU kernel: bin
    ``int((x - min) * bins / (max - min))`` in the input's dtype, the last bin closed. A
    scatter-add of ones, the elements outside sent to an extra bin that is dropped. (A data
    range that is not finite, which torch refuses at run time, counts nothing here.)"""
    a = ctx.arg(args, kwargs)
    x = a["self"]
    dtype = _dtype(x)
    if not dtype.is_float:
        raise FrontendError(f"histc of {dtype} input (torch takes floating-point input only)")
    bins = int(a["bins"])
    if bins <= 0:
        raise FrontendError(f"histc needs bins > 0, got {bins}")
    lo_v, hi_v = float(a["min"]), float(a["max"])
    if lo_v > hi_v:
        raise FrontendError(f"histc: max ({hi_v}) must be larger than min ({lo_v})")
    flat = call("reshape", x, shape=[-1])
    if lo_v == hi_v:  # the data's range
        lo, hi = call("min", flat), call("max", flat)
        same = call("equal", lo, hi)
        one = as_tensor(1, dtype)
        lo = call("where", same, call("subtract", lo, one), lo)
        hi = call("where", same, call("add", hi, one), hi)
    else:
        lo, hi = as_tensor(lo_v, dtype), as_tensor(hi_v, dtype)
    inside = call("logical_and", call("greater_equal", flat, lo), call("less_equal", flat, hi))
    scaled = _rounded_steps(
        [("subtract", flat, lo), ("multiply", None, as_tensor(bins, dtype)),
         ("divide", None, call("subtract", hi, lo))], dtype)  # fmt: skip
    pos = call("cast", call("where", inside, scaled, as_tensor(0, dtype)), dtype=DType.int64)
    pos = call("minimum", pos, as_tensor(bins - 1, DType.int64))
    pos = call("where", inside, pos, as_tensor(bins, DType.int64))
    ones = call("broadcast_to", as_tensor(1, dtype), shape=list(flat.ty.shape))
    zeros = Constant(np.zeros(bins + 1, dtype.numpy))
    counts = call("scatter_elements", zeros, pos, ones, axis=0, reduction="add")
    return call("strided_slice", counts, begin=[0], end=[bins], axes=[0])


@converts("aten.bincount.default")
def _bincount(ctx, node, args, kwargs):
    """``torch.bincount``: the ``bincount`` op, whose length depends on the data (a '?' dim,
    as nonzero's; the compiled backend runs it on the host)."""
    a = ctx.arg(args, kwargs)
    x, weights, minlength = a["self"], a.get("weights"), int(a["minlength"])
    if _rank(x) != 1 or not _dtype(x).is_int:
        raise FrontendError(f"bincount takes a 1-D tensor of integers, got {x.ty}")
    extra = [] if weights is None else [weights]
    return call("bincount", x, *extra, minlength=minlength, dtype=ctx.out_dtype)


# ----- control flow ---------------------------------------------------------------------------


@converts("higher_order.cond")
def _cond(ctx, node, args, kwargs):
    """``torch.cond(pred, true_fn, false_fn, operands)`` as an IR If whose branches are the
    converted subgraphs; each branch yields a tuple of the outputs (read with getitem)."""
    pred, then_gm, else_gm, operands = args[0], args[1], args[2], list(args[3])
    if isinstance(pred, (bool, np.bool_)):  # decided at export time: keep one branch
        return tuple(ctx.convert_graph(then_gm if pred else else_gm, operands))
    if not isinstance(pred, Expr):
        raise FrontendError(f"a cond predicate on sizes ({pred!r}) is not supported")
    branches = []
    for gm in (then_gm, else_gm):
        outs = [
            as_tensor(v, DType.int64) if not isinstance(v, Expr) else v
            for v in ctx.convert_graph(gm, operands)
        ]
        result = IRTuple(outs, prov=provenance_of(node), name=f"{node.name}_result")
        branches.append(Block.of(result, _bound_outside(ctx, operands)))
    return If(cast(pred, DType.bool), branches[0], branches[1])


@converts("higher_order.while_loop")
def _while_loop(ctx, node, args, kwargs):
    """``torch._higher_order_ops.while_loop(cond_fn, body_fn, carried, additional)`` as an
    IR Loop: the condition is checked before each iteration (so it is computed once on the
    initial values, then by the body on each new one); ``additional`` inputs and whatever the
    subgraphs read are captured."""
    from compiler.ir.closure import LoopError, build_loop

    cond_gm, body_gm = args[0], args[1]
    carried = [v if isinstance(v, Expr) else as_tensor(v, DType.int64) for v in args[2]]
    extra = list(args[3]) if len(args) > 3 else []

    def one(values: list, what: str) -> Expr:
        (c,) = values if len(values) == 1 else (None,)
        if c is None:
            raise FrontendError(f"while_loop's cond_fn must return one value, got {len(values)}")
        if not isinstance(c, Expr):
            c = as_tensor(c, DType.bool)
        return c

    def build(i, c, states):
        new = [
            v if isinstance(v, Expr) else as_tensor(v, DType.int64)
            for v in ctx.convert_graph(body_gm, [*states, *extra])
        ]
        return one(ctx.convert_graph(cond_gm, [*new, *extra]), "cond"), new, []

    first = one(ctx.convert_graph(cond_gm, [*carried, *extra]), "cond")
    trips = Constant(np.asarray(np.iinfo(np.int64).max))
    try:
        outs = build_loop(
            carried,
            build,
            lambda body: ctx.add_function(f"{node.name}_body", body),
            trips,
            first,
            prov=provenance_of(node),
        )
    except LoopError as e:
        raise FrontendError(f"while_loop {node.name}: {e}") from None
    return outs[0].tuple_value  # the Loop itself: FX's getitem nodes read its fields


@converts("higher_order.wrap_with_set_grad_enabled")
def _set_grad(ctx, node, args, kwargs):
    """A ``torch.no_grad()`` / ``enable_grad()`` region (rotary embeddings in transformers):
    gradients do not matter to an inference graph, so its subgraph is inlined."""
    return tuple(ctx.convert_graph(args[1], list(args[2:])))


@converts("higher_order.wrap_with_autocast")
def _autocast(ctx, node, args, kwargs):
    """A ``torch.autocast(...)`` region: inlined when it is disabled (models switch autocast
    off around their rotary embeddings); an enabled one would run its ops in a lower precision,
    which this frontend does not reproduce, so it is refused."""
    device, dtype, enabled = args[0], args[1], args[2]
    if enabled:
        raise FrontendError(
            f"an enabled torch.autocast({device!r}, dtype={dtype}) region: its ops would run "
            "in that precision; export the model with autocast off"
        )
    return tuple(ctx.convert_graph(args[4], list(args[5:])))


def _bound_outside(ctx: ConvertContext, operands: list) -> list[Expr]:
    """Every expression converted so far in the enclosing graph (bound before the If)."""
    outside = [v for v in ctx.values.values() if isinstance(v, Expr)]
    for v in ctx.values.values():
        if isinstance(v, (list, tuple)):
            outside.extend(x for x in v if isinstance(x, Expr))
    outside.extend(v for v in operands if isinstance(v, Expr))
    return collect_bindings(outside)


# ----- attention -------------------------------------------------------------------------------


def _sdpa_check(node) -> str | None:
    if _literal_arg(node, "dropout_p", 0.0):
        return "attention dropout (dropout_p > 0; export the model in eval mode)"
    return None


@converts(
    "aten.scaled_dot_product_attention.default",
    "aten._scaled_dot_product_flash_attention_for_cpu.default",
    check=_sdpa_check,
)
def _sdpa(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    q, k, v = a["query"], a["key"], a["value"]
    if a.get("enable_gqa"):
        heads, kv_heads = q.ty.shape[-3], k.ty.shape[-3]
        if not (isinstance(heads, int) and isinstance(kv_heads, int)):
            raise FrontendError("grouped-query attention with symbolic head counts")
        k = call("repeat", k, repeats=heads // kv_heads, axis=-3)
        v = call("repeat", v, repeats=heads // kv_heads, axis=-3)
    operands = [q, k, v]
    mask = a.get("attn_mask")
    if mask is not None:
        operands.append(mask if _dtype(mask) is DType.bool else cast(mask, _dtype(q)))
    scale = a.get("scale")
    out = Call(
        "scaled_dot_product_attention",
        operands,
        {"is_causal": bool(a["is_causal"]), "scale": None if scale is None else float(scale)},
    )
    if "flash" in op_name(node):
        return out, None
    return out


# ----- helpers for checks --------------------------------------------------------------------


def _literal_arg(node, name: str, default: Any) -> Any:
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


__all__ = ["cast", "as_tensor", "dim_tensor", "common_dtype"]
