"""Shared helpers of the pass tests, in the style of TVM's Before / Expected tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler import passes
from compiler.interpret import run
from compiler.ir import Module, assert_structural_equal, parse, structural_equal


def apply(before: str | Module, spec: Any, *, verify_each: bool = True) -> Module:
    """``spec`` (a spec string or a Pass) run on ``before`` (IR text or a module), verified
    after each pass unless ``verify_each`` is false; it must succeed."""
    module = parse(before) if isinstance(before, str) else before
    result = passes.run(module, spec, verify_each=verify_each)
    assert result.ok, result.failure and result.failure.traceback
    return result.module


def verify_pass(
    before: str,
    expected: str,
    spec: Any,
    *,
    provenance: bool = False,
    roundtrip: bool = True,
    numbers: bool = False,
    verify_each: bool = True,
) -> Module:
    """Run ``spec`` on ``before`` and check the result is ``expected`` (structurally, with
    provenance if asked); that it prints and parses back to itself; and, with ``numbers``,
    that it computes what ``before`` does on inputs spread over [-1, 1]. Without
    ``verify_each`` no module is verified (the expected one breaks invariants too)."""
    after = apply(before, spec, verify_each=verify_each)
    assert_structural_equal(after, parse(expected, verify=verify_each), provenance=provenance)
    if roundtrip:
        assert_structural_equal(parse(str(after), verify=verify_each), after)
    if numbers:
        module = parse(before)
        args = [
            np.linspace(-1, 1, p.ty.numel).reshape(p.ty.shape).astype(np.float32)
            for p in module.main.params
        ]
        np.testing.assert_allclose(run(after, *args)[0], run(module, *args)[0], rtol=1e-6)
    return after


def spec_text(spec: Any) -> str:
    """A pipeline spec as text (a Pass object, e.g. bind-params with its values, by its spec)."""
    return spec if isinstance(spec, str) else spec.spec()


def pass_under_test(spec: Any) -> str:
    """The name of the pass a case tests: the first pass of its pipeline (the others only
    tidy up, e.g. dead-code-elimination after canonicalize-bindings)."""
    return passes.build_pipeline(spec).passes[0].name


@dataclass(frozen=True)
class RuleCase:
    """One rewrite rule of one pass: ``spec`` turns ``before`` into ``expected``, and does
    change it (so the case needs the rule). ``rule`` names the rule (the test id).
    ``spec`` is a spec string, or a Pass when its options cannot be written as text
    (bind-params' values). ``verify_each=False`` only for a replica whose output breaks the
    IR's invariants on purpose (the bug it copies)."""

    spec: Any
    rule: str
    before: str
    expected: str
    numbers: bool = False
    provenance: bool = False
    verify_each: bool = True

    @property
    def id(self) -> str:
        return f"{spec_text(self.spec)}: {self.rule}"

    @property
    def pass_name(self) -> str:
        return pass_under_test(self.spec)


@dataclass(frozen=True)
class KeepCase:
    """A guard of one pass: ``spec`` leaves ``before`` as it is (structurally), because
    ``rule`` says why not. Each is a near miss of a :class:`RuleCase` of the same pass, so
    dropping the guard rewrites it and fails the case."""

    spec: Any
    rule: str
    before: str

    @property
    def id(self) -> str:
        return f"{spec_text(self.spec)}: keeps {self.rule}"

    @property
    def pass_name(self) -> str:
        return pass_under_test(self.spec)


def verify_rule(case: RuleCase) -> Module:
    """:func:`verify_pass` on ``case``, and check the pass had something to do: ``before``
    is not already ``expected`` (a case the pass leaves alone tests no rule)."""
    expected = parse(case.expected, verify=case.verify_each)
    assert not structural_equal(parse(case.before), expected), (
        f"{case.id}: before is already the expected module"
    )
    return verify_pass(
        case.before,
        case.expected,
        case.spec,
        provenance=case.provenance,
        numbers=case.numbers,
        verify_each=case.verify_each,
    )


def verify_keep(case: KeepCase) -> Module:
    """Run ``case.spec`` on ``case.before``: it must succeed and change nothing."""
    before = parse(case.before)
    after = apply(before, case.spec)
    assert_structural_equal(after, parse(case.before))
    return after


def rule_ids(cases: list[RuleCase] | list[KeepCase]) -> list[str]:
    """Test ids of ``cases``: each must be unique."""
    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids), "two cases test the same rule under one name"
    return ids
