"""from_onnx: structure, provenance, symbolic dims, control flow, computed shape inputs, bad
input, and numbers against onnxruntime and torch (docs/bugs.md bug 3 and the torch zoo)."""

from __future__ import annotations

import hashlib
import io
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import passes
from compiler.frontend import FrontendError, UnsupportedOperatorError, from_onnx
from compiler.frontend.onnx_frontend import checkable
from compiler.interpret import run
from compiler.ir import Call, Constant, If, sym
from compiler.ir.symbolic import ANY
from tests.compiler.frontend.onnx_helpers import ort_run

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def make_model(nodes, inputs, outputs, initializers=(), opset=17, **graph_kw):
    """A checked ModelProto of one graph."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers), **graph_kw)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(checkable(model))  # outputs of unknown rank have no shape
    return model


def assert_matches_ort(model, *inputs, rtol=1e-5, atol=1e-6):
    module = from_onnx(model)
    got = run(module, *inputs)
    expected = ort_run(model, *inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return module


def calls(module, op=None):
    return [n for n in module.main.iter_nodes() if isinstance(n, Call) and op in (None, n.op)]


# ----- docs/bugs.md bug 3: ReflectionPad3d with negative pads, then squeeze(1) ------------------


def seeds_model():
    import torch

    class PadSqueeze(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pad = torch.nn.ReflectionPad3d((0, 0, -43, 0, 0, -46))

        def forward(self, x):
            return self.pad(x).squeeze(1)

    x = np.random.default_rng(0).standard_normal((13, 1, 47, 44, 1)).astype(np.float32)
    return PadSqueeze().eval(), x


@pytest.fixture(scope="module")
def seeds_torchscript():
    import torch

    model, x = seeds_model()
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.from_numpy(x),), f, opset_version=17, dynamo=False)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    return f.getvalue(), x, expected


@pytest.fixture(scope="module")
def seeds_dynamo():
    import torch

    model, x = seeds_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, (torch.from_numpy(x),), dynamo=True, verbose=False)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    return program.model_proto.SerializeToString(), x, expected


def test_seeds_torchscript_form_keeps_computed_pads_and_the_if(seeds_torchscript):
    data, x, expected = seeds_torchscript
    module = from_onnx(data)
    (pad,) = calls(module, "pad")
    assert len(pad.args) == 2 and not isinstance(pad.args[1], Constant)  # computed pads
    assert pad.attrs["mode"] == "reflect" and pad.ty.shape == (ANY,) * 5
    (node,) = [n for n in module.main.bindings if isinstance(n, If)]
    then_ty, else_ty = node.then_branch.result.ty, node.else_branch.result.ty
    assert (then_ty.ndim, else_ty.ndim) == (4, 5)
    assert node.ty.shape is None  # unknown rank
    assert node.then_branch.result.op == "squeeze"
    assert node.then_branch.result.attrs["axes"] == (1,)
    assert node.else_branch.result.op == "identity"
    assert node.cond.op == "equal" and node.prov.source_op == "If"
    assert pad.prov.module_path == "pad" and pad.prov.source_node == "/pad/Pad"
    (got,) = run(module, x)
    assert got.shape == (13, 1, 1, 1)
    np.testing.assert_array_equal(got, expected)
    (from_ort,) = ort_run(onnx.load_from_string(data), x)
    np.testing.assert_array_equal(got, from_ort)


def test_seeds_torchscript_form_becomes_static_after_dynamic_to_static(seeds_torchscript):
    data, x, expected = seeds_torchscript
    result = passes.run(from_onnx(data), "dynamic-to-static")
    assert result.ok
    module = result.module
    assert module.main.output.ty.shape == (13, 1, 1, 1)
    assert not any(isinstance(n, If) for n in module.main.iter_nodes())
    np.testing.assert_array_equal(run(module, x)[0], expected)


def test_seeds_dynamo_form_is_pad_and_squeeze(seeds_dynamo):
    data, x, expected = seeds_dynamo
    module = from_onnx(data)
    assert [n.op for n in calls(module)] == ["pad", "squeeze"]
    pad, squeeze = calls(module)
    assert pad.attrs["pads"] == (0, 0, 0, -43, 0, 0, 0, -46, 0, 0)
    assert squeeze.ty.shape == (13, 1, 1, 1)
    assert pad.prov.module_path == "pad" and pad.prov.location.endswith(
        ".py:" + pad.prov.location.rsplit(":", 1)[1]
    )
    (got,) = run(module, x)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, ort_run(onnx.load_from_string(data), x)[0])


# ----- structure and provenance ---------------------------------------------------------------


def test_initializers_are_named_constants_and_provenance_names_the_module():
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "layer1.0.conv1.weight")
    b = numpy_helper.from_array(np.full(4, 0.5, np.float32), "layer1.0.conv1.bias")
    nodes = [
        helper.make_node(
            "Gemm",
            ["x", "layer1.0.conv1.weight", "layer1.0.conv1.bias"],
            ["/layer1/layer1.0/conv1/Gemm_output_0"],
            name="/layer1/layer1.0/conv1/Gemm",
            transB=1,
        ),
        helper.make_node(
            "Relu", ["/layer1/layer1.0/conv1/Gemm_output_0"], ["y"], name="/stages.0/blocks.1/Relu"
        ),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, ["batch", 3])],
        [helper.make_tensor_value_info("y", F32, ["batch", 4])],
        [w, b],
    )
    module = from_onnx(model)
    assert set(module.constants()) == {"layer1.0.conv1.weight", "layer1.0.conv1.bias"}
    linear, relu = calls(module)
    assert linear.op == "linear"  # torch's Linear exported as Gemm(transB=1)
    assert linear.prov.framework == "onnx" and linear.prov.source_op == "Gemm"
    assert linear.prov.module_path == "layer1.0.conv1"
    assert relu.prov.module_path == "stages.0.blocks.1"
    assert linear.name == "/layer1/layer1.0/conv1/Gemm_output_0" and relu.name == "y"
    (x,) = module.main.params
    assert x.name == "x" and x.ty.shape == (sym("batch"), 3)
    assert module.main.output.ty.shape == (sym("batch"), 4)
    for n in (2, 7):
        xs = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_allclose(run(module, xs)[0], ort_run(model, xs)[0], rtol=1e-6)


def test_constant_nodes_are_unnamed_constants_and_unknown_dims_are_any():
    nodes = [
        helper.make_node(
            "Constant", [], ["c"], value=numpy_helper.from_array(np.array([2.0], np.float32))
        ),
        helper.make_node("Mul", ["x", "c"], ["y"]),
    ]
    x_info = helper.make_tensor_value_info("x", F32, [None, 2])
    model = make_model(nodes, [x_info], [helper.make_tensor_value_info("y", F32, None)])
    module = from_onnx(model)
    (mul,) = calls(module)
    assert isinstance(mul.args[1], Constant) and mul.args[1].name is None
    assert module.main.params[0].ty.shape == (ANY, 2)
    assert module.constants() == {}


def test_from_path_bytes_and_proto_agree_and_the_file_is_not_modified(tmp_path):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", F32, [2])],
        [helper.make_tensor_value_info("y", F32, [2])],
    )
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    before = model.SerializeToString()
    modules = [from_onnx(str(path)), from_onnx(path), from_onnx(before), from_onnx(model)]
    texts = {str(m) for m in modules}
    assert len(texts) == 1
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert model.SerializeToString() == before


# ----- control flow -----------------------------------------------------------------------


def test_if_branches_read_outer_values_and_give_several_outputs():
    w = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "w")
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["t0"]), helper.make_node("Neg", ["s"], ["t1"])],
        "then",
        [],
        [
            helper.make_tensor_value_info("t0", F32, [3]),
            helper.make_tensor_value_info("t1", F32, [3]),
        ],
    )
    else_g = helper.make_graph(
        [helper.make_node("Add", ["x", "s"], ["e0"]), helper.make_node("Identity", ["s"], ["e1"])],
        "else",
        [],
        [
            helper.make_tensor_value_info("e0", F32, [3]),
            helper.make_tensor_value_info("e1", F32, [3]),
        ],
    )
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["s"]),
        helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"]),
        helper.make_node(
            "If", ["cond"], ["a", "b"], then_branch=then_g, else_branch=else_g, name="/If"
        ),
    ]
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, [3])],
        [
            helper.make_tensor_value_info("a", F32, [3]),
            helper.make_tensor_value_info("b", F32, [3]),
        ],
        [w, zero],
    )
    module = from_onnx(model)
    (node,) = [n for n in module.main.iter_nodes() if isinstance(n, If)]
    assert node.prov.source_node == "/If"
    # the sigmoid is read by both branches: it is bound outside them, not inside
    assert not any(getattr(b, "op", None) == "sigmoid" for b in node.then_branch.bindings)
    for x in (np.array([1.0, -0.5, 2.0], np.float32), np.array([-1.0, -0.5, 0.0], np.float32)):
        got = run(module, x)
        for g, e in zip(got, ort_run(model, x), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-6)


# ----- shape arguments: constants and computed values -----------------------------------------


def test_pad_with_computed_negative_pads_matches_onnxruntime():
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Sub", ["shape", "three"], ["ends"]),  # [1, 2, 3] - 3: crop, keep, pad
        helper.make_node("Concat", ["begins", "ends"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect"),
    ]
    inits = [
        numpy_helper.from_array(np.array([0, -1, 2], np.int64), "begins"),
        numpy_helper.from_array(np.array([3, 3, 3], np.int64), "three"),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, [4, 5, 6])],
        [helper.make_tensor_value_info("y", F32, None)],
        inits,
    )
    x = np.random.default_rng(1).standard_normal((4, 5, 6)).astype(np.float32)
    module = assert_matches_ort(model, x)
    (pad,) = calls(module, "pad")
    assert not isinstance(pad.args[1], Constant) and pad.attrs["pads"] is None


def test_pad_with_constant_pads_takes_the_attribute_form():
    model = make_model(
        [helper.make_node("Pad", ["x", "pads", "cv"], ["y"])],
        [helper.make_tensor_value_info("x", F32, [3, 4])],
        [helper.make_tensor_value_info("y", F32, [4, 1])],
        [
            numpy_helper.from_array(np.array([1, -2, 0, -1], np.int64), "pads"),
            numpy_helper.from_array(np.array(7.5, np.float32), "cv"),
        ],
    )
    module = assert_matches_ort(model, np.arange(12, dtype=np.float32).reshape(3, 4))
    (pad,) = calls(module, "pad")
    assert pad.attrs["pads"] == (1, -2, 0, -1) and pad.attrs["value"] == 7.5
    assert pad.ty.shape == (4, 1)


@pytest.mark.parametrize("form", ["input", "attribute"])
def test_squeeze_and_unsqueeze_axes_as_input_or_attribute(form):
    if form == "input":
        nodes = [
            helper.make_node("Squeeze", ["x", "axes"], ["s"]),
            helper.make_node("Unsqueeze", ["s", "axes2"], ["y"]),
        ]
        inits = [
            numpy_helper.from_array(np.array([1, -1], np.int64), "axes"),
            numpy_helper.from_array(np.array([0], np.int64), "axes2"),
        ]
        opset = 13
    else:
        nodes = [
            helper.make_node("Squeeze", ["x"], ["s"], axes=[1, -1]),
            helper.make_node("Unsqueeze", ["s"], ["y"], axes=[0]),
        ]
        inits, opset = [], 11
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, [3, 1, 4, 1])],
        [helper.make_tensor_value_info("y", F32, [1, 3, 4])],
        inits,
        opset=opset,
    )
    module = assert_matches_ort(model, np.ones((3, 1, 4, 1), np.float32))
    squeeze, unsqueeze = calls(module)
    assert squeeze.attrs["axes"] == (1, -1) and unsqueeze.attrs["axes"] == (0,)
    assert module.main.output.ty.shape == (1, 3, 4)


def _shape_ops_model(computed: bool):
    """Reshape, Expand, Slice, Tile, ConstantOfShape and Range whose shape arguments are
    constants, or computed from the input's shape."""

    def source(name, value):
        if not computed:
            return [], [numpy_helper.from_array(np.asarray(value, np.int64), name)]
        # value = Shape(x)[:len] * 0 + value: computed, but the same numbers
        arr = np.asarray(value, np.int64).reshape(-1)
        n = len(arr)
        nodes = [
            helper.make_node("Shape", ["x"], [f"{name}_s"], end=1),
            helper.make_node("Expand", [f"{name}_s", f"{name}_n"], [f"{name}_e"]),
            helper.make_node("Mul", [f"{name}_e", "zero"], [f"{name}_z"]),
            helper.make_node("Add", [f"{name}_z", f"{name}_v"], [f"{name}_f"]),
            helper.make_node("Reshape", [f"{name}_f", f"{name}_shape"], [name]),
        ]
        inits = [
            numpy_helper.from_array(np.array([n], np.int64), f"{name}_n"),
            numpy_helper.from_array(arr, f"{name}_v"),
            numpy_helper.from_array(np.array(np.asarray(value).shape, np.int64), f"{name}_shape"),
        ]
        return nodes, inits

    nodes, inits = [], [numpy_helper.from_array(np.array(0, np.int64), "zero")]
    for name, value in (
        ("rshape", [3, -1]),
        ("eshape", [2, 1, 8]),
        ("starts", [1, 0]),
        ("ends", [3, 100]),
        ("axes", [0, 1]),
        ("steps", [1, 3]),
        ("reps", [2, 1, 1]),
        ("cshape", [2, 2]),
        ("start", 2),
        ("limit", 11),
        ("delta", 3),
    ):
        n, i = source(name, value)
        nodes += n
        inits += i
    nodes += [
        helper.make_node("Reshape", ["x", "rshape"], ["r"]),  # (3, 8)
        helper.make_node("Expand", ["r", "eshape"], ["e"]),  # (2, 3, 8)
        helper.make_node("Slice", ["r", "starts", "ends", "axes", "steps"], ["s"]),  # (2, 3)
        helper.make_node("Tile", ["e", "reps"], ["t"]),  # (4, 3, 8)
        helper.make_node(
            "ConstantOfShape",
            ["cshape"],
            ["c"],
            value=numpy_helper.from_array(np.array([1.5], np.float32)),
        ),
        helper.make_node("Range", ["start", "limit", "delta"], ["rng"]),  # [2, 5, 8]
        helper.make_node("Cast", ["rng"], ["rngf"], to=F32),
        helper.make_node("Add", ["s", "rngf"], ["sr"]),
    ]
    outputs = [helper.make_tensor_value_info(n, F32, None) for n in ("t", "c", "sr")]
    return make_model(nodes, [helper.make_tensor_value_info("x", F32, [4, 6])], outputs, inits)


