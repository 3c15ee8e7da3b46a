"""The parser: what it reads, its errors (line, column, message), and robustness properties."""

# ruff: noqa: E501  (golden texts and IR snippets keep their long lines)

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compiler.ops  # noqa: F401
from compiler.errors import LimitError
from compiler.ir import (
    ANY,
    DType,
    Function,
    Module,
    ParseError,
    Provenance,
    TensorType,
    Var,
    VerifyError,
    call,
    op_registry,
    parse,
    parse_type,
    print_module,
    structural_equal,
    sym,
)
from compiler.ir.parser import MAX_NESTING, ParseLimitError, tokenize
from tests.compiler.ir.ir_strategies import modules
from tests.compiler.ir.test_printer import SAMPLE, sample_module

n = sym("n")
BIG = np.arange(40, dtype=np.float32).reshape(10, 4)


def test_parse_reads_the_printed_sample():
    mod = parse(SAMPLE, params={"big table": BIG})
    assert structural_equal(mod, sample_module())
    assert print_module(mod) == SAMPLE
    assert mod.main.num_input == 3 and mod["helper"].is_private


def test_params_give_values_of_weights_declared_without_them():
    mod = parse(SAMPLE, params={"big table": BIG})
    big = mod.constants()["big table"]
    assert big.name == "big table" and np.array_equal(big.data, BIG)
    assert not big.data.flags.writeable
    frozen = big.data
    again = parse(SAMPLE, params={"big table": frozen})
    assert again.constants()["big table"].data is frozen  # read-only arrays are not copied
    with pytest.raises(
        ParseError, match=r"no values for weight\(s\) \$\"big table\"|big table"
    ) as e:
        parse(SAMPLE)
    assert "params={name: array}" in e.value.message and (e.value.line, e.value.column) == (4, 3)


@pytest.mark.parametrize(
    "array, what",
    [
        (np.zeros(3, np.float32), "float32 array of shape [3]"),
        (np.zeros(2), "float64 array of shape [2]"),
    ],
)
def test_params_must_match_the_declared_type(array, what):
    text = "weights {\n  $w: f32[2]\n}\ndef @main() -> f32[2] {\n  return $w\n}\n"
    with pytest.raises(
        ParseError, match=re.escape(f"params['w'] is a {what}, but the weight is declared f32[2]")
    ):
        parse(text, params={"w": array})


def test_hand_written_text_with_comments_and_free_layout():
    text = """
    # no header needed; comments and blank lines anywhere
    weights { $b: i64[2] = [1, -2]   $s: bool[] = true }
    def @main(%x: i64[n, 2],   # the input
              %y: f32[?]) -> (i64[n, 2], f32[?]) {

      %a: i64[n, 2] = add(%x, $b)  loc(module="m", op="aten.add.Tensor")
      %t: (i64[n, 2], f32[?]) = (%a, %y)
      return %t
    }
    """
    mod = parse(text)
    a = mod.main.bindings[0]
    assert a.prov == Provenance(module_path="m", source_op="aten.add.Tensor")
    assert mod.main.params[1].ty == TensorType((ANY,), "float32")
    assert mod.constants()["b"].data.tolist() == [1, -2]
    assert mod.constants().keys() == {"b"}  # a declared weight nobody reads is not kept


def test_constants_of_every_dtype():
    text = """
    def @main() -> (f16[2], bf16[], i8[2], u8[], bool[2], f64[0, 3], f32[3]) {
      %t: (f16[2], bf16[], i8[2], u8[], bool[2], f64[0, 3], f32[3]) = (const(f16[2], [0.1, -inf]), const(bf16[], 0.5), const(i8[2], [-128, 127]), const(u8[], 255), const(bool[2], [true, false]), const(f64[0, 3], []), const(f32[3], [nan, 1e-45, -0.0]))
      return %t
    }
    """
    values = [c.data for c in parse(text).main.bindings[0].fields]
    assert [DType.of(v.dtype).short for v in values] == [
        "f16",
        "bf16",
        "i8",
        "u8",
        "bool",
        "f64",
        "f32",
    ]
    assert values[0].tolist() == [np.float16(0.1), -np.inf]
    assert values[2].tolist() == [-128, 127] and values[4].tolist() == [True, False]
    assert values[5].shape == (0, 3)
    assert np.isnan(values[6][0]) and values[6][1] > 0 and np.signbit(values[6][2])


