"""Shared helpers of the pass tests, in the style of TVM's Before / Expected tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler import passes
from compiler.interpret import run
from compiler.ir import Module, assert_structural_equal, parse, structural_equal


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


@dataclass(frozen=True)
class RuleCase:
    """One rewrite rule of one pass: ``spec`` turns ``before`` into ``expected``, and does
    change it (so the case needs the rule). ``rule`` names the rule (the test id)."""

    spec: str
    rule: str
    before: str
    expected: str
    numbers: bool = False
    provenance: bool = False

    @property
    def id(self) -> str:
        return f"{self.spec}: {self.rule}"


def verify_rule(case: RuleCase) -> Module:
    """:func:`verify_pass` on ``case``, and check the pass had something to do: ``before``
    is not already ``expected`` (a case the pass leaves alone tests no rule)."""
    assert not structural_equal(parse(case.before), parse(case.expected)), (
        f"{case.id}: before is already the expected module"
    )
    return verify_pass(
        case.before,
        case.expected,
        case.spec,
        provenance=case.provenance,
        numbers=case.numbers,
    )


def rule_ids(cases: list[RuleCase]) -> list[str]:
    """Test ids of ``cases``: each must be unique."""
    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids), "two cases test the same rule under one name"
    return ids