@pytest.mark.parametrize("computed", [False, True], ids=["constant", "computed"])
def test_shape_arguments_constant_or_computed_match_onnxruntime(computed):
    model = _shape_ops_model(computed)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    module = assert_matches_ort(model, x)
    ops = {n.op for n in calls(module)}
    (reshape,) = [n for n in calls(module, "reshape") if n.args[0] is module.main.params[0]]
    if computed:
        assert len(reshape.args) == 2  # the tensor-input form
        assert "take" in ops and "tile" not in ops and "arange" not in ops
        assert not [n for n in calls(module, "strided_slice") if n.args[0] is reshape]
    else:
        assert reshape.attrs["shape"] == (3, -1) and reshape.ty.shape == (3, 8)
        assert {"broadcast_to", "strided_slice", "tile", "full", "arange"} <= ops


def test_tile_by_the_batch_size_keeps_its_dims():
    """Whisper's position ids as torch.onnx exports them: ``Tile(arange(seq)[None],
    Concat(Shape(ids)[:1], [1]))``. The repeats are known in dims, so the result is
    ``[batch, seq]``, not ``[?, ?]`` (an Expand after it needs known sizes)."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["b"], start=0, end=1),
        helper.make_node("Concat", ["b", "one"], ["reps"], axis=0),
        helper.make_node("Shape", ["ids"], ["s"], start=1, end=2),
        helper.make_node("Squeeze", ["s"], ["n"]),
        helper.make_node("Range", ["zero", "n", "step"], ["pos"]),
        helper.make_node("Unsqueeze", ["pos", "zero1"], ["row"]),
        helper.make_node("Tile", ["row", "reps"], ["t"]),
        helper.make_node("Expand", ["t", "reps2"], ["y"]),
        helper.make_node("Concat", ["b", "n1"], ["reps2"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
    ]
    nodes = nodes[:7] + nodes[9:] + nodes[8:9] + nodes[7:8]  # topological order
    inits = [
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array(1, np.int64), "step"),
        numpy_helper.from_array(np.array([0], np.int64), "zero1"),
    ]
    ids = helper.make_tensor_value_info("ids", I64, ["batch", "seq"])
    model = make_model(nodes, [ids], [helper.make_tensor_value_info("y", I64, None)], inits)
    for shape in ((2, 3), (4, 1)):
        module = assert_matches_ort(model, np.zeros(shape, np.int64))
    assert [str(d) for d in module.main.output.ty.shape] == ["batch", "seq"]
    assert not [n for n in calls(module) if ANY in (n.ty.shape or ())]


def test_torchscript_expand_with_minus_one_keeps_its_dims():
    """``cls_token.expand(batch, -1, -1)`` as the TorchScript exporter writes it: the target
    ``[batch, -1, -1]`` goes through ``Where(Equal(t, -1), 1, t)``. A dim is a size (never -1),
    so the target is ``[batch, 1, 1]`` in dims and the result ``[batch, 1, 4]``, not '?'
    (BEiT's embeddings: every layer after them had '?' dims and could not be compiled)."""
    ones = helper.make_tensor("one", I64, [1], [1])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"]),
        helper.make_node("Concat", ["b1", "m1", "m1"], ["t"], axis=0),
        helper.make_node("Shape", ["t"], ["ts"]),
        helper.make_node("ConstantOfShape", ["ts"], ["o"], value=ones),
        helper.make_node("Mul", ["o", "minus"], ["mo"]),
        helper.make_node("Equal", ["t", "mo"], ["eq"]),
        helper.make_node("Where", ["eq", "o", "t"], ["target"]),
        helper.make_node("Expand", ["cls", "target"], ["e"]),
        helper.make_node("Concat", ["e", "x"], ["y"], axis=1),
    ]
    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([0], np.int64), "axes0"),
        numpy_helper.from_array(np.array([-1], np.int64), "m1"),
        numpy_helper.from_array(np.array(-1, np.int64), "minus"),
        numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 1, 4), "cls"),
    ]
    x = helper.make_tensor_value_info("x", F32, ["batch", 3, 4])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", F32, None)], inits)
    for batch in (2, 5):
        module = assert_matches_ort(model, np.ones((batch, 3, 4), np.float32))
    assert [str(d) for d in module.main.output.ty.shape] == ["batch", "4", "4"]
    (expand,) = calls(module, "broadcast_to")
    assert [str(d) for d in expand.attrs["shape"]] == ["batch", "1", "4"]


