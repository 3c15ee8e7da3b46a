"""One table-driven check for every op: type inference against the value the numpy reference
computes, and the numpy reference against torch.

Each op family has a ``cases_<family>.py`` module with ``CASES: list[OpCase]``;
``test_all_ops.py`` runs them all and fails if a registered op has no case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.interpret import evaluate
from compiler.ir import Call, Constant, Function, Module, TensorType, TupleType, Var
from compiler.ir.types import DType, shape_matches


@dataclass
class OpCase:
    """``op`` applied to ``inputs`` (numpy arrays) with ``attrs``.

    ``reference`` takes the inputs as torch tensors (and the attrs dict) and returns what torch
    computes; None when torch has no counterpart (then ``expected`` may give the numpy answer).
    ``const_inputs`` marks inputs passed as Constants (e.g. a shape tensor) rather than Vars.
    """

    op: str
    inputs: Sequence[np.ndarray]
    attrs: dict = field(default_factory=dict)
    reference: Callable[..., Any] | None = None
    expected: Any | None = None
    rtol: float = 1e-5
    atol: float = 1e-6
    const_inputs: tuple[int, ...] = ()
    id: str = ""

    def label(self) -> str:
        shapes = ",".join("x".join(map(str, a.shape)) or "scalar" for a in self.inputs)
        return self.id or f"{self.op}[{shapes}]"


def build_call(case: OpCase) -> tuple[Call, list[Var], list[np.ndarray]]:
    """The Call node for a case, its Var parameters and the arrays to bind them to."""
    args, params, values = [], [], []
    for i, a in enumerate(case.inputs):
        a = np.asarray(a)
        if i in case.const_inputs:
            args.append(Constant(a))
        else:
            v = Var(f"in{i}", TensorType(a.shape, DType.of(a.dtype)))
            args.append(v)
            params.append(v)
            values.append(a)
    return Call(case.op, args, case.attrs), params, values


def _flatten(value: Any) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _flat_types(ty) -> list:
    if isinstance(ty, TupleType):
        return [x for t in ty.fields for x in _flat_types(t)]
    return [ty]


def check_case(case: OpCase) -> None:
    """Inferred type == computed shape and dtype; computed == torch (or ``expected``)."""
    node, params, values = build_call(case)
    fn = Function.from_output(params, node)
    result = evaluate(Module({"main": fn}), values).outputs
    result = result if isinstance(node.ty, TupleType) else result[0]
    got = _flatten(result)
    types = _flat_types(node.ty)
    assert len(got) == len(types), f"{case.label()}: {len(got)} values for type {node.ty}"
    for g, t in zip(got, types):
        assert isinstance(g, np.ndarray), f"{case.label()}: result is {type(g)}"
        assert isinstance(t, TensorType)
        # a '?' dim (nonzero's count) is known only once computed: any size fits it
        assert t.shape is not None and shape_matches(t.shape, g.shape, {}), (
            f"{case.label()}: inferred {t}, computed {g.shape}"
        )
        assert g.dtype == t.dtype.numpy, f"{case.label()}: inferred {t}, computed {g.dtype}"
    if case.reference is not None:
        import torch

        tin = [torch.from_numpy(np.array(a)) for a in case.inputs]
        ref = case.reference(*tin, **case.attrs) if case.attrs else case.reference(*tin)
        want = [r.numpy() if hasattr(r, "numpy") else np.asarray(r) for r in _flatten(ref)]
    elif case.expected is not None:
        want = [np.asarray(e) for e in _flatten(case.expected)]
    else:
        return
    assert len(want) == len(got), f"{case.label()}: {len(got)} results, reference {len(want)}"
    for g, w in zip(got, want):
        assert g.shape == w.shape, f"{case.label()}: shape {g.shape}, reference {w.shape}"
        if g.dtype.kind in "biu" or g.dtype == np.bool_:
            np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=case.label())
        else:
            np.testing.assert_allclose(
                g.astype(np.float64),
                w.astype(np.float64),
                rtol=case.rtol,
                atol=case.atol,
                err_msg=case.label(),
            )
