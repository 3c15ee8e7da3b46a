"""Indexing ops: take (gather along an axis), gather_elements, scatter_elements, one_hot,
tril / triu, topk.

Semantic choices, where frameworks differ:

- ``take`` is ONNX Gather, ``numpy.take`` and ``torch.index_select`` generalised to indices of
  any rank: the result is ``data.shape[:axis] + indices.shape + data.shape[axis + 1:]``. An
  embedding lookup is ``take(weight, ids, axis=0)``; there is no separate embedding op.
- Indices may be any integer dtype. Negative indices count from the end of the axis (ONNX; torch
  accepts them in ``x[idx]`` but not in ``index_select`` / ``gather``); an index outside
  ``[-n, n)`` is an error when the op runs.
- ``gather_elements`` / ``scatter_elements`` are torch.gather / torch.scatter (ONNX
  GatherElements / ScatterElements): indices have the rank of data and, on every axis but
  ``axis``, no more entries than data (torch's rule; ONNX wants equal shapes). ``updates`` may
  be larger than ``indices`` (torch's ``src``); only its leading block is read. With duplicate
  indices and ``reduction="none"`` the last update wins (torch leaves it unspecified).
- ``one_hot`` follows ONNX OneHot: negative indices count from ``depth``, out-of-range ones give
  an all-``off_value`` row (torch's one_hot raises instead). The default dtype is int64 (torch).
- ``tril`` / ``triu`` act on the last two axes (a batch of matrices); ``k`` may be symbolic so a
  causal mask over a KV cache (``triu(mask, k=past + 1)``) stays one op.
- ``topk`` returns (values, int64 indices), always sorted; ties keep the lower index first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compiler.ir.op_registry import INJECTIVE, OPAQUE, AttrSpec, TypeInferenceError, define_op
from compiler.ir.shape_inference import normalize_axis, same_dtype, tensor_input
from compiler.ir.symbolic import ANY, dim_str
from compiler.ir.types import DType, TensorType, TupleType

# ----- helpers -----------------------------------------------------------------------------


def _index_input(t, what: str = "indices") -> TensorType:
    t = tensor_input(t, what)
    if not t.dtype.is_int:
        raise TypeInferenceError(f"{what} must have an integer dtype, got {t.dtype}")
    return t


def _wrap_indices(indices: np.ndarray, size: int, axis: int) -> np.ndarray:
    """Indices as int64 in ``[0, size)``; negative ones count from the end; others raise."""
    idx = indices.astype(np.int64)
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise IndexError(
            f"index {int(idx[bad].flat[0])} is out of range for axis {axis} of size {size}"
        )
    return np.where(idx < 0, idx + size, idx)


def _check_elements_shape(data: TensorType, other: TensorType, axis: int, what: str) -> None:
    """``other`` (indices or updates) has data's rank and no larger dims off ``axis``."""
    if len(other.shape) != len(data.shape):
        raise TypeInferenceError(
            f"{what} must have the rank of data ({len(data.shape)}), got {other}"
        )
    for i, (d, o) in enumerate(zip(data.shape, other.shape, strict=True)):
        if i != axis and isinstance(d, int) and isinstance(o, int) and o > d:
            raise TypeInferenceError(
                f"{what} {other} has {o} entries on axis {i}, more than data's {d}"
            )


def _element_grid(indices: np.ndarray, data_shape: Sequence[int], axis: int) -> tuple:
    """The index tuple that reads ``data[.., indices[i], ..]`` at each position i of indices."""
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = _wrap_indices(indices, data_shape[axis], axis)
    return tuple(grid)


# ----- take --------------------------------------------------------------------------------


def _take_infer(types, attrs):
    data = tensor_input(types[0], "data")
    indices = _index_input(types[1])
    if data.shape is None:
        return data.with_shape(None)
    rank = len(data.shape)
    if rank == 0:
        raise TypeInferenceError(f"data must have rank >= 1 to take from, got {data}")
    axis = normalize_axis(attrs["axis"], rank)
    if indices.shape is None:
        return data.with_shape(None)
    return data.with_shape(data.shape[:axis] + indices.shape + data.shape[axis + 1 :])


