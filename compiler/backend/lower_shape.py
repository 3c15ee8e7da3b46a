"""Lowerings of the shape and layout ops: each is a lazy value whose element at an output
index reads the input at a computed index (permute, reshape, broadcast, slice, pad, concat,
tile, repeat), or a fill (full, zeros, the ``*_like`` fills, arange, shape_of). Standalone
reshapes are views and stay graph ops (see legalize-ops); inside a fused group a reshape is
index arithmetic.

Reads guarded by a select (pad, concat) clamp their index, so both sides of the select are
always in bounds.
"""

from __future__ import annotations

from compiler.backend import loops as L
from compiler.backend.lower_elementwise import fill_value
from compiler.backend.lowering import LazyTensor, LoweringError, Tensor, lowering
from compiler.ir.shape_inference import normalize_axis
from compiler.ir.types import DType

_UNBOUNDED = 2**31 - 1


def _zero() -> L.Expr:
    return L.Const(0, L.INDEX)


def clamp(i: L.Expr, extent: L.Expr) -> L.Expr:
    """``i`` clamped into ``[0, extent - 1]``."""
    return L.minimum(L.maximum(i, 0), extent - 1)


def strides(shape) -> list[L.Expr]:
    """Row-major strides of a shape, as i64 expressions."""
    out: list[L.Expr] = []
    acc: L.Expr = L.Const(1, L.INDEX)
    for d in reversed(shape):
        out.append(acc)
        acc = acc * d
    return list(reversed(out))


def linearize(idx, shape) -> L.Expr:
    """The row-major offset of ``idx`` in ``shape``."""
    total: L.Expr = _zero()
    for i, s in zip(idx, strides(shape), strict=False):
        total = total + i * s
    return total


def delinearize(flat: L.Expr, shape) -> list[L.Expr]:
    """The index of row-major offset ``flat`` in ``shape``."""
    out = []
    for k, s in enumerate(strides(shape)):
        q = flat // s if k == 0 else (flat // s) % shape[k]
        out.append(q if L.static_int(shape[k]) != 1 else _zero())
    return out


def reshape_index(idx, out_shape, in_shape) -> list[L.Expr]:
    """The input index of output index ``idx`` when ``in_shape`` is viewed as ``out_shape``
    (row-major); equal leading and trailing dims map directly, the rest through an offset."""
    out_shape, in_shape = list(out_shape), list(in_shape)
    head = 0
    while head < min(len(out_shape), len(in_shape)) and out_shape[head] == in_shape[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(out_shape), len(in_shape)) - head
        and out_shape[-1 - tail] == in_shape[-1 - tail]
    ):
        tail += 1
    mid_out = out_shape[head : len(out_shape) - tail]
    mid_in = in_shape[head : len(in_shape) - tail]
    flat = linearize(idx[head : len(idx) - tail], mid_out)
    mid = delinearize(flat, mid_in) if mid_in else []
    return list(idx[:head]) + mid + list(idx[len(idx) - tail :])


def _view(t: Tensor, shape, index_fn) -> LazyTensor:
    return LazyTensor(shape, t.dtype, lambda idx: t.at(index_fn(idx)))


@lowering("reshape", "flatten")
def _reshape(kb, call, inputs, dest):
    x = inputs[0]
    return _view(x, call.out_shape, lambda idx: reshape_index(idx, call.out_shape, x.shape))


@lowering("squeeze")
def _squeeze(kb, call, inputs, dest):
    x = inputs[0]
    shape = call.arg_types[0].shape
    axes = call.attrs["axes"]
    if axes is None:
        drop = {i for i, d in enumerate(shape) if isinstance(d, int) and d == 1}
    else:
        drop = {normalize_axis(a, len(shape)) for a in axes}

    def index(idx):
        rest = iter(idx)
        return [_zero() if i in drop else next(rest) for i in range(len(shape))]

    return _view(x, call.out_shape, index)


@lowering("unsqueeze")
def _unsqueeze(kb, call, inputs, dest):
    x = inputs[0]
    rank = len(call.out_shape)
    new = {normalize_axis(a, rank) for a in call.attrs["axes"]}
    return _view(x, call.out_shape, lambda idx: [i for k, i in enumerate(idx) if k not in new])


@lowering("permute_dims")
def _permute(kb, call, inputs, dest):
    x = inputs[0]
    rank = x.ndim
    axes = call.attrs["axes"]
    axes = tuple(reversed(range(rank))) if axes is None else tuple(a % rank for a in axes)

    def index(idx):
        src = [None] * rank
        for k, a in enumerate(axes):
            src[a] = idx[k]
        return src

    return _view(x, call.out_shape, index)


@lowering("broadcast_to", "expand")
def _broadcast(kb, call, inputs, dest):
    x = inputs[0]
    off = len(call.out_shape) - x.ndim

    def index(idx):
        return [_zero() if L.static_int(d) == 1 else idx[off + j] for j, d in enumerate(x.shape)]

    return _view(x, call.out_shape, index)


@lowering("tile")
def _tile(kb, call, inputs, dest):
    x = inputs[0]
    off = len(call.out_shape) - x.ndim
    return _view(x, call.out_shape, lambda idx: [idx[off + j] % d for j, d in enumerate(x.shape)])


