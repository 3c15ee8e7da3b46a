"""The registry of ONNX converters (ai.onnx opsets 1 to the newest onnx knows; 13-21
claimed) and the helpers the op families share.

A converter is registered with `@converter(op_type, attrs=..., min_version=...)`: `attrs`
lists every attribute it understands (a node with another attribute is reported as
unsupported, so a later op version that adds an attribute is never converted wrongly), and
`min_version` is the oldest op version (schema `since_version`) whose semantics it
implements: an older op version (a model of an older opset) is reported as unsupported, never
converted with the newer semantics. An op whose old versions have another form (attributes
that later became inputs, legacy broadcasting) may have converters of those older versions
too, registered with `max_version` (the newest op version they implement; see
`onnx_ops/legacy.py`): `converter_for` picks the one for a node's op version. It
receives a `compiler.frontend.onnx_context.ConvertContext` and returns
an IR expression, or a sequence with one per ONNX output (None for outputs it cannot give).

Inputs that are shapes, pads, axes, repeats, ... use their values when they are constants
(an initializer or a Constant node) and the IR op's tensor-input form when they are computed
(`reshape`, `pad`); where the IR op has no tensor-input form, a computed shape is expressed
with existing ops (a filled tensor of a computed shape is an `edge` pad of a one-element
tensor) or reported as unsupported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.frontend.onnx_context import (
    MAX_RANK,
    ConversionError,
    ConvertContext,
    Unsupported,
)
from compiler.ir.nodes import Expr, If
from compiler.ir.symbolic import ANY, Dim, dim_str
from compiler.ir.types import DType


@dataclass(frozen=True)
class OnnxConverter:
    """How one ONNX op type is converted."""

    op_type: str
    fn: Callable[[ConvertContext], Any]
    attrs: frozenset
    min_version: int = 1
    max_version: int | None = None  # None: up to the newest op version

    def covers(self, version: int) -> bool:
        """Whether this converter implements op version `version` (a since_version)."""
        return self.min_version <= version and (
            self.max_version is None or version <= self.max_version
        )


CONVERTERS: dict[str, OnnxConverter] = {}
"""The converter of each op type for its newest versions."""

OLDER_CONVERTERS: dict[str, list[OnnxConverter]] = {}
"""Converters of older op versions (registered with ``max_version``), per op type."""


def converter(
    *op_types: str, attrs: Sequence[str] = (), min_version: int = 1, max_version: int | None = None
):
    """Register `fn` as the converter of `op_types` (see the module docstring)."""

    def deco(fn):
        for t in op_types:
            conv = OnnxConverter(t, fn, frozenset(attrs), min_version, max_version)
            older = OLDER_CONVERTERS.setdefault(t, [])
            if max_version is None:
                if t in CONVERTERS:
                    raise ValueError(f"ONNX op {t} has two converters")
                if any(o.max_version >= min_version for o in older):
                    raise ValueError(f"ONNX op {t} has two converters of one version")
                CONVERTERS[t] = conv
                continue
            if max_version < min_version:
                raise ValueError(f"ONNX op {t}: max_version {max_version} < {min_version}")
            newest = CONVERTERS.get(t)
            if any(
                o.min_version <= max_version and min_version <= o.max_version for o in older
            ) or (newest is not None and newest.min_version <= max_version):
                raise ValueError(f"ONNX op {t} has two converters of one version")
            older.append(conv)
        return fn

    return deco


def converter_for(op_type: str, version: int) -> OnnxConverter | None:
    """The converter of op version `version` (a schema since_version) of `op_type`, or
    None when no converter implements that version (or the op)."""
    for conv in [CONVERTERS.get(op_type), *OLDER_CONVERTERS.get(op_type, ())]:
        if conv is not None and conv.covers(version):
            return conv
    return None


def oldest_version(op_type: str) -> int | None:
    """The oldest op version of `op_type` any converter implements (None: no converter)."""
    convs = [CONVERTERS.get(op_type), *OLDER_CONVERTERS.get(op_type, ())]
    versions = [c.min_version for c in convs if c is not None]
    return min(versions) if versions else None


# reasons NOT_CONVERTED gives (the ONNX frontend runs neither a random nor a string op opaque)
NO_STRING_TYPE = "the IR has no string type"
RANDOM_VALUES = "random values: a converted model could not reproduce the original's numbers"
_ML = "an ai.onnx.ml (classical ML) operator: passlens converts deep-learning graphs"
_TRAINING = "a training-only optimizer update: passlens converts inference graphs"

NOT_CONVERTED: dict[str, str] = {
    "StringNormalizer": NO_STRING_TYPE,
    "StringSplit": NO_STRING_TYPE,
    "StringConcat": NO_STRING_TYPE,
    "RegexFullMatch": NO_STRING_TYPE,
    "ImageDecoder": "decodes encoded image bytes (JPEG, PNG, ...): the IR has no byte strings",
    "Bernoulli": RANDOM_VALUES,
    "RandomNormal": RANDOM_VALUES,
    "RandomNormalLike": RANDOM_VALUES,
    "RandomUniform": RANDOM_VALUES,
    "RandomUniformLike": RANDOM_VALUES,
    "Multinomial": RANDOM_VALUES,
    **{
        f"ai.onnx.ml.{op}": _ML
        for op in ("ArrayFeatureExtractor", "Binarizer", "LabelEncoder", "TreeEnsemble")
    },
    **{f"ai.onnx.preview.training.{op}": _TRAINING for op in ("Adagrad", "Adam", "Momentum")},
}
"""Ops passlens deliberately does not convert, with the reason an unsupported-operator error
gives (keyed like CONVERTERS: ``domain.op_type`` outside ai.onnx)."""


def supported_ops() -> list[str]:
    """The ONNX op types passlens converts, sorted."""
    return sorted(CONVERTERS)


# ----- shared helpers ---------------------------------------------------------------------

I64 = DType.int64


def checked_axis(ctx: ConvertContext, axis: int, rank: int, what: str = "axis") -> int:
    """`axis` of a rank-`rank` value counted from 0 (a negative one from the end); a
    ConversionError naming it (`what`) when out of range."""
    if not -rank <= axis < max(rank, 1):
        raise ConversionError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def static_dim(d: Dim, ctx: ConvertContext, what: str) -> int:
    """`d` when it is a static dim; else the node is unsupported (it needs a static `what`)."""
    if not isinstance(d, int):
        raise Unsupported(f"{ctx.node.op_type} needs a static {what}, got {dim_str(d)}")
    return d


def float_scalar(value: np.ndarray, what: str) -> float:
    """The one value of a constant `value` as a float (a ConversionError if it holds more)."""
    if value.size != 1:
        raise ConversionError(f"{what} must hold one value, got shape {list(value.shape)}")
    return float(value.reshape(-1)[0])


def cast_to(ctx: ConvertContext, x: Expr, dtype: DType) -> Expr:
    """`x` cast to `dtype` (`x` itself when it already has that dtype)."""
    return x if x.ty.dtype is dtype else ctx.call("cast", x, dtype=dtype)


def filled_tensor(ctx: ConvertContext, shape: Expr, value: Any, dtype: DType) -> Expr:
    """A tensor of a computed shape (a 1-D tensor of static length) filled with `value`: an
    empty tensor of that rank padded (constant mode) by `shape` at the end of each axis."""
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
    pads = ctx.call("concat", ctx.constant(np.zeros(rank), I64), cast_to(ctx, shape, I64), axis=0)
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


def scalar_i64(ctx: ConvertContext, e: Expr) -> Expr:
    """`e` (one element) as a 0-d i64 tensor."""
    e = cast_to(ctx, e, I64)
    return e if e.ty.shape == () else ctx.call("reshape", e, shape=[])


def item_i64(ctx: ConvertContext, vec: Expr, k: int) -> Expr:
    """Element `k` of a 1-D tensor, as a 0-d i64 tensor."""
    return ctx.call("take", cast_to(ctx, vec, I64), ctx.constant(k, I64), axis=0)


def dim_value(ctx: ConvertContext, x: Expr, axis: int) -> Expr:
    """Dim `axis` of `x` as a 0-d i64 tensor (a constant when static)."""
    d = x.ty.shape[axis] if x.ty.shape is not None else ANY
    if isinstance(d, int):
        return ctx.constant(d, I64)
    return ctx.call("take", ctx.call("shape_of", x), ctx.constant(axis, I64), axis=0)


def index_range(ctx: ConvertContext, start: Expr, stop: Expr, step: Expr) -> Expr:
    """`range(start, stop, step)` for 0-d i64 tensors, as a 1-D i64 tensor."""
    # length: ceil((stop - start) / step) = -((start - stop) // step), at least 0
    n = ctx.call("neg", ctx.call("floor_divide", ctx.call("subtract", start, stop), step))
    n = ctx.call("maximum", ctx.call("reshape", n, shape=[1]), ctx.constant([0], I64))
    steps = ctx.call("cumsum", filled_tensor(ctx, n, 1, I64), axis=0, exclusive=True)
    return ctx.call("add", start, ctx.call("multiply", steps, step))


def normalized_axes(ctx: ConvertContext, axes: Expr, rank: int) -> Expr:
    """A computed axes tensor with negative axes counted from the end (`a + rank`)."""
    axes = cast_to(ctx, axes, I64)
    negative = ctx.call("less", axes, ctx.constant(0, I64))
    return ctx.call("where", negative, ctx.call("add", axes, ctx.constant(rank, I64)), axes)


def contains_value(ctx: ConvertContext, vec: Expr, value: int) -> Expr:
    """Whether a 1-D i64 tensor holds `value`, as a 0-d bool (false when it is empty)."""
    hits = cast_to(ctx, ctx.call("equal", vec, ctx.constant(value, I64)), I64)
    return ctx.call("greater", ctx.call("sum", hits), ctx.constant(0, I64))


def select_if(ctx: ConvertContext, cond: Expr, then_value: Expr, else_value: Expr) -> Expr:
    """`If(cond) {then_value} else {else_value}` where `then_value` is a single new call
    on values bound outside (so the branch binds only it) and `else_value` is bound outside."""
    from compiler.ir.nodes import Block, is_leaf

    then_bindings = [] if is_leaf(then_value) else [then_value]
    return If(cond, Block(then_bindings, then_value), Block([], else_value), prov=ctx.prov)


def reduce_over_computed_axes(
    ctx, x: Expr, axes: Expr, op: str, keep: bool, noop: bool, prepare=None
):
    """A reduction over computed axes: one If per axis (from the last, so removing an axis
    leaves the lower ones in place), then an If choosing every axis when axes is empty.
    `prepare(value, axes)`, when given, rewrites the value a reduction over `axes` reads
    (axes None: every axis)."""
    rank = ctx.rank(0)
    norm = normalized_axes(ctx, axes, rank)
    if prepare is None:
        prepare = lambda value, _axes: value  # noqa: E731
    y = x
    for a in reversed(range(rank)):
        reduced = ctx.call(op, prepare(y, [a]), axes=[a], keepdims=keep)
        y = select_if(ctx, contains_value(ctx, norm, a), reduced, y)
    length = axes.ty.shape[0] if axes.ty.shape is not None and len(axes.ty.shape) == 1 else ANY
    if noop or (isinstance(length, int) and length > 0):
        return y
    if isinstance(length, int) and length == 0:
        return ctx.call(op, prepare(x, None), keepdims=keep)
    empty = ctx.call("equal", ctx.call("prod", ctx.call("shape_of", axes)), ctx.constant(0, I64))
    return select_if(ctx, empty, ctx.call(op, prepare(x, None), keepdims=keep), y)


# ----- f64 scalar arithmetic (resampling, grids, detection) ---------------------------------

F64 = DType.float64


class F64Ops:
    """Small helpers over a ConvertContext for f64 scalar arithmetic: `o.add(a, 1.0)` is an
    `add` call, a Python number becoming an f64 constant (resize, grid and detection use it)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def f(self, v) -> Expr:
        return v if isinstance(v, Expr) else self.ctx.constant(float(v), F64)

    def __getattr__(self, op):
        ctx = self.ctx

        def call(*args, **attrs):
            return ctx.call(op, *(self.f(a) for a in args), **attrs)

        return call


def scalar_f64(ctx, e: Expr) -> Expr:
    """`e` (one element) as a 0-d f64 tensor."""
    e = cast_to(ctx, e, F64)
    return e if e.ty.shape == () else ctx.call("reshape", e, shape=[])


def positions_f64(ctx, count: Expr, static: int | None) -> Expr:
    """`0 .. count-1` as a 1-D f64 tensor (static length when known)."""
    if static is not None:
        return ctx.call("arange", stop=static, dtype=F64)
    zero, one = ctx.constant(0, I64), ctx.constant(1, I64)
    return cast_to(ctx, index_range(ctx, zero, count, one), F64)
