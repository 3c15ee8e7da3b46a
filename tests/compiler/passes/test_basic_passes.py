"""Before/Expected pairs for infer-types, canonicalize-bindings, fold-constant and
dead-code-elimination, written in the text format."""

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import Call, Constant, assert_structural_equal, function_constants, parse
from compiler.ir.symbolic import ANY


def _apply(spec: str, before: str, params=None):
    module = parse(before, params=params, verify=False)
    result = passes.run(module, spec)
    assert result.ok, result.failure and result.failure.traceback
    return module, result.module


def test_infer_types_fixes_a_wrong_annotation():
    before, after = _apply(
        "infer-types",
        """
def @main(%x: f32[n, 3]) -> f32[n, 3] {
  %y: f32[n, 4] = relu(%x)
  %z: f32[n, 3] = exp(%y)
  return %z
}""",
    )
    expected = parse(
        """
def @main(%x: f32[n, 3]) -> f32[n, 3] {
  %y: f32[n, 3] = relu(%x)
  %z: f32[n, 3] = exp(%y)
  return %z
}"""
    )
    assert_structural_equal(after, expected)


def test_infer_types_keeps_a_correct_module_as_the_same_object():
    module = parse("def @main(%x: f32[2]) -> f32[2] {\n  %y: f32[2] = relu(%x)\n  return %y\n}")
    assert passes.run(module, "infer-types").module is module


def test_canonicalize_bindings_forwards_trivial_bindings():
    _, after = _apply(
        "canonicalize-bindings",
        """
def @main(%x: f32[2, 3], %y: f32[3]) -> (f32[2, 3], f32[3]) {
  %i: f32[2, 3] = identity(%x)
  %c: f32[2, 3] = cast(%i, dtype=f32)
  %r: f32[2, 3] = reshape(%c, shape=[2, 3])
  %p: f32[2, 3] = permute_dims(%r, axes=[0, 1])
  %t: (f32[2, 3], f32[3]) = (%p, %y)
  %a: f32[2, 3] = %t[0]
  %b: f32[3] = %t[1]
  %u: (f32[2, 3], f32[3]) = (%a, %b)
  %e: f32[2, 3] = exp(%a)
  %out: (f32[2, 3], f32[3]) = (%e, %b)
  return %out
}""",
    )
    expected = parse(
        """
def @main(%x: f32[2, 3], %y: f32[3]) -> (f32[2, 3], f32[3]) {
  %t: (f32[2, 3], f32[3]) = (%x, %y)
  %u: (f32[2, 3], f32[3]) = (%x, %y)
  %e: f32[2, 3] = exp(%x)
  %out: (f32[2, 3], f32[3]) = (%e, %y)
  return %out
}"""
    )
    assert_structural_equal(after, expected)


def test_fold_constant_names_folded_values_after_their_source():
    before, after = _apply(
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
    _, after = _apply(
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


def test_dead_code_elimination_removes_unused_bindings_and_private_functions():
    _, after = _apply(
        "dead-code-elimination",
        """
def @unused(%a: f32[2]) -> f32[2] attrs {private = true} {
  %r: f32[2] = relu(%a)
  return %r
}

def @used(%a: f32[2]) -> f32[2] attrs {private = true} {
  %r: f32[2] = exp(%a)
  return %r
}

def @main(%x: f32[2], %c: bool[]) -> f32[2] {
  %d: f32[2] = neg(%x)
  %y: f32[2] = if %c {
    %dead: f32[2] = abs(%x)
    %k: f32[2] = call @used(%x)
    yield %k
  } else {
    yield %x
  }
  return %y
}""",
    )
    expected = parse(
        """
def @used(%a: f32[2]) -> f32[2] attrs {private = true} {
  %r: f32[2] = exp(%a)
  return %r
}

def @main(%x: f32[2], %c: bool[]) -> f32[2] {
  %y: f32[2] = if %c {
    %k: f32[2] = call @used(%x)
    yield %k
  } else {
    yield %x
  }
  return %y
}"""
    )
    assert_structural_equal(after, expected)


@pytest.mark.parametrize(
    "alias, name", [("dce", "dead-code-elimination"), ("normalize", "infer-types")]
)
def test_aliases(alias, name):
    assert passes.build_pipeline(alias).passes[0].name == name