H = "def @main(%x: f32[2]) -> f32[2] {\n"
ERRORS = [
    (
        H + "  %y: f32[2] = rleu(%x)\n  return %y\n}\n",
        2,
        16,
        "unknown op 'rleu' (did you mean relu?)",
    ),
    (H + "  %y: f32[2] = relu(%z)\n  return %y\n}\n", 2, 21, "%z is not defined"),
    (H + "  %x: f32[2] = relu(%x)\n  return %x\n}\n", 2, 3, "%x is defined twice"),
    (H + "  %y: f32[2] = add(%x, $w)\n  return %y\n}\n", 2, 24, "weight $w is not declared"),
    (
        "weights {\n  $w: f32[2] = [1, 2]\n  $w: f32[2] = [1, 2]\n}\n" + H + "  return %x\n}\n",
        3,
        3,
        "weight $w is declared twice",
    ),
    ("def @main(%x: f33[2]) -> f32[2] {\n  return %x\n}\n", 1, 15, "unknown dtype 'f33'"),
    (
        "def @main(%x: f32[2 - 3]) -> f32[2] {\n  return %x\n}\n",
        1,
        19,
        "a dimension cannot be negative (-1)",
    ),
    (
        H + "  %t: (f32[2], f32[3]) = (%x, %x)\n  return %x\n}\n",
        2,
        26,
        "annotated type (f32[2], f32[3]) but the value has type (f32[2], f32[2])",
    ),
    (
        H + "  %t: (f32[2], f32[2]) = (%x, %x)\n  return %t\n}\n",
        1,
        26,
        "@main is declared to return f32[2] but returns (f32[2], f32[2])",
    ),
    (H + "  %y: f32[2] = relu(%x) ;\n  return %y\n}\n", 2, 25, "unexpected character ';'"),
    (
        "def @main(%x: f32[2], %c: bool[]) -> f32[2] {\n  %r: f32[2] = if %c {\n    %t: f32[2] = relu(%x)\n  } else {\n    yield %x\n  }\n  return %r\n}\n",
        4,
        3,
        "expected 'yield' to end the branch",
    ),
    (H + "  %y: f32[2] = relu(%x)\n}\n", 3, 1, "expected 'return' to end @main"),
    (H + "  return %x\n}\n" + H + "  return %x\n}\n", 4, 1, "function @main is defined twice"),
    ("# passlens IR\n", 2, 1, "the text defines no function"),
    ("", 1, 1, "the text defines no function"),
    (
        H + "  %y: f32[2] = clip(%x, min=1.0, min=2.0)\n  return %y\n}\n",
        2,
        34,
        "attribute min given twice",
    ),
    (
        H + "  %y: f32[2] = clip(min=1.0, %x)\n  return %y\n}\n",
        2,
        30,
        "positional arguments must come before attributes",
    ),
    (
        H + '  %y: f32[2] = clip(%x, min="low")\n  return %y\n}\n',
        2,
        16,
        "attribute min must be a number, got 'low'",
    ),
    (
        H + "  %y: f32[2] = add(%x, const(f32[3], [1, 2]))\n  return %y\n}\n",
        2,
        38,
        "constant values have shape [2] but the type is f32[3]",
    ),
    (
        H + "  %y: f32[2] = add(%x, const(f32[2, 2], [[1, 2], [3]]))\n  return %y\n}\n",
        2,
        41,
        "bad constant values",
    ),
    (
        H + "  %y: f32[2] = add(%x, const(f32[n], [1, 2]))\n  return %y\n}\n",
        2,
        38,
        "a constant needs a static tensor type, got f32[n]",
    ),
    (
        H + '  %y: f32[2] = relu(%x)  loc(color="red")\n  return %y\n}\n',
        2,
        26,
        "unknown provenance key(s): color",
    ),
    (
        H + "  %y: f32[2] = %x[0]\n  return %y\n}\n",
        2,
        18,
        "get item 0 of a non-tuple value of type f32[2]",
    ),
    (
        "def @main(%x: f32[2], %c: f32[2]) -> f32[2] {\n  %r: f32[2] = if %c {\n    yield %x\n  } else {\n    yield %x\n  }\n  return %r\n}\n",
        2,
        16,
        "an If condition must be a scalar bool, got f32[2]",
    ),
    (
        H + "  %y: f32[2] = relu(",
        2,
        21,
        "expected a value (%name, $weight or const(...)), found end of text",
    ),
    (
        'weights {\n  $"a\\q": f32[1] = [1]\n}\n' + H + "  return %x\n}\n",
        2,
        3,
        "bad quoted weight name",
    ),
    (
        "def @main(%x: f32[2]) -> f32[2] {\n  %t: " + "(" * 3000,
        2,
        None,
        "brackets nested too deeply",
    ),
    ("weights {\n  $w: f32[1] = " + "[" * 3000, 2, None, "brackets nested too deeply"),
]