def _take_compute(values, attrs):
    data, indices = values
    axis = normalize_axis(attrs["axis"], data.ndim)
    return np.take(data, _wrap_indices(indices, data.shape[axis], axis), axis=axis)


define_op(
    "take",
    inputs=("data", "indices"),
    attrs={"axis": AttrSpec("int", 0, "the axis of data the indices select along")},
    infer=_take_infer,
    compute=_take_compute,
    pattern=INJECTIVE,
    doc="Select slices of data along an axis by integer indices (ONNX Gather, embedding).",
)

# ----- nonzero -----------------------------------------------------------------------------


def _nonzero_infer(types, attrs):
    x = tensor_input(types[0], "x")
    if x.shape is None:
        raise TypeInferenceError(f"nonzero needs an input of known rank, got {x}")
    return TensorType((len(x.shape), ANY), DType.int64)


def _nonzero_compute(values, attrs):
    (x,) = values
    if x.ndim == 0:  # numpy deprecates nonzero of a 0-d array; ONNX: (0, 1) or (0, 0)
        return np.zeros((0, int(bool(x))), np.int64)
    return np.stack(np.nonzero(x)).astype(np.int64).reshape(x.ndim, -1)


define_op(
    "nonzero",
    inputs=("x",),
    infer=_nonzero_infer,
    compute=_nonzero_compute,
    pattern=OPAQUE,
    doc="The indices of the non-zero elements, one row per axis, in row-major order "
    "(ONNX NonZero; torch.nonzero transposed): i64[rank, ?], its length known only at run "
    "time.",
)


# ----- bincount ----------------------------------------------------------------------------


MAX_BINS = 1 << 28
"""The most bins ``bincount`` makes (its length comes from the data)."""


def _bincount_infer(types, attrs):
    x = tensor_input(types[0], "x")
    if not x.dtype.is_int or x.dtype is DType.bool or (x.shape is not None and len(x.shape) != 1):
        raise TypeInferenceError(f"x must be a 1-D tensor of integers, got {x}")
    if attrs["minlength"] < 0:
        raise TypeInferenceError(f"minlength must be >= 0, got {attrs['minlength']}")
    if len(types) > 1 and types[1] is not None:
        w = tensor_input(types[1], "weights")
        if w.shape is not None and (len(w.shape) != 1 or not _same_len(w.shape[0], x.shape)):
            raise TypeInferenceError(f"weights must be 1-D with one weight per element of {x}")
    return TensorType((ANY,), attrs["dtype"])


def _same_len(n, shape) -> bool:
    m = None if shape is None else shape[0]
    return not (isinstance(n, int) and isinstance(m, int)) or n == m


def _bincount_compute(values, attrs):
    x = values[0].astype(np.int64)
    weights = values[1] if len(values) > 1 and values[1] is not None else None
    if x.size and x.min() < 0:
        raise ValueError(f"bincount of a negative value ({x.min()})")
    if weights is not None and weights.shape != x.shape:
        raise ValueError(f"{weights.shape[0]} weights for {x.shape[0]} values")
    length = max(int(x.max()) + 1 if x.size else 0, attrs["minlength"])
    if length > MAX_BINS:  # (a value from a file or an IR text: never a huge allocation)
        raise ValueError(f"bincount would make {length} bins, more than {MAX_BINS}")
    w = None if weights is None else weights.astype(np.float64)
    return np.bincount(x, w, minlength=attrs["minlength"]).astype(attrs["dtype"].numpy)


define_op(
    "bincount",
    inputs=("x", "weights?"),
    attrs={
        "minlength": AttrSpec("int", 0, "the fewest bins"),
        "dtype": AttrSpec("dtype", DType.int64, "the result dtype"),
    },
    infer=_bincount_infer,
    compute=_bincount_compute,
    pattern=OPAQUE,
    doc="How often each value 0 .. max(x) of a 1-D integer tensor occurs, or the sum of its "
    "weights (torch.bincount): [max(max(x) + 1, minlength)], a length known only at run "
    "time (the host computes it, as nonzero).",
)


# ----- gather_elements, scatter_elements ---------------------------------------------------


def _gather_elements_infer(types, attrs):
    data = tensor_input(types[0], "data")
    indices = _index_input(types[1])
    if data.shape is None or indices.shape is None:
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(attrs["axis"], len(data.shape))
    _check_elements_shape(data, indices, axis, "indices")
    return TensorType(indices.shape, data.dtype)


