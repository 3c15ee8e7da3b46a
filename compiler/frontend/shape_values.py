"""Symbolic values of shape computations: what a small integer tensor computed from shapes
holds, in dims (``shape_of(x)`` of an ``f32[batch, seq, 64]`` holds ``[batch, seq, 64]``;
``take`` of it at 1 holds ``seq``; ``seq + 1``, ``concat([batch, -1])`` ...).

An exported ONNX model with dynamic dims computes its shapes at run time (``Shape``,
``Gather``, ``Concat`` -> ``Reshape``, ``Range``, ``Expand``). Taken literally, every such
result has '?' dims: the types say nothing and the backend, which loops over sizes, cannot
compile them. When the value is known in dims, the converter uses the attribute form with
symbolic dims instead (``reshape(shape=[batch, seq, 4, 16])``, ``arange(stop=seq)``), as
onnxruntime's symbolic shape inference and TVM's frontends do. Most converters use only values
that read a symbolic dim so: one computed from static shapes alone stays as the file has it,
for dynamic-to-static to fold where the stepper shows it. The converters whose result's shape
is the value (Reshape, Expand, Tile, ConstantOfShape, Resize's sizes) take a static value too
(GroupNorm's ``Reshape(x, Shape(y))``, ``Expand(y, Concat(Shape(x)[:1], [1, 4]))``): their
tensor form would leave every dim '?' for the ops after it, whose attributes (Resize's sizes)
then keep the '?' past dynamic-to-static.

:func:`symbolic_value` evaluates an IR expression over the ops shape computations use
(constants, ``shape_of``, ``zeros`` / ``ones``, ``take``, ``strided_slice``, ``concat``,
``unsqueeze`` / ``squeeze`` / ``reshape`` / ``flatten``, ``permute_dims``, ``cast`` to an
integer, ``identity``, ``add`` / ``subtract`` / ``multiply`` / ``divide`` / ``floor_divide`` /
``mod``, ``neg``, ``maximum`` / ``minimum`` of ints; ``equal`` / ``not_equal`` where known and
``where`` on known conditions: TorchScript's ``expand(batch, -1, -1)``) on integer or bool
tensors of at most :data:`MAX_ELEMENTS` values; anything else is unknown (None). A result is
kept only when its shape is the one the node's type declares.

Float32 and float64 values follow a dim through the arithmetic torch writes for a size it
computes (``F.interpolate(..., recompute_scale_factor=True)``, ``int(h * 1.5)``):
``Cast(h)`` holds ``h`` as a float (:class:`Scaled`), a product or quotient by a constant
scales it by that constant's exact value, and ``Floor`` / ``Ceil`` / a cast back to an
integer give a dim again, ``(3*h) // 2``, when the scale's fraction has a denominator of at
most ``compiler.ir.nn_compute.RESIZE_MAX_DENOMINATOR`` (the exact floor is then what the float
arithmetic gives while the result is under 2**24 / denominator). A number stays a number of the
tensor's dtype, computed as that dtype rounds (10 x 0.7 is 7.0 in float32).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from compiler.ir.nn_compute import RESIZE_MAX_DENOMINATOR
from compiler.ir.nodes import Call, Constant, Expr
from compiler.ir.symbolic import ANY, Dim, SymExpr, dim_mul, floordiv
from compiler.ir.types import DType, TensorType

MAX_ELEMENTS = 64  # a shape, not data
_INT_OPS = ("add", "subtract", "multiply", "divide", "floor_divide", "mod", "maximum", "minimum")
_FLOATS = (DType.float32, DType.float64)


class Scaled:
    """A float value ``dim * ratio``: a dim times an exact fraction (``Cast(h) * 1.5`` holds
    ``Scaled(h, 3/2)``)."""

    __slots__ = ("dim", "ratio")

    def __init__(self, dim: Dim, ratio: Fraction):
        self.dim = dim
        self.ratio = ratio

    def __repr__(self) -> str:
        return f"{self.dim} * {self.ratio}"

    def rounded(self, up: bool) -> Dim:
        """floor (or ceil) of the value as a dim (ArithmeticError when the fraction's
        denominator is too wide for the float arithmetic to agree with it)."""
        p, q = self.ratio.numerator, self.ratio.denominator
        if q > RESIZE_MAX_DENOMINATOR or p < 0:
            raise ArithmeticError(f"{self} is not known in dims once rounded")
        n = dim_mul(self.dim, p)
        return floordiv(n + (q - 1), q) if up and q > 1 else floordiv(n, q)


def symbolic_value(e: Expr, memo: dict | None = None) -> np.ndarray | None:
    """The value of ``e`` as a numpy object array of dims (ints or symbolic), or None when it
    is not a known shape computation. ``memo`` caches by node across calls."""
    return _entry(e, {} if memo is None else memo)[1]


def depends_on_symbolic_dims(e: Expr, memo: dict | None = None) -> bool:
    """Whether ``e``'s known value reads a symbolic dim (a ``shape_of`` of a value whose
    shape has one): a value from static shapes alone is dynamic-to-static's to fold."""
    return _entry(e, {} if memo is None else memo)[2]


