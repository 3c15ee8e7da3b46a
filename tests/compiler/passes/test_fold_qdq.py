"""fold-qdq (quantize-dequantize pairs into integer arithmetic): its Before/Expected cases
and tests."""

from compiler import passes
from compiler.ir import parse
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

FOLD_QDQ = [
    C(
        "fold-qdq",
        "relu with the same scale and zero point in and out -> maximum(x, zx)",
        """
def @main(%x: u8[2, 4]) -> u8[2, 4] {
  %d: f32[2, 4] = dequantize(%x, const(f32[], 0.5), const(u8[], 128))
  %r: f32[2, 4] = relu(%d)
  %q: u8[2, 4] = quantize(%r, const(f32[], 0.5), const(u8[], 128))
  return %q
}""",
        """
def @main(%x: u8[2, 4]) -> u8[2, 4] {
  %q: u8[2, 4] = maximum(%x, const(u8[], 128))
  return %q
}""",
    ),
    C(
        "fold-qdq",
        "data movement on the quantized values",
        """
def @main(%x: u8[2, 4]) -> u8[8] {
  %d: f32[2, 4] = dequantize(%x, const(f32[], 0.5), const(u8[], 128))
  %r: f32[8] = reshape(%d, shape=[8])
  %q: u8[8] = quantize(%r, const(f32[], 0.5), const(u8[], 128))
  return %q
}""",
        """
def @main(%x: u8[2, 4]) -> u8[8] {
  %q: u8[8] = reshape(%x, allowzero=true, shape=[8])
  return %q
}""",
    ),
    C(
        "fold-qdq",
        "quantize(dequantize(x)) with equal parameters -> x",
        """
def @main(%x: u8[2, 4]) -> u8[2, 4] {
  %d: f32[2, 4] = dequantize(%x, const(f32[], 0.5), const(u8[], 128))
  %q: u8[2, 4] = quantize(%d, const(f32[], 0.5), const(u8[], 128))
  return %q
}""",
        """
def @main(%x: u8[2, 4]) -> u8[2, 4] {
  return %x
}""",
    ),
    C(
        "fold-qdq",
        "add: both inputs rescaled to the output scale",
        """
def @main(%x: u8[4], %y: u8[4]) -> u8[4] {
  %a: f32[4] = dequantize(%x, const(f32[], 0.5), const(u8[], 128))
  %b: f32[4] = dequantize(%y, const(f32[], 0.25), const(u8[], 100))
  %s: f32[4] = add(%a, %b)
  %q: u8[4] = quantize(%s, const(f32[], 1.0), const(u8[], 120))
  return %q
}""",
        """
def @main(%x: u8[4], %y: u8[4]) -> u8[4] {
  %cast: i32[4] = cast(%x, dtype=i32)
  %subtract: i32[4] = subtract(%cast, const(i32[], 128))
  %cast_1: f32[4] = cast(%subtract, dtype=f32)
  %multiply: f32[4] = multiply(%cast_1, const(f32[], 0.5))
  %cast_2: i32[4] = cast(%y, dtype=i32)
  %subtract_1: i32[4] = subtract(%cast_2, const(i32[], 100))
  %cast_3: f32[4] = cast(%subtract_1, dtype=f32)
  %multiply_1: f32[4] = multiply(%cast_3, const(f32[], 0.25))
  %add: f32[4] = add(%multiply, %multiply_1)
  %q: u8[4] = quantize(%add, const(f32[], 1.0), const(u8[], 120))
  return %q
}""",
    ),
    C(
        "fold-qdq",
        "matmul: integer matmul of x - zx and w - zw, requantized",
        """
weights {
  $w: i8[3, 2] = [[1, 2], [3, 4], [5, 6]]
}
def @main(%x: u8[2, 3]) -> u8[2, 2] {
  %a: f32[2, 3] = dequantize(%x, const(f32[], 0.5), const(u8[], 128))
  %w: f32[3, 2] = dequantize($w, const(f32[], 0.25), const(i8[], 0))
  %m: f32[2, 2] = matmul(%a, %w)
  %q: u8[2, 2] = quantize(%m, const(f32[], 1.0), const(u8[], 120))
  return %q
}""",
        """
weights {
  $w: i8[3, 2] = [[1, 2], [3, 4], [5, 6]]
}
def @main(%x: u8[2, 3]) -> u8[2, 2] {
  %cast: i32[2, 3] = cast(%x, dtype=i32)
  %subtract: i32[2, 3] = subtract(%cast, const(i32[], 128))
  %cast_1: i32[3, 2] = cast($w, dtype=i32)
  %matmul: i32[2, 2] = matmul(%subtract, %cast_1, out_dtype=i32)
  %cast_2: f32[2, 2] = cast(%matmul, dtype=f32)
  %multiply: f32[2, 2] = multiply(%cast_2, const(f32[], 0.125))
  %q: u8[2, 2] = quantize(%multiply, const(f32[], 1.0), const(u8[], 120))
  return %q
}""",
    ),
    C(
        "fold-qdq",
        "matmul reading w transposed: per-channel scales along w's rows, transpose_b kept",
        """
weights {
  $w: i8[2, 3] = [[1, 3, 5], [2, 4, 6]]
}
def @main(%x: u8[2, 3]) -> u8[2, 2] {
  %a: f32[2, 3] = dequantize(%x, const(f32[], 0.5), const(u8[], 128))
  %w: f32[2, 3] = dequantize($w, const(f32[2, 1], [[0.25], [0.5]]), const(i8[], 0))
  %m: f32[2, 2] = matmul(%a, %w, transpose_b=true)
  %q: u8[2, 2] = quantize(%m, const(f32[], 1.0), const(u8[], 120))
  return %q
}""",
        """
weights {
  $w: i8[2, 3] = [[1, 3, 5], [2, 4, 6]]
}
def @main(%x: u8[2, 3]) -> u8[2, 2] {
  %cast: i32[2, 3] = cast(%x, dtype=i32)
  %subtract: i32[2, 3] = subtract(%cast, const(i32[], 128))
  %cast_1: i32[2, 3] = cast($w, dtype=i32)
  %matmul: i32[2, 2] = matmul(%subtract, %cast_1, out_dtype=i32, transpose_b=true)
  %cast_2: f32[2, 2] = cast(%matmul, dtype=f32)
  %multiply: f32[2, 2] = multiply(%cast_2, const(f32[2], [0.125, 0.25]))
  %q: u8[2, 2] = quantize(%multiply, const(f32[], 1.0), const(u8[], 120))
  return %q
}""",
    ),
    C(
        "fold-qdq",
        "conv2d: integer convolution (in f32: bounded weights), requantized",
        """
weights {
  $w: i8[2, 1, 1, 1] = [[[[3]]], [[[-2]]]]
}
def @main(%x: u8[1, 1, 2, 2]) -> u8[1, 2, 2, 2] {
  %a: f32[1, 1, 2, 2] = dequantize(%x, const(f32[], 0.5), const(u8[], 128))
  %w: f32[2, 1, 1, 1] = dequantize($w, const(f32[], 0.25), const(i8[], 0))
  %c: f32[1, 2, 2, 2] = conv2d(%a, %w)
  %q: u8[1, 2, 2, 2] = quantize(%c, const(f32[], 1.0), const(u8[], 120))
  return %q
}""",
        """
weights {
  $w: i8[2, 1, 1, 1] = [[[[3]]], [[[-2]]]]
}
def @main(%x: u8[1, 1, 2, 2]) -> u8[1, 2, 2, 2] {
  %cast: i32[1, 1, 2, 2] = cast(%x, dtype=i32)
  %subtract: i32[1, 1, 2, 2] = subtract(%cast, const(i32[], 128))
  %cast_1: f32[1, 1, 2, 2] = cast(%subtract, dtype=f32)
  %cast_2: i32[2, 1, 1, 1] = cast($w, dtype=i32)
  %cast_3: f32[2, 1, 1, 1] = cast(%cast_2, dtype=f32)
  %conv2d: f32[1, 2, 2, 2] = conv2d(%cast_1, %cast_3)
  %cast_4: i32[1, 2, 2, 2] = cast(%conv2d, dtype=i32)
  %cast_5: f32[1, 2, 2, 2] = cast(%cast_4, dtype=f32)
  %multiply: f32[1, 2, 2, 2] = multiply(%cast_5, const(f32[], 0.125))
  %q: u8[1, 2, 2, 2] = quantize(%multiply, const(f32[], 1.0), const(u8[], 120))
  return %q
}""",
    ),
]

def test_fold_qdq_leaves_relu_between_different_quantizations():
    text = """
def @main(%x: u8[2, 4]) -> u8[2, 4] {
  %d: f32[2, 4] = dequantize(%x, const(f32[], 0.5), const(u8[], 128))
  %r: f32[2, 4] = relu(%d)
  %q: u8[2, 4] = quantize(%r, const(f32[], 0.25), const(u8[], 128))
  return %q
}"""
    after = passes.run(parse(text), "fold-qdq").module
    assert "relu" in {getattr(b, "op", None) for b in after["main"].bindings}

CASES = FOLD_QDQ
test_rule, test_guard = case_tests(CASES)
