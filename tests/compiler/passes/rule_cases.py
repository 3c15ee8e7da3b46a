"""The Before/Expected cases of the passes test_pass_rules.py does not list itself: for each
rewrite rule a :class:`RuleCase` that needs it, and for each guard a :class:`KeepCase` (a near
miss of a rule the pass must leave alone). test_pass_rules.py runs them all and checks every
registered pass has a case (bench/mutations.py breaks some of these rules on purpose)."""

import numpy as np

from compiler.passes.bind_params import BindParams
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C

INFER_TYPES = [
    C(
        "infer-types",
        "an If of unknown rank whose branches agree gets their type",
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
        "infer-types",
        "a call reading a value whose type became known is re-inferred",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[*] {
  %o: f32[*] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[2, 3] = relu(%x)
    yield %b
  }
  %y: f32[*] = sigmoid(%o)
  return %y
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
  %y: f32[2, 3] = sigmoid(%o)
  return %y
}""",
    ),
    C(
        "infer-types",
        "a function call takes the static type its callee returns",
        """
def @main(%x: f32[2, 3]) -> f32[?, ?] {
  %y: f32[?, ?] = call @f(%x)
  return %y
}
def @f(%a: f32[2, 3]) -> f32[2, 3] {
  %b: f32[2, 3] = exp(%a)
  return %b
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = call @f(%x)
  return %y
}

def @f(%a: f32[2, 3]) -> f32[2, 3] {
  %b: f32[2, 3] = exp(%a)
  return %b
}""",
    ),
    K(
        "infer-types",
        "a call of a function whose return type is symbolic",
        """
def @main(%x: f32[2, 3]) -> f32[?, 3] {
  %y: f32[?, 3] = call @f(%x)
  return %y
}
def @f(%a: f32[n, 3]) -> f32[n, 3] {
  %b: f32[n, 3] = exp(%a)
  return %b
}""",
    ),
    K(
        "infer-types",
        "an If whose branches disagree",
        """
def @main(%x: f32[2, 3], %c: bool[]) -> f32[?, ?] {
  %o: f32[?, ?] = if %c {
    %a: f32[2, 3] = exp(%x)
    yield %a
  } else {
    %b: f32[3, 2] = reshape(%x, shape=[3, 2])
    yield %b
  }
  return %o
}""",
    ),
]

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

DECOMPOSE = """
weights {
  $w: f32[3, 2] = [[1, 2], [3, 4], [5, 6]]
  $b: f32[3] = [0.5, -0.5, 1]
  $g: f32[3] = [1, 2, 3]
  $mean: f32[3] = [0.1, 0.2, 0.3]
  $var: f32[3] = [1, 4, 9]
}"""

DECOMPOSE_OPS = [
    C(
        "decompose-ops",
        "linear(x, w) -> matmul(x, permute_dims(w))",
        DECOMPOSE
        + """
def @main(%x: f32[4, 2]) -> f32[4, 3] {
  %y: f32[4, 3] = linear(%x, $w)
  return %y
}""",
        """
weights {
  $w: f32[3, 2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
}

def @main(%x: f32[4, 2]) -> f32[4, 3] {
  %permute_dims: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %y: f32[4, 3] = matmul(%x, %permute_dims, out_dtype=none)
  return %y
}""",
        numbers=True,
    ),
    C(
        "decompose-ops",
        "linear(x, w, b) -> ... + b",
        DECOMPOSE
        + """
def @main(%x: f32[4, 2]) -> f32[4, 3] {
  %y: f32[4, 3] = linear(%x, $w, $b)
  return %y
}""",
        """
weights {
  $w: f32[3, 2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
  $b: f32[3] = [0.5, -0.5, 1.0]
}

def @main(%x: f32[4, 2]) -> f32[4, 3] {
  %permute_dims: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %matmul: f32[4, 3] = matmul(%x, %permute_dims, out_dtype=none)
  %y: f32[4, 3] = add(%matmul, $b)
  return %y
}""",
        numbers=True,
    ),
    C(
        "decompose-ops",
        "linear with out_dtype: the bias is cast to it",
        DECOMPOSE
        + """
def @main(%x: f32[4, 2]) -> f16[4, 3] {
  %y: f16[4, 3] = linear(%x, $w, $b, out_dtype=f16)
  return %y
}""",
        """
weights {
  $w: f32[3, 2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
  $b: f32[3] = [0.5, -0.5, 1.0]
}

def @main(%x: f32[4, 2]) -> f16[4, 3] {
  %permute_dims: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %matmul: f16[4, 3] = matmul(%x, %permute_dims, out_dtype=f16)
  %cast: f16[3] = cast($b, dtype=f16)
  %y: f16[4, 3] = add(%matmul, %cast)
  return %y
}""",
    ),
    C(
        "decompose-ops",
        "batch_norm -> x * scale + shift, unsqueezed along the channel axis",
        DECOMPOSE
        + """
def @main(%x: f32[2, 3, 2]) -> f32[2, 3, 2] {
  %y: f32[2, 3, 2] = batch_norm(%x, $g, $b, $mean, $var, epsilon=0.001)
  return %y
}""",
        """
weights {
  $var: f32[3] = [1.0, 4.0, 9.0]
  $g: f32[3] = [1.0, 2.0, 3.0]
  $mean: f32[3] = [0.1, 0.2, 0.3]
  $b: f32[3] = [0.5, -0.5, 1.0]
}

def @main(%x: f32[2, 3, 2]) -> f32[2, 3, 2] {
  %add: f32[3] = add($var, const(f32[], 0.001))
  %sqrt: f32[3] = sqrt(%add)
  %divide: f32[3] = divide($g, %sqrt)
  %unsqueeze: f32[3, 1] = unsqueeze(%divide, axes=[1])
  %multiply: f32[2, 3, 2] = multiply(%x, %unsqueeze)
  %multiply_1: f32[3] = multiply($mean, %divide)
  %subtract: f32[3] = subtract($b, %multiply_1)
  %unsqueeze_1: f32[3, 1] = unsqueeze(%subtract, axes=[1])
  %y: f32[2, 3, 2] = add(%multiply, %unsqueeze_1)
  return %y
}""",
        numbers=True,
    ),
    C(
        "decompose-ops",
        "batch_norm on the last axis needs no unsqueeze",
        DECOMPOSE
        + """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = batch_norm(%x, $g, $b, $mean, $var, axis=-1, epsilon=0.001)
  return %y
}""",
        """
weights {
  $var: f32[3] = [1.0, 4.0, 9.0]
  $g: f32[3] = [1.0, 2.0, 3.0]
  $mean: f32[3] = [0.1, 0.2, 0.3]
  $b: f32[3] = [0.5, -0.5, 1.0]
}

def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %add: f32[3] = add($var, const(f32[], 0.001))
  %sqrt: f32[3] = sqrt(%add)
  %divide: f32[3] = divide($g, %sqrt)
  %multiply: f32[2, 3] = multiply(%x, %divide)
  %multiply_1: f32[3] = multiply($mean, %divide)
  %subtract: f32[3] = subtract($b, %multiply_1)
  %y: f32[2, 3] = add(%multiply, %subtract)
  return %y
}""",
        numbers=True,
    ),
    C(
        "decompose-ops",
        "layer_norm over trailing axes -> (x - mean) * rsqrt(var + eps) * g + b",
        DECOMPOSE
        + """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = layer_norm(%x, $g, $b, axes=[-1], epsilon=1e-05)
  return %y
}""",
        """
weights {
  $g: f32[3] = [1.0, 2.0, 3.0]
  $b: f32[3] = [0.5, -0.5, 1.0]
}

def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %mean: f32[2, 1] = mean(%x, axes=[1], keepdims=true)
  %subtract: f32[2, 3] = subtract(%x, %mean)
  %variance: f32[2, 1] = variance(%x, axes=[1], correction=0.0, keepdims=true)
  %add: f32[2, 1] = add(%variance, const(f32[], 1e-05))
  %rsqrt: f32[2, 1] = rsqrt(%add)
  %multiply: f32[2, 3] = multiply(%subtract, %rsqrt)
  %multiply_1: f32[2, 3] = multiply(%multiply, $g)
  %y: f32[2, 3] = add(%multiply_1, $b)
  return %y
}""",
        numbers=True,
    ),
    C(
        "decompose-ops",
        "layer_norm over leading axes reshapes g and b to x's rank",
        DECOMPOSE
        + """
