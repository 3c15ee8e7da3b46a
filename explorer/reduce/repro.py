"""What every upstream repro script shares (`reduction.upstream_repro(path)`): a standalone
Python file that needs only the compiler's own package and numpy, for a bug report filed as
it is. Each compiler writes its own script (`explorer.inductor.repro`, `explorer.tvm.repro`);
this module gives them the parts that do not name a compiler:

- `literal`: a string or number as a Python literal that can only be that value (every
  name, text and TVMScript from a model is untrusted: nothing is formatted into code raw);
- `arrays_source`: input values embedded as dtype, shape and base64 of their bytes;
- `pass_definition`: the source of a user's pass (a function, or a class instance a call
  with no arguments makes again) with what it needs: imports of the allowed packages, literal
  constants, the user's helpers' sources;
- `DIFFERENCE_SOURCE`: the comparison the scripts print (max abs / rel, elements beyond
  `atol + rtol * |want|`, NaN beside NaN and equal infinities equal, as the check judges);
- `write_script`: the file written as a new file and renamed over the name.
"""

from __future__ import annotations

import ast
import base64
import builtins
import functools
import importlib
import inspect
import keyword
import os
import sys
import textwrap
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from explorer.reduce.errors import ReduceError
from explorer.reduce.result import write_new

MAX_EMBEDDED_BYTES = 64 << 20  # input values a script embeds (base64 makes it 4/3 as large)
MAX_DEFINITIONS = 32  # user functions and classes a pass's source pulls in
MAX_LITERAL_CHARS = 100_000  # a module-level constant the pass reads, as a literal
BASE64_LINE = 96
STDLIB = frozenset(sys.stdlib_module_names)


def literal(value: Any) -> str:
    """`value` (a str, bytes, bool, int, float, None, or a tuple / list / dict of them) as
    Python source that evaluates to exactly it: `repr`, checked by parsing it back. A
    string of several lines is written as a triple-quoted block when that reads back the
    same (TVMScript stays readable in the script), else as `repr`. A subclass of str (a
    TVM string) is written as the plain string it holds."""
    if isinstance(value, str) and type(value) is not str:
        value = str.__str__(value)
    if isinstance(value, str) and "\n" in value and _plain(value):
        block = "'''" + value + "'''"
        if _reads_back(block, value):
            return block
    text = repr(value)
    if not _reads_back(text, value):
        raise ReduceError(f"{type(value).__name__} value cannot be written as a literal")
    return text


def _plain(text: str) -> bool:
    """Whether `text` reads the same inside triple quotes: printable, tabs and newlines, no
    backslash (no escape), no carriage return (a file's newlines are translated)."""
    return "\\" not in text and all(c in "\n\t" or c.isprintable() for c in text)


def _reads_back(text: str, value: Any) -> bool:
    try:
        back = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return type(back) is type(value) and back == value


def identifier(name: str) -> bool:
    """Whether `name` can stand in code as it is: a Python identifier, not a keyword, not a
    dunder."""
    return (
        isinstance(name, str)
        and name.isidentifier()
        and not keyword.iskeyword(name)
        and not name.startswith("__")
    )


def dotted(name: str) -> bool:
    """Whether `name` is a dotted path of identifiers (a module's `__name__`)."""
    return isinstance(name, str) and all(identifier(p) for p in name.split("."))


# ----- inputs -------------------------------------------------------------------------------------


def arrays_source(arrays: list[np.ndarray], name: str = "ARGS") -> str:
    """`NAME = [(dtype, shape, base64), ...]` and `load_NAME()` giving the arrays back as
    they were (numeric dtypes only; at most `MAX_EMBEDDED_BYTES` in all)."""
    total = sum(int(np.asarray(a).nbytes) for a in arrays)
    if total > MAX_EMBEDDED_BYTES:
        raise ReduceError(
            f"the inputs take {total} bytes, more than a script embeds "
            f"({MAX_EMBEDDED_BYTES} bytes): reduce further or share the saved inputs.npz"
        )
    rows = []
    for a in arrays:
        a = np.asarray(a)  # not ascontiguousarray: it makes a 0-d array 1-d
        if a.dtype.kind not in "biufc" or a.dtype.fields is not None:
            raise ReduceError(f"an input of dtype {a.dtype} cannot be embedded (numbers only)")
        data = base64.b64encode(a.tobytes(order="C")).decode("ascii")
        chunks = [data[k : k + BASE64_LINE] for k in range(0, len(data), BASE64_LINE)] or [""]
        body = "\n".join(f"        {literal(c)}" for c in chunks)
        shape = literal(tuple(int(d) for d in a.shape))
        rows.append(f"    (\n        {literal(a.dtype.str)},\n        {shape},\n{body},\n    ),")
    listing = "\n".join(rows)
    return f'''{name} = [  # (dtype, shape, base64 of the bytes): the values, exactly
{listing}
]


def load_{name.lower()}():
    """The arrays of {name}, as they were."""
    return [
        np.frombuffer(base64.b64decode(data), dtype=dtype).reshape(shape).copy()
        for dtype, shape, data in {name}
    ]
'''


