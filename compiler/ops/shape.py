"""Shape and layout ops: reshape, permute, squeeze, concat, split, slice, pad, broadcast, tile,
and the ops that make tensors from a shape (full, zeros, arange, ...).

Semantic choices, where frameworks differ:

- ``reshape``: torch semantics by default: one ``-1`` is inferred, ``0`` is a zero-sized dim.
  ``allowzero=false`` gives the ONNX default instead: ``0`` copies the input's dim at that
  position. With a shape *tensor* input only the tensor's length is known to type inference,
  so the result has that rank and ``?`` dims (a 1-D result is exactly ``[numel]``);
  dynamic-to-static later turns a constant shape input into the attribute.
- ``squeeze`` with ``axes``: each listed axis must have size 1 (numpy / ONNX, not torch's
  silent no-op); a symbolic dim listed is taken to be 1. With ``axes=None`` static 1-dims are
  removed and symbolic dims are kept, i.e. assumed >= 2 as torch.export assumes of dynamic dims;
  a ``?`` dim makes the rank unknown. If a symbolic dim is 1 at run time the value loses it and
  the interpreter's type check reports the node.
- ``strided_slice``: Python slicing (negative indices count from the end, bounds clamp,
  negative steps). On a symbolic dim the bounds are assumed to lie inside it, the guard
  torch.export records for such slices: ``x[1:]`` on ``n`` gives ``n - 1``, ``x[:5]`` gives 5.
  A bound of magnitude >= 2**31 - 1 means "to the end" (INT64_MAX and friends from exporters).
- ``pad``: ONNX pad order (all begins, then all ends); a negative pad crops. Reflect and edge
  modes pad about the input's original edges and then crop, which is what torch's
  ReflectionPad/ReplicationPad and onnxruntime do (checked with mixed signs on one axis).
- ``split``: an int is a number of equal sections (must divide the axis), a list gives the
  indices to split at (numpy, TVM; torch.tensor_split with indices).
- ``repeat`` is ``numpy.repeat`` / ``torch.repeat_interleave``; torch's ``Tensor.repeat`` is
  ``tile``. There is no ``transpose``: ``permute_dims`` covers it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from compiler.ir.op_registry import (
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    AttrSpec,
    TypeInferenceError,
    define_op,
)
from compiler.ir.shape_inference import (
    dim_product,
    known_rank,
    normalize_axes,
    normalize_axis,
    same_dtype,
    tensor_input,
)
from compiler.ir.symbolic import ANY, Dim, SymExpr, dim_add, dim_mul, dim_str, dims_equal, sym
from compiler.ir.symbolic import floordiv as dim_floordiv
from compiler.ir.symbolic import mod as dim_mod
from compiler.ir.types import DType, TensorType, TupleType

# A slice bound at least this large (in magnitude) means "to the end" on a symbolic dim.
_UNBOUNDED = 2**31 - 1


def _dims_text(dims: Sequence[Any]) -> str:
    return "[" + ", ".join(dim_str(d) for d in dims) + "]"


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _target_dims(dims: Sequence[Dim], what: str, allow_minus_one: bool = False) -> None:
    """Check a shape attribute: ints >= 0 (or -1 when allowed) and symbolic dims, no '?'."""
    for d in dims:
        if d is ANY:
            raise TypeInferenceError(
                f"{what} {_dims_text(dims)} contains '?'; a target shape needs known sizes"
            )
        if isinstance(d, int) and d < 0 and not (allow_minus_one and d == -1):
            raise TypeInferenceError(f"{what} {_dims_text(dims)} has a negative size {d}")


def _atom_dim(atom: Any) -> Dim:
    """A monomial atom of a SymExpr (a symbol name, or an opaque // or % term) as a dim."""
    if isinstance(atom, str):
        return sym(atom)
    kind, inner, divisor = atom
    return dim_floordiv(inner, divisor) if kind == "floordiv" else dim_mod(inner, divisor)


def exact_quotient(a: Dim, b: Dim) -> Dim | None:
    """``q`` with ``a == b * q`` when provable (``b`` an int or a monomial), else None."""
    if a is ANY or b is ANY:
        return None
    if isinstance(b, int):
        if b == 0:
            return None
        if isinstance(a, int):
            return a // b if a % b == 0 else None
        return dim_floordiv(a, b) if dim_mod(a, b) == 0 else None
    if dims_equal(a, b):
        return 1
    if isinstance(a, int) or len(b._terms) != 1:
        return None
    ((b_mono, b_coeff),) = b._terms
    quotient: Dim = 0
    for a_mono, a_coeff in a._terms:
        powers = dict(a_mono)
        for atom, power in b_mono:
            if powers.get(atom, 0) < power:
                return None
            powers[atom] -= power
        if a_coeff % b_coeff:
            return None
        term: Dim = a_coeff // b_coeff
        for atom, power in powers.items():
            for _ in range(power):
                term = term * _atom_dim(atom)
        quotient = quotient + term
    return quotient


def _numel(t: TensorType) -> Dim:
    n = t.numel
    return ANY if n is None else n


# ----- reshape ----------------------------------------------------------------------------


def _reshape_dims(data: TensorType, target: Sequence[Dim], allowzero: bool) -> tuple:
    _target_dims(target, "target shape", allow_minus_one=True)
    out: list[Dim | None] = []
    infer_at = None
    for i, d in enumerate(target):
        if isinstance(d, int) and d == -1:
            if infer_at is not None:
                raise TypeInferenceError(f"target shape {_dims_text(target)} has more than one -1")
            infer_at = i
            out.append(None)
        elif isinstance(d, int) and d == 0 and not allowzero:
            if data.shape is None:
                out.append(ANY)
            elif i >= len(data.shape):
                raise TypeInferenceError(
                    f"target shape {_dims_text(target)} copies input dim {i} (0 with allowzero "
                    f"false) but the input {data} has rank {len(data.shape)}"
                )
            else:
                out.append(data.shape[i])
        else:
            out.append(d)
    numel = _numel(data)
    known = dim_product([d for d in out if d is not None])
    if infer_at is not None:
        if isinstance(known, int) and known == 0:
            raise TypeInferenceError(
                f"cannot infer the -1 in {_dims_text(target)}: the other dims have 0 elements"
            )
        if isinstance(numel, int) and isinstance(known, int) and numel % known:
            raise TypeInferenceError(
                f"cannot reshape {data} ({numel} elements) into {_dims_text(target)}: "
                f"{numel} is not a multiple of {known}"
            )
        q = exact_quotient(numel, known)
        if q is None:
            q = ANY if isinstance(known, SymExpr) else dim_floordiv(numel, known)
        out[infer_at] = q
        return tuple(out)
    total = dim_product(out)
    ratio = exact_quotient(numel, total)
    if dims_equal(numel, total) is False or (isinstance(ratio, int) and ratio != 1):
        raise TypeInferenceError(
            f"cannot reshape {data} ({dim_str(numel)} elements) into {_dims_text(target)} "
            f"({dim_str(total)} elements)"
        )
    return tuple(out)


def _reshape_infer(types, attrs):
    data = tensor_input(types[0], "data")
    target = attrs["shape"]
    if len(types) == 2:
        if target is not None:
            raise TypeInferenceError(
                "give the target shape either as the attribute shape or as a shape input, not both"
            )
        st = tensor_input(types[1], "shape")
        if st.dtype is not DType.int64 or st.shape is None or len(st.shape) != 1:
            raise TypeInferenceError(f"the shape input must be a 1-D i64 tensor, got {st}")
        (rank,) = st.shape
        if not isinstance(rank, int):
            return TensorType(None, data.dtype)
        if rank == 1:  # whatever the values, a 1-D result holds every element
            return TensorType((_numel(data),), data.dtype)
        return TensorType((ANY,) * rank, data.dtype)
    if target is None:
        raise TypeInferenceError("needs a target shape: the attribute shape or a shape input")
    return data.with_shape(_reshape_dims(data, target, attrs["allowzero"]))


def _reshape_compute(values, attrs):
    x = values[0]
    target = attrs["shape"] if len(values) == 1 else [int(v) for v in values[1].reshape(-1)]
    if not attrs["allowzero"]:
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
    return np.reshape(x, tuple(target))


def _match_shape_infer(types, attrs):
    x = tensor_input(types[0], "x")
    shape = attrs["shape"]
    if shape is None:
        raise TypeInferenceError("match_shape needs shape=[...]")
    if any(d is ANY for d in shape):
        raise TypeInferenceError("match_shape names every dim: '?' is not a name")
    if x.shape is not None:
        if len(x.shape) != len(shape):
            raise TypeInferenceError(f"match_shape: rank {len(shape)} for a value of type {x}")
        for a, b in zip(x.shape, shape, strict=True):
            if isinstance(a, int) and isinstance(b, int) and a != b:
                raise TypeInferenceError(f"match_shape: {list(shape)} does not fit {x}")
    return TensorType(tuple(shape), x.dtype)


def _match_shape_compute(values, attrs):
    return values[0]  # the interpreter binds the shape's new symbols (compiler/interpret.py)


define_op(
    "match_shape",
    inputs=("x",),
    attrs={"shape": AttrSpec("dims", None, "the shape, its new symbols bound from the value")},
    infer=_match_shape_infer,
    compute=_match_shape_compute,
    pattern=OPAQUE,
    doc="The value itself, its type naming the dims its producer left unknown ('?'): each new "
    "symbol is bound from the value's shape at run time (like TVM Relax's match_cast), so "
    "what follows has symbolic types and compiles.",
)


define_op(
    "reshape",
    inputs=("data", "shape?"),
    attrs={
        "shape": AttrSpec("dims", None, "target shape; one -1 is inferred (or a shape input)"),
        "allowzero": AttrSpec(
            "bool", True, "true: 0 is a zero-sized dim (torch); false: 0 copies the input dim"
        ),
    },
    infer=_reshape_infer,
    compute=_reshape_compute,
    pattern=INJECTIVE,
    doc="View the elements in row-major order with another shape (attribute or i64 shape input).",
)

# ----- permute_dims, squeeze, unsqueeze, flatten -------------------------------------------


def _permute_infer(types, attrs):
    data = tensor_input(types[0], "data")
    axes = attrs["axes"]
    if data.shape is None:
        return data if axes is None else data.with_shape((ANY,) * len(axes))
    rank = len(data.shape)
    if axes is None:
        return data.with_shape(tuple(reversed(data.shape)))
    if len(axes) != rank:
        raise TypeInferenceError(f"axes {list(axes)} must list each of the {rank} axes once")
    perm = normalize_axes(axes, rank)
    return data.with_shape(tuple(data.shape[a] for a in perm))


define_op(
    "permute_dims",
    inputs=("data",),
    attrs={"axes": AttrSpec("ints", None, "the new order of the axes; none reverses them")},
    infer=_permute_infer,
    compute=lambda v, a: np.transpose(v[0], a["axes"]),
    pattern=INJECTIVE,
    doc="Reorder the axes of a tensor (transpose).",
)


def _squeeze_infer(types, attrs):
    data = tensor_input(types[0], "data")
    axes = attrs["axes"]
    if data.shape is None:
        return data
    shape = data.shape
    if axes is None:
        if any(d is ANY for d in shape):
            return data.with_shape(None)  # a '?' dim may be 1 and vanish
        return data.with_shape(tuple(d for d in shape if not (isinstance(d, int) and d == 1)))
    drop = normalize_axes(axes, len(shape))
    for a in drop:
        if isinstance(shape[a], int) and shape[a] != 1:
            raise TypeInferenceError(f"cannot squeeze axis {a} of {data}: its size is {shape[a]}")
    return data.with_shape(tuple(d for i, d in enumerate(shape) if i not in drop))


def _squeeze_compute(values, attrs):
    axes = attrs["axes"]
    return np.squeeze(values[0], axis=None if axes is None else tuple(axes))


define_op(
    "squeeze",
    inputs=("data",),
    attrs={"axes": AttrSpec("ints", None, "axes of size 1 to remove; none removes every 1-dim")},
    infer=_squeeze_infer,
    compute=_squeeze_compute,
    pattern=INJECTIVE,
    doc="Remove axes of size 1 (listed axes must have size 1).",
)


def _unsqueeze_infer(types, attrs):
    data = tensor_input(types[0], "data")
    if data.shape is None:
        return data
    axes = attrs["axes"]
    rank = len(data.shape) + len(axes)
    new = normalize_axes(axes, rank)
    rest = iter(data.shape)
    return data.with_shape(tuple(1 if i in new else next(rest) for i in range(rank)))


def _unsqueeze_compute(values, attrs):
    x = values[0]
    return np.expand_dims(x, tuple(a % (x.ndim + len(attrs["axes"])) for a in attrs["axes"]))


define_op(
    "unsqueeze",
    inputs=("data",),
    attrs={"axes": AttrSpec("ints", doc="positions of the new 1-dims in the result")},
    infer=_unsqueeze_infer,
    compute=_unsqueeze_compute,
    pattern=INJECTIVE,
    doc="Insert axes of size 1 at the given positions of the result.",
)


def _flatten_range(rank: int, attrs) -> tuple[int, int]:
    rank = max(rank, 1)  # like torch, a 0-d tensor flattens as if it had one axis
    start = normalize_axis(attrs["start_dim"], rank, "start_dim")
    end = normalize_axis(attrs["end_dim"], rank, "end_dim")
    if start > end:
        raise TypeInferenceError(
            f"start_dim {attrs['start_dim']} comes after end_dim {attrs['end_dim']}"
        )
    return start, end


def _flatten_infer(types, attrs):
    data = tensor_input(types[0], "data")
    if data.shape is None:
        whole = attrs["start_dim"] == 0 and attrs["end_dim"] == -1
        return data.with_shape((ANY,) if whole else None)
    shape = data.shape
    start, end = _flatten_range(len(shape), attrs)
    if not shape:
        return data.with_shape((1,))
    return data.with_shape(
        shape[:start] + (dim_product(shape[start : end + 1]),) + shape[end + 1 :]
    )


def _flatten_compute(values, attrs):
    x = values[0]
    start, end = _flatten_range(x.ndim, attrs)
    if x.ndim == 0:
        return x.reshape(1)
    merged = int(np.prod(x.shape[start : end + 1], dtype=np.int64))
    return x.reshape(x.shape[:start] + (merged,) + x.shape[end + 1 :])


define_op(
    "flatten",
    inputs=("data",),
    attrs={
        "start_dim": AttrSpec("int", 0, "first axis to merge"),
        "end_dim": AttrSpec("int", -1, "last axis to merge (inclusive)"),
    },
    infer=_flatten_infer,
    compute=_flatten_compute,
    pattern=INJECTIVE,
    doc="Merge axes start_dim..end_dim into one (torch.flatten).",
)

# ----- broadcast_to, expand, tile, repeat --------------------------------------------------


def _broadcast_to_shape(data: TensorType, target: Sequence[Dim], what: str) -> tuple:
    if data.shape is None:
        return tuple(target)
    shape = data.shape
    if len(target) < len(shape):
        raise TypeInferenceError(
            f"cannot broadcast {data} to {what} {_dims_text(target)} of lower rank"
        )
    offset = len(target) - len(shape)
    for i, d in enumerate(shape):
        t = target[offset + i]
        if (isinstance(d, int) and d == 1) or dims_equal(d, t) is not False:
            continue
        raise TypeInferenceError(
            f"cannot broadcast {data} to {_dims_text(target)}: dim {i} is {dim_str(d)}, "
            f"target {dim_str(t)}"
        )
    return tuple(target)


def _broadcast_to_infer(types, attrs):
    data = tensor_input(types[0], "data")
    target = attrs["shape"]
    _target_dims(target, "shape")
    return data.with_shape(_broadcast_to_shape(data, target, "shape"))


define_op(
    "broadcast_to",
    inputs=("data",),
    attrs={"shape": AttrSpec("dims", doc="the result shape")},
    infer=_broadcast_to_infer,
    compute=lambda v, a: np.asarray(np.broadcast_to(v[0], a["shape"]), order="C"),
    pattern=INJECTIVE,
    doc="Broadcast a tensor to a shape with numpy rules (the copy is materialised).",
)


def _expand_target(data_shape: tuple | None, target: Sequence[Dim]) -> tuple:
    """torch.expand's sizes with each -1 replaced by the input's dim."""
    offset = len(target) - (len(data_shape) if data_shape is not None else 0)
    out = []
    for i, t in enumerate(target):
        if isinstance(t, int) and t == -1:
            if data_shape is None:
                out.append(ANY)
            elif i < offset:
                raise TypeInferenceError(
                    f"sizes {_dims_text(target)}: -1 is not allowed in new leading dim {i}"
                )
            else:
                out.append(data_shape[i - offset])
        else:
            out.append(t)
    return tuple(out)


def _expand_infer(types, attrs):
    data = tensor_input(types[0], "data")
    target = attrs["shape"]
    _target_dims(target, "sizes", allow_minus_one=True)
    if data.shape is not None and len(target) < len(data.shape):
        raise TypeInferenceError(f"cannot expand {data} to sizes {_dims_text(target)} (lower rank)")
    return data.with_shape(_broadcast_to_shape(data, _expand_target(data.shape, target), "sizes"))


define_op(
    "expand",
    inputs=("data",),
    attrs={"shape": AttrSpec("dims", doc="the result sizes; -1 keeps the input's dim (torch)")},
    infer=_expand_infer,
    compute=lambda v, a: np.asarray(
        np.broadcast_to(v[0], _expand_target(v[0].shape, a["shape"])), order="C"
    ),
    pattern=INJECTIVE,
    doc="torch.Tensor.expand: broadcast to sizes where -1 keeps a dim (the copy is materialised).",
)


def _tile_infer(types, attrs):
    data = tensor_input(types[0], "data")
    reps = attrs["repeats"]
    if any(r < 0 for r in reps):
        raise TypeInferenceError(f"repeats {list(reps)} must not be negative")
    if data.shape is None:
        return data
    shape = data.shape
    rank = max(len(shape), len(reps))
    shape = (1,) * (rank - len(shape)) + shape
    reps = (1,) * (rank - len(reps)) + tuple(reps)
    return data.with_shape(tuple(dim_mul(d, r) for d, r in zip(shape, reps, strict=True)))


define_op(
    "tile",
    inputs=("data",),
    attrs={"repeats": AttrSpec("ints", doc="copies along each axis (aligned to the right)")},
    infer=_tile_infer,
    compute=lambda v, a: np.tile(v[0], a["repeats"]),
    pattern=INJECTIVE,
    doc="Repeat the whole tensor along each axis (numpy.tile, torch.Tensor.repeat).",
)


def _repeat_infer(types, attrs):
    data = tensor_input(types[0], "data")
    reps, axis = attrs["repeats"], attrs["axis"]
    if reps < 0:
        raise TypeInferenceError(f"repeats must not be negative, got {reps}")
    if axis is None:
        return data.with_shape((dim_mul(_numel(data), reps),))
    if data.shape is None:
        return data
    a = normalize_axis(axis, len(data.shape))
    shape = list(data.shape)
    shape[a] = dim_mul(shape[a], reps)
    return data.with_shape(tuple(shape))


define_op(
    "repeat",
    inputs=("data",),
    attrs={
        "repeats": AttrSpec("int", doc="copies of each element"),
        "axis": AttrSpec("int", None, "the axis; none repeats the flattened tensor"),
    },
    infer=_repeat_infer,
    compute=lambda v, a: np.repeat(v[0], a["repeats"], axis=a["axis"]),
    pattern=INJECTIVE,
    doc="Repeat each element along an axis (numpy.repeat, torch.repeat_interleave).",
)

# ----- concat, split ------------------------------------------------------------------------


def _merge_dims(a: Dim, b: Dim, axis: int, ts) -> Dim:
    if dims_equal(a, b) is False:
        listed = ", ".join(str(t) for t in ts)
        raise TypeInferenceError(
            f"inputs ({listed}) differ in dim {axis}: {dim_str(a)} vs {dim_str(b)}"
        )
    if isinstance(a, int) or b is ANY:
        return a
    return b if isinstance(b, int) or a is ANY else a


def _concat_infer(types, attrs):
    ts = [tensor_input(t, f"tensor {i}") for i, t in enumerate(types)]
    dtype = same_dtype(ts)
    shapes = [t.shape for t in ts if t.shape is not None]
    if not shapes:
        return TensorType(None, dtype)
    rank = len(shapes[0])
    if rank == 0:
        raise TypeInferenceError("cannot concatenate 0-d tensors (unsqueeze them first)")
    if any(len(s) != rank for s in shapes):
        raise TypeInferenceError(f"inputs must have one rank, got {', '.join(str(t) for t in ts)}")
    axis = normalize_axis(attrs["axis"], rank)
    out = list(shapes[0])
    for s in shapes[1:]:
        for i in range(rank):
            if i != axis:
                out[i] = _merge_dims(out[i], s[i], i, ts)
    total: Dim = 0
    for t in ts:
        total = dim_add(total, ANY if t.shape is None else t.shape[axis])
    out[axis] = total
    return TensorType(tuple(out), dtype)


define_op(
    "concat",
    inputs=("*tensors",),
    attrs={"axis": AttrSpec("int", 0, "the axis to join along")},
    infer=_concat_infer,
    compute=lambda v, a: np.concatenate(v, axis=a["axis"]),
    pattern=INJECTIVE,
    doc="Join tensors of one dtype along an axis; the other dims must agree.",
)


def _split_spec(spec: Any) -> int | tuple[int, ...]:
    if _is_int(spec):
        if spec <= 0:
            raise TypeInferenceError(f"indices_or_sections must be positive, got {spec}")
        return int(spec)
    if isinstance(spec, tuple) and all(_is_int(i) for i in spec):
        return tuple(int(i) for i in spec)
    raise TypeInferenceError(
        f"indices_or_sections must be a number of sections or a list of indices, got {spec!r}"
    )


def _split_sizes(d: Dim, spec: int | tuple[int, ...], axis: int) -> list[Dim]:
    if isinstance(spec, int):
        rem = dim_mod(d, spec) if d is not ANY else ANY
        if isinstance(rem, int) and rem != 0:
            raise TypeInferenceError(
                f"cannot split axis {axis} of size {dim_str(d)} into {spec} equal sections"
            )
        return [dim_floordiv(d, spec)] * spec
    if isinstance(d, int):
        bounds = (0, *spec, d)
        return [len(range(d)[lo:hi]) for lo, hi in pairwise(bounds)]
    if d is ANY:
        return [ANY] * (len(spec) + 1)
    # symbolic: indices are assumed to lie inside the dim (negative ones count from its end)
    points: list[Dim] = [0] + [i if i >= 0 else d + i for i in spec] + [d]
    sizes = []
    for lo, hi in pairwise(points):
        size = hi - lo
        if isinstance(size, int) and size < 0:
            size = 0
        elif isinstance(size, SymExpr) and not isinstance(lo, int):
            size = ANY  # lo grows with the dim and hi does not: the size depends on clamping
        sizes.append(size)
    return sizes


def _split_infer(types, attrs):
    data = tensor_input(types[0], "data")
    spec = _split_spec(attrs["indices_or_sections"])
    count = spec if isinstance(spec, int) else len(spec) + 1
    if data.shape is None:
        return TupleType([data] * count)
    shape = data.shape
    axis = normalize_axis(attrs["axis"], len(shape))
    sizes = _split_sizes(shape[axis], spec, axis)
    return TupleType(data.with_shape(shape[:axis] + (s,) + shape[axis + 1 :]) for s in sizes)


define_op(
    "split",
    inputs=("data",),
    attrs={
        "indices_or_sections": AttrSpec(
            "any", doc="a number of equal sections, or the indices to split at"
        ),
        "axis": AttrSpec("int", 0, "the axis to split"),
    },
    infer=_split_infer,
    compute=lambda v, a: tuple(np.split(v[0], a["indices_or_sections"], axis=a["axis"])),
    pattern=INJECTIVE,
    doc="Split a tensor along an axis into a tuple of tensors (numpy.split).",
)

# ----- strided_slice ----------------------------------------------------------------------


def slice_params(rank: int, attrs) -> list[tuple[int, int, int, int]]:
    """strided_slice's attributes checked against the input rank: one ``(axis, begin, end,
    stride)`` per sliced axis (axes normalised; strides default to 1)."""
    begin, end, strides, axes = attrs["begin"], attrs["end"], attrs["strides"], attrs["axes"]
    n = len(begin)
    if len(end) != n:
        raise TypeInferenceError(f"begin {list(begin)} and end {list(end)} differ in length")
    strides = (1,) * n if strides is None else strides
    if len(strides) != n:
        raise TypeInferenceError(f"strides {list(strides)} must have {n} values like begin")
    if axes is None:
        if n > rank:
            raise TypeInferenceError(f"{n} begin values for an input of rank {rank}")
        axes = tuple(range(n))
    elif len(axes) != n:
        raise TypeInferenceError(f"axes {list(axes)} must have {n} values like begin")
    axes = normalize_axes(axes, rank)
    if any(s == 0 for s in strides):
        raise TypeInferenceError(f"strides {list(strides)} contain 0")
    return list(zip(axes, begin, end, strides, strict=True))


def _sym_slice_len(d: Dim, b: int, e: int, s: int) -> Dim:
    """Length of ``range(d)[b:e:s]`` for a symbolic ``d``, bounds assumed inside the dim."""
    if d is ANY:
        return ANY

    def point(v: int, low: Dim, high: Dim) -> tuple[Dim, bool]:
        if v >= _UNBOUNDED:
            return high, True
        if v <= -_UNBOUNDED:
            return low, False
        return (v, False) if v >= 0 else (d + v, True)

    if s > 0:
        (start, start_rel), (stop, stop_rel) = point(b, 0, d), point(e, 0, d)
        diff, step = stop - start, s
    else:
        (start, start_rel), (stop, stop_rel) = point(b, -1, d - 1), point(e, -1, d - 1)
        diff, step = start - stop, -s
        start_rel, stop_rel = stop_rel, start_rel  # the far end is the one that may grow
    if start_rel and not stop_rel:
        return ANY  # the length would shrink as the dim grows: it depends on clamping
    length = dim_floordiv(diff + step - 1, step)
    return max(length, 0) if isinstance(length, int) else length


def _strided_slice_infer(types, attrs):
    data = tensor_input(types[0], "data")
    if data.shape is None:
        return data
    shape = list(data.shape)
    for axis, b, e, s in slice_params(len(shape), attrs):
        d = shape[axis]
        shape[axis] = len(range(d)[b:e:s]) if isinstance(d, int) else _sym_slice_len(d, b, e, s)
    return data.with_shape(tuple(shape))


def _strided_slice_compute(values, attrs):
    x = values[0]
    index = [slice(None)] * x.ndim
    for axis, b, e, s in slice_params(x.ndim, attrs):
        index[axis] = slice(b, e, s)
    return x[tuple(index)]


define_op(
    "strided_slice",
    inputs=("data",),
    attrs={
        "begin": AttrSpec("ints", doc="first index on each sliced axis (negative from the end)"),
        "end": AttrSpec("ints", doc="end (exclusive) on each sliced axis; clamped like Python"),
        "strides": AttrSpec("ints", None, "step on each sliced axis (negative reverses); 1s"),
        "axes": AttrSpec("ints", None, "the sliced axes; none means the first len(begin)"),
    },
    infer=_strided_slice_infer,
    compute=_strided_slice_compute,
    pattern=INJECTIVE,
    doc="Python slicing data[begin:end:stride] on some axes (clamped bounds, negative steps).",
)

# ----- pad --------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "edge")


def _pad_infer(types, attrs):
    data = tensor_input(types[0], "data")
    mode = attrs["mode"]
    if mode not in _PAD_MODES:
        raise TypeInferenceError(f"mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    pads = attrs["pads"]
    if len(types) == 2:
        if pads is not None:
            raise TypeInferenceError(
                "give pads either as the attribute pads or as a pads input, not both"
            )
        pt = tensor_input(types[1], "pads")
        if pt.dtype is not DType.int64 or pt.shape is None or len(pt.shape) != 1:
            raise TypeInferenceError(f"the pads input must be a 1-D i64 tensor, got {pt}")
        if data.shape is None:
            return data
        rank = len(data.shape)
        if isinstance(pt.shape[0], int) and pt.shape[0] != 2 * rank:
            raise TypeInferenceError(
                f"the pads input has {pt.shape[0]} values; a rank-{rank} input needs {2 * rank}"
            )
        return data.with_shape((ANY,) * rank)
    if pads is None:
        raise TypeInferenceError("needs pads: the attribute pads or a pads input")
    rank = known_rank(data, "data")
    if len(pads) != 2 * rank:
        raise TypeInferenceError(
            f"pads has {len(pads)} values; a rank-{rank} input needs {2 * rank} "
            "(all begins, then all ends)"
        )
    out = []
    for i, d in enumerate(data.shape):
        b, e = pads[i], pads[i + rank]
        size = dim_add(dim_add(d, b), e)
        if isinstance(size, int) and size < 0:
            raise TypeInferenceError(
                f"pads {b} and {e} on axis {i} remove more than its {dim_str(d)} elements"
            )
        if isinstance(d, int) and mode == "reflect" and max(b, e) >= max(d, 1):
            raise TypeInferenceError(
                f"reflect padding of {max(b, e)} on axis {i} needs a dim larger than that, got {d}"
            )
        if isinstance(d, int) and mode == "edge" and d == 0 and max(b, e) > 0:
            raise TypeInferenceError(f"edge padding of axis {i}, which is empty")
        out.append(size)
    return data.with_shape(tuple(out))


def _pad_compute(values, attrs):
    x = values[0]
    pads = attrs["pads"] if len(values) == 1 else [int(p) for p in values[1].reshape(-1)]
    rank = x.ndim
    begins, ends = pads[:rank], pads[rank:]
    grow = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends, strict=True)]
    if attrs["mode"] == "constant":
        fill = np.asarray(attrs["value"]).astype(x.dtype)
        y = np.pad(x, grow, mode="constant", constant_values=fill)
    else:
        y = np.pad(x, grow, mode=attrs["mode"])
    crop = tuple(
        slice(-min(b, 0), n + min(e, 0)) for b, e, n in zip(begins, ends, y.shape, strict=True)
    )
    return y[crop]


