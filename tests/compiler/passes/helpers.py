"""Shared helpers of the pass tests, in the style of TVM's Before / Expected tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler import passes
from compiler.ir import Module, assert_structural_equal, parse, structural_equal
from compiler.passes.infra import testing


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
    """``compiler.passes.infra.testing.verify_pass`` (the public Before / Expected check), with the
    numbers checked only when a case asks, and then within 1e-6."""
    return testing.verify_pass(
        before,
        expected,
        spec,
        provenance=provenance,
        roundtrip=roundtrip,
        numbers=numbers,
        verify_each=verify_each,
        rtol=1e-6,
    )


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


def before_after(spec: str, before: str, params=None) -> tuple[Module, Module]:
    """``before`` parsed (unverified: a case may hold a wrong annotation) and what ``spec``
    makes of it."""
    module = parse(before, params=params, verify=False)
    result = passes.run(module, spec)
    assert result.ok, result.failure and result.failure.traceback
    return module, result.module


# An opaque op (no converter: run by torch / onnxruntime) is a barrier to every pass: the
# opaque calls the cases of several passes hold.
OPAQUE_CUMSUM = (
    'opaque(%e, framework="torch", target="aten.cumsum.default", args=["%0", 1], '
    'pure=PURE, type="f32[4, 8]")'
)
OPAQUE_ON_CONSTANT = (
    'opaque(const(f32[3], [1.0, 2.0, 3.0]), framework="torch", target="aten.cumsum.default", '
    'args=["%0", 0], pure=true, type="f32[3]")'
)


# ----- the Before/Expected tables of the pass tests -------------------------------------------
# Each pass module compiler/passes/[replicas/]<m>.py has its cases in
# tests/compiler/passes/[replicas/]test_<m>.py as ``CASES`` (RuleCases and KeepCases of the
# passes that module registers), run by the two tests ``case_tests(CASES)`` makes;
# test_pass_rules.py collects them all to check every pass has cases.


def case_tests(cases: list) -> tuple[Any, Any]:
    """``test_rule`` and ``test_guard`` of a test_<pass>.py's ``CASES``: each RuleCase through
    :func:`verify_rule`, each KeepCase through :func:`verify_keep` (``test_guard`` is None
    when there is no KeepCase)."""
    import pytest

    rules = [c for c in cases if isinstance(c, RuleCase)]
    keeps = [c for c in cases if isinstance(c, KeepCase)]
    assert len(rules) + len(keeps) == len(cases), "CASES holds only RuleCases and KeepCases"

    @pytest.mark.parametrize("case", rules, ids=rule_ids(rules))
    def test_rule(case):
        verify_rule(case)

    if not keeps:
        return test_rule, None

    @pytest.mark.parametrize("case", keeps, ids=rule_ids(keeps))
    def test_guard(case):
        verify_keep(case)

    return test_rule, test_guard


def case_module(pass_module: str) -> str:
    """The test module holding the cases of a pass module (``compiler.passes.fold_constant``
    -> ``tests.compiler.passes.test_fold_constant``)."""
    package, _, name = pass_module.rpartition(".")
    return f"tests.{package}.test_{name}"


def collected_cases() -> dict[str, list]:
    """Every pass module's cases: its dotted name -> the ``CASES`` of its test module ([] when
    it has no test module or no CASES)."""
    import importlib
    import importlib.util

    from compiler.passes.infra.library import pass_modules

    out = {}
    for module in pass_modules():
        test_module = case_module(module)
        found = importlib.util.find_spec(test_module) is not None
        cases = getattr(importlib.import_module(test_module), "CASES", []) if found else []
        out[module] = list(cases)
    return out
