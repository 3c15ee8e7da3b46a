"""torch calls shared between two runs in one process: a run that makes the very call another
run made (the same ATen op on the same tensors, with the same other arguments) takes that
call's value instead of computing it again.

The check runs the imported IR (with torch's kernels, `compiler.torch_kernels`) and torch's
reference of the same model; where the frontend translated an op as it is, the two make the
same ATen call on the same memory (the weights are views of the model's own, and each value
the two share is the input of the next call), and the same call on the same inputs gives the
same bits. So a call is found again only when everything it reads is the same:

- the op (an `OpOverload`), and each argument in its schema's order, defaults filled in: a
  tensor by its memory (data pointer, shape, strides, dtype), an int, float or bool by type
  and value, a list element by element, a dtype, layout or device as it is. A dim argument
  (`dim`) is taken modulo the first tensor's rank (`mean(x, [-1])` is `mean(x, [2])` of a
  rank-3 `x`); the scale of `scaled_dot_product_attention` left out is `1 / sqrt(E)`, which
  torch computes it as (in double). Whether cuDNN may be used (`cudnn_enable`) is left out:
  every call here runs on the CPU.
- `linear(x, w)` without a bias is `matmul(x, w.t())` (torch's `at::linear` computes it so),
  found under that key; with a bias it is a call of its own (torch fuses the bias, rounding
  otherwise than a matmul and then an add).
- only the ops of `SHAREABLE`: pure computations whose value depends on their inputs alone
  (no random op, no op writing an input, no view);
- torch's thread count when the call was made, which some kernels split work by.

An entry keeps the tensors its call read alive, so no other tensor can take their memory
while it is kept; its value must not be written afterwards (no kernel of the interpreter
writes a value it made, and torch's reference graph is used for sharing only when no op of it
writes its inputs). Drop the `SharedCalls` once the second run is done: it holds every value
the first run computed with torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

SHAREABLE = frozenset(
    {
        "matmul.default",
        "mm.default",
        "bmm.default",
        "linear.default",
        "conv1d.default",
        "conv2d.default",
        "layer_norm.default",
        "group_norm.default",
        "softmax.int",
        "log_softmax.int",
        "scaled_dot_product_attention.default",
        "avg_pool2d.default",
        "max_pool2d.default",
        "adaptive_avg_pool2d.default",
        "mean.dim",
        "sum.dim_IntList",
        "add.Tensor",
        "sub.Tensor",
        "mul.Tensor",
        "div.Tensor",
        "maximum.default",
        "minimum.default",
        "pow.Tensor_Scalar",
        "gelu.default",
        "silu.default",
        "relu.default",
        "sigmoid.default",
        "tanh.default",
        "exp.default",
        "log.default",
        "sqrt.default",
        "rsqrt.default",
        "erf.default",
        "neg.default",
        "abs.default",
        "sin.default",
        "cos.default",
        "reciprocal.default",
        "softplus.default",
        "leaky_relu.default",
    }
)
"""The ATen ops (name.overload) whose calls are shared: pure computations of their inputs."""

_NO_DEFAULT = object()
_SIGNATURES: dict[Any, tuple | None] = {}  # op -> ((name, default), ...), None when not shared
_ACTIVE: ContextVar[SharedCalls | None] = ContextVar("passlens_shared_calls", default=None)


def _signature(op: Any) -> tuple | None:
    """The op's arguments as (name, default) in schema order, or None when it is not shared."""
    try:
        return _SIGNATURES[op]
    except KeyError:
        pass
    sig = None
    schema = getattr(op, "_schema", None)
    if schema is not None and f"{op._opname}.{op._overloadname}" in SHAREABLE:
        if op.namespace == "aten" and not schema.is_mutable:
            sig = tuple(
                (a.name, a.default_value if a.has_default_value() else _NO_DEFAULT)
                for a in schema.arguments
            )
    _SIGNATURES[op] = sig
    return sig


