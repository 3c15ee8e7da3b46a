"""decompose-ops: Before/Expected pairs per op, values preserved on small models, options.

The small models here (``MODELS``, built by ``model(name)``) are also used by the tests of
convert-layout, convert-dtype and fuse-ops.
"""

import math

import numpy as np
import pytest

import compiler.ops.nn  # noqa: F401  (registers conv2d, linear, ...)
from compiler import passes
from compiler.interpret import run
from compiler.ir import Call, Module, assert_structural_equal, parse
from compiler.passes import PipelineError
from compiler.passes.decompose_ops import DecomposeOps
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import apply, case_tests

# ----- shared small models ----------------------------------------------------------------

MODELS = {
    "conv_bn_relu": (
        {
            "conv.w": (8, 3, 3, 3),
            "conv.b": (8,),
            "bn.weight": (8,),
            "bn.bias": (8,),
            "bn.mean": (8,),
            "bn.var": (8,),
        },
        """
def @main(%x: f32[2, 3, 8, 8]) -> f32[2, 8, 8, 8] {
  %c: f32[2, 8, 8, 8] = conv2d(%x, $conv.w, $conv.b, padding=[1, 1, 1, 1])  loc(module="conv")
  %b: f32[2, 8, 8, 8] = batch_norm(%c, $bn.weight, $bn.bias, $bn.mean, $bn.var)  loc(module="bn")
  %r: f32[2, 8, 8, 8] = relu(%b)  loc(module="relu")
  return %r
}
""",
    ),
    "mlp": (
        {"fc1.weight": (32, 16), "fc1.bias": (32,), "fc2.weight": (8, 32), "fc2.bias": (8,)},
        """
def @main(%x: f32[n, 16]) -> f32[n, 8] {
  %h: f32[n, 32] = linear(%x, $fc1.weight, $fc1.bias)  loc(module="fc1")
  %g: f32[n, 32] = gelu(%h, approximate="tanh")  loc(module="act")
  %y: f32[n, 8] = linear(%g, $fc2.weight, $fc2.bias)  loc(module="fc2")
  return %y
}
""",
    ),
    "layer_norm": (
        {"ln.weight": (16,), "ln.bias": (16,)},
        """
def @main(%x: f32[2, 5, 16]) -> f32[2, 5, 16] {
  %y: f32[2, 5, 16] = layer_norm(%x, $ln.weight, $ln.bias, axes=[-1])  loc(module="ln")
  return %y
}
""",
    ),
    "attention": (
        {"qkv.weight": (48, 16), "proj.weight": (16, 16), "proj.bias": (16,)},
        """
def @main(%x: f32[2, 6, 16]) -> f32[2, 6, 16] {
  %qkv: f32[2, 6, 48] = linear(%x, $qkv.weight)  loc(module="attn.qkv")
  %r: f32[2, 6, 3, 2, 8] = reshape(%qkv, shape=[2, 6, 3, 2, 8])
  %p: f32[3, 2, 2, 6, 8] = permute_dims(%r, axes=[2, 0, 3, 1, 4])
  %q: f32[2, 2, 6, 8] = take(%p, const(i64[], 0), axis=0)
  %k: f32[2, 2, 6, 8] = take(%p, const(i64[], 1), axis=0)
  %v: f32[2, 2, 6, 8] = take(%p, const(i64[], 2), axis=0)
  %a: f32[2, 2, 6, 8] = scaled_dot_product_attention(%q, %k, %v, is_causal=true)  loc(module="attn")
  %t: f32[2, 6, 2, 8] = permute_dims(%a, axes=[0, 2, 1, 3])
  %m: f32[2, 6, 16] = reshape(%t, shape=[2, 6, 16])
  %y: f32[2, 6, 16] = linear(%m, $proj.weight, $proj.bias)  loc(module="attn.proj")
  return %y
}
""",
    ),
}


def model(name: str, seed: int = 0) -> Module:
    """One of ``MODELS`` with random weights (variances positive)."""
    shapes, body = MODELS[name]
    rng = np.random.default_rng(seed)
    params = {}
    for wname, shape in shapes.items():
        scale = 1 / math.sqrt(math.prod(shape[1:])) if len(shape) > 1 else 0.5
        a = (rng.standard_normal(shape) * scale).astype(np.float32)
        params[wname] = np.abs(a) + 0.5 if "var" in wname else a
    decl = "\n".join(f"  ${n}: f32[{', '.join(map(str, s))}]" for n, s in shapes.items())
    return parse(f"weights {{\n{decl}\n}}\n{body}", params=params)


def random_inputs(module: Module, seed: int = 1, n: int = 3) -> list[np.ndarray]:
    """Standard normal inputs for ``main`` (symbolic dims set to ``n``)."""
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal([d if isinstance(d, int) else n for d in p.ty.shape]).astype(
            p.ty.dtype.numpy
        )
        for p in module.main.params
    ]


