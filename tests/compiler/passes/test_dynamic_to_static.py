"""dynamic-to-static: Before/Expected pairs, and bug 3 (ONNX Squeeze inside an If)."""

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import evaluate, run
from compiler.ir import If, Module, parse, verify
from tests.compiler.passes import helpers
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import apply, case_tests

PASS = "dynamic-to-static"


def _apply(before: str) -> Module:
    return apply(before, PASS)


def verify_pass(before: str, expected: str) -> Module:
    """The pass on ``before`` gives ``expected``, structurally."""
    return helpers.verify_pass(before, expected, PASS, roundtrip=False)


# bug 3: ReflectionPad3d(padding=(0, 0, -43, 0, 0, -46)) then squeeze(1), as the
# TorchScript ONNX exporter (opset 17) writes it: the pads are computed from the torch padding
# list (Concat with ConstantOfShape, Reshape, Slice reversing, Transpose, Reshape, Cast), and
# the Squeeze sits in an If on Equal(Gather(Shape(pad), [1]), [1]). The branches have ranks 4
# and 5, so the If's type has unknown rank.
SEEDS_PAD_SQUEEZE = """
def @main(%input: f32[13, 1, 47, 44, 1]) -> f32[*] {
  %zeros: i64[4] = zeros(shape=[4], dtype=i64)
    loc(op="ConstantOfShape", node="/p/ConstantOfShape")
  %padding: i64[10] = concat(const(i64[6], [0, 0, -43, 0, 0, -46]), %zeros, axis=0)
    loc(op="Concat", node="/p/Concat")
  %pairs: i64[?, ?] = reshape(%padding, const(i64[2], [-1, 2]), allowzero=false)
    loc(op="Reshape", node="/p/Reshape")
  %reversed: i64[?, ?] = strided_slice(%pairs, begin=[-1], end=[-9223372036854775807],
                                      strides=[-1], axes=[0])  loc(op="Slice", node="/p/Slice")
  %by_side: i64[?, ?] = permute_dims(%reversed, axes=[1, 0])
    loc(op="Transpose", node="/p/Transpose")
  %flat: i64[?] = reshape(%by_side, const(i64[1], [-1]), allowzero=false)
    loc(op="Reshape", node="/p/Reshape_1")
  %pads: i64[?] = cast(%flat, dtype=i64)  loc(op="Cast", node="/p/Cast")
  %pad: f32[?, ?, ?, ?, ?] = pad(%input, %pads, mode="reflect")  loc(op="Pad", node="/p/Pad")
  %shape: i64[5] = shape_of(%pad)  loc(op="Shape", node="/Shape")
  %dim1: i64[1] = take(%shape, const(i64[1], [1]), axis=0)  loc(op="Gather", node="/Gather")
  %is_one: bool[1] = equal(%dim1, const(i64[1], [1]))  loc(op="Equal", node="/Equal")
  %out: f32[*] = if %is_one {
    %squeezed: f32[?, ?, ?, ?] = squeeze(%pad, axes=[1])  loc(op="Squeeze", node="/Squeeze")
    yield %squeezed
  } else {
    %same: f32[?, ?, ?, ?, ?] = identity(%pad)  loc(op="Identity", node="/Identity")
    yield %same
  }  loc(op="If", node="/If")
  return %out
}
"""

SEEDS_PAD_SQUEEZE_STATIC = """
def @main(%input: f32[13, 1, 47, 44, 1]) -> f32[13, 1, 1, 1] {
  %pad: f32[13, 1, 1, 1, 1] = pad(%input, pads=[0, 0, 0, -43, 0, 0, 0, -46, 0, 0], mode="reflect")
  %squeezed: f32[13, 1, 1, 1] = squeeze(%pad, axes=[1])
  return %squeezed
}
"""


def seeds_input(seed: int = 0) -> np.ndarray:
    """An input of the bug 3 shape."""
    return np.random.default_rng(seed).standard_normal((13, 1, 47, 44, 1)).astype(np.float32)


def torch_pad_squeeze(x: np.ndarray) -> np.ndarray:
    """The reference: torch.nn.ReflectionPad3d((0, 0, -43, 0, 0, -46)) then squeeze(1)."""
    import torch

    pad = torch.nn.ReflectionPad3d((0, 0, -43, 0, 0, -46))
    with torch.no_grad():
        return pad(torch.from_numpy(x)).squeeze(1).numpy()