def test_reductions_with_computed_axes_match_onnxruntime():
    nodes = [
        helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
        helper.make_node("ReduceMax", ["x", "axes"], ["m"], keepdims=1),
    ]
    model = make_model(
        nodes,
        [
            helper.make_tensor_value_info("x", F32, [2, 3, 4]),
            helper.make_tensor_value_info("axes", I64, [None]),
        ],
        [
            helper.make_tensor_value_info("s", F32, None),
            helper.make_tensor_value_info("m", F32, None),
        ],
        opset=18,
    )
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    module = from_onnx(model)
    for axes in ([1], [0, -1], [], [2, 1, 0]):
        a = np.array(axes, np.int64)
        for g, e in zip(run(module, x, a), ort_run(model, x, a), strict=True):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-5)


# ----- bad input -----------------------------------------------------------------------------


def _small_model():
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", F32, [2])],
        [helper.make_tensor_value_info("y", F32, [2])],
    )


def test_truncated_and_corrupt_files_are_frontend_errors(tmp_path):
    data = _small_model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(FrontendError, match="truncated or corrupt|not valid|no graph"):
        from_onnx(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    with pytest.raises(FrontendError, match=r"truncated or corrupt|no graph|checker|opset"):
        from_onnx(b"\xff\xfe this is not a protobuf \x00\x01")
    with pytest.raises(FrontendError, match="empty"):
        from_onnx(b"")
    with pytest.raises(FrontendError, match="cannot read ONNX file"):
        from_onnx(tmp_path / "missing.onnx")
    with pytest.raises(FrontendError, match="path, bytes or an onnx.ModelProto"):
        from_onnx(3.5)


def test_every_unknown_operator_is_listed_with_its_node_names():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("FancyOp", ["a"], ["b"], name="first_fancy"),
        helper.make_node("Relu", ["b"], ["c"]),
        helper.make_node("FancyOp", ["c"], ["d"], name="second_fancy"),
        helper.make_node("Zorp", ["d"], ["y"], name="the_zorp"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F32, [2])],
        [helper.make_tensor_value_info("y", F32, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model)
    ops = info.value.operators
    assert ops["FancyOp (not an ONNX operator)"] == ["first_fancy", "second_fancy"]
    assert ops["Zorp (not an ONNX operator)"] == ["the_zorp"]
    assert "first_fancy" in str(info.value) and "the_zorp" in str(info.value)


def test_operators_without_converters_are_listed_with_node_names():
    from compiler.frontend.onnx_ops import NOT_CONVERTED

    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Bernoulli", ["a"], ["b"], name="coin"),
        helper.make_node("StringNormalizer", ["b"], ["y"], name="norm"),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", F32, [1, 1])],
    )
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model, strict=True)
    # an op passlens leaves out on purpose says why
    assert info.value.operators == {
        f"Bernoulli ({NOT_CONVERTED['Bernoulli']})": ["coin"],
        "StringNormalizer (the IR has no string type)": ["norm"],
    }
    assert "random values" in NOT_CONVERTED["Bernoulli"]


