"""IR types: dtypes, tensor types with symbolic shapes, tuple types. All frozen value objects."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from enum import Enum

import numpy as np

from compiler.ir.symbolic import (
    ANY,
    Dim,
    SymExpr,
    dim_add,
    dim_mul,
    dim_str,
    dim_sub,
    dims_equal,
    is_dim,
    sym,
)

try:  # bfloat16 comes from ml_dtypes (a dependency of onnx); without it bf16 is unavailable.
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - exercised only on machines without ml_dtypes
    _ml_dtypes = None


class DType(Enum):
    """An element type. The value is the short name used in the text format."""

    float16 = "f16"
    bfloat16 = "bf16"
    float32 = "f32"
    float64 = "f64"
    int8 = "i8"
    int16 = "i16"
    int32 = "i32"
    int64 = "i64"
    uint8 = "u8"
    uint16 = "u16"
    uint32 = "u32"
    uint64 = "u64"
    bool = "bool"
    # low-precision storage types (ml_dtypes): the interpreter computes with them, the LLVM
    # backend does not compile them (``is_storage_only``)
    float8e4m3fn = "f8e4m3fn"
    float8e4m3fnuz = "f8e4m3fnuz"
    float8e5m2 = "f8e5m2"
    float8e5m2fnuz = "f8e5m2fnuz"
    float8e8m0 = "f8e8m0"
    float4e2m1 = "f4e2m1"
    int4 = "i4"
    uint4 = "u4"
    int2 = "i2"
    uint2 = "u2"

    @property
    def short(self) -> str:
        """The short name (`f32`) used in the text format."""
        return self.value

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype holding values of this type (ml_dtypes' for bf16 and the
        low-precision types)."""
        try:  # made once per dtype (the interpreter asks at every binding)
            return _NUMPY_DTYPES[self._value_]
        except KeyError:
            pass
        ml_name = _ML_NAMES.get(self)
        if ml_name is not None:
            if _ml_dtypes is None:
                raise TypeError(f"{self.name} needs the ml_dtypes package")
            dtype = np.dtype(getattr(_ml_dtypes, ml_name))
        else:
            dtype = np.dtype(self.name)
        _NUMPY_DTYPES[self._value_] = dtype
        return dtype

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (the sub-byte types take one byte each, like numpy)."""
        if self is DType.bfloat16:
            return 2
        if self in _ML_NAMES:
            return 1
        return np.dtype(self.name).itemsize

    @property
    def bits(self) -> int:
        """Bits of a value (4 for int4, 1 for bool): the width of the type, not of its storage."""
        return _BITS.get(self, 8 * self.itemsize)

    @property
    def is_float(self) -> bool:
        """Whether this is a floating-point type (the float8 / float4 types included)."""
        return self in _FLOATS

    @property
    def is_int(self) -> bool:
        """Whether this is a (signed or unsigned) integer type, bool excluded."""
        return self in _INTS

    @property
    def is_unsigned(self) -> bool:
        """Whether this is an unsigned integer type (bool excluded)."""
        return self in _UNSIGNED

    @property
    def is_storage_only(self) -> bool:
        """Whether this is a low-precision type (float8, float4, int4, int2, ...) that the
        interpreter handles but the LLVM backend does not compile."""
        return self in _ML_NAMES and self is not DType.bfloat16

    @staticmethod
    def of(value: str | DType | np.dtype | type) -> DType:
        """The DType for a name (`float32` or `f32`), a numpy dtype or a DType."""
        if isinstance(value, DType):
            return value
        if isinstance(value, str):
            if value in _BY_NAME:
                return _BY_NAME[value]
            raise TypeError(f"unknown dtype {value!r}; known: {', '.join(d.name for d in DType)}")
        try:
            npd = np.dtype(value)
        except TypeError:
            raise TypeError(f"unknown dtype {value!r}") from None
        if npd.kind == "V" or npd.name in _BY_ML_NAME:  # an ml_dtypes type, checked by identity
            ml = _BY_ML_NAME.get(npd.name)
            if ml is not None and npd == ml.numpy:
                return ml
            raise TypeError(f"dtype {npd} is not supported by the IR")
        if npd.name in _BY_NAME:
            return _BY_NAME[npd.name]
        raise TypeError(f"dtype {npd} is not supported by the IR")

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    def __str__(self) -> str:
        return self.value


_NUMPY_DTYPES: dict[str, np.dtype] = {}  # DType.numpy by value, made on first use
_BY_NAME = {d.name: d for d in DType} | {d.value: d for d in DType}
_ML_NAMES = {
    DType.bfloat16: "bfloat16",
    DType.float8e4m3fn: "float8_e4m3fn",
    DType.float8e4m3fnuz: "float8_e4m3fnuz",
    DType.float8e5m2: "float8_e5m2",
    DType.float8e5m2fnuz: "float8_e5m2fnuz",
    DType.float8e8m0: "float8_e8m0fnu",
    DType.float4e2m1: "float4_e2m1fn",
    DType.int4: "int4",
    DType.uint4: "uint4",
    DType.int2: "int2",
    DType.uint2: "uint2",
}
_BY_ML_NAME = {v: k for k, v in _ML_NAMES.items()}
_FLOATS = frozenset(
    (DType.float16, DType.bfloat16, DType.float32, DType.float64)
    + (DType.float8e4m3fn, DType.float8e4m3fnuz, DType.float8e5m2, DType.float8e5m2fnuz)
    + (DType.float8e8m0, DType.float4e2m1)
)
_UNSIGNED = frozenset(
    (DType.uint8, DType.uint16, DType.uint32, DType.uint64, DType.uint4, DType.uint2)
)
_INTS = _UNSIGNED | {DType.int8, DType.int16, DType.int32, DType.int64, DType.int4, DType.int2}
_BITS = {
    DType.bool: 1,
    DType.float4e2m1: 4,
    DType.int4: 4,
    DType.uint4: 4,
    DType.int2: 2,
    DType.uint2: 2,
}


class Type:
    """Base class of IR types."""

    __slots__ = ()

    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} is immutable")


class TensorType(Type):
    """A tensor of `dtype` with `shape` (a tuple of dims), or of unknown rank (shape None)."""

    __slots__ = ("shape", "dtype", "_hash", "_text")  # _text: str(self), made on first use

    def __init__(self, shape: Iterable[Dim] | None, dtype: DType | str):
        dtype = DType.of(dtype)
        if shape is not None:
            shape = tuple(int(d) if isinstance(d, (np.integer,)) else d for d in shape)
            for d in shape:
                if not is_dim(d):
                    raise TypeError(f"invalid dimension {d!r} in shape {shape!r}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "_hash", hash(("tensor", shape, dtype)))

    @property
    def ndim(self) -> int | None:
        """The rank, or None when unknown."""
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        """Whether every dim is a known integer."""
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    @property
    def numel(self) -> Dim | None:
        """Number of elements (an int, an expression, ANY) or None for unknown rank."""
        if self.shape is None:
            return None
        n: Dim = 1
        for d in self.shape:
            n = dim_mul(n, d)
        return n

    @property
    def nbytes(self) -> int | None:
        """Bytes of a value of this type when static, else None."""
        n = self.numel
        return n * self.dtype.itemsize if isinstance(n, int) else None

    def with_shape(self, shape) -> TensorType:
        """The same dtype with another shape."""
        return TensorType(shape, self.dtype)

    def with_dtype(self, dtype) -> TensorType:
        """The same shape with another dtype."""
        return TensorType(self.shape, dtype)

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, TensorType)
            and self.dtype is other.dtype
            and self.shape == other.shape
        )

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        try:  # a type is immutable: its text is made once (views print types of every node)
            return self._text
        except AttributeError:
            pass
        if self.shape is None:
            text = f"{self.dtype.short}[*]"
        else:
            text = f"{self.dtype.short}[{', '.join(dim_str(d) for d in self.shape)}]"
        object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return f"TensorType({self})"

    def __reduce__(self):
        return (TensorType, (self.shape, self.dtype))


class TupleType(Type):
    """A tuple of values of the given types."""

    __slots__ = ("fields", "_hash", "_text")  # _text: str(self), made on first use

    def __init__(self, fields: Iterable[Type]):
        fields = tuple(fields)
        for f in fields:
            if not isinstance(f, Type):
                raise TypeError(f"tuple field must be a Type, got {f!r}")
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "_hash", hash(("tuple", fields)))

    def __eq__(self, other) -> bool:
        return isinstance(other, TupleType) and self.fields == other.fields

    def __hash__(self) -> int:
        return self._hash

    def __len__(self) -> int:
        return len(self.fields)

    def __str__(self) -> str:
        try:
            return self._text
        except AttributeError:
            pass
        if len(self.fields) == 1:
            text = f"({self.fields[0]},)"
        else:
            text = f"({', '.join(str(f) for f in self.fields)})"
        object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return f"TupleType({self})"

    def __reduce__(self):
        return (TupleType, (self.fields,))


_TORCH_NAMES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64")
_TORCH_NAMES += ("uint8", "bool")


@functools.cache
def torch_dtypes() -> dict:
    """The IR dtypes torch has, each with its torch dtype (imports torch: call it only where
    torch is needed). The same dict each call: do not change it."""
    import torch

    return {DType[name]: getattr(torch, name) for name in _TORCH_NAMES}


def is_float_dtype(dtype) -> bool:
    """Whether a numpy dtype is floating point (bfloat16, float8 and float4 included, whose
    numpy kind is mostly 'V')."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return True
    d = _BY_ML_NAME.get(dtype.name)
    return d is not None and d.is_float and dtype == d.numpy


