"""The text format's printer. `str(module)` prints a module; `parse` reads it back.

    # passlens IR
    weights {
      $fc.weight: f32[512, 128]
      $fc.bias: f32[4] = [0.5, -1, 2, 0]
    }

    def @main(%x: f32[n, 128]) -> f32[n, 512] attrs {num_input = 1} {
      %t: f32[128, 512] = permute_dims($fc.weight, axes=[1, 0])
      %y: f32[n, 512] = matmul(%x, %t)  loc(module="fc", op="aten.linear.default")
      return %y
    }

Every binding shows its type. Weights appear by name and type; small ones (up to
`max_inline` elements) with their values, so a hand-written module is self-contained.
Names of bound values are hints kept on the nodes (`Expr.name`); the printer makes them
unique. Provenance is printed as a `loc(...)` suffix when `show_provenance` is on.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

import numpy as np

from compiler.ir.nodes import (
    Block,
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Tuple,
    TupleGetItem,
    Var,
)
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import ANY, SymExpr
from compiler.ir.types import DType, is_float_dtype

HEADER = "# passlens IR"
_SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_HINT_CHARS = re.compile(r"[^A-Za-z0-9_.]+")


def format_weight_name(name: str) -> str:
    """`$name`, quoted when the name has characters outside `[A-Za-z0-9_.]`."""
    return f"${name}" if _SIMPLE_NAME.match(name) else f"${json.dumps(name)}"


def format_scalar(value: Any, dtype: np.dtype | None = None) -> str:
    """One element as text: shortest round-tripping repr for its dtype."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    f = float(value)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if dtype is not None and is_float_dtype(dtype) and dtype.itemsize < 8:
        text = str(np.asarray(value, dtype=dtype)[()])  # shortest repr for that precision
        if text in ("nan", "inf", "-inf"):
            return text
        return text if any(c in text for c in ".e") else text + ".0"
    return repr(f)


def format_values(arr: np.ndarray) -> str:
    """An array's values as nested lists (a scalar as a bare number)."""
    dtype = arr.dtype

    def rec(x) -> str:
        if x.ndim == 0:
            return format_scalar(x[()], dtype)
        return "[" + ", ".join(rec(x[i]) for i in range(x.shape[0])) + "]"

    return rec(np.asarray(arr))


def format_attr(value: Any) -> str:
    """An attribute value as text."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_scalar(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, DType):
        return value.short
    if value is ANY:
        return "?"
    if isinstance(value, SymExpr):
        return str(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    raise TypeError(f"cannot print attribute value {value!r}")


def format_provenance(prov: Provenance) -> str:
    """` loc(module="...", op="...")` or "" when empty."""
    if prov.is_empty:
        return ""
    return "  loc(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in prov.items()) + ")"


@functools.lru_cache(maxsize=4096)
def _base_name(hint: str) -> str:
    """A name hint as a printable name: other characters become `_`; starts with a letter."""
    base = _HINT_CHARS.sub("_", hint).strip("_.") or "v"
    if not (base[0].isalpha() or base[0] == "_"):
        base = "v" + base
    return base


class Printer:
    """Prints functions and modules; remembers on which line each node was printed."""

    def __init__(self, show_provenance: bool = False, max_inline: int = 32):
        self.show_provenance = show_provenance
        self.max_inline = max_inline
        self.lines: list[str] = []
        # id(node) -> 0-based line index; a Block maps to its `yield` line, a Function to
        # its `return` line
        self.node_lines: dict[int, int] = {}
        self._names: dict[int, str] = {}
        self._used: set[str] = set()
        self._next: dict[str, int] = {}  # base -> the next suffix to try

    # ----- naming -----------------------------------------------------------------------
    def _unique(self, hint: str) -> str:
        # fresh_name(base, self._used), starting from the suffix after the last one given
        # for this base (every one before it is taken), so many values of one op stay linear
        base = _base_name(hint)
        k = self._next.get(base, 0)
        name = base if k == 0 else f"{base}_{k}"
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        self._next[base] = k + 1
        return name

    def name_of(self, node: Expr) -> str:
        """The printed name of a bound node or parameter (assigned on first use)."""
        key = id(node)
        if key not in self._names:
            hint = node.name or _default_hint(node)
            self._names[key] = self._unique(hint)
        return self._names[key]

    def ref(self, node: Expr) -> str:
        """How an operand is written: `%name`, `$weight` or an inline `const(...)`."""
        if isinstance(node, Constant):
            if node.name is not None:
                return format_weight_name(node.name)
            return f"const({node.ty}, {format_values(node.data)})"
        return "%" + self.name_of(node)

    # ----- printing ---------------------------------------------------------------------
    def _emit(self, text: str, node: Expr | None = None) -> None:
        if node is not None:
            self.node_lines[id(node)] = len(self.lines)
        self.lines.append(text)

    def _loc(self, prov: Provenance) -> str:
        return format_provenance(prov) if self.show_provenance else ""

    def rhs(self, node: Expr, indent: str) -> str:
        """The right-hand side of a binding (an If is printed over several lines)."""
        if isinstance(node, Call):
            parts = [self.ref(a) for a in node.args]
            parts += [f"{k}={format_attr(v)}" for k, v in _printed_attrs(node)]
            return f"{node.op}({', '.join(parts)})"
        if isinstance(node, Loop):
            args = ", ".join(self.ref(a) for a in node.args)
            return f"loop @{node.func}({args}, carried={node.num_carried})"
        if isinstance(node, FuncCall):
            return f"call @{node.func}({', '.join(self.ref(a) for a in node.args)})"
        if isinstance(node, Tuple):
            inner = ", ".join(self.ref(f) for f in node.fields)
            return f"({inner},)" if len(node.fields) == 1 else f"({inner})"
        if isinstance(node, TupleGetItem):
            return f"{self.ref(node.tuple_value)}[{node.index}]"
        if isinstance(node, If):
            return f"if {self.ref(node.cond)}"
        if isinstance(node, (Var, Constant)):  # only in a broken function (verifier context)
            return self.ref(node)
        raise TypeError(f"cannot print {type(node).__name__} as a binding")

    def binding(self, node: Expr, indent: str) -> None:
        """Print one binding (and, for an If, its branches)."""
        head = f"{indent}%{self.name_of(node)}: {node.ty} = {self.rhs(node, indent)}"
        if isinstance(node, If):
            self._emit(head + " {", node)
            self.block(node.then_branch, indent + "  ")
            self._emit(f"{indent}}} else {{")
            self.block(node.else_branch, indent + "  ")
            self._emit(f"{indent}}}" + self._loc(node.prov))
        else:
            self._emit(head + self._loc(node.prov), node)

    def block(self, blk: Block, indent: str) -> None:
        """Print a branch's bindings and its `yield`."""
        for b in blk.bindings:
            self.binding(b, indent)
        self.node_lines[id(blk)] = len(self.lines)
        self._emit(f"{indent}yield {self.ref(blk.result)}")

    def function(self, name: str, fn: Function) -> None:
        """Print `def @name(...) -> type attrs {...} { ... }`."""
        self._names, self._used, self._next = {}, set(), {}
        params = []
        for p in fn.params:
            params.append(f"%{self.name_of(p)}: {p.ty}{self._loc(p.prov).rstrip()}")
        attrs = ""
        if len(fn.attrs):
            inner = ", ".join(f"{k} = {format_attr(v)}" for k, v in fn.attrs.items())
            attrs = f" attrs {{{inner}}}"
        self._emit(f"def @{name}({', '.join(params)}) -> {fn.ret_type}{attrs} {{")
        for b in fn.bindings:
            self.binding(b, "  ")
        self.node_lines[id(fn)] = len(self.lines)
        self._emit(f"  return {self.ref(fn.output)}")
        self._emit("}")

    def weights(self, constants: list[Constant]) -> None:
        """Print the `weights { ... }` block."""
        if not constants:
            return
        self._emit("weights {")
        for c in constants:
            line = f"  {format_weight_name(c.name)}: {c.ty}"
            if c.data.size <= self.max_inline:
                line += f" = {format_values(c.data)}"
            self._emit(line + self._loc(c.prov), c)
        self._emit("}")

    def module(self, module: Module) -> None:
        """Print a whole module."""
        self._emit(HEADER)
        self.weights(list(module.constants().values()))
        for name, fn in module.functions.items():
            self._emit("")
            self.function(name, fn)

    def text(self) -> str:
        """Everything printed so far."""
        return "\n".join(self.lines) + "\n"


