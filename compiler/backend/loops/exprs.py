"""The loop IR's expressions: scalar values over buffers (constants, variables, loads,
arithmetic), built with folding of constants and trivial identities, walked and printed.

Everything here is an immutable value; `str(e)` is an expression's infix text. Statements
and kernels, which hold expressions, are in `compiler.backend.loops.stmts`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.ir.symbolic import ANY, SymExpr
from compiler.ir.types import DType

INDEX = DType.int64  # loop variables, dims and index arithmetic

# ----- expressions ------------------------------------------------------------------------


class Expr:
    """A scalar expression of the loop IR; `dtype` is its element type."""

    __slots__ = ()
    dtype: DType

    # Arithmetic builds folded expressions: python numbers become constants of the other
    # operand's dtype, so `i * 4 + 1` works on index expressions.
    def __add__(self, other):
        return binary("add", self, other)

    def __radd__(self, other):
        return binary("add", other, self)

    def __sub__(self, other):
        return binary("sub", self, other)

    def __rsub__(self, other):
        return binary("sub", other, self)

    def __mul__(self, other):
        return binary("mul", self, other)

    def __rmul__(self, other):
        return binary("mul", other, self)

    def __truediv__(self, other):
        return binary("div", self, other)

    def __rtruediv__(self, other):
        return binary("div", other, self)

    def __floordiv__(self, other):
        return binary("floordiv", self, other)

    def __mod__(self, other):
        return binary("floormod", self, other)

    def __neg__(self):
        return unary("neg", self)

    def __str__(self) -> str:
        return format_expr(self)


@dataclass(frozen=True, slots=True, eq=True)
class Const(Expr):
    """A literal of `dtype` (a Python int, float or bool)."""

    value: int | float | bool
    dtype: DType

    def __post_init__(self):
        v = self.value
        if self.dtype is DType.bool:
            v = bool(v)
        elif self.dtype.is_float:
            v = float(v)
        else:
            v = int(v)
        object.__setattr__(self, "value", v)

    def __eq__(self, other) -> bool:  # 0.0 and -0.0 differ, nan equals nan: compare reprs
        return (
            isinstance(other, Const)
            and self.dtype is other.dtype
            and repr(self.value) == repr(other.value)
        )

    def __hash__(self) -> int:
        return hash((repr(self.value), self.dtype))


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A scalar variable: a loop index, a `let` value, or a symbolic dim (an i64 argument)."""

    name: str
    dtype: DType = INDEX


@dataclass(frozen=True, slots=True)
class Buffer:
    """A row-major, contiguous array a kernel reads or writes.

    `role`: `in` (an argument), `out` (the result), `work` (a workspace the runtime
    allocates for one call) or `local` (a scalar accumulator living in registers).
    """

    name: str
    shape: tuple[Expr, ...]
    dtype: DType
    role: str = "in"

    def __post_init__(self):
        if self.role not in ("in", "out", "work", "local"):
            raise ValueError(f"unknown buffer role {self.role!r}")
        object.__setattr__(self, "shape", tuple(as_expr(d) for d in self.shape))

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.shape)

    def __getitem__(self, indices) -> Load:
        if not isinstance(indices, tuple):
            indices = (indices,)
        return Load(self, tuple(as_expr(i) for i in indices))

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """The element of `buffer` at `indices` (one i64 expression per dim)."""

    buffer: Buffer
    indices: tuple[Expr, ...]

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(as_expr(i) for i in self.indices))
        if len(self.indices) != self.buffer.ndim:
            raise ValueError(
                f"{self.buffer} has {self.buffer.ndim} dims, indexed with {len(self.indices)}"
            )

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.buffer.dtype