def tensor(shape, dtype="float32") -> TensorType:
    """Shorthand for `TensorType(shape, dtype)`."""
    return TensorType(shape, dtype)


def join_types(a: Type, b: Type) -> Type:
    """The most precise type that covers both (for the result of an `If`)."""
    if a == b:
        return a
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a) == len(b):
        return TupleType(join_types(x, y) for x, y in zip(a.fields, b.fields))
    if isinstance(a, TensorType) and isinstance(b, TensorType) and a.dtype is b.dtype:
        if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
            return TensorType(None, a.dtype)
        return TensorType(
            [x if dims_equal(x, y) else ANY for x, y in zip(a.shape, b.shape)], a.dtype
        )
    raise TypeError(f"the branches have incompatible types {a} and {b}")


def type_of_array(value: np.ndarray) -> TensorType:
    """The static tensor type of a numpy array."""
    return TensorType(value.shape, DType.of(value.dtype))


def shape_matches(annotated: tuple | None, actual: tuple, env: dict) -> bool:
    """Whether a concrete shape fits an annotated one, binding unbound symbols in `env`."""
    if annotated is None:
        return True
    if len(annotated) != len(actual):
        return False
    for a, v in zip(annotated, actual):
        if a is ANY:
            continue
        if isinstance(a, int):
            if a != v:
                return False
            continue
        assert isinstance(a, SymExpr)
        syms = a.free_symbols
        missing = [s for s in syms if s not in env]
        if len(a._terms) == 1 and len(syms) == 1 and missing and str(a) == missing[0]:
            env[missing[0]] = int(v)
            continue
        if missing:
            continue  # cannot check an expression of symbols not bound yet
        if a.evaluate(env) != v:
            return False
    return True


