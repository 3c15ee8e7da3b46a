"""Every registered op: inferred types match computed values, and values match torch."""

import importlib
import pkgutil

import pytest

import compiler.ops
from compiler.ops import all_ops
from tests.compiler.ops import opcase


def _all_cases():
    cases = []
    pkg = importlib.import_module("tests.compiler.ops")
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("cases_"):
            cases.extend(importlib.import_module(f"tests.compiler.ops.{info.name}").CASES)
    return cases


CASES = _all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label() for c in CASES])
def test_op_case(case):
    opcase.check_case(case)


def test_every_op_has_a_case():
    covered = {c.op for c in CASES}
    from compiler.ops.lazy_params import SIDE_EFFECT_OPS  # tested in test_lazy_params.py

    # call_lowered runs a compiled kernel: tested in tests/compiler/backend/ against the ops
    # it was lowered from
    backend_ops = {"call_lowered"}
    missing = sorted(set(all_ops()) - covered - set(SIDE_EFFECT_OPS) - backend_ops)
    assert not missing, f"ops without an OpCase: {missing}"


def test_every_op_is_documented():
    assert compiler.ops  # imported for registration
    undocumented = sorted(name for name, op in all_ops().items() if not op.doc)
    assert not undocumented