def _gather_elements_compute(values, attrs):
    data, indices = values
    if data.ndim == 0:
        return data.reshape(1)[_wrap_indices(indices.reshape(1), 1, 0)].reshape(())
    axis = normalize_axis(attrs["axis"], data.ndim)
    return data[_element_grid(indices, data.shape, axis)]


define_op(
    "gather_elements",
    inputs=("data", "indices"),
    attrs={"axis": AttrSpec("int", 0, "the axis the indices select along")},
    infer=_gather_elements_infer,
    compute=_gather_elements_compute,
    pattern=INJECTIVE,
    doc="out[i][j] = data[indices[i][j]][j] for axis 0, and so on (torch.gather).",
)

_SCATTER_REDUCTIONS = {
    "add": np.add,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def _scatter_infer(types, attrs):
    data = tensor_input(types[0], "data")
    indices = _index_input(types[1])
    updates = tensor_input(types[2], "updates")
    same_dtype([data, updates], "data and updates")
    reduction = attrs["reduction"]
    if reduction != "none" and reduction not in _SCATTER_REDUCTIONS:
        known = ", ".join(["none", *_SCATTER_REDUCTIONS])
        raise TypeInferenceError(f"reduction must be one of {known}, got {reduction!r}")
    if data.shape is None or indices.shape is None:
        return data
    axis = normalize_axis(attrs["axis"], len(data.shape))
    _check_elements_shape(data, indices, axis, "indices")
    if updates.shape is not None:
        if len(updates.shape) != len(indices.shape):
            raise TypeInferenceError(f"updates must have the rank of indices, got {updates}")
        for i, (n, u) in enumerate(zip(indices.shape, updates.shape, strict=True)):
            if isinstance(n, int) and isinstance(u, int) and u < n:
                raise TypeInferenceError(
                    f"updates {updates} has {u} entries on axis {i}, fewer than indices' {n}"
                )
    return data


def _scatter_compute(values, attrs):
    data, indices, updates = values
    if data.ndim == 0:
        data, indices, updates = data.reshape(1), indices.reshape(1), updates.reshape(1)
    axis = normalize_axis(attrs["axis"], data.ndim)
    grid = _element_grid(indices, data.shape, axis)
    updates = updates[tuple(slice(0, n) for n in indices.shape)]
    reduction = attrs["reduction"]
    wide = reduction != "none" and DType.of(data.dtype).is_float
    out = data.astype(np.float64) if wide else data.copy()
    if reduction == "none":
        out[grid] = updates
    else:
        _SCATTER_REDUCTIONS[reduction].at(out, grid, updates.astype(out.dtype))
    return out.astype(data.dtype).reshape(values[0].shape)


define_op(
    "scatter_elements",
    inputs=("data", "indices", "updates"),
    attrs={
        "axis": AttrSpec("int", 0, "the axis the indices select along"),
        "reduction": AttrSpec("str", "none", "none (overwrite), add, mul, max or min"),
    },
    infer=_scatter_infer,
    compute=_scatter_compute,
    pattern=OPAQUE,
    doc="A copy of data with updates written (or combined) at gather_elements' positions.",
)

# ----- one_hot -----------------------------------------------------------------------------


def _one_hot_infer(types, attrs):
    indices = _index_input(types[0])
    depth = attrs["depth"]
    if depth <= 0:
        raise TypeInferenceError(f"depth must be positive, got {depth}")
    out = TensorType(indices.shape, attrs["dtype"])
    if indices.shape is None:
        return out
    axis = normalize_axis(attrs["axis"], len(indices.shape) + 1)
    return out.with_shape(indices.shape[:axis] + (depth,) + indices.shape[axis:])


def _one_hot_compute(values, attrs):
    (indices,) = values
    depth = attrs["depth"]
    axis = normalize_axis(attrs["axis"], indices.ndim + 1)
    idx = indices.astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)  # out-of-range indices match no class
    hot = idx[..., None] == np.arange(depth)
    hot = np.moveaxis(hot, -1, axis)
    dtype = attrs["dtype"].numpy
    on = np.asarray(attrs["on_value"]).astype(dtype)
    off = np.asarray(attrs["off_value"]).astype(dtype)
    return np.where(hot, on, off).astype(dtype)


