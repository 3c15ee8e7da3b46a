"""The compiler's folders hold what their names say (issue 40), with no exceptions:

- every module of a pass package (compiler/passes/, compiler/passes/replicas/:
  ``compiler.passes.infra.library.PASS_PACKAGES``) registers at least one pass, and every other
  folder in compiler/passes/ is infra/, the machinery, which registers none but the pipeline
  pass ``sequential``;
- every module in compiler/ops/ defines ops (an op family).

The size limits are tests/compiler/test_file_sizes.py's.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import compiler.ops
from compiler import passes
from compiler.ir.op_registry import all_ops
from compiler.passes.infra.library import PASS_PACKAGES, pass_modules

ROOT = Path(__file__).resolve().parents[2]
COMPILER = ROOT / "compiler"


def _modules_under(package) -> set[str]:
    """The dotted names of the modules (not packages) in ``package``, at any depth."""
    return {
        m.name
        for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
        if not m.ispkg
    }


def test_every_pass_module_registers_a_pass():
    registering = {cls.__module__ for cls in passes.all_passes().values()}
    assert sorted(set(pass_modules()) - registering) == []


def test_every_folder_in_passes_is_a_pass_package_or_the_infrastructure():
    folders = {
        f"compiler.passes.{m.name}" for m in pkgutil.iter_modules(passes.__path__) if m.ispkg
    }
    assert folders - set(PASS_PACKAGES) == {"compiler.passes.infra"}
    # a folder inside another pass package would not be discovered
    for package in PASS_PACKAGES[1:]:
        path = importlib.import_module(package).__path__
        assert [m.name for m in pkgutil.iter_modules(path) if m.ispkg] == []


def test_the_infrastructure_registers_no_pass_but_the_pipeline():
    from compiler.passes import infra

    in_infra = {
        name
        for name, cls in passes.all_passes().items()
        if cls.__module__ in _modules_under(infra)
    }
    assert in_infra == {"sequential"}


def test_every_module_in_ops_defines_ops():
    defining = set()
    for op in all_ops().values():
        defining.add(getattr(op.infer, "__module__", None))
        defining.add(getattr(inspect.unwrap(op.compute), "__module__", None))
    assert sorted(_modules_under(compiler.ops) - defining) == []
