"""The quantization family (issue #17): QuantizeLinear / DequantizeLinear (per tensor, per
axis, blocked), DynamicQuantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger,
ConvInteger; the fold-qdq pass; and a QDQ-quantized CNN (onnxruntime's static quantization on
random calibration data) through explore + check + the compiled build.

- the ONNX node tests of these ops pass (the opset-10 ones also with their opset raised to 13,
  the oldest the importer reads today);
- models built here with onnx.helper agree with onnxruntime (dynamic batch where it applies)
  and compiled with ``compiler.backend.build`` agree with the interpreter;
- unsupported forms are reported clearly;
- fold-qdq turns a QDQ model into integer arithmetic and changes results by at most one
  quantization step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler import passes  # noqa: E402
from compiler.frontend import UnsupportedOperatorError, from_onnx  # noqa: E402
from compiler.frontend.onnx_frontend import OnnxImportError  # noqa: E402
from compiler.interpret import run  # noqa: E402
from compiler.ir.nodes import Call  # noqa: E402
from tests.compiler.frontend.onnx_helpers import load_harness as _harness  # noqa: E402
from tests.compiler.frontend.onnx_helpers import ort_run as _ort  # noqa: E402

rng = np.random.default_rng(0)

# ----- (a) the ONNX node tests ---------------------------------------------------------------

PASSING = [
    "test_dequantizelinear",
    "test_dequantizelinear_axis",
    "test_dequantizelinear_blocked",
    "test_dequantizelinear_int16",
    "test_quantizelinear",
    "test_quantizelinear_axis",
    "test_quantizelinear_blocked_asymmetric",
    "test_quantizelinear_blocked_symmetric",
    "test_quantizelinear_int16",
    "test_dynamicquantizelinear",
    "test_dynamicquantizelinear_expanded",
    "test_dynamicquantizelinear_max_adjusted",
    "test_dynamicquantizelinear_max_adjusted_expanded",
    "test_dynamicquantizelinear_min_adjusted",
    "test_dynamicquantizelinear_min_adjusted_expanded",
    # float8 / float4 targets
    "test_quantizelinear_e4m3fn",
    "test_quantizelinear_e5m2",
    "test_quantizelinear_float4e2m1",
    "test_dequantizelinear_e4m3fn",
    "test_dequantizelinear_e4m3fn_float16",
    "test_dequantizelinear_e4m3fn_zero_point",
    "test_dequantizelinear_e5m2",
    "test_dequantizelinear_float4e2m1",
] + [
    f"test_qlinearmatmul_{r}D_{q}_{f}"
    for r in (2, 3)
    for q in ("int8", "uint8")
    for f in ("float16", "float32")
]
OPSET_10 = [
    "test_qlinearconv",
    "test_matmulinteger",
    "test_convinteger_with_padding",
    "test_convinteger_without_padding",
]


@pytest.fixture(scope="module")
def harness():
    h = _harness()
    if not (h.node_test_dir() / "test_quantizelinear").exists():
        pytest.skip("no ONNX node test data")
    return h


@pytest.mark.parametrize("name", PASSING)
def test_node_test_passes(harness, name):
    result = harness.run_case(harness.node_test_dir() / name)
    assert result.status == "passed", result.message


@pytest.mark.parametrize("name", OPSET_10)
def test_opset_10_node_test_passes(harness, name):
    result = harness.run_case(harness.node_test_dir() / name)
    if result.status == "passed":
        return
    assert "opset 10" in result.message  # only the importer's opset floor stands in the way
    data = harness.load_case(harness.node_test_dir() / name)
    model = onnx.load_from_string(data.model)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 13  # these ops did not change from 10 to 13
    got = run(from_onnx(model.SerializeToString()), *map(numpy_helper.to_array, data.inputs))
    assert harness._compare(got, data.outputs, data.rtol, data.atol) == ""


# ----- (b, c) models built here vs onnxruntime, and compiled ---------------------------------


def _model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _t(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _reference(model, *args):
    from onnx.reference import ReferenceEvaluator

    names = [i.name for i in model.graph.input]
    return ReferenceEvaluator(model).run(None, dict(zip(names, args, strict=True)))


def _check(model, *args, compile_too=True, max_steps=0, reference=_ort):
    """The interpreter agrees with onnxruntime (or ONNX's reference implementation; exactly
    for integers, unless ``max_steps``), and the compiled module with the interpreter;
    returns the module."""
    module = from_onnx(model.SerializeToString())
    got = run(module, *args)
    want = reference(model, *args)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind in "iu":
            assert np.abs(g.astype(np.int64) - w.astype(np.int64)).max(initial=0) <= max_steps
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    if compile_too:
        from compiler.backend import build

        exe = build(module)
        for g, c in zip(got, exe(*args), strict=True):
            assert g.dtype == c.dtype
            if g.dtype.kind in "iu":
                np.testing.assert_array_equal(g, c)
            else:  # fused float arithmetic may round differently in the last bit
                np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-6)
    return module


def test_quantize_dequantize_per_tensor_and_per_axis_with_a_dynamic_batch():
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
        helper.make_node("Add", ["d", "w"], ["y"]),
    ]
    inits = [
        _t("s", np.float32(0.05)),
        _t("z", np.uint8(120)),
        _t("wq", rng.integers(-128, 128, (4, 5)).astype(np.int8)),
        _t("ws", np.array([0.1, 0.2, 0.3, 0.4, 0.5], np.float32)),
        _t("wz", np.array([0, 1, -1, 2, -2], np.int8)),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 5])],
        [
            helper.make_tensor_value_info("q", TensorProto.UINT8, ["batch", 4, 5]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 5]),
        ],
        inits,
    )
    module = None
    for batch in (1, 3):
        x = (rng.standard_normal((batch, 4, 5)) * 4).astype(np.float32)  # saturates some
        module = _check(model, x)
    assert str(module["main"].params[0].ty.shape[0]) == "batch"
    ops = {n.op for n in module["main"].bindings if isinstance(n, Call)}
    assert {"quantize", "dequantize"} <= ops


def test_blocked_quantize_matches_the_onnx_reference():
    from onnx.reference import ReferenceEvaluator

    x = rng.standard_normal((3, 7)).astype(np.float32)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1, block_size=3),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1, block_size=3),
    ]
    inits = [
        _t("s", rng.uniform(0.01, 0.1, (3, 3)).astype(np.float32)),
        _t("z", rng.integers(-5, 5, (3, 3)).astype(np.int8)),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7])],
        [
            helper.make_tensor_value_info("q", TensorProto.INT8, [3, 7]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7]),
        ],
        inits,
        opset=21,
    )
    module = from_onnx(model.SerializeToString())
    got = run(module, x)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    from compiler.backend import build

    q, y = build(module)(x)
    np.testing.assert_array_equal(q, got[0])
    np.testing.assert_allclose(y, got[1], rtol=1e-6)


def test_dynamic_quantize_linear():
    model = _model(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])],
        [
            helper.make_tensor_value_info("y", TensorProto.UINT8, ["n", 6]),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("z", TensorProto.UINT8, []),
        ],
    )
    for x in (rng.standard_normal((2, 6)), rng.uniform(0.5, 3.0, (4, 6))):  # one all positive
        _check(model, x.astype(np.float32))


@pytest.mark.parametrize("a_type", [np.uint8, np.int8])
def test_qlinear_matmul_and_matmul_integer(a_type):
    lo, hi = np.iinfo(a_type).min, np.iinfo(a_type).max
    a = rng.integers(lo, hi + 1, (2, 3, 8)).astype(a_type)
    onnx_a = TensorProto.UINT8 if a_type == np.uint8 else TensorProto.INT8
    inits = [
        _t("sa", np.float32(0.02)),
        _t("za", a_type(3)),
        _t("b", rng.integers(-63, 64, (8, 5)).astype(np.int8)),
        _t("sb", np.float32(0.01)),
        _t("zb", np.int8(-2)),
        _t("sy", np.float32(0.05)),
        _t("zy", np.uint8(128)),
    ]
    nodes = [
        helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"]),
        helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["acc"]),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("a", onnx_a, ["batch", 3, 8])],
        [
            helper.make_tensor_value_info("y", TensorProto.UINT8, ["batch", 3, 5]),
            helper.make_tensor_value_info("acc", TensorProto.INT32, ["batch", 3, 5]),
        ],
        inits,
    )
    # onnxruntime has no QLinearMatMul for int8 a; its u8 x s8 kernels saturate pair sums
    # of full-range weights (hence weights in [-63, 63]); requantizing rounds a product that
    # onnxruntime and ONNX's reference compute at other precisions: one step apart at most
    _check(model, a, max_steps=1, reference=_ort if a_type == np.uint8 else _reference)


def _conv_model(op: str, per_channel: bool):
    w = rng.integers(-63, 64, (4, 3, 3, 3)).astype(np.int8)  # see test_qlinear_matmul
    if op == "ConvInteger":  # onnxruntime's ConvInteger takes uint8 weights
        w = rng.integers(0, 255, (4, 3, 3, 3)).astype(np.uint8)
        inits = [_t("w", w), _t("zx", np.uint8(100)), _t("zw", np.uint8(128))]
        node = helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], pads=[1, 1, 1, 1])
        out = TensorProto.INT32
    else:
        ws = rng.uniform(0.001, 0.01, 4) if per_channel else np.array(0.005)
        inits = [
            _t("sx", np.float32(0.03)),
            _t("zx", np.uint8(100)),
            _t("w", w),
            _t("sw", ws.astype(np.float32)),
            _t("zw", np.zeros(4 if per_channel else (), np.int8)),
            _t("sy", np.float32(0.02)),
            _t("zy", np.uint8(60)),
            _t("b", rng.integers(-500, 500, 4).astype(np.int32)),
        ]
        inputs = ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"]
        node = helper.make_node(op, inputs, ["y"], pads=[1, 1, 1, 1], strides=[2, 1])
        out = TensorProto.UINT8
    return _model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.UINT8, ["batch", 3, 6, 5])],
        [helper.make_tensor_value_info("y", out, None)],
        inits,
    )


@pytest.mark.parametrize(
    "op, per_channel", [("QLinearConv", False), ("QLinearConv", True), ("ConvInteger", False)]
)
def test_integer_convolutions(op, per_channel):
    model = _conv_model(op, per_channel)
    for batch in (1, 2):
        x = rng.integers(0, 256, (batch, 3, 6, 5)).astype(np.uint8)
        _check(model, x, max_steps=1 if op == "QLinearConv" else 0)


# ----- (d) clear errors for unsupported forms -------------------------------------------------


def _one_node(node, x_type=TensorProto.FLOAT, inits=(), opset=21, out_type=TensorProto.UINT8):
    return _model(
        [node],
        [helper.make_tensor_value_info("x", x_type, [2, 3])],
        [helper.make_tensor_value_info("y", out_type, None)],
        inits,
        opset=opset,
    ).SerializeToString()


@pytest.mark.parametrize(
    "target", [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E4M3FNUZ]
)
@pytest.mark.parametrize("saturate", [1, 0])
def test_float8_quantization_matches_the_onnx_reference(target, saturate):
    # per axis, values far beyond the type's range (saturated, or inf / nan without saturate)
    nodes = [
        helper.make_node(
            "QuantizeLinear", ["x", "s"], ["q"], axis=1, saturate=saturate, output_dtype=target
        ),  # fmt: skip
        helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=1),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [
            helper.make_tensor_value_info("q", target, ["batch", 3]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
        ],
        [_t("s", np.array([0.5, 2.0, 1e-3], np.float32))],
        opset=21,
    )
    module = from_onnx(model.SerializeToString())
    for batch in (1, 4):
        x = (rng.standard_normal((batch, 3)) * 100).astype(np.float32)
        x[0, 2] = 1e6  # / 1e-3: past every float8's range
        got, want = run(module, x), _reference(model, x)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g.astype(np.float32), w.astype(np.float32))
    assert str(module["main"].params[0].ty.shape[0]) == "batch"
    if saturate and target == TensorProto.FLOAT8E4M3FN:  # the backend says it cannot compile
        from compiler.backend import build

        with pytest.raises(Exception, match="does not compile float8e4m3fn"):
            build(module)


def test_a_nonzero_float8_zero_point_is_an_error():
    import ml_dtypes

    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    inits = [_t("s", np.float32(0.1)), _t("z", np.array(1.0, ml_dtypes.float8_e4m3fn))]
    with pytest.raises(OnnxImportError, match="f8e4m3fn zero point must be 0"):
        from_onnx(_one_node(node, inits=inits, out_type=TensorProto.FLOAT8E4M3FN))


def test_other_precision_is_unsupported():
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], precision=TensorProto.DOUBLE)
    with pytest.raises(UnsupportedOperatorError, match="precision 11"):
        from_onnx(_one_node(node, inits=[_t("s", np.float32(0.1))], opset=23), strict=True)


def test_a_per_axis_scale_of_the_wrong_length_is_an_error():
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1)
    with pytest.raises(OnnxImportError, match="per-axis scale of 4 values for axis 1 of size 3"):
        from_onnx(_one_node(node, inits=[_t("s", np.ones(4, np.float32))]))


def test_blocks_that_do_not_cover_the_axis_are_an_error():
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)
    with pytest.raises(OnnxImportError, match="does not cover dim 1 of size 3"):
        from_onnx(_one_node(node, inits=[_t("s", np.ones((2, 1), np.float32))]))


def test_mismatched_output_dtype_and_zero_point_is_an_error():
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], output_dtype=TensorProto.INT8)
    inits = [_t("s", np.float32(0.1)), _t("z", np.uint8(3))]
    with pytest.raises(OnnxImportError, match="output_dtype i8 differs"):
        from_onnx(_one_node(node, inits=inits))


# ----- (e) fold-qdq --------------------------------------------------------------------------


def _qdq_model(per_channel: bool):
    """x -> Q -> DQ -> Conv(DQ(w), DQ(b)) -> Q -> DQ -> Relu -> Q -> DQ -> MaxPool -> Q -> DQ
    -> Reshape -> Q -> DQ -> MatMul(DQ(w2)) -> Q -> DQ, plus an Add of two DQs -> Q -> DQ."""
    c = 4
    sw = rng.uniform(0.002, 0.01, c) if per_channel else np.array(0.006)
    sx, s1, s2, s3 = 0.03, 0.05, 0.04, 0.08
    inits = [
        _t("sx", np.float32(sx)),
        _t("zx", np.uint8(128)),
        _t("w", rng.integers(-63, 64, (c, 3, 3, 3)).astype(np.int8)),  # see test_qlinear_matmul
        _t("sw", sw.astype(np.float32)),
        _t("zw", np.zeros(c if per_channel else (), np.int8)),
        _t("b", rng.integers(-300, 300, c).astype(np.int32)),
        _t("sb", (sx * sw).astype(np.float32)),
        _t("zb", np.zeros(c if per_channel else (), np.int32)),
        _t("s1", np.float32(s1)),
        _t("z1", np.uint8(100)),
        _t("shape", np.array([0, -1], np.int64)),
        _t("w2", rng.integers(-63, 64, (c * 2 * 2, 6)).astype(np.int8)),
        _t("s2w", np.float32(0.01)),
        _t("z2w", np.int8(0)),
        _t("s2", np.float32(s2)),
        _t("z2", np.uint8(120)),
        _t("s3", np.float32(s3)),
        _t("z3", np.uint8(90)),
    ]
    axis = {"axis": 0} if per_channel else {}

    def qdq(name, s, z):
        return [
            helper.make_node("QuantizeLinear", [name, s, z], [f"{name}_q"]),
            helper.make_node("DequantizeLinear", [f"{name}_q", s, z], [f"{name}_d"]),
        ]

    nodes = [
        *qdq("x", "sx", "zx"),
        helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wd"], **axis),
        helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bd"], **axis),
        helper.make_node("Conv", ["x_d", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
        *qdq("c", "s1", "z1"),
        helper.make_node("Relu", ["c_d"], ["r"]),
        *qdq("r", "s1", "z1"),
        helper.make_node("MaxPool", ["r_d"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        *qdq("p", "s1", "z1"),
        helper.make_node("Reshape", ["p_d", "shape"], ["f"]),
        *qdq("f", "s1", "z1"),
        helper.make_node("DequantizeLinear", ["w2", "s2w", "z2w"], ["w2d"]),
        helper.make_node("MatMul", ["f_d", "w2d"], ["m"]),
        *qdq("m", "s2", "z2"),
        helper.make_node("Add", ["m_d", "m_d"], ["a"]),
        *qdq("a", "s3", "z3"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 4, 4])],
        [helper.make_tensor_value_info("a_d", TensorProto.FLOAT, ["batch", 6])],
        inits,
    ), s3


def _ops(module) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in module["main"].bindings:
        if isinstance(n, Call):
            counts[n.op] = counts.get(n.op, 0) + 1
    return counts


@pytest.mark.parametrize("per_channel", [False, True])
def test_fold_qdq_makes_integer_arithmetic_within_one_quantization_step(per_channel):
    model, step = _qdq_model(per_channel)
    module = from_onnx(model.SerializeToString())
    folded = passes.run(module, "fold-qdq").module
    before, after = _ops(module), _ops(folded)
    assert before["dequantize"] == 10 and before["quantize"] == 7
    # left: the input's quantize, the output's dequantize and the requantizations of the
    # conv, the matmul and the add; relu, max_pool and reshape work on the quantized values
    assert after["dequantize"] == 1 and after["quantize"] == 4
    assert after.get("maximum") == 1 and "relu" not in after
    main = folded["main"]
    for n in main.bindings:
        if isinstance(n, Call) and n.op in ("conv2d", "matmul", "max_pool2d", "reshape"):
            assert all(not (isinstance(a, Call) and a.op == "dequantize") for a in n.args)
            assert n.op == "conv2d" or n.ty.dtype.is_int
    worst = 0.0
    for batch in (1, 2, 5):
        x = (rng.standard_normal((batch, 3, 4, 4)) * 2).astype(np.float32)
        (a,), (b,) = run(module, x), run(folded, x)
        worst = max(worst, np.abs(a - b).max() / step)
        np.testing.assert_allclose(a, _ort(model, x)[0], atol=step * 1.001, rtol=0)
    assert worst <= 1.001
    from compiler.backend import build

    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    exe = build(folded)
    np.testing.assert_array_equal(exe(x)[0], run(folded, x)[0])


def test_fold_qdq_leaves_what_it_cannot_fold():
    # a dequantize with a computed scale, and a sigmoid between dequantize and quantize
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
        helper.make_node("Sigmoid", ["d"], ["g"]),
        helper.make_node("QuantizeLinear", ["g", "s", "z"], ["y"]),
    ]
    model = _model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3])],
        [_t("z", np.uint8(7))],
    )
    module = from_onnx(model.SerializeToString())
    folded = passes.run(module, "fold-qdq").module
    assert _ops(folded) == _ops(module)


# ----- (f) the zoo: a QDQ-quantized CNN ------------------------------------------------------


def _quantized_cnn(tmp_path: Path) -> tuple[Path, float]:
    torch = pytest.importorskip("torch")
    quant = pytest.importorskip("onnxruntime.quantization")
    from torch import nn

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(16 * 4 * 4, 10)

        def forward(self, x):
            x = self.pool(torch.relu(self.conv1(x)))
            x = self.pool(torch.relu(self.conv2(x)))
            return self.fc(torch.flatten(x, 1))

    torch.manual_seed(0)
    float_path, q_path = tmp_path / "cnn.onnx", tmp_path / "cnn_qdq.onnx"
    torch.onnx.export(
        SmallCNN().eval(),
        (torch.randn(1, 3, 16, 16),),
        str(float_path),
        input_names=["x"],
        output_names=["y"],
        opset_version=13,
        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
        dynamo=False,
    )

    class Calibration(quant.CalibrationDataReader):
        def __init__(self):
            r = np.random.default_rng(0)
            shape = (1, 3, 16, 16)
            self.data = iter([{"x": r.standard_normal(shape).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    # reduce_range: 7-bit weights, as onnxruntime advises for x86 (its u8 x s8 kernels
    # saturate 16-bit pair sums with full-range weights, far from the ONNX semantics)
    quant.quantize_static(
        str(float_path),
        str(q_path),
        Calibration(),
        quant_format=quant.QuantFormat.QDQ,
        activation_type=quant.QuantType.QUInt8,
        weight_type=quant.QuantType.QInt8,
        per_channel=True,
        reduce_range=True,
    )
    y_scale = next(i for i in onnx.load(str(q_path)).graph.initializer if i.name == "y_scale")
    return q_path, float(numpy_helper.to_array(y_scale))


def _initializer_bytes(path: Path) -> int:
    return sum(numpy_helper.to_array(i).nbytes for i in onnx.load(str(path)).graph.initializer)


@pytest.fixture(scope="module")
def quantized_cnn(tmp_path_factory):
    return _quantized_cnn(tmp_path_factory.mktemp("qdq"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's TorchScript ONNX exporter
@pytest.mark.parametrize("fold_qdq", [True, False])
def test_qdq_cnn_explores_checks_clean_and_compiles(quantized_cnn, fold_qdq):
    import explorer

    path, step = quantized_cnn
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    prefix = "fold-qdq," if fold_qdq else ""
    trace = explorer.explore(str(path), [x], prefix + "default,legalize-ops,codegen")
    assert trace.failure is None
    imported = trace.imported.module
    before = _ops(imported)
    assert before["dequantize"] == 13 and before["quantize"] == 7 and before["conv2d"] == 2
    if fold_qdq:
        folded = trace["fold-qdq"].module
        after = _ops(folded)
        # left: the input's quantize, three requantizations, the output's dequantize
        assert after["dequantize"] == 1 and after["quantize"] == 4
        for n in folded["main"].bindings:
            if isinstance(n, Call) and n.op in ("conv2d", "linear", "max_pool2d", "flatten"):
                assert all(not (isinstance(a, Call) and a.op == "dequantize") for a in n.args)
    # the weights stay quantized through the pipeline: fold-constant leaves their dequantize
    # (or fold-qdq's widening cast) to run time, so no step grows the parameters
    file_bytes = _initializer_bytes(path)
    assert trace["codegen"].param_bytes <= 1.1 * file_bytes
    assert max(s.param_bytes for s in trace.steps if s.module is not None) <= 1.1 * file_bytes
    default = trace["default"].module
    weights = [c for c in default.constants().values() if c.name.endswith("weight_quantized")]
    assert len(weights) == 3 and all(c.data.dtype == np.int8 for c in weights)
    # clean with the default param-bloat threshold; one quantization step of the output
    other = rng.standard_normal((3, 3, 16, 16)).astype(np.float32)
    for inputs in ([x], [other]):
        report = trace.check(inputs, progress=False, rtol=0.0, atol=step * 1.001)
        assert report.numbers_checked
        assert [str(f) for f in report.findings] == []
    # the weights' dequantize / cast runs in the compiled code, fused with what follows it
    codegen = trace["codegen"].module["main"]
    kernels = [str(b.attrs.get("kernel")) for b in codegen.bindings if isinstance(b, Call)]
    widen = "cast" if fold_qdq else "dequantize"
    assert any(k.startswith(f"fused_{widen}_permute_dims") for k in kernels)  # fc's weight
    (got,) = trace["codegen"].executable()(other)
    (interpreted,) = run(trace["codegen"].module, other)
    np.testing.assert_array_equal(got, interpreted)
    want = _ort(onnx.load(str(path)), other)[0]
    assert np.abs(got - want).max() <= step * 1.001


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("fold_qdq", [True, False])
def test_folding_the_quantized_weights_is_an_option_and_is_flagged(quantized_cnn, fold_qdq):
    """``fold-constant{fold_qdq=true}`` folds the weights to f32 (as before): the check's
    param-bloat finding then names them at the fold-constant step."""
    import explorer

    path, step = quantized_cnn
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    spec = (
        "infer-types,canonicalize-bindings,dynamic-to-static,"
        "decompose-ops{ops=[linear,batch_norm]},fold-constant{fold_qdq=true},"
        "dead-code-elimination,fuse-ops"
    )
    trace = explorer.explore(str(path), [x], ("fold-qdq," if fold_qdq else "") + spec)
    assert trace.failure is None
    fold = trace["fold-constant"]
    assert fold.param_bytes > 3 * _initializer_bytes(path)
    report = trace.check([x], progress=False, rtol=0.0, atol=step * 1.001)
    assert [f.kind for f in report.findings] == ["param-bloat"]
    (finding,) = report.findings
    assert finding.step is fold
    grown = {name for name, *_ in finding.details["growth"]}
    for weight in ("conv1.weight_quantized", "conv2.weight_quantized", "fc.weight_quantized"):
        assert any(g.startswith(weight + ".") for g in grown), (weight, grown)
        assert weight in str(finding)


def test_a_huge_block_size_allocates_nothing_big():
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=1, block_size=1 << 40)
    module = from_onnx(_one_node(node, inits=[_t("s", np.full((2, 1), 0.5, np.float32))]))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run(module, x)[0], np.rint(x / 0.5).astype(np.uint8))


@pytest.mark.parametrize("fold", [False, True])
def test_quantized_modules_export_to_onnx_and_run_in_onnxruntime(fold):
    from compiler.export.onnx import to_onnx

    model, _ = _qdq_model(per_channel=True)
    module = from_onnx(model.SerializeToString())
    if fold:
        module = passes.run(module, "fold-qdq").module
    x = rng.standard_normal((3, 3, 4, 4)).astype(np.float32)
    exported = to_onnx(module)
    np.testing.assert_allclose(_ort(exported, x)[0], run(module, x)[0], rtol=1e-6, atol=1e-6)
