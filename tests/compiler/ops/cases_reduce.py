"""OpCases for the reductions, checked against torch."""

from __future__ import annotations

import warnings

import numpy as np
import torch

import compiler.ops.reduce  # noqa: F401  (registers the ops)
from tests.compiler.ops.opcase import OpCase

_rng = np.random.default_rng(1)
F16 = {"rtol": 2e-3, "atol": 2e-3}


def _randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return _rng.standard_normal(shape).astype(dtype)


def _ints(*shape: int, low: int = -10, high: int = 10, dtype=np.int32) -> np.ndarray:
    return _rng.integers(low, high, shape).astype(dtype)


def _dims(x: torch.Tensor, axes) -> tuple[int, ...]:
    return tuple(range(x.dim())) if axes is None else tuple(axes)


def _keep_dtype(fn):
    """torch ``fn(x, dim=..., keepdim=..., dtype=x.dtype)`` with numpy-style axes."""

    def ref(x, axes=None, keepdims=False):
        return fn(x, dim=_dims(x, axes), keepdim=keepdims, dtype=x.dtype)

    return ref


def _amax_amin(fn):
    def ref(x, axes=None, keepdims=False):
        return fn(x, dim=_dims(x, axes), keepdim=keepdims)

    return ref


def _torch_mean(x, axes=None, keepdims=False):
    return torch.mean(x, dim=_dims(x, axes), keepdim=keepdims)


def _torch_prod(x, axes=None, keepdims=False):
    """torch.prod takes one dim at a time: reduce each axis keeping dims, then squeeze."""
    dims = sorted(d % max(x.dim(), 1) for d in _dims(x, axes))
    out = x
    for d in dims:
        out = torch.prod(out, dim=d, keepdim=True, dtype=x.dtype)
    if not keepdims and x.dim():
        out = out.squeeze(dims) if dims else out
    return out


def _torch_var(fn):
    def ref(x, axes=None, keepdims=False, correction=0.0):
        with warnings.catch_warnings():  # "degrees of freedom is <= 0" in the nan case
            warnings.simplefilter("ignore")
            return fn(x, dim=_dims(x, axes), keepdim=keepdims, correction=correction)

    return ref


def _torch_arg(fn):
    def ref(x, axis=None, keepdims=False):
        return fn(x, dim=axis, keepdim=keepdims)

    return ref


def _torch_cumsum(x, axis, exclusive=False, reverse=False):
    if reverse:
        x = torch.flip(x, [axis])
    out = torch.cumsum(x, dim=axis, dtype=x.dtype)
    if exclusive:
        out = out - x
    return torch.flip(out, [axis]) if reverse else out


CASES: list[OpCase] = []

# ----- sum, mean, max, min, prod: the same axis patterns for each ---------------------------

_AXES_PATTERNS = [
    ({"axes": [1]}, "axis1"),
    ({"axes": [-1]}, "neg-axis"),
    ({"axes": [0, 2]}, "axes02"),
    ({"axes": [2, -3], "keepdims": True}, "axes-keepdims"),
    ({}, "all"),
    ({"axes": None, "keepdims": True}, "all-keepdims"),
    ({"axes": [0, 1, 2]}, "every-axis-listed"),
]
_REFS = {
    "sum": _keep_dtype(torch.sum),
    "mean": _torch_mean,
    "max": _amax_amin(torch.amax),
    "min": _amax_amin(torch.amin),
    "prod": _torch_prod,
}
for _op, _ref in _REFS.items():
    for _attrs, _label in _AXES_PATTERNS:
        CASES.append(OpCase(_op, [_randn(2, 3, 4)], _attrs, reference=_ref, id=f"{_op}-{_label}"))
    CASES += [
        OpCase(
            _op,
            [_randn(64, 3, dtype=np.float16)],
            {"axes": [0]},
            reference=_ref,
            id=f"{_op}-f16",
            **F16,
        ),
        OpCase(
            _op,
            [_randn(5, 6, dtype=np.float64)],
            {"axes": [1], "keepdims": True},
            reference=_ref,
            id=f"{_op}-f64",
        ),
        OpCase(_op, [_randn()], {}, reference=_ref, id=f"{_op}-scalar"),
        OpCase(_op, [_randn()], {"axes": [0]}, reference=_ref, id=f"{_op}-scalar-axis0"),
        OpCase(_op, [_randn(1, 4)], {"axes": [0]}, reference=_ref, id=f"{_op}-size1"),
    ]
    if _op != "mean":
        CASES += [
            OpCase(
                _op, [_ints(3, 4, low=-3, high=4)], {"axes": [1]}, reference=_ref, id=f"{_op}-i32"
            ),
            OpCase(
                _op,
                [_ints(2, 5, low=-3, high=4, dtype=np.int64)],
                {"keepdims": True},
                reference=_ref,
                id=f"{_op}-i64-all",
            ),
            OpCase(
                _op,
                [_ints(4, 3, low=0, high=5, dtype=np.uint8)],
                {"axes": [-2]},
                reference=_ref,
                id=f"{_op}-u8",
            ),
        ]

