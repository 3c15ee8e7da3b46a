"""fold-constant keeps quantized constants quantized: a ``dequantize`` or a widening ``cast``
of an 8/16-bit integer constant is left to run time (the weights keep their bytes) unless
``fold-constant{fold_qdq=true}``; everything else folds as before."""

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import Call, Constant, assert_structural_equal, function_constants, parse
from compiler.ir.symbolic import ANY
from tests.compiler.passes.helpers import OPAQUE_ON_CONSTANT, before_after, case_tests
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C

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

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

FOLD = [
    C(
        "fold-constant",
        "an op on unnamed constants becomes a constant named after the binding",
        """
def @main(%x: f32[2]) -> f32[2] {
  %e: f32[2] = exp(const(f32[2], [0.0, 0.0]))
  %y: f32[2] = add(%x, %e)
  return %y
}""",
        """
weights {
  $const.e: f32[2] = [1.0, 1.0]
}
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = add(%x, $const.e)
  return %y
}""",
        numbers=True,
    ),
    C(
        "fold-constant",
        "a folded constant is named after its first named input and the op",
        """
weights {
  $w: f32[2] = [1.0, 4.0]
}
def @main(%x: f32[2]) -> f32[2] {
  %s: f32[2] = sqrt($w)
  %y: f32[2] = multiply(%x, %s)
  return %y
}""",
        """
weights {
  $w.sqrt: f32[2] = [1.0, 2.0]
}
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = multiply(%x, $w.sqrt)
  return %y
}""",
    ),
    C(
        "fold-constant",
        "%t[0] of a tuple literal whose item is a constant is the constant",
        """
def @main(%x: f32[2]) -> (f32[2], f32[2]) {
  %t: (f32[2], f32[2]) = (const(f32[2], [1.0, 2.0]), %x)
  %a: f32[2] = %t[0]
  %b: f32[2] = %t[1]
  %y: f32[2] = add(%a, %b)
  %o: (f32[2], f32[2]) = (%y, %b)
  return %o
}""",
        # %t[1] is not a constant: left to canonicalize-bindings
        """
def @main(%x: f32[2]) -> (f32[2], f32[2]) {
  %t: (f32[2], f32[2]) = (const(f32[2], [1.0, 2.0]), %x)
  %b: f32[2] = %t[1]
  %y: f32[2] = add(const(f32[2], [1.0, 2.0]), %b)
  %o: (f32[2], f32[2]) = (%y, %b)
  return %o
}""",
    ),
    C(
        "fold-constant",
        "an op folded through a tuple item of a tuple literal",
        """
def @main(%x: f32[2]) -> f32[2] {
  %t: (f32[2], f32[2]) = (const(f32[2], [0.0, 0.0]), %x)
  %a: f32[2] = %t[0]
  %e: f32[2] = exp(%a)
  %y: f32[2] = add(%x, %e)
  return %y
}""",
        """
weights {
  $const.e: f32[2] = [1.0, 1.0]
}
def @main(%x: f32[2]) -> f32[2] {
  %t: (f32[2], f32[2]) = (const(f32[2], [0.0, 0.0]), %x)
  %y: f32[2] = add(%x, $const.e)
  return %y
}""",
    ),
]

TIED = """
weights {
  $w: f32[3, 2] = [[1, 2], [3, 4], [5, 6]]
}"""