class SharedCalls:
    """The values of the shared torch calls one run made, for another run to take (see the
    module docstring). `call` is the one way in: it gives the value a call made before or
    makes the call and keeps its value."""

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self._tensor_types = (torch.Tensor, torch.nn.Parameter)
        self.threads = torch.get_num_threads()
        # key -> (value, the tensors the call read: kept alive so their memory stays theirs)
        self.entries: dict[tuple, tuple] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self.entries)

    def call(self, op: Any, args: tuple, kwargs: dict | None = None) -> Any:
        """`op(*args, **kwargs)`: the value of the same call made before, or the call made now
        (and its value kept when it is a tensor)."""
        held: list = []
        key = self.key(op, args, kwargs, held)
        if key is not None:
            found = self.entries.get(key)
            if found is not None:
                self.hits += 1
                return found[0]
        out = op(*args, **(kwargs or {}))
        if key is not None and type(out) is self._torch.Tensor:
            self.misses += 1
            self.entries[key] = (out, held)
        return out

    def key(self, op: Any, args: tuple, kwargs: dict | None, held: list) -> tuple | None:
        """What the call reads, or None when it is not shared (an op outside `SHAREABLE`, an
        argument that is not keyed, another thread count); the tensors it reads go to `held`."""
        sig = _signature(op)
        if sig is None or len(args) > len(sig):
            return None
        if self._torch.get_num_threads() != self.threads:
            return None
        if op._opname == "linear":  # torch's linear without a bias is matmul(x, w.t())
            bias = args[2] if len(args) > 2 else (kwargs or {}).get("bias")
            if bias is not None or len(args) < 2 or kwargs:
                return None  # (the fused bias rounds otherwise: a call of its own, not shared)
            w = args[1]
            if type(w) not in self._tensor_types or w.dim() != 2:
                return None
            op = self._torch.ops.aten.matmul.default
            args, kwargs, sig = (args[0], w.t()), None, _signature(op)
            if sig is None:
                return None
        parts: list = [op]
        rank = None
        named = 0  # the keyword arguments read (one the schema has not: the call is not keyed)
        for i, (name, default) in enumerate(sig):
            if i < len(args):
                v = args[i]
            elif kwargs and name in kwargs:
                v = kwargs[name]
                named += 1
            elif default is not _NO_DEFAULT:
                v = default
            else:
                return None
            if i == 0 and type(v) in self._tensor_types:
                rank = v.dim()
            if name in _CPU_IGNORES:
                continue
            if name == "dim" and rank:
                v = _dims_mod(v, rank)
            elif name == "scale" and v is None and op._opname == "scaled_dot_product_attention":
                q = args[0]
                v = 1.0 / math.sqrt(q.shape[-1]) if q.dim() and q.shape[-1] else None
            k = self._part(v, held)
            if k is _UNKEYED:
                return None
            parts.append(k)
        if kwargs and named != len(kwargs):
            return None
        return tuple(parts)

    def _part(self, v: Any, held: list) -> Any:
        t = type(v)
        if t in self._tensor_types:
            strided = v.layout == self._torch.strided
            if v.device.type != "cpu" or not strided or v.is_conj() or v.is_neg():
                return _UNKEYED
            held.append(v)
            return ("t", v.data_ptr(), tuple(v.shape), v.stride(), v.dtype)
        if t is not float and isinstance(v, np.generic) and v.dtype.kind in "biuf":
            v = v.item()  # as torch reads a numpy scalar
            t = type(v)
        if v is None or t is bool or t is int or t is str:
            return (t, v)
        if t is float:
            return _UNKEYED if math.isnan(v) else (t, v)
        if isinstance(v, (list, tuple)):  # (torch.fx's immutable_list too)
            out = []
            for x in v:
                k = self._part(x, held)
                if k is _UNKEYED:
                    return _UNKEYED
                out.append(k)
            return ("l", *out)
        torch = self._torch
        if t is torch.dtype or t is torch.layout or t is torch.device or t is torch.memory_format:
            return (t, v)
        return _UNKEYED


_UNKEYED = object()
_CPU_IGNORES = frozenset({"cudnn_enable", "cudnn_enabled"})  # (what only a CUDA kernel reads)


def _dims_mod(v: Any, rank: int) -> Any:
    if type(v) is int:
        return v % rank
    if isinstance(v, (list, tuple)) and all(type(d) is int for d in v):
        return [d % rank for d in v]
    return v


@contextmanager
def sharing_calls(calls: SharedCalls | None) -> Iterator[SharedCalls | None]:
    """The torch kernels' shared calls go to (and come from) `calls` within the block (none
    when None)."""
    token = _ACTIVE.set(calls)
    try:
        yield calls
    finally:
        _ACTIVE.reset(token)


def shared_call(op: Any, *args: Any, **kwargs: Any) -> Any:
    """`op(*args, **kwargs)` (an ATen `OpOverload`), through the shared calls of the block
    `sharing_calls` opened, if any."""
    calls = _ACTIVE.get()
    if calls is None:
        return op(*args, **kwargs)
    return calls.call(op, args, kwargs)


def sharing() -> bool:
    """Whether the calls made now are shared (a kernel must then not write a value it got)."""
    return _ACTIVE.get() is not None
