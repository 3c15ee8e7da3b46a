"""One small Before/Expected case per rewrite rule, each needing its rule (the pass changes
``before``): removing or flipping a rule fails its case. One table for every pass, checked by
``helpers.verify_rule`` (the passes below here, the others in rule_cases.py), with the guards
as KeepCases (``helpers.verify_keep``); bench/mutations.py mutates some of these rules on
purpose. Every registered pass has a case, or says in NO_RULE_CASE why it cannot."""

import pytest

from compiler import passes
from compiler.ir import parse
from tests.compiler.passes import rule_cases
from tests.compiler.passes.helpers import (
    KeepCase,
    RuleCase,
    rule_ids,
    verify_keep,
    verify_rule,
)

C = RuleCase

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


CANONICALIZE = [
    C(
        "canonicalize-bindings,dead-code-elimination",  # the tuple stays bound until dce
        "(a, b)[0] -> a",
        """
def @main(%x: f32[2], %w: f32[2]) -> f32[2] {
  %t: (f32[2], f32[2]) = (%x, %w)
  %a: f32[2] = %t[0]
  %y: f32[2] = exp(%a)
  return %y
}""",
        """
def @main(%x: f32[2], %w: f32[2]) -> f32[2] {
  %y: f32[2] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings,dead-code-elimination",  # the tuple stays bound until dce
        "(t[0], t[1]) of a 2-tuple t -> t",
        """
def @main(%x: f32[2]) -> (f32[1], f32[1]) {
  %s: (f32[1], f32[1]) = split(%x, indices_or_sections=2, axis=0)
  %a: f32[1] = %s[0]
  %b: f32[1] = %s[1]
  %t: (f32[1], f32[1]) = (%a, %b)
  return %t
}""",
        """
def @main(%x: f32[2]) -> (f32[1], f32[1]) {
  %s: (f32[1], f32[1]) = split(%x, indices_or_sections=2, axis=0)
  return %s
}""",
    ),
    C(
        "canonicalize-bindings",
        "identity(x) -> x",
        """
def @main(%x: f32[2]) -> f32[2] {
  %i: f32[2] = identity(%x)
  %y: f32[2] = exp(%i)
  return %y
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings",
        "cast to the dtype it has -> x",
        """
def @main(%x: f32[2]) -> f32[2] {
  %c: f32[2] = cast(%x, dtype=f32)
  %y: f32[2] = exp(%c)
  return %y
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings",
        "reshape to its own static shape -> x",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %r: f32[2, 3] = reshape(%x, shape=[2, 3])
  %y: f32[2, 3] = exp(%r)
  return %y
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings",
        "broadcast_to its own static shape -> x",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %r: f32[2, 3] = broadcast_to(%x, shape=[2, 3])
  %y: f32[2, 3] = exp(%r)
  return %y
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = exp(%x)
  return %y
}""",
    ),
    C(
        "canonicalize-bindings",
        "a permutation that moves nothing -> x",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %p: f32[2, 3] = permute_dims(%x, axes=[0, 1])
  %y: f32[2, 3] = exp(%p)
  return %y
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = exp(%x)
  return %y
}""",
    ),
]


def test_canonicalize_bindings_keeps_what_is_not_trivial():
    """Near misses of each rule: a reshape to another shape, a real permutation, a cast to
    another dtype, a reshape to a symbolic shape, tuple items out of order."""
    module = parse(
        """
def @main(%x: f32[2, 3], %v: f32[n]) -> (f32[3, 2], f32[3, 2], f16[2, 3], f32[n]) {
  %r: f32[3, 2] = reshape(%x, shape=[3, 2])
  %p: f32[3, 2] = permute_dims(%x, axes=[1, 0])
  %c: f16[2, 3] = cast(%x, dtype=f16)
  %s: f32[n] = reshape(%v, shape=[n])
  %o: (f32[3, 2], f32[3, 2], f16[2, 3], f32[n]) = (%r, %p, %c, %s)
  return %o
}"""
    )
    assert passes.run(module, "canonicalize-bindings").module is module
    swapped = parse(
        """
def @main(%x: f32[2]) -> (f32[1], f32[1]) {
  %q: (f32[1], f32[1]) = split(%x, indices_or_sections=2, axis=0)
  %b: f32[1] = %q[1]
  %a: f32[1] = %q[0]
  %t: (f32[1], f32[1]) = (%b, %a)
  return %t
}"""
    )
    assert passes.run(swapped, "canonicalize-bindings").module is swapped


DCE = [
    C(
        "dead-code-elimination",
        "a binding nothing reads is dropped",
        """
def @main(%x: f32[2]) -> f32[2] {
  %a: f32[2] = exp(%x)
  %y: f32[2] = relu(%x)
  return %y
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = relu(%x)
  return %y
}""",
    ),
    C(
        "dead-code-elimination",
        "a private function nobody calls is dropped",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = relu(%x)
  return %y
}
def @unused(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = exp(%a)
  return %b
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = relu(%x)
  return %y
}""",
    ),
]