define_op(
    "pad",
    inputs=("data", "pads?"),
    attrs={
        "pads": AttrSpec("ints", None, "all begins then all ends (ONNX order); negative crops"),
        "mode": AttrSpec("str", "constant", "constant, reflect or edge"),
        "value": AttrSpec("float", 0.0, "fill value for mode constant"),
    },
    infer=_pad_infer,
    compute=_pad_compute,
    pattern=INJECTIVE,
    doc="Pad (or with negative pads crop) each axis; pads as attribute or i64 input.",
)

# ----- shape_of and tensor factories ------------------------------------------------------


def _shape_of_infer(types, attrs):
    data = tensor_input(types[0], "data")
    return TensorType((ANY if data.shape is None else len(data.shape),), DType.int64)


define_op(
    "shape_of",
    inputs=("data",),
    infer=_shape_of_infer,
    compute=lambda v, a: np.asarray(v[0].shape, dtype=np.int64).reshape(-1),
    pattern=OPAQUE,
    doc="The shape of a tensor as a 1-D i64 tensor.",
)


def _full_infer(types, attrs):
    _target_dims(attrs["shape"], "shape")
    return TensorType(attrs["shape"], attrs["dtype"])


def _fill(shape, value, dtype: DType) -> np.ndarray:
    return np.full(tuple(shape), np.asarray(value).astype(dtype.numpy), dtype=dtype.numpy)


