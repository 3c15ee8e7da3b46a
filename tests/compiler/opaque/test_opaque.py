"""The ``opaque`` op (compiler/ops/opaque.py): an op without a converter kept as it is, run by
torch or onnxruntime. Its text form, verification, running, and every pass treating it as a
barrier; legalize-ops, codegen, the build and to_onnx refuse it naming the op and where."""

# ruff: noqa: E501  (IR snippets keep their long lines)

from __future__ import annotations

import numpy as np
import pytest

from compiler import passes
from compiler.frontend import to_onnx
from compiler.interpret import InterpretError, run
from compiler.ir import Call, ParseError, parse, structural_equal, verify
from compiler.opaque import trusted_ops
from compiler.opaque.layout import literal, opaque_attrs, unescape
from tests.compiler.passes.test_preserve_results import LOSSY, SPECS

CUMMAX = """
def @main(%x: f32[4, 8], %w: f32[8, 8]) -> (f32[4, 8], i64[4, 8], f32[2]) {
  %a: f32[4, 8] = matmul(%x, %w)
  %b: f32[4, 8] = add(%a, const(f32[], 1.0))
  %m: (f32[4, 8], i64[4, 8]) = opaque(%b, framework="torch", target="aten.cummax.default", args=["%0", 1], pure=true, type="(f32[4, 8], i64[4, 8])")  loc(module="blocks.0.scan", op="aten.cummax.default")
  %v: f32[4, 8] = %m[0]
  %i: i64[4, 8] = %m[1]
  %r: f32[4, 8] = relu(%v)
  %c: f32[2] = opaque(const(f32[2], [1.0, 2.0]), framework="torch", target="aten.cumsum.default", args=["%0", 0], pure=true, type="f32[2]")
  %o: (f32[4, 8], i64[4, 8], f32[2]) = (%r, %i, %c)
  return %o
}
"""


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(
        np.float32
    )


def _count(module, op="opaque") -> int:
    return sum(
        1 for fn in module.functions.values() for n in fn.iter_nodes() if getattr(n, "op", "") == op
    )


@pytest.fixture(scope="module")
def module():
    return parse(CUMMAX)


# ----- text form, verifier ------------------------------------------------------------------------


def test_the_text_form_round_trips_and_reads_what_it_is_first(module):
    text = str(module)
    assert (
        'opaque(%b, framework="torch", target="aten.cummax.default", args=["%0", 1], pure=true, '
        'type="(f32[4, 8], i64[4, 8])")' in text
    )
    again = parse(text)
    assert structural_equal(module, again)
    assert str(again) == text


def test_the_layout_must_refer_to_each_input_once():
    bad = CUMMAX.replace('args=["%0", 1]', 'args=["%1", 1]')
    with pytest.raises(ParseError, match="refer to each of the 1 input"):
        parse(bad)
    twice = CUMMAX.replace('args=["%0", 1]', 'args=["%0", "%0"]')
    with pytest.raises(ParseError, match=r"refer to \[0, 0\]"):
        parse(twice)


@pytest.mark.parametrize(
    "target, message",
    [
        ("os.system", "not a torch op name"),
        ("__class__.x.default", "starts with '__'"),
        ("a.b.c; import os", "not a torch op name"),
    ],
)
def test_a_malformed_target_is_refused_when_read(target, message):
    with pytest.raises(ParseError, match=message):
        parse(CUMMAX.replace('"aten.cummax.default", args', f'"{target}", args'))


def test_a_type_that_is_not_a_type_is_refused():
    with pytest.raises(ParseError, match="is not a type"):
        parse(CUMMAX.replace('type="f32[2]"', 'type="f32[2"'))


def test_a_string_argument_starting_with_percent_is_escaped():
    assert literal("%x") == "%%x" and unescape("%%x") == "%x"
    assert literal("left") == "left" and unescape("%3") == 3


def test_the_verifier_accepts_it_and_the_call_keeps_the_recorded_type(module):
    verify(module)
    node = next(n for n in module.main.iter_nodes() if getattr(n, "op", "") == "opaque")
    assert node.inferred_type() == node.ty
    assert str(node.ty) == "(f32[4, 8], i64[4, 8])"