FOLD += [
    C(
        "fold-constant",
        "a transpose of a shared constant only matmuls read -> the matmul reads it transposed",
        # a tied embedding: the table is read as it is (take) and transposed (the output
        # layer); folding the transpose would store the table twice
        TIED
        + """
def @main(%ids: i64[4], %h: f32[4, 2]) -> (f32[4, 2], f32[4, 3]) {
  %e: f32[4, 2] = take($w, %ids, axis=0)
  %t: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %y: f32[4, 3] = matmul(%h, %t)
  %o: (f32[4, 2], f32[4, 3]) = (%e, %y)
  return %o
}""",
        TIED
        + """
def @main(%ids: i64[4], %h: f32[4, 2]) -> (f32[4, 2], f32[4, 3]) {
  %e: f32[4, 2] = take($w, %ids, axis=0)
  %y: f32[4, 3] = matmul(%h, $w, transpose_b=true)
  %o: (f32[4, 2], f32[4, 3]) = (%e, %y)
  return %o
}""",
    ),
    C(
        "fold-constant",
        "a shared constant's transpose read with transpose_b -> the constant read as it is",
        TIED
        + """
def @main(%h: f32[4, 3]) -> (f32[4, 2], f32[3, 2]) {
  %t: f32[2, 3] = permute_dims($w)
  %y: f32[4, 2] = matmul(%h, %t, transpose_b=true)
  %o: (f32[4, 2], f32[3, 2]) = (%y, $w)
  return %o
}""",
        TIED
        + """
def @main(%h: f32[4, 3]) -> (f32[4, 2], f32[3, 2]) {
  %y: f32[4, 2] = matmul(%h, $w)
  %o: (f32[4, 2], f32[3, 2]) = (%y, $w)
  return %o
}""",
        numbers=True,
    ),
    C(
        "fold-constant",
        "a transpose of a constant nothing else reads is folded (the copy replaces it)",
        TIED
        + """
def @main(%h: f32[4, 2]) -> f32[4, 3] {
  %t: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %y: f32[4, 3] = matmul(%h, %t)
  return %y
}""",
        """
weights {
  $w.permute_dims: f32[2, 3] = [[1, 3, 5], [2, 4, 6]]
}
def @main(%h: f32[4, 2]) -> f32[4, 3] {
  %y: f32[4, 3] = matmul(%h, $w.permute_dims)
  return %y
}""",
    ),
    C(
        "fold-constant",
        "a shared constant's transpose that is also returned is folded (its value is needed)",
        TIED
        + """
def @main(%ids: i64[4], %h: f32[4, 2]) -> (f32[4, 2], f32[4, 3], f32[2, 3]) {
  %e: f32[4, 2] = take($w, %ids, axis=0)
  %t: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %y: f32[4, 3] = matmul(%h, %t)
  %o: (f32[4, 2], f32[4, 3], f32[2, 3]) = (%e, %y, %t)
  return %o
}""",
        """
weights {
  $w: f32[3, 2] = [[1, 2], [3, 4], [5, 6]]
  $w.permute_dims: f32[2, 3] = [[1, 3, 5], [2, 4, 6]]
}
def @main(%ids: i64[4], %h: f32[4, 2]) -> (f32[4, 2], f32[4, 3], f32[2, 3]) {
  %e: f32[4, 2] = take($w, %ids, axis=0)
  %y: f32[4, 3] = matmul(%h, $w.permute_dims)
  %o: (f32[4, 2], f32[4, 3], f32[2, 3]) = (%e, %y, $w.permute_dims)
  return %o
}""",
    ),
    C(
        "fold-constant",
        "a matmul of a constant by its own transpose folds whole",
        TIED
        + """
def @main(%x: f32[3, 3]) -> f32[3, 3] {
  %t: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %m: f32[3, 3] = matmul($w, %t)
  %y: f32[3, 3] = add(%x, %m)
  return %y
}""",
        """
weights {
  $w.matmul: f32[3, 3] = [[5, 11, 17], [11, 25, 39], [17, 39, 61]]
}
def @main(%x: f32[3, 3]) -> f32[3, 3] {
  %y: f32[3, 3] = add(%x, $w.matmul)
  return %y
}""",
    ),
]

SYMBOLIC = """
def @main(%x: f32[n]) -> f32[n] {
  %z: f32[n] = zeros(shape=[n], dtype=f32)
  %y: f32[n] = add(%x, %z)
  return %y
}"""

def test_fold_constant_leaves_an_op_with_symbolic_attributes_alone():
    """``zeros(shape=[n])`` has no inputs, so all of them are constants; its shape is not
    known until run time: it is not folded (and folding it is not attempted)."""
    module = parse(SYMBOLIC)
    result = passes.run(module, "fold-constant")
    assert result.ok, result.failure and result.failure.traceback
    assert result.module is module