@pytest.mark.parametrize("text, line, column, message", ERRORS)
def test_errors_give_line_column_and_the_source_line(text, line, column, message):
    with pytest.raises(ParseError) as e:
        parse(text)
    err = e.value
    assert message in err.message
    assert err.line == line and (column is None or err.column == column)
    # the message quotes the offending line with a caret under the column
    lines = str(err).split("\n")
    assert lines[0] == f"line {err.line}, column {err.column}: {err.message}"
    source = text.split("\n")[err.line - 1]
    if len(source) > 160:  # a long line is quoted around the column, the cuts marked "..."
        quoted, caret = lines[1][2:], lines[2].index("^") - 1
        assert len(quoted) <= 166 and quoted.strip(".") in source
        assert quoted[caret] == source[err.column - 1]
    elif source:  # (an error at the end of the text may sit on an empty last line)
        assert lines[1:] == [f"  {source}", "  " + " " * (err.column - 1) + "^"]


def test_verifier_runs_after_parsing_unless_asked_not_to():
    text = H.replace("-> f32[2]", "-> f32[2]") + "  %y: f32[3] = relu(%x)\n  return %x\n}\n"
    with pytest.raises(
        VerifyError, match=r"relu is annotated f32\[3\] but its inputs give f32\[2\]"
    ):
        parse(text)
    mod = parse(text, verify=False)
    assert mod.main.bindings[0].ty == TensorType((3,), "float32")


def test_parse_takes_a_str():
    with pytest.raises(TypeError, match="str"):
        parse(b"def @main() -> f32[] { return const(f32[], 1.0) }")


def test_tokenize():
    kinds = [(t.kind, t.value) for t in tokenize('%a.b $"x y" @f -> 1.5e3 7 n // "s" # c')]
    assert kinds == [
        ("local", "a.b"),
        ("weight", "x y"),
        ("global", "f"),
        ("punct", "->"),
        ("float", 1500.0),
        ("int", 7),
        ("ident", "n"),
        ("punct", "//"),
        ("string", "s"),
        ("eof", None),
    ]


# ----- attributes of every kind round-trip (through a test-only op) ---------------------------


@pytest.fixture
def attrs_op():
    """An identity op with one attribute of each kind, registered for the test only."""
    name = "_test_all_attr_kinds"
    kinds = {
        "i": "int",
        "f": "float",
        "b": "bool",
        "s": "str",
        "ints": "ints",
        "floats": "floats",
        "d": "dim",
        "ds": "dims",
        "t": "dtype",
        "a": "any",
    }
    op_registry.define_op(
        name,
        inputs=("x",),
        attrs={k: op_registry.AttrSpec(kind, None) for k, kind in kinds.items()},
        infer=lambda types, attrs: types[0],
        compute=lambda values, attrs: values[0],
        doc="test only",
    )
    yield name
    op_registry._REGISTRY.pop(name)


