"""decompose-ops: rewrite composite ops into simpler ones the rest of the pipeline and the
backend understand (TVM Relax's DecomposeOpsForInference, plus linear and attention).

- `linear(x, w, b)` -> `matmul(x, permute_dims(w)) + b`;
- `batch_norm` (inference) -> `x * scale + shift` with `scale = gamma / sqrt(var + eps)`
  and `shift = beta - mean * scale` computed by ops on the parameters, so fold-constant
  turns them into two constants when the parameters are weights;
- `layer_norm` -> `(x - mean) * rsqrt(variance + eps) * gamma + beta`;
- `scaled_dot_product_attention` -> `softmax(q @ k^T * scale [+ mask]) @ v`, a bool mask
  and `is_causal` (`tril` of ones) through `where(keep, scores, -inf)`. A query row
  with no key left gives NaN here where the op gives zeros, as torch's math kernel does.

`ops` picks the ops to decompose (default: all of them); gelu stays an op.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from compiler.ir.nn_compute import LINEAR_ROUNDS_AS_DECOMPOSED, SDPA_ROUNDS_AS_DECOMPOSED
from compiler.ir.nodes import Call, Constant, Expr, Module
from compiler.ir.types import DType, TensorType
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from compiler.passes.infra.rules import Rule, Rules, op, rule_table


def _op(op: str, *args: Expr, **attrs) -> Call:
    return Call(op, args, attrs)


def _scalar(value: float, like: Expr) -> Constant:
    return Constant.scalar(value, like.ty.dtype)


def _linear(node: Call) -> Expr | None:
    x, w, *bias = node.args
    y = _op("matmul", x, _op("permute_dims", w, axes=[1, 0]), out_dtype=node.attrs["out_dtype"])
    if not bias:
        return y
    b = bias[0]
    if b.ty.dtype is not y.ty.dtype:
        b = _op("cast", b, dtype=y.ty.dtype)
    return _op("add", y, b)


def _batch_norm(node: Call) -> Expr | None:
    x, gamma, beta, mean, var = node.args
    rank = len(x.ty.shape)
    axis = node.attrs["axis"] % rank
    scale = _op("divide", gamma, _op("sqrt", _op("add", var, _scalar(node.attrs["epsilon"], var))))
    shift = _op("subtract", beta, _op("multiply", mean, scale))
    if axis < rank - 1:  # (C,) -> (C, 1, ...) to broadcast along the channel axis
        trailing = list(range(1, rank - axis))
        scale, shift = (
            _op("unsqueeze", scale, axes=trailing),
            _op("unsqueeze", shift, axes=trailing),
        )
    return _op("add", _op("multiply", x, scale), shift)


def _layer_norm(node: Call) -> Expr | None:
    x, *params = node.args
    rank = len(x.ty.shape)
    axes = sorted(a % rank for a in node.attrs["axes"])
    mean = _op("mean", x, axes=axes, keepdims=True)
    var = _op("variance", x, axes=axes, keepdims=True)
    eps = _scalar(node.attrs["epsilon"], x)
    y = _op("multiply", _op("subtract", x, mean), _op("rsqrt", _op("add", var, eps)))
    trailing = axes == list(range(rank - len(axes), rank))
    for p, combine in zip(params, ("multiply", "add"), strict=False):
        if not trailing:  # gamma/beta cover the normalized dims: give them x's rank
            shape = [x.ty.shape[a] if a in axes else 1 for a in range(rank)]
            p = _op("reshape", p, shape=shape)
        y = _op(combine, y, p)
    return y


def _attention(node: Call) -> Expr | None:
    q, k, v, *mask = node.args
    features = q.ty.shape[-1]
    scale = node.attrs["scale"]
    if scale is None:
        if not isinstance(features, int):
            return None  # 1/sqrt(E) of a symbolic E: leave the op to the backend
        scale = 1.0 / math.sqrt(features)
    axes = list(range(len(k.ty.shape)))
    axes[-2:] = axes[-1], axes[-2]
    scores = _op("multiply", _op("matmul", q, _op("permute_dims", k, axes=axes)), _scalar(scale, q))
    keep: Expr | None = None
    if mask and mask[0].ty.dtype is DType.bool:
        keep = mask[0]
    elif mask:
        scores = _op("add", scores, mask[0])
    if node.attrs["is_causal"]:
        shape = [q.ty.shape[-2], k.ty.shape[-2]]
        causal = _op("tril", _op("ones", shape=shape, dtype=DType.bool))
        keep = causal if keep is None else _op("logical_and", keep, causal)
    if keep is not None:
        scores = _op("where", keep, scores, _scalar(-np.inf, scores))
    return _op("matmul", _op("softmax", scores, axis=-1), v)


def _known_ranks(node: Call, ctx=None) -> bool:
    """Every argument a tensor of known rank (else nothing to build the decomposition on)."""
    return all(isinstance(a.ty, TensorType) and a.ty.shape is not None for a in node.args)


def _rule(name: str, op_name: str, build: Callable[[Call], Expr | None], doc: str) -> Rule:
    return Rule(name, op(op_name, where=_known_ranks), lambda n, ctx: build(n), doc)


RULES = rule_table(
    "decompose-ops",
    _rule("linear-to-matmul", "linear", _linear, "linear(x, W, b) -> matmul(x, W^T) + b"),
    _rule(
        "batch-norm-to-scale-shift",
        "batch_norm",
        _batch_norm,
        "batch_norm(x) -> x * scale + shift, from gamma, beta, mean and var",
    ),
    _rule(
        "layer-norm-to-moments",
        "layer_norm",
        _layer_norm,
        "layer_norm(x) -> (x - mean) * rsqrt(variance + eps) * gamma + beta",
    ),
    _rule(
        "attention-to-softmax",
        "scaled_dot_product_attention",
        _attention,
        "attention(q, k, v) -> softmax(q k^T * scale [+ mask]) v",
    ),
)

DECOMPOSITIONS: dict[str, Callable[[Call], Expr | None]] = {
    "linear": _linear,
    "batch_norm": _batch_norm,
    "layer_norm": _layer_norm,
    "scaled_dot_product_attention": _attention,
}


# Result dtypes in which an op's reference rounds exactly like its decomposition, by op.
_ROUNDS_AS_DECOMPOSED = {
    "linear": LINEAR_ROUNDS_AS_DECOMPOSED,
    "scaled_dot_product_attention": SDPA_ROUNDS_AS_DECOMPOSED,
}


def decompose(call: Call) -> Expr | None:
    """What decompose-ops rewrites `call` into (new nodes over its operands), or None when
    its op has no decomposition."""
    rule = DECOMPOSITIONS.get(call.op)
    return rule(call) if rule is not None else None


def rounds_as_decomposed(op: str, dtype: DType) -> bool:
    """Whether `op` with a result of `dtype` computes, bit for bit, what its decomposition
    computes (each part rounded to `dtype`) wherever the decomposition's value is not NaN
    (attention's query rows with no key left are zeros, NaN in the decomposition): a
    decomposition value without NaN is then the op's, and a tool may compute the op as its
    parts and find their values again after decompose-ops."""
    dtypes = _ROUNDS_AS_DECOMPOSED.get(op)
    return dtypes is not None and dtype.numpy in dtypes


@register_pass
@dataclass(frozen=True)
class DecomposeOps(Pass):
    """Rewrite linear, batch_norm, layer_norm and attention (those in `ops`) into simpler
    ops."""

    name: ClassVar[str] = "decompose-ops"
    ops: tuple[str, ...] = tuple(DECOMPOSITIONS)

    def __post_init__(self):
        ops = (self.ops,) if isinstance(self.ops, str) else tuple(self.ops)
        unknown = [o for o in ops if o not in DECOMPOSITIONS]
        if unknown:
            raise ValueError(
                f"cannot decompose {', '.join(unknown)} (known: {', '.join(DECOMPOSITIONS)})"
            )
        object.__setattr__(self, "ops", ops)

    def transform(self, module: Module, ctx: PassContext) -> Module:
        rules = Rules(self.name, [r for r in RULES if r.pattern.ops & set(self.ops)])
        return rewrite_module(module, lambda name, fn: rules, self.name)