@pytest.mark.parametrize("opset, match", [(99, "newer than any onnx"), (0, "older than passlens")])
def test_wrong_or_unsupported_opsets_are_frontend_errors(opset, match):
    model = _small_model()
    model.opset_import[0].version = opset
    with pytest.raises(FrontendError, match=match):
        from_onnx(model)


def test_a_missing_initializer_is_named():
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "fc.weight"], ["y"], name="fc")],
        "g",
        [helper.make_tensor_value_info("x", F32, [1, 2])],
        [helper.make_tensor_value_info("y", F32, [1, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        FrontendError, match=r"node fc \(MatMul\) reads 'fc.weight'.*missing initializer"
    ):
        from_onnx(model)


def test_a_graph_failing_the_checker_is_a_frontend_error():
    model = _small_model()
    model.graph.node[0].attribute.append(helper.make_attribute("alpha", 1.0))  # Relu has none
    with pytest.raises(FrontendError, match="attribute alpha|onnx.checker"):
        from_onnx(model)
    model = _small_model()
    model.graph.node.append(helper.make_node("Relu", ["x"], ["y"]))  # y defined twice
    with pytest.raises(FrontendError, match="onnx.checker"):
        from_onnx(model)


def test_an_unsupported_dtype_is_reported():
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
    )
    with pytest.raises(UnsupportedOperatorError, match="STRING"):
        from_onnx(model)


# ----- the torch zoo through torch.onnx.export (TorchScript exporter) ----------------------------


def _zoo():
    try:
        from tests.compiler.frontend.torch_zoo import ZOO
    except ImportError:  # pragma: no cover - the zoo lives beside the torch frontend
        return {}
    return ZOO


# torch's TorchScript exporter itself fails on nn.TransformerEncoderLayer's fast path
_TS_EXPORT_FAILS = {"transformer_encoder"}


@pytest.mark.parametrize("name", sorted(set(_zoo()) - _TS_EXPORT_FAILS))
def test_torch_zoo_through_the_torchscript_exporter_matches_torch(name):
    import torch

    model, args, dynamic_shapes = _zoo()[name]()
    names = [f"input_{i}" for i in range(len(args))]
    dynamic_axes = None
    if dynamic_shapes is not None:
        dynamic_axes = {
            n: {axis: dim.__name__ for axis, dim in spec.items()}
            for n, spec in zip(names, dynamic_shapes, strict=True)
            if spec
        }
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            args,
            f,
            opset_version=17,
            dynamo=False,
            input_names=names,
            dynamic_axes=dynamic_axes,
        )
    module = from_onnx(f.getvalue())
    with torch.no_grad():
        expected = model(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = run(module, *[a.numpy() for a in args])
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-5)
    if dynamic_axes:
        symbols = {
            s
            for p in module.main.params
            for d in p.ty.shape
            if not isinstance(d, int)
            for s in getattr(d, "free_symbols", ())
        }
        assert symbols >= {dim for spec in dynamic_axes.values() for dim in spec.values()}