@lowering("repeat")
def _repeat(kb, call, inputs, dest):
    x = inputs[0]
    reps, axis = call.attrs["repeats"], call.attrs["axis"]
    if axis is None:
        return _view(x, call.out_shape, lambda idx: delinearize(idx[0] // reps, x.shape))
    a = normalize_axis(axis, x.ndim)
    return _view(
        x, call.out_shape, lambda idx: [i // reps if k == a else i for k, i in enumerate(idx)]
    )


@lowering("concat")
def _concat(kb, call, inputs, dest):
    axis = normalize_axis(call.attrs["axis"], len(call.out_shape))
    offsets, total = [], L.Const(0, L.INDEX)
    for t in inputs:
        offsets.append(total)
        total = total + t.shape[axis]

    def at(idx):
        i = idx[axis]
        value = None
        for t, off in reversed(list(zip(inputs, offsets, strict=False))):
            local = list(idx)
            local[axis] = clamp(i - off, t.shape[axis])
            v = t.at(local)
            value = (
                v if value is None else L.select(L.compare("lt", i, off + t.shape[axis]), v, value)
            )
        return value

    return LazyTensor(call.out_shape, call.out_dtype, at)


def slice_start(d: L.Expr, b: int, e: int, s: int) -> L.Expr:
    """The first index of ``range(d)[b:e:s]`` (symbolic dims: bounds assumed inside)."""
    n = L.static_int(d)
    if n is not None:
        r = range(n)[b:e:s]
        return L.Const(r.start if len(r) else 0, L.INDEX)
    if s > 0:
        if b >= _UNBOUNDED or b <= -_UNBOUNDED:
            return L.Const(0, L.INDEX) if b < 0 else d
        return L.Const(b, L.INDEX) if b >= 0 else d + b
    if b >= _UNBOUNDED:
        return d - 1
    return L.Const(b, L.INDEX) if b >= 0 else d + b


@lowering("strided_slice")
def _strided_slice(kb, call, inputs, dest):
    from compiler.ops.shape import slice_params

    x = inputs[0]
    params = slice_params(x.ndim, call.attrs)
    starts = {axis: (slice_start(x.shape[axis], b, e, s), s) for axis, b, e, s in params}

    def index(idx):
        out = list(idx)
        for axis, (start, step) in starts.items():
            out[axis] = start + idx[axis] * step
        return out

    return _view(x, call.out_shape, index)


@lowering("pad")
def _pad(kb, call, inputs, dest):
    if len(inputs) > 1:
        raise LoweringError("pads given as a tensor input: run dynamic-to-static first")
    x = inputs[0]
    rank = x.ndim
    pads, mode = call.attrs["pads"], call.attrs["mode"]
    fill = fill_value(call.attrs["value"], x.dtype)

    def at(idx):
        src, inside = [], L.Const(True, DType.bool)
        for k in range(rank):
            n = x.shape[k]
            j = idx[k] - pads[k]
            if mode == "constant":
                inside = L.logical_and(
                    inside, L.logical_and(L.compare("ge", j, 0), L.compare("lt", j, n))
                )
                j = clamp(j, n)
            elif mode == "edge":
                j = clamp(j, n)
            else:  # reflect about the edges (pads are smaller than the dim)
                j = L.select(L.compare("lt", j, 0), -j, j)
                j = L.select(L.compare("ge", j, n), (n - 1) * 2 - j, j)
            src.append(j)
        v = x.at(src)
        return L.select(inside, v, fill) if mode == "constant" else v

    return LazyTensor(call.out_shape, call.out_dtype, at)


@lowering("full", "zeros", "ones")
def _full(kb, call, inputs, dest):
    value = {"zeros": 0, "ones": 1}.get(call.op, call.attrs.get("value"))
    v = fill_value(value, call.out_dtype)
    return LazyTensor(call.out_shape, call.out_dtype, lambda idx: v)


@lowering("arange")
def _arange(kb, call, inputs, dest):
    from compiler.ops.shape import arange_args

    start, _, step = arange_args(call.attrs)
    dtype = call.out_dtype
    ints = all(isinstance(v, int) for v in (start, step)) and not isinstance(
        call.attrs["stop"], float
    )

    def at(idx):
        i = idx[0]
        if ints and dtype.is_int:
            return L.cast(dtype, L.as_expr(start) + i * step)
        f = L.cast(DType.float64, L.as_expr(start)) + L.cast(DType.float64, i) * L.Const(
            float(step), DType.float64
        )
        return L.cast(dtype, f)

    return LazyTensor(call.out_shape, dtype, at)


@lowering("shape_of")
def _shape_of(kb, call, inputs, dest):
    shape = inputs[0].shape

    def at(idx):
        value: L.Expr = L.Const(0, DType.int64)
        for k in reversed(range(len(shape))):
            value = L.select(L.compare("eq", idx[0], k), shape[k], value)
        return value

    return LazyTensor(call.out_shape, DType.int64, at)


@lowering("full_like", "zeros_like", "ones_like")
def _like(kb, call, inputs, dest):
    value = {"zeros_like": 0, "ones_like": 1}.get(call.op, call.attrs.get("value"))
    v = fill_value(value, call.out_dtype)
    return LazyTensor(call.out_shape, call.out_dtype, lambda idx: v)


__all__ = ["clamp", "delinearize", "linearize", "reshape_index", "strides"]