def test_an_opaque_call_may_take_no_input_and_a_dtype_argument():
    from compiler.ir import Function, Module, TensorType
    from compiler.ir.types import DType

    ty = TensorType((5,), "int64")
    attrs = opaque_attrs("torch", "aten.arange.default", ty, [5], {"dtype": DType.int64})
    call = Call("opaque", [], attrs)
    module = Module({"main": Function([], [call], call)})
    assert 'kwargs=[["dtype", i64]]' in str(module)
    assert structural_equal(parse(str(module)), module)
    (out,) = run(module)
    np.testing.assert_array_equal(out, np.arange(5))


# ----- running -----------------------------------------------------------------------------------


def test_the_interpreter_runs_it_with_torch(module):
    x, w = _inputs()
    r, i, c = run(module, x, w)
    b = x @ w + 1
    np.testing.assert_allclose(r, np.maximum(np.maximum.accumulate(b, axis=1), 0), rtol=1e-5)
    assert i.dtype == np.int64 and i.shape == (4, 8)
    np.testing.assert_array_equal(c, [1.0, 3.0])


def test_a_value_that_is_not_of_the_recorded_type_is_an_error():
    text = CUMMAX.replace('type="f32[2]"', 'type="f64[2]"').replace("%c: f32[2]", "%c: f64[2]")
    text = text.replace("f32[2]) {", "f64[2]) {").replace("f32[2]) = (", "f64[2]) = (")
    with pytest.raises(InterpretError, match=r"gave float32 array of shape \(2,\), not the f64"):
        run(parse(text), *_inputs())


def test_a_custom_op_this_process_has_not_registered_says_to_import_its_library():
    text = CUMMAX.replace("aten.cumsum.default", "passlens_not_loaded.scale.default")
    with pytest.raises(InterpretError, match="refused to run opaque op passlens_not_loaded"):
        run(parse(text), *_inputs())  # untrusted: refused before it is looked up
    with trusted_ops(["passlens_not_loaded.scale"]):  # trusted: looked up, and not there
        with pytest.raises(InterpretError, match="import the Python library that registers"):
            run(parse(text), *_inputs())


def test_a_name_that_is_no_torch_operator_runs_nothing():
    text = CUMMAX.replace("aten.cumsum.default", "builtins.eval.default")
    with pytest.raises(InterpretError, match="refused to run opaque op builtins.eval.default"):
        run(parse(text), *_inputs())
    with trusted_ops(["builtins.eval"]), pytest.raises(
        InterpretError, match="no operator builtins.eval"
    ):  # trusted, it is still only looked up under torch.ops
        run(parse(text), *_inputs())
    with trusted_ops(["aten.cumsum"]), pytest.raises(InterpretError, match="no overload 'nope'"):
        run(parse(CUMMAX.replace("aten.cumsum.default", "aten.cumsum.nope")), *_inputs())


def test_torch_gets_its_dtype_and_literal_arguments():
    text = """
def @main(%x: f32[3]) -> f64[3] {
  %c: f64[3] = opaque(%x, framework="torch", target="aten.cumsum.default", args=["%0", 0], kwargs=[["dtype", f64]], pure=true, type="f64[3]")
  return %c
}"""
    (out,) = run(parse(text), np.array([1, 2, 3], np.float32))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1, 3, 6])
    side = """
def @main(%s: f32[4], %v: f32[2]) -> i64[2] {
  %c: i64[2] = opaque(%s, %v, framework="torch", target="aten.searchsorted.Tensor", args=["%0", "%1"], kwargs=[["side", "right"]], pure=true, type="i64[2]")
  return %c
}"""
    s = np.array([1, 2, 2, 3], np.float32)
    (out,) = run(parse(side), s, np.array([2, 0], np.float32))
    np.testing.assert_array_equal(out, np.searchsorted(s, [2, 0], side="right"))


