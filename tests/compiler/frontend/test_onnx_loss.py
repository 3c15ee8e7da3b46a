"""ONNX losses and the remaining neural-network ops (issue #17, family "loss"): the backend
node tests that now pass, small models against onnxruntime (with a symbolic batch), compiled
with the LLVM backend, and the clear errors of forms not converted."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import UnsupportedOperatorError, from_onnx
from compiler.frontend.onnx_frontend import OnnxImportError
from compiler.interpret import run
from tests.compiler.frontend.onnx_helpers import load_harness as _harness
from tests.compiler.frontend.onnx_helpers import ort_run, round_trip_problem

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


@pytest.fixture(scope="module")
def harness():
    return _harness()


# the node tests of this family that pass (every one whose name starts with a prefix here)
_PASSING_PREFIXES = (
    "test_nllloss",
    "test_sce",
    "test_lppool",
    "test_maxpool",
    "test_maxunpool",
    "test_convtranspose",
    "test_col2im",
    "test_averagepool_3d",
    "test_averagepool_2d_dilations",
    "test_acos",
    "test_asin",
    "test_atan",
    "test_det",
    "test_batchnorm",
)


def test_node_tests_of_the_family_pass(harness):
    root = harness.node_test_dir()
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith(_PASSING_PREFIXES))
    assert len(dirs) >= 120
    bad = []
    for d in dirs:
        r = harness.run_case(d)
        if r.status != "passed":
            bad.append(f"{r.name}: {r.status} {r.message}")
    assert not bad, bad


def test_node_tests_of_the_family_round_trip_through_to_onnx(harness):
    """Every passing node test of the family, exported by to_onnx, gives the interpreter's
    numbers in onnxruntime (the composed ops export as their parts)."""

    ort.set_default_logger_severity(3)
    root = harness.node_test_dir()
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith(_PASSING_PREFIXES))
    problems = [f"{d.name}: {p}" for d in dirs if (p := round_trip_problem(d))]
    assert not problems, problems


# ----- helpers -----------------------------------------------------------------------------


def make_model(nodes, inputs, outputs, initializers=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def assert_matches_ort(model, *inputs, rtol=1e-5, atol=1e-6, compile=False):
    module = from_onnx(model)
    got = run(module, *inputs)
    expected = ort_run(model, *inputs)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    if compile:
        from compiler.backend import build

        exe = build(module)
        built = exe(*inputs)
        built = list(built) if isinstance(built, (list, tuple)) else [built]
        for b, g in zip(built, got, strict=True):
            assert b.shape == g.shape
            np.testing.assert_allclose(b, g, rtol=1e-5, atol=1e-6)
    return module


RNG = np.random.default_rng(17)


# ----- losses ------------------------------------------------------------------------------


def _loss_model(op, reduction, ignore_index, weighted, spatial, log_prob=False):
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    names = ["x", "t"] + (["w"] if weighted else [])
    outs = ["loss"] + (["log_prob"] if log_prob else [])
    node = helper.make_node(op, names, outs, **attrs)
    inputs = [
        helper.make_tensor_value_info("x", F32, ["n", 5, *spatial]),
        helper.make_tensor_value_info("t", I64, ["n", *spatial]),
    ]
    if weighted:
        inputs.append(helper.make_tensor_value_info("w", F32, [5]))
    loss_shape = ["n", *spatial] if reduction == "none" else []
    outputs = [helper.make_tensor_value_info("loss", F32, loss_shape)]
    if log_prob:
        outputs.append(helper.make_tensor_value_info("log_prob", F32, ["n", 5, *spatial]))
    return make_model([node], inputs, outputs)


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("ignore_index", [None, 2, -1, 7])
@pytest.mark.parametrize("weighted", [False, True])
def test_losses_match_onnxruntime(op, reduction, ignore_index, weighted):
    spatial = [3, 2]
    model = _loss_model(op, reduction, ignore_index, weighted, spatial, log_prob=op[0] == "S")
    module = from_onnx(model)
    assert str(module.main.params[0].ty) == "f32[n, 5, 3, 2]"
    for n in (2, 3):
        x = RNG.standard_normal((n, 5, *spatial)).astype(np.float32)
        t = RNG.integers(0, 5, (n, *spatial)).astype(np.int64)
        if ignore_index is not None:
            t.reshape(-1)[::3] = ignore_index
        inputs = [x, t] + ([RNG.random(5).astype(np.float32) + 0.1] if weighted else [])
        assert_matches_ort(model, *inputs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
def test_losses_compile(op):
    model = _loss_model(op, "mean", -1, True, [4])
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    t = RNG.integers(-1, 5, (3, 4)).astype(np.int64)
    w = RNG.random(5).astype(np.float32)
    assert_matches_ort(model, x, t, w, compile=True)


def test_loss_errors():
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], reduction="avg")
    model = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [
                helper.make_tensor_value_info("x", F32, [2, 3]),
                helper.make_tensor_value_info("t", I64, [2]),
            ],
            [helper.make_tensor_value_info("y", F32, [])],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    with pytest.raises(OnnxImportError, match="reduction must be one of"):
        from_onnx(model)
    node = helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])
    model.graph.node[0].CopyFrom(node)
    model.graph.input[1].CopyFrom(helper.make_tensor_value_info("t", I64, [2, 1, 1]))
    with pytest.raises(OnnxImportError, match="target must have rank 1"):
        from_onnx(model)


# ----- pooling composed of 2-D pools and depthwise convs -----------------------------------


def _pool_model(op, shape, **attrs):
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    nd = len(shape) - 2
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", F32, ["n", *shape[1:]])],
        [helper.make_tensor_value_info("y", F32, ["n", shape[1]] + [None] * nd)],
        opset=19,
    )


_POOL_FORMS = [
    {"kernel_shape": [2, 2, 2]},
    {"kernel_shape": [3, 2, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]},
    {"kernel_shape": [2, 3, 2], "dilations": [2, 1, 2], "strides": [1, 2, 3], "ceil_mode": 1},
    {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "pads": [1, 1, 1, 1, 1, 1], "ceil_mode": 1},
    {"kernel_shape": [2, 2, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2, 2]},
]


@pytest.mark.parametrize("form", range(len(_POOL_FORMS)))
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "AveragePool1"])
def test_3d_pooling_matches_onnxruntime(op, form):
    attrs = dict(_POOL_FORMS[form])
    if op == "AveragePool1":
        op, attrs["count_include_pad"] = "AveragePool", 1
    model = _pool_model(op, [1, 2, 7, 6, 8], **attrs)
    for n in (1, 2):
        x = RNG.standard_normal((n, 2, 7, 6, 8)).astype(np.float32)
        assert_matches_ort(model, x, compile=form == 2 and n == 2)


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("ceil", [0, 1])
def test_dilated_2d_average_pool_matches_onnxruntime(include_pad, ceil):
    model = _pool_model(
        "AveragePool",
        [1, 3, 9, 8],
        kernel_shape=[3, 2],
        dilations=[2, 3],
        strides=[2, 2],
        pads=[1, 1, 2, 1],
        ceil_mode=ceil,
        count_include_pad=include_pad,
    )
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    assert_matches_ort(model, x, compile=bool(include_pad and ceil))


@pytest.mark.parametrize(
    "shape, attrs",
    [
        ([1, 2, 9], {"kernel_shape": [3], "p": 3, "strides": [2], "pads": [1, 1]}),
        ([1, 2, 7, 6], {"kernel_shape": [2, 3], "p": 2, "dilations": [2, 1]}),
        ([1, 2, 7, 6], {"kernel_shape": [2, 2], "p": 1, "auto_pad": "SAME_LOWER"}),
        ([1, 2, 5, 6, 4], {"kernel_shape": [2, 3, 2], "p": 4, "strides": [1, 2, 1]}),
    ],
)
def test_lp_pool_matches_onnxruntime(shape, attrs):
    model = _pool_model("LpPool", shape, **attrs)
    x = RNG.standard_normal((2, *shape[1:])).astype(np.float32)
    assert_matches_ort(model, x, rtol=1e-4, compile=True)


def test_pooling_errors():
    model = _pool_model("LpPool", [1, 2, 7, 6], kernel_shape=[2, 2], p=0)
    with pytest.raises(OnnxImportError, match="p must be an integer"):
        from_onnx(model, strict=True)
    model = _pool_model("MaxPool", [1, 2, 7, 6, 5], kernel_shape=[2, 2, 99999])
    with pytest.raises(OnnxImportError, match="kernel_shape"):
        from_onnx(model, strict=True)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2, 2])
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", F32, [1, 2, "d", 4, 4])],
        [helper.make_tensor_value_info("y", F32, [1, 2, None, 2, 2])],
    )
    with pytest.raises(UnsupportedOperatorError, match="static spatial dim"):
        from_onnx(model, strict=True)


# ----- Atan, Asin, Acos, Det ---------------------------------------------------------------


@pytest.mark.parametrize("op", ["Atan", "Asin", "Acos"])
@pytest.mark.parametrize("elem", [F32, TensorProto.DOUBLE])
def test_inverse_trig_matches_numpy(op, elem):
    node = helper.make_node(op, ["x"], ["y"])
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", elem, ["n"])],
        [helper.make_tensor_value_info("y", elem, ["n"])],
    )
    dtype = np.float32 if elem == F32 else np.float64
    if op == "Atan":
        x = np.concatenate(
            [RNG.standard_normal(200) * 10, [0.0, -0.0, 0.41, 0.67, 2.4, 2.5, 1e30, -np.inf]]
        )
    else:
        x = np.concatenate([RNG.uniform(-1, 1, 200), [-1.0, 1.0, 0.0, 0.999999, -0.999999]])
    x = x.astype(dtype)
    expected = {"Atan": np.arctan, "Asin": np.arcsin, "Acos": np.arccos}[op](x)
    module = from_onnx(model)
    (got,) = run(module, x)
    assert got.dtype == dtype
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * 1e-3)
    from compiler.backend import build

    (built,) = build(module)(x)
    np.testing.assert_allclose(built, expected, rtol=rtol, atol=rtol * 1e-3)


def test_asin_acos_outside_the_domain_are_nan():
    for op in ("Asin", "Acos"):
        node = helper.make_node(op, ["x"], ["y"])
        model = make_model(
            [node],
            [helper.make_tensor_value_info("x", F32, [2])],
            [helper.make_tensor_value_info("y", F32, [2])],
        )
        with np.errstate(invalid="ignore"):
            (got,) = run(from_onnx(model), np.array([1.5, -2.0], np.float32))
        assert np.isnan(got).all()


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_det_matches_onnxruntime(n):
    node = helper.make_node("Det", ["x"], ["y"])
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", F32, ["b", 2, n, n])],
        [helper.make_tensor_value_info("y", F32, ["b", 2])],
    )
    x = RNG.standard_normal((3, 2, n, n)).astype(np.float32)
    x[0, 0] = np.eye(n)[::-1]  # a zero first pivot
    assert_matches_ort(model, x, rtol=1e-4, atol=1e-5, compile=n == 3)


def test_det_errors():
    node = helper.make_node("Det", ["x"], ["y"])
    for shape, error, match in [
        ([7, 7], UnsupportedOperatorError, "Leibniz formula"),
        (["n", "n"], UnsupportedOperatorError, "static matrix size"),
        ([2, 3], OnnxImportError, "square"),
    ]:
        model = make_model(
            [node],
            [helper.make_tensor_value_info("x", F32, shape)],
            [helper.make_tensor_value_info("y", F32, [])],
        )
        with pytest.raises(error, match=match):
            from_onnx(model, strict=True)


# ----- BatchNormalization training, Col2Im -------------------------------------------------


def test_batch_norm_training_matches_onnxruntime():
    node = helper.make_node(
        "BatchNormalization",
        ["x", "s", "b", "m", "v"],
        ["y", "rm", "rv"],
        training_mode=1,
        momentum=0.7,
        epsilon=1e-3,
    )
    params = [helper.make_tensor_value_info(k, F32, [3]) for k in "sbmv"]
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", F32, ["n", 3, 4, 5]), *params],
        [
            helper.make_tensor_value_info("y", F32, ["n", 3, 4, 5]),
            helper.make_tensor_value_info("rm", F32, [3]),
            helper.make_tensor_value_info("rv", F32, [3]),
        ],
        opset=15,
    )
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    s, b, m = (RNG.standard_normal(3).astype(np.float32) for _ in range(3))
    v = RNG.random(3).astype(np.float32) + 0.5
    assert_matches_ort(model, x, s, b, m, v, rtol=1e-4, atol=1e-5, compile=True)


@pytest.mark.parametrize(
    "image, block, attrs",
    [
        ([5, 5], [2, 2], {}),
        ([5, 5], [2, 2], {"strides": [2, 2]}),
        ([5, 6], [2, 2], {"dilations": [1, 2], "pads": [0, 1, 1, 0]}),
        ([4, 3, 5], [2, 1, 3], {"strides": [1, 2, 1], "pads": [1, 0, 0, 0, 1, 1]}),
    ],
)
def test_col2im_with_constant_shapes_matches_onnxruntime(image, block, attrs):
    nd = len(image)
    strides = attrs.get("strides", [1] * nd)
    dil = attrs.get("dilations", [1] * nd)
    pads = attrs.get("pads", [0] * 2 * nd)
    length = int(
        np.prod(
            [
                (image[k] + pads[k] + pads[k + nd] - dil[k] * (block[k] - 1) - 1) // strides[k] + 1
                for k in range(nd)
            ]
        )
    )
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    inits = [
        numpy_helper.from_array(np.array(image, np.int64), "image"),
        numpy_helper.from_array(np.array(block, np.int64), "block"),
    ]
    k = int(np.prod(block))
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", F32, ["n", 2 * k, length])],
        [helper.make_tensor_value_info("y", F32, ["n", 2, *image])],
        inits,
    )
    x = RNG.standard_normal((2, 2 * k, length)).astype(np.float32)
    assert_matches_ort(model, x, compile=nd == 3)


def test_col2im_with_computed_shapes_matches_onnxruntime():
    node = helper.make_node(
        "Col2Im", ["x", "image", "block"], ["y"], strides=[1, 2], pads=[1, 0, 0, 1]
    )
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("x", F32, ["n", 12, 12]),
            helper.make_tensor_value_info("image", I64, [2]),
            helper.make_tensor_value_info("block", I64, [2]),
        ],
        [helper.make_tensor_value_info("y", F32, ["n", None, None, None])],
    )
    x = RNG.standard_normal((2, 12, 12)).astype(np.float32)
    # image 4x6, block 2x3: windows (4+1-2+1) x ((6+1-3)//2+1) = 4 x 3; 12 rows = 2 channels
    assert_matches_ort(model, x, np.array([4, 6], np.int64), np.array([2, 3], np.int64))
    # the same model, image 2x8, block 1x2: windows 3 x 4; 12 rows = 6 channels
    x = RNG.standard_normal((1, 12, 12)).astype(np.float32)
    assert_matches_ort(model, x, np.array([2, 8], np.int64), np.array([1, 2], np.int64))


def test_col2im_too_large_for_a_matrix_scatters():
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    inits = [
        numpy_helper.from_array(np.array([64, 64], np.int64), "image"),
        numpy_helper.from_array(np.array([3, 3], np.int64), "block"),
    ]
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", F32, ["n", 18, 62 * 62])],
        [helper.make_tensor_value_info("y", F32, ["n", 2, 64, 64])],
        inits,
    )
    x = RNG.standard_normal((2, 18, 62 * 62)).astype(np.float32)
    module = assert_matches_ort(model, x, rtol=1e-5, atol=1e-5, compile=True)
    assert str(module.main.output.ty) == "f32[n, 2, 64, 64]"
    assert not any(getattr(b, "op", None) == "matmul" for b in module.main.iter_nodes())


def test_col2im_errors():
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    inits = [
        numpy_helper.from_array(np.array([5, 5], np.int64), "image"),
        numpy_helper.from_array(np.array([2, 2], np.int64), "block"),
    ]
    x = helper.make_tensor_value_info("x", F32, [1, 4, 15])
    model = make_model([node], [x], [helper.make_tensor_value_info("y", F32, [1, 1, 5, 5])], inits)
    with pytest.raises(OnnxImportError, match="has 15 columns"):
        from_onnx(model)
    inits[1] = numpy_helper.from_array(np.array([2, 2, 2], np.int64), "block")
    model = make_model([node], [x], [helper.make_tensor_value_info("y", F32, [1, 1, 5, 5])], inits)
    with pytest.raises(OnnxImportError, match="same length"):
        from_onnx(model)
    inits[1] = numpy_helper.from_array(np.array([2, 0], np.int64), "block")
    model = make_model([node], [x], [helper.make_tensor_value_info("y", F32, [1, 1, 5, 5])], inits)
    with pytest.raises(OnnxImportError, match="positive sizes"):
        from_onnx(model)


# ----- MaxPool indices, MaxUnpool ----------------------------------------------------------


@pytest.mark.parametrize(
    "shape, attrs",
    [
        ([1, 2, 6, 7], {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}),
        ([1, 2, 6, 7], {"kernel_shape": [2, 2], "storage_order": 1}),
        (
            [1, 2, 7, 7],
            {"kernel_shape": [3, 3], "dilations": [2, 1], "ceil_mode": 1, "strides": [2, 2]},
        ),
        ([1, 3, 9], {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
        ([1, 2, 4, 5, 4], {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2]}),
    ],
)
def test_max_pool_indices_match_onnxruntime(shape, attrs):
    nd = len(shape) - 2
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", F32, ["n", *shape[1:]])],
        [
            helper.make_tensor_value_info("y", F32, ["n", shape[1]] + [None] * nd),
            helper.make_tensor_value_info("i", I64, ["n", shape[1]] + [None] * nd),
        ],
    )
    x = RNG.standard_normal((2, *shape[1:])).astype(np.float32)
    x.reshape(-1)[::5] = 1.0  # ties: the first in scan order wins
    assert_matches_ort(model, x, compile=nd == 2)


def test_max_unpool_inverts_max_pool_like_onnxruntime():
    pool = helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2])
    unpool = helper.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    model = make_model(
        [pool, unpool],
        [helper.make_tensor_value_info("x", F32, ["n", 3, 4, 6])],
        [helper.make_tensor_value_info("y", F32, ["n", 3, 4, 6])],
    )
    x = RNG.standard_normal((2, 3, 4, 6)).astype(np.float32)
    module = assert_matches_ort(model, x, compile=True)
    assert str(module.main.output.ty) == "f32[n, 3, 4, 6]"


def test_max_unpool_with_an_output_shape():
    node = helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2], strides=[2])
    inits = [numpy_helper.from_array(np.array([1, 2, 7], np.int64), "s")]
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("x", F32, [1, 2, 3]),
            helper.make_tensor_value_info("i", I64, [1, 2, 3]),
        ],
        [helper.make_tensor_value_info("y", F32, [1, 2, 7])],
        inits,
    )
    x = np.array([[[1, 2, 3], [4, 5, 6]]], np.float32)
    i = np.array([[[0, 3, 4], [7, 8, 11]]], np.int64)
    (got,) = run(from_onnx(model), x, i)
    expected = np.zeros((1, 2, 6), np.float32)
    expected.reshape(-1)[i.reshape(-1)] = x.reshape(-1)
    np.testing.assert_array_equal(got, np.pad(expected, [(0, 0), (0, 0), (0, 1)]))
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([1, 2, 5], np.int64), "s"))
    with pytest.raises(OnnxImportError, match="output_shape"):
        from_onnx(model)


# ----- 3-D Conv and ConvTranspose ----------------------------------------------------------


@pytest.mark.parametrize(
    "op, wshape, attrs",
    [
        ("Conv", [4, 2, 3, 2, 2], {}),
        ("Conv", [4, 1, 2, 3, 2], {"group": 2, "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]}),
        ("Conv", [2, 2, 2, 2, 2], {"dilations": [2, 1, 2]}),
        ("Conv", [2, 2, 2, 3, 2], {"auto_pad": "SAME_UPPER"}),
        ("ConvTranspose", [2, 3, 2, 3, 2], {}),
        (
            "ConvTranspose",
            [2, 2, 3, 2, 2],
            {"group": 2, "strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1]},
        ),
        (
            "ConvTranspose",
            [2, 1, 2, 2, 3],
            {"dilations": [2, 1, 1], "output_padding": [1, 0, 0], "strides": [2, 2, 1]},
        ),
        ("ConvTranspose", [2, 2, 2, 2, 2], {"output_shape": [6, 9, 8], "strides": [2, 2, 2]}),
    ],
)
@pytest.mark.parametrize("with_bias", [False, True])
def test_3d_convolutions_match_onnxruntime(op, wshape, attrs, with_bias):
    c_in = wshape[0] if op == "ConvTranspose" else wshape[1] * attrs.get("group", 1)
    c_out = wshape[1] * attrs.get("group", 1) if op == "ConvTranspose" else wshape[0]
    w = RNG.standard_normal(wshape).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    names = ["x", "w"]
    if with_bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(c_out).astype(np.float32), "b"))
        names.append("b")
    node = helper.make_node(op, names, ["y"], **attrs)
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", F32, ["n", c_in, 4, 5, 4])],
        [helper.make_tensor_value_info("y", F32, ["n", c_out, None, None, None])],
        inits,
    )
    x = RNG.standard_normal((2, c_in, 4, 5, 4)).astype(np.float32)
    assert_matches_ort(model, x, rtol=1e-4, atol=1e-5, compile=with_bias)
