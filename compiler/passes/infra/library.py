"""Imports every pass module (registering the passes) and defines the named pipelines. A new
pass only needs its own file.

The rule discovery follows, with no exceptions (tests/compiler/test_structure.py keeps it):
the pass packages are :data:`PASS_PACKAGES`, and every module directly in one of them is a pass
module (it registers at least one pass). A folder inside compiler/passes/ is never a pass
module: ``infra/`` is the machinery passes are built on (the manager, pipelines, rewrites and
rule tables, calling conventions: none of it a pass), and ``replicas/`` is a pass package of
its own (deliberately faulty replicas of real passes), listed here."""

import importlib
import pkgutil

from compiler.passes.infra.pipeline import register_alias, register_pipeline

PASS_PACKAGES = ("compiler.passes", "compiler.passes.replicas")
"""The packages whose every module is a pass module."""


def pass_modules() -> list[str]:
    """The dotted names of the pass modules: every module (not folder) of a pass package."""
    names = []
    for package in PASS_PACKAGES:
        path = importlib.import_module(package).__path__
        names += [f"{package}.{m.name}" for m in pkgutil.iter_modules(path) if not m.ispkg]
    return names


for _name in pass_modules():
    importlib.import_module(_name)

register_alias("normalize", "infer-types")

register_pipeline(
    "default",
    "infer-types,canonicalize-bindings,dynamic-to-static,decompose-ops{ops=[linear,batch_norm]},"
    "fold-constant,dead-code-elimination,fuse-ops",
)
