"""Both frontends keep an operator without a converter as an ``opaque`` op (typed from the
exporter, run by torch / onnxruntime) instead of refusing the model; ``strict=True`` refuses as
before. What cannot be kept opaque (random values, an untyped output) is still refused."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

from compiler.frontend import UnsupportedOperatorError, from_onnx, from_torch
from compiler.interpret import InterpretError, run
from compiler.opaque import trusted_ops

F32 = TensorProto.FLOAT


def _opaque(module) -> list:
    return [n for fn in module.functions.values() for n in fn.iter_nodes() if n_op(n) == "opaque"]


def n_op(n) -> str:
    return getattr(n, "op", "")


# ----- torch -------------------------------------------------------------------------------------


class CumMax(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        values, indices = torch.cummax(self.proj(x), dim=1)
        return values * 2, indices


def _eager(model, *args):
    with torch.no_grad():
        out = model(*args)
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def test_a_torch_op_without_a_converter_becomes_an_opaque_op_that_torch_runs():
    model, x = CumMax().eval(), torch.randn(4, 8)
    module = from_torch(model, (x,))
    (node,) = _opaque(module)
    assert node.attrs["target"] == "aten.cummax.default"
    assert node.attrs["framework"] == "torch" and node.attrs["pure"] is True
    assert str(node.ty) == "(f32[4, 8], i64[4, 8])"
    assert node.prov.source_op == "aten.cummax.default" and node.prov.source_node == "cummax"
    for got, want in zip(run(module, x.numpy()), _eager(model, x), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_strict_refuses_it_as_before():
    with pytest.raises(UnsupportedOperatorError, match=r"aten\.cummax\.default"):
        from_torch(CumMax(), (torch.randn(4, 8),), strict=True)


def test_an_op_torch_export_did_not_type_is_still_refused_saying_so():
    ep = torch.export.export(CumMax().eval(), (torch.randn(4, 8),))
    (node,) = [n for n in ep.graph.nodes if str(n.target) == "aten.cummax.default"]
    del node.meta["val"]
    with pytest.raises(UnsupportedOperatorError, match="torch.export recorded no type"):
        from_torch(ep)


def test_symbolic_sizes_come_from_torch_export():
    batch = torch.export.Dim("batch", min=2, max=64)
    module = from_torch(CumMax(), (torch.randn(4, 8),), dynamic_shapes=({0: batch},))
    (node,) = _opaque(module)
    assert str(node.ty) == "(f32[batch, 8], i64[batch, 8])"
    model = CumMax().eval()
    for n in (3, 7):
        x = torch.randn(n, 8)
        got = run(from_torch(model, (x,), dynamic_shapes=({0: batch},)), x.numpy())
        np.testing.assert_allclose(got[0], _eager(model, x)[0], rtol=1e-6, atol=1e-6)


class KthOfHalf(torch.nn.Module):
    def forward(self, x):
        values, indices = torch.kthvalue(x, x.shape[0] // 2 + 1, dim=0)
        return values + 1, indices


def test_a_size_argument_stays_symbolic_and_is_bound_when_it_runs():
    model = KthOfHalf()
    module = from_torch(model, (torch.randn(6, 3),), dynamic_shapes=({0: torch.export.Dim.AUTO},))
    (node,) = _opaque(module)
    size = node.attrs["args"][1]
    assert str(size).endswith("// 2 + 1")  # the batch symbol, kept as a dim expression
    for n in (5, 9):
        x = torch.randn(n, 3)
        for got, want in zip(run(module, x.numpy()), _eager(model, x), strict=True):
            np.testing.assert_array_equal(got, want)


@torch.library.custom_op("passlens_test::scaled_cumsum", mutates_args=())
def scaled_cumsum(x: torch.Tensor, scale: float, mode: str) -> torch.Tensor:
    """A custom op of the test's own library (no converter can exist for it)."""
    out = torch.cumsum(x, dim=-1) * scale
    return out if mode == "%plain" else -out


@scaled_cumsum.register_fake
def _(x, scale, mode):
    return torch.empty_like(x)


class UsesCustomOp(torch.nn.Module):
    def forward(self, x):
        return torch.ops.passlens_test.scaled_cumsum(x.relu(), 0.5, "%plain") + 1