def _entry(e: Expr, memo: dict) -> tuple:
    key = id(e)
    if key not in memo:
        memo[key] = (e, None, False)  # (a cycle cannot happen in SSA; this marks "in progress")
        value, dynamic = _value(e, memo)
        memo[key] = (e, value, dynamic and value is not None)  # the node is kept: its id
    return memo[key]


def _small_int(ty) -> bool:
    """A small integer, bool, or float32 / float64 tensor of a static shape."""
    return (
        isinstance(ty, TensorType)
        and (ty.dtype.is_int or ty.dtype is DType.bool or ty.dtype in _FLOATS)
        and ty.shape is not None
        and all(isinstance(d, int) for d in ty.shape)
        and int(np.prod(ty.shape)) <= MAX_ELEMENTS
    )


def _objects(values) -> np.ndarray:
    """Python ints (or dims) in an object array of the same shape."""
    arr = np.asarray(values)
    out = np.empty(arr.shape, dtype=object)
    for i, v in np.ndenumerate(arr):
        out[i] = v if isinstance(v, SymExpr) else bool(v) if arr.dtype == bool else int(v)
    return out


def _value(e: Expr, memo: dict) -> tuple[np.ndarray | None, bool]:
    """The value and whether it reads a symbolic dim."""
    if isinstance(e, Constant):
        data = e.data
        if data.size > MAX_ELEMENTS:
            return None, False
        if data.dtype in (np.float32, np.float64):  # numbers of the constant's own dtype
            out = np.empty(data.shape, dtype=object)
            for i, v in np.ndenumerate(data):
                out[i] = v
            return out, False
        if data.dtype.kind not in "iub":
            return None, False
        return _objects(data), False
    if not isinstance(e, Call) or not _small_int(e.ty):
        return None, False
    op, attrs = e.op, e.attrs
    if op == "shape_of":
        shape = getattr(e.args[0].ty, "shape", None)
        if shape is None or any(d is ANY for d in shape):
            return None, False
        out = np.empty(len(shape), dtype=object)
        out[:] = list(shape)
        return out, any(isinstance(d, SymExpr) for d in shape)
    if op in ("zeros", "ones") and not e.args:
        dtype = bool if e.ty.dtype is DType.bool else np.int64
        return _objects(np.full(e.ty.shape, 0 if op == "zeros" else 1, dtype)), False
    entries = [_entry(a, memo) for a in e.args]
    args = [v for _, v, _ in entries]
    if any(a is None for a in args):
        return None, False
    try:
        out = _apply(op, attrs, args)
    except (IndexError, ValueError, TypeError, ZeroDivisionError, ArithmeticError):
        return None, False
    if out is not None and not isinstance(out, np.ndarray):  # np.vectorize of 0-d values
        out, value = np.empty((), dtype=object), out
        out[()] = value
    if out is None or out.shape != tuple(e.ty.shape):
        return None, False  # never a value its type contradicts
    return out, any(d for _, _, d in entries)


def _ints(values) -> list[int] | None:
    values = list(values)
    return values if all(isinstance(v, int) and not isinstance(v, bool) for v in values) else None


