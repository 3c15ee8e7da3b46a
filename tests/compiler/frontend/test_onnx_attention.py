"""The transformer family (issue #17): Attention (opsets 23-25), RotaryEmbedding, SwiGLU,
TensorScatter, CausalConvWithState, LinearAttention and ai.onnx.preview.FlexAttention (its
score_mod / prob_mod graphs inlined), converted by composing IR ops.

- their ONNX node tests pass (one known fp16 rounding failure);
- models built here with onnx.helper agree with onnxruntime (ONNX's reference implementation
  for SwiGLU, which onnxruntime lacks), with symbolic batch and sequence dims kept symbolic;
- compiled with ``compiler.backend.build`` they agree with the interpreter, Attention also
  with a symbolic sequence length run at two lengths;
- invalid and unsupported forms are reported clearly.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from compiler.frontend import UnsupportedOperatorError, from_onnx  # noqa: E402
from compiler.frontend.onnx_frontend import OnnxImportError  # noqa: E402
from compiler.interpret import run  # noqa: E402
from compiler.ir.nodes import Call  # noqa: E402
from tests.compiler.frontend.onnx_helpers import load_harness as _harness  # noqa: E402
from tests.compiler.frontend.onnx_helpers import ort_run as _ort  # noqa: E402
from tests.compiler.frontend.onnx_helpers import round_trip_problem  # noqa: E402

F, B = TensorProto.FLOAT, TensorProto.BOOL
rng = np.random.default_rng(0)

# ----- (a) the ONNX node tests ---------------------------------------------------------------

FAMILIES = {  # name prefix -> the least number of its node tests that pass
    "test_attention_": 185,
    "test_rotary_embedding": 16,
    "test_swiglu": 6,
    "test_tensorscatter": 3,
    "test_causal_conv_with_state": 26,
    "test_linear_attention_": 14,
    "test_flexattention": 22,
}
KNOWN_FAILURES = {
    # the function body's fp16 Softmax (an IR softmax, rounded once) vs the reference's
    # step-by-step fp16 softmax: 2 fp16 ulps apart (rtol 1e-3). The converter of the op
    # itself computes a 16-bit softmax step by step and passes.
    "test_attention_4d_causal_fp16_expanded",
}


@pytest.fixture(scope="module")
def harness():
    h = _harness()
    if not (h.node_test_dir() / "test_attention_4d").exists():
        pytest.skip("no ONNX node test data")
    return h


@pytest.mark.parametrize("prefix", sorted(FAMILIES))
def test_node_tests_pass(harness, prefix):
    root = harness.node_test_dir()
    names = sorted(p.name for p in root.iterdir() if p.name.startswith(prefix))
    passed, problems = 0, []
    for name in names:
        result = harness.run_case(root / name)
        if result.status == "passed":
            passed += 1
        elif name not in KNOWN_FAILURES and not (
            # the expanded LinearAttention tests use Scan, another family's op
            prefix == "test_linear_attention_" and name.endswith("_expanded")
        ):
            problems.append(f"{name}: {result.status} {result.message}")
    assert not problems, problems
    assert passed >= FAMILIES[prefix], (passed, names)


# ----- (b, c) models built here vs onnxruntime, and compiled ---------------------------------


def _model(nodes, inputs, outputs, opset):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _reference(model, *args):
    from onnx.reference import ReferenceEvaluator

    names = [i.name for i in model.graph.input]
    return ReferenceEvaluator(model).run(None, dict(zip(names, args, strict=True)))


def _check(model, *args, reference=_ort, compile_too=True, rtol=1e-5, atol=1e-5):
    """The interpreter agrees with ``reference`` and the compiled module with the
    interpreter; returns the module."""
    module = from_onnx(model.SerializeToString())
    got = run(module, *args)
    want = reference(model, *args)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    if compile_too:
        from compiler.backend import build

        exe = build(module)
        for g, c in zip(got, exe(*args), strict=True):
            assert g.dtype == c.dtype and g.shape == c.shape
            np.testing.assert_allclose(g, c, rtol=1e-5, atol=1e-5)
    return module


def _f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _dims(module, i):
    return [str(d) for d in module["main"].params[i].ty.shape]


def _ops(module):
    return {n.op for n in module["main"].bindings if isinstance(n, Call)}


def test_attention_4d_causal_mask_and_kv_cache_with_symbolic_batch_and_sequence():
    """A decoder step: a bool mask, the KV cache grown by a symbolic number of new tokens,
    bottom-right causal masking; present_key / present_value keep the symbolic dims."""
    node = helper.make_node(
        "Attention",
        ["q", "k", "v", "mask", "pk", "pv"],
        ["y", "present_k", "present_v"],
        is_causal=1,
    )
    model = _model(
        [node],
        [
            _vi("q", F, ["batch", 4, "seq", 8]),
            _vi("k", F, ["batch", 4, "seq", 8]),
            _vi("v", F, ["batch", 4, "seq", 6]),
            _vi("mask", B, ["seq", "total"]),
            _vi("pk", F, ["batch", 4, "past", 8]),
            _vi("pv", F, ["batch", 4, "past", 6]),
        ],
        [_vi("y", F, None), _vi("present_k", F, None), _vi("present_v", F, None)],
        opset=23,
    )
    module = None
    for batch, seq, past in ((1, 3, 2), (2, 1, 5)):
        mask = rng.random((seq, past + seq)) > 0.3
        mask[:, 0] = True  # every query keeps one key: onnxruntime gives NaN for empty rows
        args = (
            _f32(batch, 4, seq, 8),
            _f32(batch, 4, seq, 8),
            _f32(batch, 4, seq, 6),
            mask,
            _f32(batch, 4, past, 8),
            _f32(batch, 4, past, 6),
        )
        module = _check(model, *args)
    assert _dims(module, 0) == ["batch", "4", "seq", "8"]
    outs = module["main"].output.fields
    assert [str(d) for d in outs[0].ty.shape] == ["batch", "4", "seq", "6"]
    assert [str(d) for d in outs[1].ty.shape] == ["batch", "4", "past + seq", "8"]
    assert {"matmul", "softmax", "where", "concat"} <= _ops(module)
    assert "scaled_dot_product_attention" not in _ops(module)


def test_attention_3d_gqa_float_mask_softcap_scale_and_qk_output():
    node = helper.make_node(
        "Attention",
        ["q", "k", "v", "mask"],
        ["y", "", "", "qk"],
        q_num_heads=6,
        kv_num_heads=2,
        scale=0.3,
        softcap=4.0,
        qk_matmul_output_mode=0,
    )
    model = _model(
        [node],
        [
            _vi("q", F, ["batch", 5, 24]),
            _vi("k", F, ["batch", 7, 8]),
            _vi("v", F, ["batch", 7, 10]),
            _vi("mask", F, [5, 7]),
        ],
        [_vi("y", F, None), _vi("qk", F, None)],
        opset=23,
    )
    for batch in (1, 3):
        module = _check(
            model, _f32(batch, 5, 24), _f32(batch, 7, 8), _f32(batch, 7, 10), _f32(5, 7)
        )
    assert str(module["main"].output.fields[0].ty.shape[0]) == "batch"
    assert "repeat" in _ops(module)


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_attention_qk_matmul_output_modes_match_the_reference(mode):
    node = helper.make_node(
        "Attention",
        ["q", "k", "v", "mask"],
        ["y", "", "", "qk"],
        qk_matmul_output_mode=mode,
        softcap=3.0,
        is_causal=1,
    )
    model = _model(
        [node],
        [
            _vi("q", F, [2, 2, 3, 4]),
            _vi("k", F, [2, 2, 5, 4]),
            _vi("v", F, [2, 2, 5, 4]),
            _vi("mask", F, [3, 5]),
        ],
        [_vi("y", F, None), _vi("qk", F, None)],
        opset=23,
    )
    args = (_f32(2, 2, 3, 4), _f32(2, 2, 5, 4), _f32(2, 2, 5, 4), _f32(3, 5))
    _check(model, *args, reference=_reference)


def test_attention_window_and_nonpad_kv_seqlen_against_onnxruntime():
    """Opset 25's sliding window with an external cache (nonpad_kv_seqlen, a per-batch
    causal frontier)."""
    node = helper.make_node(
        "Attention",
        ["q", "k", "v", "", "", "", "nonpad"],
        ["y"],
        is_causal=1,
        left_window_size=2,
    )
    model = _model(
        [node],
        [
            _vi("q", F, [2, 2, 2, 8]),
            _vi("k", F, [2, 2, 6, 8]),
            _vi("v", F, [2, 2, 6, 8]),
            _vi("nonpad", TensorProto.INT64, [2]),
        ],
        [_vi("y", F, None)],
        opset=25,
    )
    args = (_f32(2, 2, 2, 8), _f32(2, 2, 6, 8), _f32(2, 2, 6, 8), np.array([4, 6], np.int64))
    _check(model, *args, reference=_reference)


def test_attention_compiles_with_a_symbolic_sequence_length():
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)
    model = _model(
        [node],
        [
            _vi("q", F, [1, 2, "seq", 8]),
            _vi("k", F, [1, 2, "seq", 8]),
            _vi("v", F, [1, 2, "seq", 8]),
        ],
        [_vi("y", F, None)],
        opset=23,
    )
    from compiler.backend import build

    module = from_onnx(model.SerializeToString())
    assert _dims(module, 0) == ["1", "2", "seq", "8"]
    exe = build(module)
    for seq in (1, 4, 9):
        args = (_f32(1, 2, seq, 8), _f32(1, 2, seq, 8), _f32(1, 2, seq, 8))
        (want,) = _ort(model, *args)
        (got,) = run(module, *args)
        (compiled,) = exe(*args)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(compiled, got, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_with_position_ids_and_symbolic_dims(interleaved):
    node = helper.make_node(
        "RotaryEmbedding",
        ["x", "cos", "sin", "pos"],
        ["y"],
        interleaved=interleaved,
        rotary_embedding_dim=4,
        num_heads=2,
    )
    model = _model(
        [node],
        [
            _vi("x", F, ["batch", "seq", 16]),
            _vi("cos", F, [20, 2]),
            _vi("sin", F, [20, 2]),
            _vi("pos", TensorProto.INT64, ["batch", "seq"]),
        ],
        [_vi("y", F, None)],
        opset=23,
    )
    angles = rng.random((20, 2)) * 3
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    for batch, seq in ((1, 3), (2, 5)):
        pos = rng.integers(0, 20, (batch, seq)).astype(np.int64)
        module = _check(model, _f32(batch, seq, 16), cos, sin, pos)
    assert _dims(module, 0) == ["batch", "seq", "16"]
    assert [str(d) for d in module["main"].output.ty.shape] == ["batch", "seq", "16"]


def test_swiglu_matches_the_reference():
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"], alpha=1.5)
    model = _model([node], [_vi("a", F, ["n", 8]), _vi("b", F, ["n", 8])], [_vi("y", F, None)], 28)
    for n in (1, 4):
        _check(model, _f32(n, 8), _f32(n, 8), reference=_reference)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_updates_a_kv_cache(mode):
    node = helper.make_node("TensorScatter", ["cache", "update", "w"], ["y"], mode=mode)
    model = _model(
        [node],
        [
            _vi("cache", F, ["batch", 2, 6, 4]),
            _vi("update", F, ["batch", 2, "new", 4]),
            _vi("w", TensorProto.INT64, ["batch"]),
        ],
        [_vi("y", F, None)],
        opset=24,
    )
    for batch, new in ((1, 2), (3, 1)):
        w = rng.integers(0, 6 - new + 1 if mode == "linear" else 6, batch).astype(np.int64)
        module = _check(model, _f32(batch, 2, 6, 4), _f32(batch, 2, new, 4), w)
    assert "scatter_elements" in _ops(module)


@pytest.mark.parametrize("past", [False, True])
def test_causal_conv_with_state(past):
    ins = ["x", "w", "b"] + (["state"] if past else [])
    node = helper.make_node("CausalConvWithState", ins, ["y", "present"], activation="silu")
    inputs = [_vi("x", F, ["batch", 4, "len"]), _vi("w", F, [4, 1, 3]), _vi("b", F, [4])]
    if past:
        inputs.append(_vi("state", F, ["batch", 4, 2]))
    model = _model([node], inputs, [_vi("y", F, None), _vi("present", F, None)], opset=27)
    for batch, length in ((1, 5), (2, 1)):
        args = [_f32(batch, 4, length), _f32(4, 1, 3), _f32(4)]
        if past:
            args.append(_f32(batch, 4, 2))
        module = _check(model, *args)
    assert _dims(module, 0) == ["batch", "4", "len"]


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
def test_linear_attention_update_rules(rule):
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    ins = ["q", "k", "v", "state", "decay" if gated else "", "beta" if delta else ""]
    node = helper.make_node(
        "LinearAttention",
        ins,
        ["y", "present"],
        q_num_heads=4,
        kv_num_heads=2,
        update_rule=rule,
    )
    inputs = [
        _vi("q", F, ["batch", 3, 16]),
        _vi("k", F, ["batch", 3, 8]),
        _vi("v", F, ["batch", 3, 6]),
        _vi("state", F, ["batch", 2, 4, 3]),
    ]
    if gated:
        inputs.append(_vi("decay", F, ["batch", 3, 8]))
    if delta:
        inputs.append(_vi("beta", F, ["batch", 3, 2]))
    model = _model([node], inputs, [_vi("y", F, None), _vi("present", F, None)], opset=27)
    for batch in (1, 2):
        args = [_f32(batch, 3, 16), _f32(batch, 3, 8) / 3, _f32(batch, 3, 6), _f32(batch, 2, 4, 3)]
        if gated:
            args.append(-rng.random((batch, 3, 8)).astype(np.float32))
        if delta:
            args.append(rng.random((batch, 3, 2)).astype(np.float32))
        module = _check(model, *args, rtol=1e-4, atol=1e-4)
    assert _dims(module, 0) == ["batch", "3", "16"]


def test_flex_attention_with_a_causal_score_mod_and_a_symbolic_sequence():
    """score_mod builds a causal mask from Shape / Range of the scores: inlined, it keeps the
    symbolic sequence length, and the compiled build agrees at two lengths."""
    consts = {
        "two": np.array(2, np.int64),
        "three": np.array(3, np.int64),
        "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64),
        "col": np.array([-1, 1], np.int64),
        "neg_inf": np.array(-np.inf, np.float32),
    }
    mod = helper.make_graph(
        [
            helper.make_node("Shape", ["s"], ["shape"]),
            helper.make_node("Gather", ["shape", "two"], ["L"], axis=0),
            helper.make_node("Gather", ["shape", "three"], ["S"], axis=0),
            helper.make_node("Range", ["zero", "L", "one"], ["qr"]),
            helper.make_node("Reshape", ["qr", "col"], ["qi"]),
            helper.make_node("Range", ["zero", "S", "one"], ["ki"]),
            helper.make_node("GreaterOrEqual", ["qi", "ki"], ["keep"]),
            helper.make_node("Where", ["keep", "s", "neg_inf"], ["out"]),
        ],
        "score_mod",
        [_vi("s", F, None)],
        [_vi("out", F, None)],
        initializer=[onnx.numpy_helper.from_array(v, n) for n, v in consts.items()],
    )
    prob = helper.make_graph(
        [helper.make_node("Mul", ["p", "half"], ["p2"])],
        "prob_mod",
        [_vi("p", F, None)],
        [_vi("p2", F, None)],
        initializer=[onnx.numpy_helper.from_array(np.array(0.5, np.float32), "half")],
    )
    node = helper.make_node(
        "FlexAttention",
        ["q", "k", "v"],
        ["y"],
        domain="ai.onnx.preview",
        score_mod=mod,
        prob_mod=prob,
        scale=0.2,
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            _vi("q", F, [1, 4, "seq", 8]),
            _vi("k", F, [1, 2, "seq", 8]),
            _vi("v", F, [1, 2, "seq", 6]),
        ],
        [_vi("y", F, None)],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)],
    )
    model.ir_version = 10
    for seq in (1, 5):
        args = (_f32(1, 4, seq, 8), _f32(1, 2, seq, 8), _f32(1, 2, seq, 6))
        module = _check(model, *args, reference=_reference)
    assert [str(d) for d in module["main"].output.ty.shape] == ["1", "4", "seq", "6"]


# ----- (d) invalid and unsupported forms ---------------------------------------------------


def _import(node, inputs, opset, outputs=("y",)):
    model = _model([node], inputs, [_vi(o, F, None) for o in outputs], opset)
    return from_onnx(model.SerializeToString(), strict=True)  # a refused form is an error


def test_attention_3d_without_head_counts_is_an_error():
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"])
    inputs = [_vi(n, F, [1, 2, 8]) for n in "qkv"]
    with pytest.raises(OnnxImportError, match="q_num_heads and kv_num_heads"):
        _import(node, inputs, 23)


def test_attention_hidden_size_not_a_multiple_of_heads_is_an_error():
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], q_num_heads=3, kv_num_heads=3)
    inputs = [_vi(n, F, [1, 2, 8]) for n in "qkv"]
    with pytest.raises(OnnxImportError, match="not a multiple of 3 heads"):
        _import(node, inputs, 23)


def test_attention_past_key_without_past_value_is_an_error():
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk"], ["y"])
    inputs = [_vi(n, F, [1, 2, 3, 4]) for n in ("q", "k", "v", "pk")]
    with pytest.raises(OnnxImportError, match="past_key and past_value must be given together"):
        _import(node, inputs, 23)


def test_attention_mask_shorter_than_a_symbolic_key_length_is_padded():
    """A mask of ``m`` keys for ``kv`` keys (both symbolic) is padded with -inf (a filled
    tensor of ``kv - m`` keys, the reference's padding); the scores keep the symbolic ``kv``."""
    node = helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"])
    model = _model(
        [node],
        [
            _vi("q", F, [1, 2, 3, 4]),
            _vi("k", F, [1, 2, "kv", 4]),
            _vi("v", F, [1, 2, "kv", 4]),
            _vi("mask", F, [3, "m"]),
        ],
        [_vi("y", F, None)],
        opset=23,
    )
    for kv, m in ((5, 5), (6, 2)):
        args = (_f32(1, 2, 3, 4), _f32(1, 2, kv, 4), _f32(1, 2, kv, 4), _f32(3, m))
        module = _check(model, *args, reference=_reference)
    assert "full" in _ops(module)


def test_attention_with_a_negative_scale_is_unsupported():
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], scale=-0.5)
    inputs = [_vi(n, F, [1, 2, 3, 4]) for n in "qkv"]
    with pytest.raises(UnsupportedOperatorError, match="negative scale"):
        _import(node, inputs, 23)