def test_a_custom_op_is_kept_with_its_arguments_and_runs_through_torch_ops():
    model, x = UsesCustomOp(), torch.randn(2, 5)
    module = from_torch(model, (x,))
    (node,) = _opaque(module)
    assert node.attrs["target"] == "passlens_test.scaled_cumsum.default"
    assert node.attrs["args"] == ("%0", 0.5, "%%plain")  # a literal '%' string is escaped
    with pytest.raises(InterpretError, match="refused to run opaque op passlens_test"):
        run(module, x.numpy())  # the interpreter alone trusts no custom op
    with trusted_ops(["passlens_test.scaled_cumsum"]):
        (got,) = run(module, x.numpy())
    np.testing.assert_allclose(got, _eager(model, x)[0], rtol=1e-6)


class CircularPad(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(5, 5)

    def forward(self, x):
        return torch.nn.functional.pad(self.proj(x), (1, 2), mode="circular") * 2


def test_a_use_its_converter_refuses_is_kept_opaque_too():
    """The pad converter's check refuses circular padding: the node is kept as it is."""
    model, x = CircularPad().eval(), torch.randn(1, 2, 5)
    module = from_torch(model, (x,))
    (node,) = _opaque(module)
    assert node.attrs["target"] == "aten.pad.default"
    assert node.attrs["args"] == ("%0", (1, 2), "circular")
    (got,) = run(module, x.numpy())
    np.testing.assert_allclose(got, _eager(model, x)[0], rtol=1e-6, atol=1e-6)
    with pytest.raises(UnsupportedOperatorError, match="pad mode 'circular'"):
        from_torch(model, (x,), strict=True)


class PoolIndices(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = torch.nn.MaxPool2d(2, return_indices=True)

    def forward(self, x):
        values, indices = self.pool(x)
        return values + 1, indices


def test_an_output_no_converter_makes_keeps_its_producer_opaque():
    model, x = PoolIndices().eval(), torch.randn(1, 2, 4, 4)
    module = from_torch(model, (x,))
    (node,) = _opaque(module)
    assert node.attrs["target"] == "aten.max_pool2d_with_indices.default"
    for got, want in zip(run(module, x.numpy()), _eager(model, x), strict=True):
        np.testing.assert_array_equal(got, want)


class HypotIntoAView(torch.nn.Module):
    def forward(self, x):
        y = x * 1
        y[:, 0].hypot_(x[:, 1])  # hypot has no converter, and it writes into a view of y
        return y


def test_an_op_writing_into_a_view_is_never_kept_opaque():
    """The IR has values, not storage: an opaque op standing for the write would leave y
    unchanged. Refused (or, once in-place writes into views are functionalised, imported
    with the right values)."""
    model, x = HypotIntoAView(), torch.randn(3, 4)
    try:
        module = from_torch(model, (x,))
    except UnsupportedOperatorError as e:
        assert "in place on a view" in str(e) and "hypot_" in str(e)
        return
    np.testing.assert_allclose(run(module, x.numpy())[0], _eager(model, x)[0], rtol=1e-6)


class TrainingDropout(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, 0.5, training=True)


def test_a_random_op_is_never_kept_opaque():
    with pytest.raises(UnsupportedOperatorError, match="random values"):
        from_torch(TrainingDropout(), (torch.randn(4, 4),))


# ----- ONNX --------------------------------------------------------------------------------------


def _vi(name, shape, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def _roi_model():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node(
            "MaxRoiPool", ["r", "rois"], ["p"], name="pool", pooled_shape=[2, 2], spatial_scale=0.5
        ),
        helper.make_node("Sigmoid", ["p"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "g", [_vi("x", [1, 3, 8, 8]), _vi("rois", [2, 5])], [_vi("y", None)]
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _ort(model, feeds):
    return ort.InferenceSession(model.SerializeToString()).run(None, feeds)


def test_an_onnx_op_without_a_converter_is_run_by_onnxruntime():
    model = _roi_model()
    module = from_onnx(model)
    (node,) = _opaque(module)
    assert node.attrs["target"] == "ai.onnx::MaxRoiPool" and node.attrs["opset"] == 17
    assert str(node.ty) == "f32[2, 3, 2, 2]"  # from ONNX shape inference
    assert dict(node.attrs["kwargs"]) == {"pooled_shape": (2, 2), "spatial_scale": 0.5}
    assert node.prov.source_node == "pool"
    rng = np.random.default_rng(0)
    x = rng.random((1, 3, 8, 8)).astype(np.float32)
    rois = np.array([[0, 0, 0, 7, 7], [0, 2, 2, 15, 15]], np.float32)
    (got,) = run(module, x, rois)
    np.testing.assert_allclose(got, _ort(model, {"x": x, "rois": rois})[0], rtol=1e-6)
    with pytest.raises(UnsupportedOperatorError, match="MaxRoiPool"):
        from_onnx(model, strict=True)


def _contrib_model(value_info: bool):
    node = helper.make_node(
        "FusedMatMul", ["a", "b"], ["m"], domain="com.microsoft", alpha=0.5, transB=1
    )
    g = helper.make_graph(
        [node, helper.make_node("Relu", ["m"], ["y"])],
        "g",
        [_vi("a", [2, 3]), _vi("b", [4, 3])],
        [_vi("y", [2, 4])],
        value_info=[_vi("m", [2, 4])] if value_info else [],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(g, opset_imports=opsets)


def test_a_contrib_op_is_typed_by_the_models_value_info():
    model = _contrib_model(value_info=True)
    module = from_onnx(model)
    (node,) = _opaque(module)
    assert node.attrs["target"] == "com.microsoft::FusedMatMul" and node.attrs["opset"] == 1
    rng = np.random.default_rng(1)
    a, b = rng.random((2, 3)).astype(np.float32), rng.random((4, 3)).astype(np.float32)
    (got,) = run(module, a, b)
    np.testing.assert_allclose(got, _ort(model, {"a": a, "b": b})[0], rtol=1e-6)


def test_an_op_no_type_is_known_for_is_still_refused_saying_so():
    with pytest.raises(UnsupportedOperatorError, match="no type for its output 'm'"):
        from_onnx(_contrib_model(value_info=False))


def test_a_form_the_converter_refuses_is_kept_opaque():
    node = helper.make_node("Hardmax", ["x"], ["y"], axis=1)
    g = helper.make_graph([node], "g", [_vi("x", [2, "n", 4])], [_vi("y", [2, "n", 4])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    module = from_onnx(model)
    (op,) = _opaque(module)
    assert str(op.ty) == "f32[2, n, 4]"
    x = np.random.default_rng(2).random((2, 5, 4)).astype(np.float32)
    (got,) = run(module, x)
    np.testing.assert_array_equal(got, _ort(model, {"x": x})[0])


def test_an_onnx_random_op_is_never_kept_opaque():
    node = helper.make_node("RandomNormalLike", ["x"], ["y"])
    g = helper.make_graph([node], "g", [_vi("x", [2, 3])], [_vi("y", [2, 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOperatorError, match="random values"):
        from_onnx(model)


def test_an_onnx_dropout_in_training_mode_is_never_kept_opaque():
    node = helper.make_node("Dropout", ["x", "ratio", "training"], ["y"])
    inits = [
        helper.make_tensor("ratio", F32, [], [0.5]),
        helper.make_tensor("training", TensorProto.BOOL, [], [True]),
    ]
    g = helper.make_graph([node], "g", [_vi("x", [2, 3])], [_vi("y", [2, 3])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOperatorError, match="Dropout"):
        from_onnx(model)


def test_an_opaque_onnx_op_exports_as_the_node_it_came_from():
    from compiler.frontend import to_onnx

    model = _contrib_model(value_info=True)
    module = from_onnx(model)
    exported = to_onnx(module)
    assert ("com.microsoft", 1) in {(o.domain, o.version) for o in exported.opset_import}
    (fused,) = [n for n in exported.graph.node if n.op_type == "FusedMatMul"]
    assert fused.domain == "com.microsoft"
    assert {a.name for a in fused.attribute} == {"alpha", "transB"}
    rng = np.random.default_rng(4)
    a, b = rng.random((2, 3)).astype(np.float32), rng.random((4, 3)).astype(np.float32)
    np.testing.assert_allclose(_ort(exported, {"a": a, "b": b})[0], run(module, a, b)[0], rtol=1e-6)
    roi = from_onnx(_roi_model())
    x = np.random.default_rng(5).random((1, 3, 8, 8)).astype(np.float32)
    rois = np.array([[0, 0, 0, 7, 7]], np.float32)
    rois = np.concatenate([rois, rois])
    np.testing.assert_allclose(
        _ort(to_onnx(roi), {"x": x, "rois": rois})[0], run(roi, x, rois)[0], rtol=1e-6
    )


def test_an_opaque_onnx_op_of_another_version_than_the_export_opset_is_refused():
    from compiler.export.onnx import ExportError
    from compiler.frontend import to_onnx

    node = helper.make_node("Hardmax", ["x"], ["y"], axis=1)
    g = helper.make_graph([node], "g", [_vi("x", [2, "n", 4])], [_vi("y", [2, "n", 4])])
    module = from_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]))
    with pytest.raises(ExportError, match="Hardmax was recorded at opset 11, and opset 17 has"):
        to_onnx(module, opset=17)