def test_an_in_place_op_does_not_write_into_the_interpreters_values():
    text = """
def @main(%x: f32[3]) -> (f32[3], f32[3]) {
  %a: f32[3] = opaque(%x, framework="torch", target="aten.exp_.default", args=["%0"], pure=true, type="f32[3]")
  %t: (f32[3], f32[3]) = (%a, %x)
  return %t
}"""
    x = np.array([0.0, 1.0, 2.0], np.float32)
    a, same = run(parse(text), x)
    np.testing.assert_allclose(a, np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(same, [0.0, 1.0, 2.0])


ROI = """
def @main(%x: f32[1, 3, 8, 8], %rois: f32[2, 5]) -> f32[2, 3, 2, 2] {
  %p: f32[2, 3, 2, 2] = opaque(%x, %rois, framework="onnx", target="ai.onnx::MaxRoiPool", args=["%0", "%1"], kwargs=[["pooled_shape", [2, 2]], ["spatial_scale", 1.0]], opset=17, pure=true, type="f32[2, 3, 2, 2]")
  return %p
}"""


def test_an_onnx_opaque_op_runs_in_onnxruntime_as_a_one_node_model():
    import onnxruntime as ort
    from onnx import TensorProto, helper

    x = np.random.default_rng(1).random((1, 3, 8, 8)).astype(np.float32)
    rois = np.array([[0, 0, 0, 4, 4], [0, 2, 2, 7, 7]], np.float32)
    (got,) = run(parse(ROI), x, rois)
    node = helper.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=[2, 2])
    vi = helper.make_tensor_value_info
    g = helper.make_graph(
        [node],
        "g",
        [vi("x", TensorProto.FLOAT, None), vi("r", TensorProto.FLOAT, None)],
        [vi("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    (want,) = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x, "r": rois})
    np.testing.assert_array_equal(got, want)


RNN_H = """
def @main(%x: f32[3, 1, 2], %w: f32[1, 4, 2], %r: f32[1, 4, 4]) -> f32[1, 1, 4] {
  %h: f32[1, 1, 4] = opaque(%x, %w, %r, framework="onnx", target="ai.onnx::RNN", args=["%0", "%1", "%2"], kwargs=[["hidden_size", 4]], opset=17, outputs=[1], pure=true, type="f32[1, 1, 4]")
  return %h
}"""

LSTM_Y_C = """
def @main(%x: f32[3, 1, 2], %w: f32[1, 16, 2], %r: f32[1, 16, 4]) -> (f32[3, 1, 1, 4], f32[1, 1, 4]) {
  %t: (f32[3, 1, 1, 4], f32[1, 1, 4]) = opaque(%x, %w, %r, framework="onnx", target="ai.onnx::LSTM", args=["%0", "%1", "%2"], kwargs=[["hidden_size", 4]], opset=17, outputs=[0, 2], pure=true, type="(f32[3, 1, 1, 4], f32[1, 1, 4])")
  return %t
}"""


def _onnx_run(op: str, x, w, r, outputs: list[str]):
    """onnxruntime on the one ``op`` node with its outputs named as ``outputs`` ("" unused)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node(op, ["x", "w", "r"], outputs, hidden_size=4)
    vi = helper.make_tensor_value_info
    g = helper.make_graph(
        [node],
        "g",
        [vi(n, TensorProto.FLOAT, None) for n in ("x", "w", "r")],
        [vi(n, TensorProto.FLOAT, None) for n in outputs if n],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return ort.InferenceSession(m.SerializeToString()).run(None, {"x": x, "w": w, "r": r})


def test_an_onnx_opaque_op_gives_the_outputs_of_its_node_it_keeps():
    """``outputs`` names the positions of the node's outputs the op gives: an RNN keeping only
    output 1 (the last hidden state) gives that, not output 0 (every step's); an LSTM keeping
    outputs 0 and 2 gives Y and the cell state, not the hidden state."""
    pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 1, 2)).astype(np.float32)
    w = rng.standard_normal((1, 4, 2)).astype(np.float32)
    r = (0.5 * rng.standard_normal((1, 4, 4))).astype(np.float32)
    (h,) = run(parse(RNN_H), x, w, r)
    (want,) = _onnx_run("RNN", x, w, r, ["", "h"])
    np.testing.assert_array_equal(h, want)
    state = np.zeros((1, 4), np.float32)
    for t in range(3):  # the last hidden state, by hand
        state = np.tanh(x[t] @ w[0].T + state @ r[0].T)
    np.testing.assert_allclose(h[0], state, rtol=1e-5, atol=1e-6)

    w = rng.standard_normal((1, 16, 2)).astype(np.float32)
    r = (0.5 * rng.standard_normal((1, 16, 4))).astype(np.float32)
    y, c = run(parse(LSTM_Y_C), x, w, r)
    want_y, want_h, want_c = _onnx_run("LSTM", x, w, r, ["y", "h", "c"])
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(c, want_c)
    assert not np.array_equal(c, want_h)  # the cell state is not the hidden state


def test_an_onnx_op_onnxruntime_does_not_know_fails_clearly():
    text = ROI.replace("ai.onnx::MaxRoiPool", "com.example::NoSuchOp")
    args = np.zeros((1, 3, 8, 8), np.float32), np.zeros((2, 5), np.float32)
    with pytest.raises(InterpretError, match="refused to run opaque op com.example::NoSuchOp"):
        run(parse(text), *args)
    with trusted_ops(["com.example::NoSuchOp"]), pytest.raises(
        InterpretError, match="onnxruntime cannot run com.example::NoSuchOp"
    ):
        run(parse(text), *args)


# ----- passes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [*SPECS, "default"])
def test_every_pass_leaves_it_as_it_is_and_keeps_the_results(spec, module):
    result = passes.run(module, spec, verify_each=True)
    assert result.ok, result.failure and result.failure.traceback
    verify(result.module)
    assert _count(result.module) == 2, spec
    x, w = _inputs()
    want, got = run(module, x, w), run(result.module, x, w)
    tol = LOSSY.get(spec, 1e-5) * 2
    for g, e in zip(got, want, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=spec)


def test_fold_constant_does_not_run_it_on_constants(module):
    after = passes.run(module, "fold-constant").module
    c = after.main.output.fields[2]
    assert isinstance(c, Call) and c.op == "opaque"


def test_convert_dtype_runs_it_on_its_recorded_dtype_between_casts(module):
    after = passes.run(module, "convert-dtype{dtype=float16}").module
    node = next(n for n in after.main.iter_nodes() if getattr(n, "op", "") == "opaque")
    assert node.args[0].ty.dtype.name == "float32"
    assert isinstance(node.args[0], Call) and node.args[0].op == "cast"


def test_dce_drops_an_unused_pure_one_and_keeps_an_impure_one():
    text = """
def @main(%x: f32[3]) -> f32[3] {
  %a: f32[3] = opaque(%x, framework="torch", target="aten.cumsum.default", args=["%0", 0], pure=PURE, type="f32[3]")
  %r: f32[3] = relu(%x)
  return %r
}"""
    pure = passes.run(parse(text.replace("PURE", "true")), "dead-code-elimination").module
    assert _count(pure) == 0
    impure = passes.run(parse(text.replace("PURE", "false")), "dead-code-elimination").module
    assert _count(impure) == 1


def test_compiled_code_calls_it_on_the_host_between_the_kernels(module, tmp_path):
    """legalize-ops leaves it (as it leaves nonzero); the executable calls torch for it."""
    from compiler import build
    from compiler.backend.build import load

    result = passes.run(module, "default,legalize-ops{strict=true},codegen")
    assert result.ok, result.failure and result.failure.error
    assert _count(result.module) == 2 and _count(result.module, "call_lowered") >= 2
    x, w = _inputs()
    want = run(module, x, w)
    executable = build(module)
    path = tmp_path / "cummax.passlens-exe"
    executable.export(path)
    for got in (run(result.module, x, w), executable(x, w), load(path)(x, w)):
        for g, e in zip(got, want, strict=True):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_compiled_code_checks_what_the_host_call_gives(module):
    from compiler import build
    from compiler.backend.build import BuildError

    wrong = CUMMAX.replace(
        'target="aten.cumsum.default", args=["%0", 0]',
        'target="aten.cumsum.default", args=["%0", 0], kwargs=[["dtype", f64]]',
    )
    executable = build(parse(wrong))
    with pytest.raises(
        BuildError,
        match=r"aten.cumsum.default gave a value that is not of its recorded type f32\[2\]",
    ):
        executable(*_inputs())


def test_to_onnx_refuses_an_opaque_torch_op_by_name(module):
    with pytest.raises(Exception, match="opaque op aten.cummax.default .* cannot be exported"):
        to_onnx(module)


def test_a_huge_result_is_refused_before_torch_allocates_it():
    """The arguments come from an untrusted file: sized on fake tensors first, never run."""
    text = """
def @main() -> f32[1] {
  %a: f32[1] = opaque(framework="torch", target="aten.full.default", args=[[100000, 100000], 1.0], pure=true, type="f32[1]")
  return %a
}"""
    with pytest.raises(InterpretError, match=r"would give 40,000,000,000 bytes .* it was not run"):
        run(parse(text))


def test_a_huge_onnx_result_is_refused_before_onnxruntime_allocates_it():
    text = """
def @main() -> f32[1] {
  %a: f32[1] = opaque(const(i64[2], [100000, 100000]), framework="onnx", target="ai.onnx::ConstantOfShape", args=["%0"], opset=17, pure=true, type="f32[1]")
  return %a
}"""
    with pytest.raises(InterpretError, match=r"would give 40,000,000,000 bytes .* it was not run"):
        run(parse(text))
