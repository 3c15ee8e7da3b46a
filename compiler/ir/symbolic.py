"""Symbolic dimensions: named sizes (`n`, `batch`) and simple integer arithmetic on them.

A dimension is an `int`, a `SymExpr`, or `ANY` (a size nobody knows, printed
`?`). Expressions are kept in a canonical polynomial form, so `n + n == 2 * n` and two
equal expressions hash alike; an expression that simplifies to a number *is* that `int`
(`sym("n") - sym("n")` is `0`), which keeps static shapes plain tuples of ints.

Expanding into a polynomial can blow up: `(a0 + b0)*(a1 + b1)*...*(a23 + b23)` has 2**24
terms, written in 200 characters. So an expression's size is capped (`MAX_TERMS`,
`MAX_DEGREE`, `MAX_NESTING`) and an operation whose result would exceed a cap raises
`compiler.errors.LimitError` before it does the work. Real shapes stay far below them.
"""

from __future__ import annotations

from compiler.errors import LimitError

MAX_TERMS = 256
"""The most terms an expression may have, where the terms inside a ``//`` or ``%`` count each
time that atom is written: this bounds the work of every operation and the length of the text."""

MAX_DEGREE = 64
"""The highest degree of a term (``n*n*m`` has degree 3)."""

MAX_NESTING = 32
"""How deep ``//`` and ``%`` may nest (``(n // 2 + 1) // 2`` nests 2 deep): the printer and the
evaluator recurse through the nesting."""

# A monomial is a sorted tuple of (atom, power); an atom is a symbol name (str) or a
# floor-division / modulo of a polynomial by a positive constant, kept opaque.
_Atom = str | tuple
_Monomial = tuple  # tuple[tuple[_Atom, int], ...]


class _AnyDim:
    """A dimension whose size is unknown (printed `?`)."""

    _instance = None
    __slots__ = ()

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "?"

    def __reduce__(self):
        return (_AnyDim, ())


ANY = _AnyDim()


def _atom_key(atom: _Atom) -> str:
    return atom if isinstance(atom, str) else _atom_str(atom)


def _atom_str(atom: _Atom) -> str:
    if isinstance(atom, str):
        return atom
    kind, inner, divisor = atom
    op = "//" if kind == "floordiv" else "%"
    inner_s = str(inner)
    if isinstance(inner, SymExpr) and (len(inner._terms) > 1 or _needs_parens(inner)):
        inner_s = f"({inner_s})"
    return f"{inner_s} {op} {divisor}"


def _needs_parens(e: SymExpr) -> bool:
    ((mono, coeff),) = e._terms
    return coeff != 1 or len(mono) != 1 or mono[0][1] != 1 or not isinstance(mono[0][0], str)


