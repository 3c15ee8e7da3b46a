"""fuse-ops: group shapes (TVM's rules), convexity, one output per group, values preserved."""

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import FuncCall, Module, assert_structural_equal, parse, verify
from compiler.ops import ANCHOR, get_op
from compiler.passes.fuse_ops import FuseOps
from tests.compiler.passes.helpers import OPAQUE_CUMSUM, case_tests
from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.test_decompose_ops import MODELS, assert_same_values, model


def fuse(module: Module) -> Module:
    out = passes.run(module, "fuse-ops", raise_on_failure=True, verify_each=True).module
    verify(out)
    return out


def groups(module: Module) -> dict[str, list[str]]:
    """Fused function name -> its ops in order."""
    return {
        name: [b.op for b in fn.bindings]
        for name, fn in module.functions.items()
        if fn.attrs.get("primitive")
    }


def test_conv2d_add_relu_is_one_function():
    weights = """
weights {
  $w: f32[4, 3, 3, 3]
  $b: f32[4, 1, 1] = [[[0.5]], [[-0.5]], [[1]], [[0]]]
}
"""
    params = {"w": np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)}
    before = parse(
        weights
        + """
def @main(%x: f32[1, 3, 6, 6]) -> f32[1, 4, 6, 6] {
  %c: f32[1, 4, 6, 6] = conv2d(%x, $w, padding=[1, 1, 1, 1])
  %a: f32[1, 4, 6, 6] = add(%c, $b)
  %r: f32[1, 4, 6, 6] = relu(%a)
  return %r
}
""",
        params=params,
    )
    expected = parse(
        weights
        + """
def @main(%x: f32[1, 3, 6, 6]) -> f32[1, 4, 6, 6] {
  %r: f32[1, 4, 6, 6] = call @fused_conv2d_add_relu(%x)
  return %r
}

def @fused_conv2d_add_relu(%x: f32[1, 3, 6, 6]) -> f32[1, 4, 6, 6]
    attrs {primitive = true, private = true} {
  %c: f32[1, 4, 6, 6] = conv2d(%x, $w, padding=[1, 1, 1, 1])
  %a: f32[1, 4, 6, 6] = add(%c, $b)
  %r: f32[1, 4, 6, 6] = relu(%a)
  return %r
}
""",
        params=params,
    )
    after = fuse(before)
    assert_structural_equal(after, expected)
    assert_same_values(before, after)


def test_two_anchors_never_share_a_group():
    before = parse("""
def @main(%x: f32[4, 8], %w1: f32[8, 8], %w2: f32[8, 8]) -> f32[4, 8] {
  %a: f32[4, 8] = matmul(%x, %w1)
  %r: f32[4, 8] = relu(%a)
  %b: f32[4, 8] = matmul(%r, %w2)
  %s: f32[4, 8] = add(%b, %a)
  %t: f32[4, 8] = tanh(%s)
  return %t
}
""")
    after = fuse(before)
    # %a feeds relu and the add after the second matmul: its post-dominator (the add) is
    # reached through an anchor, so the first matmul stays alone; the second takes add, tanh.
    assert groups(after) == {"fused_matmul_add_tanh": ["matmul", "add", "tanh"]}
    assert_same_values(before, after)
    chain = parse("""
def @main(%x: f32[4, 8], %w1: f32[8, 8], %w2: f32[8, 8]) -> f32[4, 8] {
  %a: f32[4, 8] = matmul(%x, %w1)
  %r: f32[4, 8] = relu(%a)
  %b: f32[4, 8] = matmul(%r, %w2)
  %t: f32[4, 8] = relu(%b)
  return %t
}
""")
    fused = fuse(chain)
    assert groups(fused) == {
        "fused_matmul_relu": ["matmul", "relu"],
        "fused_matmul_relu_1": ["matmul", "relu"],
    }
    assert_same_values(chain, fused)


def test_a_group_is_convex():
    # exp and add are both elementwise, but a group {exp, add} would leave through the matmul
    # and come back: exp must stay out.
    before = parse(
        """
weights {
  $w: f32[8, 8]
}
def @main(%x: f32[4, 8]) -> f32[4, 8] {
  %a: f32[4, 8] = exp(%x)
  %b: f32[4, 8] = matmul(%a, $w)
  %c: f32[4, 8] = add(%a, %b)
  %d: f32[4, 8] = relu(%c)
  return %d
}
""",
        params={"w": np.eye(8, dtype=np.float32)},
    )
    after = fuse(before)
    assert groups(after) == {"fused_matmul_add_relu": ["matmul", "add", "relu"]}
    assert [p.name for p in after["fused_matmul_add_relu"].params] == ["a"]
    assert_same_values(before, after)


