"""Elementwise ONNX ops: unary and binary math, activations, casts, constants."""

from __future__ import annotations

import numpy as np

from compiler.frontend.onnx_context import (
    ConversionError,
    ConvertContext,
    Unsupported,
    dtype_of,
    tensor_value,
)
from compiler.frontend.onnx_ops.registry import (
    cast_to,
    converter,
    float_scalar,
)
from compiler.ir.nodes import Constant, Expr
from compiler.ir.types import DType, TensorType

# ----- elementwise ------------------------------------------------------------------------

_UNARY = {
    "Abs": "abs",
    "Neg": "neg",
    "Sign": "sign",
    "Relu": "relu",
    "Exp": "exp",
    "Log": "log",
    "Sqrt": "sqrt",
    "Tanh": "tanh",
    "Sigmoid": "sigmoid",
    "Erf": "erf",
    "Sin": "sin",
    "Cos": "cos",
    "Floor": "floor",
    "Ceil": "ceil",
    "Round": "round",
    "Reciprocal": "reciprocal",
    "Softplus": "softplus",
    "Not": "logical_not",
    "IsNaN": "isnan",
    "Identity": "identity",
}


def _unary(ir_op: str):
    def convert(ctx: ConvertContext) -> Expr:
        x = ctx.input(0)
        if ir_op == "identity" and not isinstance(x.ty, TensorType):
            return x  # a sequence (a tuple): passed on as is
        if ir_op in ("abs", "sign", "neg") and x.ty.dtype.is_unsigned:
            if ir_op == "abs":
                return ctx.call("identity", x)
            if ir_op == "sign":
                return cast_to(ctx, ctx.call("greater", x, ctx.like(0, x)), x.ty.dtype)
        return ctx.call(ir_op, x)

    return convert


for _onnx, _ir in _UNARY.items():
    converter(_onnx)(_unary(_ir))


@converter("Tan")
def _tan(ctx):
    x = ctx.input(0)
    return ctx.call("divide", ctx.call("sin", x), ctx.call("cos", x))


@converter("Sinh", "Cosh")
def _sinh_cosh(ctx):
    x = ctx.input(0)
    ep, en = ctx.call("exp", x), ctx.call("exp", ctx.call("neg", x))
    op = "subtract" if ctx.node.op_type == "Sinh" else "add"
    return ctx.call("multiply", ctx.call(op, ep, en), ctx.like(0.5, x))


@converter("Asinh", "Acosh")
def _asinh_acosh(ctx):
    x = ctx.input(0)
    sq = ctx.call("multiply", x, x)
    op = "add" if ctx.node.op_type == "Asinh" else "subtract"
    root = ctx.call("sqrt", ctx.call(op, sq, ctx.like(1, x)))
    return ctx.call("log", ctx.call("add", x, root))


@converter("Atanh")
def _atanh(ctx):
    x = ctx.input(0)
    one = ctx.like(1, x)
    ratio = ctx.call("divide", ctx.call("add", one, x), ctx.call("subtract", one, x))
    return ctx.call("multiply", ctx.call("log", ratio), ctx.like(0.5, x))


@converter("Softsign")
def _softsign(ctx):
    x = ctx.input(0)
    return ctx.call("divide", x, ctx.call("add", ctx.like(1, x), ctx.call("abs", x)))


def _clip01(ctx, y):
    y = ctx.call("maximum", y, ctx.like(0, y))
    return ctx.call("minimum", y, ctx.like(1, y))


@converter("HardSigmoid", attrs=("alpha", "beta"))
def _hard_sigmoid(ctx):
    x = ctx.input(0)
    alpha, beta = ctx.attr("alpha", 0.2), ctx.attr("beta", 0.5)
    y = ctx.call("add", ctx.call("multiply", x, ctx.like(alpha, x)), ctx.like(beta, x))
    return _clip01(ctx, y)


@converter("HardSwish")
def _hard_swish(ctx):
    x = ctx.input(0)
    y = ctx.call("add", ctx.call("multiply", x, ctx.like(1 / 6, x)), ctx.like(0.5, x))
    return ctx.call("multiply", x, _clip01(ctx, y))


def _negative_part(ctx, x, alpha):
    """alpha * (exp(x) - 1)"""
    return ctx.call("multiply", ctx.call("expm1", x), ctx.like(alpha, x))


@converter("Elu", attrs=("alpha",))
def _elu(ctx):
    x = ctx.input(0)
    positive = ctx.call("greater", x, ctx.like(0, x))
    return ctx.call("where", positive, x, _negative_part(ctx, x, ctx.attr("alpha", 1.0)))


