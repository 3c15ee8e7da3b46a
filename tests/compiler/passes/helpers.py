"""Shared helpers of the pass tests, in the style of TVM's Before / Expected tests."""

from __future__ import annotations

import numpy as np

from compiler import passes
from compiler.interpret import run
from compiler.ir import Module, assert_structural_equal, parse


def apply(before: str | Module, spec: str) -> Module:
    """``spec`` run on ``before`` (IR text or a module), verified after each pass; it must
    succeed."""
    module = parse(before) if isinstance(before, str) else before
    result = passes.run(module, spec, verify_each=True)
    assert result.ok, result.failure and result.failure.traceback
    return result.module


def verify_pass(
    before: str,
    expected: str,
    spec: str,
    *,
    provenance: bool = False,
    roundtrip: bool = True,
    numbers: bool = False,
) -> Module:
    """Run ``spec`` on ``before`` and check the result is ``expected`` (structurally, with
    provenance if asked); that it prints and parses back to itself; and, with ``numbers``,
    that it computes what ``before`` does on inputs spread over [-1, 1]."""
    after = apply(before, spec)
    assert_structural_equal(after, parse(expected), provenance=provenance)
    if roundtrip:
        assert_structural_equal(parse(str(after)), after)
    if numbers:
        module = parse(before)
        args = [
            np.linspace(-1, 1, p.ty.numel).reshape(p.ty.shape).astype(np.float32)
            for p in module.main.params
        ]
        np.testing.assert_allclose(run(after, *args)[0], run(module, *args)[0], rtol=1e-6)
    return after