def @main(%x: f32[3, 2]) -> f32[3, 2] {
  %y: f32[3, 2] = layer_norm(%x, $g, $b, axes=[0], epsilon=1e-05)
  return %y
}""",
        """
weights {
  $g: f32[3] = [1.0, 2.0, 3.0]
  $b: f32[3] = [0.5, -0.5, 1.0]
}

def @main(%x: f32[3, 2]) -> f32[3, 2] {
  %mean: f32[1, 2] = mean(%x, axes=[0], keepdims=true)
  %subtract: f32[3, 2] = subtract(%x, %mean)
  %variance: f32[1, 2] = variance(%x, axes=[0], correction=0.0, keepdims=true)
  %add: f32[1, 2] = add(%variance, const(f32[], 1e-05))
  %rsqrt: f32[1, 2] = rsqrt(%add)
  %multiply: f32[3, 2] = multiply(%subtract, %rsqrt)
  %reshape: f32[3, 1] = reshape($g, allowzero=true, shape=[3, 1])
  %multiply_1: f32[3, 2] = multiply(%multiply, %reshape)
  %reshape_1: f32[3, 1] = reshape($b, allowzero=true, shape=[3, 1])
  %y: f32[3, 2] = add(%multiply_1, %reshape_1)
  return %y
}""",
        numbers=True,
    ),
    C(
        "decompose-ops",
        "attention with a float mask: softmax(q k^T * scale + mask) v",
        """
def @main(%q: f32[2, 3, 4], %k: f32[2, 5, 4], %v: f32[2, 5, 4], %m: f32[2, 3, 5]) -> f32[2, 3, 4] {
  %a: f32[2, 3, 4] = scaled_dot_product_attention(%q, %k, %v, %m)
  return %a
}""",
        """
def @main(%q: f32[2, 3, 4], %k: f32[2, 5, 4], %v: f32[2, 5, 4], %m: f32[2, 3, 5]) -> f32[2, 3, 4] {
  %permute_dims: f32[2, 4, 5] = permute_dims(%k, axes=[0, 2, 1])
  %matmul: f32[2, 3, 5] = matmul(%q, %permute_dims, out_dtype=none)
  %multiply: f32[2, 3, 5] = multiply(%matmul, const(f32[], 0.5))
  %add: f32[2, 3, 5] = add(%multiply, %m)
  %softmax: f32[2, 3, 5] = softmax(%add, axis=-1)
  %a: f32[2, 3, 4] = matmul(%softmax, %v, out_dtype=none)
  return %a
}""",
        numbers=True,
    ),
    C(
        "decompose-ops",
        "attention with a bool mask and is_causal: where(mask & tril(ones), s, -inf)",
        """
def @main(%q: f32[2, 3, 4], %k: f32[2, 5, 4], %v: f32[2, 5, 4], %m: bool[3, 5]) -> f32[2, 3, 4] {
  %a: f32[2, 3, 4] = scaled_dot_product_attention(%q, %k, %v, %m, is_causal=true, scale=0.25)
  return %a
}""",
        """
