"""Golden text tests for the printer."""

# ruff: noqa: E501  (golden texts and IR snippets keep their long lines)

import textwrap

import ml_dtypes
import numpy as np
import pytest

import compiler.ops  # noqa: F401
from compiler.ir import (
    ANY,
    Block,
    Constant,
    FuncCall,
    Function,
    If,
    Module,
    Provenance,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    call,
    print_function,
    print_module,
    sym,
    verify,
)
from compiler.ir.printer import Printer, format_attr, format_scalar, format_values

n = sym("n")
P = Provenance


def golden(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def sample_module() -> Module:
    """Every kind of node, weights inline and not, provenance, attributes of every kind."""
    x = Var("x", TensorType((n, 4), "float32"), P(framework="torch", source_node="x"))
    flag = Var("flag", TensorType((), "bool"))
    bb = Var("bb", TensorType((10, 4), "float32"))
    bias = Var("fc.bias", TensorType((4,), "float32"))
    w = Constant(np.array([0.5, -1, 2, 0], np.float32), name="fc.weight", prov=P(module_path="fc"))
    big = Constant(np.arange(40, dtype=np.float32).reshape(10, 4), name="big table")
    h = Var("h", TensorType((n, 4), "float32"))
    helper = Function.from_output([h], call("exp", h, name="e"), {"private": True})
    mul_prov = P(module_path="fc", source_op="aten.mul.Tensor", location="model.py:12")
    a = call("multiply", x, w, name="a", prov=mul_prov)
    a2 = call("add", a, bias, name="a")  # a clashing hint
    b = call("add", a2, Constant.scalar(1.5), name="1st value")  # a hint to sanitize
    g = TupleGetItem(Tuple([a, b], name="pair"), -1)
    r = If(
        flag,
        Block.of(call("relu", g, name="t"), [g]),
        Block([], g),
        name="r",
        prov=P(module_path="block"),
    )
    f = FuncCall("helper", [r], r.ty, name="f")
    c = call("cast", call("clip", f, min=-1, max=6.0), dtype="float16")
    s = call("gelu", call("cast", c, dtype="f32"), approximate="tanh")
    cond = call("less", Constant.scalar(0.0), Constant.scalar(1.0))
    out = Tuple([s, call("cast", cond, dtype="int32"), call("add", bb, big)])
    main = Function.from_output([x, flag, bb, bias], out, {"num_input": 3})
    mod = Module({"main": main, "helper": helper})
    verify(mod)
    return mod


SAMPLE = golden(
    """
    # passlens IR
    weights {
      $fc.weight: f32[4] = [0.5, -1.0, 2.0, 0.0]
      $"big table": f32[10, 4]
    }

    def @main(%x: f32[n, 4], %flag: bool[], %bb: f32[10, 4], %fc.bias: f32[4]) -> (f32[n, 4], i32[], f32[10, 4]) attrs {num_input = 3} {
      %a: f32[n, 4] = multiply(%x, $fc.weight)
      %a_1: f32[n, 4] = add(%a, %fc.bias)
      %v1st_value: f32[n, 4] = add(%a_1, const(f32[], 1.5))
      %pair: (f32[n, 4], f32[n, 4]) = (%a, %v1st_value)
      %item: f32[n, 4] = %pair[1]
      %r: f32[n, 4] = if %flag {
        %t: f32[n, 4] = relu(%item)
        yield %t
      } else {
        yield %item
      }
      %f: f32[n, 4] = call @helper(%r)
      %clip: f32[n, 4] = clip(%f, max=6.0, min=-1.0)
      %cast: f16[n, 4] = cast(%clip, dtype=f16)
      %cast_1: f32[n, 4] = cast(%cast, dtype=f32)
      %gelu: f32[n, 4] = gelu(%cast_1, approximate="tanh")
      %less: bool[] = less(const(f32[], 0.0), const(f32[], 1.0))
      %cast_2: i32[] = cast(%less, dtype=i32)
      %add: f32[10, 4] = add(%bb, $"big table")
      %tuple: (f32[n, 4], i32[], f32[10, 4]) = (%gelu, %cast_2, %add)
      return %tuple
    }

    def @helper(%h: f32[n, 4]) -> f32[n, 4] attrs {private = true} {
      %e: f32[n, 4] = exp(%h)
      return %e
    }
    """
)

SAMPLE_WITH_PROVENANCE = golden(
    """
    # passlens IR
    weights {
      $fc.weight: f32[4] = [0.5, -1.0, 2.0, 0.0]  loc(module="fc")
      $"big table": f32[10, 4]
    }

    def @main(%x: f32[n, 4]  loc(framework="torch", node="x"), %flag: bool[], %bb: f32[10, 4], %fc.bias: f32[4]) -> (f32[n, 4], i32[], f32[10, 4]) attrs {num_input = 3} {
      %a: f32[n, 4] = multiply(%x, $fc.weight)  loc(module="fc", op="aten.mul.Tensor", file="model.py:12")
      %a_1: f32[n, 4] = add(%a, %fc.bias)
      %v1st_value: f32[n, 4] = add(%a_1, const(f32[], 1.5))
      %pair: (f32[n, 4], f32[n, 4]) = (%a, %v1st_value)
      %item: f32[n, 4] = %pair[1]
      %r: f32[n, 4] = if %flag {
        %t: f32[n, 4] = relu(%item)
        yield %t
      } else {
        yield %item
      }  loc(module="block")
      %f: f32[n, 4] = call @helper(%r)
    """
)


def test_module_golden():
    assert print_module(sample_module()) == SAMPLE
    assert str(sample_module()) == SAMPLE


def test_module_golden_with_provenance():
    text = print_module(sample_module(), show_provenance=True)
    assert text.startswith(SAMPLE_WITH_PROVENANCE)
    # everything after the lines that carry provenance is as without it
    assert text.endswith(SAMPLE[SAMPLE.index("  %clip") :])


def test_max_inline_decides_which_weights_show_values():
    text = print_module(sample_module(), max_inline=40)
    assert '  $"big table": f32[10, 4] = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], ' in text
    text = print_module(sample_module(), max_inline=0)
    assert "  $fc.weight: f32[4]\n" in text


def test_print_function_refers_to_weights_by_name_only():
    x = Var("x", TensorType((2,), "float32"), P(module_path="in"))
    w = Constant(np.ones(2, np.float32), name="w")
    y = call("add", x, w, prov=P(source_op="aten.add.Tensor"))
    fn = Function.from_output([x], y)
    assert print_function(fn, "f") == golden(
        """
        def @f(%x: f32[2]) -> f32[2] {
          %add: f32[2] = add(%x, $w)
          return %add
        }
        """
    )
    assert print_function(fn, show_provenance=True) == golden(
        """
        def @main(%x: f32[2]  loc(module="in")) -> f32[2] {
          %add: f32[2] = add(%x, $w)  loc(op="aten.add.Tensor")
          return %add
        }
        """
    )


def test_nested_if_one_field_tuple_and_symbolic_shapes():
    x = Var("x", TensorType((2 * n + 1, ANY, n // 2), "float32"))
    u = Var("u", TensorType(None, "float32"))
    c = Var("c", TensorType((), "bool"))
    inner = If(c, Block.of(call("neg", x)), Block([], x), name="inner")
    outer = If(c, Block.of(call("abs", inner), [x, c]), Block([], x), name="outer")
    one = Tuple([outer])
    fn = Function.from_output([x, u, c], Tuple([one, TupleGetItem(one, 0), Tuple([]), u]))
    assert print_function(fn) == golden(
        """
        def @main(%x: f32[2*n + 1, ?, n // 2], %u: f32[*], %c: bool[]) -> ((f32[2*n + 1, ?, n // 2],), f32[2*n + 1, ?, n // 2], (), f32[*]) {
          %outer: f32[2*n + 1, ?, n // 2] = if %c {
            %inner: f32[2*n + 1, ?, n // 2] = if %c {
              %neg: f32[2*n + 1, ?, n // 2] = neg(%x)
              yield %neg
            } else {
              yield %x
            }
            %abs: f32[2*n + 1, ?, n // 2] = abs(%inner)
            yield %abs
          } else {
            yield %x
          }
          %tuple: (f32[2*n + 1, ?, n // 2],) = (%outer,)
          %item: f32[2*n + 1, ?, n // 2] = %tuple[0]
          %tuple_1: () = ()
          %tuple_2: ((f32[2*n + 1, ?, n // 2],), f32[2*n + 1, ?, n // 2], (), f32[*]) = (%tuple, %item, %tuple_1, %u)
          return %tuple_2
        }
        """
    )


@pytest.mark.parametrize(
    "hints, names",
    [
        (["x", "x", "x"], ["x", "x_1", "x_2"]),
        (["x_1", "x", "x"], ["x_1", "x", "x_2"]),
        (
            ["a b", "1st", "_tmp_", "é", "..", "fc.0.weight"],
            ["a_b", "v1st", "tmp", "v", "v_1", "fc.0.weight"],
        ),
        ([None, None, "relu"], ["relu", "relu_1", "relu_2"]),
    ],
)
def test_names_are_unique_and_valid(hints, names):
    x = Var("p", TensorType((2,), "float32"))
    y, nodes = x, []
    for h in hints:
        y = call("relu", y, name=h)
        nodes.append(y)
    pr = Printer()
    pr.function("main", Function.from_output([x], y))
    assert [pr.name_of(v) for v in nodes] == names


def test_parameter_names_take_part_in_uniquing():
    x = Var("x", TensorType((2,), "float32"))
    x_again = Var("x", TensorType((2,), "float32"))  # a broken function, printed for context
    y = call("add", x, x_again, name="x")
    text = print_function(Function([x], [y], y))
    assert "%x_1: f32[2] = add(%x, %x_2)" in text


@pytest.mark.parametrize(
    "value, dtype, text",
    [
        (0.1, np.float32, "0.1"),
        (1 / 3, np.float32, "0.33333334"),
        (1 / 3, np.float64, "0.3333333333333333"),
        (0.1, np.float16, "0.1"),
        (65504, np.float16, "6.55e+04"),
        (2.0, np.float32, "2.0"),
        (1e-45, np.float32, "1e-45"),
        (-0.0, np.float32, "-0.0"),
        (np.nan, np.float32, "nan"),
        (-np.inf, np.float16, "-inf"),
        (np.inf, np.float64, "inf"),
        (0.1, ml_dtypes.bfloat16, "0.100098"),
        (-7, np.int8, "-7"),
        (255, np.uint8, "255"),
        (2**62, np.int64, "4611686018427387904"),
        (True, np.bool_, "true"),
        (False, np.bool_, "false"),
    ],
)
def test_format_scalar(value, dtype, text):
    v = np.asarray(value, dtype=dtype)[()]
    assert format_scalar(v, np.dtype(dtype)) == text
    if text not in ("true", "false"):  # the text reads back as the same value of that dtype
        back = np.asarray(float(text)).astype(dtype)
        assert back == v or (np.isnan(back) and np.isnan(v))
        assert np.signbit(back) == np.signbit(v)


def test_format_values():
    assert format_values(np.float32(2)) == "2.0"
    assert format_values(np.array([[1, 2], [3, 4]], np.int32)) == "[[1, 2], [3, 4]]"
    assert format_values(np.zeros((2, 0), np.float32)) == "[[], []]"
    assert format_values(np.zeros((0, 3), np.float32)) == "[]"


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "none"),
        (True, "true"),
        (3, "3"),
        (-1, "-1"),
        (0.5, "0.5"),
        (float("-inf"), "-inf"),
        ('say "hi"', '"say \\"hi\\""'),
        ((1, -2), "[1, -2]"),
        ((), "[]"),
        ((n, 2 * n - 1, ANY), "[n, 2*n - 1, ?]"),
        (2 - 2 * n, "-2*n + 2"),
    ],
)
def test_format_attr(value, text):
    assert format_attr(value) == text


def test_format_attr_rejects_what_it_cannot_print():
    with pytest.raises(TypeError, match="cannot print attribute"):
        format_attr(object())


def test_printer_records_where_each_node_is():
    mod = sample_module()
    pr = Printer()
    pr.module(mod)
    main = mod.main
    item = main.bindings[4]
    r = main.bindings[5]
    assert pr.lines[pr.node_lines[id(item)]] == "  %item: f32[n, 4] = %pair[1]"
    assert pr.lines[pr.node_lines[id(r.then_branch)]] == "    yield %t"
    assert pr.lines[pr.node_lines[id(main)]] == "  return %tuple"
    w = mod.constants()["fc.weight"]
    assert pr.lines[pr.node_lines[id(w)]].startswith("  $fc.weight: f32[4]")
