"""No ``_private`` name crosses a module boundary (issue #40): a name another module of ours
(compiler/, explorer/, widgets/, passlens/) imports (``from compiler.x import _name``) or reads
(``x._name`` of an imported module) is public, with a docstring, or it lives where it is used.
Read from the source with ``ast``; imports inside functions count. A package's ``__init__`` and
its own modules are one module here only for ``from . import _name`` of the package itself.
tests/ and bench/ may reach a private name (to patch or to probe it).

There are no exceptions: a new violation fails."""

from __future__ import annotations

import ast

import pytest

from tests.source_modules import MODULES, PACKAGES, ROOT


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _source_module(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str | None:
    """The dotted module a from-import reads (relative imports resolved)."""
    if not node.level:
        return node.module
    parts = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if node.level > 1:
        parts = parts[: 1 - node.level]
    base = ".".join(parts)
    return f"{base}.{node.module}" if node.module else base


def private_uses(mod: str, source: str, is_pkg: bool, modules) -> list[tuple[int, str, str]]:
    """(line, defining module, name) for each private name ``mod``'s source takes from another
    module of ``modules``: a from-import of it, or an attribute read on an imported module."""
    tree = ast.parse(source)
    found = []
    aliases: dict[str, str] = {}  # a local name bound to one of our modules
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules:
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom):
            src = _source_module(mod, is_pkg, node)
            if src not in modules:
                continue
            for a in node.names:
                if f"{src}.{a.name}" in modules:  # a submodule, not a name
                    aliases[a.asname or a.name] = f"{src}.{a.name}"
                elif _private(a.name) and src != mod:
                    found.append((node.lineno, src, a.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = ast.unparse(node.value)
            target = aliases.get(base, base if base in modules else None)
            if target is not None and target != mod:
                found.append((node.lineno, target, node.attr))
    return found


def _violations(importers: str) -> list[str]:
    """Each private name a module of the package ``importers`` takes from another of ours."""
    bad = []
    for mod, path in MODULES.items():
        if mod.partition(".")[0] != importers:
            continue
        for line, src, name in private_uses(
            mod, path.read_text(), path.name == "__init__.py", MODULES
        ):
            bad.append(f"{path.relative_to(ROOT)}:{line} takes {src}:{name}")
    return bad


def test_the_scan_covers_every_package():
    assert {m.partition(".")[0] for m in MODULES} == set(PACKAGES)
    assert len(MODULES) > 200


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_takes_a_private_name_of_another(package):
    assert _violations(package) == []


def test_the_scan_sees_private_imports_and_attribute_reads():
    """The scan itself: what it must report and what it must let pass."""
    modules = {"compiler", "compiler.a", "compiler.b", "compiler.pkg", "compiler.pkg.c"}
    source = (
        "from compiler.a import _hidden, public\n"
        "from compiler.b import __version__\n"
        "from . import _own\n"  # a package's private name from inside it: its own module
        "from .c import _sibling\n"
        "import compiler.a as A\n"
        "from compiler import b\n"
        "def f():\n"
        "    from compiler.a import _late\n"
        "    return A._read, b._other, A.fine, self._attr\n"
    )
    got = private_uses("compiler.pkg", source, True, modules)
    assert sorted(got) == [
        (1, "compiler.a", "_hidden"),
        (4, "compiler.pkg.c", "_sibling"),
        (8, "compiler.a", "_late"),
        (9, "compiler.a", "_read"),
        (9, "compiler.b", "_other"),
    ]
