"""convert-layout: Before/Expected, permutes moved down and cancelled, values preserved."""

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import Call, Module, assert_structural_equal, parse
from compiler.passes import PipelineError
from compiler.passes.convert_layout import ConvertLayout
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import apply, case_tests
from tests.compiler.passes.test_decompose_ops import assert_same_values, model

NHWC = "convert-layout{layout=NHWC}"


def ops_of(module: Module) -> list[str]:
    return [b.op for b in module.main.bindings if isinstance(b, Call)]


def with_weights(body: str, **shapes) -> Module:
    rng = np.random.default_rng(0)
    params = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    decl = "\n".join(f"  ${n}: f32[{', '.join(map(str, s))}]" for n, s in shapes.items())
    return parse(f"weights {{\n{decl}\n}}\n{body}", params=params)


def test_one_conv():
    weights = """
weights {
  $w: f32[2, 1, 1, 1] = [[[[1]]], [[[2]]]]
  $b: f32[2] = [0.5, -0.5]
}
"""
    before = parse(
        weights
        + """
def @main(%x: f32[1, 1, 3, 3]) -> f32[1, 2, 3, 3] {
  %y: f32[1, 2, 3, 3] = conv2d(%x, $w, $b)
  return %y
}
"""
    )
    expected = parse(
        weights
        + """
def @main(%x: f32[1, 1, 3, 3]) -> f32[1, 2, 3, 3] {
  %xt: f32[1, 3, 3, 1] = permute_dims(%x, axes=[0, 2, 3, 1])
  %wt: f32[1, 1, 1, 2] = permute_dims($w, axes=[2, 3, 1, 0])
  %c: f32[1, 3, 3, 2] = conv2d(%xt, %wt, $b, data_layout="NHWC", kernel_layout="HWIO")
  %y: f32[1, 2, 3, 3] = permute_dims(%c, axes=[0, 3, 1, 2])
  return %y
}
"""
    )
    after = apply(before, NHWC)
    assert_structural_equal(after, expected)
    assert_same_values(before, after)


def test_permutes_move_down_through_elementwise_ops_and_cancel_between_convs():
    before = with_weights(
        """
def @main(%x: f32[2, 3, 8, 8]) -> f32[2, 10] {
  %c1: f32[2, 8, 8, 8] = conv2d(%x, $w1, $b1, padding=[1, 1, 1, 1])
  %m: f32[2, 8, 8, 8] = multiply(%c1, $s)
  %r: f32[2, 8, 8, 8] = relu(%m)
  %c2: f32[2, 8, 8, 8] = conv2d(%r, $w2, padding=[1, 1, 1, 1])
  %a: f32[2, 8, 8, 8] = add(%c2, %r)
  %h: f32[2, 8, 8, 8] = multiply(%a, const(f32[], 0.5))
  %p: f32[2, 8, 4, 4] = max_pool2d(%h, pool_size=[2, 2])
  %g: f32[2, 8] = mean(%p, axes=[2, 3])
  %l: f32[2, 10] = linear(%g, $fc.w, $fc.b)
  return %l
}
""",
        w1=(8, 3, 3, 3),
        b1=(8,),
        s=(8, 1, 1),
        w2=(8, 8, 3, 3),
        **{"fc.w": (10, 8), "fc.b": (10,)},
    )
    after = apply(before, NHWC)
    assert_same_values(before, after)
    text = str(after)
    assert text.count('data_layout="NHWC"') == 2 and 'layout="NHWC"' in text
    # The mean over H and W gives (N, C) in either layout: no permute back at all.
    assert "mean(%max_pool2d, axes=[1, 2]" in text
    folded = apply(after, "fold-constant,dead-code-elimination")
    assert ops_of(folded).count("permute_dims") == 1  # the input's, and nothing else
    assert_same_values(before, folded)
    # And back: NCHW again, weights permuted by ops once more.
    back = apply(folded, "convert-layout{layout=NCHW},fold-constant,dead-code-elimination")
    assert 'data_layout="NHWC"' not in str(back) and "permute_dims" not in ops_of(back)
    assert_same_values(before, back)


def test_keepdims_reduction_keeps_the_permute_after_it():
    before = with_weights(
        """
def @main(%x: f32[1, 2, 4, 4]) -> f32[1, 2, 1, 1] {
  %c: f32[1, 2, 4, 4] = conv2d(%x, $w)
  %m: f32[1, 2, 1, 1] = max(%c, axes=[-1, -2], keepdims=true)
  return %m
}
""",
        w=(2, 2, 1, 1),
    )
    after = apply(before, NHWC)
    assert ops_of(after)[-2:] == ["max", "permute_dims"]
    assert "max(%conv2d, axes=[1, 2], keepdims=true)" in str(after)
    assert_same_values(before, after)