DIFFERENCE_SOURCE = '''def difference(got, want, rtol, atol):
    """(max abs, max rel, elements beyond atol + rtol * |want|, note) of two lists of arrays;
    NaN beside NaN and equal infinities are equal, a shape or count that differs is inf."""
    if len(got) != len(want):
        return float("inf"), float("inf"), 1, f"{len(got)} output(s), {len(want)} expected"
    worst_abs = worst_rel = 0.0
    beyond = 0
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return float("inf"), float("inf"), 1, f"output {k} is {g.shape}, {w.shape} expected"
        if g.size == 0:
            continue
        g64, w64 = g.astype(np.float64).ravel(), w.astype(np.float64).ravel()
        with np.errstate(invalid="ignore"):
            diff = np.abs(g64 - w64)
        same = (g64 == w64) | (np.isnan(g64) & np.isnan(w64))
        diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
        scale = np.abs(np.nan_to_num(w64))
        beyond += int(np.count_nonzero(diff > atol + rtol * scale))
        worst_abs = max(worst_abs, float(diff.max()))
        worst_rel = max(worst_rel, float((diff / (scale + atol)).max()))
    return worst_abs, worst_rel, beyond, ""


def verdict(pass_name, version, got, want, rtol, atol):
    """Print both outputs' difference and the versions; 1 while they differ, else 0."""
    worst_abs, worst_rel, beyond, note = difference(got, want, rtol, atol)
    print(version)
    print(f"numpy {np.__version__}, Python {sys.version.split()[0]}")
    print(f"pass: {pass_name}")
    print(f"max abs difference: {worst_abs:.6g}, max rel difference: {worst_rel:.6g}")
    if note:
        print(note)
    if beyond:
        print(
            f"BUG REPRODUCED: the pass changes {beyond} element(s) of the result beyond "
            f"atol={atol!r} + rtol={rtol!r} * |expected|"
        )
        return 1
    print("not reproduced: the results agree within tolerance")
    return 0
'''


# ----- a user's pass as source ----------------------------------------------------------------


@dataclass
class PassCode:
    """A pass as source for a script: `imports` (lines), `definitions` (sources, the
    pass's own last) and `make` (an expression that makes the pass object)."""

    imports: list[str] = field(default_factory=list)
    definitions: list[str] = field(default_factory=list)
    make: str = ""

    def import_lines(self) -> str:
        """The imports, one a line (each once)."""
        return "\n".join(dict.fromkeys(self.imports))

    def definitions_source(self) -> str:
        """The definitions, two blank lines apart."""
        return "\n\n\n".join(self.definitions)


def pass_definition(
    obj: Any, packages: tuple[str, ...], what: str, reserved: dict[str, str | None]
) -> PassCode:
    """The source of `obj` (a function, a `functools.partial` of one with literal
    arguments, or an instance of a class that a call with no arguments makes again) and of
    what it reads: modules and names of `packages` and the standard library imported,
    constants as literals, the user's other functions and classes by their source. `what`
    names the pass in errors; `reserved` are the names the script itself defines (a module
    import's name maps to its module, which the pass may use too). Raises
    `ReduceError` saying why when it cannot be done (no source, state a call does not
    make again, a value that is not code or a literal)."""
    code = PassCode()
    collector = _Collector(packages, what, code, reserved)
    if isinstance(obj, functools.partial):
        func = obj.func
        name = collector.define(func)
        args = [literal(a) for a in obj.args] + [
            f"{k}={literal(v)}" for k, v in obj.keywords.items() if identifier(k)
        ]
        if len(args) != len(obj.args) + len(obj.keywords):
            raise ReduceError(f"{what}: a keyword of its partial is not a name")
        code.imports.insert(0, "import functools")
        code.make = f"functools.partial({', '.join([name, *args])})"
    elif inspect.isfunction(obj):
        code.make = collector.define(obj)
    elif inspect.isclass(obj) or inspect.isroutine(obj):
        raise ReduceError(f"{what} is a {type(obj).__name__}, not a function or a pass object")
    else:
        cls = type(obj)
        _check_remade(obj, cls, what)
        code.make = f"{collector.define(cls)}()"
    return code