# Binary ops. Integer "div" truncates toward zero (C); "floordiv" / "floormod" floor (Python).
ARITH = ("add", "sub", "mul", "div", "floordiv", "floormod", "min", "max", "pow")
BITWISE = ("and", "or", "xor")
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
# Unary math (``Math``): each is elementwise on its dtype; float-only ones say so.
MATH_FLOAT = (
    "exp", "log", "sqrt", "tanh", "erf", "sin", "cos", "floor", "ceil", "round", "log1p",
    "expm1", "isnan",
)  # fmt: skip
MATH_ANY = ("neg", "abs", "not")


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    """`a op b` for arithmetic (`ARITH`) and bitwise / logical (`BITWISE`) ops."""

    op: str
    a: Expr
    b: Expr

    def __post_init__(self):
        if self.op not in ARITH + BITWISE:
            raise ValueError(f"unknown binary op {self.op!r}")
        if self.a.dtype is not self.b.dtype:
            raise TypeError(f"{self.op} of {self.a.dtype} and {self.b.dtype}: insert a cast")

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.a.dtype


@dataclass(frozen=True, slots=True)
class Compare(Expr):
    """`a op b` (`COMPARE`), a bool; floats compare as IEEE (nan is unordered)."""

    op: str
    a: Expr
    b: Expr

    def __post_init__(self):
        if self.op not in COMPARE:
            raise ValueError(f"unknown comparison {self.op!r}")
        if self.a.dtype is not self.b.dtype:
            raise TypeError(f"{self.op} of {self.a.dtype} and {self.b.dtype}: insert a cast")

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return DType.bool


@dataclass(frozen=True, slots=True)
class Math(Expr):
    """A unary math function of a scalar (`MATH_FLOAT`, `MATH_ANY`); `isnan`
    gives a bool, the others the operand's dtype."""

    fn: str
    x: Expr

    def __post_init__(self):
        if self.fn in MATH_FLOAT:
            if not self.x.dtype.is_float:
                raise TypeError(f"{self.fn} needs a float operand, got {self.x.dtype}")
        elif self.fn not in MATH_ANY:
            raise ValueError(f"unknown math function {self.fn!r}")

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return DType.bool if self.fn == "isnan" else self.x.dtype


@dataclass(frozen=True, slots=True)
class Select(Expr):
    """`cond ? a : b` (both sides evaluated; no side effects exist to skip)."""

    cond: Expr
    a: Expr
    b: Expr

    def __post_init__(self):
        if self.cond.dtype is not DType.bool:
            raise TypeError(f"select needs a bool condition, got {self.cond.dtype}")
        if self.a.dtype is not self.b.dtype:
            raise TypeError(f"select of {self.a.dtype} and {self.b.dtype}: insert a cast")

    @property
    def dtype(self) -> DType:  # type: ignore[override]
        return self.a.dtype


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """`value` converted to `dtype` (floats to ints truncate toward zero, saturating)."""

    dtype: DType
    value: Expr


@dataclass(frozen=True, slots=True)
class Bitcast(Expr):
    """The bits of `value` read as `dtype`, a type of the same width (bool as a byte)."""

    dtype: DType
    value: Expr


# ----- building expressions (with folding of constants and trivial identities) -------------