@pytest.mark.parametrize(
    "attrs",
    [
        {
            "i": -3,
            "f": -0.5,
            "b": False,
            "s": 'q"uote\\ ü',
            "ints": (),
            "floats": (1.0, -2.5e-8),
            "d": 2 * n + 1,
            "ds": (n, -1, ANY),
            "t": DType.bfloat16,
            "a": ((1, 2), "x", None),
        },
        {"i": 0, "f": float("inf"), "d": 2 - 2 * n, "ds": (-(n // 2) + 3, n % 4 * n), "a": 1.5},
        {"f": float("-inf"), "d": -1, "ds": (), "ints": (-1, 0, 7)},
    ],
)
def test_attribute_values_round_trip(attrs_op, attrs):
    x = Var("x", TensorType((n,), "float32"))
    mod = Module({"main": Function.from_output([x], call(attrs_op, x, **attrs))})
    text = print_module(mod)
    back = parse(text)
    assert dict(back.main.output.attrs) == dict(mod.main.output.attrs)
    assert structural_equal(back, mod) and print_module(back) == text


# ----- robustness -----------------------------------------------------------------------------

SEED_TEXTS = [
    (SAMPLE, {"big table": BIG}),
    (
        """weights {
  $w: f32[1, 3] = [[nan, -0.0, 1e-45]]  loc(module="we\\"ird", pass="fold-constant")
}
def @main(%x: f32[n, 3]  loc(node="x"), %c: bool[], %s: f32[2*n + 1]) -> (f32[n, 3], f32[2*n + 1]) attrs {num_input = 3, private = false} {
  %a: f32[n, 3] = add(%x, $w)
  %r: f32[n, 3] = if %c {
    %t: f32[n, 3] = clip(%a, min=-1.0, max=inf)
    yield %t
  } else {
    yield %x
  }
  %q: f32[2*n + 1] = call @h(%s)
  %p: (f32[n, 3], f32[2*n + 1]) = (%r, %q)
  return %p
}
def @h(%y: f32[m]) -> f32[m] attrs {private = true} {
  %seven: f32[] = cast(const(i32[], 7), dtype=f32)
  %z: f32[m] = add(%y, %seven)
  return %z
}
""",
        {},
    ),
]
_TOKEN = re.compile(
    r'\s+|%[\w.]+|\$"[^"\n]*"|\$[\w.]+|@[\w.]+|\d+\.\d*(?:e[+-]?\d+)?|\d+|\w+|"[^"\n]*"|->|//|.',
    re.S,
)
_INSERTS = list('%$@()[]{},:=*+-?."#\n ;\\') + [
    "//",
    "->",
    "if",
    "else",
    "yield",
    "return",
    "def",
    "call",
    "const",
    "loc",
    "weights",
    "attrs",
    "f32",
    "bool",
    "i64",
    "true",
    "none",
    "nan",
    "-inf",
    "0",
    "-1",
    "1e400",
    "99999999999999999999",
    '"x"',
    "%x",
    "$w",
    "@main",
    "é",
    "\x00",
    "\t",
    "[[",
    "(((",
]


@st.composite
def mutated_texts(draw):
    """A valid text with a few token- and character-level edits."""
    if draw(st.booleans()):
        text, params = draw(st.sampled_from(SEED_TEXTS))
    else:
        gen = draw(modules(max_helpers=1))
        text, params = print_module(gen.module, show_provenance=draw(st.booleans())), gen.params
    for _ in range(draw(st.integers(1, 3))):
        toks = _TOKEN.findall(text)
        i = draw(st.integers(0, len(toks) - 1))
        edit = draw(st.sampled_from(["delete", "duplicate", "insert", "replace", "swap", "chars"]))
        if edit == "delete":
            del toks[i : i + draw(st.integers(1, 6))]
        elif edit == "duplicate":
            toks.insert(i, toks[i])
        elif edit == "insert":
            toks.insert(i, draw(st.sampled_from(_INSERTS + toks)))
        elif edit == "replace":
            toks[i] = draw(st.sampled_from(_INSERTS + toks))
        elif edit == "swap":
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        else:
            tok = toks[i]
            k = draw(st.integers(0, len(tok)))
            toks[i] = tok[:k] + draw(st.text(max_size=2)) + tok[k + draw(st.integers(0, 2)) :]
        text = "".join(toks)
    return text, params


def _parse_or_expected_error(text, params=None):
    try:
        parse(text, params=params)
    except ParseError as e:
        assert e.line >= 1 and e.column >= 1
        assert str(e).startswith(f"line {e.line}, column {e.column}: ")
    except VerifyError as e:
        assert str(e).startswith("the module breaks") and e.problems


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_texts())
def test_mutated_texts_parse_or_fail_with_parse_or_verify_error(case):
    _parse_or_expected_error(*case)


@settings(max_examples=250, deadline=None)
@given(st.text() | st.lists(st.sampled_from(_INSERTS), max_size=40).map("".join))
def test_random_text_parses_or_fails_with_parse_error(text):
    _parse_or_expected_error(text)


# ----- limits (issue #14: untrusted inputs) ----------------------------------------------------

DEEP = 100_000


@pytest.mark.parametrize(
    "text",
    [
        # a dim, a tuple type, unary minus in a dim
        "def @main(%x: f32[" + "(" * DEEP + "n" + ")" * DEEP + "]) -> f32[2] {\n}\n",
        "def @main(%x: " + "(" * DEEP + "f32[2]" + ")" * DEEP + ") -> f32[2] {\n}\n",
        "def @main(%x: f32[" + "-" * DEEP + "n]) -> f32[2] {\n}\n",
        # an attribute: brackets and parentheses
        H + "  %y: f32[2] = relu(%x, a=" + "[" * DEEP + "]" * DEEP + ")\n}\n",
        H + "  %y: f32[2] = relu(%x, a=" + "(" * DEEP + "1" + ")" * DEEP + ")\n}\n",
        # constant values
        "weights {\n  $w: f32[1] = " + "[" * DEEP + "1" + "]" * DEEP + "\n}\n",
        # If branches
        "def @main(%c: bool[]) -> bool[] {\n" + "%r: bool[] = if %c {\n" * DEEP,
    ],
    ids=["dim", "tuple-type", "unary-minus", "attr-brackets", "attr-parens", "values", "if"],
)
def test_deep_nesting_is_a_parse_error_at_a_fixed_depth(text):
    with pytest.raises(ParseLimitError, match=rf"nested too deeply \(limit {MAX_NESTING} levels\)"):
        parse(text)


def test_nesting_up_to_the_limit_parses():
    deep = "(" * (MAX_NESTING - 1) + "n + 1" + ")" * (MAX_NESTING - 1)
    assert parse_type(f"f32[{deep}]") == TensorType((n + 1,), "float32")


def test_symbolic_dims_over_the_caps_are_parse_errors_at_the_operator():
    product = "*".join(f"(a{i} + b{i})" for i in range(24))  # 2**24 terms expanded
    text = f"def @main(%x: f32[{product}]) -> f32[2] {{\n  return %x\n}}\n"
    with pytest.raises(ParseLimitError, match="symbolic dim too large") as e:
        parse(text)
    assert isinstance(e.value, LimitError) and e.value.line == 1
    assert text[e.value.column - 1] == "*"


def test_integer_literals_and_dims_are_bounded():
    digits = "1" * 5000  # over Python's int() limit: once a raw ValueError
    with pytest.raises(ParseLimitError, match="integer literal of 5000 digits \\(limit 4300\\)"):
        parse(H + f"  %y: f32[2] = relu(%x, a={digits})\n  return %y\n}}\n")
    # a dim too big for the i64 a kernel holds it in; products of such would not even print
    with pytest.raises(ParseLimitError, match="has 13288 bits \\(limit 64\\)") as e:
        parse_type(f"f32[{'9' * 4000}]")
    assert len(str(e.value)) < 400  # the quoted line is cut around the column
    with pytest.raises(ParseLimitError, match="has 127 bits \\(limit 64\\)"):
        parse_type(f"f32[{'9' * 19}*{'9' * 19}]")
    with pytest.raises(ParseLimitError, match="coefficient has 67 bits"):
        parse_type("f32[100000000000000000000*n]")
    assert parse_type("f32[9223372036854775807]").shape == (2**63 - 1,)


@pytest.mark.parametrize(
    "text",
    [
        'weights {\n  $"\\ud800": f32[1] = [1]\n}\n' + H + "  return %x\n}\n",
        H + '  %y: f32[2] = relu(%x)  loc(module="\\udfff")\n  return %y\n}\n',
        H + "  # \ud800 raw in a comment\n  return %x\n}\n",
    ],
    ids=["escaped-weight-name", "escaped-string", "raw"],
)
def test_lone_surrogates_are_refused(text):
    # once accepted, such a name broke to_html later with a UnicodeEncodeError
    with pytest.raises(ParseError, match="lone surrogate"):
        parse(text)


def test_an_escaped_surrogate_pair_is_one_character():
    text = (
        'weights {\n  $"\\ud83d\\ude00": f32[1] = [1]\n}\n'
        + H.replace("-> f32[2]", "-> f32[1]")
        + '  return $"\\ud83d\\ude00"\n}\n'
    )
    assert list(parse(text).constants()) == ["\U0001f600"]
