"""Structural equality and hashing of modules, functions and expressions.

Two functions are structurally equal when they have the same parameter types, the same
bindings in the same order (same ops, attributes, annotated types and operand positions) and
the same output; names of bound values and parameters are hints and do not count. Constants
compare by name, dtype, shape and values. Provenance (of nodes, parameters and named
constants) counts only with `provenance=True`.
"""

from __future__ import annotations

import hashlib
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
from compiler.ir.types import is_float_dtype


class _ConstKey:
    """A constant inside a canonical form: equal by name and array contents (bit for bit,
    except that every NaN equals every other NaN, as the text format prints them all `nan`)."""

    __slots__ = ("const", "_hash")

    def __init__(self, const: Constant):
        self.const = const
        data = np.asarray(const.data, order="C")
        if is_float_dtype(data.dtype) and np.isnan(data).any():
            data = np.where(np.isnan(data), np.array(np.nan, data.dtype), data)
        digest = hashlib.blake2b(data.tobytes(), digest_size=8)
        self._hash = hash((const.name, str(const.ty), digest.digest()))

    def __eq__(self, other) -> bool:
        if not isinstance(other, _ConstKey):
            return False
        a, b = self.const, other.const
        if a is b:
            return True
        return (
            a.name == b.name
            and a.ty == b.ty
            and self._hash == other._hash
            and np.array_equal(a.data, b.data, equal_nan=is_float_dtype(a.data.dtype))
        )

    def __hash__(self) -> int:
        return self._hash


class _Canon:
    def __init__(self, provenance: bool):
        self.provenance = provenance
        self.index: dict[int, Any] = {}
        self.consts: dict[int, _ConstKey] = {}

    def ref(self, e: Expr) -> Any:
        if isinstance(e, Constant):
            key = self.consts.get(id(e))
            if key is None:
                key = self.consts[id(e)] = _ConstKey(e)
            # a weight's provenance is part of the text (its `loc`), an inline literal's is not
            weight = self.provenance and e.name is not None
            return ("const", key, e.prov) if weight else ("const", key)
        if id(e) not in self.index:
            return ("free", type(e).__name__, str(e.ty))  # unbound: compare by type only
        return self.index[id(e)]

    def node(self, n: Expr) -> tuple:
        prov = (n.prov,) if self.provenance else ()
        if isinstance(n, Call):
            body = ("call", n.op, tuple(self.ref(a) for a in n.args), n.attrs, n.ty)
        elif isinstance(n, Loop):
            body = ("loop", n.func, tuple(self.ref(a) for a in n.args), n.ty, n.num_carried)
        elif isinstance(n, FuncCall):
            body = ("fcall", n.func, tuple(self.ref(a) for a in n.args), n.ty)
        elif isinstance(n, Tuple):
            body = ("tuple", tuple(self.ref(f) for f in n.fields))
        elif isinstance(n, TupleGetItem):
            body = ("item", self.ref(n.tuple_value), n.index)
        elif isinstance(n, If):
            body = (
                "if",
                self.ref(n.cond),
                self.block(n.then_branch),
                self.block(n.else_branch),
                n.ty,
            )
        else:
            body = ("?", type(n).__name__)
        return body + prov

    def block(self, blk: Block) -> tuple:
        out = []
        for b in blk.bindings:
            out.append(self.node(b))
            self.index[id(b)] = ("b", len(self.index))
        return (tuple(out), self.ref(blk.result))

    def function(self, fn: Function) -> tuple:
        params = []
        for i, p in enumerate(fn.params):
            self.index[id(p)] = ("p", i)
            params.append((p.ty, p.prov) if self.provenance else (p.ty,))
        body = self.block(Block(fn.bindings, fn.output))
        return ("fn", tuple(params), body, fn.attrs)


def canonical_form(obj: Module | Function | Expr, provenance: bool = False) -> tuple:
    """A hashable value equal for structurally equal objects."""
    if isinstance(obj, Module):
        return (
            "module",
            tuple((name, _Canon(provenance).function(fn)) for name, fn in obj.functions.items()),
            obj.attrs,
        )
    if isinstance(obj, Function):
        return _Canon(provenance).function(obj)
    if isinstance(obj, Expr):
        params = sorted(
            {id(v): v for v in _free_vars(obj)}.values(), key=lambda v: (v.name, str(v.ty))
        )
        fn = Function.from_output(params, obj)
        return _Canon(provenance).function(fn)
    raise TypeError(f"cannot compare {type(obj).__name__} structurally")


def _free_vars(e: Expr) -> list[Var]:
    from compiler.ir.nodes import children

    out, seen, stack = [], set(), [e]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, Var):
            out.append(n)
        stack.extend(children(n))
    return out


def structural_equal(a: Any, b: Any, provenance: bool = False) -> bool:
    """Whether two modules / functions / expressions are structurally equal."""
    if a is b:
        return True
    if type(a) is not type(b) and not (isinstance(a, Expr) and isinstance(b, Expr)):
        return False
    return canonical_form(a, provenance) == canonical_form(b, provenance)


def structural_hash(obj: Any, provenance: bool = False) -> int:
    """A hash consistent with `structural_equal`."""
    return hash(canonical_form(obj, provenance))


def assert_structural_equal(actual: Any, expected: Any, provenance: bool = False) -> None:
    """Raise AssertionError showing both texts when the objects differ (for tests)."""
    if structural_equal(actual, expected, provenance):
        return
    import difflib

    from compiler.ir.printer import print_function, print_module

    def text(x):
        if isinstance(x, Module):
            return print_module(x, show_provenance=provenance)
        if isinstance(x, Function):
            return print_function(x, show_provenance=provenance)
        return repr(x)

    diff = "\n".join(
        difflib.unified_diff(
            text(expected).splitlines(),
            text(actual).splitlines(),
            "expected",
            "actual",
            lineterm="",
        )
    )
    raise AssertionError(
        f"modules differ structurally:\n{diff or '(same text; names/values differ)'}"
    )


__all__ = ["structural_equal", "structural_hash", "assert_structural_equal", "canonical_form"]
