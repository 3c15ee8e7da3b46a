"""Element types and bit ops through the ONNX frontend: uint16 / uint32 / uint64, BitShift,
BitwiseAnd / Or / Xor / Not, and Cast / CastLike to and from the low-precision storage types
(float8, float4, int4, int2) with ``saturate`` and ``round_mode``.

Each is checked against the ONNX node tests (bit-exact for the low-precision types), against
onnxruntime on models built here (with a symbolic batch dim), compiled with the LLVM backend
against the interpreter, and for the clear errors of what is not supported."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper

from compiler.backend import build
from compiler.errors import PasslensError
from compiler.frontend import UnsupportedOperatorError, from_onnx, to_onnx
from compiler.frontend.errors import FrontendError
from compiler.interpret import run
from compiler.ir.parser import parse
from compiler.ir.printer import print_module
from compiler.ir.types import DType
from tests.compiler.frontend.onnx_helpers import load_harness as _harness

rng = np.random.default_rng(17)

UNSIGNED = {TP.UINT16: np.uint16, TP.UINT32: np.uint32, TP.UINT64: np.uint64}
LOWP = {
    "float8e4m3fn": TP.FLOAT8E4M3FN,
    "float8e4m3fnuz": TP.FLOAT8E4M3FNUZ,
    "float8e5m2": TP.FLOAT8E5M2,
    "float8e5m2fnuz": TP.FLOAT8E5M2FNUZ,
    "float8e8m0": TP.FLOAT8E8M0,
    "float4e2m1": TP.FLOAT4E2M1,
    "int4": TP.INT4,
    "uint4": TP.UINT4,
    "int2": TP.INT2,
    "uint2": TP.UINT2,
}


@pytest.fixture(scope="module")
def harness():
    return _harness()


def _model(nodes, inputs, outputs, opset=21, check=False):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    if check:
        onnx.checker.check_model(model)
    return model


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _ints(shape, dtype, low=None):
    info = np.iinfo(dtype)
    lo = info.min if low is None else low
    return rng.integers(lo, info.max, size=shape, dtype=dtype, endpoint=True)


# ----- (a) the node tests ------------------------------------------------------------------


def _node_tests(harness, *patterns):
    root = harness.node_test_dir()
    return sorted(p for p in root.iterdir() if any(s in p.name for s in patterns))


NOT_MINE = ("quantizelinear", "dequantizelinear")  # other families' ops


def test_node_tests_of_the_family_pass(harness):
    dirs = _node_tests(
        harness,
        *("uint16", "uint32", "uint64", "bitshift", "bitwise", "bitcast", "test_cast", "castlike"),
    )
    dirs = [d for d in dirs if not any(s in d.name for s in NOT_MINE)]
    assert len(dirs) > 250
    failed = {}
    for d in dirs:
        r = harness.run_case(d)
        if r.status != "passed":
            failed[d.name] = r.message
    assert not failed, failed


def test_low_precision_casts_are_bit_exact(harness):
    """The coverage harness compares floats with a tolerance: here the bits must match."""
    from onnx import numpy_helper

    dirs = [
        d
        for d in _node_tests(harness, "test_cast", "castlike")
        if any(s in d.name.upper() for s in ("FLOAT8", "FLOAT4", "INT4", "INT2"))
    ]
    assert len(dirs) > 80
    for d in dirs:
        data = harness.load_case(d)
        model = onnx.ModelProto()
        model.ParseFromString(data.model)
        inputs = [numpy_helper.to_array(t) for t in data.inputs]
        (got,) = run(from_onnx(model), *inputs)
        expected = numpy_helper.to_array(data.outputs[0])
        assert got.dtype == expected.dtype, d.name
        assert np.array_equal(got.view(np.uint8), expected.view(np.uint8)), d.name


def test_string_ops_stay_unsupported(harness):
    for d in _node_tests(harness, "test_equal_string"):
        r = harness.run_case(d)
        assert r.status == "unsupported" and "STRING" in r.message, (d.name, r.message)


# ----- the dtypes themselves ---------------------------------------------------------------


def test_dtype_properties():
    for d in (DType.uint16, DType.uint32, DType.uint64):
        assert d.is_int and d.is_unsigned and not d.is_float and not d.is_storage_only
        assert d.numpy == np.dtype(d.name) and d.itemsize == d.numpy.itemsize
        assert DType.of(d.numpy) is d and DType.of(d.short) is d
    for name in LOWP:
        d = DType.of(name)
        assert d.is_storage_only and d.itemsize == 1 and d.numpy.itemsize == 1
        assert DType.of(d.numpy) is d and DType.of(d.short) is d
        assert d.is_float == name.startswith("float")
        assert d.is_int == (not name.startswith("float"))
        assert d.is_unsigned == name.startswith("uint")
    assert (DType.int4.bits, DType.uint2.bits, DType.float4e2m1.bits) == (4, 2, 4)
    assert DType.float8e8m0.numpy == np.dtype(ml_dtypes.float8_e8m0fnu)
    assert not DType.int8.is_unsigned and not DType.bool.is_unsigned
    assert DType.uint8.is_unsigned and not DType.bfloat16.is_storage_only


def test_new_dtypes_print_and_parse():
    src = """def @main(%x: u64[2], %y: f8e4m3fn[n, 3], %z: i4[4]) -> u64[2] {
  return %x
}"""
    module = parse(src)
    assert parse(print_module(module)).functions["main"].params[1].ty.dtype is DType.float8e4m3fn
    assert "u64[2]" in print_module(module) and "i4[4]" in print_module(module)


# ----- (b) against onnxruntime, (c) compiled against the interpreter -------------------------

_ARITH = ["Add", "Sub", "Mul", "Div", "Mod", "Max", "Min"]
_COMPARE = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]


def _binary_model(op, elem, out_elem=None, opset=21, check=False):
    x = helper.make_tensor_value_info("x", elem, ["batch", 5])
    y = helper.make_tensor_value_info("y", elem, [5])
    z = helper.make_tensor_value_info("z", out_elem or elem, None)
    return _model([helper.make_node(op, ["x", "y"], ["z"])], [x, y], [z], opset, check)


@pytest.mark.parametrize("elem", list(UNSIGNED), ids=lambda e: TP.DataType.Name(e))
def test_unsigned_arithmetic_matches_onnxruntime_and_compiles(elem):
    dtype = UNSIGNED[elem]
    x, y = _ints((3, 5), dtype, low=0), _ints((5,), dtype, low=1)
    x[0, :2] = np.iinfo(dtype).max  # wrap-around and values above the signed range
    y[:2] = [1, np.iinfo(dtype).max]
    for op in _ARITH + _COMPARE:
        model = _binary_model(op, elem, TP.BOOL if op in _COMPARE else None)
        module = from_onnx(model)
        (ours,) = run(module, x, y)
        if not (op in ("Max", "Min", "Div", "Mod") and elem == TP.UINT16):  # ort lacks them
            (theirs,) = _ort(model, {"x": x, "y": y})
            np.testing.assert_array_equal(ours, theirs, err_msg=op)
        (compiled,) = build(module)(x, y)
        np.testing.assert_array_equal(compiled, ours, err_msg=op)
        x2 = x[:1]  # another batch size through the symbolic dim
        np.testing.assert_array_equal(build(module)(x2, y)[0], run(module, x2, y)[0])


@pytest.mark.parametrize("elem", list(UNSIGNED), ids=lambda e: TP.DataType.Name(e))
def test_unsigned_casts_compile_like_the_interpreter(elem):
    dtype = UNSIGNED[elem]
    big = float(np.iinfo(dtype).max // 3)
    for src, npsrc in ((TP.FLOAT, np.float32), (TP.DOUBLE, np.float64)):
        x = rng.uniform(0, big, (4, 6)).astype(npsrc)
        x[0, :3] = [0.0, 0.99, 7.5]
        to_u = _model(
            [helper.make_node("Cast", ["x"], ["y"], to=elem)],
            [helper.make_tensor_value_info("x", src, ["n", 6])],
            [helper.make_tensor_value_info("y", elem, None)],
        )
        module = from_onnx(to_u)
        (ours,) = run(module, x)
        np.testing.assert_array_equal(ours, _ort(to_u, {"x": x})[0])
        np.testing.assert_array_equal(build(module)(x)[0], ours)
        u = _ints((4, 6), dtype, low=0)
        from_u = _model(
            [helper.make_node("Cast", ["x"], ["y"], to=src)],
            [helper.make_tensor_value_info("x", elem, ["n", 6])],
            [helper.make_tensor_value_info("y", src, None)],
        )
        module = from_onnx(from_u)
        (ours,) = run(module, u)
        np.testing.assert_array_equal(ours, _ort(from_u, {"x": u})[0])
        np.testing.assert_array_equal(build(module)(u)[0], ours)
    # to and from the other integer types (zero- vs sign-extension)
    for other, npo in ((TP.INT8, np.int8), (TP.INT64, np.int64), (TP.UINT8, np.uint8)):
        v = _ints((7,), npo)
        m = _model(
            [helper.make_node("Cast", ["x"], ["y"], to=elem)],
            [helper.make_tensor_value_info("x", other, [7])],
            [helper.make_tensor_value_info("y", elem, None)],
        )
        module = from_onnx(m)
        np.testing.assert_array_equal(build(module)(v)[0], run(module, v)[0])
        np.testing.assert_array_equal(run(module, v)[0], _ort(m, {"x": v})[0])


def test_unsigned_topk_pow_and_reductions_compile():
    x = _ints((3, 6), np.uint64, low=0)
    x[0, 0] = np.iinfo(np.uint64).max
    topk = _model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)],
        [helper.make_tensor_value_info("x", TP.UINT64, ["n", 6])],
        [
            helper.make_tensor_value_info("v", TP.UINT64, None),
            helper.make_tensor_value_info("i", TP.INT64, None),
        ],
    )
    topk.graph.initializer.append(helper.make_tensor("k", TP.INT64, [1], [3]))
    module = from_onnx(topk)
    ours = run(module, x)  # (onnxruntime has no uint64 TopK)
    np.testing.assert_array_equal(ours[0], -np.sort(-x.astype(object), axis=1)[:, :3])
    for a, b in zip(build(module)(x), ours, strict=True):
        np.testing.assert_array_equal(a, b)
    base = _ints((2, 5), np.uint32, low=0) % 50
    exp = _ints((5,), np.uint32, low=0) % 4
    power = _binary_model("Pow", TP.UINT32)
    module = from_onnx(power)
    (ours,) = run(module, base, exp)
    np.testing.assert_array_equal(ours, base**exp)
    np.testing.assert_array_equal(build(module)(base, exp)[0], ours)
    reduce = _model(
        [helper.make_node("ReduceMax", ["x"], ["y"], keepdims=0)],
        [helper.make_tensor_value_info("x", TP.UINT64, ["n", 6])],
        [helper.make_tensor_value_info("y", TP.UINT64, None)],
        opset=18,
    )
    module = from_onnx(reduce)
    np.testing.assert_array_equal(build(module)(x)[0], np.max(x))


_SHIFT_TYPES = {
    TP.UINT8: np.uint8,
    TP.UINT16: np.uint16,
    TP.UINT32: np.uint32,
    TP.UINT64: np.uint64,
    TP.INT8: np.int8,
    TP.INT32: np.int32,
    TP.INT64: np.int64,
}


@pytest.mark.parametrize("elem", list(_SHIFT_TYPES), ids=lambda e: TP.DataType.Name(e))
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(elem, direction):
    dtype = _SHIFT_TYPES[elem]
    bits = np.iinfo(dtype).bits
    x = _ints((3, bits + 3), dtype)
    low = -2 if np.iinfo(dtype).min < 0 else 0
    s = np.arange(low, bits + 3 + low).astype(dtype)  # every amount, and out of range ones
    model = _binary_model("BitShift", elem, opset=21)
    model.graph.node[0].attribute.append(helper.make_attribute("direction", direction))
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = bits + 3
    model.graph.input[1].type.tensor_type.shape.dim[0].dim_value = bits + 3
    module = from_onnx(model)
    (ours,) = run(module, x, s)
    from onnx.reference import ReferenceEvaluator

    (expected,) = ReferenceEvaluator(model).run(None, {"x": x, "y": s})
    np.testing.assert_array_equal(ours, expected)
    if elem in (TP.UINT8, TP.UINT32, TP.UINT64):  # the types onnxruntime's BitShift takes
        valid = s < bits
        (theirs,) = _ort(model, {"x": x, "y": s})
        np.testing.assert_array_equal(ours[:, valid], theirs[:, valid])
    np.testing.assert_array_equal(build(module)(x, s)[0], ours)
    exported = to_onnx(module)
    (back,) = _ort(exported, {i.name: v for i, v in zip(exported.graph.input, (x, s), strict=True)})
    np.testing.assert_array_equal(back, ours)


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"])
@pytest.mark.parametrize(
    "elem", [TP.INT8, TP.INT32, TP.UINT8, TP.UINT16, TP.UINT64], ids=lambda e: TP.DataType.Name(e)
)
def test_bitwise(op, elem):
    dtype = {TP.INT8: np.int8, TP.INT32: np.int32, TP.UINT8: np.uint8}.get(elem)
    dtype = dtype or UNSIGNED[elem]
    x, y = _ints((2, 3, 4), dtype), _ints((4,), dtype)
    if op == "BitwiseNot":
        model = _model(
            [helper.make_node(op, ["x"], ["z"])],
            [helper.make_tensor_value_info("x", elem, ["batch", 3, 4])],
            [helper.make_tensor_value_info("z", elem, None)],
            opset=18,
        )
        args, feeds, expected = (x,), {"x": x}, np.invert(x)
    else:
        model = _binary_model(op, elem, opset=18)
        model.graph.input[0].type.tensor_type.shape.CopyFrom(
            helper.make_tensor_type_proto(elem, ["batch", 3, 4]).tensor_type.shape
        )
        model.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 4
        fn = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or}.get(op, np.bitwise_xor)
        args, feeds, expected = (x, y), {"x": x, "y": y}, fn(x, y)
    module = from_onnx(model)
    (ours,) = run(module, *args)
    np.testing.assert_array_equal(ours, expected)
    if elem != TP.UINT16 or op == "BitwiseNot":  # (onnxruntime lacks uint16 And / Or / Xor)
        np.testing.assert_array_equal(ours, _ort(model, feeds)[0])
    np.testing.assert_array_equal(build(module)(*args)[0], ours)
    one = tuple(a[:1] if a.ndim == 3 else a for a in args)  # batch 1
    np.testing.assert_array_equal(build(module)(*one)[0], run(module, *one)[0])


def test_bitwise_export_round_trips():
    x, y = _ints((2, 5), np.int32), _ints((5,), np.int32)
    model = _model(
        [
            helper.make_node("BitwiseAnd", ["x", "y"], ["a"]),
            helper.make_node("BitwiseNot", ["a"], ["b"]),
            helper.make_node("BitwiseXor", ["b", "y"], ["z"]),
        ],
        [
            helper.make_tensor_value_info("x", TP.INT32, ["n", 5]),
            helper.make_tensor_value_info("y", TP.INT32, [5]),
        ],
        [helper.make_tensor_value_info("z", TP.INT32, None)],
        opset=18,
    )
    module = from_onnx(model)
    exported = to_onnx(module)
    names = [i.name for i in exported.graph.input]
    (back,) = _ort(exported, dict(zip(names, (x, y), strict=True)))
    np.testing.assert_array_equal(back, run(module, x, y)[0])
    assert {"BitwiseAnd", "BitwiseNot", "BitwiseXor"} <= {n.op_type for n in exported.graph.node}


# ----- low-precision casts against onnxruntime -------------------------------------------------

_SPECIAL = np.array([1000.0, -1000.0, 0.3, np.nan, 1e-3, 3.7, -2.2, np.inf, -np.inf, 448.0])


def _cast_model(to, saturate=None, opset=21, src=TP.FLOAT, round_mode=None):
    attrs = {} if saturate is None else {"saturate": saturate}
    if round_mode is not None:
        attrs["round_mode"] = round_mode
    nodes = [
        helper.make_node("Cast", ["x"], ["q"], to=to, **attrs),
        helper.make_node("Cast", ["q"], ["y"], to=TP.FLOAT),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", src, ["batch", 2])],
        [helper.make_tensor_value_info("y", TP.FLOAT, None)],
        opset,
    )


@pytest.mark.parametrize(
    "to", [TP.FLOAT8E4M3FN, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2, TP.FLOAT8E5M2FNUZ]
)
@pytest.mark.parametrize("saturate", [None, 1, 0])
def test_float8_casts_match_onnxruntime_and_export(to, saturate):
    x = np.concatenate([_SPECIAL, rng.standard_normal(30) * 100]).astype(np.float32).reshape(-1, 2)
    model = _cast_model(to, saturate)
    module = from_onnx(model)
    (ours,) = run(module, x)
    (theirs,) = _ort(model, {"x": x})
    np.testing.assert_array_equal(ours, theirs)
    exported = to_onnx(module, opset=21)
    (back,) = _ort(exported, {exported.graph.input[0].name: x})
    np.testing.assert_array_equal(back, ours)


def test_cast_saturate_clamps_and_keeps_nan():
    x = np.array([[1e6, -1e6], [np.inf, np.nan]], np.float32)
    sat = run(from_onnx(_cast_model(TP.FLOAT8E4M3FN, 1)), x)[0]
    np.testing.assert_array_equal(sat, [[448, -448], [448, np.nan]])
    raw = run(from_onnx(_cast_model(TP.FLOAT8E4M3FN, 0)), x)[0]
    assert np.isnan(raw).all()


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_float8e8m0_rounding_matches_the_onnx_reference(round_mode, saturate):
    from onnx.reference import ReferenceEvaluator

    x = np.concatenate([_SPECIAL, [3e38, 1.7e38, 1.5, 0.75, 0.0, 1e-40, -6.0, 2.0**127]])
    x = np.concatenate([x, rng.standard_normal(40) * 10.0 ** rng.integers(-30, 30, 40)])
    x = x.astype(np.float32).reshape(-1, 2)
    model = _cast_model(TP.FLOAT8E8M0, saturate, opset=24, round_mode=round_mode)
    (ours,) = run(from_onnx(model), x)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_array_equal(ours.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("name", ["int4", "uint4", "int2", "uint2", "float4e2m1"])
def test_sub_byte_casts_match_the_onnx_reference(name):
    from onnx.reference import ReferenceEvaluator

    x = (rng.standard_normal((8, 2)) * 4).astype(np.float32)
    model = _cast_model(LOWP[name], opset=25)
    (ours,) = run(from_onnx(model), x)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_array_equal(ours, expected)


def test_low_precision_initializers_are_read():
    q = np.array([1.5, -2.0, 448.0, 0.0], ml_dtypes.float8_e4m3fn)
    init = onnx.numpy_helper.from_array(q, "w")
    packed = onnx.numpy_helper.from_array(np.array([1, -3, 7], ml_dtypes.int4), "v")
    model = _model(
        [
            helper.make_node("Cast", ["w"], ["a"], to=TP.FLOAT),
            helper.make_node("Cast", ["v"], ["b"], to=TP.FLOAT),
        ],
        [],
        [
            helper.make_tensor_value_info("a", TP.FLOAT, None),
            helper.make_tensor_value_info("b", TP.FLOAT, None),
        ],
    )
    model.graph.initializer.extend([init, packed])
    a, b = run(from_onnx(model))
    np.testing.assert_array_equal(a, [1.5, -2.0, 448.0, 0.0])
    np.testing.assert_array_equal(b, [1, -3, 7])


# ----- (d) clear errors ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(LOWP))
def test_the_backend_refuses_low_precision_types_clearly(name):
    to = LOWP[name]
    opset = 25
    model = _cast_model(to, opset=opset)
    module = from_onnx(model)
    with pytest.raises(PasslensError, match=f"does not compile {name} "):
        build(module)


def test_bad_attributes_are_reported():
    model = _cast_model(TP.FLOAT8E8M0, 1, opset=24, round_mode="sideways")
    with pytest.raises(FrontendError, match="round_mode must be one of"):
        from_onnx(model)
    shift = _binary_model("BitShift", TP.UINT8)
    shift.graph.node[0].attribute.append(helper.make_attribute("direction", "UP"))
    with pytest.raises(FrontendError, match="direction must be LEFT or RIGHT"):
        from_onnx(shift)


def test_bitwise_on_floats_is_unsupported():
    model = _binary_model("BitwiseAnd", TP.FLOAT, opset=18)
    with pytest.raises(UnsupportedOperatorError, match="float32"):
        from_onnx(model, strict=True)


def test_cast_export_needs_a_new_enough_opset():
    module = from_onnx(_cast_model(TP.FLOAT8E4M3FN, 1))
    with pytest.raises(FrontendError, match="needs opset 19"):
        to_onnx(module, opset=18)


# ----- trace files keep the new dtypes -----------------------------------------------------------


@pytest.mark.parametrize("name", ["uint64", "float8e4m3fn", "float8e5m2", "int4", "float4e2m1"])
def test_trace_files_keep_the_new_dtypes(name, tmp_path):
    import explorer
    from compiler.ir import assert_structural_equal
    from explorer.store import load, save

    dtype = DType.of(name)
    values = np.linspace(-3, 3, 12) if not dtype.is_unsigned else np.arange(12) * 2**60
    w = np.asarray(values).astype(dtype.numpy).reshape(3, 4)
    text = f"""weights {{
  $w: {dtype.short}[3, 4]
}}
def @main(%x: {dtype.short}[3, 4]) -> {dtype.short}[3, 4] {{
  %y: {dtype.short}[3, 4] = add(%x, $w)
  return %y
}}"""
    trace = explorer.trace_from_module(parse(text, params={"w": w}), "")
    save(trace, tmp_path / "t.passlens")
    loaded = load(tmp_path / "t.passlens")
    got = loaded.imported.module.constants()["w"].data
    assert got.dtype == w.dtype and got.tobytes() == w.tobytes()
    assert_structural_equal(loaded.imported.module, trace.imported.module)


@pytest.mark.parametrize("elem", [TP.UINT32, TP.UINT64], ids=lambda e: TP.DataType.Name(e))
def test_unsigned_constants_above_the_signed_range_compile(elem):
    dtype = UNSIGNED[elem]
    top = np.iinfo(dtype).max
    c = np.array([top, 2 ** (np.iinfo(dtype).bits - 1) + 5, 3], dtype)
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "c"], ["y"]),
            helper.make_node("Less", ["y", "c"], ["z"]),
            helper.make_node("Div", ["x", "c"], ["w"]),
            helper.make_node("Mul", ["x", "s"], ["v"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", elem, [3])],
        [helper.make_tensor_value_info(n, TP.BOOL if n == "z" else elem, None) for n in "yzwv"],
        [onnx.numpy_helper.from_array(c, "c"), onnx.numpy_helper.from_array(dtype(top), "s")],
    )
    module = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    x = np.array([5, top, 7], dtype)
    ours = run(module, x)
    np.testing.assert_array_equal(ours[0], x + c)
    np.testing.assert_array_equal(ours[1], (x + c) < c)
    for got, want in zip(build(module)(x), ours, strict=True):
        np.testing.assert_array_equal(got, want)


# ----- BitCast -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dst", "values"),
    [
        (TP.FLOAT, TP.INT32, np.array([1.5, -0.0, np.inf, np.nan, 1e-40, -3.25], np.float32)),
        (TP.INT64, TP.DOUBLE, np.array([0, 1, -1, 4607182418800017408, 7, 9], np.int64)),
        (TP.UINT16, TP.INT16, np.array([0, 1, 65535, 32768, 7, 9], np.uint16)),
        (TP.BOOL, TP.UINT8, np.array([True, False, True, True, False, False])),
        (TP.FLOAT16, TP.UINT16, np.array([1, -2.5, 65504, np.inf, 0.1, 0], np.float16)),
    ],
)
def test_bitcast_reinterprets_and_compiles(src, dst, values):
    model = _model(
        [helper.make_node("BitCast", ["x"], ["y"], to=dst)],
        [helper.make_tensor_value_info("x", src, ["n", 3])],
        [helper.make_tensor_value_info("y", dst, None)],
        opset=26,
    )
    module = from_onnx(model)
    x = values.reshape(2, 3)
    (ours,) = run(module, x)
    want = x.view(helper.tensor_dtype_to_np_dtype(dst))
    assert ours.dtype == want.dtype
    np.testing.assert_array_equal(ours.view(np.uint8), want.view(np.uint8))
    (compiled,) = build(module)(x)
    np.testing.assert_array_equal(compiled.view(np.uint8), want.view(np.uint8))
    (one,) = build(module)(x[:1])  # another batch size through the symbolic dim
    np.testing.assert_array_equal(one.view(np.uint8), want[:1].view(np.uint8))


def test_bitcast_export_and_errors():
    x = np.array([[-1, 5, -128]], np.int8)
    model = _model(
        [helper.make_node("BitCast", ["x"], ["y"], to=TP.UINT8)],
        [helper.make_tensor_value_info("x", TP.INT8, ["n", 3])],
        [helper.make_tensor_value_info("y", TP.UINT8, None)],
        opset=26,
    )
    module = from_onnx(model)
    exported = to_onnx(module)  # a same-width integer bitcast is a wrapping Cast
    np.testing.assert_array_equal(
        _ort(exported, {exported.graph.input[0].name: x})[0], [[255, 5, 128]]
    )
    floats = from_onnx(
        _model(
            [helper.make_node("BitCast", ["x"], ["y"], to=TP.INT32)],
            [helper.make_tensor_value_info("x", TP.FLOAT, [3])],
            [helper.make_tensor_value_info("y", TP.INT32, None)],
            opset=26,
        )
    )
    with pytest.raises(FrontendError, match="needs opset 26"):
        to_onnx(floats)
    assert any(n.op_type == "BitCast" for n in to_onnx(floats, opset=26).graph.node)
    wider = _model(
        [helper.make_node("BitCast", ["x"], ["y"], to=TP.INT64)],
        [helper.make_tensor_value_info("x", TP.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TP.INT64, None)],
        opset=26,
    )
    with pytest.raises(FrontendError, match="widths differ"):
        from_onnx(wider)


@pytest.mark.parametrize(
    ("src", "values"),
    [
        (TP.UINT8, np.array([0, 200, 255, 17], np.uint8)),
        (TP.INT32, np.array([-100000, 300, 7, 1000001], np.int32)),
        (TP.INT64, np.array([10**9, 2**62 + 1, -7, 0], np.int64)),
        (TP.FLOAT8E5M2, np.array([57344, -3, 1e4, np.nan], ml_dtypes.float8_e5m2)),
        (TP.FLOAT8E4M3FN, np.array([1, -448, 3.5, 0], ml_dtypes.float8_e4m3fn)),
        (TP.BFLOAT16, np.array([1e5, -3, 250, np.inf], ml_dtypes.bfloat16)),
    ],
)
@pytest.mark.parametrize("to", [TP.FLOAT8E4M3FN, TP.FLOAT8E5M2FNUZ])
def test_saturating_casts_from_other_types_match_the_onnx_reference(src, values, to):
    from onnx.reference import ReferenceEvaluator

    model = _model(
        [helper.make_node("Cast", ["x"], ["y"], to=to)],
        [helper.make_tensor_value_info("x", src, [4])],
        [helper.make_tensor_value_info("y", to, None)],
    )
    (ours,) = run(from_onnx(model), values)
    (expected,) = ReferenceEvaluator(model).run(None, {"x": values})
    assert ours.dtype == expected.dtype
    np.testing.assert_array_equal(ours.view(np.uint8), expected.view(np.uint8))