define_op(
    "full",
    inputs=(),
    attrs={
        "shape": AttrSpec("dims", doc="the result shape"),
        "value": AttrSpec("float", doc="the fill value"),
        "dtype": AttrSpec("dtype", DType.float32, "the result dtype"),
    },
    infer=_full_infer,
    compute=lambda v, a: _fill(a["shape"], a["value"], a["dtype"]),
    pattern=INJECTIVE,
    doc="A tensor of one shape filled with one value.",
)

for _name, _value in (("zeros", 0), ("ones", 1)):
    define_op(
        _name,
        inputs=(),
        attrs={
            "shape": AttrSpec("dims", doc="the result shape"),
            "dtype": AttrSpec("dtype", DType.float32, "the result dtype"),
        },
        infer=_full_infer,
        compute=lambda v, a, _value=_value: _fill(a["shape"], _value, a["dtype"]),
        pattern=INJECTIVE,
        doc=f"A tensor of one shape filled with {_value}.",
    )


def _like_infer(types, attrs):
    data = tensor_input(types[0], "data")
    return data if attrs["dtype"] is None else data.with_dtype(attrs["dtype"])


def _like_compute(value):
    def compute(values, attrs):
        x = values[0]
        dtype = attrs["dtype"] or DType.of(x.dtype)
        return _fill(x.shape, attrs["value"] if value is None else value, dtype)

    return compute


