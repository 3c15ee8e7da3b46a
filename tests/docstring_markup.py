"""reStructuredText markup in the docstrings ``help()`` shows (issue 45): ``help(explorer)`` in
a plain REPL prints docstrings as they are, so double-backtick literals and ``:func:`` roles read
as noise. The public API's docstrings use one plain style instead: code in single backticks
(`pipeline`, `explorer.explore`), no roles.

The scope (``scope()``): every module of explorer/, widgets/ and passlens/ and compiler's packages (the
``__init__`` of compiler and of each of its subpackages: their public names), as
``pydoc.render_doc`` renders them, that is what ``help(module)`` prints, with the classes and
functions it lists. ``tests/test_docstring_markup.py`` checks it; this converts the docstrings
themselves (only docstrings, found with ``ast``, so no string literal of the code changes):

    PYTHONPATH=. .venv/bin/python -m tests.docstring_markup --write

in explorer/, widgets/ and passlens/ every docstring, in compiler/ the files that define what its
packages' ``help()`` shows. ``:role:`~a.b.c``` becomes `a.b.c`, ``:role:`text <target>``` `text`,
a double-backticked literal a single-backticked one.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import pydoc
import re
import sys
from pathlib import Path

from tests.source_modules import MODULES, ROOT

#: a role (``:func:`x```, ``:py:class:`x```) or a double-backtick literal
MARKUP = re.compile(r"``|:[a-z]+(?::[a-z]+)?:`")
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^`>]*>)?`")
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def plain(text: str) -> str:
    """``text`` with roles and double-backtick literals in the single-backtick style."""
    return _LITERAL.sub(lambda m: f"`{m.group(1)}`", _ROLE.sub(lambda m: f"`{m.group(1)}`", text))


def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def scope() -> list[str]:
    """The modules whose ``help()`` text is checked (see the module docstring)."""
    out = []
    for name, path in MODULES.items():
        top = name.split(".")[0]
        if not _public(name):
            continue
        if top in ("explorer", "passlens", "widgets") or (top == "compiler" and path.name == "__init__.py"):
            out.append(name)
    return out


def help_text(name: str) -> str:
    """What ``help(module)`` prints for module ``name``."""
    return pydoc.render_doc(importlib.import_module(name), renderer=pydoc.plaintext)


#: a help() section listing what a class inherits: pydoc prints the base's docstrings there
_INHERITED = re.compile(r"^\s*\|?\s*[\w ]+ inherited from ([\w.]+):")
_OURS = ("explorer.", "passlens.", "widgets.", "compiler.")


def own_lines(text: str) -> list[str]:
    """The lines of help text ``text`` but those of what a class inherits from a base outside
    passlens (an ipywidgets widget's traitlets docstrings are not ours to write)."""
    out, skipping = [], False
    for line in text.splitlines():
        m = _INHERITED.match(line)
        if m:
            skipping = not m.group(1).startswith(_OURS)
            continue
        bar = line.strip(" |")
        if skipping and len(bar) >= 70 and set(bar) == {"-"}:  # pydoc's rule ends the section
            skipping = False
            continue
        if not skipping:
            out.append(line)
    return out


def problems() -> list[str]:
    """One line per module of ``scope()`` whose help text has markup: the module and the first
    lines that do."""
    out = []
    for name in scope():
        lines = [line.strip() for line in own_lines(help_text(name)) if MARKUP.search(line)]
        if lines:
            out.append(f"{name}: {len(lines)} line(s), e.g. {lines[0][:120]!r}")
    return out


def _shown_files(name: str) -> set[Path]:
    """The source files of what ``help()`` of package ``name`` lists: the package, and each
    class (its bases of ours too) and function of its public names."""
    mod = importlib.import_module(name)
    files = {Path(mod.__file__).resolve()}
    names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
    for n in names:
        obj = getattr(mod, n, None)
        if inspect.ismodule(obj):
            continue
        if not inspect.isclass(obj) and callable(obj):
            obj = inspect.unwrap(obj)  # a decorated function: the file that defines it
        for cls in inspect.getmro(obj) if inspect.isclass(obj) else (obj,):
            try:
                path = Path(inspect.getsourcefile(cls) or "").resolve()
            except TypeError:
                continue
            if path.is_relative_to(ROOT):
                files.add(path)
    return files


def files_to_convert() -> list[Path]:
    """explorer/, widgets/ and passlens/ whole; in compiler/ the files its packages' help shows."""
    files: set[Path] = set()
    for name in scope():
        if name.startswith("compiler"):
            files |= _shown_files(name)
        else:
            files.add(MODULES[name].resolve())
    for name, path in MODULES.items():  # private modules of explorer/ and passlens/ too
        if name.split(".")[0] in ("explorer", "passlens", "widgets"):
            files.add(path.resolve())
    return sorted(f for f in files if f.suffix == ".py")


def convert_source(source: str) -> str:
    """``source`` with ``plain`` applied to every docstring (module, class, function)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if not body or not isinstance(body[0], ast.Expr):
            continue
        const = body[0].value
        if not (isinstance(const, ast.Constant) and isinstance(const.value, str)):
            continue
        # ast's columns are UTF-8 byte offsets: convert them on the line's bytes
        a = starts[const.lineno - 1] + _chars(lines[const.lineno - 1], const.col_offset)
        b = starts[const.end_lineno - 1] + _chars(lines[const.end_lineno - 1], const.end_col_offset)
        spans.append((a, b))
    for a, b in sorted(spans, reverse=True):
        source = source[:a] + plain(source[a:b]) + source[b:]
    return source


def _chars(line: str, byte_offset: int) -> int:
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8"))


def write() -> list[Path]:
    """Convert the docstrings of ``files_to_convert()``; the files changed."""
    changed = []
    for path in files_to_convert():
        old = path.read_text(encoding="utf-8")
        new = convert_source(old)
        if new != old:
            assert ast.dump(ast.parse(new)).count("Constant") == ast.dump(ast.parse(old)).count(
                "Constant"
            )
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="convert the docstrings in place")
    args = parser.parse_args(argv)
    if args.write:
        for path in write():
            print(path.relative_to(ROOT))
    found = problems()
    print("\n".join(found) or "no markup in the help text of the public API")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