CASES += [
    # integer sums keep their dtype and wrap, like torch with dtype=
    OpCase(
        "sum",
        [np.array([[100, 100, 100], [-128, -1, 0]], np.int8)],
        {"axes": [1]},
        reference=_REFS["sum"],
        id="sum-i8-wraps",
    ),
    OpCase(
        "prod",
        [np.array([[16, 16, 2], [3, 5, 7]], np.int8)],
        {"axes": [1]},
        reference=_REFS["prod"],
        id="prod-i8-wraps",
    ),
    OpCase(
        "sum",
        [np.full((3, 0), 2.0, np.float32)],
        {"axes": [1]},
        reference=_REFS["sum"],
        id="sum-empty-axis",
    ),
    OpCase(
        "prod",
        [np.zeros((0, 2), np.int32)],
        {"axes": [0]},
        reference=_REFS["prod"],
        id="prod-empty-axis",
    ),
    OpCase(
        "max",
        [np.array([[1.0, np.nan], [2.0, -1.0]], np.float32)],
        {"axes": [1]},
        reference=_REFS["max"],
        id="max-nan-propagates",
    ),
    OpCase(
        "min",
        [np.array([[1.0, np.nan], [2.0, -1.0]], np.float32)],
        {"axes": [0]},
        reference=_REFS["min"],
        id="min-nan-propagates",
    ),
    OpCase(
        "max", [_rng.random((3, 4)) < 0.3], {"axes": [1]}, reference=_REFS["max"], id="max-bool"
    ),
    OpCase("min", [_rng.random((3, 4)) < 0.7], {}, reference=_REFS["min"], id="min-bool"),
    OpCase(
        "max",
        [_ints(2, 3, dtype=np.int8)],
        {"axes": [0, 1], "keepdims": True},
        reference=_REFS["max"],
        id="max-i8",
    ),
    OpCase(
        "mean",
        [np.full((2, 2048), 0.1, np.float16)],
        {"axes": [1]},
        reference=_torch_mean,
        id="mean-f16-long",
        **F16,
    ),
]

# ----- variance, std -----------------------------------------------------------------------

for _op, _fn in (("variance", torch.var), ("std", torch.std)):
    _ref = _torch_var(_fn)
    CASES += [
        OpCase(_op, [_randn(2, 3, 4)], {"axes": [-1]}, reference=_ref, id=f"{_op}-last"),
        OpCase(
            _op,
            [_randn(2, 3, 4)],
            {"axes": [0, 2], "keepdims": True},
            reference=_ref,
            id=f"{_op}-axes-keepdims",
        ),
        OpCase(_op, [_randn(2, 3, 4)], {"correction": 1}, reference=_ref, id=f"{_op}-all-unbiased"),
        OpCase(
            _op,
            [_randn(4, 5, dtype=np.float64)],
            {"axes": [1], "correction": 1.5},
            reference=_ref,
            id=f"{_op}-f64-correction",
        ),
        OpCase(
            _op,
            [_randn(3, 256, dtype=np.float16)],
            {"axes": [1]},
            reference=_ref,
            id=f"{_op}-f16",
            **F16,
        ),
        OpCase(
            _op,
            [_randn(1, 5)],
            {"axes": [0], "correction": 1},
            reference=_ref,
            id=f"{_op}-one-sample-nan",
        ),
    ]

