"""OpCases for the indexing ops, checked against torch."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import compiler.ops.index  # noqa: F401  (registers the ops)
from compiler.ir.types import DType
from tests.compiler.ops.opcase import OpCase

_rng = np.random.default_rng(2)
F16 = {"rtol": 2e-3, "atol": 2e-3}


def _randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return _rng.standard_normal(shape).astype(dtype)


def _idx(high: int, *shape: int, low: int = 0, dtype=np.int64) -> np.ndarray:
    return _rng.integers(low, high, shape).astype(dtype)


def _torch_take(x, indices, axis=0):
    """x[:, ..., indices, ...]: one tensor index at ``axis`` puts indices' dims there."""
    return x[(slice(None),) * (axis % x.dim()) + (indices.long(),)]


def _torch_gather(x, indices, axis=0):
    return torch.gather(x, axis, indices.long() % x.shape[axis])  # torch has no negative ones


_TORCH_SCATTER = {
    "none": lambda x, d, i, u: torch.scatter(x, d, i, u),
    "add": lambda x, d, i, u: torch.scatter_add(x, d, i, u),
    "mul": lambda x, d, i, u: torch.scatter_reduce(x, d, i, u, "prod"),
    "max": lambda x, d, i, u: torch.scatter_reduce(x, d, i, u, "amax"),
    "min": lambda x, d, i, u: torch.scatter_reduce(x, d, i, u, "amin"),
}


def _torch_scatter(x, indices, updates, axis=0, reduction="none"):
    i = indices.long() % x.shape[axis]
    return _TORCH_SCATTER[reduction](x, axis, i, updates)


def _torch_one_hot(indices, depth, axis=-1, dtype="int64", on_value=1.0, off_value=0.0):
    hot = F.one_hot(indices.long() % depth, depth)  # ONNX: negative indices count from depth
    out = hot * (on_value - off_value) + off_value
    return torch.movedim(out, -1, axis % out.dim()).to(getattr(torch, dtype))


def _torch_topk(x, k, axis=-1, largest=True):
    return torch.topk(x, k, dim=axis, largest=largest, sorted=True)


def _torch_triangle(fn):
    def ref(x, k=0):
        return fn(x, diagonal=k)

    return ref


def _distinct(*shape: int, dtype=np.float32) -> np.ndarray:
    """Values without ties (topk's order among ties is unspecified in torch)."""
    return (_rng.permutation(int(np.prod(shape))).reshape(shape) - 7).astype(dtype)


CASES: list[OpCase] = []

# ----- take --------------------------------------------------------------------------------

_EMB = _randn(10, 4)
CASES += [
    OpCase("take", [_EMB, _idx(10, 2, 5)], reference=_torch_take, id="take-embedding"),
    OpCase(
        "take",
        [_EMB, _idx(10, 2, 5)],
        reference=lambda w, ids: F.embedding(ids, w),
        id="take-vs-F.embedding",
    ),
    OpCase(
        "take",
        [_randn(3, 6, 2), _idx(6, 4)],
        {"axis": 1},
        reference=lambda x, i, axis: torch.index_select(x, axis, i),
        id="take-index_select",
    ),
    OpCase(
        "take",
        [_randn(3, 6, 2), _idx(2, 3, 2, dtype=np.int32)],
        {"axis": -1},
        reference=_torch_take,
        id="take-neg-axis-i32",
    ),
    OpCase(
        "take",
        [_randn(5, 3), np.array([-1, -5, 0, 4], np.int64)],
        reference=_torch_take,
        id="take-negative-indices",
    ),
    OpCase(
        "take", [_randn(5, 3), np.array(3, np.int64)], reference=_torch_take, id="take-scalar-index"
    ),
    OpCase(
        "take",
        [_randn(4, 3), np.array(-1, np.int32)],
        {"axis": 1},
        reference=_torch_take,
        id="take-scalar-index-axis1",
    ),
    OpCase(
        "take", [_randn(7), _idx(7, 2, 2, dtype=np.uint8)], reference=_torch_take, id="take-1d-u8"
    ),
    OpCase("take", [_randn(7, 2), _idx(7, 3, dtype=np.int8)], reference=_torch_take, id="take-i8"),
    OpCase(
        "take",
        [_idx(100, 6, 3, dtype=np.int32), _idx(6, 2)],
        reference=_torch_take,
        id="take-int-data",
    ),
    OpCase(
        "take", [_randn(6, 3, dtype=np.float16), _idx(6, 5)], reference=_torch_take, id="take-f16"
    ),
    OpCase(
        "take", [_rng.random((4, 2)) < 0.5, _idx(4, 3)], reference=_torch_take, id="take-bool-data"
    ),
    OpCase(
        "take",
        [_randn(5, 3), np.zeros((0,), np.int64)],
        reference=_torch_take,
        id="take-no-indices",
    ),
]

