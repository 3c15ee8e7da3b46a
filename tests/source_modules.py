"""The modules of our four packages as source files, for the tests that read the import graph
from the AST (tests/test_layers.py, tests/test_imports.py, tests/test_private_names.py)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("compiler", "explorer", "widgets", "passlens")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()  # dotted name -> file (a package by its __init__.py)


def known(name: str) -> str | None:
    """The module of ours ``name`` is, or is in (``compiler.ir.nodes.Call`` -> its module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None