def test_a_models_own_permute_to_channels_last_cancels_with_ours():
    # ConvNeXt: depthwise conv, then permute to NHWC for a channels-last layer norm.
    before = with_weights(
        """
def @main(%x: f32[1, 4, 5, 5]) -> f32[1, 5, 5, 4] {
  %c: f32[1, 4, 5, 5] = conv2d(%x, $dw, $dwb, padding=[3, 3, 3, 3], groups=4)
  %t: f32[1, 5, 5, 4] = permute_dims(%c, axes=[0, 2, 3, 1])
  %n: f32[1, 5, 5, 4] = layer_norm(%t, $g, $b)
  return %n
}
""",
        dw=(4, 1, 7, 7),
        dwb=(4,),
        g=(4,),
        b=(4,),
    )
    after = apply(before, NHWC)
    assert ops_of(after) == ["permute_dims", "permute_dims", "conv2d", "layer_norm"]
    assert after.main.bindings[-1].args[0].op == "conv2d"
    assert_same_values(before, after)


def test_pools_depthwise_and_kernel_layout_option():
    before = with_weights(
        """
def @main(%x: f32[n, 4, 6, 6]) -> f32[n, 4, 1, 1] {
  %c: f32[n, 4, 6, 6] = conv2d(%x, $dw, padding=[1, 1, 1, 1], groups=4)
  %a: f32[n, 4, 3, 3] = avg_pool2d(%c, pool_size=[2, 2], count_include_pad=false)
  %s: f32[n, 4, 3, 3] = sigmoid(%a)
  %g: f32[n, 4, 1, 1] = adaptive_avg_pool2d(%s, output_size=[1, 1])
  return %g
}
""",
        dw=(4, 1, 3, 3),
    )
    after = apply(before, "convert-layout{layout=NHWC,kernel_layout=OHWI}")
    assert 'kernel_layout="OHWI"' in str(after)
    assert ops_of(after).count("permute_dims") == 3  # input, weight, result
    assert_same_values(before, after)


def test_models_keep_their_values():
    before = model("conv_bn_relu")
    after = apply(before, "decompose-ops," + NHWC)
    assert_same_values(before, after)
    folded = apply(after, "fold-constant,dead-code-elimination")
    assert ops_of(folded) == ["permute_dims", "conv2d", "multiply", "add", "relu", "permute_dims"]
    assert_same_values(before, folded)


def test_new_nodes_keep_the_provenance_of_the_conv():
    after = apply(model("conv_bn_relu"), NHWC)
    conv = [b for b in after.main.bindings if b.prov.module_path == "conv"]
    assert [b.op for b in conv] == ["permute_dims", "permute_dims", "conv2d"]
    assert all(b.prov.pass_name == "convert-layout" for b in conv)


def test_unchanged_modules_come_back_as_they_are():
    no_conv = model("mlp")
    assert apply(no_conv, NHWC) is no_conv
    nhwc = with_weights(
        """
def @main(%x: f32[1, 4, 4, 2]) -> f32[1, 4, 4, 3] {
  %c: f32[1, 4, 4, 3] = conv2d(%x, $w, data_layout="NHWC", kernel_layout="HWIO")
  %r: f32[1, 4, 4, 3] = relu(%c)
  return %r
}
""",
        w=(1, 1, 2, 3),
    )
    assert apply(nhwc, NHWC) is nhwc


def test_spec():
    p = passes.parse_pass(NHWC)
    assert p == ConvertLayout("NHWC") and str(p) == NHWC
    with pytest.raises(PipelineError, match="permutation of NCHW"):
        passes.parse_pass("convert-layout{layout=NCW}")
    with pytest.raises(PipelineError):
        passes.parse_pass("convert-layout")  # the target layout is required


def test_convnext_small_keeps_its_values():
    from compiler.models import convnext

    before = convnext(dims=(8, 16, 32, 64), depths=(1, 1, 2, 1), image=32, num_classes=10)
    after = apply(before, "convert-layout{layout=NHWC},fold-constant,dead-code-elimination")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(run(after, x)[0], run(before, x)[0], rtol=1e-4, atol=1e-4)
    # Each block's permute to channels-last for its layer norm cancels with ours.
    assert ops_of(after).count("permute_dims") < ops_of(before).count("permute_dims")


def test_running_twice_changes_nothing_the_second_time():
    once = apply(model("conv_bn_relu"), "decompose-ops," + NHWC)
    assert apply(once, NHWC) is once

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

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

CASES = CONVERT_LAYOUT
test_rule, test_guard = case_tests(CASES)
