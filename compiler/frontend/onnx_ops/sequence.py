"""ONNX sequences and optionals, resolved at import time.

An ONNX sequence is an IR tuple of its tensors, so its length must be known at import time: it
is made by ``SequenceConstruct``, ``SequenceEmpty``, ``SplitToSequence`` (of a static dim, or
by split sizes that are constants or a computed 1-D tensor of static length), changed by
``SequenceInsert`` / ``SequenceErase`` at constant positions, read by ``SequenceAt`` (a
constant position, or a computed one when every element has the same type), ``SequenceLength``
(a constant) and ``ConcatFromSequence``, mapped by ``SequenceMap`` (its body converted once per
element). A graph input of sequence type takes its length from ``from_onnx(...,
example_inputs=)``; a ``Loop`` over ``SequenceLength`` that inserts into a sequence (what
``SequenceMap`` expands to) is unrolled by the Loop converter (``onnx_ops/rnn.py``).

An ONNX optional is resolved at import time too: a present one is its element itself (a tensor
or a tuple), an empty one the ``EMPTY`` marker (``onnx_context``), which only these converters
accept. ``OptionalHasElement`` is then a constant and ``OptionalGetElement`` the element.

Anything whose length or presence depends on run-time data (a position or chunk size computed
at run time, an optional chosen by an ``If`` on data, a Loop with a run-time trip count) is
reported as unsupported.
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.onnx_context import (
    DTYPES,
    EMPTY,
    ConversionError,
    ConvertContext,
    Unsupported,
)
from compiler.frontend.onnx_ops.registry import I64, cast_to, checked_axis, converter
from compiler.ir.nodes import Expr
from compiler.ir.nodes import Tuple as IRTuple
from compiler.ir.symbolic import ANY, dim_str
from compiler.ir.types import DType, TensorType, TupleType

MAX_SEQUENCE = 4096
"""Sequences made at import time (SplitToSequence, SequenceMap) hold up to this many tensors."""


# ----- helpers ----------------------------------------------------------------------------


def _elements(ctx: ConvertContext, i: int) -> list[Expr]:
    """The tensors of sequence input ``i`` (fields of an IR tuple)."""
    seq = ctx.input(i)
    ty = seq.ty
    if not isinstance(ty, TupleType):
        raise ConversionError(f"input {i} must be a sequence, got a tensor {ty}")
    if isinstance(seq, IRTuple):
        return list(seq.fields)
    return [ctx.tuple_item(seq, k) for k in range(len(ty.fields))]


def _sequence(ctx: ConvertContext, items: list[Expr]) -> Expr:
    """A sequence of these tensors."""
    return IRTuple(items, prov=ctx.prov)


def _dtype_of(items: list[Expr]) -> DType | None:
    return items[0].ty.dtype if items else None


def _check_tensor(ctx: ConvertContext, x: Expr, dtype: DType | None, what: str) -> None:
    if not isinstance(x.ty, TensorType):
        raise ConversionError(f"{what} must be a tensor, got {x.ty}")
    if dtype is not None and x.ty.dtype is not dtype:
        raise ConversionError(f"{what} is {x.ty.dtype}, the sequence holds {dtype} tensors")


def _position(ctx: ConvertContext, i: int, length: int, insert: bool = False) -> int:
    """A position input known at import time, checked and counted from the front."""
    from compiler.frontend.onnx_ops.control import static_value

    value = static_value(ctx.input(i))
    if value is None:
        raise Unsupported(
            f"{ctx.node.op_type} at a position computed at run time (passlens keeps sequences "
            "as tuples whose layout is known at import time)"
        )
    if value.size != 1 or not np.issubdtype(value.dtype, np.integer):
        raise ConversionError(f"the position must be one integer, got {value!r}")
    pos = int(value.reshape(-1)[0])
    top = length if insert else length - 1
    if not -length <= pos <= top:
        raise ConversionError(
            f"position {pos} is out of range for a sequence of {length} tensor(s) "
            f"({-length} to {top})"
        )
    return pos + length if pos < 0 else pos


def _check_length(ctx: ConvertContext, n: int) -> None:
    if n > MAX_SEQUENCE:
        raise Unsupported(
            f"{ctx.node.op_type} making a sequence of {n} tensors: passlens keeps up to "
            f"{MAX_SEQUENCE}"
        )


# ----- sequences --------------------------------------------------------------------------


@converter("SequenceConstruct", min_version=11)
def _sequence_construct(ctx):
    items = [ctx.input(i) for i in range(len(ctx.inputs))]
    if not items:
        raise ConversionError("SequenceConstruct needs at least one input")
    dtype = items[0].ty.dtype if isinstance(items[0].ty, TensorType) else None
    for k, x in enumerate(items):
        _check_tensor(ctx, x, dtype, f"input {k}")
    return _sequence(ctx, items)


@converter("SequenceEmpty", attrs=("dtype",), min_version=11)
def _sequence_empty(ctx):
    dtype = ctx.attr("dtype", 1)
    if dtype not in DTYPES:
        raise Unsupported(f"a sequence of element type {dtype}")
    return _sequence(ctx, [])


@converter("SequenceLength", min_version=11)
def _sequence_length(ctx):
    return ctx.constant(len(_elements(ctx, 0)), I64)


@converter("SequenceAt", min_version=11)
def _sequence_at(ctx):
    """The tensor at a constant position; at a computed one, when every element has the same
    type, a ``take`` from the elements stacked (an out-of-range position is an error when
    run, as in ONNX)."""
    items = _elements(ctx, 0)
    from compiler.frontend.onnx_ops.control import static_value

    if static_value(ctx.input(1)) is not None or not items:
        if not items:
            raise ConversionError("SequenceAt of an empty sequence")
        return items[_position(ctx, 1, len(items))]
    pos = ctx.input(1)
    if pos.ty.shape not in ((), (1,)) or not pos.ty.dtype.is_int:
        raise ConversionError(f"the position must be one integer, got {pos.ty}")
    shape = items[0].ty.shape
    if any(x.ty != items[0].ty for x in items) or shape is None or ANY in shape:
        raise Unsupported(
            "SequenceAt at a position computed at run time in a sequence whose tensors differ "
            "in type (or may: unknown dims or rank): the result's type would be known only "
            "at run time"
        )
    stacked = ctx.call("concat", *[ctx.call("unsqueeze", x, axes=[0]) for x in items], axis=0)
    index = ctx.call("reshape", cast_to(ctx, pos, I64), shape=[])
    return ctx.call("take", stacked, index, axis=0)


@converter("SequenceInsert", min_version=11)
def _sequence_insert(ctx):
    items = _elements(ctx, 0)
    x = ctx.input(1)
    _check_tensor(ctx, x, _dtype_of(items), "the inserted tensor")
    pos = _position(ctx, 2, len(items), insert=True) if ctx.has(2) else len(items)
    _check_length(ctx, len(items) + 1)
    return _sequence(ctx, [*items[:pos], x, *items[pos:]])


@converter("SequenceErase", min_version=11)
def _sequence_erase(ctx):
    items = _elements(ctx, 0)
    if not items:
        raise ConversionError("SequenceErase of an empty sequence")
    pos = _position(ctx, 1, len(items)) if ctx.has(1) else len(items) - 1
    return _sequence(ctx, items[:pos] + items[pos + 1 :])


@converter("ConcatFromSequence", attrs=("axis", "new_axis"), min_version=11)
def _concat_from_sequence(ctx):
    items = _elements(ctx, 0)
    if not items:
        raise Unsupported("ConcatFromSequence of an empty sequence (no type for the result)")
    new_axis = ctx.attr("new_axis", 0)
    if new_axis not in (0, 1):
        raise ConversionError(f"new_axis must be 0 or 1, got {new_axis}")
    if "axis" not in ctx.attrs:
        raise ConversionError("ConcatFromSequence needs the axis attribute")
    ranks = {len(x.ty.shape) if x.ty.shape is not None else None for x in items}
    if None in ranks:
        raise Unsupported("ConcatFromSequence of tensors of unknown rank")
    if len(ranks) != 1:
        raise ConversionError(f"the tensors of the sequence differ in rank: {sorted(ranks)}")
    rank = ranks.pop()
    axis = checked_axis(ctx, ctx.attr("axis"), rank + new_axis)
    if new_axis:
        items = [ctx.call("unsqueeze", x, axes=[axis]) for x in items]
    elif rank == 0:
        raise ConversionError("ConcatFromSequence of 0-d tensors needs new_axis=1")
    if len(items) == 1:
        return ctx.call("identity", items[0])
    return ctx.call("concat", *items, axis=axis)


@converter("SplitToSequence", attrs=("axis", "keepdims"), min_version=11)
def _split_to_sequence(ctx):
    """Pieces of a static dim (size 1 without ``split``, a constant chunk size or constant
    sizes), or of computed sizes given as a 1-D tensor of static length."""
    from compiler.frontend.onnx_ops.control import static_value
    from compiler.frontend.onnx_ops.shape import split_computed

    x = ctx.input(0)
    rank = ctx.rank(0)
    if rank == 0:
        raise ConversionError("SplitToSequence of a 0-d tensor")
    axis = checked_axis(ctx, ctx.attr("axis", 0), rank)
    keepdims = ctx.attr("keepdims", 1)
    if keepdims not in (0, 1):
        raise ConversionError(f"keepdims must be 0 or 1, got {keepdims}")
    d = x.ty.shape[axis]

    def static_dim(what: str) -> int:
        if not isinstance(d, int):
            raise Unsupported(
                f"SplitToSequence {what} along a symbolic dim {dim_str(d)}: the number of "
                "pieces would be known only at run time"
            )
        _check_length(ctx, d)
        return d

    if not ctx.has(1):
        n = static_dim("into pieces of 1")
        if keepdims:
            sizes = [1] * n
        else:
            return _sequence(
                ctx, [ctx.call("take", x, ctx.constant(k, I64), axis=axis) for k in range(n)]
            )
    else:
        split = ctx.input(1)
        st = split.ty
        if not isinstance(st, TensorType) or not st.dtype.is_int:
            raise ConversionError(f"split must be an integer tensor, got {st}")
        if st.shape is None or len(st.shape) > 1:
            raise ConversionError(f"split must be a scalar or a 1-D tensor, got {st}")
        value = static_value(split)
        if value is None:
            if len(st.shape) == 0:
                raise Unsupported(
                    "SplitToSequence by a chunk size computed at run time: the number of "
                    "pieces would be known only at run time"
                )
            k = st.shape[0]
            if not isinstance(k, int):
                raise Unsupported(
                    f"SplitToSequence by computed sizes of symbolic length {dim_str(k)}"
                )
            if k == 0:
                raise ConversionError("split holds no sizes")
            _check_length(ctx, k)
            return _sequence(ctx, split_computed(ctx, x, split, axis, k))
        if value.ndim == 0:
            chunk = int(value)
            if chunk <= 0:
                raise ConversionError(f"the chunk size must be positive, got {chunk}")
            n = static_dim("by a chunk size")
            sizes = [min(chunk, n - s) for s in range(0, n, chunk)]
        else:
            sizes = [int(v) for v in value]
            _check_length(ctx, len(sizes))
            if any(s < 0 for s in sizes):
                raise ConversionError(f"split sizes must not be negative, got {sizes}")
            if isinstance(d, int) and sum(sizes) != d:
                raise ConversionError(f"split sizes {sizes} do not add up to the dim {d}")
    if not sizes:
        return _sequence(ctx, [])
    if len(sizes) == 1:
        return _sequence(ctx, [ctx.call("identity", x)])
    spec = tuple(int(v) for v in np.cumsum(sizes)[:-1])
    parts = ctx.call("split", x, indices_or_sections=spec, axis=axis)
    return _sequence(ctx, [ctx.tuple_item(parts, k) for k in range(len(sizes))])


@converter("SequenceMap", attrs=("body",), min_version=17)
def _sequence_map(ctx):
    """The body converted once per element: sequence inputs give their k-th tensor, tensor
    inputs themselves; each body output gathered into a sequence."""
    from compiler.frontend.onnx_ops.rnn import LoopBody

    inputs = [ctx.input(i) for i in range(len(ctx.inputs))]
    if not inputs or not isinstance(inputs[0].ty, TupleType):
        raise ConversionError("the first input of SequenceMap must be a sequence")
    lengths = {len(v.ty.fields) for v in inputs if isinstance(v.ty, TupleType)}
    if len(lengths) != 1:
        raise ConversionError(f"the sequences given to SequenceMap differ in length: {lengths}")
    n = lengths.pop()
    _check_length(ctx, n)
    per_input = [
        _elements(ctx, i) if isinstance(v.ty, TupleType) else None for i, v in enumerate(inputs)
    ]
    body = LoopBody(ctx, "body", len(inputs))
    outs: list[list[Expr]] = [[] for _ in ctx.node.output]
    if len(body.graph.output) != len(outs):
        raise ConversionError(
            f"the body gives {len(body.graph.output)} outputs, the node has {len(outs)}"
        )
    for k in range(n):
        values = [
            v if items is None else items[k] for v, items in zip(inputs, per_input, strict=True)
        ]
        for j, y in enumerate(body(values, k)):
            outs[j].append(y)
    return [_sequence(ctx, items) for items in outs]


# ----- optionals --------------------------------------------------------------------------


@converter("Optional", attrs=("type",), min_version=15)
def _optional(ctx):
    if ctx.has(0):
        return ctx.input(0)
    if "type" not in ctx.attrs:
        raise ConversionError("an Optional without an input needs the type attribute")
    return EMPTY


@converter("OptionalHasElement", min_version=15)
def _optional_has_element(ctx):
    present = ctx.has(0) and ctx.inputs[0] is not EMPTY
    return ctx.constant(present, DType.bool)


@converter("OptionalGetElement", min_version=15)
def _optional_get_element(ctx):
    if ctx.has(0) and ctx.inputs[0] is EMPTY:
        raise ConversionError("OptionalGetElement of an empty optional (an error in ONNX)")
    return ctx.input(0)
