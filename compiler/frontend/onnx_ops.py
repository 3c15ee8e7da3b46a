"""Converters from ONNX operators (ai.onnx opsets 11 to the newest onnx knows; 13-21 claimed)
to IR ops, one function per ONNX op or family.

A converter is registered with ``@converter(op_type, attrs=..., min_version=...)``: ``attrs``
lists every attribute it understands (a node with another attribute is reported as
unsupported, so a later op version that adds an attribute is never converted wrongly), and
``min_version`` is the oldest op version (schema ``since_version``) whose semantics it
implements. It receives a :class:`~compiler.frontend.onnx_context.ConvertContext` and returns
an IR expression, or a sequence with one per ONNX output (None for outputs it cannot give).

Inputs that are shapes, pads, axes, repeats, ... use their values when they are constants
(an initializer or a Constant node) and the IR op's tensor-input form when they are computed
(``reshape``, ``pad``); where the IR op has no tensor-input form, a computed shape is expressed
with existing ops (a filled tensor of a computed shape is an ``edge`` pad of a one-element
tensor) or reported as unsupported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.frontend.onnx_context import (
    MAX_IMPORT_ELEMENTS,
    MAX_RANK,
    ConversionError,
    ConvertContext,
    Unsupported,
    dtype_of,
    tensor_value,
)
from compiler.ir.nodes import Constant, Expr, If, IRError
from compiler.ir.symbolic import ANY, Dim, SymExpr, dim_add, dim_mul, dim_str, dims_equal
from compiler.ir.symbolic import floordiv as dim_floordiv
from compiler.ir.types import DType
from compiler.ops.shape_inference import broadcast_shapes


@dataclass(frozen=True)
class OnnxConverter:
    """How one ONNX op type is converted."""

    op_type: str
    fn: Callable[[ConvertContext], Any]
    attrs: frozenset
    min_version: int = 1


CONVERTERS: dict[str, OnnxConverter] = {}


def converter(*op_types: str, attrs: Sequence[str] = (), min_version: int = 1):
    """Register ``fn`` as the converter of ``op_types`` (see the module docstring)."""

    def deco(fn):
        for t in op_types:
            if t in CONVERTERS:
                raise ValueError(f"ONNX op {t} has two converters")
            CONVERTERS[t] = OnnxConverter(t, fn, frozenset(attrs), min_version)
        return fn

    return deco


def supported_ops() -> list[str]:
    """The ONNX op types passlens converts, sorted."""
    return sorted(CONVERTERS)


# ----- shared helpers ---------------------------------------------------------------------

I64 = DType.int64


def _axis(ctx: ConvertContext, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ConversionError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def _static(d: Dim, ctx: ConvertContext, what: str) -> int:
    if not isinstance(d, int):
        raise Unsupported(f"{ctx.node.op_type} needs a static {what}, got {dim_str(d)}")
    return d


def _float_scalar(value: np.ndarray, what: str) -> float:
    if value.size != 1:
        raise ConversionError(f"{what} must hold one value, got shape {list(value.shape)}")
    return float(value.reshape(-1)[0])


def _cast(ctx: ConvertContext, x: Expr, dtype: DType) -> Expr:
    return x if x.ty.dtype is dtype else ctx.call("cast", x, dtype=dtype)


def _filled(ctx: ConvertContext, shape: Expr, value: Any, dtype: DType) -> Expr:
    """A tensor of a computed shape (a 1-D tensor of static length) filled with ``value``: an
    empty tensor of that rank padded (constant mode) by ``shape`` at the end of each axis."""
    st = shape.ty
    if st.shape is None or len(st.shape) != 1 or not isinstance(st.shape[0], int):
        raise Unsupported(f"{ctx.node.op_type} with a shape input of unknown length")
    rank = st.shape[0]
    if rank > MAX_RANK:
        raise ConversionError(f"the shape has {rank} values: more than {MAX_RANK} dims")
    if rank == 0:
        return ctx.constant(value, dtype)
    value = np.asarray(value).astype(dtype.numpy)
    exact = dtype is DType.bool or float(value) == value
    empty = ctx.constant(np.zeros((0,) * rank), dtype)
    pads = ctx.call("concat", ctx.constant(np.zeros(rank), I64), _cast(ctx, shape, I64), axis=0)
    filled = ctx.call("pad", empty, pads, value=float(value) if exact else 0.0)
    if exact:
        return filled
    return ctx.call("add", filled, ctx.constant(value, dtype))  # beyond float precision


# ----- computed (runtime) shape arguments -------------------------------------------------
#
# When an axes / starts / repeats / k input is a computed value and the IR op wants an
# attribute, the node is expressed with ops that take tensors: index ranges built from a
# filled tensor and an exclusive cumsum, ``take`` with them, and, where the result's rank
# depends on the values (axes), one ``If`` per possible axis.


def _scalar_i64(ctx: ConvertContext, e: Expr) -> Expr:
    """``e`` (one element) as a 0-d i64 tensor."""
    e = _cast(ctx, e, I64)
    return e if e.ty.shape == () else ctx.call("reshape", e, shape=[])


def _item(ctx: ConvertContext, vec: Expr, k: int) -> Expr:
    """Element ``k`` of a 1-D tensor, as a 0-d i64 tensor."""
    return ctx.call("take", _cast(ctx, vec, I64), ctx.constant(k, I64), axis=0)


def _dim_value(ctx: ConvertContext, x: Expr, axis: int) -> Expr:
    """Dim ``axis`` of ``x`` as a 0-d i64 tensor (a constant when static)."""
    d = x.ty.shape[axis] if x.ty.shape is not None else ANY
    if isinstance(d, int):
        return ctx.constant(d, I64)
    return ctx.call("take", ctx.call("shape_of", x), ctx.constant(axis, I64), axis=0)


def _index_range(ctx: ConvertContext, start: Expr, stop: Expr, step: Expr) -> Expr:
    """``range(start, stop, step)`` for 0-d i64 tensors, as a 1-D i64 tensor."""
    # length: ceil((stop - start) / step) = -((start - stop) // step), at least 0
    n = ctx.call("neg", ctx.call("floor_divide", ctx.call("subtract", start, stop), step))
    n = ctx.call("maximum", ctx.call("reshape", n, shape=[1]), ctx.constant([0], I64))
    steps = ctx.call("cumsum", _filled(ctx, n, 1, I64), axis=0, exclusive=True)
    return ctx.call("add", start, ctx.call("multiply", steps, step))


def _normalized_axes(ctx: ConvertContext, axes: Expr, rank: int) -> Expr:
    """A computed axes tensor with negative axes counted from the end (``a + rank``)."""
    axes = _cast(ctx, axes, I64)
    negative = ctx.call("less", axes, ctx.constant(0, I64))
    return ctx.call("where", negative, ctx.call("add", axes, ctx.constant(rank, I64)), axes)


def _contains(ctx: ConvertContext, vec: Expr, value: int) -> Expr:
    """Whether a 1-D i64 tensor holds ``value``, as a 0-d bool (false when it is empty)."""
    hits = _cast(ctx, ctx.call("equal", vec, ctx.constant(value, I64)), I64)
    return ctx.call("greater", ctx.call("sum", hits), ctx.constant(0, I64))


def _select(ctx: ConvertContext, cond: Expr, then_value: Expr, else_value: Expr) -> Expr:
    """``If(cond) {then_value} else {else_value}`` where ``then_value`` is a single new call
    on values bound outside (so the branch binds only it) and ``else_value`` is bound outside."""
    from compiler.ir.nodes import Block, is_leaf

    then_bindings = [] if is_leaf(then_value) else [then_value]
    return If(cond, Block(then_bindings, then_value), Block([], else_value), prov=ctx.prov)


def _reduce_over_computed_axes(ctx, x: Expr, axes: Expr, op: str, keep: bool, noop: bool):
    """A reduction over computed axes: one If per axis (from the last, so removing an axis
    leaves the lower ones in place), then an If choosing every axis when axes is empty."""
    rank = ctx.rank(0)
    norm = _normalized_axes(ctx, axes, rank)
    y = x
    for a in reversed(range(rank)):
        y = _select(ctx, _contains(ctx, norm, a), ctx.call(op, y, axes=[a], keepdims=keep), y)
    length = axes.ty.shape[0] if axes.ty.shape is not None and len(axes.ty.shape) == 1 else ANY
    if noop or (isinstance(length, int) and length > 0):
        return y
    if isinstance(length, int) and length == 0:
        return ctx.call(op, x, keepdims=keep)
    empty = ctx.call("equal", ctx.call("prod", ctx.call("shape_of", axes)), ctx.constant(0, I64))
    return _select(ctx, empty, ctx.call(op, x, keepdims=keep), y)


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
        if ir_op in ("abs", "sign", "neg") and x.ty.dtype is DType.uint8:
            if ir_op == "abs":
                return ctx.call("identity", x)
            if ir_op == "sign":
                return _cast(ctx, ctx.call("greater", x, ctx.like(0, x)), DType.uint8)
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


@converter("Selu", attrs=("alpha", "gamma"))
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


@converter("PRelu")
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


_BINARY = {
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


for _onnx, _ir in _BINARY.items():
    converter(_onnx)(_binary(_ir))


@converter("Pow")
def _pow(ctx):
    x, y = ctx.input(0), ctx.input(1)
    dx, dy = x.ty.dtype, y.ty.dtype
    if dx is dy:
        return ctx.call("power", x, y)
    if dx.is_float:
        return ctx.call("power", x, _cast(ctx, y, dx))
    # an integer base with a float exponent: compute in float64, the result has the base type
    wide = ctx.call("power", _cast(ctx, x, DType.float64), _cast(ctx, y, DType.float64))
    return _cast(ctx, wide, dx)


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
            min=None if lo is None else _float_scalar(lo_v, "min"),
            max=None if hi is None else _float_scalar(hi_v, "max"),
        )
    y = x
    if lo is not None:
        y = ctx.call("maximum", y, lo)
    if hi is not None:
        y = ctx.call("minimum", y, hi)
    return y if y is not x else ctx.call("identity", x)


@converter("Cast", attrs=("to", "saturate", "round_mode"))
def _cast_op(ctx):
    if ctx.attr("round_mode", "up") != "up":
        raise Unsupported("round_mode other than up")
    return ctx.call("cast", ctx.input(0), dtype=dtype_of(ctx.attr("to")))


@converter("CastLike", attrs=("saturate", "round_mode"))
def _cast_like(ctx):
    if ctx.attr("round_mode", "up") != "up":
        raise Unsupported("round_mode other than up")
    return ctx.call("cast", ctx.input(0), dtype=ctx.ty(1).dtype)


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


@converter("Dropout", attrs=("seed", "ratio"))
def _dropout(ctx):
    x = ctx.input(0)
    training = ctx.const(2)
    if ctx.has(2) and (training is None or bool(training.reshape(-1)[0])):
        raise Unsupported("training mode")
    mask = ctx.call("full_like", x, value=1.0, dtype=DType.bool)
    return ctx.call("identity", x), mask


# ----- matrix products and convolutions ---------------------------------------------------


@converter("MatMul")
def _matmul(ctx):
    return ctx.call("matmul", ctx.input(0), ctx.input(1))


@converter("Gemm", attrs=("alpha", "beta", "transA", "transB"), min_version=7)
def _gemm(ctx):
    a, b = ctx.input(0), ctx.input(1)
    c = ctx.inputs[2] if ctx.has(2) else None
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    if ctx.attr("transA", 0):
        a = ctx.call("permute_dims", a, axes=[1, 0])
    trans_b = bool(ctx.attr("transB", 0))
    bshape = b.ty.shape
    as_linear = (
        trans_b
        and alpha == 1.0
        and bshape is not None
        and len(bshape) == 2
        and (
            c is None
            or (
                beta == 1.0
                and c.ty.shape is not None
                and len(c.ty.shape) == 1
                and dims_equal(c.ty.shape[0], bshape[0])
            )
        )
    )
    if as_linear:  # torch's Linear, exported as Gemm(transB=1)
        return ctx.call("linear", a, b, *([c] if c is not None else []))
    if trans_b:
        b = ctx.call("permute_dims", b, axes=[1, 0])
    y = ctx.call("matmul", a, b)
    if alpha != 1.0:
        y = ctx.call("multiply", y, ctx.like(alpha, y))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = ctx.call("multiply", c, ctx.like(beta, c))
        y = ctx.call("add", y, c)
    return y


def _auto_pads(ctx, spatial, kernel, strides, dilations) -> list[int]:
    """Explicit pads (begins then ends) for auto_pad SAME_UPPER / SAME_LOWER / VALID."""
    mode = ctx.attr("auto_pad", "NOTSET")
    nd = len(kernel)
    if mode in ("NOTSET", ""):
        pads = ctx.attr("pads") or [0] * (2 * nd)
        if len(pads) != 2 * nd:
            raise ConversionError(f"pads {pads} must have {2 * nd} values")
        return list(pads)
    if mode == "VALID":
        return [0] * (2 * nd)
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise ConversionError(f"unknown auto_pad {mode!r}")
    begins, ends = [], []
    for d, k, s, dil in zip(spatial, kernel, strides, dilations, strict=True):
        extent = (k - 1) * dil + 1
        if isinstance(d, int):
            out = -(-d // s)
            total = max((out - 1) * s + extent - d, 0)
        elif s == 1:
            total = extent - 1
        else:
            raise Unsupported(f"auto_pad {mode} with stride {s} on the symbolic dim {d}")
        small = total // 2
        begin = small if mode == "SAME_UPPER" else total - small
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def _window_attrs(ctx, x: Expr, kernel: Sequence[int] | None = None):
    rank = ctx.rank(0)
    nd = rank - 2
    if nd < 1:
        raise ConversionError(f"needs a (batch, channels, ...) input, got {x.ty}")
    kernel = list(kernel if kernel is not None else ctx.attr("kernel_shape") or [])
    if len(kernel) != nd:
        raise ConversionError(f"kernel_shape {kernel} must have {nd} values")
    strides = list(ctx.attr("strides") or [1] * nd)
    dilations = list(ctx.attr("dilations") or [1] * nd)
    pads = _auto_pads(ctx, x.ty.shape[2:], kernel, strides, dilations)
    return nd, kernel, strides, dilations, pads


@converter("Conv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def _conv(ctx):
    x, w = ctx.input(0), ctx.input(1)
    wshape = w.ty.shape
    if wshape is None:
        raise Unsupported("a weight of unknown rank")
    kernel = ctx.attr("kernel_shape") or [_static(d, ctx, "kernel size") for d in wshape[2:]]
    nd, kernel, strides, dilations, pads = _window_attrs(ctx, x, kernel)
    if nd > 2:
        raise Unsupported(f"{nd}-D convolution")
    bias = [ctx.input(2)] if ctx.has(2) else []
    return ctx.call(
        f"conv{nd}d",
        x,
        w,
        *bias,
        strides=strides,
        padding=pads,
        dilation=dilations,
        groups=ctx.attr("group", 1),
    )


@converter(
    "ConvTranspose",
    attrs=(
        "auto_pad",
        "dilations",
        "group",
        "kernel_shape",
        "output_padding",
        "output_shape",
        "pads",
        "strides",
    ),
)
def _conv_transpose(ctx):
    """A transposed convolution as a convolution: the input spread out by the strides (zeros
    between elements), padded by dilation*(kernel-1) - pads (negative pads crop), convolved
    with the kernel flipped and its channel axes swapped."""
    x, w = ctx.input(0), ctx.input(1)
    rank = ctx.rank(0)
    nd = rank - 2
    if nd not in (1, 2):
        raise Unsupported(f"{nd}-D transposed convolution")
    if w.ty.shape is None or len(w.ty.shape) != rank:
        raise ConversionError(f"the weight must have rank {rank}, got {w.ty}")
    c_in, c_out_g, *kernel = (_static(d, ctx, "weight dim") for d in w.ty.shape)
    kernel = list(ctx.attr("kernel_shape") or kernel)
    strides = list(ctx.attr("strides") or [1] * nd)
    dilations = list(ctx.attr("dilations") or [1] * nd)
    out_pad = list(ctx.attr("output_padding") or [0] * nd)
    groups = ctx.attr("group", 1)
    spatial = x.ty.shape[2:]
    if "output_shape" in ctx.attrs or ctx.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        out_shape = list(ctx.attr("output_shape") or [])
        if "output_shape" not in ctx.attrs:
            out_shape = [
                _static(d, ctx, "spatial dim") * s for d, s in zip(spatial, strides, strict=True)
            ]
        out_shape = out_shape[-nd:]
        total = [
            s * (_static(d, ctx, "spatial dim") - 1) + op + (k - 1) * dl + 1 - o
            for d, s, op, k, dl, o in zip(
                spatial, strides, out_pad, kernel, dilations, out_shape, strict=True
            )
        ]
        upper = ctx.attr("auto_pad", "NOTSET") == "SAME_UPPER"
        begins = [t // 2 if upper else t - t // 2 for t in total]
        pads = begins + [t - b for t, b in zip(total, begins, strict=True)]
    else:
        pads = list(ctx.attr("pads") or [0] * (2 * nd))
    if nd == 1:  # work on (N, C, 1, W)
        x = ctx.call("unsqueeze", x, axes=[2])
        w = ctx.call("unsqueeze", w, axes=[2])
        kernel, strides, dilations, out_pad = (
            [1, *kernel],
            [1, *strides],
            [1, *dilations],
            [0, *out_pad],
        )
        pads = [0, pads[0], 0, pads[1]]
    # spread the input: (N, C, H, 1, W, 1) padded to (N, C, H, s, W, s), merged, last s-1 cut
    n, c, h, wd = x.ty.shape
    y = x
    if any(s > 1 for s in strides):
        y = ctx.call("unsqueeze", y, axes=[3, 5])
        y = ctx.call("pad", y, pads=[0] * 6 + [0, 0, 0, strides[0] - 1, 0, strides[1] - 1])
        y = ctx.call("reshape", y, shape=[n, c, h * strides[0], wd * strides[1]])
        y = ctx.call(
            "strided_slice",
            y,
            begin=[0, 0],
            end=[-(strides[0] - 1) or 2**62, -(strides[1] - 1) or 2**62],
            axes=[2, 3],
        )
    edge = [(k - 1) * d for k, d in zip(kernel, dilations, strict=True)]
    y = ctx.call(
        "pad",
        y,
        pads=[
            0,
            0,
            edge[0] - pads[0],
            edge[1] - pads[1],
            0,
            0,
            edge[0] - pads[2] + out_pad[0],
            edge[1] - pads[3] + out_pad[1],
        ],
    )
    # weight (C_in, C_out/g, kh, kw) -> (C_out, C_in/g, kh, kw), flipped
    kh, kw = kernel
    wt = ctx.call("reshape", w, shape=[groups, c_in // groups, c_out_g, kh, kw])
    wt = ctx.call("permute_dims", wt, axes=[0, 2, 1, 3, 4])
    wt = ctx.call("reshape", wt, shape=[groups * c_out_g, c_in // groups, kh, kw])
    wt = ctx.call(
        "strided_slice", wt, begin=[-1, -1], end=[-(2**62), -(2**62)], strides=[-1, -1], axes=[2, 3]
    )
    bias = [ctx.input(2)] if ctx.has(2) else []
    out = ctx.call("conv2d", y, wt, *bias, dilation=dilations, groups=groups)
    return ctx.call("squeeze", out, axes=[2]) if nd == 1 else out


def _pool(ctx, ir_op: str, **extra):
    x = ctx.input(0)
    nd, kernel, strides, dilations, pads = _window_attrs(ctx, x)
    if nd > 2:
        raise Unsupported(f"{nd}-D pooling")
    attrs = dict(extra, ceil_mode=bool(ctx.attr("ceil_mode", 0)))
    if ir_op == "max_pool2d":
        attrs["dilation"] = dilations if nd == 2 else [1, *dilations]
    elif any(d != 1 for d in dilations):
        raise Unsupported("dilations")
    if nd == 2:
        return ctx.call(ir_op, x, pool_size=kernel, strides=strides, padding=pads, **attrs)
    # 1-D: pool a (N, C, 1, W) view
    x4 = ctx.call("unsqueeze", x, axes=[2])
    y = ctx.call(
        ir_op,
        x4,
        pool_size=[1, *kernel],
        strides=[1, *strides],
        padding=[0, pads[0], 0, pads[1]],
        **attrs,
    )
    return ctx.call("squeeze", y, axes=[2])


@converter(
    "MaxPool",
    attrs=(
        "auto_pad",
        "ceil_mode",
        "dilations",
        "kernel_shape",
        "pads",
        "storage_order",
        "strides",
    ),
    min_version=8,
)
def _max_pool(ctx):
    return _pool(ctx, "max_pool2d")


@converter(
    "AveragePool",
    attrs=(
        "auto_pad",
        "ceil_mode",
        "count_include_pad",
        "dilations",
        "kernel_shape",
        "pads",
        "strides",
    ),
    min_version=7,
)
def _avg_pool(ctx):
    if not ctx.ty(0).dtype.is_float:
        raise ConversionError("AveragePool needs a floating-point input")
    return _pool(ctx, "avg_pool2d", count_include_pad=bool(ctx.attr("count_include_pad", 0)))


def _spatial_axes(ctx) -> list[int]:
    rank = ctx.rank(0)
    if rank < 3:
        raise ConversionError(f"needs a (batch, channels, ...) input, got {ctx.ty(0)}")
    return list(range(2, rank))


@converter("GlobalAveragePool")
def _global_avg(ctx):
    return ctx.call("mean", ctx.input(0), axes=_spatial_axes(ctx), keepdims=True)


@converter("GlobalMaxPool")
def _global_max(ctx):
    return ctx.call("max", ctx.input(0), axes=_spatial_axes(ctx), keepdims=True)


def _lp_norm(ctx, x: Expr, axes, p: int, keepdims: bool = True) -> Expr:
    if p == 1:
        return ctx.call("sum", ctx.call("abs", x), axes=axes, keepdims=keepdims)
    if p == 2:
        sq = ctx.call("multiply", x, x)
        return ctx.call("sqrt", ctx.call("sum", sq, axes=axes, keepdims=keepdims))
    powered = ctx.call("power", ctx.call("abs", x), ctx.like(p, x))
    total = ctx.call("sum", powered, axes=axes, keepdims=keepdims)
    return ctx.call("power", total, ctx.like(1.0 / p, x))


@converter("GlobalLpPool", attrs=("p",))
def _global_lp(ctx):
    return _lp_norm(ctx, ctx.input(0), _spatial_axes(ctx), ctx.attr("p", 2))


@converter("LpNormalization", attrs=("axis", "p"))
def _lp_normalization(ctx):
    x = ctx.input(0)
    p = ctx.attr("p", 2)
    if p not in (1, 2):
        raise ConversionError(f"p must be 1 or 2, got {p}")
    axis = _axis(ctx, ctx.attr("axis", -1), ctx.rank(0))
    norm = _lp_norm(ctx, x, [axis], p)
    zero = ctx.like(0, x)
    # a zero norm gives 0, not 0 / 0
    safe = ctx.call("where", ctx.call("equal", norm, zero), ctx.like(1, x), norm)
    return ctx.call("where", ctx.call("equal", norm, zero), zero, ctx.call("divide", x, safe))


# ----- normalisation ----------------------------------------------------------------------


@converter(
    "BatchNormalization", attrs=("epsilon", "momentum", "training_mode", "spatial"), min_version=9
)
def _batch_norm(ctx):
    if ctx.attr("training_mode", 0):
        raise Unsupported("training_mode=1")
    args = [ctx.input(i) for i in range(5)]
    return ctx.call("batch_norm", *args, axis=1, epsilon=ctx.attr("epsilon", 1e-5))


@converter("InstanceNormalization", attrs=("epsilon",))
def _instance_norm(ctx):
    x = ctx.input(0)
    if ctx.rank(0) < 3:
        raise ConversionError(f"needs a (batch, channels, ...) input, got {x.ty}")
    channels = _static(x.ty.shape[1], ctx, "channel count")
    return ctx.call(
        "group_norm",
        x,
        ctx.input(1),
        ctx.input(2),
        num_groups=channels,
        epsilon=ctx.attr("epsilon", 1e-5),
    )


def _same_dims(a: tuple | None, b: Sequence[Dim]) -> bool:
    return (
        a is not None
        and len(a) == len(b)
        and all(dims_equal(x, y) is True for x, y in zip(a, b, strict=True))
    )


@converter("LayerNormalization", attrs=("axis", "epsilon", "stash_type"))
def _layer_norm(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = _axis(ctx, ctx.attr("axis", -1), rank)
    axes = list(range(axis, rank))
    eps = ctx.attr("epsilon", 1e-5)
    scale = ctx.input(1)
    bias = ctx.inputs[2] if ctx.has(2) else None
    normalized = x.ty.shape[axis:]
    params_fit = _same_dims(scale.ty.shape, normalized) and (
        bias is None or _same_dims(bias.ty.shape, normalized)
    )
    if params_fit:
        y = ctx.call("layer_norm", x, scale, *([bias] if bias else []), axes=axes, epsilon=eps)
    else:  # scale / bias broadcast to the normalized dims
        y = ctx.call("layer_norm", x, axes=axes, epsilon=eps)
        y = ctx.call("multiply", y, scale)
        if bias is not None:
            y = ctx.call("add", y, bias)
    wanted = [bool(n) for n in ctx.node.output]
    if len(wanted) < 2 or not any(wanted[1:]):
        return y
    stats = _cast(ctx, x, DType.float32)  # Mean and InvStdDev are float32 (stash_type 1)
    if ctx.attr("stash_type", 1) != 1:
        raise Unsupported("stash_type other than 1 (float32)")
    mean = ctx.call("mean", stats, axes=axes, keepdims=True)
    var = ctx.call("variance", stats, axes=axes, keepdims=True)
    inv_std = ctx.call("rsqrt", ctx.call("add", var, ctx.like(eps, var)))
    return y, mean, inv_std


@converter("GroupNormalization", attrs=("epsilon", "num_groups", "stash_type"), min_version=18)
def _group_norm(ctx):
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    groups = ctx.attr("num_groups")
    if groups is None:
        raise ConversionError("needs num_groups")
    if ctx.rank(0) < 2:
        raise ConversionError(f"needs a (batch, channels, ...) input, got {x.ty}")
    channels = x.ty.shape[1]
    if ctx.version < 21:  # opset 18: one scale and bias per group
        c = _static(channels, ctx, "channel count")
        if c % groups:
            raise ConversionError(f"{c} channels are not divisible by num_groups={groups}")
        scale = ctx.call("repeat", scale, repeats=c // groups, axis=0)
        bias = ctx.call("repeat", bias, repeats=c // groups, axis=0)
    return ctx.call(
        "group_norm", x, scale, bias, num_groups=groups, epsilon=ctx.attr("epsilon", 1e-5)
    )


@converter("MeanVarianceNormalization", attrs=("axes",))
def _mvn(ctx):
    x = ctx.input(0)
    axes = list(ctx.attr("axes", [0, 2, 3]))
    mean = ctx.call("mean", x, axes=axes, keepdims=True)
    mean_sq = ctx.call("mean", ctx.call("multiply", x, x), axes=axes, keepdims=True)
    std = ctx.call("sqrt", ctx.call("subtract", mean_sq, ctx.call("multiply", mean, mean)))
    return ctx.call(
        "divide", ctx.call("subtract", x, mean), ctx.call("add", std, ctx.like(1e-9, x))
    )


@converter("RMSNormalization", attrs=("axis", "epsilon", "stash_type"))
def _rms_norm(ctx):
    x, scale = ctx.input(0), ctx.input(1)
    rank = ctx.rank(0)
    axes = list(range(_axis(ctx, ctx.attr("axis", -1), rank), rank))
    xf = _cast(ctx, x, DType.float32) if ctx.attr("stash_type", 1) == 1 else x
    ms = ctx.call("mean", ctx.call("multiply", xf, xf), axes=axes, keepdims=True)
    inv = ctx.call("rsqrt", ctx.call("add", ms, ctx.like(ctx.attr("epsilon", 1e-5), ms)))
    y = _cast(ctx, ctx.call("multiply", xf, inv), x.ty.dtype)
    return ctx.call("multiply", y, scale)


@converter("LRN", attrs=("alpha", "beta", "bias", "size"))
def _lrn(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    size = ctx.attr("size")
    alpha, beta, bias = ctx.attr("alpha", 1e-4), ctx.attr("beta", 0.75), ctx.attr("bias", 1.0)
    channels = _static(x.ty.shape[1], ctx, "channel count")
    if not isinstance(size, int) or not 1 <= size <= 2 * channels + 1 or size > MAX_RANK:
        raise ConversionError(f"size {size} must be a window of at most {MAX_RANK} channels")
    sq = ctx.call("multiply", x, x)
    before = (size - 1) // 2
    pads = [0] * (2 * rank)
    pads[1], pads[rank + 1] = before, size - 1 - before
    padded = ctx.call("pad", sq, pads=pads)
    total = None
    for k in range(size):
        window = ctx.call("strided_slice", padded, begin=[k], end=[k + channels], axes=[1])
        total = window if total is None else ctx.call("add", total, window)
    scale = ctx.call(
        "add", ctx.like(bias, x), ctx.call("multiply", total, ctx.like(alpha / size, x))
    )
    return ctx.call("divide", x, ctx.call("power", scale, ctx.like(beta, x)))


@converter("Softmax", "LogSoftmax", attrs=("axis",), min_version=13)
def _softmax(ctx):
    op = "softmax" if ctx.node.op_type == "Softmax" else "log_softmax"
    return ctx.call(op, ctx.input(0), axis=ctx.attr("axis", -1))


@converter("Hardmax", attrs=("axis",), min_version=13)
def _hardmax(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = _axis(ctx, ctx.attr("axis", -1), rank)
    depth = _static(x.ty.shape[axis], ctx, "axis size")
    idx = ctx.call("argmax", x, axis=axis, keepdims=False)
    return ctx.call("one_hot", idx, depth=depth, axis=axis, dtype=x.ty.dtype)


# ----- reductions -------------------------------------------------------------------------


_REDUCE_ATTRS = ("axes", "keepdims", "noop_with_empty_axes")
# (elementwise before, reduction, elementwise after, computes in floating point)
_REDUCTIONS = {
    "ReduceSum": (None, "sum", None, False),
    "ReduceMean": (None, "mean", None, True),
    "ReduceMax": (None, "max", None, False),
    "ReduceMin": (None, "min", None, False),
    "ReduceProd": (None, "prod", None, False),
    "ReduceL1": ("abs", "sum", None, False),
    "ReduceL2": ("square", "sum", "sqrt", True),
    "ReduceSumSquare": ("square", "sum", None, False),
    "ReduceLogSum": (None, "sum", "log", True),
    "ReduceLogSumExp": ("exp", "sum", "log", True),
}


def _reduce(kind: str):
    before, op, after, wants_float = _REDUCTIONS[kind]

    def convert(ctx: ConvertContext) -> Expr:
        x = ctx.input(0)
        keep = bool(ctx.attr("keepdims", 1))
        noop = bool(ctx.attr("noop_with_empty_axes", 0))
        dtype = x.ty.dtype
        y = _cast(ctx, x, DType.float64) if wants_float and not dtype.is_float else x
        if before == "square":
            y = ctx.call("multiply", y, y)
        elif before is not None:
            y = ctx.call(before, y)
        if "axes" in ctx.attrs:
            axes: Any = list(ctx.attr("axes"))
        elif ctx.has(1) and ctx.const(1) is None:
            axes = ctx.input(1)  # computed
        else:
            axes = ctx.const_ints(1, "axes")
        if isinstance(axes, Expr):
            out = _reduce_over_computed_axes(ctx, y, axes, op, keep, noop)
        elif not axes and noop:
            out = y if y is not x else ctx.call("identity", x)
        else:
            if op in ("max", "min"):
                y = _pad_for_empty_extreme(ctx, y, axes or None, op)
            out = ctx.call(op, y, axes=axes or None, keepdims=keep)
        if after is not None:
            out = ctx.call(after, out)
        return _cast(ctx, out, dtype)

    return convert


def _pad_for_empty_extreme(ctx, y: Expr, axes, op: str) -> Expr:
    """ONNX's max (min) over an empty axis is the lowest (highest) value: when a reduced axis
    is statically empty, append that value along it so the IR reduction has an element."""
    shape = y.ty.shape
    if shape is None:
        return y
    rank = len(shape)
    reduced = range(rank) if axes is None else [a % rank for a in axes if -rank <= a < rank]
    empty = [a for a in reduced if isinstance(shape[a], int) and shape[a] == 0]
    if not empty:
        return y
    dtype = y.ty.dtype
    if dtype is DType.bool:
        fill = 0.0 if op == "max" else 1.0
    elif dtype.is_float:
        fill = -np.inf if op == "max" else np.inf
    else:
        info = np.iinfo(dtype.numpy)
        fill = float(info.min if op == "max" else info.max)
    pads = [0] * (2 * rank)
    for a in empty:
        pads[rank + a] = 1
    return ctx.call("pad", y, pads=pads, value=fill)


for _kind in _REDUCTIONS:
    converter(_kind, attrs=_REDUCE_ATTRS, min_version=11)(_reduce(_kind))


@converter("ArgMax", "ArgMin", attrs=("axis", "keepdims", "select_last_index"))
def _arg(ctx):
    x = ctx.input(0)
    op = "argmax" if ctx.node.op_type == "ArgMax" else "argmin"
    rank = ctx.rank(0)
    axis = _axis(ctx, ctx.attr("axis", 0), rank)
    keep = bool(ctx.attr("keepdims", 1))
    if not ctx.attr("select_last_index", 0):
        return ctx.call(op, x, axis=axis, keepdims=keep)
    # the last extreme index: the first in the reversed axis, counted from the end
    n = x.ty.shape[axis]
    rev = ctx.call("strided_slice", x, begin=[-1], end=[-(2**63) + 1], strides=[-1], axes=[axis])
    idx = ctx.call(op, rev, axis=axis, keepdims=keep)
    if isinstance(n, int):
        last = ctx.constant(n - 1, I64)
    else:
        size = ctx.call("take", ctx.call("shape_of", x), ctx.constant(axis, I64), axis=0)
        last = ctx.call("subtract", size, ctx.constant(1, I64))
    return ctx.call("subtract", last, idx)


@converter("CumSum", attrs=("exclusive", "reverse"))
def _cumsum(ctx):
    x = ctx.input(0)
    flags = {"exclusive": bool(ctx.attr("exclusive", 0)), "reverse": bool(ctx.attr("reverse", 0))}
    if ctx.const(1) is not None:
        axis = ctx.const_ints(1, "axis")
        if len(axis) != 1:
            raise ConversionError("needs one axis")
        return ctx.call("cumsum", x, axis=axis[0], **flags)
    # a computed axis: the cumsum along each possible axis, chosen by Ifs
    rank = ctx.rank(0)
    axis = _normalized_axes(ctx, ctx.input(1), rank)
    if axis.ty.shape != ():
        axis = ctx.call("reshape", axis, shape=[])
    out = ctx.call("cumsum", x, axis=0, **flags)
    for a in range(1, rank):
        is_a = ctx.call("equal", axis, ctx.constant(a, I64))
        out = _select(ctx, is_a, ctx.call("cumsum", x, axis=a, **flags), out)
    return out


# ----- shapes -----------------------------------------------------------------------------


@converter("Reshape", attrs=("allowzero",), min_version=5)
def _reshape(ctx):
    x = ctx.input(0)
    allowzero = bool(ctx.attr("allowzero", 0))
    target = ctx.const(1)
    if target is None:
        dims = ctx.dims(1)
        if dims is not None and _is_shape(dims):  # [batch, seq, 4, 16]: a symbolic result
            try:
                return ctx.call("reshape", x, shape=dims, allowzero=allowzero)
            except IRError:
                pass  # not expressible in dims (a -1 over symbolic sizes): computed below
        return ctx.call("reshape", x, _cast(ctx, ctx.input(1), I64), allowzero=allowzero)
    return ctx.call("reshape", x, shape=[int(v) for v in target.reshape(-1)], allowzero=allowzero)


@converter("Flatten", attrs=("axis",), min_version=9)
def _flatten(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = ctx.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise ConversionError(f"axis {axis} is out of range for rank {rank}")
    if axis < 0:
        axis += rank
    if rank == 0:
        return ctx.call("reshape", x, shape=[1, 1])
    if axis == 0:
        y = ctx.call("flatten", x)
        return ctx.call("unsqueeze", y, axes=[0])
    if axis == rank:
        y = ctx.call("flatten", x)
        return ctx.call("unsqueeze", y, axes=[1])
    y = ctx.call("flatten", x, start_dim=axis, end_dim=-1)
    return ctx.call("flatten", y, start_dim=0, end_dim=axis - 1)


@converter("Transpose", attrs=("perm",))
def _transpose(ctx):
    perm = ctx.attr("perm")
    return ctx.call("permute_dims", ctx.input(0), axes=list(perm) if perm else None)


def _axes_of(ctx, required: bool) -> list[int] | None:
    if "axes" in ctx.attrs:
        return list(ctx.attr("axes"))
    axes = ctx.const_ints(1, "axes")
    if axes is None and required:
        raise ConversionError("needs axes")
    return axes


def _computed_axes(ctx) -> Expr | None:
    """The axes input when it is computed (not an attribute nor a constant), else None."""
    if "axes" in ctx.attrs or not ctx.has(1) or ctx.const(1) is not None:
        return None
    return ctx.input(1)


@converter("Squeeze", attrs=("axes",), min_version=11)
def _squeeze(ctx):
    x = ctx.input(0)
    computed = _computed_axes(ctx)
    if computed is None:
        axes = _axes_of(ctx, required=False)
        return ctx.call("squeeze", x, axes=axes if axes else None)
    # one If per axis that may have size 1, from the last
    rank = ctx.rank(0)
    norm = _normalized_axes(ctx, computed, rank)
    y = x
    for a in reversed(range(rank)):
        d = x.ty.shape[a]
        if isinstance(d, int) and d != 1:
            continue  # cannot be squeezed: listing it is an error ONNX reports at run time
        y = _select(ctx, _contains(ctx, norm, a), ctx.call("squeeze", y, axes=[a]), y)
    return y if y is not x else ctx.call("identity", x)


@converter("Unsqueeze", attrs=("axes",), min_version=11)
def _unsqueeze(ctx):
    x = ctx.input(0)
    computed = _computed_axes(ctx)
    if computed is None:
        return ctx.call("unsqueeze", x, axes=_axes_of(ctx, required=True))
    shape = computed.ty.shape
    if shape is None or len(shape) != 1 or not isinstance(shape[0], int):
        raise Unsupported("Unsqueeze with computed axes of unknown length")
    out_rank = ctx.rank(0) + shape[0]
    if out_rank > MAX_RANK:
        raise ConversionError(f"the result would have rank {out_rank}")
    norm = _normalized_axes(ctx, computed, out_rank)
    y = x
    for p in range(out_rank):  # ascending: each insertion is at its final position
        y = _select(ctx, _contains(ctx, norm, p), ctx.call("unsqueeze", y, axes=[p]), y)
    return y


@converter("Concat", attrs=("axis",), min_version=4)
def _concat(ctx):
    args = [ctx.input(i) for i in range(ctx.num_inputs)]
    return ctx.call("concat", *args, axis=ctx.attr("axis"))


@converter("Split", attrs=("axis", "split", "num_outputs"), min_version=11)
def _split(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    axis = _axis(ctx, ctx.attr("axis", 0), rank)
    count = len(ctx.node.output)
    if "split" not in ctx.attrs and ctx.has(1) and ctx.const(1) is None:
        return _split_computed(ctx, x, ctx.input(1), axis, count)
    sizes = list(ctx.attr("split")) if "split" in ctx.attrs else ctx.const_ints(1, "split")
    d = x.ty.shape[axis]
    spec: Any = None
    if sizes is None:
        n = ctx.attr("num_outputs", count)
        if isinstance(d, int) and d % n:  # opset 18: uneven, the last chunk is smaller
            chunk = -(-d // n)
            sizes = [min(chunk, d - i * chunk) for i in range(n)]
        else:
            spec = n
    if sizes is not None:
        if len(sizes) != count:
            raise ConversionError(f"split {sizes} must have one size per output ({count})")
        spec = tuple(int(v) for v in np.cumsum(sizes)[:-1])
    if spec == 1 or spec == ():
        return [ctx.call("identity", x)]
    parts = ctx.call("split", x, indices_or_sections=spec, axis=axis)
    return [ctx.tuple_item(parts, i) for i in range(count)]


def _split_computed(ctx, x: Expr, sizes: Expr, axis: int, count: int) -> list[Expr]:
    """Split by computed sizes: each part takes its index range along the axis."""
    sizes = _cast(ctx, sizes, I64)
    starts = ctx.call("cumsum", sizes, axis=0, exclusive=True)
    one = ctx.constant(1, I64)
    parts = []
    for i in range(count):
        begin = _item(ctx, starts, i)
        end = ctx.call("add", begin, _item(ctx, sizes, i))
        parts.append(ctx.call("take", x, _index_range(ctx, begin, end, one), axis=axis))
    return parts


@converter("Slice", min_version=10)
def _slice(ctx):
    x = ctx.input(0)
    if not (ctx.has(1) and ctx.has(2)):
        raise ConversionError("needs starts and ends")
    computed = [i for i in (1, 2, 3, 4) if ctx.has(i) and ctx.const(i) is None]
    if not computed:
        starts, ends = ctx.const_ints(1, "starts"), ctx.const_ints(2, "ends")
        axes, steps = ctx.const_ints(3, "axes"), ctx.const_ints(4, "steps")
        return ctx.call("strided_slice", x, begin=starts, end=ends, strides=steps, axes=axes)
    symbolic = _slice_symbolic(ctx, x)
    return symbolic if symbolic is not None else _slice_computed(ctx, x)


def _slice_symbolic(ctx, x: Expr) -> Expr | None:
    """Slice whose computed bounds are known in dims (``x[:, :seq]`` of a longer buffer, as
    exported models slice their causal masks): per axis a strided_slice for int bounds, or a
    take of ``arange(start, end)`` for symbolic ones (assumed inside the dim, as the torch
    path does; an index outside it is an error in the interpreter, clamped in compiled code).
    None when a bound is not known or a step is not 1 with symbolic bounds."""
    if not ctx.reads_symbolic_dims(1, 2, 3, 4):
        return None  # computed from static sizes: dynamic-to-static folds it
    starts, ends = ctx.dims(1, symbolic=False), ctx.dims(2, symbolic=False)
    axes = ctx.dims(3, symbolic=False) if ctx.has(3) else None
    steps = ctx.dims(4, symbolic=False) if ctx.has(4) else None
    if starts is None or ends is None or len(starts) != len(ends):
        return None
    if (ctx.has(3) and axes is None) or (ctx.has(4) and steps is None):
        return None
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not all(isinstance(v, int) for v in (*axes, *steps)) or len(axes) != len(starts):
        return None
    rank = ctx.rank(0)
    y = x
    for a, start, end, step in zip(axes, starts, ends, steps, strict=True):
        a = _axis(ctx, a, rank)
        size = x.ty.shape[a]
        if isinstance(start, int) and isinstance(end, int):
            y = ctx.call("strided_slice", y, begin=[start], end=[end], strides=[step], axes=[a])
            continue
        if step != 1 or size is ANY:
            return None
        if isinstance(start, int) and start < 0:
            start = dim_add(size, start)
        if isinstance(end, int):
            end = size if end >= 2**62 else (dim_add(size, end) if end < 0 else end)
        if isinstance(start, int) and start == 0 and isinstance(end, SymExpr) and end == size:
            continue  # the whole axis
        index = ctx.call("arange", start=start, stop=end, step=1, dtype=I64)
        y = ctx.call("take", y, index, axis=a)
    return y


def _slice_indices(ctx, x: Expr, a: int, start: Expr, end: Expr, step: Expr, backward: Expr):
    """The indices ``range(len)[start:end:step]`` of axis ``a`` of ``x`` (0-d i64 bounds)."""
    zero, one, minus_one = ctx.constant(0, I64), ctx.constant(1, I64), ctx.constant(-1, I64)
    n = _dim_value(ctx, x, a)
    last = ctx.call("subtract", n, one)

    def clamp(v: Expr, low_fwd: Expr, high_fwd: Expr, low_bwd: Expr, high_bwd: Expr) -> Expr:
        v = ctx.call("where", ctx.call("less", v, zero), ctx.call("add", v, n), v)
        low = ctx.call("where", backward, low_bwd, low_fwd)
        high = ctx.call("where", backward, high_bwd, high_fwd)
        return ctx.call("minimum", ctx.call("maximum", v, low), high)

    begin = clamp(start, zero, n, zero, last)
    stop = clamp(end, zero, n, minus_one, last)
    return _index_range(ctx, begin, stop, step)


def _slice_computed(ctx, x: Expr) -> Expr:
    """Slice with computed starts, ends, axes or steps: per sliced axis, clamp the bounds as
    Python slicing does and take the index range; a computed axis is chosen by Ifs."""
    rank = ctx.rank(0)
    starts = _cast(ctx, ctx.input(1), I64)
    count = starts.ty.shape[0] if starts.ty.shape and len(starts.ty.shape) == 1 else ANY
    if not isinstance(count, int):
        raise Unsupported("Slice with computed starts of unknown length")
    if count > rank:
        raise ConversionError(f"{count} starts for an input of rank {rank}")
    ends = _cast(ctx, ctx.input(2), I64)
    steps = _cast(ctx, ctx.input(4), I64) if ctx.has(4) else None
    axes: Any = list(range(count))
    if ctx.has(3):
        axes = ctx.const_ints(3, "axes") if ctx.const(3) is not None else ctx.input(3)
    computed_axes = _normalized_axes(ctx, axes, rank) if isinstance(axes, Expr) else None
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    y = x
    for k in range(count):
        step = _item(ctx, steps, k) if steps is not None else one
        backward = ctx.call("less", step, zero)

        def indices(a: int, k: int = k, step: Expr = step, backward: Expr = backward) -> Expr:
            return _slice_indices(
                ctx, x, a, _item(ctx, starts, k), _item(ctx, ends, k), step, backward
            )

        if computed_axes is None:
            a = _axis(ctx, axes[k], rank, "axes entry")
            y = ctx.call("take", y, indices(a), axis=a)
            continue
        axis_k = _item(ctx, computed_axes, k)
        chosen = y
        for a in range(rank):
            is_a = ctx.call("equal", axis_k, ctx.constant(a, I64))
            chosen = _select(ctx, is_a, ctx.call("take", y, indices(a), axis=a), chosen)
        y = chosen
    return y


@converter("Pad", attrs=("mode",), min_version=11)
def _pad(ctx):
    x = ctx.input(0)
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise Unsupported(f"mode {mode}")
    value, computed_value = 0.0, None
    if ctx.has(2):
        cv = ctx.const(2)
        if cv is None:
            computed_value = ctx.input(2)
        else:
            value = _float_scalar(cv, "constant_value") if cv.size else 0.0
    axes = ctx.const_ints(3, "axes") if ctx.const(3) is not None or not ctx.has(3) else None
    pads = ctx.const(1)
    if pads is not None:
        pads = [int(p) for p in pads.reshape(-1)]
    else:  # computed from static sizes (Swin's window padding of a static image): ints
        pads = ctx.dims(1)
        if pads is not None and not all(isinstance(p, int) for p in pads):
            pads = None  # symbolic pad sizes: pad's attribute holds ints only
    if pads is None or (ctx.has(3) and axes is None):
        pads_in = _pads_tensor(ctx, ctx.input(1), ctx.inputs[3] if ctx.has(3) else None)
        y = ctx.call("pad", x, pads_in, mode=mode, value=value)
    else:
        if axes is not None:
            rank = ctx.rank(0)
            full = [0] * (2 * rank)
            if len(pads) != 2 * len(axes):
                raise ConversionError(f"pads {pads} must have two values per axis of {axes}")
            for k, a in enumerate(axes):
                a = _axis(ctx, a, rank, "axes entry")
                full[a], full[a + rank] = pads[k], pads[k + len(axes)]
            pads = full
        pads_in = None
        y = ctx.call("pad", x, pads=pads, mode=mode, value=value)
    if computed_value is None or mode != "constant":
        return y
    # a computed fill value: pad with 0, then put the value where a padded mask is false
    inside = ctx.call("full_like", x, value=1.0, dtype=DType.bool)
    if pads_in is None:
        mask = ctx.call("pad", inside, pads=pads, mode="constant")
    else:
        mask = ctx.call("pad", inside, pads_in, mode="constant")
    fill = ctx.call("reshape", _cast(ctx, computed_value, x.ty.dtype), shape=[])
    return ctx.call("where", mask, y, fill)


_RESIZE_COORDINATES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
)


@converter(
    "Resize",
    attrs=(
        "mode",
        "coordinate_transformation_mode",
        "nearest_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "antialias",
        "axes",
        "keep_aspect_ratio_policy",
    ),
    min_version=11,
)
def _resize(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    mode = ctx.attr("mode", "nearest")
    how = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear"):
        raise Unsupported(f"mode {mode}")
    if how not in _RESIZE_COORDINATES:
        raise Unsupported(f"coordinate_transformation_mode {how}")
    nearest = ctx.attr("nearest_mode", "round_prefer_floor")
    if nearest not in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        raise Unsupported(f"nearest_mode {nearest}")
    if ctx.attr("antialias", 0) and mode != "nearest":  # antialias changes linear downsampling
        raise Unsupported("antialias")
    # cubic_coeff_a and exclude_outside act in cubic mode only, extrapolation_value in
    # tf_crop_and_resize only: both refused above
    axes = ctx.attr("axes")
    axes = list(range(rank)) if axes is None else [_axis(ctx, a, rank, "axes entry") for a in axes]
    in_shape = list(x.ty.shape)
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    scales = None
    if ctx.has(3):  # sizes
        given = ctx.const(3)
        picked = [int(v) for v in given.reshape(-1)] if given is not None else ctx.dims(3)
        if picked is None:
            raise Unsupported("Resize with computed sizes")
        if len(picked) != len(axes):
            raise ConversionError(f"sizes {picked} must give one size per axis of {axes}")
        sizes = list(in_shape)
        for a, n in zip(axes, picked, strict=True):
            sizes[a] = n
        if policy != "stretch":
            known = [in_shape[a] for a in axes] + picked
            if not all(isinstance(d, int) for d in known):
                raise Unsupported(f"keep_aspect_ratio_policy {policy} with symbolic sizes")
            ratios = [sizes[a] / in_shape[a] for a in axes]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if a in axes else 1.0 for a in range(rank)]
            for a in axes:
                sizes[a] = int(scale * in_shape[a] + 0.5)  # ONNX rounds half up
    else:
        given = ctx.const(2) if ctx.has(2) else None
        if given is None or given.size == 0:
            raise Unsupported("Resize without constant scales or sizes")
        picked = [float(v) for v in given.reshape(-1)]
        if len(picked) != len(axes):
            raise ConversionError(f"scales {picked} must give one scale per axis of {axes}")
        scales = [1.0] * rank
        for a, v in zip(axes, picked, strict=True):
            scales[a] = v
        sizes = []
        for d, v in zip(in_shape, scales, strict=True):
            if isinstance(d, int):
                sizes.append(int(math.floor(d * v)))
            elif v == 1.0:
                sizes.append(d)
            elif v == int(v):
                sizes.append(dim_mul(d, int(v)))
            else:
                raise Unsupported(f"scale {v} of the symbolic dim {dim_str(d)}")
    return ctx.call(
        "resize",
        x,
        sizes=sizes,
        scales=scales,
        mode=mode,
        coordinate_transformation_mode=how,
        nearest_mode=nearest,
    )


def _pads_tensor(ctx, pads: Expr, axes: Expr | None) -> Expr:
    """A pads input as the full i64 pads tensor (all begins, then all ends) of the data's rank;
    with axes, each given pair is placed at its axis (a one-hot product summed over axes)."""
    pads = _cast(ctx, pads, I64)
    if axes is None:
        return pads
    rank = ctx.rank(0)
    axes_shape = axes.ty.shape
    if axes_shape is None or len(axes_shape) != 1 or not isinstance(axes_shape[0], int):
        raise Unsupported("Pad with axes of unknown length")
    k = axes_shape[0]
    norm = _normalized_axes(ctx, axes, rank)
    # hot[i, a] = (axes[i] == a), shape (k, rank)
    hot = ctx.call(
        "equal",
        ctx.call("unsqueeze", norm, axes=[1]),
        ctx.constant(np.arange(rank)[None, :], I64),
    )
    hot = _cast(ctx, hot, I64)
    halves = []
    for lo in (0, k):
        part = ctx.call("strided_slice", pads, begin=[lo], end=[lo + k], axes=[0])
        spread = ctx.call("multiply", hot, ctx.call("unsqueeze", part, axes=[1]))
        halves.append(ctx.call("sum", spread, axes=[0]))
    return ctx.call("concat", *halves, axis=0)


@converter("Expand", min_version=8)
def _expand(ctx):
    x = ctx.input(0)
    target = ctx.const(1)
    dims = ctx.dims(1) if target is None else [int(v) for v in target.reshape(-1)]
    if dims is None or not _is_shape(dims, minus_one=False):
        # computed shape: broadcast against a filled tensor of that shape
        cond = _filled(ctx, ctx.input(1), True, DType.bool)
        return ctx.call("where", cond, x, x)
    if x.ty.shape is None:
        raise Unsupported("Expand of a value of unknown rank")
    try:
        shape = broadcast_shapes(x.ty.shape, tuple(dims))
    except TypeError as e:
        raise ConversionError(str(e)) from None
    return ctx.call("broadcast_to", x, shape=list(shape))


@converter("Tile", min_version=6)
def _tile(ctx):
    x = ctx.input(0)
    if ctx.const(1) is not None:
        return ctx.call("tile", x, repeats=ctx.const_ints(1, "repeats"))
    # computed repeats: (1, d0, 1, d1, ...) broadcast to (r0, d0, r1, d1, ...), then merged
    rank = ctx.rank(0)
    reps = _cast(ctx, ctx.input(1), I64)
    spread = ctx.call("unsqueeze", x, axes=[2 * i for i in range(rank)])
    shape = ctx.call("shape_of", x)
    pairs = ctx.call(
        "concat",
        ctx.call("unsqueeze", reps, axes=[1]),
        ctx.call("unsqueeze", shape, axes=[1]),
        axis=1,
    )
    target = ctx.call("reshape", pairs, shape=[2 * rank])
    cond = _filled(ctx, target, True, DType.bool)
    big = ctx.call("where", cond, spread, spread)
    return ctx.call("reshape", big, ctx.call("multiply", reps, shape))


@converter("ConstantOfShape", attrs=("value",))
def _constant_of_shape(ctx):
    if "value" in ctx.attrs:
        v = tensor_value(ctx.attr("value"))
        if v.size != 1:
            raise ConversionError(f"value must hold one element, got shape {list(v.shape)}")
        dtype, value = DType.of(v.dtype), v.reshape(-1)[0]
    else:
        dtype, value = DType.float32, np.float32(0)
    shape = ctx.const(0)
    if shape is None:
        # known in dims, static ones included: a tensor of computed shape would be all '?'
        # (exporters build zeros this way inside their pads computations)
        dims = ctx.dims(0, symbolic=False)
        if dims is None or not _is_shape(dims, minus_one=False):
            return _filled(ctx, ctx.input(0), value, dtype)
    else:
        if shape.size > MAX_RANK:
            raise ConversionError(f"the shape has {shape.size} values: more than {MAX_RANK} dims")
        dims = [int(d) for d in shape.reshape(-1)]
    if value == 0:
        return ctx.call("zeros", shape=dims, dtype=dtype)
    if value == 1:
        return ctx.call("ones", shape=dims, dtype=dtype)
    if dtype.is_int and abs(int(value)) >= 2**53:  # not exact as the float attribute
        return ctx.call("broadcast_to", ctx.constant(value, dtype), shape=dims)
    return ctx.call("full", shape=dims, value=float(value), dtype=dtype)


@converter("Range")
def _range(ctx):
    values = [ctx.const(i) for i in range(3)]
    if any(v is None for v in values):
        bounds = [ctx.dims(i, symbolic=False) for i in range(3)]
        dtype = ctx.ty(0).dtype
        known = all(b is not None and len(b) == 1 for b in bounds)
        if dtype.is_int and known and ctx.reads_symbolic_dims(0, 1, 2):
            (start,), (stop,), (step,) = bounds
            if isinstance(start, int) and isinstance(step, int) and step == 1:
                # range(start, seq): a symbolic length (other steps stay computed)
                return ctx.call("arange", start=start, stop=stop, step=1, dtype=dtype)
        return _computed_range(ctx)
    start, limit, delta = (v.reshape(-1)[0] for v in values)
    dtype = DType.of(values[0].dtype)
    if delta == 0:
        raise ConversionError("delta must not be 0")
    if dtype.is_float:
        # the length in the inputs' own precision, as the ONNX reference computes it
        with np.errstate(all="ignore"):
            span = np.ceil((limit - start) / delta)
        if not np.isfinite(span) or span > MAX_IMPORT_ELEMENTS:
            return ctx.call(
                "arange", start=float(start), stop=float(limit), step=float(delta), dtype=dtype
            )
        n = max(int(span), 0)
        out = start + delta * np.arange(n, dtype=values[0].dtype)
        return ctx.call("identity", ctx.constant(out.astype(values[0].dtype), dtype))
    return ctx.call("arange", start=int(start), stop=int(limit), step=int(delta), dtype=dtype)


def _is_shape(dims: list, minus_one: bool = True) -> bool:
    """Whether ``dims`` can be a shape attribute: symbolic dims or sizes (and -1 / 0 for
    Reshape's "infer" and "copy"), no other negative."""
    low = -1 if minus_one else 0
    return all(not isinstance(d, int) or d >= low for d in dims)


def _computed_range(ctx):
    """Range with computed bounds: start + delta * exclusive_cumsum(ones(n)) with
    n = max(ceil((limit - start) / delta), 0)."""
    start, limit, delta = (ctx.input(i) for i in range(3))
    dtype = start.ty.dtype
    if not dtype.is_float:
        bounds = [_scalar_i64(ctx, v) for v in (start, limit, delta)]
        return _cast(ctx, _index_range(ctx, *bounds), dtype)
    span = ctx.call("divide", ctx.call("subtract", limit, start), delta)
    n = _cast(ctx, ctx.call("ceil", span), I64)
    n = ctx.call("maximum", ctx.call("reshape", n, shape=[1]), ctx.constant([0], I64))
    steps = ctx.call("cumsum", _filled(ctx, n, 1, dtype), axis=0, exclusive=True)
    return ctx.call("add", ctx.call("reshape", start, shape=[]), ctx.call("multiply", steps, delta))


@converter("Shape", attrs=("start", "end"))
def _shape(ctx):
    x = ctx.input(0)
    shape = ctx.call("shape_of", x)
    start, end = ctx.attr("start", 0), ctx.attr("end")
    if start == 0 and end is None:
        return shape
    return ctx.call(
        "strided_slice", shape, begin=[start], end=[2**63 - 1 if end is None else end], axes=[0]
    )


@converter("Size")
def _size(ctx):
    return ctx.call("prod", ctx.call("shape_of", ctx.input(0)))


@converter("DepthToSpace", attrs=("blocksize", "mode"))
def _depth_to_space(ctx):
    x = ctx.input(0)
    if ctx.rank(0) != 4:
        raise ConversionError(f"needs a 4-D input, got {x.ty}")
    b = ctx.attr("blocksize")
    n, c, h, w = x.ty.shape
    c = _static(c, ctx, "channel count")
    if c % (b * b):
        raise ConversionError(f"{c} channels are not divisible by blocksize^2 = {b * b}")
    if ctx.attr("mode", "DCR") == "DCR":
        y = ctx.call("reshape", x, shape=[n, b, b, c // (b * b), h, w])
        y = ctx.call("permute_dims", y, axes=[0, 3, 4, 1, 5, 2])
    else:
        y = ctx.call("reshape", x, shape=[n, c // (b * b), b, b, h, w])
        y = ctx.call("permute_dims", y, axes=[0, 1, 4, 2, 5, 3])
    return ctx.call("reshape", y, shape=[n, c // (b * b), h * b, w * b])


@converter("SpaceToDepth", attrs=("blocksize",))
def _space_to_depth(ctx):
    x = ctx.input(0)
    if ctx.rank(0) != 4:
        raise ConversionError(f"needs a 4-D input, got {x.ty}")
    b = ctx.attr("blocksize")
    n, c, h, w = x.ty.shape
    hb, wb = dim_floordiv(h, b), dim_floordiv(w, b)
    if ANY in (hb, wb):
        raise Unsupported("unknown spatial dims")
    y = ctx.call("reshape", x, shape=[n, c, hb, b, wb, b])
    y = ctx.call("permute_dims", y, axes=[0, 3, 5, 1, 2, 4])
    return ctx.call("reshape", y, shape=[n, c * b * b, hb, wb])


@converter("EyeLike", attrs=("dtype", "k"))
def _eye_like(ctx):
    t = ctx.ty(0)
    if not t.is_static or len(t.shape) != 2:
        raise Unsupported("EyeLike of a non-static or non-2-D input")
    if t.shape[0] * t.shape[1] > MAX_IMPORT_ELEMENTS:
        raise Unsupported(f"EyeLike of more than {MAX_IMPORT_ELEMENTS} elements")
    dtype = dtype_of(ctx.attr("dtype")) if "dtype" in ctx.attrs else t.dtype
    eye = np.eye(t.shape[0], t.shape[1], k=ctx.attr("k", 0))
    return ctx.call("identity", ctx.constant(eye, dtype))


# ----- indexing ---------------------------------------------------------------------------


@converter("Gather", attrs=("axis",))
def _gather(ctx):
    return ctx.call("take", ctx.input(0), ctx.input(1), axis=ctx.attr("axis", 0))


@converter("GatherND", attrs=("batch_dims",), min_version=11)
def _gather_nd(ctx):
    """``out[i..., :] = data[b..., idx[b..., i..., 0], ..., idx[b..., i..., k-1], ...]``: the
    leading ``batch_dims`` axes of data and indices are shared and the last axis of indices
    (of static length k) addresses the next k axes of data. Expressed as a ``take`` on data
    with those axes (and the batch axes) merged into one, at the flat index
    ``batch * K + i0 * s0 + ... + i(k-1)``; a negative index counts from the end of its dim."""
    data, indices = ctx.input(0), _cast(ctx, ctx.input(1), I64)
    b = ctx.attr("batch_dims", 0)
    r, q = ctx.rank(0), ctx.rank(1)
    if q < 1:
        raise ConversionError("GatherND indices must have rank 1 or more")
    k = _static(indices.ty.shape[-1], ctx, "last dim of indices")
    if not 0 <= b < min(r, q):
        raise ConversionError(f"batch_dims {b} must be less than the ranks {r} and {q}")
    if b + k > r:
        raise ConversionError(f"indices address {k} axes after {b} batch axes of a rank-{r} input")
    if k == 0:  # each index selects the whole of data[b...]: index 0 of a new unit axis
        data = ctx.call("unsqueeze", data, axes=[b])
        zero = ctx.call("sum", indices, axes=[q - 1], keepdims=True)  # zeros, shape Q[:-1] + [1]
        return _gather_nd_flat(ctx, data, zero, b, 1)
    return _gather_nd_flat(ctx, data, indices, b, k)


def _gather_nd_flat(ctx, data: Expr, indices: Expr, b: int, k: int) -> Expr:
    q = len(indices.ty.shape)
    dims = [_dim_value(ctx, data, b + j) for j in range(k)]
    flat = None
    stride = None  # the product of the dims after the current one, built from the last
    for j in reversed(range(k)):
        i = ctx.call("take", indices, ctx.constant(j, I64), axis=q - 1)
        negative = ctx.call("less", i, ctx.constant(0, I64))
        i = ctx.call("where", negative, ctx.call("add", i, dims[j]), i)
        term = i if stride is None else ctx.call("multiply", i, stride)
        flat = term if flat is None else ctx.call("add", flat, term)
        stride = dims[j] if stride is None else ctx.call("multiply", stride, dims[j])
    if b:
        batch = [_static(d, ctx, "batch dim") for d in data.ty.shape[:b]]
        if [_static(d, ctx, "batch dim") for d in indices.ty.shape[:b]] != batch:
            raise ConversionError(
                f"the batch dims of data {batch} and indices {indices.ty.shape[:b]} differ"
            )
        # each batch element's position, an op: the batch has the size the types declare,
        # which a few bytes of model can make huge (fold-constant folds the small ones)
        position = ctx.call("arange", stop=math.prod(batch), dtype=I64)
        position = ctx.call("reshape", position, shape=batch + [1] * (q - 1 - b))
        flat = ctx.call("add", flat, ctx.call("multiply", position, stride))
    merged = ctx.call("flatten", data, start_dim=0, end_dim=b + k - 1) if b + k > 1 else data
    return ctx.call("take", merged, flat, axis=0)


@converter("NonZero", min_version=9)
def _non_zero(ctx):
    return ctx.call("nonzero", ctx.input(0))


@converter("GatherElements", attrs=("axis",))
def _gather_elements(ctx):
    return ctx.call("gather_elements", ctx.input(0), ctx.input(1), axis=ctx.attr("axis", 0))


@converter("ScatterElements", attrs=("axis", "reduction"))
def _scatter_elements(ctx):
    return ctx.call(
        "scatter_elements",
        ctx.input(0),
        ctx.input(1),
        ctx.input(2),
        axis=ctx.attr("axis", 0),
        reduction=ctx.attr("reduction", "none"),
    )


@converter("OneHot", attrs=("axis",))
def _one_hot(ctx):
    indices = ctx.input(0)
    if not indices.ty.dtype.is_int:
        indices = _cast(ctx, indices, I64)
    depth, values = ctx.const(1), ctx.const(2)
    axis = ctx.attr("axis", -1)
    if depth is not None and values is not None:
        if values.size != 2:
            raise ConversionError(f"values must hold [off_value, on_value], got {values.shape}")
        off, on = (v.item() for v in values.reshape(-1))
        return ctx.call(
            "one_hot",
            indices,
            depth=int(_float_scalar(depth, "depth")),
            axis=axis,
            dtype=DType.of(values.dtype),
            on_value=float(on),
            off_value=float(off),
        )
    # computed depth or values: compare each index with every class
    rank = ctx.rank(0) + 1
    axis = _axis(ctx, axis, rank)
    n = _scalar_i64(ctx, ctx.input(1))
    idx = _cast(ctx, indices, I64)
    negative = ctx.call("less", idx, ctx.constant(0, I64))
    idx = ctx.call("where", negative, ctx.call("add", idx, n), idx)
    classes = _index_range(ctx, ctx.constant(0, I64), n, ctx.constant(1, I64))
    others = [p for p in range(rank) if p != axis]
    hot = ctx.call(
        "equal",
        ctx.call("unsqueeze", idx, axes=[axis]),
        ctx.call("unsqueeze", classes, axes=others) if others else classes,
    )
    vals = ctx.input(2)
    off, on = (ctx.call("take", vals, ctx.constant(i, I64), axis=0) for i in (0, 1))
    return ctx.call("where", hot, on, off)


@converter("Trilu", attrs=("upper",))
def _trilu(ctx):
    x = ctx.input(0)
    upper = bool(ctx.attr("upper", 1))
    if not ctx.has(1) or ctx.const(1) is not None:
        k = ctx.const_ints(1, "k")
        return ctx.call("triu" if upper else "tril", x, k=k[0] if k else 0)
    # a computed k: keep where (column - row) >= k (upper) or <= k (lower)
    rank = ctx.rank(0)
    if rank < 2:
        raise ConversionError(f"needs a matrix or a batch of matrices, got {x.ty}")
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    rows = _index_range(ctx, zero, _dim_value(ctx, x, rank - 2), one)
    cols = _index_range(ctx, zero, _dim_value(ctx, x, rank - 1), one)
    diff = ctx.call(
        "subtract",
        ctx.call("unsqueeze", cols, axes=[0]),
        ctx.call("unsqueeze", rows, axes=[1]),
    )
    k = _scalar_i64(ctx, ctx.input(1))
    keep = ctx.call("greater_equal" if upper else "less_equal", diff, k)
    return ctx.call("where", keep, x, ctx.call("zeros_like", x))


@converter("TopK", attrs=("axis", "largest", "sorted"), min_version=10)
def _topk(ctx):
    x = ctx.input(0)
    largest = bool(ctx.attr("largest", 1))
    if ctx.const(1) is not None:
        k = ctx.const_ints(1, "k")
        if len(k) != 1:
            raise ConversionError("needs one k")
        out = ctx.call("topk", x, k=k[0], axis=ctx.attr("axis", -1), largest=largest)
        return ctx.tuple_item(out, 0), ctx.tuple_item(out, 1)
    # a computed k: sort the whole axis, keep the first k
    rank = ctx.rank(0)
    axis = _axis(ctx, ctx.attr("axis", -1), rank)
    n = _static(x.ty.shape[axis], ctx, "axis size")
    out = ctx.call("topk", x, k=n, axis=axis, largest=largest)
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    first = _index_range(ctx, zero, _scalar_i64(ctx, ctx.input(1)), one)
    return (
        ctx.call("take", ctx.tuple_item(out, 0), first, axis=axis),
        ctx.call("take", ctx.tuple_item(out, 1), first, axis=axis),
    )


# ----- control flow -----------------------------------------------------------------------


@converter("If", attrs=("then_branch", "else_branch"))
def _if(ctx):
    cond = ctx.input(0)
    ct = cond.ty
    if not (ct.shape == () or (ct.shape is not None and ct.numel == 1)):
        cond = ctx.call("reshape", cond, shape=[])
    then_b = ctx.subgraph("then_branch")
    else_b = ctx.subgraph("else_branch")
    node = If(cond, then_b, else_b, prov=ctx.prov)
    outs = len(ctx.node.output)
    if outs == 1:
        return node
    return [ctx.tuple_item(node, i) for i in range(outs)]


__all__ = ["CONVERTERS", "OnnxConverter", "converter", "supported_ops"]