def _check_remade(obj: Any, cls: type, what: str) -> None:
    """That `cls()` makes `obj` again: no argument needed, the same instance state."""
    try:
        inspect.signature(cls).bind()
    except TypeError:
        raise ReduceError(
            f"{what}: {cls.__name__}() needs arguments, which the script cannot know"
        ) from None
    except ValueError:  # no signature to read (a builtin): the call below says
        pass
    try:
        fresh = cls()
        same = vars(fresh).keys() == vars(obj).keys() and all(
            bool(vars(fresh)[k] == v) for k, v in vars(obj).items()
        )
    except Exception as e:  # noqa: BLE001 (the user's class: any failure means "cannot say")
        raise ReduceError(
            f"{what}: {cls.__name__}() could not be made again to compare its state "
            f"({type(e).__name__}: {str(e)[:200]})"
        ) from None
    if not same:
        raise ReduceError(
            f"{what}: the {cls.__name__} object holds state that {cls.__name__}() does not "
            "make again; the script makes it with no arguments"
        )


class _Collector:
    """Gathers the definitions a pass's source needs, dependencies first."""

    def __init__(self, packages, what: str, code: PassCode, reserved: dict[str, str | None]):
        self.packages = packages
        self.what = what
        self.code = code
        self.reserved = reserved
        self.done: dict[int, str] = {}
        self.names: set[str] = set()

    def define(self, obj: Any) -> str:
        """Add `obj`'s source (after what it reads); returns the name it defines."""
        if id(obj) in self.done:
            return self.done[id(obj)]
        if len(self.done) >= MAX_DEFINITIONS:
            raise ReduceError(f"{self.what}: its source pulls in more than {MAX_DEFINITIONS} defs")
        name = getattr(obj, "__name__", "")
        if name == "<lambda>" or not identifier(name):
            raise ReduceError(
                f"{self.what}: {name!r} is not a named def or class, whose source can be taken"
            )
        try:
            source = textwrap.dedent(inspect.getsource(obj))
        except (OSError, TypeError) as e:
            raise ReduceError(
                f"{self.what}: the source of {name!r} cannot be read ({e}); define it in a "
                "file, or in a notebook cell, so that inspect.getsource finds it"
            ) from None
        try:
            tree = ast.parse(source)
        except SyntaxError:
            raise ReduceError(f"{self.what}: the source of {name!r} does not parse alone") from None
        defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        if len(tree.body) != 1 or defined != [name]:
            raise ReduceError(f"{self.what}: the source read for {name!r} is not its def alone")
        if name in self.reserved or name in self.names:
            raise ReduceError(
                f"{self.what}: its source defines {name!r}, a name the script already uses"
            )
        self.done[id(obj)] = name
        self.names.add(name)
        for free in sorted(_free_names(tree)):
            self.resolve(free, _namespace(obj))
        self.code.definitions.append(source.rstrip("\n"))
        return name

    def resolve(self, name: str, namespace: dict) -> None:
        """Make `name` (read by a definition) exist in the script."""
        value = namespace.get(name, getattr(builtins, name, None))
        if name in self.reserved:
            module = self.reserved[name]
            if isinstance(value, types.ModuleType) and value.__name__ == module:
                return  # the script imports it so already
            raise ReduceError(f"{self.what}: its source reads {name!r}, a name the script uses")
        if not identifier(name):
            if value is not None and value is getattr(builtins, name, None):
                return
            raise ReduceError(f"{self.what}: its source reads {name!r}, which a script cannot set")
        if name in self.names:
            return  # defined already, for another definition
        if name not in namespace:
            if hasattr(builtins, name):
                return
            raise ReduceError(f"{self.what}: its source reads {name!r}, which is not defined")
        value = namespace[name]
        if value is getattr(builtins, name, None):
            return
        if isinstance(value, types.ModuleType):
            self.code.imports.append(self.module_import(name, value.__name__))
        elif inspect.isclass(value) or inspect.isfunction(value) or inspect.isbuiltin(value):
            imported = self.importable(value)
            if imported is not None:
                module, attr = imported
                alias = "" if attr == name else f" as {name}"
                self.code.imports.append(f"from {module} import {attr}{alias}")
            else:
                defined = self.define(value)
                if defined != name:
                    self.names.add(name)
                    self.code.definitions.append(f"{name} = {defined}")
        else:
            try:
                text = literal(value)
            except ReduceError:
                raise ReduceError(
                    f"{self.what}: its source reads {name!r}, a {type(value).__name__} that is "
                    "neither code nor a literal"
                ) from None
            if len(text) > MAX_LITERAL_CHARS:
                raise ReduceError(f"{self.what}: the constant {name!r} is too large to embed")
            self.names.add(name)
            self.code.definitions.append(f"{name} = {text}")

    def allowed(self, module: str) -> bool:
        root = module.split(".")[0]
        return root in self.packages or root in STDLIB

    def module_import(self, name: str, module: str) -> str:
        if not dotted(module) or not self.allowed(module):
            raise ReduceError(
                f"{self.what}: its source uses the module {module!r}, which a standalone "
                f"script cannot import (only {', '.join(self.packages)}, numpy and the "
                "standard library)"
            )
        parent, _, last = module.rpartition(".")
        if name == module:
            return f"import {module}"
        if parent and last == name:
            return f"from {parent} import {last}"
        return f"import {module} as {name}"

    def importable(self, value: Any) -> tuple[str, str] | None:
        """`(module, name)` when `value` is importable from an allowed package by name."""
        module = getattr(value, "__module__", None) or ""
        attr = getattr(value, "__qualname__", "") or getattr(value, "__name__", "")
        if not dotted(module) or not identifier(attr) or not self.allowed(module):
            return None
        try:
            found = getattr(importlib.import_module(module), attr, None)
        except Exception:  # noqa: BLE001 (an import that fails: not importable)
            return None
        return (module, attr) if found is value else None