def test_injective_ops_join_what_follows_but_not_an_anchor():
    before = parse("""
def @main(%x: f32[4, 8], %w: f32[2, 8]) -> f32[2, 16] {
  %t: f32[8, 4] = permute_dims(%x, axes=[1, 0])
  %r: f32[2, 16] = reshape(%t, shape=[2, 16])
  %e: f32[2, 16] = exp(%r)
  %wt: f32[8, 2] = permute_dims(%w, axes=[1, 0])
  %m: f32[4, 2] = matmul(%x, %wt)
  %s: f32[] = sum(%m)
  %y: f32[2, 16] = add(%e, %s)
  return %y
}
""")
    after = fuse(before)
    assert groups(after) == {
        "fused_permute_dims_reshape_exp_add": ["permute_dims", "reshape", "exp", "add"]
    }
    assert_same_values(before, after)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_after_decompose_and_fold(name):
    before = model(name)
    prepared = passes.run(before, "decompose-ops,fold-constant,dead-code-elimination").module
    after = fuse(prepared)
    assert_same_values(before, after)
    for fname, ops in groups(after).items():
        assert sum(get_op(op).pattern == ANCHOR for op in ops) <= 1, fname
    if name == "conv_bn_relu":
        assert groups(after) == {
            "fused_conv2d_multiply_add_relu": ["conv2d", "multiply", "add", "relu"]
        }
    if name == "mlp":
        assert groups(after) == {
            "fused_matmul_add_gelu": ["matmul", "add", "gelu"],
            "fused_matmul_add": ["matmul", "add"],
        }


def test_elementwise_chain_into_reduction_then_injective_epilogue():
    before = parse("""
def @main(%x: f32[4, 8], %b: f32[8]) -> f32[8, 4] {
  %a: f32[4, 8] = add(%x, %b)
  %r: f32[4, 8] = relu(%a)
  %e: f32[4, 8] = exp(%r)
  %s: f32[4, 1] = sum(%e, axes=[1], keepdims=true)
  %d: f32[4, 8] = divide(%e, %s)
  %t: f32[8, 4] = permute_dims(%d, axes=[1, 0])
  return %t
}
""")
    # exp feeds both the sum and the divide: its post-dominator (divide) is reached through a
    # reduction, so exp ends its own group; the sum stays alone (a group of one is not outlined).
    expected = parse("""
def @main(%x: f32[4, 8], %b: f32[8]) -> f32[8, 4] {
  %e: f32[4, 8] = call @fused_add_relu_exp(%x, %b)
  %s: f32[4, 1] = sum(%e, axes=[1], keepdims=true)
  %t: f32[8, 4] = call @fused_divide_permute_dims(%e, %s)
  return %t
}

def @fused_add_relu_exp(%x: f32[4, 8], %b: f32[8]) -> f32[4, 8]
    attrs {primitive = true, private = true} {
  %a: f32[4, 8] = add(%x, %b)
  %r: f32[4, 8] = relu(%a)
  %e: f32[4, 8] = exp(%r)
  return %e
}

def @fused_divide_permute_dims(%e: f32[4, 8], %s: f32[4, 1]) -> f32[8, 4]
    attrs {primitive = true, private = true} {
  %d: f32[4, 8] = divide(%e, %s)
  %t: f32[8, 4] = permute_dims(%d, axes=[1, 0])
  return %t
}
""")
    after = fuse(before)
    assert_structural_equal(after, expected)
    assert_same_values(before, after)


def test_elementwise_producer_fuses_into_its_reduction():
    before = parse("""
def @main(%x: f32[4, 8]) -> f32[4] {
  %e: f32[4, 8] = exp(%x)
  %s: f32[4] = sum(%e, axes=[1])
  %r: f32[4] = sqrt(%s)
  return %r
}
""")
    after = fuse(before)
    # A reduction ends its group: sqrt after it is not fused (TVM's rule).
    assert groups(after) == {"fused_exp_sum": ["exp", "sum"]}
    assert [type(b).__name__ for b in after.main.bindings] == ["FuncCall", "Call"]
    assert_same_values(before, after)


def test_nothing_to_fuse_returns_the_same_module():
    module = parse("""
def @main(%x: f32[4, 8]) -> f32[4] {
  %s: f32[4] = sum(%x, axes=[1])
  %m: f32[4] = max(%x, axes=[1])
  %a: f32[4] = add(%s, %m)
  return %a
}
""")
    assert fuse(module) is module