# ----- argmax, argmin ----------------------------------------------------------------------

_TIES = np.array([[3, 1, 3, 0], [-2, -2, 5, 5], [7, 7, 7, 7]], np.int32)
for _op, _fn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
    _ref = _torch_arg(_fn)
    CASES += [
        OpCase(_op, [_randn(3, 4, 5)], {"axis": 1}, reference=_ref, id=f"{_op}-axis1"),
        OpCase(
            _op,
            [_randn(3, 4, 5)],
            {"axis": -1, "keepdims": True},
            reference=_ref,
            id=f"{_op}-neg-axis-keepdims",
        ),
        OpCase(_op, [_randn(3, 4, 5)], {}, reference=_ref, id=f"{_op}-flat"),
        OpCase(_op, [_randn(3, 4)], {"keepdims": True}, reference=_ref, id=f"{_op}-flat-keepdims"),
        OpCase(_op, [_TIES], {"axis": 1}, reference=_ref, id=f"{_op}-ties-first"),
        OpCase(_op, [_TIES.T.astype(np.int64)], {"axis": 0}, reference=_ref, id=f"{_op}-i64-ties"),
        OpCase(
            _op,
            [_ints(4, 3, low=0, high=4, dtype=np.uint8)],
            {"axis": 0},
            reference=_ref,
            id=f"{_op}-u8",
        ),
        OpCase(
            _op, [_randn(2, 50, dtype=np.float16)], {"axis": 1}, reference=_ref, id=f"{_op}-f16"
        ),
        OpCase(
            _op,
            [np.array([[1.0, np.nan, 5.0], [0.0, 2.0, np.nan]], np.float32)],
            {"axis": 1},
            reference=_ref,
            id=f"{_op}-nan",
        ),
        OpCase(_op, [_randn()], {"axis": 0}, reference=_ref, id=f"{_op}-scalar"),
    ]

# ----- cumsum ------------------------------------------------------------------------------

CASES += [
    OpCase("cumsum", [_randn(3, 4)], {"axis": 1}, reference=_torch_cumsum, id="cumsum-axis1"),
    OpCase(
        "cumsum", [_randn(3, 4, 2)], {"axis": -3}, reference=_torch_cumsum, id="cumsum-neg-axis"
    ),
    OpCase(
        "cumsum",
        [_randn(3, 5)],
        {"axis": 1, "reverse": True},
        reference=_torch_cumsum,
        id="cumsum-reverse",
    ),
    OpCase(
        "cumsum",
        [_randn(3, 5)],
        {"axis": 0, "exclusive": True},
        reference=_torch_cumsum,
        id="cumsum-exclusive",
    ),
    OpCase(
        "cumsum",
        [_ints(2, 6)],
        {"axis": 1, "exclusive": True, "reverse": True},
        reference=_torch_cumsum,
        id="cumsum-i32-exclusive-reverse",
    ),
    OpCase(
        "cumsum", [_ints(9, dtype=np.int64)], {"axis": 0}, reference=_torch_cumsum, id="cumsum-i64"
    ),
    OpCase(
        "cumsum",
        [np.array([100, 100, -56, 127], np.int8)],
        {"axis": 0},
        reference=_torch_cumsum,
        id="cumsum-i8-wraps",
    ),
    OpCase(
        "cumsum",
        [_randn(2, 300, dtype=np.float16)],
        {"axis": 1},
        reference=_torch_cumsum,
        id="cumsum-f16",
        rtol=5e-3,
        atol=5e-2,
    ),
    OpCase(
        "cumsum",
        [np.ones((1, 4), np.float32)],
        {"axis": 1, "exclusive": True},
        expected=np.array([[0.0, 1.0, 2.0, 3.0]], np.float32),
        id="cumsum-exclusive-exact",
    ),
    OpCase("cumsum", [_randn()], {"axis": 0}, reference=_torch_cumsum, id="cumsum-scalar"),
]
