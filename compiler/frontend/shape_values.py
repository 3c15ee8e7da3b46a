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
for dynamic-to-static to fold where the stepper shows it. Reshape takes a static value too
(GroupNorm's ``Reshape(x, Shape(y))``): its tensor form would leave every dim '?' for the ops
after it, whose attributes (Resize's sizes) then keep the '?' past dynamic-to-static.

:func:`symbolic_value` evaluates an IR expression over the ops shape computations use
(constants, ``shape_of``, ``zeros`` / ``ones``, ``take``, ``strided_slice``, ``concat``,
``unsqueeze`` / ``squeeze`` / ``reshape`` / ``flatten``, ``permute_dims``, ``cast`` to an
integer, ``identity``, ``add`` / ``subtract`` / ``multiply`` / ``divide`` / ``floor_divide`` /
``mod``, ``neg``, ``maximum`` / ``minimum`` of ints; ``equal`` / ``not_equal`` where known and
``where`` on known conditions: TorchScript's ``expand(batch, -1, -1)``) on integer or bool
tensors of at most
:data:`MAX_ELEMENTS` values; anything else is unknown (None). A result is kept only when its
shape is the one the node's type declares.
"""

from __future__ import annotations

import numpy as np

from compiler.ir.nodes import Call, Constant, Expr
from compiler.ir.symbolic import ANY, Dim, SymExpr, floordiv
from compiler.ir.types import DType, TensorType

MAX_ELEMENTS = 64  # a shape, not data
_INT_OPS = ("add", "subtract", "multiply", "divide", "floor_divide", "mod", "maximum", "minimum")


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
    return (
        isinstance(ty, TensorType)
        and (ty.dtype.is_int or ty.dtype is DType.bool)
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
        if data.dtype.kind not in "iub" or data.size > MAX_ELEMENTS:
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
    if op == "cast" and attrs["dtype"].is_int:  # a bool becomes 0 / 1
        return np.vectorize(lambda v: int(v) if isinstance(v, bool) else v, otypes=[object])(
            args[0]
        )
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


def _equal(x: Dim, y: Dim) -> bool:
    """Whether two dims are equal, where it is known: a symbolic dim is a size (never
    negative: ``batch == -1`` is false, the TorchScript exporter's test for ``expand(-1)``)
    and equals the very same expression."""
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
    return [d if isinstance(d, SymExpr) else int(d) for d in value.reshape(-1)]
