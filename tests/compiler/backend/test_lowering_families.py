"""One family name per op in the backend (issue #40): an op's family is the compiler/ops module
that defines it, and its lowering rule is defined in compiler/backend/lower_<family>.py. A
family is found by running each module of compiler/ops again against an empty op registry
(the ops it defines are its family's); the rules are those of ``LOWERINGS``."""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import compiler.ops
from compiler.backend.lowering import LOWERINGS
from compiler.ir import op_registry


def _families(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The family (compiler/ops module name) of every registered op."""
    family: dict[str, str] = {}
    for info in pkgutil.iter_modules(compiler.ops.__path__):
        module = importlib.import_module(f"compiler.ops.{info.name}")
        if module.__file__ is None or not module.__file__.endswith(".py"):
            continue
        with monkeypatch.context() as m:
            fresh: dict = {}
            m.setattr(op_registry, "_REGISTRY", fresh)
            copy = types.ModuleType(module.__name__)
            copy.__file__ = module.__file__
            with open(module.__file__) as f:
                exec(compile(f.read(), module.__file__, "exec"), copy.__dict__)
        for op in fresh:
            family[op] = info.name
    return family


@pytest.fixture(scope="module")
def families():
    with pytest.MonkeyPatch.context() as m:
        return _families(m)


def test_every_op_has_one_family(families):
    assert set(families) == set(op_registry.all_ops())


def test_every_lowering_is_defined_in_the_backend_module_of_its_family(families):
    bad = {
        op: f"{rule.__module__} (family {families.get(op)})"
        for op, rule in LOWERINGS.items()
        if rule.__module__ != f"compiler.backend.lower_{families.get(op)}"
    }
    assert bad == {}


def test_every_lower_module_is_named_after_a_family(families):
    import compiler.backend as backend

    lower = {
        info.name.removeprefix("lower_")
        for info in pkgutil.iter_modules(backend.__path__)
        if info.name.startswith("lower_")
    }
    assert lower and lower <= set(families.values())