def _apply(op: str, attrs, args: list[np.ndarray]) -> np.ndarray | None:
    if op == "identity":
        return args[0]
    if op == "cast" and attrs["dtype"].is_int:  # a bool becomes 0 / 1, a float is truncated
        return np.vectorize(_to_int, otypes=[object])(args[0])
    if op == "cast" and attrs["dtype"] in _FLOATS:
        kind = attrs["dtype"].numpy.type
        return np.vectorize(lambda v: _to_float(v, kind), otypes=[object])(args[0])
    if op in ("floor", "ceil"):
        return np.vectorize(lambda v: _rounded(v, op == "ceil"), otypes=[object])(args[0])
    if op == "take":
        index = args[1]
        if _ints(index.reshape(-1)) is None:
            return None
        return np.take(args[0], index.astype(np.int64), axis=attrs["axis"])
    if op == "concat":
        return np.concatenate(args, axis=attrs["axis"])
    if op == "unsqueeze":
        return np.expand_dims(args[0], tuple(attrs["axes"]))
    if op == "squeeze":
        axes = attrs.get("axes")
        return np.squeeze(args[0], axis=None if axes is None else tuple(axes))
    if op == "flatten":
        return args[0].reshape(-1) if args[0].ndim <= 1 else None
    if op == "reshape":
        return _reshaped(attrs, args[0])
    if op == "permute_dims":
        axes = attrs.get("axes")
        return np.transpose(args[0], None if axes is None else tuple(axes))
    if op == "strided_slice":
        return _sliced(attrs, args[0])
    if op == "neg":
        return np.vectorize(lambda a: -a, otypes=[object])(args[0])
    if op in _INT_OPS:
        a, b = np.broadcast_arrays(args[0], args[1])
        return np.vectorize(lambda x, y: _binary(op, x, y), otypes=[object])(a, b)
    if op in ("equal", "not_equal"):
        a, b = np.broadcast_arrays(args[0], args[1])
        same = np.vectorize(_equal, otypes=[object])(a, b)
        return same if op == "equal" else np.vectorize(lambda v: not v, otypes=[object])(same)
    if op == "where":
        cond, x, y = np.broadcast_arrays(*args)
        if not all(isinstance(c, bool) for c in cond.reshape(-1)):
            return None
        return np.where(cond.astype(bool), x, y)
    return None


def _is_float(v) -> bool:
    return isinstance(v, (Scaled, np.floating))


def _to_int(v) -> Dim:
    """An integer cast: a bool as 0 / 1, a float truncated (a scaled dim, not negative, as its
    floor)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, Scaled):
        return v.rounded(up=False)
    if isinstance(v, np.floating):
        if not np.isfinite(v):
            raise ArithmeticError("a cast of a non-finite float")
        return int(v)
    return v


def _to_float(v, kind) -> object:
    """A float cast: a number in that dtype, a dim as a scaled dim."""
    if isinstance(v, Scaled):
        return v
    if isinstance(v, SymExpr):
        return Scaled(v, Fraction(1))
    if isinstance(v, bool):
        return kind(int(v))
    return kind(v)


def _rounded(v, up: bool) -> object:
    """floor / ceil of a float value: a number stays one, a scaled dim is a dim again (held
    as a scaled dim of ratio 1, the value still a float)."""
    if isinstance(v, Scaled):
        return Scaled(v.rounded(up), Fraction(1))
    if isinstance(v, np.floating):
        return np.ceil(v) if up else np.floor(v)
    raise ArithmeticError(f"rounding of {v!r}")


def _float_binary(op: str, x, y) -> object:
    """``x op y`` of float values: numbers as their dtype computes it; a scaled dim times or
    divided by a (finite, non-zero) number scales its ratio by the number's exact value."""
    if not isinstance(x, Scaled) and not isinstance(y, Scaled):
        if not (isinstance(x, np.floating) and isinstance(y, np.floating)):
            raise ArithmeticError(f"{op} of {x!r} and {y!r}")
        with np.errstate(all="ignore"):
            value = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                     "divide": np.divide}.get(op, lambda a, b: None)(x, y)  # fmt: skip
        if value is None or not np.isfinite(value):
            raise ArithmeticError(f"{op} of {x!r} and {y!r}")
        return value
    scaled, other = (x, y) if isinstance(x, Scaled) else (y, x)
    if not isinstance(other, np.floating) or not np.isfinite(other) or other == 0:
        raise ArithmeticError(f"{op} of {x!r} and {y!r} is not known in dims")
    if op == "multiply":
        return Scaled(scaled.dim, scaled.ratio * Fraction(float(other)))
    if op == "divide" and scaled is x:
        return Scaled(scaled.dim, scaled.ratio / Fraction(float(other)))
    raise ArithmeticError(f"{op} of {x!r} and {y!r} is not known in dims")


