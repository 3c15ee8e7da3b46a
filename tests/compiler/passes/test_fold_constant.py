"""fold-constant keeps quantized constants quantized: a ``dequantize`` or a widening ``cast``
of an 8/16-bit integer constant is left to run time (the weights keep their bytes) unless
``fold-constant{fold_qdq=true}``; everything else folds as before."""

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import Call, function_constants, parse

DEQUANTIZE = """
weights {
  $w: i8[2, 3] = [[1, -2, 3], [-4, 5, -6]]
  $s: f32[] = 0.5
  $z: i8[] = 1
}
def @main(%x: f32[3, 2]) -> f32[3, 2] {
  %t: i8[3, 2] = permute_dims($w, axes=[1, 0])
  %d: f32[3, 2] = dequantize(%t, $s, $z)
  %y: f32[3, 2] = add(%x, %d)
  return %y
}"""


def _ops(module) -> list[str]:
    return [b.op for b in module.main.bindings if isinstance(b, Call)]


def _const_bytes(module) -> int:
    return sum(c.data.nbytes for c in function_constants(module.main))


def test_a_dequantized_constant_stays_quantized_and_ops_on_it_still_fold():
    module = parse(DEQUANTIZE)
    after = passes.run(module, "fold-constant").module
    # the transpose of the i8 weight folds (an i8 constant); its dequantize runs at run time
    assert _ops(after) == ["dequantize", "add"]
    (d,) = [b for b in after.main.bindings if isinstance(b, Call) and b.op == "dequantize"]
    assert d.args[0].data.dtype == np.int8 and d.args[0].data.shape == (3, 2)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(run(after, x)[0], run(module, x)[0])
    # with fold_qdq it folds into an f32 constant, four times the bytes
    folded = passes.run(module, "fold-constant{fold_qdq=true}").module
    assert _ops(folded) == ["add"]
    assert _const_bytes(folded) == 6 * 4
    np.testing.assert_array_equal(run(folded, x)[0], run(module, x)[0])
    assert str(passes.parse_pass("fold-constant{fold_qdq=true}")) == "fold-constant{fold_qdq=true}"
    assert passes.parse_pass("fold-constant").fold_qdq is False


@pytest.mark.parametrize(
    "src, dst, kept",
    [
        ("i8", "i32", True),  # what fold-qdq makes of a weight
        ("u8", "f32", True),
        ("i16", "i64", True),
        ("u8", "i16", True),
        ("i8", "u8", False),  # not wider
        ("i32", "i64", False),  # not a quantized storage type (shapes, indices)
        ("i32", "f32", False),  # a quantized bias is as wide as its float
        ("f16", "f32", False),
        ("i4", "i32", False),  # the backend cannot compute on i4 at run time: folded as before
    ],
)
def test_which_casts_of_constants_stay(src, dst, kept):
    text = f"""
def @main(%x: {dst}[4]) -> {dst}[4] {{
  %c: {dst}[4] = cast(const({src}[4], [1, 2, 3, 4]), dtype={dst})
  %y: {dst}[4] = add(%x, %c)
  return %y
}}"""
    module = parse(text)
    # (dynamic-to-static folds only small integer results: shapes)
    specs = ["fold-constant", "default"] + (["dynamic-to-static"] if kept or dst[0] in "iu" else [])
    for spec in specs:
        after = passes.run(module, spec).module
        calls = [b for fn in after.functions.values() for b in fn.bindings if isinstance(b, Call)]
        assert any(c.op == "cast" for c in calls) == kept, spec
    assert "cast" not in _ops(passes.run(module, "fold-constant{fold_qdq=true}").module)


def test_the_quantized_weight_keeps_its_bytes_through_the_default_pipeline():
    module = parse(DEQUANTIZE)
    default = passes.run(module, "default").module
    assert all(c.data.dtype != np.float32 or c.data.size == 1 for c in default.constants().values())
    x = np.ones((3, 2), np.float32)
    from compiler.backend import build

    lowered = passes.run(module, "default,legalize-ops,codegen").module
    np.testing.assert_array_equal(build(lowered)(x)[0], run(module, x)[0])