def test_value_read_by_the_output_ends_a_group():
    before = parse("""
def @main(%x: f32[4, 8]) -> (f32[4, 8], f32[4, 8]) {
  %a: f32[4, 8] = exp(%x)
  %b: f32[4, 8] = relu(%a)
  %c: f32[4, 8] = tanh(%b)
  %t: (f32[4, 8], f32[4, 8]) = (%b, %c)
  return %t
}
""")
    after = fuse(before)
    assert groups(after) == {"fused_exp_relu": ["exp", "relu"]}
    assert_same_values(before, after)


def test_fused_functions_share_unchanged_nodes_and_keep_provenance():
    before = parse("""
weights {
  $w: f32[8] = [1, 2, 3, 4, 5, 6, 7, 8]
}
def @main(%x: f32[4, 8]) -> f32[4, 8] {
  %m: f32[8] = multiply($w, $w)  loc(module="scale")
  %a: f32[4, 8] = add(%x, %m)  loc(module="block")
  %r: f32[4, 8] = relu(%a)  loc(module="act")
  return %r
}
""")
    after = fuse(before)
    fn = after["fused_multiply_add_relu"]
    assert fn.bindings[0] is before.main.bindings[0]  # reads only constants: the same node
    assert fn.params[0].name == "x"
    call = after.main.output
    assert isinstance(call, FuncCall) and call.prov.module_path == "act"
    assert call.prov.pass_name == "fuse-ops"
    assert [b.prov.module_path for b in fn.bindings] == ["scale", "block", "act"]


def test_symbolic_shapes_and_repeated_names():
    before = parse("""
def @main(%x: f32[n, 8], %y: f32[n, 8]) -> f32[n, 8] {
  %a: f32[n, 8] = add(%x, %y)
  %b: f32[n, 8] = relu(%a)
  %s: f32[n] = sum(%b, axes=[1])
  %c: f32[n, 8] = exp(%b)
  %d: f32[n, 8] = tanh(%c)
  %r: f32[n, 1] = reshape(%s, shape=[n, 1])
  %e: f32[n, 8] = add(%d, %r)
  %f: f32[n, 8] = relu(%e)
  return %f
}
""")
    after = fuse(before)
    names = sorted(groups(after))
    assert all(n.startswith("fused_") for n in names) and len(set(names)) == len(names)
    assert_same_values(before, after)


def test_if_branches_are_left_alone_and_read_the_fused_value():
    before = parse("""
def @main(%x: f32[4], %c: bool[]) -> f32[4] {
  %a: f32[4] = exp(%x)
  %b: f32[4] = relu(%a)
  %r: f32[4] = if %c {
    %t: f32[4] = tanh(%b)
    yield %t
  } else {
    yield %b
  }
  return %r
}
""")
    after = fuse(before)
    assert groups(after) == {"fused_exp_relu": ["exp", "relu"]}
    x = np.linspace(-2, 2, 4).astype(np.float32)
    for c in (True, False):
        np.testing.assert_allclose(
            run(after, x, np.array(c))[0], run(before, x, np.array(c))[0], rtol=1e-6
        )


def test_running_twice_changes_nothing_the_second_time():
    before = parse("""
def @main(%x: f32[4, 8]) -> f32[4, 8] {
  %a: f32[4, 8] = exp(%x)
  %b: f32[4, 8] = relu(%a)
  return %b
}
""")
    once = fuse(before)
    assert fuse(once) is once


def test_spec_and_registration():
    assert str(FuseOps()) == "fuse-ops"
    assert isinstance(passes.parse_pass("fuse-ops"), FuseOps)


@pytest.mark.parametrize("seed", range(5))
def test_random_elementwise_dags_stay_correct(seed):
    """Random DAGs of unary/binary/reduce ops: the result verifies (so every group is convex:
    a non-convex group could not be ordered) and computes the same values."""
    rng = np.random.default_rng(seed)
    lines, values = [], ["x", "y"]
    unary, binary = ["exp", "tanh", "relu", "sigmoid"], ["add", "multiply", "maximum"]
    for i in range(14):
        kind = rng.integers(3)
        a = values[rng.integers(len(values))]
        if kind == 0:
            lines.append(f"  %v{i}: f32[4, 6] = {unary[rng.integers(4)]}(%{a})")
        elif kind == 1:
            b = values[rng.integers(len(values))]
            lines.append(f"  %v{i}: f32[4, 6] = {binary[rng.integers(3)]}(%{a}, %{b})")
        else:
            lines.append(f"  %s{i}: f32[4, 1] = max(%{a}, axes=[1], keepdims=true)")
            lines.append(f"  %v{i}: f32[4, 6] = subtract(%{a}, %s{i})")
        values.append(f"v{i}")
    used = " ".join(lines)
    outs = [v for v in values[2:] if f"%{v})" not in used and f"%{v}," not in used] or [values[-1]]
    tuple_ty = ", ".join("f32[4, 6]" for _ in outs)
    text = (
        f"def @main(%x: f32[4, 6], %y: f32[4, 6]) -> ({tuple_ty},) {{\n"
        + "\n".join(lines)
        + f"\n  %out: ({tuple_ty},) = ({', '.join('%' + o for o in outs)},)\n  return %out\n}}\n"
    )
    before = parse(text)
    after = fuse(before)
    assert_same_values(before, after)