def test_seeds_squeeze_in_if_becomes_static_13_1_1_1():
    before = parse(SEEDS_PAD_SQUEEZE)
    out_if = before.main.output
    assert isinstance(out_if, If) and out_if.ty.shape is None  # unknown rank before
    after = verify_pass(SEEDS_PAD_SQUEEZE, SEEDS_PAD_SQUEEZE_STATIC)
    assert after.main.ret_type.shape == (13, 1, 1, 1)
    assert not any(isinstance(n, If) for n in after.main.iter_nodes())


def test_seeds_values_match_torch_and_types_match_values():
    after = _apply(SEEDS_PAD_SQUEEZE)
    x = seeds_input()
    expected = torch_pad_squeeze(x)
    assert expected.shape == (13, 1, 1, 1)
    ev = evaluate(after, [x], check_types=True)
    assert ev.mismatches == []
    np.testing.assert_array_equal(ev.outputs[0], expected)
    np.testing.assert_array_equal(run(parse(SEEDS_PAD_SQUEEZE), x)[0], expected)


def test_seeds_folded_nodes_keep_their_source_and_name_the_pass():
    after = _apply(SEEDS_PAD_SQUEEZE)
    pad, squeeze = after.main.bindings
    assert pad.prov.source_node == "/p/Pad" and pad.prov.pass_name == "dynamic-to-static"
    assert squeeze.prov.source_node == "/Squeeze"


def test_shape_of_a_static_value_folds_and_reshape_takes_the_attribute_form():
    verify_pass(
        """
        def @main(%x: f32[2, 3, 4]) -> f32[?, ?] {
          %s: i64[3] = shape_of(%x)
          %lead: i64[1] = take(%s, const(i64[1], [0]), axis=0)
          %target: i64[2] = concat(%lead, const(i64[1], [-1]), axis=0)
          %y: f32[?, ?] = reshape(%x, %target)
          %z: f32[?, ?] = relu(%y)
          return %z
        }
        """,
        """
        def @main(%x: f32[2, 3, 4]) -> f32[2, 12] {
          %y: f32[2, 12] = reshape(%x, shape=[2, -1])
          %z: f32[2, 12] = relu(%y)
          return %z
        }
        """,
    )


def test_if_on_a_false_constant_condition_inlines_the_else_branch():
    # Once %y is known to be [4, 2], the then branch's squeeze no longer type-checks: the
    # branch that is not taken must be dropped, not rewritten.
    verify_pass(
        """
        def @main(%x: f32[4, 2]) -> f32[*] {
          %s: i64[2] = shape_of(%x)
          %y: f32[?, ?] = reshape(%x, %s)
          %d: i64[1] = take(%s, const(i64[1], [1]), axis=0)
          %c: bool[1] = equal(%d, const(i64[1], [1]))
          %r: f32[*] = if %c {
            %a: f32[?] = squeeze(%y, axes=[1])
            yield %a
          } else {
            %b: f32[?, ?] = exp(%y)
            %b2: f32[4, 2] = add(%b, %x)
            yield %b2
          }
          %o: f32[*] = relu(%r)
          return %o
        }
        """,
        """
        def @main(%x: f32[4, 2]) -> f32[4, 2] {
          %y: f32[4, 2] = reshape(%x, shape=[4, 2])
          %b: f32[4, 2] = exp(%y)
          %b2: f32[4, 2] = add(%b, %x)
          %o: f32[4, 2] = relu(%b2)
          return %o
        }
        """,
    )


def test_if_on_a_runtime_condition_stays_and_its_type_becomes_static():
    verify_pass(
        """
        def @main(%x: f32[2, 6], %flag: bool[]) -> f32[?, ?] {
          %s: i64[2] = shape_of(%x)
          %t: i64[2] = take(%s, const(i64[2], [1, 0]), axis=0)
          %r: f32[?, ?] = if %flag {
            %a: f32[?, ?] = reshape(%x, %t)
            yield %a
          } else {
            %b: f32[?, ?] = reshape(%x, const(i64[2], [6, 2]))
            yield %b
          }
          return %r
        }
        """,
        """
        def @main(%x: f32[2, 6], %flag: bool[]) -> f32[6, 2] {
          %r: f32[6, 2] = if %flag {
            %a: f32[6, 2] = reshape(%x, shape=[6, 2])
            yield %a
          } else {
            %b: f32[6, 2] = reshape(%x, shape=[6, 2])
            yield %b
          }
          return %r
        }
        """,
    )