class SymExpr:
    """A canonical integer polynomial over named symbols (plus opaque `//` and `%` atoms).

    `size`, `degree` and `nesting` are its measures against the caps; one over a cap
    raises LimitError here, the one place every expression is built."""

    __slots__ = ("_terms", "_hash", "size", "degree", "nesting")

    def __init__(self, terms: dict):
        terms = {m: c for m, c in terms.items() if c != 0}
        size = degree = nesting = 0
        for mono in terms:
            size += 1
            degree = max(degree, sum(p for _, p in mono))
            for atom, power in mono:
                if not isinstance(atom, str) and isinstance(atom[1], SymExpr):
                    size += power * atom[1].size
                    nesting = max(nesting, atom[1].nesting + 1)
        _check_limits(size, degree, nesting)
        items = tuple(sorted(terms.items(), key=_term_key))
        for name, value in (
            ("_terms", items),
            ("_hash", hash(items)),
            ("size", size),
            ("degree", degree),
            ("nesting", nesting),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, key, value):
        raise AttributeError("SymExpr is immutable")

    def __reduce__(self):  # pickle / deepcopy rebuild through __init__ (no __setattr__)
        return (SymExpr, (dict(self._terms),))

    # ----- construction helpers -------------------------------------------------------
    @staticmethod
    def _from(value: Dim) -> dict:
        if isinstance(value, SymExpr):
            return dict(value._terms)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"cannot use {value!r} in a symbolic dimension")
        return {(): value} if value else {}

    @staticmethod
    def _make(terms: dict) -> Dim:
        terms = {m: c for m, c in terms.items() if c != 0}
        if not terms:
            return 0
        if set(terms) == {()}:
            return terms[()]
        return SymExpr(terms)

    # ----- arithmetic -------------------------------------------------------------------
    def __add__(self, other: Dim) -> Dim:
        if other is ANY:
            return ANY
        terms = self._from(self)
        for m, c in self._from(other).items():
            terms[m] = terms.get(m, 0) + c
        return self._make(terms)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return self._make({m: -c for m, c in self._terms})

    def __sub__(self, other: Dim) -> Dim:
        if other is ANY:
            return ANY
        return self + (-other if isinstance(other, SymExpr) else -other)

    def __rsub__(self, other: Dim) -> Dim:
        return (-self) + other

    def __mul__(self, other: Dim) -> Dim:
        if other is ANY:
            return ANY
        if isinstance(other, SymExpr):
            # Each term of the product joins one term of each factor, so this bounds its
            # size; checked first, as expanding is the work the cap is there to prevent.
            a, b = len(self._terms), len(other._terms)
            _check_limits(b * self.size + a * other.size - a * b, self.degree + other.degree, 0)
        result: dict = {}
        for m1, c1 in self._from(self).items():
            for m2, c2 in self._from(other).items():
                m = _mul_monomials(m1, m2)
                result[m] = result.get(m, 0) + c1 * c2
        return self._make(result)

    __rmul__ = __mul__

    def __floordiv__(self, other: Dim) -> Dim:
        return floordiv(self, other)

    def __rfloordiv__(self, other: Dim) -> Dim:
        return floordiv(other, self)

    def __mod__(self, other: Dim) -> Dim:
        return mod(self, other)

    # ----- comparison and hashing -------------------------------------------------------
    def __eq__(self, other) -> bool:
        return isinstance(other, SymExpr) and self._terms == other._terms

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        return True  # a non-constant expression is never zero as a value of this type

    # ----- queries ----------------------------------------------------------------------
    @property
    def free_symbols(self) -> frozenset[str]:
        """Names of the symbols this expression depends on."""
        out: set[str] = set()
        for mono, _ in self._terms:
            for atom, _ in mono:
                out |= _atom_symbols(atom)
        return frozenset(out)

    def evaluate(self, env: dict[str, int]) -> int:
        """The value of this expression given a value for every symbol."""
        total = 0
        for mono, coeff in self._terms:
            v = coeff
            for atom, power in mono:
                v *= _eval_atom(atom, env) ** power
            total += v
        return total

    def substitute(self, env: dict[str, Dim]) -> Dim:
        """Replace some symbols by dims (ints or expressions); returns a simplified dim."""
        total: Dim = 0
        for mono, coeff in self._terms:
            v: Dim = coeff
            for atom, power in mono:
                a = _subst_atom(atom, env)
                for _ in range(power):
                    v = dim_mul(v, a)
            total = dim_add(total, v)
        return total

    def __repr__(self) -> str:
        return f"SymExpr({str(self)!r})"

    def __str__(self) -> str:
        parts = []
        for i, (mono, coeff) in enumerate(self._terms):
            # A `//` or `%` atom needs parentheses inside a product (also `x*x` of one atom)
            # and after a leading minus, which binds tighter: `-(n // 2)` is not `(-n) // 2`.
            wrap = sum(p for _, p in mono) > 1 or coeff not in (1, -1) or (i == 0 and coeff < 0)
            body = "*".join(
                _atom_str_in_product(atom, wrap) for atom, power in mono for _ in range(power)
            )
            if not mono:
                text, sign = str(abs(coeff)), coeff < 0
            elif abs(coeff) == 1:
                text, sign = body, coeff < 0
            else:
                text, sign = f"{abs(coeff)}*{body}", coeff < 0
            if i == 0:
                parts.append(f"-{text}" if sign else text)
            else:
                parts.append(f" - {text}" if sign else f" + {text}")
        return "".join(parts)


def _check_limits(size: int, degree: int, nesting: int) -> None:
    """Raise LimitError when an expression of these measures would exceed a cap."""
    if size > MAX_TERMS:
        raise LimitError(
            f"symbolic dim too large: {size} terms, counting those inside // and % "
            f"(limit {MAX_TERMS})"
        )
    if degree > MAX_DEGREE:
        raise LimitError(f"symbolic dim too large: degree {degree} (limit {MAX_DEGREE})")
    if nesting > MAX_NESTING:
        raise LimitError(
            f"symbolic dim too large: // and % nested {nesting} deep (limit {MAX_NESTING})"
        )


def _atom_str_in_product(atom: _Atom, in_product: bool) -> str:
    s = _atom_str(atom)
    return f"({s})" if in_product and not isinstance(atom, str) else s


def _term_key(term):
    mono, _ = term
    degree = sum(p for _, p in mono)
    return (-degree, tuple((_atom_key(a), p) for a, p in mono))


def _mul_monomials(m1: _Monomial, m2: _Monomial) -> _Monomial:
    powers: dict = {}
    keys: dict = {}
    for atom, p in m1 + m2:
        k = _atom_key(atom)
        keys[k] = atom
        powers[k] = powers.get(k, 0) + p
    return tuple((keys[k], powers[k]) for k in sorted(powers))


def _atom_symbols(atom: _Atom) -> set[str]:
    if isinstance(atom, str):
        return {atom}
    inner = atom[1]
    return set(inner.free_symbols) if isinstance(inner, SymExpr) else set()


