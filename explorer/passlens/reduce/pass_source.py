"""A user's passes written into a reduction's test file, so the file runs where the notebook
that defined them does not.

A pass class its module can be imported from (a file on the path) is imported. One defined in
a notebook cell (`__main__`) or another module that cannot be imported is written from its
source, as Python's line cache holds it (IPython keeps every cell there:
`compiler.passes.definition_source`), without its `register_pass` decorator (the file
names its passes itself: `build_pipeline(spec, classes=PASSES)`), after what it reads:

- a module, or a name its module can be imported from (`Pass`, `dataclass`, `Call`):
  an import;
- a function or class of the same notebook: its source, the same way;
- a plain literal (a number, a string, a tuple of them): an assignment of its `repr`.

Anything else (a pass whose source is not known: made by `exec` of a string; a value such as
a rule table built in a cell) cannot be written honestly: the file lists it in `MISSING` and
says, when run, what to define.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.passes import definition_source

MAX_WRITTEN = 32  # functions and classes written from source into one file
# names the test file defines itself (a user's name written over one would break it)
RESERVED = frozenset(
    {
        "annotations",
        "os",
        "zlib",
        "Path",
        "np",
        "explorer",
        "parse",
        "build_pipeline",
        "KIND",
        "PASS_INDEX",
        "PIPELINE",
        "RTOL",
        "ATOL",
        "FINDING",
        "GENERATED",
        "SAVED",
        "TRUST_OPS",
        "PASSES",
        "MISSING",
        "IR",
        "generated_weight",
        "weights",
        "build_trace",
        "findings",
        "test_the_finding_is_gone",
    }
)


@dataclass
class PassSource:
    """What a test file needs for its user's passes: `text` (imports, then the sources, in
    the order they are needed), `names` (each pass class as the file names it, for
    `PASSES`) and `missing` (what could not be written, in words)."""

    text: str = ""
    names: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def pass_source(classes: Sequence[type]) -> PassSource:
    """The code defining `classes` (see the module docstring)."""
    writer = _Writer()
    out = PassSource()
    for cls in classes:
        line = _import_of_class(cls)
        if line is not None:
            writer.imports[line] = None
            out.names.append(cls.__qualname__)
        elif writer.write(cls):
            out.names.append(cls.__name__)
        else:
            out.missing.append(
                f"{cls.name!r} ({cls.__module__}.{cls.__qualname__}): its source is not known"
            )
    out.missing = list(dict.fromkeys([*out.missing, *writer.missing]))
    parts = [_import_lines(writer.imports)] if writer.imports else []
    parts += writer.blocks
    out.text = "\n\n\n".join(p.rstrip("\n") for p in parts if p.strip())
    return out


class _Writer:
    def __init__(self) -> None:
        self.imports: dict[str, None] = {}  # import lines, in order, once
        self.blocks: list[str] = []  # sources and assignments, each after what it reads
        self.written: dict[int, str] = {}  # id(object) -> its name in the file
        self.missing: list[str] = []

    def write(self, obj: Any) -> bool:
        """Write `obj` (a class or function) from its source, after what it reads; False
        when its source is not known."""
        if id(obj) in self.written:
            return True
        if len(self.written) >= MAX_WRITTEN:
            self.missing.append(f"{obj.__qualname__}: more than {MAX_WRITTEN} definitions")
            return False
        source = _source(obj)
        if source is None:
            return False
        self.written[id(obj)] = obj.__name__
        if obj.__name__ in RESERVED:
            self.missing.append(f"{obj.__name__}: the test file has a name of its own so")
        free, annotation_only = _free_names(ast.parse(source).body[0])
        scope = _globals_of(obj)
        for name in sorted(free):
            self._name(name, scope, obj, name in annotation_only)
        self.blocks.append(source)
        return True

    def _name(self, name: str, scope: dict, reader: Any, annotation: bool) -> None:
        """Make `name`, which `reader` reads, defined in the file."""
        if name not in scope:
            if not annotation and not hasattr(builtins, name):
                self.missing.append(f"{name} (read by {reader.__qualname__}): not found")
            return  # a builtin, or an annotation (the file does not evaluate them)
        value = scope[name]
        if value is reader or id(value) in self.written:
            return
        line = _import_of(value, name)
        if line is not None:
            self.imports[line] = None
        elif (inspect.isfunction(value) or inspect.isclass(value)) and value.__name__ == name:
            if not self.write(value):
                self.missing.append(f"{name} (read by {reader.__qualname__}): no source")
        elif _literal(value):
            self.blocks.append(f"{name} = {value!r}")
        else:
            self.missing.append(
                f"{name} (a {type(value).__name__} {reader.__qualname__} reads): it cannot "
                "be written here"
            )


def _import_lines(lines: dict[str, None]) -> str:
    """The import lines, sorted, the names taken from one module on one line."""
    plain = sorted(line for line in lines if line.startswith("import "))
    names: dict[str, list[str]] = {}
    for line in lines:
        if line.startswith("from "):
            module, _, name = line[len("from ") :].partition(" import ")
            names.setdefault(module, []).append(name)
    froms = [f"from {m} import {', '.join(sorted(set(n)))}" for m, n in sorted(names.items())]
    return "\n".join(plain + froms)


def _source(obj: Any) -> str | None:
    """The source of `obj` without its `register_pass` decorators, dedented, headed by
    where it was written."""
    found = definition_source(obj)
    if found is None:
        return None
    text = textwrap.dedent(found[2])
    place = f"{obj.__module__}.{obj.__qualname__}, from {found[0]}:{found[1]}"
    where = "# " + "".join(c if c.isprintable() else "?" for c in place) + "\n"
    try:
        node = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        return None
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    for d in getattr(node, "decorator_list", []):
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "register_pass":
            drop.update(range(d.lineno - 1, (d.end_lineno or d.lineno)))
    return where + "".join(line for i, line in enumerate(lines) if i not in drop)


def _free_names(node: ast.AST) -> tuple[set[str], set[str]]:
    """The names `node` reads without binding them, and those of them it reads only in
    annotations."""
    loads: set[str] = set()
    bound: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (loads if isinstance(sub.ctx, ast.Load) else bound).add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if sub is not node:
                bound.add(sub.name)
        elif isinstance(sub, ast.arg):
            bound.add(sub.arg)
        elif isinstance(sub, ast.alias):
            bound.add((sub.asname or sub.name).split(".")[0])
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            bound.add(sub.name)
    free = loads - bound
    return free, free - _runtime_names(node)


def _runtime_names(node: ast.AST) -> set[str]:
    """The names `node` reads outside annotations."""
    skip: set[int] = set()
    for sub in ast.walk(node):
        for ann in _annotations(sub):
            skip.update(id(n) for n in ast.walk(ann))
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in skip
    }


def _annotations(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.arg) and node.annotation is not None:
        return [node.annotation]
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        return [node.returns]
    return []


def _globals_of(obj: Any) -> dict:
    """The global names `obj`'s code reads: a function's own, a class's methods'."""
    if inspect.isfunction(obj):
        return obj.__globals__
    for value in vars(obj).values():
        fn = getattr(value, "__func__", getattr(value, "fget", value))
        if inspect.isfunction(fn) and fn.__qualname__.startswith(obj.__qualname__ + "."):
            if fn.__code__.co_filename != "<string>":  # not one dataclass generated
                return fn.__globals__
    module = sys.modules.get(obj.__module__)
    return vars(module) if module is not None else {}


def _importable(module_name: str) -> Any:
    """The module of that name if a fresh process could import it (a file, or built in)."""
    if module_name in ("__main__", "builtins"):
        return None
    module = sys.modules.get(module_name)
    if module is None:
        return None
    if getattr(module, "__file__", None) or module_name in sys.builtin_module_names:
        return module
    return None


def _import_of_class(cls: type) -> str | None:
    """`from module import Name` for a class its module can be imported from."""
    module = _importable(cls.__module__)
    if module is None or "<locals>" in cls.__qualname__:
        return None
    obj: Any = module
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
    if obj is not cls:
        return None
    return f"from {cls.__module__} import {cls.__qualname__.split('.')[0]}"


def _import_of(value: Any, name: str) -> str | None:
    """The import that binds `name` to `value` in a fresh process, if there is one."""
    if inspect.ismodule(value):
        if _importable(value.__name__) is None:
            return None
        if value.__name__ == name:
            return f"import {name}"
        return f"import {value.__name__} as {name}"
    module_name = getattr(value, "__module__", None)
    module = _importable(module_name) if isinstance(module_name, str) else None
    if module is None:
        return None
    if getattr(module, name, None) is value:
        return f"from {module_name} import {name}"
    qualname = getattr(value, "__qualname__", None)
    simple = isinstance(qualname, str) and "." not in qualname
    if simple and getattr(module, qualname, None) is value:
        return f"from {module_name} import {qualname} as {name}"
    return None


def _literal(value: Any, depth: int = 0) -> bool:
    """Whether `value` is a plain literal its `repr` writes back exactly."""
    if depth > 8:
        return False
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        text = repr(value)
    elif isinstance(value, (tuple, list, frozenset, set)):
        if not all(_literal(v, depth + 1) for v in value):
            return False
        text = repr(value)
    elif isinstance(value, dict):
        if not all(_literal(k, depth + 1) and _literal(v, depth + 1) for k, v in value.items()):
            return False
        text = repr(value)
    else:
        return False
    if len(text) > 10_000:
        return False
    try:
        return ast.literal_eval(text) == value
    except (ValueError, SyntaxError):
        return False


__all__ = ["PassSource", "pass_source"]
