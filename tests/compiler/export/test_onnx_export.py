"""to_onnx: the exported model passes onnx.checker, onnxruntime reproduces the interpreter's
results, provenance travels as node metadata, and from_onnx reads it back."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import models
from compiler.export import to_onnx
from compiler.export.onnx import EXPORTERS
from compiler.frontend import FrontendError, from_onnx
from compiler.frontend.onnx_frontend import checkable
from compiler.interpret import run
from compiler.ir import If, parse, sym
from compiler.ops import all_ops


def ort_outputs(proto, *inputs):
    sess = ort.InferenceSession(proto.SerializeToString())
    return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs, strict=True)})


def assert_onnxruntime_agrees(module, *inputs, rtol=1e-5, atol=1e-5):
    proto = to_onnx(module)
    onnx.checker.check_model(checkable(proto))
    expected = run(module, *inputs)
    got = ort_outputs(proto, *inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return proto


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_mlp():
    module = models.mlp((16, 32, 8), batch=4)
    proto = assert_onnxruntime_agrees(module, rand(4, 16))
    assert proto.opset_import[0].version >= 17
    assert {i.name for i in proto.graph.initializer} >= {"layers.0.weight", "layers.2.bias"}


def test_matmul_reading_rhs_transposed_is_gemm_or_matmul_of_a_transpose():
    """transpose_b (a linear layer's weight read as stored): Gemm transB for 2-D floats,
    MatMul of a Transpose (of the last two dims) otherwise; the weight is exported once."""
    weights = f"weights {{\n  $w: f32[5, 4] = {rand(5, 4).tolist()}\n}}"
    text = """
def @main(%x: f32[3, 4], %y: f32[2, 3, 4]) -> (f32[3, 5], f32[2, 3, 5], f32[2, 3, 3]) {
  %a: f32[3, 5] = matmul(%x, $w, transpose_b=true)
  %b: f32[2, 3, 5] = matmul(%y, $w, transpose_b=true)
  %c: f32[2, 3, 3] = matmul(%y, %y, transpose_b=true)
  %o: (f32[3, 5], f32[2, 3, 5], f32[2, 3, 3]) = (%a, %b, %c)
  return %o
}"""
    module = parse(weights + text)
    proto = assert_onnxruntime_agrees(module, rand(3, 4), rand(2, 3, 4, seed=1))
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Gemm") == 1 and ops.count("MatMul") == 2
    transposes = [n for n in proto.graph.node if n.op_type == "Transpose"]
    perms = [list(a.ints) for n in transposes for a in n.attribute]
    assert sorted(perms) == [[0, 2, 1], [1, 0]]
    assert [i.name for i in proto.graph.initializer] == ["w"]


def test_conv_net():
    module = models.convnext(dims=(8, 16, 32, 64), depths=(1, 1, 2, 1), image=32, num_classes=10)
    proto = assert_onnxruntime_agrees(module, rand(1, 3, 32, 32))
    ops = {n.op_type for n in proto.graph.node}
    assert {"Conv", "LayerNormalization", "GlobalAveragePool"} <= ops


def test_symbolic_dims_become_dim_params_and_run_at_any_size():
    module = models.mlp((16, 32, 8), batch="n")
    proto = to_onnx(module)
    (x,) = proto.graph.input
    assert x.type.tensor_type.shape.dim[0].dim_param == "n"
    for n in (1, 5):
        x = rand(n, 16, seed=n)
        np.testing.assert_allclose(ort_outputs(proto, x)[0], run(module, x)[0], rtol=1e-5)


def test_symbolic_dims_used_by_ops_are_computed_from_the_input_shape():
    module = parse(
        """
        def @main(%x: f32[n, 6]) -> f32[n, 2, 3] {
          %r: f32[n, 2, 3] = reshape(%x, shape=[n, 2, 3])
          %i: i64[n] = arange(start=0, stop=n, step=1)
          %f: f32[n] = cast(%i, dtype=f32)
          %u: f32[n, 1, 1] = reshape(%f, shape=[n, 1, 1])
          %y: f32[n, 2, 3] = add(%r, %u)
          return %y
        }
        """
    )
    for n in (2, 3):
        assert_onnxruntime_agrees(module, rand(n, 6, seed=n))


SEEDS_IF = """
def @main(%input: f32[13, 1, 47, 44, 1]) -> f32[*] {
  %pads: i64[10] = add(const(i64[10], [0, 0, 0, -43, 0, 0, 0, -46, 0, 0]), const(i64[], 0))
  %pad: f32[?, ?, ?, ?, ?] = pad(%input, %pads, mode="reflect")
  %shape: i64[5] = shape_of(%pad)
  %dim1: i64[1] = take(%shape, const(i64[1], [1]), axis=0)
  %is_one: bool[1] = equal(%dim1, const(i64[1], [1]))
  %out: f32[*] = if %is_one {
    %squeezed: f32[?, ?, ?, ?] = squeeze(%pad, axes=[1])
    yield %squeezed
  } else {
    %same: f32[?, ?, ?, ?, ?] = identity(%pad)
    yield %same
  }
  return %out
}
"""


def test_the_if_case_with_branches_of_different_rank():
    module = parse(SEEDS_IF)
    proto = assert_onnxruntime_agrees(module, rand(13, 1, 47, 44, 1))
    (node,) = [n for n in proto.graph.node if n.op_type == "If"]
    then_g = helper.get_attribute_value(node.attribute[0])
    assert len(then_g.node) >= 1
    back = from_onnx(proto)
    assert [n for n in back.main.bindings if isinstance(n, If)]
    np.testing.assert_array_equal(
        run(back, rand(13, 1, 47, 44, 1))[0], run(module, rand(13, 1, 47, 44, 1))[0]
    )


def test_tuple_outputs_and_multi_output_ops():
    module = parse(
        """
        def @main(%x: f32[4, 6]) -> (f32[4, 2], i64[4, 2], f32[4, 3]) {
          %t: (f32[4, 2], i64[4, 2]) = topk(%x, k=2, axis=-1)
          %v: f32[4, 2] = %t[0]
          %i: i64[4, 2] = %t[1]
          %s: (f32[4, 3], f32[4, 3]) = split(%x, indices_or_sections=2, axis=1)
          %a: f32[4, 3] = %s[1]
          %out: (f32[4, 2], i64[4, 2], f32[4, 3]) = (%v, %i, %a)
          return %out
        }
        """
    )
    proto = assert_onnxruntime_agrees(module, rand(4, 6))
    assert len(proto.graph.output) == 3


def test_provenance_is_node_metadata_and_round_trips():
    proto = to_onnx(models.mlp((16, 32, 8), batch=2))
    gemm = next(n for n in proto.graph.node if n.op_type == "Gemm")
    meta = {p.key: p.value for p in gemm.metadata_props}
    assert meta["passlens.module"] == "layers.0"
    assert "layers.0" in gemm.doc_string
    back = from_onnx(proto)
    assert set(back.constants()) == set(models.mlp((16, 32, 8), batch=2).constants())
    x = rand(2, 16)
    np.testing.assert_allclose(
        run(back, x)[0], run(models.mlp((16, 32, 8), batch=2), x)[0], rtol=1e-6
    )


def test_imported_onnx_round_trips_through_export():
    w = numpy_helper.from_array(rand(3, 4), "w")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Softmax", ["m"], ["y"], axis=-1),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = from_onnx(model)
    assert module.main.params[0].ty.shape == (sym("batch"), 3)
    assert_onnxruntime_agrees(module, rand(5, 3))


def test_every_op_has_a_lowering_except_the_lazy_parameter_callbacks_and_kernels():
    assert set(all_ops()) - set(EXPORTERS) == {"get_item", "set_item", "call_lowered"}


def test_a_callback_op_is_a_clear_error():
    module = parse(
        """
        def @main() -> f32[2] {
          %w: f32[2] = get_item(index=0, type="f32[2]")
          return %w
        }
        """
    )
    with pytest.raises(FrontendError, match="get_item has no ONNX lowering"):
        to_onnx(module)


def test_opset_older_than_17_is_refused():
    with pytest.raises(FrontendError, match="opset 17 or newer"):
        to_onnx(models.mlp((4, 2)), opset=13)


def test_a_called_function_with_its_own_symbols_exports_in_the_callers_dims():
    module = parse(
        """
def @main(%x: f32[batch, 3]) -> f32[3, batch] {
  %y: f32[3, batch] = call @helper(%x)
  return %y
}
def @helper(%p: f32[n, 3]) -> f32[3, n] {
  %e: f32[n, 3] = exp(%p)
  %f: f32[3, n] = reshape(%e, shape=[3, n])
  return %f
}
"""
    )
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    sess = ort.InferenceSession(to_onnx(module).SerializeToString())
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, np.exp(x).reshape(3, 4), rtol=1e-6)


@pytest.mark.parametrize(
    "attrs",
    [
        {
            "mode": "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "floor",
        },
        {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
        {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
        {"mode": "linear", "scales": (1.0, 1.0, 2.5, 0.6)},
    ],
    ids=["nearest-floor", "nearest-ceil-ties", "align-corners", "pytorch-half-pixel", "scales"],
)
def test_resize_agrees_with_onnxruntime(attrs):
    from compiler.ir import Function, TensorType, Var, call

    x = Var("x", TensorType((1, 2, 4, 5), "float32"))
    sizes = (1, 2, 10, 3)
    fn = Function.from_output([x], call("resize", x, sizes=sizes, **attrs))
    assert_onnxruntime_agrees(fn, rand(1, 2, 4, 5))


def test_resize_with_symbolic_sizes_exports_them_from_the_input_shape():
    module = parse(
        """
def @main(%x: f32[n, 3, 4]) -> f32[n, 3, 8] {
  %y: f32[n, 3, 8] = resize(%x, sizes=[n, 3, 8], mode="linear")
  return %y
}
"""
    )
    assert_onnxruntime_agrees(module, rand(2, 3, 4))


def test_a_0d_constant_stays_0d_so_a_take_with_it_drops_the_axis():
    """np.ascontiguousarray turns a 0-d array into shape (1,): a scalar index then kept the
    axis in onnxruntime (f32[2, 2] in passlens, (2, 2, 1) exported)."""
    module = parse(
        """
        def @main(%x: f32[2, 3]) -> f32[2] {
          %t: f32[2] = take(%x, const(i64[], 1), axis=1)
          return %t
        }
        """
    )
    proto = assert_onnxruntime_agrees(module, rand(2, 3))
    assert [list(t.dims) for t in proto.graph.initializer] == [[]]


def test_broadcast_to_a_0d_shape_computes_a_0d_value():
    module = parse(
        """
        def @main(%x: f32[]) -> f32[] {
          %b: f32[] = broadcast_to(%x, shape=[])
          return %b
        }
        """
    )
    (got,) = run(module, np.float32(2.5))
    assert got.shape == () and got == np.float32(2.5)
