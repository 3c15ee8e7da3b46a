"""Reductions: sum, mean, max, min, prod, variance, std over axes; argmax and argmin along one
axis; cumsum along one axis.

Semantic choices, where frameworks differ:

- ``axes=None`` reduces every axis. An empty list is an error rather than a guess: torch and
  ONNX read ``[]`` as "every axis", numpy as "no axis". Negative axes count from the end.
  A rank-0 input accepts axis 0 or -1 (as torch does) and is returned unchanged.
- Floating-point sums, means, products, variances and cumulative sums are computed in float64
  and rounded to the input dtype, so float16 / bfloat16 results are as exact as they can be
  (torch accumulates in float32; the difference is within a float16 ulp or so).
- Integer ``sum``, ``prod`` and ``cumsum`` keep the input dtype and wrap on overflow (numpy and
  torch with ``dtype=`` the input dtype; torch's default would widen to int64). ``mean``,
  ``variance`` and ``std`` need a floating-point input, like torch.
- ``variance`` / ``std`` divide by ``N - correction``; ``correction`` defaults to 0 (population
  variance, as numpy and TVM's ``variance``); torch's ``var`` defaults to 1, so a frontend passes
  it explicitly.
- ``argmax`` / ``argmin`` return int64 and the first index of the extreme value (NaN counts as
  the extreme, as in numpy and torch). With ``axis=None`` they index the flattened input;
  ``keepdims`` then keeps every axis with size 1 (numpy and torch).
- ``cumsum`` has ONNX CumSum's ``exclusive`` and ``reverse`` flags (torch's cumsum is both false).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compiler.ir.op_registry import OPAQUE, REDUCE, AttrSpec, TypeInferenceError, define_op
from compiler.ir.shape_inference import normalize_axes, normalize_axis, tensor_input
from compiler.ir.types import DType, TensorType

# ----- shapes ------------------------------------------------------------------------------


def _check_axes_attr(axes: Sequence[int] | None) -> None:
    if axes is not None and len(axes) == 0:
        raise TypeInferenceError(
            "axes is empty: use axes=None to reduce every axis "
            "(torch and ONNX read [] as every axis, numpy as none)"
        )


def _reduced_axes(axes: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """The normalised axes to reduce (all when None; none for a rank-0 input)."""
    _check_axes_attr(axes)
    if axes is None:
        return tuple(range(ndim))
    norm = normalize_axes(axes, ndim)
    return () if ndim == 0 else norm


def _reduced_shape(t: TensorType, axes: Sequence[int] | None, keepdims: bool):
    if t.shape is None:
        _check_axes_attr(axes)
        return () if axes is None and not keepdims else None
    drop = _reduced_axes(axes, len(t.shape))
    if keepdims:
        return tuple(1 if i in drop else d for i, d in enumerate(t.shape))
    return tuple(d for i, d in enumerate(t.shape) if i not in drop)


def _is_float(x: np.ndarray) -> bool:
    return DType.of(x.dtype).is_float


def _check_dtype(t: TensorType, kind: str) -> None:
    if kind == "float" and not t.dtype.is_float:
        raise TypeInferenceError(f"needs a floating-point input, got {t.dtype} (insert a cast)")
    if kind == "numeric" and t.dtype is DType.bool:
        raise TypeInferenceError("needs a numeric input, got bool (insert a cast)")


# ----- sum, mean, prod, max, min, variance, std --------------------------------------------


def _reduce_infer(kind: str):
    def infer(types, attrs):
        (t,) = types
        t = tensor_input(t, "data")
        _check_dtype(t, kind)
        return t.with_shape(_reduced_shape(t, attrs["axes"], attrs["keepdims"]))

    return infer


def _sum(x, axis, keepdims, attrs):
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=np.float64 if _is_float(x) else x.dtype)


def _prod(x, axis, keepdims, attrs):
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=np.float64 if _is_float(x) else x.dtype)


def _count(x: np.ndarray, axis: tuple[int, ...]) -> int:
    return int(np.prod([x.shape[a] for a in axis], dtype=np.int64))


def _mean(x, axis, keepdims, attrs):
    # sum / count rather than np.mean: an empty axis gives nan without numpy's warning
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=np.float64) / _count(x, axis)


def _extreme(fn):
    def compute(x, axis, keepdims, attrs):
        if x.dtype.kind == "V":  # bfloat16: compare in float32 (exact)
            x = x.astype(np.float32)
        return fn(x, axis=axis, keepdims=keepdims)

    return compute


def _variance(x, axis, keepdims, attrs):
    x = x.astype(np.float64)
    deviations = x - _mean(x, axis, True, attrs)
    squares = np.sum(np.square(deviations), axis=axis, keepdims=keepdims)
    return squares / max(_count(x, axis) - attrs["correction"], 0)  # N <= correction: nan


def _std(x, axis, keepdims, attrs):
    return np.sqrt(_variance(x, axis, keepdims, attrs))


def _reduce_compute(fn):
    def compute(values, attrs):
        (x,) = values
        axis = _reduced_axes(attrs["axes"], x.ndim)
        with np.errstate(divide="ignore", invalid="ignore"):  # empty or N <= correction: nan
            out = fn(x, axis, attrs["keepdims"], attrs)
        return np.asarray(out).astype(x.dtype)

    return compute


_AXES = AttrSpec("ints", None, "axes to reduce (negative count from the end); none = every axis")
_KEEPDIMS = AttrSpec("bool", False, "keep each reduced axis with size 1")

_REDUCTIONS = {
    "sum": (_sum, "numeric", "Sum over axes (integers keep their dtype and wrap)."),
    "mean": (_mean, "float", "Mean over axes of a floating-point tensor."),
    "prod": (_prod, "numeric", "Product over axes (integers keep their dtype and wrap)."),
    "max": (_extreme(np.max), "any", "Maximum over axes (NaN propagates)."),
    "min": (_extreme(np.min), "any", "Minimum over axes (NaN propagates)."),
}

for _name, (_fn, _kind, _doc) in _REDUCTIONS.items():
    define_op(
        _name,
        inputs=("data",),
        attrs={"axes": _AXES, "keepdims": _KEEPDIMS},
        infer=_reduce_infer(_kind),
        compute=_reduce_compute(_fn),
        pattern=REDUCE,
        doc=_doc,
    )

for _name, _fn, _doc in (
    ("variance", _variance, "Variance over axes, dividing by N - correction."),
    ("std", _std, "Standard deviation over axes, dividing by N - correction."),
):
    define_op(
        _name,
        inputs=("data",),
        attrs={
            "axes": _AXES,
            "keepdims": _KEEPDIMS,
            "correction": AttrSpec("float", 0.0, "subtracted from N (1 for torch's default)"),
        },
        infer=_reduce_infer("float"),
        compute=_reduce_compute(_fn),
        pattern=REDUCE,
        doc=_doc,
    )

# ----- argmax, argmin ----------------------------------------------------------------------


def _arg_infer(types, attrs):
    (t,) = types
    t = tensor_input(t, "data")
    _check_dtype(t, "numeric")  # torch and ONNX have no argmax of bool either
    axis, keepdims = attrs["axis"], attrs["keepdims"]
    if t.shape is None:
        return TensorType(() if axis is None and not keepdims else None, DType.int64)
    rank = len(t.shape)
    if axis is None:
        shape = (1,) * rank if keepdims else ()
    else:
        a = normalize_axis(axis, rank)
        if rank == 0:
            shape = ()
        elif keepdims:
            shape = t.shape[:a] + (1,) + t.shape[a + 1 :]
        else:
            shape = t.shape[:a] + t.shape[a + 1 :]
    return TensorType(shape, DType.int64)


def _arg_compute(fn):
    def compute(values, attrs):
        (x,) = values
        axis, keepdims = attrs["axis"], attrs["keepdims"]
        if x.dtype.kind == "V":  # bfloat16
            x = x.astype(np.float32)
        if x.ndim == 0:
            return np.zeros((), np.int64)
        if axis is not None:
            axis = normalize_axis(axis, x.ndim)
        return np.asarray(fn(x, axis=axis, keepdims=keepdims), dtype=np.int64)

    return compute


for _name, _fn, _what in (("argmax", np.argmax, "largest"), ("argmin", np.argmin, "smallest")):
    define_op(
        _name,
        inputs=("data",),
        attrs={
            "axis": AttrSpec("int", None, "the axis to search; none = the flattened input"),
            "keepdims": _KEEPDIMS,
        },
        infer=_arg_infer,
        compute=_arg_compute(_fn),
        pattern=REDUCE,
        doc=f"Index (int64) of the first {_what} element along an axis.",
    )

# ----- cumsum ------------------------------------------------------------------------------


def _cumsum_infer(types, attrs):
    (t,) = types
    t = tensor_input(t, "data")
    _check_dtype(t, "numeric")
    if t.shape is not None:
        normalize_axis(attrs["axis"], len(t.shape))
    return t


def _cumsum_compute(values, attrs):
    (x,) = values
    if x.ndim == 0:
        normalize_axis(attrs["axis"], 0)
        return np.zeros_like(x) if attrs["exclusive"] else x.copy()
    axis = normalize_axis(attrs["axis"], x.ndim)
    acc = x.astype(np.float64) if _is_float(x) else x
    if attrs["reverse"]:
        acc = np.flip(acc, axis)
    out = np.cumsum(acc, axis=axis, dtype=acc.dtype)
    if attrs["exclusive"]:  # shift by one along the axis: out[i] = sum of acc[:i]
        shifted = np.zeros_like(out)
        dst, src = [slice(None)] * x.ndim, [slice(None)] * x.ndim
        dst[axis], src[axis] = slice(1, None), slice(None, -1)
        shifted[tuple(dst)] = out[tuple(src)]
        out = shifted
    if attrs["reverse"]:
        out = np.flip(out, axis)
    return np.asarray(out, order="C").astype(x.dtype)


define_op(
    "cumsum",
    inputs=("data",),
    attrs={
        "axis": AttrSpec("int", doc="the axis to accumulate along"),
        "exclusive": AttrSpec("bool", False, "each sum leaves out its own element (ONNX)"),
        "reverse": AttrSpec("bool", False, "accumulate from the end of the axis (ONNX)"),
    },
    infer=_cumsum_infer,
    compute=_cumsum_compute,
    pattern=OPAQUE,
    doc="Cumulative sum along an axis (integers keep their dtype and wrap).",
)