@converter("Selu", attrs=("alpha", "gamma"), min_version=6)  # v1: other defaults
def _selu(ctx):
    x = ctx.input(0)
    alpha, gamma = (
        ctx.attr("alpha", 1.67326319217681884765625),
        ctx.attr("gamma", 1.05070102214813232421875),
    )
    positive = ctx.call("greater", x, ctx.like(0, x))
    y = ctx.call("where", positive, x, _negative_part(ctx, x, alpha))
    return ctx.call("multiply", y, ctx.like(gamma, x))


@converter("Celu", attrs=("alpha",))
def _celu(ctx):
    x = ctx.input(0)
    alpha = ctx.attr("alpha", 1.0)
    neg = _negative_part(ctx, ctx.call("divide", x, ctx.like(alpha, x)), alpha)
    return ctx.call(
        "add",
        ctx.call("maximum", x, ctx.like(0, x)),
        ctx.call("minimum", neg, ctx.like(0, x)),
    )


@converter("LeakyRelu", attrs=("alpha",))
def _leaky_relu(ctx):
    return ctx.call("leaky_relu", ctx.input(0), alpha=ctx.attr("alpha", 0.01))


@converter("PRelu", min_version=7)  # v6: slope broadcast undefined
def _prelu(ctx):
    x, slope = ctx.input(0), ctx.input(1)
    negative = ctx.call("less", x, ctx.like(0, x))
    return ctx.call("where", negative, ctx.call("multiply", x, slope), x)


@converter("ThresholdedRelu", attrs=("alpha",))
def _thresholded_relu(ctx):
    x = ctx.input(0)
    above = ctx.call("greater", x, ctx.like(ctx.attr("alpha", 1.0), x))
    return ctx.call("where", above, x, ctx.like(0, x))


@converter("Shrink", attrs=("bias", "lambd"))
def _shrink(ctx):
    x = ctx.input(0)
    bias, lambd = ctx.attr("bias", 0.0), ctx.attr("lambd", 0.5)
    low = ctx.call("less", x, ctx.like(-lambd, x))
    high = ctx.call("greater", x, ctx.like(lambd, x))
    if x.ty.dtype.is_float:
        plus, minus = ctx.like(bias, x), ctx.like(bias, x)
    else:
        plus = minus = ctx.like(int(bias), x)
    inner = ctx.call("where", high, ctx.call("subtract", x, minus), ctx.like(0, x))
    return ctx.call("where", low, ctx.call("add", x, plus), inner)


@converter("Mish")
def _mish(ctx):
    x = ctx.input(0)
    return ctx.call("multiply", x, ctx.call("tanh", ctx.call("softplus", x)))


@converter("Gelu", attrs=("approximate",))
def _gelu(ctx):
    return ctx.call("gelu", ctx.input(0), approximate=ctx.attr("approximate", "none"))


@converter("Swish", attrs=("alpha",))
def _swish(ctx):
    x = ctx.input(0)
    alpha = ctx.attr("alpha", 1.0)
    scaled = x if alpha == 1.0 else ctx.call("multiply", x, ctx.like(alpha, x))
    return ctx.call("multiply", x, ctx.call("sigmoid", scaled))


@converter("IsInf", attrs=("detect_negative", "detect_positive"))
def _isinf(ctx):
    x = ctx.input(0)
    checks = []
    if ctx.attr("detect_positive", 1):
        checks.append(ctx.call("equal", x, ctx.like(np.inf, x)))
    if ctx.attr("detect_negative", 1):
        checks.append(ctx.call("equal", x, ctx.like(-np.inf, x)))
    if not checks:
        return ctx.call("zeros_like", x, dtype=DType.bool)
    out = checks[0]
    for c in checks[1:]:
        out = ctx.call("logical_or", out, c)
    return out


# the IR op of each binary ONNX op (the legacy converters of versions before 7 use it too)
BINARY_OPS = {
    "Add": "add",
    "Sub": "subtract",
    "Mul": "multiply",
    "Div": "divide",
    "Equal": "equal",
    "Less": "less",
    "LessOrEqual": "less_equal",
    "Greater": "greater",
    "GreaterOrEqual": "greater_equal",
    "And": "logical_and",
    "Or": "logical_or",
    "Xor": "logical_xor",
}


def _binary(ir_op: str):
    def convert(ctx: ConvertContext) -> Expr:
        return ctx.call(ir_op, ctx.input(0), ctx.input(1))

    return convert


for _onnx, _ir in BINARY_OPS.items():  # before version 7: legacy broadcasting (legacy.py)
    converter(_onnx, min_version=7)(_binary(_ir))