def as_expr(value: Any, dtype: DType | None = None) -> Expr:
    """`value` as an expression: an Expr as is, a Python number as a Const (of `dtype`,
    default i64 for ints and f32 for floats), a symbolic dim as an expression of its symbols."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, SymExpr):
        return sym_expr(value)
    if value is ANY:
        raise ValueError("an unknown dimension ('?') cannot be lowered; its size must be known")
    if isinstance(value, bool):
        return Const(value, dtype or DType.bool)
    if isinstance(value, int):
        return Const(value, dtype or INDEX)
    if isinstance(value, float):
        return Const(value, dtype or DType.float32)
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return as_expr(value.item(), dtype)
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"cannot use {value!r} in a loop expression")


def sym_expr(e: SymExpr) -> Expr:
    """A symbolic dim (`2*n + 1`, `n // 2`) as an i64 expression of dim variables."""
    total: Expr = Const(0, INDEX)
    for mono, coeff in e._terms:
        term: Expr = Const(coeff, INDEX)
        for atom, power in mono:
            a = _atom_expr(atom)
            for _ in range(power):
                term = term * a
        total = total + term
    return total


def _atom_expr(atom) -> Expr:
    if isinstance(atom, str):
        return Var(atom, INDEX)
    kind, inner, divisor = atom
    inner_e = as_expr(inner)
    return inner_e // divisor if kind == "floordiv" else inner_e % divisor


def const_value(e: Expr) -> int | float | bool | None:
    """The value of a constant expression, else None."""
    return e.value if isinstance(e, Const) else None


def _coerce(a: Any, b: Any) -> tuple[Expr, Expr]:
    if isinstance(a, Expr) and not isinstance(b, Expr):
        return a, as_expr(b, a.dtype)
    if isinstance(b, Expr) and not isinstance(a, Expr):
        return as_expr(a, b.dtype), b
    return as_expr(a), as_expr(b)


def fold_int(op: str, x: int, y: int) -> int | None:
    """The integer binary loop-IR op `op` on constants (division truncating toward zero, as
    the generated code does), or None where it cannot be folded (a division by 0)."""
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "mul":
        return x * y
    if op == "min":
        return min(x, y)
    if op == "max":
        return max(x, y)
    if y == 0:
        return None
    if op == "floordiv":
        return x // y
    if op == "floormod":
        return x % y
    if op == "div":
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    return None


def binary(op: str, a: Any, b: Any) -> Expr:
    """`a op b`, folding integer constants and identities (`x + 0`, `x * 1`, ...)."""
    a, b = _coerce(a, b)
    ca, cb = const_value(a), const_value(b)
    is_int = a.dtype.is_int
    if is_int and isinstance(ca, int) and isinstance(cb, int) and op in ARITH:
        folded = fold_int(op, ca, cb)
        if folded is not None:
            return Const(folded, a.dtype)
    if is_int:
        if op == "add":
            if ca == 0:
                return b
            if cb == 0:
                return a
        if op == "sub" and cb == 0:
            return a
        if op == "mul":
            if ca == 1:
                return b
            if cb == 1:
                return a
            if ca == 0 or cb == 0:
                return Const(0, a.dtype)
        if op in ("floordiv", "div") and cb == 1:
            return a
        if op == "floormod" and cb == 1:
            return Const(0, a.dtype)
    return Binary(op, a, b)


def compare(op: str, a: Any, b: Any) -> Expr:
    """`a op b` as a bool expression (folded for integer constants)."""
    a, b = _coerce(a, b)
    ca, cb = const_value(a), const_value(b)
    if a.dtype.is_int and isinstance(ca, int) and isinstance(cb, int):
        result = {"eq": ca == cb, "ne": ca != cb, "lt": ca < cb, "le": ca <= cb,
                  "gt": ca > cb, "ge": ca >= cb}[op]  # fmt: skip
        return Const(result, DType.bool)
    return Compare(op, a, b)


def unary(fn: str, x: Any) -> Expr:
    """A `Math` function of `x` (negation of an int constant folds)."""
    x = as_expr(x)
    if fn == "neg" and x.dtype.is_int and isinstance(const_value(x), int):
        return Const(-const_value(x), x.dtype)
    return Math(fn, x)


def select(cond: Expr, a: Any, b: Any) -> Expr:
    """`cond ? a : b` (folded for a constant condition or equal sides)."""
    a, b = _coerce(a, b)
    c = const_value(cond)
    if c is not None:
        return a if c else b
    if a == b:
        return a
    return Select(cond, a, b)


def logical_and(a: Expr, b: Expr) -> Expr:
    """`a and b` of bools (folded for constants)."""
    if const_value(a) is True:
        return b
    if const_value(b) is True:
        return a
    if const_value(a) is False or const_value(b) is False:
        return Const(False, DType.bool)
    return Binary("and", a, b)


def cast(dtype: DType, x: Expr) -> Expr:
    """`x` as `dtype` (no-op when it already is; integer constants fold)."""
    if x.dtype is dtype:
        return x
    if isinstance(x, Const) and dtype is not DType.bool and not x.dtype.is_float:
        if dtype.is_float or dtype.is_int and x.dtype is not DType.bool:
            return Const(x.value, dtype)
    return Cast(dtype, x)


def minimum(a: Any, b: Any) -> Expr:
    """`min(a, b)`."""
    return binary("min", a, b)


def maximum(a: Any, b: Any) -> Expr:
    """`max(a, b)`."""
    return binary("max", a, b)


def product(dims: Sequence[Any]) -> Expr:
    """The product of dims as an i64 expression (folded)."""
    out: Expr = Const(1, INDEX)
    for d in dims:
        out = out * as_expr(d)
    return out


def static_int(e: Any) -> int | None:
    """The int value of a dim or index expression when it is a constant, else None."""
    if isinstance(e, int) and not isinstance(e, bool):
        return e
    if isinstance(e, Const) and e.dtype.is_int:
        return int(e.value)
    return None


# ----- traversal ----------------------------------------------------------------------------


def expr_children(e: Expr) -> tuple[Expr, ...]:
    """The operands of an expression."""
    if isinstance(e, Load):
        return e.indices
    if isinstance(e, (Binary, Compare)):
        return (e.a, e.b)
    if isinstance(e, Math):
        return (e.x,)
    if isinstance(e, Select):
        return (e.cond, e.a, e.b)
    if isinstance(e, (Cast, Bitcast)):
        return (e.value,)
    return ()


def walk_expr(e: Expr) -> Iterator[Expr]:
    """Every distinct sub-expression object of `e` (pre-order; a shared one once)."""
    stack, seen = [e], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        stack.extend(reversed(expr_children(x)))


def postorder(e: Expr, done: dict, leaf: Callable[[Expr], bool] = lambda x: False):
    """The nodes of `e` not yet in `done` (by id), each once, operands first; a `leaf`
    node's operands are not visited. The caller puts each node it is given into `done`.
    The walk keeps its own stack: an expression's depth is not limited by Python's recursion
    limit."""
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        x, operands_done = stack.pop()
        if id(x) in done:
            continue
        operands = () if leaf(x) else expr_children(x)
        if operands and not operands_done:
            stack.append((x, True))
            stack.extend((o, False) for o in operands)
            continue
        yield x


def map_expr(e: Expr, fn: Callable[[Expr], Expr | None], memo: dict | None = None) -> Expr:
    """`e` rebuilt bottom-up, each node replaced by `fn(node)` when that is not None.
    A sub-expression shared by several parents is rebuilt once and stays shared; any depth."""
    memo = {} if memo is None else memo
    for x in postorder(e, memo):
        new = _rebuild(x, [memo[id(o)] for o in expr_children(x)])
        out = fn(new)
        memo[id(x)] = new if out is None else out
    return memo[id(e)]


def _rebuild(e: Expr, operands: list[Expr]) -> Expr:
    """A node like `e` over new operands (in the order of `expr_children`)."""
    if isinstance(e, Load):
        return Load(e.buffer, tuple(operands))
    if isinstance(e, Binary):
        return Binary(e.op, *operands)
    if isinstance(e, Compare):
        return Compare(e.op, *operands)
    if isinstance(e, Math):
        return Math(e.fn, *operands)
    if isinstance(e, Select):
        return Select(*operands)
    if isinstance(e, Cast):
        return Cast(e.dtype, *operands)
    if isinstance(e, Bitcast):
        return Bitcast(e.dtype, *operands)
    return e


# ----- printing -----------------------------------------------------------------------------

_PREC = {"or": 1, "xor": 2, "and": 3, "cmp": 4, "add": 5, "sub": 5, "mul": 6, "div": 6,
         "floordiv": 6, "floormod": 6}  # fmt: skip
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
           "and": "&&", "or": "||", "xor": "^", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
           "gt": ">", "ge": ">="}  # fmt: skip


def _const_text(c: Const) -> str:
    v = c.value
    if c.dtype is DType.bool:
        return "true" if v else "false"
    if c.dtype.is_float:
        if math.isnan(v):
            text = "nan"
        elif math.isinf(v):
            text = "inf" if v > 0 else "-inf"
        else:
            text = repr(v)
        return text + {"f32": "f", "f16": "h", "bf16": "bf", "f64": ""}[c.dtype.short]
    if c.dtype is INDEX:
        return str(v)
    return f"{v}:{c.dtype.short}"


_ATOM = 10  # the precedence of what never needs parentheses (a name, a call, -x)


def format_expr(e: Expr, parent: int = 0, names: dict[int, str] | None = None) -> str:
    """The text of an expression (infix, with the parentheses its precedence needs);
    `names` gives names for shared sub-expressions printed as `let` lines before; any
    depth (`postorder`)."""
    names = names or {}
    done: dict[int, tuple[str, int]] = {}  # id -> (text, precedence)
    for x in postorder(e, done, leaf=lambda x: id(x) in names):
        if id(x) in names:
            done[id(x)] = (names[id(x)], _ATOM)
        else:
            done[id(x)] = _format_node(x, [done[id(o)] for o in expr_children(x)])
    return _wrap(done[id(e)], parent)


def _wrap(operand: tuple[str, int], parent: int) -> str:
    """An operand's text, in parentheses when it binds less tightly than `parent` needs."""
    text, prec = operand
    return f"({text})" if prec < parent else text