def test_fold_constant_folds_the_same_op_with_a_static_shape():
    """The guard above is about symbols, not about ops without inputs."""
    static = SYMBOLIC.replace("n]", "3]").replace("[n", "[3")
    after = passes.run(parse(static), "fold-constant").module
    assert [b.op for b in after["main"].bindings] == ["add"]

def test_fold_constant_does_not_forward_a_tuple_item_that_is_not_a_constant():
    before = parse(
        """
def @main(%x: f32[2]) -> f32[2] {
  %t: (f32[2], f32[2]) = (const(f32[2], [1.0, 2.0]), %x)
  %b: f32[2] = %t[1]
  %y: f32[2] = exp(%b)
  return %y
}"""
    )
    assert passes.run(before, "fold-constant").module is before

def test_fold_constant_folds_up_to_max_bytes_inclusive():
    text = """
def @main(%x: f32[4]) -> f32[4] {
  %e: f32[4] = exp(const(f32[4], [0.0, 0.0, 0.0, 0.0]))
  %y: f32[4] = add(%x, %e)
  return %y
}"""
    assert len(passes.run(parse(text), "fold-constant{max_bytes=16}").module["main"].bindings) == 1
    assert len(passes.run(parse(text), "fold-constant{max_bytes=15}").module["main"].bindings) == 2

def test_fold_constant_needs_every_input_constant():
    text = """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = add(%x, const(f32[2], [1.0, 2.0]))
  return %y
}"""
    module = parse(text)
    assert passes.run(module, "fold-constant").module is module

# an opaque op (no converter: run by torch / onnxruntime) is a barrier to every pass
OPAQUE = [
    K(
        "fold-constant",
        "an opaque op on constants (its framework runs it, never the compiler)",
        f"""
def @main() -> f32[3] {{
  %c: f32[3] = {OPAQUE_ON_CONSTANT}
  return %c
}}""",
    ),
]

def test_fold_constant_names_folded_values_after_their_source():
    before, after = before_after(
        "fold-constant",
        """
weights {
  $fc.weight: f32[2, 3] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
}
def @main(%x: f32[n, 3]) -> f32[n, 2] {
  %wt: f32[3, 2] = permute_dims($fc.weight, axes=[1, 0])
  %two: f32[3, 2] = multiply(%wt, const(f32[], 2.0))
  %y: f32[n, 2] = matmul(%x, %two)
  return %y
}""",
    )
    expected = parse(
        """
weights {
  $fc.weight.permute_dims.multiply: f32[3, 2] = [[2.0, 8.0], [4.0, 10.0], [6.0, 12.0]]
}
def @main(%x: f32[n, 3]) -> f32[n, 2] {
  %y: f32[n, 2] = matmul(%x, $fc.weight.permute_dims.multiply)
  return %y
}"""
    )
    assert_structural_equal(after, expected)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0])

def test_fold_constant_gives_each_folded_constant_a_unique_name():
    _, after = before_after(
        "fold-constant",
        """
weights {
  $w: f32[2] = [1.0, 2.0]
  $w.exp: f32[2] = [0.0, 0.0]
}
def @main(%x: f32[2]) -> (f32[2], f32[2]) {
  %e: f32[2] = exp($w)
  %a: f32[2] = add(%x, %e)
  %b: f32[2] = add(%x, $w.exp)
  %t: (f32[2], f32[2]) = (%a, %b)
  return %t
}""",
    )
    names = sorted(after.constants())
    assert names == ["w.exp", "w.exp_1"]

def test_fold_constant_leaves_a_module_without_constant_ops_alone():
    module = parse("def @main(%x: f32[2]) -> f32[2] {\n  %y: f32[2] = exp(%x)\n  return %y\n}")
    assert passes.run(module, "fold-constant").module is module