def test_inlined_branch_holding_an_if_keeps_what_that_if_reads_bound():
    after = verify_pass(
        """
        def @main(%x: f32[2, 3], %flag: bool[]) -> f32[*] {
          %s: i64[2] = shape_of(%x)
          %d: i64[1] = take(%s, const(i64[1], [0]), axis=0)
          %c: bool[1] = equal(%d, const(i64[1], [2]))
          %r: f32[*] = if %c {
            %e: f32[2, 3] = exp(%x)
            %inner: f32[*] = if %flag {
              %a: f32[2, 3] = add(%e, %e)
              yield %a
            } else {
              %b: f32[3, 2] = permute_dims(%e, axes=[1, 0])
              yield %b
            }
            yield %inner
          } else {
            yield %x
          }
          return %r
        }
        """,
        """
        def @main(%x: f32[2, 3], %flag: bool[]) -> f32[?, ?] {
          %e: f32[2, 3] = exp(%x)
          %inner: f32[?, ?] = if %flag {
            %a: f32[2, 3] = add(%e, %e)
            yield %a
          } else {
            %b: f32[3, 2] = permute_dims(%e, axes=[1, 0])
            yield %b
          }
          return %inner
        }
        """,
    )
    verify(after)


def test_symbolic_shapes_and_weights_are_left_alone():
    text = """
    weights {
      $w: f32[3, 2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    }
    def @main(%x: f32[n, 3]) -> f32[?, ?] {
      %wt: f32[2, 3] = permute_dims($w, axes=[1, 0])
      %s: i64[2] = shape_of(%x)
      %y: f32[?, ?] = reshape(%x, %s)
      %z: f32[?, ?] = add(%y, %y)
      return %z
    }
    """
    before = parse(text)
    result = passes.run(before, "dynamic-to-static")
    assert result.module is before  # nothing static to fold: the very same module
    assert not result.snapshots[0].changed


def test_values_are_unchanged_on_a_dynamic_pad_and_an_unsqueezed_branch():
    text = """
    def @main(%x: f32[3, 5]) -> f32[*] {
      %pads: i64[4] = concat(const(i64[2], [1, -1]), const(i64[2], [2, 0]), axis=0)
      %p: f32[?, ?] = pad(%x, %pads, mode="edge")
      %s: i64[2] = shape_of(%p)
      %d: i64[1] = take(%s, const(i64[1], [0]), axis=0)
      %c: bool[1] = equal(%d, const(i64[1], [1]))
      %r: f32[*] = if %c {
        %q: f32[?] = squeeze(%p, axes=[0])
        yield %q
      } else {
        yield %p
      }
      return %r
    }
    """
    after = _apply(text)
    assert str(after.main.ret_type) == "f32[6, 4]"
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    ev = evaluate(after, [x], check_types=True)
    assert ev.mismatches == []
    np.testing.assert_array_equal(ev.outputs[0], run(parse(text), x)[0])


@pytest.mark.parametrize("spec", ["dynamic-to-static", "dynamic-to-static,fold-constant,dce"])
def test_is_recorded_as_one_step(spec):
    result = passes.run(parse(SEEDS_PAD_SQUEEZE), spec)
    assert result.ok and result.snapshots[0].pass_name == "dynamic-to-static"
    assert result.snapshots[0].changed
    assert result.module.main.ret_type.shape == (13, 1, 1, 1)

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