def assert_same_values(before: Module, after: Module, rtol=1e-5, atol=1e-5, seed=1):
    """``after`` computes what ``before`` does on random inputs (dtypes and shapes too)."""
    inputs = random_inputs(before, seed)
    for got, want in zip(run(after, *inputs), run(before, *inputs), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def ops_of(module: Module) -> list[str]:
    return [b.op for b in module.main.bindings if isinstance(b, Call)]


# ----- Before / Expected ------------------------------------------------------------------

WEIGHTS = """
weights {
  $fc.weight: f32[3, 2] = [[1, 2], [3, 4], [5, 6]]
  $fc.bias: f32[3] = [0.5, -1, 2]
  $g: f32[3] = [1, 2, 3]
  $b: f32[3] = [0, 1, 0]
  $mean: f32[3] = [0.1, 0.2, 0.3]
  $var: f32[3] = [1, 4, 9]
}
"""


def test_linear():
    before = parse(
        WEIGHTS
        + """
def @main(%x: f32[n, 2]) -> f32[n, 3] {
  %y: f32[n, 3] = linear(%x, $fc.weight, $fc.bias)
  return %y
}
"""
    )
    expected = parse(
        WEIGHTS
        + """
def @main(%x: f32[n, 2]) -> f32[n, 3] {
  %wt: f32[2, 3] = permute_dims($fc.weight, axes=[1, 0])
  %mm: f32[n, 3] = matmul(%x, %wt)
  %y: f32[n, 3] = add(%mm, $fc.bias)
  return %y
}
"""
    )
    after = apply(before, "decompose-ops")
    assert_structural_equal(after, expected)
    assert_same_values(before, after)


def test_batch_norm_scale_and_shift_are_ops_on_the_parameters():
    before = parse(
        WEIGHTS
        + """
def @main(%x: f32[2, 3, 4, 4]) -> f32[2, 3, 4, 4] {
  %y: f32[2, 3, 4, 4] = batch_norm(%x, $g, $b, $mean, $var, epsilon=0.001)
  return %y
}
"""
    )
    expected = parse(
        WEIGHTS
        + """
def @main(%x: f32[2, 3, 4, 4]) -> f32[2, 3, 4, 4] {
  %v: f32[3] = add($var, const(f32[], 0.001))
  %sd: f32[3] = sqrt(%v)
  %scale: f32[3] = divide($g, %sd)
  %scale4: f32[3, 1, 1] = unsqueeze(%scale, axes=[1, 2])
  %xs: f32[2, 3, 4, 4] = multiply(%x, %scale4)
  %ms: f32[3] = multiply($mean, %scale)
  %shift: f32[3] = subtract($b, %ms)
  %shift4: f32[3, 1, 1] = unsqueeze(%shift, axes=[1, 2])
  %y: f32[2, 3, 4, 4] = add(%xs, %shift4)
  return %y
}
"""
    )
    after = apply(before, "decompose-ops")
    assert_structural_equal(after, expected)
    assert_same_values(before, after)
    # fold-constant then leaves one multiply and one add, on two new per-channel constants.
    folded = apply(after, "fold-constant,dead-code-elimination")
    assert ops_of(folded) == ["multiply", "add"]
    assert {c.ty.shape for c in folded.constants().values()} == {(3, 1, 1)}
    assert_same_values(before, folded)


def test_batch_norm_on_the_last_axis_needs_no_unsqueeze():
    before = parse(
        WEIGHTS
        + """
def @main(%x: f32[4, 3]) -> f32[4, 3] {
  %y: f32[4, 3] = batch_norm(%x, $g, $b, $mean, $var, axis=-1)
  return %y
}
"""
    )
    after = apply(before, "decompose-ops")
    assert "unsqueeze" not in ops_of(after)
    assert_same_values(before, after)


def test_layer_norm():
    before = parse(
        WEIGHTS
        + """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %y: f32[2, 3] = layer_norm(%x, $g, $b, axes=[-1], epsilon=1e-05)
  return %y
}
"""
    )
    expected = parse(
        WEIGHTS
        + """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %mean: f32[2, 1] = mean(%x, axes=[1], keepdims=true)
  %d: f32[2, 3] = subtract(%x, %mean)
  %var: f32[2, 1] = variance(%x, axes=[1], keepdims=true)
  %ve: f32[2, 1] = add(%var, const(f32[], 1e-05))
  %inv: f32[2, 1] = rsqrt(%ve)
  %n: f32[2, 3] = multiply(%d, %inv)
  %s: f32[2, 3] = multiply(%n, $g)
  %y: f32[2, 3] = add(%s, $b)
  return %y
}
"""
    )
    after = apply(before, "decompose-ops")
    assert_structural_equal(after, expected)
    assert_same_values(before, after)


def test_layer_norm_over_leading_axes_reshapes_its_parameters():
    before = parse(
        WEIGHTS
        + """
def @main(%x: f32[3, 5]) -> f32[3, 5] {
  %y: f32[3, 5] = layer_norm(%x, $g, $b, axes=[0])
  return %y
}
"""
    )
    after = apply(before, "decompose-ops")
    assert ops_of(after).count("reshape") == 2
    assert_same_values(before, after)


def test_attention_with_bool_mask_and_causal():
    before = parse("""
def @main(%q: f32[2, 3, 4], %k: f32[2, 5, 4], %v: f32[2, 5, 4], %m: bool[3, 5]) -> f32[2, 3, 4] {
  %a: f32[2, 3, 4] = scaled_dot_product_attention(%q, %k, %v, %m, is_causal=true)
  return %a
}
""")
    expected = parse("""
def @main(%q: f32[2, 3, 4], %k: f32[2, 5, 4], %v: f32[2, 5, 4], %m: bool[3, 5]) -> f32[2, 3, 4] {
  %ones: bool[3, 5] = ones(shape=[3, 5], dtype=bool)
  %tril: bool[3, 5] = tril(%ones)
  %keep: bool[3, 5] = logical_and(%m, %tril)
  %kt: f32[2, 4, 5] = permute_dims(%k, axes=[0, 2, 1])
  %s: f32[2, 3, 5] = matmul(%q, %kt)
  %ss: f32[2, 3, 5] = multiply(%s, const(f32[], 0.5))
  %w: f32[2, 3, 5] = where(%keep, %ss, const(f32[], -inf))
  %p: f32[2, 3, 5] = softmax(%w, axis=-1)
  %a: f32[2, 3, 4] = matmul(%p, %v)
  return %a
}
""")
    after = apply(before, "decompose-ops")
    assert_structural_equal(after, expected)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3, 4), (2, 5, 4), (2, 5, 4)])
    mask = rng.random((3, 5)) > 0.5
    mask[:, 0] = True  # every query keeps a key (a row with none differs: NaN vs zeros)
    np.testing.assert_allclose(run(after, q, k, v, mask)[0], run(before, q, k, v, mask)[0], 1e-5)


