"""Indices of tied values: a sort, topk, argmax or argmin may order equal values either way.

torch's default CPU sort (`stable=False`) is stable only up to 16 elements along the axis;
beyond that equal values come out in an order it leaves unspecified, and its topk likewise.
passlens's `topk` is stable (ties keep the lower index first), so on tied values its indices
may differ from the reference's while both are correct. An index value that differs from the
reference's is therefore judged by what it selects: the op's input (this step's value) gathered
at this step's indices and at the reference's must agree within the tolerance. A wrong index
(one that selects another value) still differs, and so does an input a pass changed so that
values tie which did not: the op's input must agree with the reference's (torch: the FX op's
own input, recorded when the reference ran).

Where such an index differs from the reference's only by ties, the check runs the step again
with the reference's indices in its place (`tie_judging.TieJudging._retie`): values that depend on
which tied index comes first (positions, the experts an MoE routes to from tied scores) are
then judged as the reference computed them. A note names every such index.

What can be judged so is an IR node that is the index result of an order-selecting op: the
index field of `topk` (which sort, argsort and ONNX TopK convert to) and `argmax` /
`argmin` (which `max.dim` / `min.dim` give)."""

from __future__ import annotations

import numpy as np

from compiler.ir import Call, Expr, Tuple, TupleGetItem
from explorer.check.numbers import compare

TIE_NOTE = "indices of tied values differ from {ref}'s at {where}: both orders are correct"


def index_source(node: Expr) -> tuple[Expr, int | None, bool] | None:
    """`(input, axis, keepdims)` of the order-selecting op whose indices `node` is (axis
    None: over the flattened input), or None when `node` is no such index."""
    if isinstance(node, TupleGetItem) and node.index == 1:
        t = node.tuple_value
        if isinstance(t, Call) and t.op == "topk" and t.args:
            return t.args[0], t.attrs.get("axis", -1), True
    if isinstance(node, Call) and node.op in ("argmax", "argmin") and node.args:
        return node.args[0], node.attrs.get("axis"), bool(node.attrs.get("keepdims", False))
    return None


def _select(x: np.ndarray, idx: np.ndarray, axis: int | None, keepdims: bool) -> np.ndarray | None:
    """The elements of `x` that indices `idx` of an op over `axis` select (None when
    they cannot select: out of range, another shape)."""
    if idx.dtype.kind not in "iu" or x.ndim == 0 and axis is not None:
        return None
    try:
        if axis is None:
            flat = x.reshape(-1)
            if idx.size and (idx.min() < 0 or idx.max() >= flat.size):
                return None
            return flat[idx]
        axis = axis % x.ndim
        if idx.size and (idx.min() < 0 or idx.max() >= x.shape[axis]):
            return None
        if not keepdims:
            idx = np.expand_dims(idx, axis)
        return np.take_along_axis(x, idx, axis)
    except (ValueError, IndexError):
        return None


def tied(node: Expr, value, ref, values: dict, rtol: float, atol: float, reference_of=None) -> bool:
    """Whether `value` (the value of `node` in a step) differs from the reference value
    `ref` only in the order of tied values: `node` is the index of an order-selecting op
    whose input value is in `values`, and both index sets select the same values of it.
    `reference_of(expr, value, node)` gives the reference value of the op's input when one is
    matched: it must then agree with the step's input (a pass that changed the input, making
    values tie that did not, is no tie)."""
    src = index_source(node)
    if src is None or not isinstance(value, np.ndarray) or not isinstance(ref, np.ndarray):
        return False
    x = values.get(src[0])
    if not isinstance(x, np.ndarray) or value.shape != ref.shape:
        return False
    if reference_of is not None:
        x_ref = reference_of(src[0], x, node)
        if x_ref is not None and (x_ref.shape != x.shape or compare(x, x_ref, rtol, atol)[2]):
            return False
    got = _select(x, value, src[1], src[2])
    want = _select(x, np.asarray(ref).astype(value.dtype, copy=False), src[1], src[2])
    if got is None or want is None or got.shape != want.shape:
        return False
    return compare(got, want, rtol, atol)[2] == 0


def output_nodes(output: Expr) -> list[Expr]:
    """The nodes a function returns, one per output leaf (flattening tuples)."""
    if isinstance(output, Tuple):
        return [leaf for f in output.fields for leaf in output_nodes(f)]
    return [output]


__all__ = ["TIE_NOTE", "index_source", "output_nodes", "tied"]