def _namespace(obj: Any) -> dict:
    """The names `obj`'s source can read: its module's, then its closure's."""
    if inspect.isfunction(obj):
        space = dict(obj.__globals__)
        space.update(inspect.getclosurevars(obj).nonlocals)
        return space
    module = sys.modules.get(getattr(obj, "__module__", ""), None)
    space = dict(vars(module)) if module is not None else {}
    for member in vars(obj).values():
        member = getattr(member, "__func__", getattr(member, "fget", member))
        if inspect.isfunction(member):
            space.update(inspect.getclosurevars(member).nonlocals)
    return space


def _free_names(tree: ast.AST) -> set[str]:
    """The names `tree` reads that it does not bind anywhere (an over-approximation of
    what it binds: a name bound in any scope of it counts as bound)."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            read.update(node.names)
    return read - bound - {"__class__"}


# ----- writing ------------------------------------------------------------------------------------


def write_script(path: str | Path, source: str, default_name: str = "repro.py") -> Path:
    """Write `source` to `path` (into it as `default_name` when it is a folder or ends
    with a slash) as a new
    file renamed over the name; returns the file's path. The source is parsed first: a
    generator's slip is an error here, not in the user's hands."""
    try:
        ast.parse(source)
    except SyntaxError as e:
        raise ReduceError(f"the repro script does not parse ({e})") from None
    out = Path(path)
    if out.is_dir() or str(path).endswith(("/", os.sep)):
        out = out / default_name
    out.parent.mkdir(parents=True, exist_ok=True)
    write_new(out.parent, out.name, source.encode("utf-8"))
    return out


__all__ = [
    "DIFFERENCE_SOURCE",
    "PassCode",
    "arrays_source",
    "dotted",
    "identifier",
    "literal",
    "pass_definition",
    "write_script",
]