def _eval_atom(atom: _Atom, env: dict[str, int]) -> int:
    if isinstance(atom, str):
        if atom not in env:
            raise KeyError(f"no value for symbolic dimension {atom!r}")
        return int(env[atom])
    kind, inner, divisor = atom
    v = inner.evaluate(env) if isinstance(inner, SymExpr) else inner
    return v // divisor if kind == "floordiv" else v % divisor


def _subst_atom(atom: _Atom, env: dict[str, Dim]) -> Dim:
    if isinstance(atom, str):
        return env.get(atom, sym(atom))
    kind, inner, divisor = atom
    v = inner.substitute(env) if isinstance(inner, SymExpr) else inner
    return floordiv(v, divisor) if kind == "floordiv" else mod(v, divisor)


Dim = int | SymExpr | _AnyDim


def sym(name: str) -> SymExpr:
    """A symbolic dimension named `name`."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a symbolic dimension needs an identifier name, got {name!r}")
    return SymExpr({((name, 1),): 1})


def _check_divisor(d: Dim) -> int:
    if isinstance(d, bool) or not isinstance(d, int):
        raise TypeError(f"symbolic division is only by a positive integer constant, got {d!r}")
    if d <= 0:
        raise ZeroDivisionError(f"division of a dimension by {d}")
    return d


def floordiv(a: Dim, b: Dim) -> Dim:
    """`a // b` for dims; exact when every coefficient of `a` divides by `b`."""
    if a is ANY or b is ANY:
        return ANY
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    d = _check_divisor(b)
    if d == 1:
        return a
    assert isinstance(a, SymExpr)
    if all(c % d == 0 for _, c in a._terms):
        return SymExpr._make({m: c // d for m, c in a._terms})
    return SymExpr({((("floordiv", a, d), 1),): 1})


def mod(a: Dim, b: Dim) -> Dim:
    """`a % b` for dims; 0 when every coefficient of `a` divides by `b`."""
    if a is ANY or b is ANY:
        return ANY
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    d = _check_divisor(b)
    assert isinstance(a, SymExpr)
    if d == 1 or all(c % d == 0 for _, c in a._terms):
        return 0
    return SymExpr({((("mod", a, d), 1),): 1})


def is_dim(value) -> bool:
    """Whether `value` is a valid dimension (non-negative int, SymExpr or ANY)."""
    if value is ANY or isinstance(value, SymExpr):
        return True
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def dim_add(a: Dim, b: Dim) -> Dim:
    """`a + b` for dims (ANY absorbs)."""
    if a is ANY or b is ANY:
        return ANY
    return a + b


def dim_sub(a: Dim, b: Dim) -> Dim:
    """`a - b` for dims (ANY absorbs)."""
    if a is ANY or b is ANY:
        return ANY
    return a - b


def dim_mul(a: Dim, b: Dim) -> Dim:
    """`a * b` for dims (ANY absorbs, except that 0 times anything is 0)."""
    if a == 0 or b == 0:
        return 0
    if a is ANY or b is ANY:
        return ANY
    return a * b


def dim_str(d: Dim) -> str:
    """The text form of a dim as it appears in a shape (`128`, `n`, `2*n + 1`, `?`)."""
    return "?" if d is ANY else str(d)


def evaluate_dim(d: Dim, env: dict[str, int]) -> int:
    """The integer value of a dim given symbol values."""
    if isinstance(d, SymExpr):
        return d.evaluate(env)
    if d is ANY:
        raise ValueError("an unknown dimension ('?') has no value")
    return int(d)


def dims_equal(a: Dim, b: Dim) -> bool | None:
    """True if the dims are provably equal, False if provably different, None if unknown."""
    if a is ANY or b is ANY:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    diff = a - b
    if isinstance(diff, int):
        return diff == 0
    return None


def solve_dim(f, target: int, monotone: bool = False) -> int | None:
    """A value n >= 0 of the one unknown symbol of a dim `f` (a function n -> size) for which
    `f(n) == target`, or None. A dim linear in n (`2*n + 1`) has at most one. With
    `monotone`, a non-decreasing dim (`n // 2 + 1`) gives its smallest such n: right where
    every use of n goes through sizes that fix it (a compiled kernel's buffers), not where n
    could mean something else (so the interpreter does not ask for it). `f` may raise
    ArithmeticError or KeyError for values it cannot take; that n is then not a solution."""
    try:
        f0, f1, f2 = f(0), f(1), f(2)
    except (ArithmeticError, KeyError):
        return None
    slope = f1 - f0
    if slope and f2 - f1 == slope:
        n, rest = divmod(target - f0, slope)
        return n if rest == 0 and n >= 0 else None
    if not monotone or not f0 <= f1 <= f2 or f0 > target:
        return None
    try:
        hi = 1
        while f(hi) < target:
            hi *= 2
            if hi > 1 << 40:
                return None
        lo = hi // 2
        while lo < hi:  # the smallest n in [lo, hi] with f(n) >= target
            mid = (lo + hi) // 2
            if f(mid) >= target:
                hi = mid
            else:
                lo = mid + 1
        return lo if f(lo) == target else None
    except (ArithmeticError, KeyError):
        return None
