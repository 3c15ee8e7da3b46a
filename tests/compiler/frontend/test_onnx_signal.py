"""Signal ops (DFT, STFT, Hann/Hamming/Blackman windows, MelWeightMatrix): the node tests,
models built here against onnxruntime (and numpy's FFT), compiled models, and the errors of
malformed inputs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from compiler.frontend import FrontendError, from_onnx
from compiler.interpret import run
from tests.compiler.frontend.onnx_helpers import load_harness as _harness
from tests.compiler.frontend.onnx_helpers import ort_run as _ort

F32, F64, I64, I32 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT32
RNG = np.random.default_rng(20)


PASSING = [
    "test_dft",
    "test_dft_axis",
    "test_dft_axis_opset19",
    "test_dft_irfft",
    "test_dft_irfft_opset19",
    "test_dft_opset19",
    "test_dft_rfft",
    "test_dft_rfft_opset19",
    "test_stft",
    "test_stft_with_window",
    "test_hannwindow",
    "test_hannwindow_symmetric",
    "test_hammingwindow",
    "test_hammingwindow_symmetric",
    "test_blackmanwindow",
    "test_blackmanwindow_symmetric",
    "test_melweightmatrix",
]


def test_signal_node_tests_pass():
    harness = _harness()
    root = harness.node_test_dir()
    results = [harness.run_case(root / name) for name in PASSING]
    failing = [f"{r.name}: {r.status} {r.message}" for r in results if r.status != "passed"]
    assert not failing
    # test_dft_inverse(_opset19) expect float32 FFT rounding noise (1.9e-7 where the exact
    # value is 0) and compare to atol 1e-7: the float64 result differs by that noise only
    for name in ("test_dft_inverse", "test_dft_inverse_opset19"):
        r = harness.run_case(root / name)
        assert r.status == "passed" or "differs" in r.message, r.message


def make_model(nodes, inputs, outputs, opset=20, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _compare(got, expected, rtol=1e-4, atol=1e-4):
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def _complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]


def _pack(c):
    return np.stack([c.real, c.imag], axis=-1)


def _dft_model(shape, opset, attrs, axis=None, dft_length=None, out_shape=None, dtype=F32):
    inputs = ["x", "n" if dft_length is not None else ""]
    inits = []
    if dft_length is not None:
        inits.append(helper.make_tensor("n", I64, [], [dft_length]))
    if opset >= 20 and axis is not None:
        inputs.append("axis")
        inits.append(helper.make_tensor("axis", I64, [], [axis]))
    elif axis is not None:
        attrs = {**attrs, "axis": axis}
    node = helper.make_node("DFT", inputs, ["y"], **attrs)
    out_shape = out_shape or [f"d{i}" for i in range(len(shape))]
    return make_model([node], [_vi("x", dtype, shape)], [_vi("y", dtype, out_shape)], opset, inits)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize(
    "attrs, axis, dft_length, complex_input",
    [
        ({}, 1, None, False),
        ({}, 2, None, True),
        ({"onesided": 1}, 1, None, False),
        ({"inverse": 1}, 1, None, True),
        ({}, 1, 12, False),  # zero-padded
        ({}, 2, 4, True),  # truncated
        ({"inverse": 1, "onesided": 1}, 2, None, True),  # irfft
        ({"inverse": 1, "onesided": 1}, 1, 9, True),  # irfft of odd length
    ],
)
def test_dft_against_numpy_and_onnxruntime(opset, attrs, axis, dft_length, complex_input):
    shape = [2, 8, 5, 2 if complex_input else 1]
    x = RNG.standard_normal(shape).astype(np.float32)
    model = _dft_model(["batch", 8, 5, shape[-1]], opset, attrs, axis, dft_length)
    got = run(from_onnx(model), x)
    c = _complex(x).astype(np.complex128)
    a = axis
    if attrs.get("inverse") and attrs.get("onesided"):
        expected = np.fft.irfft(c, n=dft_length, axis=a)[..., None]
    elif attrs.get("inverse"):
        expected = _pack(np.fft.ifft(c, n=dft_length, axis=a))
    else:
        full = np.fft.fft(c, n=dft_length, axis=a)
        if attrs.get("onesided"):
            full = np.take(full, range(full.shape[a] // 2 + 1), axis=a)
        expected = _pack(full)
    _compare(got, [expected.astype(np.float32)])
    if not (attrs.get("inverse") and attrs.get("onesided")) and complex_input:
        _compare(got, _ort(model, x))  # onnxruntime's one-sided inverse differs in form


def test_dft_compiles_and_keeps_a_symbolic_batch():
    model = _dft_model(["batch", 16, 1], 20, {"onesided": 1}, axis=1)
    module = from_onnx(model)
    assert str(module.main.ret_type) == "f32[batch, 9, 2]"
    from compiler.backend import build

    exe = build(module)
    for batch in (1, 3):
        x = RNG.standard_normal((batch, 16, 1)).astype(np.float32)
        _compare(exe(x), run(module, x), rtol=1e-5, atol=1e-5)
        _compare(exe(x), _ort(model, x))


def test_dft_of_a_symbolic_signal_length():
    model = _dft_model([2, "n", 2], 20, {}, axis=1)
    module = from_onnx(model)
    for n in (5, 8):
        x = RNG.standard_normal((2, n, 2)).astype(np.float32)
        _compare(run(module, x), _ort(model, x))


def test_dft_with_a_computed_axis():
    node = helper.make_node("DFT", ["x", "", "axis"], ["y"])
    model = make_model(
        [node], [_vi("x", F32, [3, 4, 2]), _vi("axis", I64, [])], [_vi("y", F32, [3, 4, 2])]
    )
    module = from_onnx(model)
    x = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    for axis in (0, 1, -2, -3):
        expected = _pack(np.fft.fft(_complex(x).astype(np.complex128), axis=axis % 3))
        _compare(run(module, x, np.array(axis, np.int64)), [expected.astype(np.float32)])


def test_dft_errors():
    with pytest.raises(FrontendError, match="DFT axis 3 is not a signal axis"):
        from_onnx(_dft_model([2, 8, 5, 1], 17, {}, axis=3))
    with pytest.raises(FrontendError, match="the last dim must be 1 .real. or 2 .complex., got 3"):
        from_onnx(_dft_model([2, 8, 3], 17, {}, axis=1))
    with pytest.raises(FrontendError, match="dft_length -4 is out of range"):
        from_onnx(_dft_model([2, 8, 1], 20, {}, axis=1, dft_length=-4))


@pytest.mark.parametrize("with_window", [False, True])
def test_stft_against_onnxruntime(with_window):
    inputs = ["signal", "step", "window" if with_window else "", "length"]
    node = helper.make_node("STFT", inputs, ["y"], onesided=1)
    inits = [
        helper.make_tensor("step", I64, [], [6]),
        helper.make_tensor("length", I64, [], [16]),
    ]
    if with_window:
        window = np.hanning(16).astype(np.float32)
        inits.append(helper.make_tensor("window", F32, [16], window))
    model = make_model(
        [node],
        [_vi("signal", F32, ["batch", 64, 1])],
        [_vi("y", F32, ["batch", 9, 9, 2])],
        17,
        inits,
    )
    module = from_onnx(model)
    assert str(module.main.ret_type) == "f32[batch, 9, 9, 2]"
    x = RNG.standard_normal((2, 64, 1)).astype(np.float32)
    _compare(run(module, x), _ort(model, x))
    from compiler.backend import build

    _compare(build(module)(x), run(module, x), rtol=1e-5, atol=1e-5)


def test_stft_with_lengths_given_at_run_time():
    node = helper.make_node("STFT", ["signal", "step", "", "length"], ["y"], onesided=0)
    model = make_model(
        [node],
        [_vi("signal", F32, [1, 40, 2]), _vi("step", I64, []), _vi("length", I64, [])],
        [_vi("y", F32, ["a", "b", "c", "d"])],
        17,
    )
    module = from_onnx(model)
    x = RNG.standard_normal((1, 40, 2)).astype(np.float32)
    for step, length in ((4, 8), (7, 10)):
        args = (x, np.array(step, np.int64), np.array(length, np.int64))
        _compare(run(module, *args), _ort(model, *args))


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows_against_onnxruntime(op, periodic):
    node = helper.make_node(op, ["size"], ["y"], periodic=periodic, output_datatype=F64)
    model = make_model([node], [_vi("size", I32, [])], [_vi("y", F64, ["n"])], 17)
    module = from_onnx(model)
    for size in (1, 7, 16):
        arg = np.array(size, np.int32)
        if size == 1 and not periodic:
            continue  # 0 / 0: NaN in both, not compared
        _compare(run(module, arg), _ort(model, arg), rtol=1e-6, atol=1e-7)
    # a constant size gives a constant window, which compiles
    const = make_model(
        [
            helper.make_node(op, ["size"], ["w"], periodic=periodic),
            helper.make_node("Mul", ["x", "w"], ["y"]),
        ],
        [_vi("x", F32, [3, 10])],
        [_vi("y", F32, [3, 10])],
        17,
        [helper.make_tensor("size", I64, [], [10])],
    )
    from compiler.backend import build

    x = RNG.standard_normal((3, 10)).astype(np.float32)
    _compare(build(from_onnx(const))(x), _ort(const, x), rtol=1e-6, atol=1e-7)


def test_mel_weight_matrix_against_onnxruntime():
    node = helper.make_node(
        "MelWeightMatrix", ["bins", "dft", "rate", "low", "high"], ["y"], output_datatype=F32
    )
    model = make_model(
        [node],
        [
            _vi("bins", I64, []),
            _vi("dft", I64, []),
            _vi("rate", I64, []),
            _vi("low", F32, []),
            _vi("high", F32, []),
        ],
        [_vi("y", F32, ["a", "b"])],
        17,
    )
    module = from_onnx(model)
    for bins, dft, rate, low, high in ((8, 64, 16000, 0.0, 8000.0), (12, 128, 22050, 50, 9000)):
        args = [np.array(v, np.int64) for v in (bins, dft, rate)]
        args += [np.array(v, np.float32) for v in (low, high)]
        _compare(run(module, *args), _ort(model, *args), rtol=1e-5, atol=1e-6)


def test_window_sizes_are_validated():
    node = helper.make_node("HannWindow", ["size"], ["y"])
    model = make_model(
        [node], [], [_vi("y", F32, ["n"])], 17, [helper.make_tensor("size", I64, [], [1 << 40])]
    )
    with pytest.raises(FrontendError, match="size 1099511627776 is out of range"):
        from_onnx(model)


def test_a_long_dft_computes_its_matrices_at_run_time_with_static_shapes():
    model = _dft_model([1, 2048, 1], 17, {}, axis=1, out_shape=[1, 2048, 2])
    module = from_onnx(model)
    assert str(module.main.ret_type) == "f32[1, 2048, 2]"
    from compiler.ir import Constant

    operands = [a for b in module.main.bindings for a in getattr(b, "operands", ())]
    sizes = [a.data.size for a in operands if isinstance(a, Constant)]
    assert sizes and max(sizes) <= 1 << 20  # no 2048 x 2048 constant
    x = RNG.standard_normal((1, 2048, 1)).astype(np.float32)
    expected = _pack(np.fft.fft(x[..., 0].astype(np.float64), axis=1))
    _compare(run(module, x), [expected.astype(np.float32)], rtol=1e-4, atol=1e-3)