def test_linear_attention_over_a_symbolic_sequence_is_unsupported():
    node = helper.make_node(
        "LinearAttention",
        ["q", "k", "v"],
        ["y", "s"],
        q_num_heads=1,
        kv_num_heads=1,
        update_rule="linear",
    )
    inputs = [_vi(n, F, [1, "seq", 4]) for n in "qkv"]
    with pytest.raises(UnsupportedOperatorError, match="sequence length"):
        _import(node, inputs, 27, outputs=("y", "s"))


def test_tensor_scatter_on_the_batch_axis_is_an_error():
    node = helper.make_node("TensorScatter", ["c", "u"], ["y"], axis=0)
    inputs = [_vi("c", F, [4, 3]), _vi("u", F, [1, 3])]
    with pytest.raises(OnnxImportError, match="batch axis"):
        _import(node, inputs, 24)


def test_causal_conv_weight_must_be_depthwise():
    node = helper.make_node("CausalConvWithState", ["x", "w"], ["y", "s"])
    inputs = [_vi("x", F, [1, 4, 5]), _vi("w", F, [4, 2, 3])]
    with pytest.raises(OnnxImportError, match=r"weight must be \(4, 1, k\)"):
        _import(node, inputs, 27, outputs=("y", "s"))


# ----- (e) the converted graphs export back to ONNX ----------------------------------------


def test_converted_node_tests_export_to_onnx_and_run_in_onnxruntime(harness):
    """Each op's float32 node tests (the non-expanded form) go out through to_onnx and give
    the interpreter's numbers in onnxruntime (bf16 kernels are missing there)."""

    ort.set_default_logger_severity(3)
    root = harness.node_test_dir()
    names = [
        "test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask_causal",
        "test_attention_3d_gqa_with_past_and_present",
        "test_attention_4d_causal_nonpad_attn_mask_composition",
        "test_attention_local_window_gqa_rank4_mask",
        "test_rotary_embedding_with_interleaved_rotary_dim",
        "test_rotary_embedding_3d_input",
        "test_swiglu_alpha",
        "test_tensorscatter_circular",
        "test_causal_conv_with_state_silu_fp16",
        "test_linear_attention_gated_delta_gqa",
        "test_flexattention_relative_positional",
        "test_flexattention_gqa",
    ]
    for name in names:
        assert round_trip_problem(root / name) == "", name
