"""Lowerings of the elementwise ops: unary math, binary arithmetic and comparisons with
broadcasting, logical ops, where, cast, clip and gelu. Each is a lazy value, so a chain of
them fuses into the loop nest of whatever reads it.

16-bit floats are computed in f32 and rounded once per op (the reference computes in f64 and
rounds once per op). Integer division by zero gives 0 where the reference raises.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.backend import loops as L
from compiler.backend.lowering import elementwise, lowering
from compiler.ir.types import DType


def const(value, dtype: DType) -> L.Expr:
    """A literal of a compute dtype (f32 / f64 / ints / bool)."""
    return L.Const(value, dtype)


def _sigmoid(x: L.Expr) -> L.Expr:
    one = const(1.0, x.dtype)
    return one / (one + L.unary("exp", -x))


def _softplus(x: L.Expr) -> L.Expr:  # log(1 + exp(x)) without overflow
    zero = const(0.0, x.dtype)
    return L.maximum(x, zero) + L.unary("log1p", L.unary("exp", -L.unary("abs", x)))


_UNARY = {
    "exp": lambda x: L.unary("exp", x),
    "log": lambda x: L.unary("log", x),
    "sqrt": lambda x: L.unary("sqrt", x),
    "rsqrt": lambda x: const(1.0, x.dtype) / L.unary("sqrt", x),
    "tanh": lambda x: L.unary("tanh", x),
    "sigmoid": _sigmoid,
    "erf": lambda x: L.unary("erf", x),
    "sin": lambda x: L.unary("sin", x),
    "cos": lambda x: L.unary("cos", x),
    "floor": lambda x: L.unary("floor", x),
    "ceil": lambda x: L.unary("ceil", x),
    "round": lambda x: L.unary("round", x),
    "reciprocal": lambda x: const(1.0, x.dtype) / x,
    "silu": lambda x: x * _sigmoid(x),
    "softplus": _softplus,
    "log1p": lambda x: L.unary("log1p", x),
    "expm1": lambda x: L.unary("expm1", x),
    "neg": lambda x: L.unary("neg", x),
    "abs": lambda x: L.unary("abs", x),
    "identity": lambda x: x,
    "logical_not": lambda x: L.unary("not", x),
    "isnan": lambda x: L.unary("isnan", x),
}


def _sign(x: L.Expr) -> L.Expr:
    zero, one = const(0, x.dtype), const(1, x.dtype)
    # nan and zero map to themselves, like numpy.sign
    return L.select(L.compare("gt", x, zero), one, L.select(L.compare("lt", x, zero), -one, x))


def _relu(x: L.Expr) -> L.Expr:
    return L.maximum(x, const(0 if not x.dtype.is_float else 0.0, x.dtype))


_UNARY["sign"] = _sign
_UNARY["relu"] = _relu


@lowering(*_UNARY)
def _unary(kb, call, inputs, dest):
    fn = _UNARY[call.op]
    return elementwise(inputs, call.out_shape, call.out_dtype, fn)


@lowering("gelu")
def _gelu(kb, call, inputs, dest):
    tanh_form = call.attrs["approximate"] == "tanh"

    def fn(x):
        c = lambda v: const(v, x.dtype)  # noqa: E731
        if tanh_form:
            inner = c(math.sqrt(2.0 / math.pi)) * (x + c(0.044715) * x * x * x)
            return c(0.5) * x * (c(1.0) + L.unary("tanh", inner))
        return c(0.5) * x * (c(1.0) + L.unary("erf", x * c(1.0 / math.sqrt(2.0))))

    return elementwise(inputs, call.out_shape, call.out_dtype, fn)


@lowering("leaky_relu")
def _leaky_relu(kb, call, inputs, dest):
    alpha = call.attrs["alpha"]

    def fn(x):
        return L.select(L.compare("ge", x, const(0.0, x.dtype)), x, x * const(alpha, x.dtype))

    return elementwise(inputs, call.out_shape, call.out_dtype, fn)


@lowering("clip")
def _clip(kb, call, inputs, dest):
    lo, hi = call.attrs["min"], call.attrs["max"]

    def fn(x):
        y = x
        is_int = not x.dtype.is_float
        if lo is not None:
            v = np.asarray(math.ceil(lo) if is_int else lo).astype(x.dtype.numpy).item()
            y = L.maximum(y, const(v, x.dtype))
        if hi is not None:
            v = np.asarray(math.floor(hi) if is_int else hi).astype(x.dtype.numpy).item()
            y = L.minimum(y, const(v, x.dtype))
        return y

    return elementwise(inputs, call.out_shape, call.out_dtype, fn)


@lowering("cast")
def _cast(kb, call, inputs, dest):
    # no promotion: a cast converts the stored value directly (f16 -> f32 is exact, and
    # f32 -> f16 must round once)
    return elementwise(inputs, call.out_shape, call.out_dtype, lambda x: x, promote=False)


_BINARY = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: L.binary("div", a, b),
    "floor_divide": lambda a, b: L.binary("floordiv", a, b),
    "mod": lambda a, b: L.binary("floormod", a, b),
    "power": lambda a, b: L.binary("pow", a, b),
    "maximum": L.maximum,
    "minimum": L.minimum,
    "logical_and": lambda a, b: L.binary("and", a, b),
    "logical_or": lambda a, b: L.binary("or", a, b),
    "logical_xor": lambda a, b: L.binary("xor", a, b),
}
_COMPARE = {
    "equal": "eq",
    "not_equal": "ne",
    "less": "lt",
    "less_equal": "le",
    "greater": "gt",
    "greater_equal": "ge",
}


@lowering(*_BINARY)
def _binary(kb, call, inputs, dest):
    fn = _BINARY[call.op]
    if call.op == "floor_divide" and call.arg_types[0].dtype.is_float:
        fn = lambda a, b: L.unary("floor", a / b)  # noqa: E731  (numpy: floor of the quotient)
    return elementwise(inputs, call.out_shape, call.out_dtype, fn)


@lowering(*_COMPARE)
def _compare(kb, call, inputs, dest):
    op = _COMPARE[call.op]
    return elementwise(inputs, call.out_shape, call.out_dtype, lambda a, b: L.compare(op, a, b))


@lowering("where")
def _where(kb, call, inputs, dest):
    return elementwise(
        inputs, call.out_shape, call.out_dtype, lambda c, a, b: L.select(c, a, b), promote=False
    )


def fill_value(value, dtype: DType) -> L.Expr:
    """``value`` converted to ``dtype`` as numpy would, as an expression of that dtype."""
    v = np.asarray(value).astype(dtype.numpy)
    if dtype in (DType.float16, DType.bfloat16):
        return L.Cast(dtype, L.Const(float(v.astype(np.float32)), DType.float32))
    return L.Const(v.item(), dtype)


__all__ = ["const", "fill_value"]