def test_a_group_using_a_symbol_no_input_binds_takes_a_parameter_for_its_shape():
    """``arange(stop=n) + 1`` reads nothing from outside, so the fused function gets the
    parameter whose shape binds ``n`` (GPT-2's position ids with a dynamic sequence length);
    the interpreter and the compiled build both run it."""
    before = parse(
        """
def @main(%ids: f32[b, n]) -> (f32[1, n], f32[b, n]) {
  %pos: i64[n] = arange(dtype=i64, start=0, step=1, stop=n)
  %pos1: i64[n] = add(%pos, const(i64[], 1))
  %f: f32[n] = cast(%pos1, dtype=f32)
  %row: f32[1, n] = unsqueeze(%f, axes=[0])
  %y: f32[b, n] = exp(%ids)
  %t: (f32[1, n], f32[b, n]) = (%row, %y)
  return %t
}
"""
    )
    after = fuse(before)
    (name,) = [n for n in groups(after) if "arange" in n]
    assert [p.ty for p in after[name].params] == [before["main"].params[0].ty]
    ids = np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(run(after, ids)[0], [[1, 2, 3]])
    from compiler.backend import build

    np.testing.assert_array_equal(
        build(after, pipeline="legalize-ops,codegen")(ids)[0], [[1, 2, 3]]
    )


def test_a_group_whose_input_has_only_a_product_of_symbols_takes_a_parameter_for_them():
    """A mixture-of-experts router (Mixtral's batched experts): the group's input is
    ``f32[b*s, 2]`` and it reshapes to ``[2*b*s]``; ``b*s`` does not say what ``b`` and ``s``
    are, so the fused function also takes the parameter whose shape binds them."""
    before = parse(
        """
def @main(%x: f32[b, s, 2]) -> f32[2*b*s] {
  %r: f32[b*s, 2] = reshape(%x, shape=[b*s, 2])
  %m: f32[b*s, 2] = softmax(%r, axis=-1)
  %e: f32[b*s, 2] = exp(%m)
  %y: f32[2*b*s] = reshape(%e, shape=[2*b*s])
  return %y
}
"""
    )
    after = fuse(before)
    (name,) = [n for n in groups(after) if n.startswith("fused_exp")]
    assert [str(p.ty) for p in after[name].params] == ["f32[b*s, 2]", "f32[b, s, 2]"]
    x = np.random.default_rng(0).standard_normal((2, 3, 2)).astype(np.float32)
    want = run(before, x)[0]
    np.testing.assert_allclose(run(after, x)[0], want, rtol=1e-6)
    from compiler.backend import build

    np.testing.assert_allclose(build(after, pipeline="legalize-ops,codegen")(x)[0], want, rtol=1e-6)


def test_a_group_gets_no_shape_parameter_when_its_inputs_bind_the_symbols():
    before = parse(
        """
def @main(%x: f32[n]) -> f32[n] {
  %a: f32[n] = exp(%x)
  %b: f32[n] = add(%a, const(f32[], 1))
  return %b
}
"""
    )
    after = fuse(before)
    (fn,) = [f for f in after.functions.values() if f.attrs.get("primitive")]
    assert len(fn.params) == 1

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

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

# an opaque op (no converter: run by torch / onnxruntime) is a barrier to every pass
OPAQUE = [
    K(
        "fuse-ops",
        "an opaque op between elementwise ops (never fused)",
        f"""
def @main(%x: f32[4, 8]) -> f32[4, 8] {{
  %e: f32[4, 8] = exp(%x)
  %c: f32[4, 8] = {OPAQUE_CUMSUM.replace("PURE", "true")}
  %r: f32[4, 8] = exp(%c)
  return %r
}}""",
    ),
]

CASES = FUSE_OPS + OPAQUE
test_rule, test_guard = case_tests(CASES)
