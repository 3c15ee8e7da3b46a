"""The calls torch's reference takes from the import's run (`compiler.SharedCalls`): the
check runs the imported module with torch's kernels, then the exported graph op by op; where
the frontend translated an op as it is, the graph's call is the very call the interpreter
made (the same ATen op on the same memory), and its value is taken instead of computed again.
Where the two computed a value in different ways with the same bits (`pow(x, 2)` imported as
`multiply(x, x)`), the graph's value becomes the import's array, so the calls after it are
found again too. Every value the reference holds is one torch's op-by-op run gives: the same
call on the same inputs gives the same bits, and an array replaces a value only when shape,
strides, dtype and every bit are the same."""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler import SharedCalls
from compiler.ir import Function
from explorer.check.numbers import same_memory

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class ImportCalls:
    """What the reference run takes from the import's (see the module docstring): `call` for
    an FX call, `same` for its value; `known` holds the import's arrays by FX node name."""

    def __init__(self, calls: SharedCalls, main: Function, values: dict):
        self.calls = calls
        self.known: dict[str, list[np.ndarray]] = {}
        for node in main.bindings:
            v = values.get(node)
            prov = getattr(node, "prov", None)
            if isinstance(v, np.ndarray) and prov is not None and prov.source_node:
                self.known.setdefault(prov.source_node, []).append(v)
        self.taken = 0  # values the reference took from the import's arrays (`same`)

    def done(self) -> None:
        """Let go of the import's values (the reference keeps those it took)."""
        self.calls.entries.clear()
        self.known.clear()

    def takes(self, graph_module: Any) -> bool:
        """Whether torch's run of `graph_module` may take calls: no op of it writes a value
        it is given (`writes_inputs`)."""
        return not writes_inputs(graph_module)

    def call(self, name: str | None, target: Any, args: tuple, kwargs: dict) -> Any:
        """The value of FX node `name` (None: a part of one), `target(*args, **kwargs)`: the
        import's call, or the call made now, then replaced by the import's array of the same
        bits when it is another (not for a view: it has the memory of what it views)."""
        out = self.calls.call(target, args, kwargs)
        if name is None or name not in self.known or _views(target):
            return out
        # (a call found again is looked at too: the import's run may hand on another array of
        # the same bits, the memo's `same_content`, which the calls after it then read)
        return self.same(name, out)

    def same(self, name: str, out: Any) -> Any:
        """The import's array of FX node `name` with the layout and bits of tensor `out`, as a
        tensor, or `out` itself."""
        import torch

        if type(out) is not torch.Tensor or out.dtype == torch.bfloat16:
            return out
        shape = tuple(out.shape)
        arrays = [a for a in self.known.get(name, ()) if a.shape == shape]
        if not arrays or out.device.type != "cpu":
            return out
        try:
            o = out.numpy()
        except (RuntimeError, TypeError):
            return out
        for a in arrays:
            if a is o or a.dtype != o.dtype or a.strides != o.strides:
                continue
            if same_memory(a, o):
                return out  # the very memory
            if _same_bits(a, o):
                self.taken += 1
                return torch.from_numpy(a)
        return out


PURE_WRAPPERS = ("wrap_with_set_grad_enabled", "wrap_with_autocast")
"""Higher-order ops that only run a subgraph of the program (checked with it)."""


def writes_inputs(graph_module) -> bool:
    """Whether an op of the program (its subgraphs included) may write a value it is given:
    an ATen op whose schema says so, or a higher-order op other than `PURE_WRAPPERS`."""
    import operator

    import torch

    for gm in graph_module.modules():
        graph = getattr(gm, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            continue
        for n in graph.nodes:
            if n.op != "call_function" or n.target is operator.getitem:
                continue
            schema = getattr(n.target, "_schema", None)
            if schema is not None:
                if schema.is_mutable:
                    return True
            elif getattr(n.target, "__module__", None) in ("_operator", "math"):
                continue  # arithmetic on sizes
            elif getattr(n.target, "__name__", None) not in PURE_WRAPPERS:
                return True
    return False


_VIEWS: dict = {}


def _views(target: Any) -> bool:
    """Whether an ATen op's result may be a view of an input (its schema says it aliases)."""
    seen = _VIEWS.get(target)
    if seen is None:
        schema = getattr(target, "_schema", None)
        rets = schema.returns if schema is not None else ()
        seen = _VIEWS[target] = any(r.alias_info is not None for r in rets)
    return seen


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether `a` and `b` (same shape, strides and dtype) hold the same bits (NaN and -0.0
    told apart): a few elements first, then all."""
    u = _UINT.get(a.dtype.itemsize)
    if u is None or a.dtype.hasobject:
        return False
    x, y = a.view(u), b.view(u)
    if a.size > 64 and a.flags.c_contiguous:
        step = a.size // 16
        if not np.array_equal(x.reshape(-1)[::step], y.reshape(-1)[::step]):
            return False
    return bool(np.array_equal(x, y))