def test_attention_with_float_mask_and_scale():
    before = parse("""
def @main(%q: f32[2, 3, 4], %k: f32[2, 5, 4], %v: f32[2, 5, 4], %m: f32[2, 3, 5]) -> f32[2, 3, 4] {
  %a: f32[2, 3, 4] = scaled_dot_product_attention(%q, %k, %v, %m, scale=0.25)
  return %a
}
""")
    after = apply(before, "decompose-ops")
    assert ops_of(after) == ["permute_dims", "matmul", "multiply", "add", "softmax", "matmul"]
    assert_same_values(before, after)


def test_attention_with_symbolic_features_and_no_scale_is_kept():
    module = parse("""
def @main(%q: f32[3, e], %k: f32[5, e], %v: f32[5, e]) -> f32[3, e] {
  %a: f32[3, e] = scaled_dot_product_attention(%q, %k, %v)
  return %a
}
""")
    assert apply(module, "decompose-ops") is module


# ----- models, options, provenance -------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_keep_their_values(name):
    before = model(name)
    after = apply(before, "decompose-ops")
    assert not {"linear", "batch_norm", "layer_norm", "scaled_dot_product_attention"} & set(
        ops_of(after)
    )
    assert_same_values(before, after)
    assert_same_values(before, apply(after, "fold-constant,dead-code-elimination"))


def test_gelu_stays_and_new_nodes_keep_the_provenance_of_what_they_replace():
    after = apply(model("mlp"), "decompose-ops")
    assert ops_of(after).count("gelu") == 1
    fc1 = [b for b in after.main.bindings if b.prov.module_path == "fc1"]
    assert [b.op for b in fc1] == ["permute_dims", "matmul", "add"]
    assert all(b.prov.pass_name == "decompose-ops" for b in fc1)
    assert fc1[-1].name == "h"  # the value that replaces %h keeps its name


def test_ops_option_selects_what_is_decomposed():
    p = passes.parse_pass("decompose-ops{ops=[batch_norm]}")
    assert p == DecomposeOps(("batch_norm",)) and str(p) == "decompose-ops{ops=[batch_norm]}"
    assert str(DecomposeOps()) == "decompose-ops"
    assert passes.parse_pass("decompose-ops{ops=linear}").ops == ("linear",)
    after = apply(model("conv_bn_relu"), str(p))
    assert "conv2d" in ops_of(after) and "batch_norm" not in ops_of(after)
    mlp = model("mlp")
    assert apply(mlp, "decompose-ops{ops=[batch_norm,layer_norm]}") is mlp
    with pytest.raises(PipelineError, match="cannot decompose gelu"):
        passes.parse_pass("decompose-ops{ops=[gelu]}")

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

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

CASES = DECOMPOSE_OPS
test_rule, test_guard = case_tests(CASES)