def @main(%q: f32[2, 3, 4], %k: f32[2, 5, 4], %v: f32[2, 5, 4], %m: bool[3, 5]) -> f32[2, 3, 4] {
  %ones: bool[3, 5] = ones(dtype=bool, shape=[3, 5])
  %tril: bool[3, 5] = tril(%ones, k=0)
  %logical_and: bool[3, 5] = logical_and(%m, %tril)
  %permute_dims: f32[2, 4, 5] = permute_dims(%k, axes=[0, 2, 1])
  %matmul: f32[2, 3, 5] = matmul(%q, %permute_dims, out_dtype=none)
  %multiply: f32[2, 3, 5] = multiply(%matmul, const(f32[], 0.25))
  %where: f32[2, 3, 5] = where(%logical_and, %multiply, const(f32[], -inf))
  %softmax: f32[2, 3, 5] = softmax(%where, axis=-1)
  %a: f32[2, 3, 4] = matmul(%softmax, %v, out_dtype=none)
  return %a
}""",
    ),
    K(
        "decompose-ops",
        "attention without a scale on a symbolic feature size",
        """
def @main(%q: f32[3, e], %k: f32[5, e], %v: f32[5, e]) -> f32[3, e] {
  %a: f32[3, e] = scaled_dot_product_attention(%q, %k, %v)
  return %a
}""",
    ),
    K(
        "decompose-ops{ops=[batch_norm]}",
        "an op not in ops",
        DECOMPOSE
        + """
def @main(%x: f32[4, 2]) -> f32[4, 3] {
  %y: f32[4, 3] = linear(%x, $w, $b)
  return %y
}""",
    ),
    K(
        "decompose-ops",
        "an input of unknown rank",
        DECOMPOSE
        + """
def @main(%x: f32[*]) -> f32[*] {
  %y: f32[*] = linear(%x, $w, $b)
  return %y
}""",
    ),
]

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

CONV = """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3]]], [[[-2]]]]
  $w2: f32[2, 2, 1, 1] = [[[[1]], [[2]]], [[[3]], [[4]]]]
  $bias: f32[2, 1, 1] = [[[0.5]], [[-0.5]]]
  $g: f32[2] = [1, 2]
  $b: f32[2] = [0.5, -0.5]
  $mean: f32[2] = [0.1, 0.2]
  $var: f32[2] = [1, 4]
}"""

CONVERT_LAYOUT = [
    C(
        "convert-layout{layout=NHWC}",
        "conv2d runs in NHWC / HWIO between permutes",
        CONV
        + """
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %c: f32[1, 2, 2, 2] = conv2d(%x, $w)
  return %c
}""",
        """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3.0]]], [[[-2.0]]]]
}

def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %permute_dims: f32[1, 2, 2, 1] = permute_dims(%x, axes=[0, 2, 3, 1])
  %permute_dims_1: f32[1, 1, 1, 2] = permute_dims($w, axes=[2, 3, 1, 0])
  %conv2d: f32[1, 2, 2, 2] = conv2d(%permute_dims, %permute_dims_1, data_layout="NHWC",
      dilation=[1, 1], groups=1, kernel_layout="HWIO", out_dtype=none, padding=[0, 0, 0, 0],
      strides=[1, 1])
  %c: f32[1, 2, 2, 2] = permute_dims(%conv2d, axes=[0, 3, 1, 2])
  return %c
}""",
        numbers=True,
    ),
    C(
        "convert-layout{layout=NHWC}",
        "a 2-D pool runs in NHWC",
        """
def @main(%x: f32[1, 2, 4, 4]) -> f32[1, 2, 2, 2] {
  %p: f32[1, 2, 2, 2] = max_pool2d(%x, pool_size=[2, 2], strides=[2, 2])
  return %p
}""",
        """
def @main(%x: f32[1, 2, 4, 4]) -> f32[1, 2, 2, 2] {
  %permute_dims: f32[1, 4, 4, 2] = permute_dims(%x, axes=[0, 2, 3, 1])
  %max_pool2d: f32[1, 2, 2, 2] = max_pool2d(%permute_dims, ceil_mode=false, dilation=[1, 1],
      layout="NHWC", padding=[0, 0, 0, 0], pool_size=[2, 2], strides=[2, 2])
  %p: f32[1, 2, 2, 2] = permute_dims(%max_pool2d, axes=[0, 3, 1, 2])
  return %p
}""",
        numbers=True,
    ),
    C(
        "convert-layout{layout=NHWC}",
        "the permute back sinks through relu and an add of constants; two convs need none",
        CONV
        + """
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %c: f32[1, 2, 2, 2] = conv2d(%x, $w)
  %a: f32[1, 2, 2, 2] = add(%c, $bias)
  %r: f32[1, 2, 2, 2] = relu(%a)
  %d: f32[1, 2, 2, 2] = conv2d(%r, $w2)
  return %d
}""",
        """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3.0]]], [[[-2.0]]]]
  $bias: f32[2, 1, 1] = [[[0.5]], [[-0.5]]]
  $w2: f32[2, 2, 1, 1] = [[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]
}