# ----- gather_elements ---------------------------------------------------------------------

CASES += [
    OpCase(
        "gather_elements",
        [_randn(3, 4), _idx(3, 2, 4)],
        reference=_torch_gather,
        id="gather_elements-axis0",
    ),
    OpCase(
        "gather_elements",
        [_randn(3, 4), _idx(4, 3, 6)],
        {"axis": 1},
        reference=_torch_gather,
        id="gather_elements-axis1-wider",
    ),
    OpCase(
        "gather_elements",
        [_randn(3, 4, 5), _idx(5, 2, 3, 2, dtype=np.int32)],
        {"axis": -1},
        reference=_torch_gather,
        id="gather_elements-smaller-index",
    ),
    OpCase(
        "gather_elements",
        [_randn(4, 3), _idx(0, 4, 3, low=-4)],
        reference=_torch_gather,
        id="gather_elements-negative",
    ),
    OpCase(
        "gather_elements",
        [_idx(9, 2, 5, dtype=np.int64), _idx(5, 2, 1)],
        {"axis": 1},
        reference=_torch_gather,
        id="gather_elements-int-data",
    ),
    OpCase(
        "gather_elements",
        [_randn(5), np.zeros((0,), np.int64)],
        reference=_torch_gather,
        id="gather_elements-empty",
    ),
]

# ----- scatter_elements --------------------------------------------------------------------

_PERM_ROWS = np.stack([_rng.permutation(4) for _ in range(3)])[:, :3]  # distinct along axis 1
CASES += [
    OpCase(
        "scatter_elements",
        [_randn(3, 4), _PERM_ROWS, _randn(3, 3)],
        {"axis": 1},
        reference=_torch_scatter,
        id="scatter_elements-none",
    ),
    OpCase(
        "scatter_elements",
        [_randn(3, 4), np.array([[0, 2, 1, 2], [1, 0, 0, 0]]), _randn(2, 4)],
        {"axis": 0},
        reference=_torch_scatter,
        id="scatter_elements-axis0",
    ),
    OpCase(
        "scatter_elements",
        [_randn(3, 4), _PERM_ROWS - 4, _randn(3, 5)],
        {"axis": -1},
        reference=_torch_scatter,
        id="scatter_elements-negative-larger-updates",
    ),
    OpCase(
        "scatter_elements",
        [_randn(5), _idx(5, 9), _randn(9)],
        {"reduction": "add"},
        reference=_torch_scatter,
        id="scatter_elements-add-duplicates",
    ),
    OpCase(
        "scatter_elements",
        [_randn(5, dtype=np.float16), _idx(5, 9), _randn(9, dtype=np.float16)],
        {"reduction": "add"},
        reference=_torch_scatter,
        id="scatter_elements-add-f16",
        **F16,
    ),
    OpCase(
        "scatter_elements",
        [
            _idx(5, 2, 4, dtype=np.int32),
            _idx(4, 2, 6, dtype=np.int32),
            _idx(5, 2, 6, dtype=np.int32),
        ],
        {"axis": 1, "reduction": "add"},
        reference=_torch_scatter,
        id="scatter_elements-add-i32",
    ),
    OpCase(
        "scatter_elements",
        [_randn(2, 5), _idx(5, 2, 7), _randn(2, 7)],
        {"axis": 1, "reduction": "mul"},
        reference=_torch_scatter,
        id="scatter_elements-mul",
    ),
    OpCase(
        "scatter_elements",
        [_randn(6), _idx(6, 10), _randn(10)],
        {"reduction": "max"},
        reference=_torch_scatter,
        id="scatter_elements-max",
    ),
    OpCase(
        "scatter_elements",
        [_idx(9, 6, dtype=np.int64), _idx(6, 10), _idx(9, 10, dtype=np.int64)],
        {"reduction": "min"},
        reference=_torch_scatter,
        id="scatter_elements-min-i64",
    ),
]

# ----- one_hot -----------------------------------------------------------------------------