# ----- GatherND -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data_shape, index_shape, batch_dims",
    [
        ((2, 8), (2, 1, 1, 8, 2), 0),  # BERT's mask lookup (torch.onnx's advanced indexing)
        ((4, 3, 5), (6, 1), 0),  # whole slices of the first axis
        ((4, 3, 5), (2, 2, 3), 0),  # single elements
        ((3, 4, 5), (3, 2, 1), 1),  # per batch row
        ((2, 3, 4, 5), (2, 3, 2), 2),
        ((4, 3), (2, 0), 0),  # empty index tuple: the whole input per index
    ],
)
def test_gather_nd_matches_onnxruntime_with_negative_indices(data_shape, index_shape, batch_dims):
    rng = np.random.default_rng(0)
    data = rng.standard_normal(data_shape).astype(np.float32)
    k = index_shape[-1]
    high = data_shape[batch_dims : batch_dims + k]
    columns = [rng.integers(-d, d, index_shape[:-1]) for d in high]
    idx = np.stack(columns, axis=-1) if columns else np.zeros(index_shape)
    idx = idx.reshape(index_shape).astype(np.int64)
    out_rank = len(index_shape) - 1 + len(data_shape) - batch_dims - k
    node = helper.make_node("GatherND", ["data", "idx"], ["y"], batch_dims=batch_dims)
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("data", F32, data_shape),
            helper.make_tensor_value_info("idx", I64, index_shape),
        ],
        [helper.make_tensor_value_info("y", F32, [None] * out_rank)],
    )
    assert_matches_ort(model, data, idx)