def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %permute_dims: f32[1, 2, 2, 1] = permute_dims(%x, axes=[0, 2, 3, 1])
  %permute_dims_1: f32[1, 1, 1, 2] = permute_dims($w, axes=[2, 3, 1, 0])
  %conv2d: f32[1, 2, 2, 2] = conv2d(%permute_dims, %permute_dims_1, data_layout="NHWC",
      dilation=[1, 1], groups=1, kernel_layout="HWIO", out_dtype=none, padding=[0, 0, 0, 0],
      strides=[1, 1])
  %unsqueeze: f32[1, 2, 1, 1] = unsqueeze($bias, axes=[0])
  %permute_dims_2: f32[1, 1, 1, 2] = permute_dims(%unsqueeze, axes=[0, 2, 3, 1])
  %add: f32[1, 2, 2, 2] = add(%conv2d, %permute_dims_2)
  %relu: f32[1, 2, 2, 2] = relu(%add)
  %permute_dims_3: f32[1, 1, 2, 2] = permute_dims($w2, axes=[2, 3, 1, 0])
  %conv2d_1: f32[1, 2, 2, 2] = conv2d(%relu, %permute_dims_3, data_layout="NHWC", dilation=[1, 1],
      groups=1, kernel_layout="HWIO", out_dtype=none, padding=[0, 0, 0, 0], strides=[1, 1])
  %d: f32[1, 2, 2, 2] = permute_dims(%conv2d_1, axes=[0, 3, 1, 2])
  return %d
}""",
        numbers=True,
    ),
    C(
        "convert-layout{layout=NHWC}",
        "the permute back sinks through batch_norm (axis renumbered)",
        CONV
        + """
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %c: f32[1, 2, 2, 2] = conv2d(%x, $w)
  %n: f32[1, 2, 2, 2] = batch_norm(%c, $g, $b, $mean, $var)
  %d: f32[1, 2, 2, 2] = conv2d(%n, $w2)
  return %d
}""",
        """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3.0]]], [[[-2.0]]]]
  $g: f32[2] = [1.0, 2.0]
  $b: f32[2] = [0.5, -0.5]
  $mean: f32[2] = [0.1, 0.2]
  $var: f32[2] = [1.0, 4.0]
  $w2: f32[2, 2, 1, 1] = [[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]
}

def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %permute_dims: f32[1, 2, 2, 1] = permute_dims(%x, axes=[0, 2, 3, 1])
  %permute_dims_1: f32[1, 1, 1, 2] = permute_dims($w, axes=[2, 3, 1, 0])
  %conv2d: f32[1, 2, 2, 2] = conv2d(%permute_dims, %permute_dims_1, data_layout="NHWC",
      dilation=[1, 1], groups=1, kernel_layout="HWIO", out_dtype=none, padding=[0, 0, 0, 0],
      strides=[1, 1])
  %batch_norm: f32[1, 2, 2, 2] = batch_norm(%conv2d, $g, $b, $mean, $var, axis=3, epsilon=1e-05)
  %permute_dims_2: f32[1, 1, 2, 2] = permute_dims($w2, axes=[2, 3, 1, 0])
  %conv2d_1: f32[1, 2, 2, 2] = conv2d(%batch_norm, %permute_dims_2, data_layout="NHWC",
      dilation=[1, 1], groups=1, kernel_layout="HWIO", out_dtype=none, padding=[0, 0, 0, 0],
      strides=[1, 1])
  %d: f32[1, 2, 2, 2] = permute_dims(%conv2d_1, axes=[0, 3, 1, 2])
  return %d
}""",
        numbers=True,
    ),
    C(
        "convert-layout{layout=NHWC}",
        "the permute back sinks through a reduction with keepdims (axes renumbered)",
        CONV
        + """
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 1, 1] {
  %c: f32[1, 2, 2, 2] = conv2d(%x, $w)
  %m: f32[1, 2, 1, 1] = mean(%c, axes=[2, 3], keepdims=true)
  return %m
}""",
        """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3.0]]], [[[-2.0]]]]
}

def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 1, 1] {
  %permute_dims: f32[1, 2, 2, 1] = permute_dims(%x, axes=[0, 2, 3, 1])
  %permute_dims_1: f32[1, 1, 1, 2] = permute_dims($w, axes=[2, 3, 1, 0])
  %conv2d: f32[1, 2, 2, 2] = conv2d(%permute_dims, %permute_dims_1, data_layout="NHWC",
      dilation=[1, 1], groups=1, kernel_layout="HWIO", out_dtype=none, padding=[0, 0, 0, 0],
      strides=[1, 1])
  %mean: f32[1, 1, 1, 2] = mean(%conv2d, axes=[1, 2], keepdims=true)
  %m: f32[1, 2, 1, 1] = permute_dims(%mean, axes=[0, 3, 1, 2])
  return %m
}""",
        numbers=True,
    ),
    C(
        "convert-layout{layout=NHWC}",
        "a reduction without keepdims over the spatial axes needs no permute back",
        CONV
        + """
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2] {
  %c: f32[1, 2, 2, 2] = conv2d(%x, $w)
  %m: f32[1, 2] = mean(%c, axes=[2, 3], keepdims=false)
  return %m
}""",
        """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3.0]]], [[[-2.0]]]]
}

def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2] {
  %permute_dims: f32[1, 2, 2, 1] = permute_dims(%x, axes=[0, 2, 3, 1])
  %permute_dims_1: f32[1, 1, 1, 2] = permute_dims($w, axes=[2, 3, 1, 0])
  %conv2d: f32[1, 2, 2, 2] = conv2d(%permute_dims, %permute_dims_1, data_layout="NHWC",
      dilation=[1, 1], groups=1, kernel_layout="HWIO", out_dtype=none, padding=[0, 0, 0, 0],
      strides=[1, 1])
  %m: f32[1, 2] = mean(%conv2d, axes=[1, 2], keepdims=false)
  return %m
}""",
        numbers=True,
    ),
    C(
        "convert-layout{layout=NHWC}",
        "the permute back stays before an add of a value that is not a constant",
        CONV
        + """
def @main(%x: f32[1, 1, 2, 2], %z: f32[1, 2, 2, 2]) -> f32[1, 2, 2, 2] {
  %c: f32[1, 2, 2, 2] = conv2d(%x, $w)
  %a: f32[1, 2, 2, 2] = add(%c, %z)
  return %a
}""",
        """
