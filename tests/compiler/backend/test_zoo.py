"""Every model of the torch zoo (tests/compiler/frontend/torch_zoo.py), imported, compiled by
``compiler.build`` and run: the compiled model matches torch eager on the example inputs, and
models exported with dynamic dims run at other sizes too (one build, any size)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from compiler import build
from compiler.frontend import from_torch
from tests.compiler.frontend.torch_zoo import ZOO, _input, _tokens


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out.detach().numpy() if isinstance(out, torch.Tensor) else np.asarray(out)]


def _assert_matches(exe, model, args, label):
    with torch.no_grad():
        want = _flat(model(*args))
    got = exe(*[a.numpy() for a in args])
    assert len(got) == len(want), label
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape, f"{label}: {g.shape} vs {w.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=label)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_compiled_zoo_model_matches_torch(name):
    model, args, dynamic = ZOO[name]()
    exe = build(from_torch(model, args, dynamic_shapes=dynamic))
    _assert_matches(exe, model, args, name)


@pytest.mark.parametrize(
    "name, other_inputs",
    [
        ("dynamic_seq", [(_input(1, 9, 16),), (_input(4, 2, 16),)]),
        ("gpt_dynamic", [(_tokens(1, 3),), (_tokens(3, 15),)]),
    ],
)
def test_a_dynamic_model_built_once_runs_at_other_sizes(name, other_inputs):
    model, args, dynamic = ZOO[name]()
    exe = build(from_torch(model, args, dynamic_shapes=dynamic))
    for inputs in other_inputs:
        _assert_matches(exe, model, inputs, f"{name} at {[tuple(a.shape) for a in inputs]}")
