"""Symbolic dims: canonical forms, hashing, floordiv/mod simplification, evaluation, text form."""

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.errors import LimitError
from compiler.ir import ANY, ParseError, SymExpr, TensorType, parse_type, sym
from compiler.ir.parser import parse_dim
from compiler.ir.symbolic import (
    MAX_DEGREE,
    MAX_NESTING,
    MAX_TERMS,
    dim_add,
    dim_mul,
    dim_str,
    dim_sub,
    dims_equal,
    evaluate_dim,
    floordiv,
    is_dim,
    mod,
)

n, m, z = sym("n"), sym("m"), sym("z")


# ----- canonical forms and hashing ------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b",
    [
        (n + n, 2 * n),
        (n * 2, 2 * n),
        (n + m, m + n),
        (n * m, m * n),
        ((n + 1) * (n + 1), n * n + 2 * n + 1),
        ((n + m) - m, n),
        (3 - (1 - n), n + 2),
        (-(n * -1), n),
        (2 * (n // 2), (n // 2) * 2),
        ((n + 1) // 2 + 0, (1 + n) // 2),
    ],
)
def test_equal_expressions_have_one_canonical_form_and_hash(a, b):
    assert a == b
    assert hash(a) == hash(b)
    assert str(a) == str(b)


def test_an_expression_that_simplifies_to_a_number_is_that_int():
    assert n - n == 0 and type(n - n) is int
    assert (n + 3) - n == 3 and type((n + 3) - n) is int
    assert 0 * n == 0 and type(0 * n) is int
    assert TensorType((n - n + 4, 2), "float32").is_static


def test_different_expressions_differ():
    assert n != m
    assert n + 1 != n
    assert 2 * n != n * n
    assert n != "n"
    assert (n // 2) != (n % 2)
    assert len({n, m, n + 0, 2 * n, n + n}) == 3


@pytest.mark.parametrize(
    "expr, text",
    [
        (n, "n"),
        (2 * n + 1, "2*n + 1"),
        (n - 1, "n - 1"),
        (2 - n, "-n + 2"),
        (-2 * n + 3, "-2*n + 3"),
        (n * n * m - 3, "m*n*n - 3"),
        (n // 2, "n // 2"),
        ((n + 1) // 2, "(n + 1) // 2"),
        ((2 * n) // 3, "(2*n) // 3"),
        (n % 3 + 1, "n % 3 + 1"),
        ((n + 1) // 2 * m, "((n + 1) // 2)*m"),
        # a leading minus binds tighter than // and %: these need parentheses to parse back
        (z - n // 2, "-(n // 2) + z"),
        (-(n % 3), "-(n % 3)"),
        ((n // 2) * (n // 2), "(n // 2)*(n // 2)"),
    ],
)
def test_text_form(expr, text):
    assert str(expr) == text
    assert parse_dim(text) == expr


def test_sym_needs_an_identifier():
    for bad in ("", "2n", "a b", "n-1", 3):
        with pytest.raises(ValueError, match="identifier"):
            sym(bad)


def test_expressions_are_immutable_and_reject_non_int_operands():
    with pytest.raises(AttributeError):
        n._terms = ()
    with pytest.raises(TypeError):
        n + 1.5
    with pytest.raises(TypeError):
        n * True


# ----- floordiv and mod -----------------------------------------------------------------------


def test_floordiv_and_mod_simplify_when_every_coefficient_divides():
    assert (2 * n + 4) // 2 == n + 2
    assert (2 * n + 4) % 2 == 0
    assert (6 * n * m) // 3 == 2 * n * m
    assert n // 1 == n and n % 1 == 0
    assert floordiv(7, 2) == 3 and mod(7, 2) == 1


def test_floordiv_and_mod_stay_opaque_otherwise():
    q, r = (2 * n + 1) // 2, n % 4
    assert isinstance(q, SymExpr) and str(q) == "(2*n + 1) // 2"
    assert isinstance(r, SymExpr) and str(r) == "n % 4"
    assert q.free_symbols == {"n"} and (q + m).free_symbols == {"n", "m"}
    # an opaque atom takes part in arithmetic like a symbol
    assert q + q == 2 * q
    assert (2 * q) // 2 == q


def test_division_is_only_by_a_positive_constant():
    with pytest.raises(TypeError, match="positive integer constant"):
        n // m
    with pytest.raises(TypeError):
        floordiv(8, n)
    with pytest.raises(ZeroDivisionError):
        n // 0
    with pytest.raises(ZeroDivisionError):
        n % -2


def test_unknown_dims_absorb():
    assert n + ANY is ANY and n - ANY is ANY and n * ANY is ANY
    assert floordiv(ANY, 2) is ANY and mod(n, ANY) is ANY
    assert dim_add(3, ANY) is ANY and dim_sub(ANY, n) is ANY
    assert dim_mul(ANY, 0) == 0 and dim_mul(ANY, 2) is ANY
    assert dim_str(ANY) == "?" and repr(ANY) == "?"


# ----- evaluation, comparison, substitution ---------------------------------------------------


def test_evaluate():
    env = {"n": 7, "m": 3}
    assert (2 * n + 1).evaluate(env) == 15
    assert ((n + 1) // 2 * m).evaluate(env) == 12
    assert (n % 4 - m).evaluate(env) == 0
    assert evaluate_dim(5, {}) == 5
    assert evaluate_dim(n * m, env) == 21
    with pytest.raises(KeyError, match="'m'"):
        (n + m).evaluate({"n": 1})
    with pytest.raises(ValueError, match=r"\?"):
        evaluate_dim(ANY, env)


def test_dims_equal_says_true_false_or_unknown():
    assert dims_equal(n + n, 2 * n) is True
    assert dims_equal(n + 1, n) is False
    assert dims_equal(3, 3) is True and dims_equal(3, 4) is False
    assert dims_equal(n, m) is None
    assert dims_equal(n, 4) is None
    assert dims_equal(ANY, 4) is None


def test_substitute():
    assert (2 * n + m).substitute({"n": 3}) == m + 6
    assert ((n + 1) // 2).substitute({"n": 5}) == 3
    assert (n % 3).substitute({"n": m * 3}) == 0
    assert (n * m).substitute({"n": z, "m": z}) == z * z


# ----- negative dims --------------------------------------------------------------------------


def test_negative_dims_are_rejected():
    assert not is_dim(-1) and not is_dim(True) and not is_dim(2.0)
    assert is_dim(0) and is_dim(n) and is_dim(ANY)
    with pytest.raises(TypeError, match="invalid dimension -1"):
        TensorType((2, -1), "float32")
    with pytest.raises(ParseError, match="cannot be negative"):
        parse_dim("2 - 3")
    with pytest.raises(ParseError, match="cannot be negative") as e:
        parse_type("f32[4, (1 - 3)*2]")
    assert (e.value.line, e.value.column) == (1, 8)  # the "(" that starts the dim


def test_parse_dim_errors():
    with pytest.raises(ParseError, match="positive integer constant"):
        parse_dim("n // m")
    with pytest.raises(ParseError, match="division of a dimension by 0"):
        parse_dim("n % 0")
    with pytest.raises(ParseError, match="end of the dimension"):
        parse_dim("n n")
    with pytest.raises(ParseError, match="expected a dimension"):
        parse_dim("f32")


# ----- properties -----------------------------------------------------------------------------

SYMBOLS = ["n", "m", "batch", "s0"]
_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def _trees():
    """Expression trees as nested tuples: ints, symbol names, (op, a, b), (// or %, a, k)."""
    leaves = st.integers(0, 6) | st.sampled_from(SYMBOLS)

    def extend(inner):
        return st.tuples(st.sampled_from(list(_BINARY)), inner, inner) | st.tuples(
            st.sampled_from(["//", "%"]), inner, st.integers(1, 4)
        )

    return st.recursive(leaves, extend, max_leaves=8)


def _build(tree, lookup):
    if isinstance(tree, int):
        return tree
    if isinstance(tree, str):
        return lookup(tree)
    op, a, b = tree
    a, b = _build(a, lookup), _build(b, lookup)
    if op == "//":
        return floordiv(a, b) if not isinstance(a, int) else a // b
    if op == "%":
        return mod(a, b) if not isinstance(a, int) else a % b
    return _BINARY[op](a, b)


envs = st.fixed_dictionaries({s: st.integers(-5, 40) for s in SYMBOLS})


@settings(max_examples=300, deadline=None)
@given(_trees(), envs)
def test_symbolic_arithmetic_agrees_with_integer_arithmetic(tree, env):
    expr = _build(tree, sym)
    assert evaluate_dim(expr, env) == _build(tree, env.__getitem__)


@settings(max_examples=300, deadline=None)
@given(_trees())
def test_parse_dim_inverts_str(tree):
    expr = _build(tree, sym)
    if isinstance(expr, int) and expr < 0:
        with pytest.raises(ParseError):
            parse_dim(str(expr))
        return
    back = parse_dim(dim_str(expr))
    assert back == expr
    assert hash(back) == hash(expr)
    assert dim_str(back) == dim_str(expr)
    # the same text inside a type
    assert parse_type(f"f32[{dim_str(expr)}, 2]") == TensorType((expr, 2), "float32")


def test_solve_dim_linear_monotone_and_none():
    from compiler.ir.symbolic import solve_dim

    def f(text):
        d = parse_dim(text)
        return lambda n: d.evaluate({"n": n})

    assert solve_dim(f("2*n + 1"), 7) == 3
    assert solve_dim(f("2*n + 1"), 8) is None  # no integer n
    assert solve_dim(f("n - 5"), 2) == 7
    assert solve_dim(f("n + 4"), 2) is None  # n would be negative
    # n // 2 + 1 == 3 for n = 4 and n = 5: only asked for with monotone, the smallest
    assert solve_dim(f("n // 2 + 1"), 3) is None
    assert solve_dim(f("n // 2 + 1"), 3, monotone=True) == 4
    assert solve_dim(f("n // 2 + 1"), 0, monotone=True) is None  # below every value
    assert solve_dim(f("n // 4"), 1000, monotone=True) == 4000
    assert solve_dim(lambda n: 1 // (n - 1), 1) is None  # raises at n = 1


# ----- size limits (issue #14: untrusted inputs) ---------------------------------------------


def _sum(prefix: str, k: int) -> SymExpr:
    total = sym(f"{prefix}0")
    for i in range(1, k):
        total = total + sym(f"{prefix}{i}")
    return total


def test_a_product_of_sums_is_refused_before_it_is_expanded(monkeypatch):
    # 24 two-term factors written in 200 characters would expand to 2**24 terms (the parse
    # used to hang and take over 4 GB): the product over the cap is refused at once
    text = "*".join(f"(a{i} + b{i})" for i in range(24))
    with pytest.raises(LimitError, match=rf"\d+ terms.*\(limit {MAX_TERMS}\)") as e:
        parse_dim(text)
    assert isinstance(e.value, ParseError) and e.value.line == 1
    # the term count of the product is checked before multiplying: nothing is expanded
    a, b = _sum("a", 20), _sum("b", 20)
    import compiler.ir.symbolic as symbolic

    def expand(*args):
        raise AssertionError("the product was expanded")

    monkeypatch.setattr(symbolic, "_mul_monomials", expand)
    with pytest.raises(LimitError, match="400 terms"):
        a * b


def test_sums_degrees_and_nesting_are_capped():
    with pytest.raises(LimitError, match=rf"{MAX_TERMS + 1} terms"):
        _sum("s", MAX_TERMS + 1)
    with pytest.raises(LimitError, match=rf"degree {MAX_DEGREE + 1} \(limit {MAX_DEGREE}\)"):
        parse_dim("*".join(["n"] * (MAX_DEGREE + 1)))
    deep = n
    for _ in range(MAX_NESTING):
        deep = floordiv(deep + 1, 2)
    with pytest.raises(LimitError, match=rf"nested {MAX_NESTING + 1} deep"):
        floordiv(deep + 1, 2)
    with pytest.raises(LimitError, match="nested"):
        parse_dim("n" + " // 2" * 10_000)  # each // nests the one before


def test_terms_inside_floordiv_count_each_time_the_atom_is_written():
    # the text (and the work) of a product repeats the big atom in every term of it, so
    # nesting products in // cannot grow an expression exponentially either
    big = floordiv(_sum("a", 16) * _sum("b", 8), 2)  # one atom holding 128 terms
    assert big.size == 129 and len(str(big)) > 1000
    assert (big * 2).size == 129
    with pytest.raises(LimitError, match="258 terms"):
        big * (m + z)  # two terms, each writing the atom out


def test_real_shapes_stay_far_below_the_limits():
    # the output size of 8 strided convolutions, symbolic batch * channels * spatial dims
    h = sym("h")
    for _ in range(8):
        h = floordiv(h + 2 * 1 - 3, 2) + 1
    numel = sym("batch") * 64 * h * h
    assert numel.size < MAX_TERMS and numel.nesting == 8
    assert parse_dim(str(numel)) == numel
    # a product of four sums (16 terms) is fine
    assert ((n + 1) * (m + 1) * (z + 1) * (sym("w") + 1)).size == 16