def _equal(x: Dim, y: Dim) -> bool:
    """Whether two dims are equal, where it is known: a symbolic dim is a size (never
    negative: ``batch == -1`` is false, the TorchScript exporter's test for ``expand(-1)``)
    and equals the very same expression."""
    if _is_float(x) or _is_float(y):
        if isinstance(x, np.floating) and isinstance(y, np.floating):
            return bool(x == y)
        raise ArithmeticError(f"whether {x!r} equals {y!r} is not known in dims")
    if isinstance(x, bool) or isinstance(y, bool):
        if isinstance(x, bool) and isinstance(y, bool):
            return x == y
        raise ArithmeticError("a bool compared with a dim")
    if isinstance(x, int) and isinstance(y, int):
        return x == y
    if x == y:
        return True
    other = y if isinstance(x, SymExpr) else x
    if isinstance(other, int) and other < 0:
        return False
    raise ArithmeticError(f"whether {x} equals {y} is not known in dims")


def _reshaped(attrs, v: np.ndarray) -> np.ndarray | None:
    shape = attrs.get("shape")
    if shape is None or _ints(shape) is None:
        return None
    if not attrs.get("allowzero", False):  # 0 copies the input's dim there
        shape = [v.shape[i] if d == 0 and i < v.ndim else d for i, d in enumerate(shape)]
    return v.reshape(shape)


def _sliced(attrs, v: np.ndarray) -> np.ndarray | None:
    begin, end = _ints(attrs["begin"]), _ints(attrs["end"])
    strides = attrs.get("strides")
    strides = [1] * len(begin or ()) if strides is None else _ints(strides)
    axes = attrs.get("axes")
    axes = list(range(len(begin or ()))) if axes is None else _ints(axes)
    if begin is None or end is None or strides is None or axes is None:
        return None
    index = [slice(None)] * v.ndim
    for a, b, e, s in zip(axes, begin, end, strides, strict=True):
        index[a] = slice(b, e, s)  # Python's clamping is ONNX's
    return v[tuple(index)]


def _binary(op: str, x: Dim, y: Dim) -> Dim:
    if _is_float(x) or _is_float(y):
        return _float_binary(op, x, y)
    if isinstance(x, int) and isinstance(y, int):
        if op in ("divide", "floor_divide"):
            if y == 0:
                raise ZeroDivisionError
            q = abs(x) // abs(y)
            return (q if (x >= 0) == (y >= 0) else -q) if op == "divide" else x // y
        if op == "mod":
            if y == 0:
                raise ZeroDivisionError
            return x % y  # the sign of the divisor, like ONNX Mod without fmod
        return {
            "add": x + y,
            "subtract": x - y,
            "multiply": x * y,
            "maximum": max(x, y),
            "minimum": min(x, y),
        }[op]
    if op == "add":
        return x + y
    if op == "subtract":
        return x - y
    if op == "multiply":
        return x * y
    if op in ("divide", "floor_divide") and isinstance(y, int) and y > 0:
        return floordiv(x, y)  # sizes are not negative: truncation is flooring
    if op == "mod" and isinstance(y, int) and y > 0:
        return x % y
    if op in ("maximum", "minimum") and x == y:
        return x
    raise ArithmeticError(f"{op} of {x} and {y} is not known in dims")


def dims_of(value: np.ndarray | None) -> list[Dim] | None:
    """A symbolic value as a list of dims (a 0-d value as one), or None."""
    if value is None:
        return None
    flat = list(value.reshape(-1))
    if any(_is_float(d) for d in flat):  # a float value holds no dims
        return None
    return [d if isinstance(d, SymExpr) else int(d) for d in flat]