weights {
  $w: f32[2, 1, 1, 1] = [[[[3.0]]], [[[-2.0]]]]
}

def @main(%x: f32[1, 1, 2, 2], %z: f32[1, 2, 2, 2]) -> f32[1, 2, 2, 2] {
  %permute_dims: f32[1, 2, 2, 1] = permute_dims(%x, axes=[0, 2, 3, 1])
  %permute_dims_1: f32[1, 1, 1, 2] = permute_dims($w, axes=[2, 3, 1, 0])
  %conv2d: f32[1, 2, 2, 2] = conv2d(%permute_dims, %permute_dims_1, data_layout="NHWC",
      dilation=[1, 1], groups=1, kernel_layout="HWIO", out_dtype=none, padding=[0, 0, 0, 0],
      strides=[1, 1])
  %c: f32[1, 2, 2, 2] = permute_dims(%conv2d, axes=[0, 3, 1, 2])
  %a: f32[1, 2, 2, 2] = add(%c, %z)
  return %a
}""",
        numbers=True,
    ),
    K(
        "convert-layout{layout=NCHW}",
        "a conv2d already in the layout asked for",
        CONV
        + """
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 2, 2, 2] {
  %c: f32[1, 2, 2, 2] = conv2d(%x, $w)
  return %c
}""",
    ),
    K(
        "convert-layout{layout=NHWC}",
        "a module without conv2d or pools (its permutes are not the pass's own)",
        """
def @main(%x: f32[1, 2, 3, 4]) -> f32[1, 3, 4, 2] {
  %p: f32[1, 3, 4, 2] = permute_dims(%x, axes=[0, 2, 3, 1])
  %r: f32[1, 3, 4, 2] = relu(%p)
  return %r
}""",
    ),
]

INLINE = [
    C(
        "inline-private-functions",
        "a call of a private function is its body; the function is dropped",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = call @f(%x)
  %z: f32[2] = relu(%y)
  return %z
}
def @f(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = exp(%a)
  %c: f32[2] = add(%b, %a)
  return %c
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %b: f32[2] = exp(%x)
  %y: f32[2] = add(%b, %x)
  %z: f32[2] = relu(%y)
  return %z
}""",
    ),
    C(
        "inline-private-functions",
        "each call site gets its own copy",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = call @f(%x)
  %z: f32[2] = call @f(%y)
  return %z
}
def @f(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = exp(%a)
  return %b
}""",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = exp(%x)
  %z: f32[2] = exp(%y)
  return %z
}""",
    ),
    C(
        "inline-private-functions",
        "the callee's symbolic dims become the caller's",
        """
def @main(%x: f32[b, 3]) -> f32[3, b] {
  %y: f32[3, b] = call @f(%x)
  return %y
}
def @f(%a: f32[n, 3]) -> f32[3, n] attrs {private = true} {
  %r: f32[3, n] = reshape(%a, shape=[3, n])
  return %r
}""",
        """
def @main(%x: f32[b, 3]) -> f32[3, b] {
  %y: f32[3, b] = reshape(%x, allowzero=true, shape=[3, b])
  return %y
}""",
    ),
    C(
        "inline-private-functions",
        "a call inside an If branch is inlined into the branch",
        """
def @main(%x: f32[2], %c: bool[]) -> f32[2] {
  %o: f32[2] = if %c {
    %y: f32[2] = call @f(%x)
    yield %y
  } else {
    yield %x
  }
  return %o
}
def @f(%a: f32[2]) -> f32[2] attrs {private = true} {
  %b: f32[2] = exp(%a)
  return %b
}""",
        """
def @main(%x: f32[2], %c: bool[]) -> f32[2] {
  %o: f32[2] = if %c {
    %y: f32[2] = exp(%x)
    yield %y
  } else {
    yield %x
  }
  return %o
}""",
    ),
    K(
        "inline-private-functions",
        "a call of a public function",
        """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = call @f(%x)
  return %y
}
def @f(%a: f32[2]) -> f32[2] {
  %b: f32[2] = exp(%a)
  return %b
}""",
    ),
    K(
        "inline-private-functions",
        "a call whose callee dims cannot be told from the arguments (n*m given 12)",
        """
def @main(%x: f32[12]) -> f32[12] {
  %y: f32[12] = call @f(%x)
  return %y
}
def @f(%a: f32[n*m]) -> f32[n*m] attrs {private = true} {
  %b: f32[n*m] = exp(%a)
  return %b
}""",
    ),
]