def symbol_bindings(params: Sequence[Type], args: Sequence[Type]) -> dict[str, Dim]:
    """What a callee's symbols stand for at one call: a parameter dim of one symbol, `n` or
    linear in it (`2*k + 1`), takes the argument's dim there (`batch`; `2*n + 1` gives
    k = n) when that solves exactly; the first binding of a symbol wins."""
    env: dict[str, Dim] = {}
    for pt, at in zip(params, args, strict=False):
        if not (isinstance(pt, TensorType) and isinstance(at, TensorType)):
            continue
        if pt.shape is None or at.shape is None or len(pt.shape) != len(at.shape):
            continue
        for pd, ad in zip(pt.shape, at.shape, strict=True):
            if isinstance(pd, SymExpr) and len(pd.free_symbols) == 1 and ad is not ANY:
                (name,) = pd.free_symbols
                if name not in env:
                    value = _solve_linear(pd, name, ad)
                    if value is not None:
                        env[name] = value
    return env


def _solve_linear(d: SymExpr, name: str, target: Dim) -> Dim | None:
    """The dim `v` with `d(name = v) == target` when `d` is `c*name + e` (ints c, e)
    and the division is exact, else None."""
    from compiler.ir.symbolic import floordiv

    e = d.substitute({name: 0})
    c = dim_sub(d.substitute({name: 1}), e)
    if not isinstance(c, int) or not isinstance(e, int) or c <= 0:
        return None
    if d != dim_add(dim_mul(c, sym(name)), e):
        return None  # not linear in it
    value = floordiv(dim_sub(target, e), c)
    return value if d.substitute({name: value}) == target else None


def empty_scan_shape(
    param_types: Sequence[Type], args: Sequence, per_iteration: Type
) -> tuple[int, ...] | None:
    """The per-iteration shape of a Loop's scanned output when the loop ran no iteration:
    its dims evaluated with the symbols the body's parameters (`param_types`, carried and
    captured) bind from the values passed (`args`); None when one stays unknown."""
    from compiler.ir.symbolic import evaluate_dim

    if not isinstance(per_iteration, TensorType) or per_iteration.shape is None:
        return None
    env: dict = {}
    for t, a in zip(param_types, args):
        if isinstance(t, TensorType) and hasattr(a, "shape"):
            shape_matches(t.shape, tuple(a.shape), env)
    try:
        dims = tuple(evaluate_dim(d, env) for d in per_iteration.shape)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return dims if all(isinstance(d, int) and d >= 0 for d in dims) else None
