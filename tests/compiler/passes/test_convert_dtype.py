"""convert-dtype and to-mixed-precision: Before/Expected pairs, signatures, float16 numerics."""

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import DType, Module, assert_structural_equal, parse
from compiler.passes import PipelineError
from compiler.passes.convert_dtype import ConvertDtype, ToMixedPrecision
from tests.compiler.passes.helpers import OPAQUE_CUMSUM, apply, case_tests
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.test_decompose_ops import MODELS, model


def random_inputs(module: Module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for p in module.main.params:
        shape = [d if isinstance(d, int) else 3 for d in p.ty.shape]
        if p.ty.dtype.is_float:
            arrays.append(rng.standard_normal(shape).astype(p.ty.dtype.numpy))
        else:
            arrays.append(rng.integers(0, 4, shape).astype(p.ty.dtype.numpy))
    return arrays


def assert_close(before: Module, after: Module, rtol: float, atol: float, seed: int = 0):
    inputs = random_inputs(before, seed)
    for got, want in zip(run(after, *inputs), run(before, *inputs), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ----- convert-dtype ----------------------------------------------------------------------


def test_convert_dtype_casts_at_the_boundary_and_converts_compute():
    before = parse("""
weights {
  $w: f32[8] = [1, 2, 3, 4, 5, 6, 7, 8]
}
def @main(%x: f32[4, 8], %i: i64[4, 8]) -> f32[4, 8] {
  %a: f32[4, 8] = add(%x, $w)
  %m: f32[4, 8] = multiply(%a, const(f32[], 0.5))
  %c: f32[4, 8] = cast(%i, dtype=f32)
  %r: f32[4, 8] = add(%m, %c)
  return %r
}
""")
    expected = parse("""
weights {
  $w: f32[8] = [1, 2, 3, 4, 5, 6, 7, 8]
}
def @main(%x: f32[4, 8], %i: i64[4, 8]) -> f32[4, 8] {
  %x16: f16[4, 8] = cast(%x, dtype=f16)
  %w16: f16[8] = cast($w, dtype=f16)
  %a: f16[4, 8] = add(%x16, %w16)
  %m: f16[4, 8] = multiply(%a, const(f16[], 0.5))
  %c: f16[4, 8] = cast(%i, dtype=f16)
  %r: f16[4, 8] = add(%m, %c)
  %out: f32[4, 8] = cast(%r, dtype=f32)
  return %out
}
""")
    after = apply(before, "convert-dtype{dtype=float16}")
    assert_structural_equal(after, expected)
    assert after.main.params == before.main.params  # the signature is kept
    assert_close(before, after, rtol=2e-3, atol=2e-3)


def test_fold_constant_afterwards_halves_the_weights():
    before = parse("""
weights {
  $w: f32[2, 3] = [[1, 2, 3], [4, 5, 6]]
}
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %a: f32[2, 3] = multiply(%x, $w)
  return %a
}
""")
    after = apply(before, "convert-dtype{dtype=float16},fold-constant")
    consts = after.constants()
    assert list(consts) == ["w.cast"] and consts["w.cast"].ty.dtype is DType.float16
    assert consts["w.cast"].nbytes * 2 == before.constants()["w"].nbytes


def test_tuple_outputs_calls_and_branches():
    before = parse("""
def @main(%x: f32[4], %c: bool[]) -> (f32[4], f32[]) {
  %e: f32[4] = exp(%x)
  %r: f32[4] = if %c {
    %t: f32[4] = tanh(%e)
    yield %t
  } else {
    yield %e
  }
  %s: f32[] = call @total(%r)
  %o: (f32[4], f32[]) = (%r, %s)
  return %o
}

def @total(%v: f32[4]) -> f32[] attrs {private = true} {
  %s: f32[] = sum(%v)
  return %s
}
""")
    after = apply(before, "convert-dtype{dtype=float16}")
    text = str(after)
    assert "def @main(%x: f32[4], %c: bool[]) -> (f32[4], f32[])" in text
    assert "def @total(%v: f32[4]) -> f32[]" in text  # each function keeps its signature
    assert "if %c" in text and "f16[4] = if" in text
    x = np.linspace(-1, 1, 4).astype(np.float32)
    for c in (True, False):
        for got, want in zip(run(after, x, np.array(c)), run(before, x, np.array(c)), strict=True):
            np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_dtype_attributes_follow():
    before = parse("""
def @main(%x: f32[3]) -> f32[3] {
  %f: f32[3] = full(shape=[3], value=2.0, dtype=f32)
  %y: f32[3] = multiply(%x, %f)
  return %y
}
""")
    after = apply(before, "convert-dtype{dtype=float16}")
    assert "full(dtype=f16, shape=[3], value=2.0)" in str(after)
    assert_close(before, after, rtol=1e-3, atol=1e-3)


def test_modules_without_float32_are_returned_unchanged():
    module = parse("""
def @main(%i: i64[3]) -> i64[3] {
  %y: i64[3] = add(%i, %i)
  return %y
}
""")
    assert apply(module, "convert-dtype{dtype=float16}") is module
    f32 = parse("""
def @main(%x: f32[3]) -> f32[3] {
  %y: f32[3] = exp(%x)
  return %y
}
""")
    assert apply(f32, "convert-dtype{dtype=float32}") is f32


def test_convert_dtype_spec():
    p = ConvertDtype("float16")
    assert str(p) == "convert-dtype{dtype=float16}"
    assert passes.parse_pass(str(p)) == p
    assert str(ConvertDtype(DType.bfloat16)) == "convert-dtype{dtype=bfloat16}"
    with pytest.raises(PipelineError, match="floating-point"):
        passes.parse_pass("convert-dtype{dtype=int8}")
    with pytest.raises(PipelineError):
        passes.parse_pass("convert-dtype")  # the target dtype is required


# ----- to-mixed-precision -----------------------------------------------------------------


def test_to_mixed_precision_spec():
    assert str(ToMixedPrecision()) == "to-mixed-precision"
    p = passes.parse_pass("to-mixed-precision{out_dtype=float16}")
    assert p == ToMixedPrecision(DType.float16)
    assert str(p) == "to-mixed-precision{out_dtype=float16}"


def test_to_mixed_precision_leaves_modules_without_heavy_ops_alone():
    module = parse("""
def @main(%x: f32[3]) -> f32[3] {
  %y: f32[3] = exp(%x)
  return %y
}
""")
    assert apply(module, "to-mixed-precision") is module


def test_to_mixed_precision_casts_the_inputs_of_heavy_ops():
    weights = """
weights {
  $w: f32[3, 2] = [[1, 2], [3, 4], [5, 6]]
  $b: f32[3] = [0.5, -1, 2]
}
"""
    before = parse(
        weights
        + """
def @main(%x: f32[n, 2]) -> f32[n, 3] {
  %y: f32[n, 3] = linear(%x, $w, $b)
  %r: f32[n, 3] = relu(%y)
  return %r
}
"""
    )
    expected = parse(
        weights
        + """
def @main(%x: f32[n, 2]) -> f32[n, 3] {
  %xh: f16[n, 2] = cast(%x, dtype=f16)
  %wh: f16[3, 2] = cast($w, dtype=f16)
  %bh: f16[3] = cast($b, dtype=f16)
  %y: f32[n, 3] = linear(%xh, %wh, %bh, out_dtype=f32)
  %r: f32[n, 3] = relu(%y)
  return %r
}
"""
    )
    after = apply(before, "to-mixed-precision")
    assert_structural_equal(after, expected)
    half = apply(before, "to-mixed-precision{out_dtype=float16}")
    assert "linear(%cast, %cast_1, %cast_2, out_dtype=f16)" in str(half)
    assert "%y: f32[n, 3] = cast(%linear, dtype=f32)" in str(half)  # the rest stays float32
    x = np.random.default_rng(0).standard_normal((5, 2)).astype(np.float32)
    for module in (after, half):
        np.testing.assert_allclose(run(module, x)[0], run(before, x)[0], rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_in_float16(name):
    before = model(name)
    after = apply(before, "convert-dtype{dtype=float16}")
    assert [p.ty for p in after.main.params] == [p.ty for p in before.main.params]
    assert after.main.ret_type == before.main.ret_type
    inner = {b.ty.dtype for b in after.main.bindings if b.op != "cast"}
    assert inner == {DType.float16}  # every op but the boundary casts computes in float16
    assert_close(before, after, rtol=2e-2, atol=2e-2)
    mixed = apply(before, "to-mixed-precision")
    assert_close(before, mixed, rtol=5e-3, atol=5e-3)


def test_decomposed_models_in_float16_then_folded():
    before = model("conv_bn_relu")
    after = apply(before, "decompose-ops,convert-dtype{dtype=float16},fold-constant,dce")
    assert {c.ty.dtype for c in after.constants().values()} == {DType.float16}
    assert_close(before, after, rtol=2e-2, atol=2e-2)


def test_bfloat16_elementwise():
    before = parse("""
def @main(%x: f32[4, 8]) -> f32[4, 8] {
  %e: f32[4, 8] = exp(%x)
  %y: f32[4, 8] = multiply(%e, %x)
  return %y
}
""")
    after = apply(before, "convert-dtype{dtype=bfloat16}")
    assert "bf16[4, 8] = exp" in str(after)
    assert_close(before, after, rtol=3e-2, atol=3e-2)

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

CONVERT_DTYPE = [
    C(
        "convert-dtype{dtype=float16}",
        "float32 inputs cast once at the start, the result cast back at the end",
        """
def @main(%x: f32[4], %i: i64[4]) -> f32[4] {
  %e: f32[4] = exp(%x)
  %c: f32[4] = cast(%i, dtype=f32)
  %y: f32[4] = add(%e, %c)
  return %y
}""",
        """
def @main(%x: f32[4], %i: i64[4]) -> f32[4] {
  %cast: f16[4] = cast(%x, dtype=f16)
  %e: f16[4] = exp(%cast)
  %c: f16[4] = cast(%i, dtype=f16)
  %y: f16[4] = add(%e, %c)
  %cast_1: f32[4] = cast(%y, dtype=f32)
  return %cast_1
}""",
    ),
    C(
        "convert-dtype{dtype=float16}",
        "a named weight gets a cast; an inline literal is converted in place",
        """
weights {
  $w: f32[4] = [1, 2, 3, 4]
}
def @main(%x: f32[4]) -> f32[4] {
  %a: f32[4] = multiply(%x, $w)
  %y: f32[4] = add(%a, const(f32[], 0.5))
  return %y
}""",
        """
weights {
  $w: f32[4] = [1.0, 2.0, 3.0, 4.0]
}

def @main(%x: f32[4]) -> f32[4] {
  %cast: f16[4] = cast(%x, dtype=f16)
  %cast_1: f16[4] = cast($w, dtype=f16)
  %a: f16[4] = multiply(%cast, %cast_1)
  %y: f16[4] = add(%a, const(f16[], 0.5))
  %cast_2: f32[4] = cast(%y, dtype=f32)
  return %cast_2
}""",
    ),
    C(
        "convert-dtype{dtype=float16}",
        "a dtype attribute that says float32 says float16",
        """
def @main(%i: i64[3]) -> f32[3] {
  %f: f32[3] = full(shape=[3], value=2.0, dtype=f32)
  %c: f32[3] = cast(%i, dtype=f32)
  %y: f32[3] = multiply(%c, %f)
  return %y
}""",
        """
def @main(%i: i64[3]) -> f32[3] {
  %f: f16[3] = full(dtype=f16, shape=[3], value=2.0)
  %c: f16[3] = cast(%i, dtype=f16)
  %y: f16[3] = multiply(%c, %f)
  %cast: f32[3] = cast(%y, dtype=f32)
  return %cast
}""",
    ),
    C(
        "convert-dtype{dtype=float16}",
        "a call of another function casts its arguments and result; an If is retyped",
        """
def @main(%x: f32[4], %c: bool[]) -> f32[] {
  %r: f32[4] = if %c {
    %t: f32[4] = tanh(%x)
    yield %t
  } else {
    %e: f32[4] = exp(%x)
    yield %e
  }
  %s: f32[] = call @total(%r)
  return %s
}
def @total(%v: f32[4]) -> f32[] attrs {private = true} {
  %s: f32[] = sum(%v)
  return %s
}""",
        """
def @main(%x: f32[4], %c: bool[]) -> f32[] {
  %cast: f16[4] = cast(%x, dtype=f16)
  %r: f16[4] = if %c {
    %t: f16[4] = tanh(%cast)
    yield %t
  } else {
    %e: f16[4] = exp(%cast)
    yield %e
  }
  %cast_1: f32[4] = cast(%r, dtype=f32)
  %total: f32[] = call @total(%cast_1)
  %s: f16[] = cast(%total, dtype=f16)
  %cast_2: f32[] = cast(%s, dtype=f32)
  return %cast_2
}

def @total(%v: f32[4]) -> f32[] attrs {private = true} {
  %cast: f16[4] = cast(%v, dtype=f16)
  %s: f16[] = sum(%cast, axes=none, keepdims=false)
  %cast_1: f32[] = cast(%s, dtype=f32)
  return %cast_1
}""",
    ),
    K(
        "convert-dtype{dtype=float16}",
        "a function computing nothing in float32",
        """
def @main(%i: i64[3]) -> i64[3] {
  %y: i64[3] = add(%i, %i)
  return %y
}""",
    ),
    K(
        "convert-dtype{dtype=float32}",
        "anything when the dtype is float32 already",
        """
def @main(%x: f32[3]) -> f32[3] {
  %y: f32[3] = exp(%x)
  return %y
}""",
    ),
]

TO_MIXED_PRECISION = [
    C(
        "to-mixed-precision",
        "matmul on float16 inputs, accumulating in float32 through out_dtype",
        """
weights {
  $w: f32[3, 2] = [[1, 2], [3, 4], [5, 6]]
}
def @main(%x: f32[4, 3]) -> f32[4, 2] {
  %m: f32[4, 2] = matmul(%x, $w)
  %y: f32[4, 2] = relu(%m)
  return %y
}""",
        """
weights {
  $w: f32[3, 2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
}

def @main(%x: f32[4, 3]) -> f32[4, 2] {
  %cast: f16[4, 3] = cast(%x, dtype=f16)
  %cast_1: f16[3, 2] = cast($w, dtype=f16)
  %m: f32[4, 2] = matmul(%cast, %cast_1, out_dtype=f32)
  %y: f32[4, 2] = relu(%m)
  return %y
}""",
    ),
    C(
        "to-mixed-precision{out_dtype=float16}",
        "out_dtype float16: the result is cast back to float32",
        """
weights {
  $w: f32[3, 2] = [[1, 2], [3, 4], [5, 6]]
}
def @main(%x: f32[4, 3]) -> f32[4, 2] {
  %m: f32[4, 2] = matmul(%x, $w)
  %y: f32[4, 2] = relu(%m)
  return %y
}""",
        """
weights {
  $w: f32[3, 2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
}

def @main(%x: f32[4, 3]) -> f32[4, 2] {
  %cast: f16[4, 3] = cast(%x, dtype=f16)
  %cast_1: f16[3, 2] = cast($w, dtype=f16)
  %matmul: f16[4, 2] = matmul(%cast, %cast_1, out_dtype=f16)
  %m: f32[4, 2] = cast(%matmul, dtype=f32)
  %y: f32[4, 2] = relu(%m)
  return %y
}""",
    ),
    C(
        "to-mixed-precision",
        "conv2d on float16 inputs, accumulating in float32",
        """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3]]], [[[-2]]]]
}
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %c: f32[1, 2, 2, 2] = conv2d(%x, $w)
  return %c
}""",
        """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3.0]]], [[[-2.0]]]]
}

def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %cast: f16[1, 1, 2, 2] = cast(%x, dtype=f16)
  %cast_1: f16[2, 1, 1, 1] = cast($w, dtype=f16)
  %c: f32[1, 2, 2, 2] = conv2d(%cast, %cast_1, data_layout="NCHW", dilation=[1, 1], groups=1,
      kernel_layout="OIHW", out_dtype=f32, padding=[0, 0, 0, 0], strides=[1, 1])
  return %c
}""",
    ),
    K(
        "to-mixed-precision",
        "an op that is not compute-heavy",
        """
def @main(%x: f32[4, 3]) -> f32[4, 3] {
  %y: f32[4, 3] = exp(%x)
  return %y
}""",
    ),
    K(
        "to-mixed-precision",
        "a matmul with no float32 input",
        """
def @main(%x: f16[4, 3], %w: f16[3, 2]) -> f16[4, 2] {
  %m: f16[4, 2] = matmul(%x, %w)
  return %m
}""",
    ),
]

# an opaque op (no converter: run by torch / onnxruntime) is a barrier to every pass
OPAQUE = [
    C(
        "convert-dtype{dtype=float16}",
        "an opaque op runs on the dtype it was recorded with, between casts",
        f"""
def @main(%x: f32[4, 8]) -> f32[4, 8] {{
  %e: f32[4, 8] = exp(%x)
  %c: f32[4, 8] = {OPAQUE_CUMSUM.replace("PURE", "true")}
  %r: f32[4, 8] = exp(%c)
  return %r
}}""",
        f"""
def @main(%x: f32[4, 8]) -> f32[4, 8] {{
  %cast: f16[4, 8] = cast(%x, dtype=f16)
  %e: f16[4, 8] = exp(%cast)
  %cast_1: f32[4, 8] = cast(%e, dtype=f32)
  %c: f32[4, 8] = {OPAQUE_CUMSUM.replace("PURE", "true").replace("%e", "%cast_1")}
  %c_1: f16[4, 8] = cast(%c, dtype=f16)
  %r: f16[4, 8] = exp(%c_1)
  %cast_2: f32[4, 8] = cast(%r, dtype=f32)
  return %cast_2
}}""",
    ),
]

CASES = CONVERT_DTYPE + TO_MIXED_PRECISION + OPAQUE
test_rule, test_guard = case_tests(CASES)