DYNAMIC_TO_STATIC = [
    C(
        "dynamic-to-static",
        "shape_of a static value is a constant",
        """
def @main(%x: f32[2, 3]) -> i64[2] {
  %s: i64[2] = shape_of(%x)
  return %s
}""",
        """
def @main(%x: f32[2, 3]) -> i64[2] {
  return const(i64[2], [2, 3])
}""",
    ),
    C(
        "dynamic-to-static",
        "a small integer call on constants is its value",
        """
def @main(%x: f32[2]) -> i64[3] {
  %y: i64[3] = add(const(i64[3], [1, 2, 3]), const(i64[3], [10, 20, 30]))
  return %y
}""",
        """
def @main(%x: f32[2]) -> i64[3] {
  return const(i64[3], [11, 22, 33])
}""",
    ),
    C(
        "dynamic-to-static",
        "a constant shape input becomes the attribute; the types downstream become static",
        """
def @main(%x: f32[2, 3]) -> f32[?, ?] {
  %y: f32[?, ?] = reshape(%x, const(i64[2], [3, 2]))
  %z: f32[?, ?] = relu(%y)
  return %z
}""",
        """
def @main(%x: f32[2, 3]) -> f32[3, 2] {
  %y: f32[3, 2] = reshape(%x, allowzero=true, shape=[3, 2])
  %z: f32[3, 2] = relu(%y)
  return %z
}""",
    ),
    C(
        "dynamic-to-static",
        "an If on a constant true is its then branch",
        """
def @main(%x: f32[2, 3]) -> f32[*] {
  %o: f32[*] = if const(bool[], true) {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[3, 2] = reshape(%x, shape=[3, 2])
    yield %b
  }
  return %o
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %a: f32[2, 3] = exp(%x)
  return %a
}""",
    ),
    C(
        "dynamic-to-static",
        "an If on a constant false is its else branch",
        """
def @main(%x: f32[2, 3]) -> f32[*] {
  %o: f32[*] = if const(bool[], false) {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[3, 2] = reshape(%x, shape=[3, 2])
    yield %b
  }
  return %o
}""",
        """
def @main(%x: f32[2, 3]) -> f32[3, 2] {
  %b: f32[3, 2] = reshape(%x, allowzero=true, shape=[3, 2])
  return %b
}""",
    ),
    C(
        "dynamic-to-static",
        "an If whose branches now agree gets their type",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[*] {
  %o: f32[*] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[2, 3] = relu(%x)
    yield %b
  }
  return %o
}""",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[2, 3] {
  %o: f32[2, 3] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[2, 3] = relu(%x)
    yield %b
  }
  return %o
}""",
    ),
    C(
        "dynamic-to-static",
        "only the taken branch is rewritten (squeeze of a dim now known to be 2 is dropped)",
        """
def @main(%x: f32[2, 3]) -> f32[*] {
  %r: f32[?, ?] = reshape(%x, const(i64[2], [3, 2]))
  %s: i64[2] = shape_of(%r)
  %d: i64[1] = take(%s, const(i64[1], [1]), axis=0)
  %c: bool[1] = equal(%d, const(i64[1], [1]))
  %o: f32[*] = if %c {
    %q: f32[?] = squeeze(%r, axes=[1])
    yield %q
  } else {
    %i: f32[?, ?] = identity(%r)
    yield %i
  }
  return %o
}""",
        """
def @main(%x: f32[2, 3]) -> f32[3, 2] {
  %r: f32[3, 2] = reshape(%x, allowzero=true, shape=[3, 2])
  %i: f32[3, 2] = identity(%r)
  return %i
}""",
    ),
    K(
        "dynamic-to-static",
        "shape_of a value of symbolic shape",
        """
def @main(%x: f32[n, 3]) -> i64[2] {
  %s: i64[2] = shape_of(%x)
  return %s
}""",
    ),
    K(
        "dynamic-to-static",
        "a float call on constants (data: fold-constant's job)",
        """
def @main(%x: f32[2]) -> f32[2] {
  %e: f32[2] = exp(const(f32[2], [0.0, 1.0]))
  %y: f32[2] = add(%x, %e)
  return %y
}""",
    ),
    K(
        "dynamic-to-static",
        "an integer tensor bigger than a shape (1025 elements)",
        """
def @main(%x: i64[1025]) -> i64[1025] {
  %z: i64[1025] = zeros(shape=[1025], dtype=i64)
  %y: i64[1025] = add(%x, %z)
  return %y
}""",
    ),
]

CASES = DYNAMIC_TO_STATIC
test_rule, test_guard = case_tests(CASES)