# an opaque op reads best with what it is first and its long type last; defaults left out
_OPAQUE_ORDER = ("framework", "target", "args", "kwargs", "opset", "outputs", "pure", "type")
_OPAQUE_DEFAULTS = {"kwargs": (), "opset": None, "outputs": None, "pure": False}


def _printed_attrs(node: Call) -> list[tuple[str, Any]]:
    if node.op != "opaque":
        return list(node.attrs.items())
    attrs = node.attrs
    keys = [k for k in _OPAQUE_ORDER if k in attrs] + [k for k in attrs if k not in _OPAQUE_ORDER]
    return [
        (k, attrs[k])
        for k in keys
        if not (k in _OPAQUE_DEFAULTS and attrs[k] == _OPAQUE_DEFAULTS[k] and k != "args")
    ]


def value_names(fn: Function) -> dict[int, str]:
    """The name the printer gives each parameter and bound node of `fn` (by id): the same
    as `Printer.function` assigns, computed without printing (for rewrite records)."""
    names: dict[int, str] = {}
    used: set[str] = set()
    nxt: dict[str, int] = {}
    for node in (*fn.params, *fn.iter_nodes()):
        if id(node) in names:
            continue
        base = _base_name(node.name or _default_hint(node))
        k = nxt.get(base, 0)
        name = base if k == 0 else f"{base}_{k}"
        while name in used:
            k += 1
            name = f"{base}_{k}"
        used.add(name)
        nxt[base] = k + 1
        names[id(node)] = name
    return names


def _default_hint(node: Expr) -> str:
    if isinstance(node, Call):
        return node.op
    if isinstance(node, Loop):
        return "loop"
    if isinstance(node, FuncCall):
        return node.func
    if isinstance(node, Var):
        return node.name
    return {Tuple: "tuple", TupleGetItem: "item", If: "if"}.get(type(node), "v")


def print_module(module: Module, show_provenance: bool = False, max_inline: int = 32) -> str:
    """The text form of a module."""
    p = Printer(show_provenance, max_inline)
    p.module(module)
    return p.text()


# ``str(module)`` is its text. The printer installs it: the nodes cannot import the printer,
# which is built on them (and importing compiler.ir imports this module).
Module.__str__ = print_module


def print_function(
    fn: Function, name: str = "main", show_provenance: bool = False, max_inline: int = 32
) -> str:
    """The text form of one function (weights are referred to by name only)."""
    p = Printer(show_provenance, max_inline)
    p.function(name, fn)
    return p.text()