CASES += [
    OpCase(
        "one_hot", [_idx(5, 2, 3)], {"depth": 5}, reference=_torch_one_hot, id="one_hot-default"
    ),
    OpCase(
        "one_hot",
        [_idx(4, 3, dtype=np.int32)],
        {"depth": 4, "axis": 0},
        reference=_torch_one_hot,
        id="one_hot-axis0",
    ),
    OpCase(
        "one_hot",
        [_idx(3, 2, 2)],
        {"depth": 3, "axis": -2, "dtype": "float32"},
        reference=_torch_one_hot,
        id="one_hot-axis-neg2-f32",
    ),
    OpCase(
        "one_hot",
        [np.array([0, -1, 2, -3], np.int64)],
        {"depth": 3, "dtype": "float16", "on_value": 0.9, "off_value": 0.05},
        reference=_torch_one_hot,
        id="one_hot-negative-smoothed",
        **F16,
    ),
    OpCase(
        "one_hot",
        [np.array(2, np.int64)],
        {"depth": 4},
        reference=_torch_one_hot,
        id="one_hot-scalar",
    ),
    OpCase(
        "one_hot",
        [np.array([1, 3, -4, 0], np.int64)],
        {"depth": 3, "dtype": "bool"},
        expected=np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0]], bool),
        id="one_hot-out-of-range-rows-off",
    ),
]

# ----- tril, triu --------------------------------------------------------------------------

for _op, _fn in (("tril", torch.tril), ("triu", torch.triu)):
    _ref = _torch_triangle(_fn)
    CASES += [
        OpCase(_op, [_randn(4, 4)], reference=_ref, id=f"{_op}-square"),
        OpCase(_op, [_randn(3, 5)], {"k": 1}, reference=_ref, id=f"{_op}-wide-k1"),
        OpCase(_op, [_randn(5, 3)], {"k": -2}, reference=_ref, id=f"{_op}-tall-k-2"),
        OpCase(_op, [_randn(2, 3, 4, 4)], {"k": -1}, reference=_ref, id=f"{_op}-batched"),
        OpCase(_op, [np.ones((4, 4), bool)], reference=_ref, id=f"{_op}-bool-mask"),
        OpCase(
            _op,
            [_idx(9, 3, 3, dtype=np.int32)],
            {"k": 5},
            reference=_ref,
            id=f"{_op}-k-past-the-end",
        ),
        OpCase(_op, [_randn(3, 3, dtype=np.float16)], reference=_ref, id=f"{_op}-f16"),
    ]

# ----- topk --------------------------------------------------------------------------------

CASES += [
    OpCase("topk", [_distinct(3, 6)], {"k": 2}, reference=_torch_topk, id="topk-last-axis"),
    OpCase("topk", [_distinct(5, 4)], {"k": 3, "axis": 0}, reference=_torch_topk, id="topk-axis0"),
    OpCase(
        "topk",
        [_distinct(2, 7)],
        {"k": 4, "largest": False},
        reference=_torch_topk,
        id="topk-smallest",
    ),
    OpCase(
        "topk", [_distinct(8, dtype=np.int32)], {"k": 8}, reference=_torch_topk, id="topk-all-i32"
    ),
    OpCase(
        "topk", [_distinct(2, 5, dtype=np.float16)], {"k": 0}, reference=_torch_topk, id="topk-k0"
    ),
    OpCase(
        "topk",
        [np.array([1.0, 3.0, 3.0, 0.0, 3.0], np.float32)],
        {"k": 3},
        expected=(np.array([3.0, 3.0, 3.0], np.float32), np.array([1, 2, 4])),
        id="topk-ties-lower-index-first",
    ),
    OpCase(
        "topk",
        [np.array([1.0, np.nan, 2.0], np.float32)],
        {"k": 2},
        reference=_torch_topk,
        id="topk-nan-is-largest",
    ),
]

# ----- nonzero -----------------------------------------------------------------------------


def _torch_nonzero(x):
    return torch.nonzero(x).T


CASES += [
    OpCase("nonzero", [_randn(3, 4) > 0], reference=_torch_nonzero, id="nonzero-bool-2d"),
    OpCase("nonzero", [_idx(3, 2, 3, 4)], reference=_torch_nonzero, id="nonzero-int-3d"),
    OpCase("nonzero", [np.zeros(5, np.float32)], reference=_torch_nonzero, id="nonzero-none"),
    OpCase(
        "nonzero",
        [np.array(2.0, np.float32)],
        expected=np.zeros((0, 1), np.int64),
        id="nonzero-0d-true",
    ),
]

# ----- bincount ----------------------------------------------------------------------------


def _torch_bincount(x, w=None, minlength=0, dtype=None):
    return torch.bincount(x, weights=w, minlength=minlength)


CASES += [
    OpCase("bincount", [_idx(6, 9)], reference=_torch_bincount, id="bincount"),
    OpCase(
        "bincount",
        [_idx(3, 4, dtype=np.int32)],
        {"minlength": 7},
        reference=_torch_bincount,
        id="bincount-minlength",
    ),
    OpCase(
        "bincount",
        [_idx(5, 8), _randn(8, dtype=np.float64)],
        {"dtype": DType.float64},
        reference=_torch_bincount,
        id="bincount-weights",
    ),
]
