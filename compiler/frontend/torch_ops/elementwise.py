"""Converters of elementwise ATen operators: identities, casts and assertions, unary and
binary ops, comparisons, logical ops and ``where``."""

from __future__ import annotations

from typing import Any

import torch

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import ATEN_CHECKS, converts, op_name
from compiler.frontend.torch_ops.common import (
    as_tensor,
    binary_call,
    cast,
    common_dtype,
    dtype_of,
    literal_arg,
    recorded_shape,
    scaled_by,
)
from compiler.ir.nodes import Expr, call
from compiler.ir.types import DType

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
        return call("reshape", x, shape=recorded_shape(ctx))
    return x


def _dropout_check(node) -> str | None:
    train = literal_arg(node, "train", False)
    p = literal_arg(node, "p", 0.0)
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
        if float_op and not dtype_of(x).is_float:
            x = cast(x, ctx.out_dtype)  # torch computes exp(int) etc. in the default float
        if op == "logical_not":
            x = truth(x)
        if op in ("floor", "ceil", "round") and not dtype_of(x).is_float:
            return x
        return call(op, x)

    return convert


for _torch_name, _op in _UNARY.items():
    converts(f"aten.{_torch_name}.default")(_unary_converter(_op))


@converts("aten.bitwise_not.default")
def _bitwise_not(ctx, node, args, kwargs):
    x = args[0]
    if dtype_of(x) is not DType.bool:
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
    dt = dtype_of(x)
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
    dt = dtype_of(x)
    neg = call("subtract", call("exp", x), as_tensor(1.0, dt))
    neg = scaled_by(neg, float(a["alpha"]) * float(a["scale"]))
    pos = scaled_by(x, float(a["scale"]))
    if float(a["input_scale"]) != 1:
        raise FrontendError("elu with input_scale != 1 is not supported")
    return call("where", call("greater", x, as_tensor(0.0, dt)), pos, neg)


@converts("aten.softplus.default")
def _softplus(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    x, beta = a["self"], float(a["beta"])
    y = call("softplus", scaled_by(x, beta))
    y = y if beta == 1 else call("divide", y, as_tensor(beta, dtype_of(x)))
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
    other = scaled_by(other, a.get("alpha", 1))
    op = "add" if op_name(node).startswith("add") else "subtract"
    return call(op, as_tensor(a["self"], dtype), other)


@converts("aten.rsub.Tensor", "aten.rsub.Scalar")
def _rsub(ctx, node, args, kwargs):
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    x = scaled_by(as_tensor(a["self"], dtype), a.get("alpha", 1))
    return call("subtract", as_tensor(a["other"], dtype), x)


@converts("aten.mul.Tensor", "aten.mul.Scalar", "aten.multiply.Tensor", "aten.multiply.Scalar")
def _mul(ctx, node, args, kwargs):
    return binary_call(ctx, "multiply", args[0], args[1])


@converts("aten.addcmul.default")
def _addcmul(ctx, node, args, kwargs):
    """``self + value * tensor1 * tensor2`` in the promoted dtype, multiplied in torch's order
    (the scalar with tensor1 first)."""
    a = ctx.arg(args, kwargs)
    dtype = ctx.out_dtype
    t1, t2 = as_tensor(a["tensor1"], dtype), as_tensor(a["tensor2"], dtype)
    product = call("multiply", scaled_by(t1, a["value"]), t2)
    return call("add", as_tensor(a["self"], dtype), product)


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
    return binary_call(ctx, "floor_divide", args[0], args[1])


@converts("aten.remainder.Tensor", "aten.remainder.Scalar")
def _remainder(ctx, node, args, kwargs):
    return binary_call(ctx, "mod", args[0], args[1])


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
    return binary_call(ctx, "power", base, exponent)


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
    return binary_call(ctx, op, args[0], args[1])


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
        return binary_call(ctx, op, a, b, common_dtype(a, b))

    return convert


for _torch_name, _op in _COMPARE.items():
    converts(f"aten.{_torch_name}.Tensor", f"aten.{_torch_name}.Scalar")(_compare_converter(_op))


def truth(value: Any) -> Expr:
    """A value as a bool tensor (non-zero is true), like torch's logical ops read it."""
    if not isinstance(value, Expr):
        return as_tensor(bool(value), DType.bool)
    if dtype_of(value) is DType.bool:
        return value
    return call("not_equal", value, as_tensor(0, dtype_of(value)))


def _logical_converter(op: str):
    def convert(ctx, node, args, kwargs):
        return call(op, truth(args[0]), truth(args[1]))

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