@converter("Pow", min_version=7)
def _pow(ctx):
    x, y = ctx.input(0), ctx.input(1)
    dx, dy = x.ty.dtype, y.ty.dtype
    if dx is dy:
        return ctx.call("power", x, y)
    if dx.is_float:
        return ctx.call("power", x, cast_to(ctx, y, dx))
    # an integer base with a float exponent: compute in float64, the result has the base type
    wide = ctx.call("power", cast_to(ctx, x, DType.float64), cast_to(ctx, y, DType.float64))
    return cast_to(ctx, wide, dx)


@converter("Mod", attrs=("fmod",))
def _mod(ctx):
    a, b = ctx.input(0), ctx.input(1)
    if not ctx.attr("fmod", 0):  # the sign of the divisor, like Python (floats too)
        return ctx.call("mod", a, b)
    # C fmod: a - b * trunc(a / b); the sign follows the dividend
    q = ctx.call("divide", a, b)
    if a.ty.dtype.is_float:
        q = ctx.call(
            "where", ctx.call("less", q, ctx.like(0, q)), ctx.call("ceil", q), ctx.call("floor", q)
        )
    return ctx.call("subtract", a, ctx.call("multiply", b, q))


def _variadic(ir_op: str):
    def convert(ctx: ConvertContext) -> Expr:
        args = [ctx.input(i) for i in range(ctx.num_inputs)]
        if not args:
            raise ConversionError("needs at least one input")
        out = args[0]
        for a in args[1:]:
            out = ctx.call(ir_op, out, a)
        if len(args) == 1:
            out = ctx.call("identity", out)
        if ctx.node.op_type == "Mean" and len(args) > 1:
            out = ctx.call("divide", out, ctx.like(len(args), out))
        return out

    return convert


converter("Max")(_variadic("maximum"))
converter("Min")(_variadic("minimum"))
converter("Sum")(_variadic("add"))
converter("Mean")(_variadic("add"))


@converter("Where")
def _where(ctx):
    return ctx.call("where", ctx.input(0), ctx.input(1), ctx.input(2))


@converter("Clip", min_version=11)
def _clip(ctx):
    x = ctx.input(0)
    lo, hi = ctx.inputs[1] if ctx.has(1) else None, ctx.inputs[2] if ctx.has(2) else None
    lo_v, hi_v = ctx.const(1), ctx.const(2)
    if (
        x.ty.dtype.is_float
        and (lo is None or lo_v is not None)
        and (hi is None or hi_v is not None)
    ):
        return ctx.call(
            "clip",
            x,
            min=None if lo is None else float_scalar(lo_v, "min"),
            max=None if hi is None else float_scalar(hi_v, "max"),
        )
    y = x
    if lo is not None:
        y = ctx.call("maximum", y, lo)
    if hi is not None:
        y = ctx.call("minimum", y, hi)
    return y if y is not x else ctx.call("identity", x)


@converter("Cast", attrs=("to", "saturate", "round_mode"), min_version=6)  # v1: `to` a string
def _cast_op(ctx):
    from compiler.frontend.onnx_ops.casts import cast_node  # (saturate, round_mode)

    return cast_node(ctx, ctx.input(0), dtype_of(ctx.attr("to")))


@converter("CastLike", attrs=("saturate", "round_mode"))
def _cast_like(ctx):
    from compiler.frontend.onnx_ops.casts import cast_node

    return cast_node(ctx, ctx.input(0), ctx.ty(1).dtype)


@converter("Constant", attrs=("value", "value_float", "value_floats", "value_int", "value_ints"))
def _constant(ctx):
    if "value" in ctx.attrs:
        return Constant(tensor_value(ctx.attr("value")), prov=ctx.prov)
    for name, dtype in (
        ("value_float", np.float32),
        ("value_floats", np.float32),
        ("value_int", np.int64),
        ("value_ints", np.int64),
    ):
        if name in ctx.attrs:
            return Constant(np.asarray(ctx.attr(name), dtype=dtype), prov=ctx.prov)
    raise ConversionError("a Constant needs one of value, value_float(s), value_int(s)")


@converter("Dropout", attrs=("seed", "ratio"), min_version=7)  # v6: is_test (legacy.py)
def _dropout(ctx):
    x = ctx.input(0)
    training = ctx.const(2)
    if ctx.has(2) and (training is None or bool(training.reshape(-1)[0])):
        raise Unsupported("training mode: a random mask a converted model could not reproduce")
    if ctx.version < 12:  # the mask of an inference Dropout-7/10 is unspecified (ORT: 0s)
        return ctx.call("identity", x), None
    mask = ctx.call("full_like", x, value=1.0, dtype=DType.bool)
    return ctx.call("identity", x), mask