for _name, _value in (("full_like", None), ("zeros_like", 0), ("ones_like", 1)):
    _attrs = {"dtype": AttrSpec("dtype", None, "the result dtype; none keeps the input's")}
    if _value is None:
        _attrs["value"] = AttrSpec("float", doc="the fill value")
    define_op(
        _name,
        inputs=("data",),
        attrs=_attrs,
        infer=_like_infer,
        compute=_like_compute(_value),
        pattern=ELEMWISE,
        doc="A tensor shaped like the input, filled with "
        + ("one value." if _value is None else f"{_value}."),
    )


def arange_args(attrs) -> tuple[Any, Any, Any]:
    """arange's ``(start, stop, step)`` checked: numbers (ints kept as ints) or symbolic dims,
    with a numeric non-zero step."""
    args = (attrs["start"], attrs["stop"], attrs["step"])
    for name, v in zip(("start", "stop", "step"), args, strict=True):
        if isinstance(v, (bool, np.bool_)) or not isinstance(
            v, (int, float, np.integer, np.floating, SymExpr)
        ):
            raise TypeInferenceError(f"{name} must be a number or a symbolic dim, got {v!r}")
    start, stop, step = (
        int(v) if _is_int(v) else v if isinstance(v, SymExpr) else float(v) for v in args
    )
    if isinstance(step, SymExpr):
        raise TypeInferenceError(f"step must be a number, got the symbolic {step}")
    if step == 0:
        raise TypeInferenceError("step must not be 0")
    return start, stop, step