def test_folded_constant_provenance_points_at_the_source_and_the_pass():
    module = parse(
        """
weights {
  $w: f32[2] = [1.0, 2.0]
}
def @main(%x: f32[2]) -> f32[2] {
  %e: f32[2] = exp($w)  loc(module="layer1", op="aten.exp.default")
  %y: f32[2] = add(%x, %e)
  return %y
}"""
    )
    after = passes.run(module, "fold-constant").module
    (folded,) = [c for c in after.constants().values() if c.name == "w.exp"]
    assert isinstance(folded, Constant)
    assert folded.prov.module_path == "layer1" and folded.prov.pass_name == "fold-constant"

def test_fold_constant_leaves_values_over_max_bytes_unfolded():
    # a 1e8-element fill is 400 MB once folded; from a few bytes of input it must not be
    text = """
def @main() -> (f32[100000000], f32[4]) {
  %big: f32[100000000] = full(shape=[100000000], value=1.5, dtype=f32)
  %small: f32[4] = full(shape=[4], value=1.5, dtype=f32)
  %t: (f32[100000000], f32[4]) = (%big, %small)
  return %t
}"""
    module = parse(text)
    assert passes.parse_pass("fold-constant").max_bytes == 64 << 20  # the default
    after = passes.run(module, "fold-constant").module
    assert [b.op for b in after.main.bindings if isinstance(b, Call)] == ["full"]
    assert [c.data.nbytes for c in function_constants(after.main)] == [16]
    # the option sets the limit (in bytes, inclusive)
    for limit, folded in ((15, 0), (16, 1)):
        after = passes.run(module, f"fold-constant{{max_bytes={limit}}}").module
        assert len(function_constants(after.main)) == folded
    assert str(passes.parse_pass("fold-constant{max_bytes=16}")) == "fold-constant{max_bytes=16}"
    with pytest.raises(passes.PipelineError, match="max_bytes must be >= 0, got -1"):
        passes.parse_pass("fold-constant{max_bytes=-1}")

def test_fold_constant_bounds_a_value_whose_shape_comes_from_a_constant_input():
    # pad by a pads *tensor*: the result type says '?', the size is in the constant's values
    text = """
def @main() -> bool[?] {
  %p: bool[?] = pad(const(bool[0], []), const(i64[2], [0, 100000000]), value=1.0)
  return %p
}"""
    module = parse(text)
    for spec in ("fold-constant", "dynamic-to-static"):
        after = passes.run(module, spec).module
        assert all(c.data.size <= 2 for c in function_constants(after.main))
    small = parse(text.replace("100000000", "3"))
    after = passes.run(small, "fold-constant").module
    assert after.main.output.data.tolist() == [True, True, True]

@pytest.fixture
def data_sized_op():
    """``x[x != 0]``: an op whose result size no type gives (like nonzero), for the test only."""
    from compiler.ir import TensorType, op_registry

    computed = []

    def compute(values, attrs):
        computed.append(values[0].size)
        return values[0][values[0] != 0]

    name = "_test_data_sized"
    op_registry.define_op(
        name,
        inputs=("x",),
        infer=lambda types, attrs: TensorType((ANY,), types[0].dtype),
        compute=compute,
        doc="test only",
    )
    yield name, computed
    op_registry._REGISTRY.pop(name)

def test_fold_constant_computes_a_data_sized_value_only_from_small_inputs(data_sized_op):
    op, computed = data_sized_op
    text = f"""
def @main() -> f32[?] {{
  %y: f32[?] = {op}(const(f32[4], [0.0, 1.0, 0.0, 2.0]))
  return %y
}}"""
    after = passes.run(parse(text), "fold-constant").module
    assert after.main.output.data.tolist() == [1.0, 2.0]
    # inputs of 16 bytes could give up to 64 times as much: refused below 1 KiB, not computed
    after = passes.run(parse(text), "fold-constant{max_bytes=1000}").module
    assert isinstance(after.main.output, Call) and computed == [4]  # (the first run only)

CASES = FOLD + OPAQUE
test_rule, test_guard = case_tests(CASES)