def test_gather_nd_over_symbolic_dims():
    node = helper.make_node("GatherND", ["data", "idx"], ["y"])
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("data", F32, ["n", "m", 3]),
            helper.make_tensor_value_info("idx", I64, ["k", 2]),
        ],
        [helper.make_tensor_value_info("y", F32, ["k", 3])],
    )
    data = np.arange(5 * 4 * 3, dtype=np.float32).reshape(5, 4, 3)
    idx = np.array([[0, 0], [4, -1], [-5, 2]], dtype=np.int64)
    module = assert_matches_ort(model, data, idx)
    assert str(module.main.output.ty) == "f32[k, 3]"


def test_gather_nd_needs_a_static_index_length():
    node = helper.make_node("GatherND", ["data", "idx"], ["y"])
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("data", F32, [4, 3]),
            helper.make_tensor_value_info("idx", I64, [2, "k"]),
        ],
        [helper.make_tensor_value_info("y", F32, None)],
    )
    with pytest.raises(UnsupportedOperatorError, match="static last dim of indices"):
        from_onnx(model, strict=True)


# ----- shapes computed at run time, known in dims -----------------------------------------------


def _dynamic_shape_model():
    """What exporters write for dynamic dims: Shape -> Gather -> Range / Concat -> Reshape /
    Expand / ConstantOfShape / Slice, and Swin-style padding of a static dim to a multiple of 3
    computed at run time (Mod)."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "one"], ["pos"]),  # arange(seq)
        helper.make_node("Unsqueeze", ["b", "axis0"], ["b1"]),
        helper.make_node("Unsqueeze", ["n", "axis0"], ["n1"]),
        helper.make_node("Concat", ["b1", "n1", "two", "four"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["heads"]),  # [b, n, 2, 4]
        helper.make_node("Concat", ["b1", "n1"], ["bn"], axis=0),
        helper.make_node("Expand", ["pos", "bn"], ["pos2"]),  # [b, n]
        helper.make_node(
            "ConstantOfShape", ["bn"], ["ones"], value=helper.make_tensor("v", F32, [1], [1.0])
        ),
        helper.make_node("Add", ["n", "one"], ["n_plus"]),
        helper.make_node("Unsqueeze", ["n_plus", "axis0"], ["end"]),
        helper.make_node("Slice", ["table", "zero1", "end", "zero1"], ["rows"]),  # table[:n+1]
        helper.make_node("Gather", ["s", "two0"], ["c"], axis=0),
        helper.make_node("Mod", ["c", "three"], ["r"]),  # pad the last axis to a multiple of 3
        helper.make_node("Sub", ["three", "r"], ["p"]),
        helper.make_node("Mod", ["p", "three"], ["pad"]),
        helper.make_node("Unsqueeze", ["pad", "axis0"], ["pad1"]),
        helper.make_node(
            "Concat", ["zero1", "zero1", "zero1", "zero1", "zero1", "pad1"], ["pads"], axis=0
        ),
        helper.make_node("Pad", ["x", "pads"], ["padded"]),
    ]
    inits = [
        i64("zero", 0),
        i64("one", 1),
        i64("axis0", [0]),
        i64("two", [2]),
        i64("four", [4]),
        i64("zero1", [0]),
        i64("two0", 2),
        i64("three", 3),
        numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table"),
    ]
    outputs = [
        helper.make_tensor_value_info("heads", F32, None),
        helper.make_tensor_value_info("pos2", I64, None),
        helper.make_tensor_value_info("ones", F32, None),
        helper.make_tensor_value_info("rows", F32, None),
        helper.make_tensor_value_info("padded", F32, None),
    ]
    x = helper.make_tensor_value_info("x", F32, ["batch", "seq", 8])
    return make_model(nodes, [x], outputs, inits)


def test_shapes_computed_from_symbolic_dims_are_known_in_dims_and_compile():
    model = _dynamic_shape_model()
    module = from_onnx(model)
    assert [str(t) for t in module.main.ret_type.fields] == [
        "f32[batch, seq, 2, 4]",
        "i64[batch, seq]",
        "f32[batch, seq]",
        "f32[seq + 1, 4]",
        "f32[batch, seq, 9]",
    ]
    assert not [b for b in module.main.bindings if ANY in (getattr(b.ty, "shape", None) or ())]
    from compiler.backend import build

    exe = build(module)
    for batch, seq in ((2, 5), (3, 8)):
        x = np.random.default_rng(seq).standard_normal((batch, seq, 8)).astype(np.float32)
        expected = ort_run(model, x)
        for got in (run(module, x), exe(x)):
            for g, e in zip(got, expected, strict=True):
                assert g.shape == e.shape
                np.testing.assert_allclose(g, e, rtol=1e-6)


_RESIZE_X = np.random.default_rng(0).standard_normal((1, 2, 4, 5)).astype(np.float32)


def _resize_model(attrs, scales=None, sizes=None, opset=19):
    inits = [numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
    names = ["x", "roi", "", ""]
    if scales is not None or opset < 13:  # opset 11 wants scales, empty when sizes are given
        inits.append(numpy_helper.from_array(np.array(scales or [], np.float32), "scales"))
        names[2] = "scales"
    if sizes is not None:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        names[3] = "sizes"
    return make_model(
        [helper.make_node("Resize", names, ["y"], **attrs)],
        [helper.make_tensor_value_info("x", F32, list(_RESIZE_X.shape))],
        [helper.make_tensor_value_info("y", F32, None)],
        inits,
        opset=opset,
    )


@pytest.mark.parametrize(
    "attrs, scales, sizes, opset",
    [
        ({}, [1, 1, 2, 3], None, 13),
        ({"mode": "linear"}, [1, 1, 0.6, 0.8], None, 13),
        (
            {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
            None,
            [1, 2, 7, 3],
            13,
        ),
        (
            {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
            None,
            [1, 2, 1, 9],
            11,
        ),
        (
            {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
            [1, 1, 2.5, 1.5],
            None,
            13,
        ),
        (
            {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
            [1, 1, 0.6, 1.7],
            None,
            19,
        ),
        (
            {"nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"},
            [1, 1, 3, 0.5],
            None,
            13,
        ),
        (
            {"nearest_mode": "ceil", "coordinate_transformation_mode": "align_corners"},
            None,
            [1, 2, 8, 8],
            13,
        ),
        ({"nearest_mode": "round_prefer_ceil"}, None, [2, 3, 6, 10], 13),
        ({"axes": [3, 2]}, [3.0, 2.0], None, 18),
        ({"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}, None, [7, 7], 18),
        (
            {"axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller", "mode": "linear"},
            None,
            [7, 7],
            18,
        ),
    ],
)
def test_resize_matches_onnxruntime(attrs, scales, sizes, opset):
    module = assert_matches_ort(_resize_model(attrs, scales, sizes, opset), _RESIZE_X)
    (resize,) = calls(module, "resize")
    assert resize.attrs["mode"] == attrs.get("mode", "nearest")


def test_resize_with_sizes_computed_from_a_symbolic_shape():
    # the usual exported form: sizes = concat(shape(x)[:2], [h, w])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], end=2),
        helper.make_node("Concat", ["shape", "hw"], ["sizes"], axis=0),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear"),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, ["n", 2, 4, 5])],
        [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(np.array([8, 3], np.int64), "hw")],
    )
    module = assert_matches_ort(model, np.concatenate([_RESIZE_X] * 3))
    (resize,) = calls(module, "resize")
    assert resize.ty.shape == (sym("n"), 2, 8, 3)


def test_resize_unknown_mode_is_unsupported():
    # cubic and computed scales / sizes convert (test_onnx_vision.py); an unknown mode does not
    with pytest.raises(UnsupportedOperatorError, match="mode bicubic"):
        from_onnx(_resize_model({"mode": "bicubic"}, [1, 1, 2, 2]), strict=True)