define_op(
    "one_hot",
    inputs=("indices",),
    attrs={
        "depth": AttrSpec("int", doc="the number of classes"),
        "axis": AttrSpec("int", -1, "where the new axis goes in the result"),
        "dtype": AttrSpec("dtype", DType.int64, "the result dtype"),
        "on_value": AttrSpec("float", 1.0, "the value at each index"),
        "off_value": AttrSpec("float", 0.0, "the value elsewhere"),
    },
    infer=_one_hot_infer,
    compute=_one_hot_compute,
    pattern=INJECTIVE,
    doc="A new axis of size depth holding on_value at each index and off_value elsewhere.",
)

# ----- tril, triu --------------------------------------------------------------------------


def _triangle_infer(types, attrs):
    data = tensor_input(types[0], "data")
    if attrs["k"] is ANY:
        raise TypeInferenceError("k must be known: an integer or a symbolic expression, not '?'")
    if data.shape is not None and len(data.shape) < 2:
        raise TypeInferenceError(f"needs a matrix or a batch of matrices (rank >= 2), got {data}")
    return data


for _name, _fn, _where in (
    ("tril", np.tril, "on and below"),
    ("triu", np.triu, "on and above"),
):
    define_op(
        _name,
        inputs=("data",),
        attrs={"k": AttrSpec("dim", 0, "the diagonal: 0 main, > 0 above it, < 0 below it")},
        infer=_triangle_infer,
        compute=lambda v, a, fn=_fn: fn(v[0], int(a["k"])),
        pattern=INJECTIVE,
        doc=f"Keep the elements {_where} the k-th diagonal of the last two axes, zero the rest.",
    )

# ----- topk --------------------------------------------------------------------------------


def _topk_infer(types, attrs):
    data = tensor_input(types[0], "data")
    k = attrs["k"]
    if k < -1:
        raise TypeInferenceError(f"k must be >= 0 (or -1: the whole axis), got {k}")
    if data.shape is None:
        return TupleType([data, TensorType(None, DType.int64)])
    rank = len(data.shape)
    if rank == 0:
        raise TypeInferenceError(f"data must have rank >= 1, got {data}")
    axis = normalize_axis(attrs["axis"], rank)
    d = data.shape[axis]
    if k == -1:  # a sort of the whole axis, whatever its size
        k = d
    elif isinstance(d, int) and k > d:
        raise TypeInferenceError(f"k={k} is larger than axis {axis} of {data} ({dim_str(d)})")
    shape = data.shape[:axis] + (k,) + data.shape[axis + 1 :]
    return TupleType([data.with_shape(shape), TensorType(shape, DType.int64)])


def _topk_compute(values, attrs):
    (x,) = values
    axis = normalize_axis(attrs["axis"], x.ndim)
    k = x.shape[axis] if attrs["k"] == -1 else attrs["k"]
    if k > x.shape[axis]:
        raise IndexError(f"k={k} is larger than axis {axis} (size {x.shape[axis]})")
    keys = x.astype(np.float32) if x.dtype.kind == "V" else x  # bfloat16 sorts as float32
    if attrs["largest"]:
        # stable ascending sort of the reversed axis, read backwards: descending, ties by
        # lower index first; NaN sorts as the largest value, as in torch
        n = x.shape[axis]
        order = np.flip(np.argsort(np.flip(keys, axis), axis=axis, kind="stable"), axis)
        order = n - 1 - order
    else:
        order = np.argsort(keys, axis=axis, kind="stable")
    order = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, order, axis=axis), order


define_op(
    "topk",
    inputs=("data",),
    attrs={
        "k": AttrSpec("int", doc="how many elements to keep; -1: all (a sort of the axis)"),
        "axis": AttrSpec("int", -1, "the axis to search"),
        "largest": AttrSpec("bool", True, "the k largest (true) or the k smallest (false)"),
    },
    infer=_topk_infer,
    compute=_topk_compute,
    pattern=OPAQUE,
    doc="The k largest (or smallest) elements along an axis, sorted, and their int64 indices.",
)
