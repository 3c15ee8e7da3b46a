"""The ONNX form of elementwise IR ops: unary and binary ops (small integer types widened
where onnxruntime lacks them), activations, clip, modulo, ``where`` and ``cast``."""

from __future__ import annotations

import math

import numpy as np

from compiler.export.onnx.common import dtype_of, scalar_like
from compiler.export.onnx.registry import EXPORTERS, ExportError, exporter
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.ir.nodes import Call
from compiler.ir.types import DType

_UNARY = {
    "abs": "Abs",
    "neg": "Neg",
    "sign": "Sign",
    "relu": "Relu",
    "identity": "Identity",
    "logical_not": "Not",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "erf": "Erf",
    "sin": "Sin",
    "cos": "Cos",
    "floor": "Floor",
    "ceil": "Ceil",
    "round": "Round",
    "reciprocal": "Reciprocal",
    "softplus": "Softplus",
    "isnan": "IsNaN",
}
for _ir, _onnx in _UNARY.items():
    EXPORTERS[_ir] = lambda e, n, a, _op=_onnx: e.node(_op, [a[0]])

_BINARY = {
    "add": "Add",
    "subtract": "Sub",
    "multiply": "Mul",
    "divide": "Div",
    "power": "Pow",
    "maximum": "Max",
    "minimum": "Min",
    "equal": "Equal",
    "less": "Less",
    "less_equal": "LessOrEqual",
    "greater": "Greater",
    "greater_equal": "GreaterOrEqual",
    "logical_and": "And",
    "logical_or": "Or",
    "logical_xor": "Xor",
}
for _ir, _onnx in _BINARY.items():
    EXPORTERS[_ir] = lambda e, n, a, _op=_onnx: e.node(_op, [a[0], a[1]])

# onnxruntime's CPU kernels of these ops lack small integer and bool types: compute in i32
NARROW_DTYPES = (DType.int8, DType.int16, DType.uint8, DType.uint16, DType.bool)


def _widened(e, n: Call, a: list, op: str, **attrs) -> str:
    dtype = dtype_of(n.args[0])
    if dtype not in NARROW_DTYPES:
        return e.node(op, a, **attrs)
    wide = [e.node("Cast", [x], to=ONNX_DTYPE[DType.int32]) for x in a[:1]] + list(a[1:])
    if op in ("Max", "Min"):
        wide = [e.node("Cast", [x], to=ONNX_DTYPE[DType.int32]) for x in a]
    return e.node("Cast", [e.node(op, wide, **attrs)], to=ONNX_DTYPE[dtype])


EXPORTERS["maximum"] = lambda e, n, a: _widened(e, n, a, "Max")
EXPORTERS["minimum"] = lambda e, n, a: _widened(e, n, a, "Min")


@exporter("not_equal")
def _not_equal(e, n, a):
    return e.node("Not", [e.node("Equal", a)])


@exporter("rsqrt")
def _rsqrt(e, n, a):
    return e.node("Reciprocal", [e.node("Sqrt", a)])


@exporter("silu")
def _silu(e, n, a):
    return e.node("Mul", [a[0], e.node("Sigmoid", a)])


@exporter("log1p")
def _log1p(e, n, a):
    return e.node("Log", [e.node("Add", [a[0], scalar_like(e, 1, n.args[0])])])


@exporter("expm1")
def _expm1(e, n, a):
    return e.node("Sub", [e.node("Exp", a), scalar_like(e, 1, n.args[0])])


@exporter("gelu")
def _gelu(e, n, a):
    x = a[0]
    if e.opset >= 20:
        return e.node("Gelu", [x], approximate=n.attrs["approximate"])
    half, one = scalar_like(e, 0.5, n), scalar_like(e, 1.0, n)
    if n.attrs["approximate"] == "tanh":
        cube = e.node("Mul", [e.node("Mul", [x, x]), x])
        inner = e.node("Add", [x, e.node("Mul", [cube, scalar_like(e, 0.044715, n)])])
        scaled = e.node("Mul", [inner, scalar_like(e, math.sqrt(2 / math.pi), n)])
        gate = e.node("Add", [one, e.node("Tanh", [scaled])])
    else:
        gate = e.node(
            "Add", [one, e.node("Erf", [e.node("Div", [x, scalar_like(e, math.sqrt(2), n)])])]
        )
    return e.node("Mul", [e.node("Mul", [x, half]), gate])


@exporter("leaky_relu")
def _leaky_relu(e, n, a):
    return e.node("LeakyRelu", a, alpha=n.attrs["alpha"])


@exporter("clip")
def _clip(e, n, a):
    dtype = dtype_of(n)
    bounds = []
    for key, rounding in (("min", math.ceil), ("max", math.floor)):
        v = n.attrs[key]
        if v is None:
            bounds.append("")
            continue
        if dtype.is_int or dtype is DType.bool:
            info = np.iinfo(dtype.numpy) if dtype.is_int else None
            v = rounding(v)
            if info is not None:
                v = min(max(v, info.min), info.max)
        bounds.append(e.const(v, dtype))
    while bounds and bounds[-1] == "":
        bounds.pop()
    return e.node("Clip", [a[0], *bounds])


@exporter("floor_divide")
def _floor_divide(e, n, a):
    if dtype_of(n).is_float:
        return e.node("Floor", [e.node("Div", a)])
    # floor division of integers: (a - floor_mod(a, b)) / b is exact
    rem = e.node("Mod", a, fmod=0)
    return e.node("Div", [e.node("Sub", [a[0], rem]), a[1]])


@exporter("mod")
def _mod(e, n, a):
    if dtype_of(n).is_float:  # sign of the divisor: a - floor(a / b) * b
        q = e.node("Floor", [e.node("Div", a)])
        return e.node("Sub", [a[0], e.node("Mul", [q, a[1]])])
    return e.node("Mod", a, fmod=0)


@exporter("where")
def _where_op(e, n, a):
    return e.node("Where", a)


# ----- low-precision dtypes (#17 dtypes) ---------------------------------------------------
# The IR's cast to a float8 type does not saturate (ml_dtypes); ONNX's Cast does by default.

_FLOAT8 = (DType.float8e4m3fn, DType.float8e4m3fnuz, DType.float8e5m2, DType.float8e5m2fnuz)
# the opset whose Cast first takes each low-precision type
_SINCE = {DType.float4e2m1: 23, DType.float8e8m0: 24, DType.int2: 25, DType.uint2: 25}
_SINCE |= {d: 19 for d in _FLOAT8} | {DType.int4: 21, DType.uint4: 21}


@exporter("cast")
def _cast(e, n, a):
    dtype, src = n.attrs["dtype"], dtype_of(n.args[0])
    need = max(_SINCE.get(dtype, 0), _SINCE.get(src, 0))
    if e.opset < need:
        what = dtype if _SINCE.get(dtype, 0) == need else src
        raise ExportError(
            f"a cast of {what.name} values needs opset {need} or newer, got {e.opset}"
        )
    if dtype in _FLOAT8:
        return e.node("Cast", a, to=ONNX_DTYPE[dtype], saturate=0)
    return e.node("Cast", a, to=ONNX_DTYPE[dtype])