def _format_node(e: Expr, operands: list[tuple[str, int]]) -> tuple[str, int]:
    """The text and precedence of one node, given its operands' (see `format_expr`)."""
    if isinstance(e, Const):
        return _const_text(e), _ATOM
    if isinstance(e, Var):
        return e.name, _ATOM
    if isinstance(e, Load):
        return f"%{e.buffer.name}[{', '.join(t for t, _ in operands)}]", _ATOM
    if isinstance(e, Binary) and e.op in _SYMBOL:
        prec = _PREC[e.op]
        a, b = operands
        return f"{_wrap(a, prec)} {_SYMBOL[e.op]} {_wrap(b, prec + 1)}", prec
    if isinstance(e, Binary):
        (a, _), (b, _) = operands
        return f"{e.op}({a}, {b})", _ATOM
    if isinstance(e, Compare):
        prec = _PREC["cmp"]
        a, b = operands
        return f"{_wrap(a, prec + 1)} {_SYMBOL[e.op]} {_wrap(b, prec + 1)}", prec
    if isinstance(e, Math):
        (x,) = operands
        if e.fn == "neg":
            return f"-{_wrap(x, 9)}", _ATOM
        if e.fn == "not":
            return f"!{_wrap(x, 9)}", _ATOM
        return f"{e.fn}({x[0]})", _ATOM
    if isinstance(e, Select):
        (c, _), (a, _), (b, _) = operands
        return f"select({c}, {a}, {b})", _ATOM
    if isinstance(e, Cast):
        ((v, _),) = operands
        return f"{e.dtype.short}({v})", _ATOM
    if isinstance(e, Bitcast):
        ((v, _),) = operands
        return f"bitcast<{e.dtype.short}>({v})", _ATOM
    raise TypeError(f"cannot print {e!r}")


def format_dims(shape: Sequence[Expr]) -> str:
    """`4, n`: the texts of a shape's dims, comma-separated."""
    return ", ".join(format_expr(d) for d in shape)


def buffer_type(b: Buffer) -> str:
    """`f32[4, n]`: a buffer's dtype and shape."""
    return f"{b.dtype.short}[{format_dims(b.shape)}]"


def shared_subexpressions(roots: Sequence[Expr]) -> list[Expr]:
    """Computed sub-expressions (not constants, variables or loads) that several parents
    share, dependencies first: the printer names them, codegen computes them once."""
    counts: dict[int, int] = {}
    order: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(roots)]
    for r in roots:
        counts[id(r)] = counts.get(id(r), 0) + 1
    seen: set[int] = set()
    while stack:
        e, done = stack.pop()
        if done:
            order.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        for c in expr_children(e):
            counts[id(c)] = counts.get(id(c), 0) + 1
            stack.append((c, False))
    return [e for e in order if counts[id(e)] > 1 and not isinstance(e, (Const, Var, Load))]


def free_vars(e: Expr) -> set[str]:
    """Names of the variables an expression reads."""
    return {x.name for x in walk_expr(e) if isinstance(x, Var)}