FUSE_OPS = [
    C(
        "fuse-ops",
        "an anchor takes the elementwise ops after it",
        """
def @main(%x: f32[2, 3], %w: f32[3, 4]) -> f32[2, 4] {
  %m: f32[2, 4] = matmul(%x, %w)
  %a: f32[2, 4] = add(%m, const(f32[], 1.0))
  %r: f32[2, 4] = relu(%a)
  return %r
}""",
        """
def @main(%x: f32[2, 3], %w: f32[3, 4]) -> f32[2, 4] {
  %r: f32[2, 4] = call @fused_matmul_add_relu(%x, %w)
  return %r
}

def @fused_matmul_add_relu(%x: f32[2, 3], %w: f32[3, 4]) -> f32[2, 4] attrs {primitive = true,
    private = true} {
  %m: f32[2, 4] = matmul(%x, %w, out_dtype=none)
  %a: f32[2, 4] = add(%m, const(f32[], 1.0))
  %r: f32[2, 4] = relu(%a)
  return %r
}""",
        numbers=True,
    ),
    C(
        "fuse-ops",
        "an injective chain is one group",
        """
def @main(%x: f32[2, 3]) -> f32[6] {
  %p: f32[3, 2] = permute_dims(%x, axes=[1, 0])
  %r: f32[6] = reshape(%p, shape=[6])
  return %r
}""",
        """
def @main(%x: f32[2, 3]) -> f32[6] {
  %r: f32[6] = call @fused_permute_dims_reshape(%x)
  return %r
}

def @fused_permute_dims_reshape(%x: f32[2, 3]) -> f32[6] attrs {primitive = true, private = true} {
  %p: f32[3, 2] = permute_dims(%x, axes=[1, 0])
  %r: f32[6] = reshape(%p, allowzero=true, shape=[6])
  return %r
}""",
        numbers=True,
    ),
    C(
        "fuse-ops",
        "elementwise producers join the reduction after them",
        """
def @main(%x: f32[2, 3]) -> f32[2] {
  %e: f32[2, 3] = exp(%x)
  %s: f32[2] = sum(%e, axes=[1])
  %r: f32[2] = relu(%s)
  return %r
}""",
        """
def @main(%x: f32[2, 3]) -> f32[2] {
  %s: f32[2] = call @fused_exp_sum(%x)
  %r: f32[2] = relu(%s)
  return %r
}

def @fused_exp_sum(%x: f32[2, 3]) -> f32[2] attrs {primitive = true, private = true} {
  %e: f32[2, 3] = exp(%x)
  %s: f32[2] = sum(%e, axes=[1], keepdims=false)
  return %s
}""",
        numbers=True,
    ),
    C(
        "fuse-ops",
        "a group never holds two anchors: the second matmul stays out of the add's group",
        """
def @main(%x: f32[2, 2], %y: f32[2, 2], %w: f32[2, 2]) -> f32[2, 2] {
  %m: f32[2, 2] = matmul(%x, %w)
  %n: f32[2, 2] = matmul(%y, %w)
  %a: f32[2, 2] = add(%m, %n)
  return %a
}""",
        """
def @main(%x: f32[2, 2], %y: f32[2, 2], %w: f32[2, 2]) -> f32[2, 2] {
  %n: f32[2, 2] = matmul(%y, %w, out_dtype=none)
  %a: f32[2, 2] = call @fused_matmul_add(%x, %w, %n)
  return %a
}

def @fused_matmul_add(%x: f32[2, 2], %w: f32[2, 2], %n: f32[2, 2]) -> f32[2, 2]
    attrs {primitive = true, private = true} {
  %m: f32[2, 2] = matmul(%x, %w, out_dtype=none)
  %a: f32[2, 2] = add(%m, %n)
  return %a
}""",
        numbers=True,
    ),
    K(
        "fuse-ops",
        "a group of one op",
        """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %e: f32[2, 3] = exp(%x)
  return %e
}""",
    ),
    K(
        "fuse-ops",
        "two anchors in a row",
        """
def @main(%x: f32[2, 2], %w: f32[2, 2]) -> f32[2, 2] {
  %m: f32[2, 2] = matmul(%x, %w)
  %n: f32[2, 2] = matmul(%m, %w)
  return %n
}""",
    ),
    K(
        "fuse-ops",
        "a value read twice outside (the group would not be convex)",
        """
def @main(%x: f32[2, 3]) -> (f32[2, 3], f32[2, 3]) {
  %e: f32[2, 3] = exp(%x)
  %r: f32[2, 3] = relu(%e)
  %t: (f32[2, 3], f32[2, 3]) = (%e, %r)
  return %t
}""",
    ),
]

