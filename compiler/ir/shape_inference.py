"""Helpers for type inference shared by the op families: input checks, symbolic
broadcasting, axis normalisation. Each raises TypeInferenceError with a plain message.

They sit in the IR, beside the op registry whose ``TypeInferenceError`` they raise, because
they are not an op family (compiler/ops/ holds only those) and more than the ops use them: the
frontends' converters and the backend's lowerings normalise axes and broadcast shapes the same
way."""

from __future__ import annotations

from collections.abc import Sequence

from compiler.ir.op_registry import TypeInferenceError
from compiler.ir.symbolic import ANY, Dim, SymExpr, dim_str, dims_equal
from compiler.ir.types import DType, TensorType, Type


def tensor_input(t: Type, what: str = "input") -> TensorType:
    """``t`` as a TensorType, or a clear error when it is a tuple."""
    if not isinstance(t, TensorType):
        raise TypeInferenceError(f"{what} must be a tensor, got {t}")
    return t


def same_dtype(types: Sequence[TensorType], what: str = "inputs") -> DType:
    """The common dtype of ``types``; differing dtypes are an error (no implicit promotion)."""
    dtypes = {t.dtype for t in types}
    if len(dtypes) != 1:
        listed = ", ".join(str(t.dtype) for t in types)
        raise TypeInferenceError(f"{what} must have one dtype, got {listed} (insert a cast)")
    return types[0].dtype


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    """Broadcast two dims with numpy rules; symbolic dims must be provably compatible."""
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    if a is ANY:
        return b if isinstance(b, int) and b != 1 else ANY
    if b is ANY:
        return a if isinstance(a, int) and a != 1 else ANY
    eq = dims_equal(a, b)
    if eq:
        return a
    raise TypeInferenceError(f"cannot broadcast dimension {dim_str(a)} with {dim_str(b)}")


def broadcast_shapes(*shapes: tuple | None) -> tuple | None:
    """Numpy broadcasting of shapes with symbolic dims (None = unknown rank -> None)."""
    if any(s is None for s in shapes):
        return None
    ndim = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for i in range(ndim):
        d: Dim = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j >= 0:
                try:
                    d = broadcast_dim(d, s[j])
                except TypeInferenceError:
                    listed = " and ".join("[" + ", ".join(map(dim_str, s)) + "]" for s in shapes)
                    raise TypeInferenceError(f"shapes {listed} do not broadcast") from None
        out.append(d)
    return tuple(out)


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """A possibly negative axis as an index in ``range(ndim)``."""
    if ndim == 0:
        if axis not in (0, -1):
            raise TypeInferenceError(f"{what} {axis} is out of range for rank 0")
        return 0
    if not -ndim <= axis < ndim:
        raise TypeInferenceError(f"{what} {axis} is out of range for rank {ndim}")
    return axis % ndim


def normalize_axes(axes: Sequence[int], ndim: int, what: str = "axes") -> tuple[int, ...]:
    """Normalise several axes; duplicates are an error."""
    out = tuple(normalize_axis(a, ndim, what) for a in axes)
    if len(set(out)) != len(out):
        raise TypeInferenceError(f"{what} {list(axes)} repeat an axis")
    return out


def known_rank(t: TensorType, what: str = "input") -> int:
    """The rank of ``t``; unknown rank is an error for ops that need it."""
    if t.shape is None:
        raise TypeInferenceError(f"{what} needs a known rank, got {t}")
    return len(t.shape)


def dim_product(dims: Sequence[Dim]) -> Dim:
    """The product of dims (ANY when any is unknown, unless one is 0)."""
    out: Dim = 1
    for d in dims:
        if d == 0:
            return 0
        if d is ANY or out is ANY:
            out = ANY
        else:
            out = out * d
    return out


def is_symbolic(d: Dim) -> bool:
    """Whether a dim is a symbolic expression."""
    return isinstance(d, SymExpr)
