"""Inverse trigonometric functions and Det, composed of existing IR ops.

- ``Atan`` is Cephes' ``atan``: the argument reduced to ``|x| <= 0.66`` (``pi/2 - atan(1/x)``
  above tan(3pi/8), ``pi/4 + atan((x-1)/(x+1))`` between), then a degree-4/5 rational
  function; accurate to double precision. The reductions are chosen with ``where`` over
  denominators made safe first, so no branch divides by zero.
- ``Asin(x) = 2 atan(x / (1 + sqrt((1-x)(1+x))))`` (the half-angle formula: no cancellation
  near 0, no division by zero at +-1), ``Acos(|x|) = 2 atan(sqrt((1-|x|) / (1+|x|)))`` and
  ``Acos(x) = pi - Acos(-x)`` for negative x. Outside [-1, 1] both are NaN, as in numpy.
  Float16 / bfloat16 inputs are computed in float32.
- ``Det`` is the Leibniz formula for matrices of static size n <= 6: the n! products of one
  element per row and column (a ``take`` of constant indices from the flattened matrices, a
  ``prod``), signed and summed.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from compiler.frontend.onnx_context import ConversionError, Unsupported
from compiler.frontend.onnx_ops.registry import I64, cast_to, converter, static_dim
from compiler.ir.nodes import Expr
from compiler.ir.types import DType

_ATAN_P = [
    -8.750608600031904122785e-1,
    -1.615753718733365076637e1,
    -7.500855792314704667340e1,
    -1.228866684490136173410e2,
    -6.485021904942025371773e1,
]
_ATAN_Q = [  # after a leading 1.0
    2.485846490142306297962e1,
    1.650270098316988542046e2,
    4.328810604912902668951e2,
    4.853903996359136964868e2,
    1.945506571482613964425e2,
]
_T3P8 = 2.41421356237309504880  # tan(3 pi / 8)


def _float_in(ctx, what: str) -> tuple[Expr, DType]:
    x = ctx.input(0)
    dtype = x.ty.dtype
    if not dtype.is_float:
        raise ConversionError(f"{what} needs a floating-point input, got {dtype}")
    if dtype in (DType.float16, DType.bfloat16):
        x = cast_to(ctx, x, DType.float32)
    return x, dtype


def _poly(ctx, z: Expr, coeffs, leading_one: bool = False) -> Expr:
    """Horner's rule: ``c0 z^(n-1) + ... + c(n-1)``, or with ``leading_one``
    ``z^n + c0 z^(n-1) + ... + c(n-1)`` (Cephes' polevl and p1evl)."""
    coeffs = [1.0, *coeffs] if leading_one else list(coeffs)
    acc = ctx.like(coeffs[0], z)
    for c in coeffs[1:]:
        acc = ctx.call("add", ctx.call("multiply", acc, z), ctx.like(c, z))
    return acc


def atan(ctx, x: Expr) -> Expr:
    """atan(x) in x's (float) dtype."""
    one = ctx.like(1, x)
    a = ctx.call("abs", x)
    big = ctx.call("greater", a, ctx.like(_T3P8, x))
    mid = ctx.call(
        "logical_and", ctx.call("logical_not", big), ctx.call("greater", a, ctx.like(0.66, x))
    )
    # reduced arguments, each over a denominator that cannot be 0
    inv = ctx.call("neg", ctx.call("divide", one, ctx.call("where", big, a, one)))
    am = ctx.call("where", mid, a, one)
    shifted = ctx.call("divide", ctx.call("subtract", am, one), ctx.call("add", am, one))
    r = ctx.call("where", big, inv, ctx.call("where", mid, shifted, a))
    base = ctx.call(
        "where",
        big,
        ctx.like(math.pi / 2, x),
        ctx.call("where", mid, ctx.like(math.pi / 4, x), ctx.like(0, x)),
    )
    more = ctx.call(
        "where",
        big,
        ctx.like(6.123233995736765886130e-17, x),
        ctx.call("where", mid, ctx.like(0.5 * 6.123233995736765886130e-17, x), ctx.like(0, x)),
    )
    z = ctx.call("multiply", r, r)
    frac = ctx.call("divide", _poly(ctx, z, _ATAN_P), _poly(ctx, z, _ATAN_Q, leading_one=True))
    small = ctx.call("add", ctx.call("multiply", r, ctx.call("multiply", z, frac)), r)
    y = ctx.call("add", base, ctx.call("add", small, more))
    # the sign of x (atan is odd); keeps -0.0 and NaN
    return ctx.call("where", ctx.call("less", x, ctx.like(0, x)), ctx.call("neg", y), y)


@converter("Atan", min_version=7)
def _atan(ctx):
    x, dtype = _float_in(ctx, "Atan")
    return cast_to(ctx, atan(ctx, x), dtype)


@converter("Asin", min_version=7)
def _asin(ctx):
    x, dtype = _float_in(ctx, "Asin")
    one = ctx.like(1, x)
    cos = ctx.call(
        "sqrt", ctx.call("multiply", ctx.call("subtract", one, x), ctx.call("add", one, x))
    )
    half = atan(ctx, ctx.call("divide", x, ctx.call("add", one, cos)))
    return cast_to(ctx, ctx.call("multiply", ctx.like(2, x), half), dtype)


@converter("Acos", min_version=7)
def _acos(ctx):
    x, dtype = _float_in(ctx, "Acos")
    one = ctx.like(1, x)
    a = ctx.call("abs", x)
    t = ctx.call("sqrt", ctx.call("divide", ctx.call("subtract", one, a), ctx.call("add", one, a)))
    pos = ctx.call("multiply", ctx.like(2, x), atan(ctx, t))  # acos(|x|)
    neg = ctx.call("subtract", ctx.like(math.pi, x), pos)
    y = ctx.call("where", ctx.call("less", x, ctx.like(0, x)), neg, pos)
    return cast_to(ctx, y, dtype)


MAX_DET_SIZE = 6


@converter("Det", min_version=11)
def _det(ctx):
    x = ctx.input(0)
    rank = ctx.rank(0)
    if rank < 2:
        raise ConversionError(f"needs (..., n, n) matrices, got {x.ty}")
    if not x.ty.dtype.is_float:
        raise ConversionError(f"Det needs a floating-point input, got {x.ty.dtype}")
    n = static_dim(x.ty.shape[-1], ctx, "matrix size")
    m = static_dim(x.ty.shape[-2], ctx, "matrix size")
    if n != m:
        raise ConversionError(f"needs square matrices, got {x.ty}")
    if n > MAX_DET_SIZE:
        raise Unsupported(
            f"Det of {n}x{n} matrices (the Leibniz formula goes up to {MAX_DET_SIZE})"
        )
    if n == 0:
        return ctx.call("ones", shape=list(x.ty.shape[:-2]), dtype=x.ty.dtype)
    perms = list(itertools.permutations(range(n)))
    signs = [
        (-1) ** sum(1 for i in range(n) for j in range(i + 1, n) if p[i] > p[j]) for p in perms
    ]
    index = np.array([[i * n + p[i] for i in range(n)] for p in perms], dtype=np.int64)
    flat = ctx.call("reshape", x, shape=[*x.ty.shape[:-2], n * n])
    picked = ctx.call("take", flat, ctx.constant(index, I64), axis=rank - 2)  # (..., n!, n)
    terms = ctx.call("prod", picked, axes=[rank - 1], keepdims=False)  # (..., n!)
    signed = ctx.call("multiply", terms, ctx.constant(signs, x.ty.dtype))
    return ctx.call("sum", signed, axes=[rank - 2], keepdims=False)