LIFT = [
    C(
        "lift-transform-params",
        "weight-only bindings move to @main_transform_params",
        """
def @main(%x: f32[2, 3], %w: f32[3, 2]) -> f32[2, 3] attrs {num_input = 1} {
  %wt: f32[2, 3] = permute_dims(%w, axes=[1, 0])
  %we: f32[2, 3] = exp(%wt)
  %y: f32[2, 3] = multiply(%x, %we)
  return %y
}""",
        """
def @main(%x: f32[2, 3], %we: f32[2, 3]) -> f32[2, 3] attrs {num_input = 1} {
  %y: f32[2, 3] = multiply(%x, %we)
  return %y
}

def @main_transform_params(%w: f32[3, 2]) -> (f32[2, 3],) attrs {num_input = 0,
    transform_params_of = "main"} {
  %wt: f32[2, 3] = permute_dims(%w, axes=[1, 0])
  %we: f32[2, 3] = exp(%wt)
  %transformed: (f32[2, 3],) = (%we,)
  return %transformed
}""",
    ),
    C(
        "lift-transform-params",
        "a weight main reads directly is passed through",
        """
def @main(%x: f32[3], %w: f32[3], %v: f32[3]) -> f32[3] attrs {num_input = 1} {
  %e: f32[3] = exp(%w)
  %a: f32[3] = add(%x, %e)
  %y: f32[3] = multiply(%a, %v)
  return %y
}""",
        """
def @main(%x: f32[3], %v: f32[3], %e: f32[3]) -> f32[3] attrs {num_input = 1} {
  %a: f32[3] = add(%x, %e)
  %y: f32[3] = multiply(%a, %v)
  return %y
}

def @main_transform_params(%w: f32[3], %v: f32[3]) -> (f32[3], f32[3]) attrs {num_input = 0,
    transform_params_of = "main"} {
  %e: f32[3] = exp(%w)
  %transformed: (f32[3], f32[3]) = (%v, %e)
  return %transformed
}""",
    ),
    C(
        "lift-transform-params",
        "a constant-only binding main reads stays in main",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {
  %k: f32[3] = exp(const(f32[3], [0.0, 1.0, 2.0]))
  %e: f32[3] = exp(%w)
  %a: f32[3] = add(%x, %e)
  %y: f32[3] = add(%a, %k)
  return %y
}""",
        """
def @main(%x: f32[3], %e: f32[3]) -> f32[3] attrs {num_input = 1} {
  %k: f32[3] = exp(const(f32[3], [0.0, 1.0, 2.0]))
  %a: f32[3] = add(%x, %e)
  %y: f32[3] = add(%a, %k)
  return %y
}

def @main_transform_params(%w: f32[3]) -> (f32[3],) attrs {num_input = 0,
    transform_params_of = "main"} {
  %e: f32[3] = exp(%w)
  %transformed: (f32[3],) = (%e,)
  return %transformed
}""",
    ),
    C(
        "lift-transform-params",
        "a constant-only binding only lifted bindings read moves with them",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {
  %k: f32[3] = exp(const(f32[3], [0.0, 1.0, 2.0]))
  %e: f32[3] = add(%w, %k)
  %y: f32[3] = add(%x, %e)
  return %y
}""",
        """
def @main(%x: f32[3], %e: f32[3]) -> f32[3] attrs {num_input = 1} {
  %y: f32[3] = add(%x, %e)
  return %y
}

def @main_transform_params(%w: f32[3]) -> (f32[3],) attrs {num_input = 0,
    transform_params_of = "main"} {
  %k: f32[3] = exp(const(f32[3], [0.0, 1.0, 2.0]))
  %e: f32[3] = add(%w, %k)
  %transformed: (f32[3],) = (%e,)
  return %transformed
}""",
    ),
    K(
        "lift-transform-params",
        "a function without num_input",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%w)
  %y: f32[3] = add(%x, %e)
  return %y
}""",
    ),
    K(
        "lift-transform-params",
        "a function whose weights are only read with inputs",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1} {
  %y: f32[3] = add(%x, %w)
  return %y
}""",
    ),
    K(
        "lift-transform-params",
        "a private function",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] {
  %y: f32[3] = call @f(%x, %w)
  return %y
}
def @f(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 1, private = true} {
  %e: f32[3] = exp(%w)
  %y: f32[3] = add(%x, %e)
  return %y
}""",
    ),
]

LAZY_TRANSFORM = [
    C(
        "lazy-transform-params",
        "weights fetched by get_item before first use, results handed to set_item",
        """
def @main_transform_params(%w1: f32[3, 2], %w2: f32[3]) -> (f32[2, 3], f32[3]) {
  %t: f32[2, 3] = permute_dims(%w1, axes=[1, 0])
  %e: f32[3] = exp(%w2)
  %o: (f32[2, 3], f32[3]) = (%t, %e)
  return %o
}""",
        """
def @main_transform_params() -> (f32[2, 3], f32[3]) {
  %w1: f32[3, 2] = get_item(index=0, type="f32[3, 2]")
  %t: f32[2, 3] = permute_dims(%w1, axes=[1, 0])
  %set_item: f32[2, 3] = set_item(%t, index=0)
  %w2: f32[3] = get_item(index=1, type="f32[3]")
  %e: f32[3] = exp(%w2)
  %set_item_1: f32[3] = set_item(%e, index=1)
  %o: (f32[2, 3], f32[3]) = (%set_item, %set_item_1)
  return %o
}""",
    ),
    C(
        "lazy-transform-params",
        "a returned tuple made by a call is set item by item",
        """
def @main_transform_params(%w: f32[3]) -> (f32[3], f32[3]) {
  %o: (f32[3], f32[3]) = call @pair(%w)
  return %o
}
def @pair(%a: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%a)
  %t: (f32[3], f32[3]) = (%a, %e)
  return %t
}""",
        """
def @main_transform_params() -> (f32[3], f32[3]) {
  %w: f32[3] = get_item(index=0, type="f32[3]")
  %o: (f32[3], f32[3]) = call @pair(%w)
  %item: f32[3] = %o[0]
  %set_item: f32[3] = set_item(%item, index=0)
  %item_1: f32[3] = %o[1]
  %set_item_1: f32[3] = set_item(%item_1, index=1)
  %o_1: (f32[3], f32[3]) = (%set_item, %set_item_1)
  return %o_1
}

def @pair(%a: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%a)
  %t: (f32[3], f32[3]) = (%a, %e)
  return %t
}""",
    ),
    K(
        "lazy-transform-params",
        "a function that is not a weight transform",
        """
def @main(%w: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%w)
  return %e
}""",
    ),
]

LAZY_GET_INPUT = [
    C(
        "lazy-get-input",
        "weights after num_input are fetched by get_item at their first use",
        """
def @main(%x: f32[3], %w: f32[3], %v: f32[3]) -> f32[3] attrs {num_input = 1} {
  %a: f32[3] = add(%x, %w)
  %e: f32[3] = exp(%a)
  %y: f32[3] = multiply(%e, %v)
  return %y
}""",
        """
def @main(%x: f32[3]) -> f32[3] attrs {num_input = 1} {
  %w: f32[3] = get_item(index=0, type="f32[3]")
  %a: f32[3] = add(%x, %w)
  %e: f32[3] = exp(%a)
  %v: f32[3] = get_item(index=1, type="f32[3]")
  %y: f32[3] = multiply(%e, %v)
  return %y
}""",
    ),
    K(
        "lazy-get-input",
        "a function without num_input",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] {
  %y: f32[3] = add(%x, %w)
  return %y
}""",
    ),
]