def _arange_len(start, stop, step) -> Dim:
    if all(isinstance(v, int) for v in (start, stop, step)):
        return max(0, -((start - stop) // step))
    if isinstance(start, SymExpr) or isinstance(stop, SymExpr):
        if any(isinstance(v, float) for v in (start, stop, step)):
            return ANY
        diff, s = (stop - start, step) if step > 0 else (start - stop, -step)
        n = dim_floordiv(diff + s - 1, s)
        return max(n, 0) if isinstance(n, int) else n
    return max(0, math.ceil((float(stop) - float(start)) / float(step)))  # like torch, in double


def _arange_dtype(attrs, start, stop, step) -> DType:
    if attrs["dtype"] is not None:
        return attrs["dtype"]
    if any(isinstance(v, float) for v in (start, stop, step)):
        return DType.float32
    return DType.int64


def _arange_infer(types, attrs):
    start, stop, step = arange_args(attrs)
    return TensorType((_arange_len(start, stop, step),), _arange_dtype(attrs, start, stop, step))


def _arange_compute(values, attrs):
    start, stop, step = arange_args(attrs)
    dtype = _arange_dtype(attrs, start, stop, step)
    n = _arange_len(start, stop, step)
    if all(isinstance(v, int) for v in (start, stop, step)) and dtype.is_int:
        return (start + step * np.arange(n, dtype=np.int64)).astype(dtype.numpy)
    return (float(start) + float(step) * np.arange(n, dtype=np.float64)).astype(dtype.numpy)


define_op(
    "arange",
    inputs=(),
    attrs={
        "start": AttrSpec("any", 0, "first value (a number or a symbolic dim)"),
        "stop": AttrSpec("any", doc="end (exclusive; a number or a symbolic dim)"),
        "step": AttrSpec("any", 1, "the step (a number, not 0)"),
        "dtype": AttrSpec("dtype", None, "the result dtype; none: i64 for ints, else f32"),
    },
    infer=_arange_infer,
    compute=_arange_compute,
    pattern=INJECTIVE,
    doc="Evenly spaced values in [start, stop) (torch.arange).",
)