def test_dce_keeps_a_private_function_that_is_called_and_every_public_one():
    module = parse(
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = call @f(%x)
  return %y
}
def @f(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = call @g(%a)
  return %b
}
def @g(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = exp(%a)
  return %b
}
def @other(%a: f32[2]) -> f32[2] {
  %b: f32[2] = exp(%a)
  return %b
}"""
    )
    after = passes.run(module, "dead-code-elimination").module
    assert list(after.functions) == ["main", "f", "g", "other"]


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


ALL = FOLD + CANONICALIZE + DCE + FOLD_QDQ + rule_cases.CASES
CASES = [c for c in ALL if isinstance(c, RuleCase)]
KEEP = [c for c in ALL if isinstance(c, KeepCase)]

# Registered passes without a RuleCase, each with the reason a Before/Expected text cannot
# show what it does. Nothing else may be missing: a new pass needs a case (or a reason here).
NO_RULE_CASE = {
    # What names a pipeline of passes ("a,b" builds one), not a pass with rules of its own.
    "sequential": "builds the pipeline a spec names",
    # Its whole change is the module's ``backend`` attribute (the IR text has no module
    # attributes) and the machine code it compiles, which depends on the host's CPU; the graph
    # is unchanged. tests/compiler/backend runs it.
    "codegen": "changes no IR: compiles kernels for the host, marks the module",
    # Its result calls kernels named by a digest of the loop code lowering generates
    # (``add_1a2b3c4d``), held in a per-process table, and marks the module (not in the
    # text): an Expected text would pin those digests, so any change to a lowering breaks
    # it. tests/compiler/backend checks its rules (views stay, fused functions become one
    # kernel, split / attention / topk expansions) by running the kernels.
    "legalize-ops": "its result names content-hashed kernels of the backend",
}


@pytest.mark.parametrize("case", CASES, ids=rule_ids(CASES))
def test_rule(case):
    verify_rule(case)


@pytest.mark.parametrize("case", KEEP, ids=rule_ids(KEEP))
def test_guard(case):
    verify_keep(case)


def test_every_registered_pass_has_a_rule_case():
    covered = {c.pass_name for c in CASES}
    # the compiler's passes (tests register passes of their own, e.g. test_manager.py)
    registered = {
        name for name, cls in passes.all_passes().items() if cls.__module__.startswith("compiler.")
    }
    missing = registered - covered - set(NO_RULE_CASE)
    assert not missing, (
        f"passes without a RuleCase (add one, or a reason in NO_RULE_CASE): {missing}"
    )
    stale = set(NO_RULE_CASE) & (covered | (set(NO_RULE_CASE) - registered))
    assert not stale, f"NO_RULE_CASE lists passes that have cases or are gone: {stale}"


def test_every_keep_case_is_a_near_miss_of_a_pass_with_rules():
    """A guard belongs to a pass that has rules (else it tests nothing that could break)."""
    assert {c.pass_name for c in KEEP} <= {c.pass_name for c in CASES}