LAZY_SET_OUTPUT = [
    C(
        "lazy-set-output",
        "each field of the returned tuple is set as soon as it is computed",
        """
def @main(%x: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%x)
  %r: f32[3] = relu(%e)
  %o: (f32[3], f32[3]) = (%r, %e)
  return %o
}""",
        """
def @main(%x: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%x)
  %set_item: f32[3] = set_item(%e, index=1)
  %r: f32[3] = relu(%e)
  %set_item_1: f32[3] = set_item(%r, index=0)
  %o: (f32[3], f32[3]) = (%set_item_1, %set_item)
  return %o
}""",
    ),
    C(
        "lazy-set-output",
        "a single returned tensor is result 0",
        """
def @main(%x: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%x)
  return %e
}""",
        """
def @main(%x: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%x)
  %set_item: f32[3] = set_item(%e, index=0)
  return %set_item
}""",
    ),
    K(
        "lazy-set-output",
        "a function whose results are set already",
        """
def @main(%x: f32[3]) -> f32[3] {
  %e: f32[3] = exp(%x)
  %s: f32[3] = set_item(%e, index=0)
  return %s
}""",
    ),
]

BIND_PARAMS = [
    C(
        BindParams({"w": np.array([1.0, 2.0, 3.0], dtype=np.float32)}),
        "a parameter becomes a named constant; num_input counts the inputs left",
        """
def @main(%x: f32[3], %w: f32[3]) -> f32[3] attrs {num_input = 2} {
  %y: f32[3] = add(%x, %w)
  return %y
}""",
        """
weights {
  $w: f32[3] = [1.0, 2.0, 3.0]
}

def @main(%x: f32[3]) -> f32[3] attrs {num_input = 1} {
  %y: f32[3] = add(%x, $w)
  return %y
}""",
    ),
]

REPLICA_LINEAR = [
    C(
        "replica-linear-broadcast",
        "linear on a rank-3 input -> matmul with the weight broadcast over the batch",
        DECOMPOSE
        + """
def @main(%x: f32[2, 4, 2]) -> f32[2, 4, 3] {
  %y: f32[2, 4, 3] = linear(%x, $w, $b)
  return %y
}""",
        """
weights {
  $w: f32[3, 2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
  $b: f32[3] = [0.5, -0.5, 1.0]
}

def @main(%x: f32[2, 4, 2]) -> f32[2, 4, 3] {
  %permute_dims: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %broadcast_to: f32[2, 2, 3] = broadcast_to(%permute_dims, shape=[2, 2, 3])
  %matmul: f32[2, 4, 3] = matmul(%x, %broadcast_to, out_dtype=none)
  %y: f32[2, 4, 3] = add(%matmul, $b)
  return %y
}""",
        numbers=True,
    ),
    K(
        "replica-linear-broadcast",
        "linear on a rank-2 input",
        DECOMPOSE
        + """
def @main(%x: f32[4, 2]) -> f32[4, 3] {
  %y: f32[4, 3] = linear(%x, $w, $b)
  return %y
}""",
    ),
]

REPLICA_SQUEEZE = [
    C(
        "replica-dynamic-to-static-squeeze",
        "a squeeze inlined out of a folded If gets TVM's wrong shape",
        """
def @main(%x: f32[3, 2]) -> f32[*] {
  %r: f32[?, ?, ?] = reshape(%x, const(i64[3], [3, 1, 2]))
  %s: i64[3] = shape_of(%r)
  %d: i64[1] = take(%s, const(i64[1], [1]), axis=0)
  %c: bool[1] = equal(%d, const(i64[1], [1]))
  %o: f32[*] = if %c {
    %q: f32[?, ?] = squeeze(%r, axes=[1])
    yield %q
  } else {
    %i: f32[?, ?, ?] = identity(%r)
    yield %i
  }
  return %o
}""",
        """
def @main(%x: f32[3, 2]) -> f32[3, 3] {
  %r: f32[3, 1, 2] = reshape(%x, allowzero=true, shape=[3, 1, 2])
  %q: f32[3, 3] = squeeze(%r, axes=[1])
  return %q
}""",
        verify_each=False,  # the wrong annotation is the bug the replica copies
    ),
    K(
        "replica-dynamic-to-static-squeeze",
        "an If whose condition is not a constant",
        """
def @main(%x: f32[3, 1, 2], %c: bool[]) -> f32[*] {
  %o: f32[*] = if %c {
    %q: f32[3, 2] = squeeze(%x, axes=[1])
    yield %q
  } else {
    %i: f32[3, 1, 2] = identity(%x)
    yield %i
  }
  return %o
}""",
    ),
]

REPLICA_LAZY = [
    C(
        "replica-lazy-transform-params",
        "a transform returning an inline tuple is made lazy (as lazy-transform-params)",
        """
def @main_transform_params(%w: f32[3]) -> (f32[3], f32[3]) {
  %e: f32[3] = exp(%w)
  %o: (f32[3], f32[3]) = (%w, %e)
  return %o
}""",
        """
def @main_transform_params() -> (f32[3], f32[3]) {
  %w: f32[3] = get_item(index=0, type="f32[3]")
  %set_item: f32[3] = set_item(%w, index=0)
  %e: f32[3] = exp(%w)
  %set_item_1: f32[3] = set_item(%e, index=1)
  %o: (f32[3], f32[3]) = (%set_item, %set_item_1)
  return %o
}""",
    ),
]

CASES = (
    INFER_TYPES
    + DYNAMIC_TO_STATIC
    + DECOMPOSE_OPS
    + CONVERT_DTYPE
    + TO_MIXED_PRECISION
    + CONVERT_LAYOUT
    + INLINE
    + FUSE_OPS
    + LIFT
    + LAZY_TRANSFORM
    + LAZY_GET_INPUT
    + LAZY_SET_OUTPUT
    + BIND_PARAMS
    + REPLICA_LINEAR
    + REPLICA_SQUEEZE
    + REPLICA_LAZY
)
