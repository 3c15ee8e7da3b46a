"""Old ai.onnx opsets (1-12): every op version a converter does not implement is refused, the
old forms (attribute Slice/Pad/Split/Squeeze/Unsqueeze/Reduce*, Clip-6, TopK-1, legacy
broadcasting, Softmax-1/11's 2-D coercion, Scatter, is_test modes) convert as onnxruntime or
the ONNX reference runs them, and the node tests of old opsets pass."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from compiler.frontend import FrontendError, UnsupportedOperatorError, from_onnx
from compiler.frontend.onnx_frontend import MIN_OPSET, unsupported_operators
from compiler.frontend.onnx_ops import CONVERTERS, OLDER_CONVERTERS, converter, converter_for
from compiler.interpret import run
from tests.compiler.frontend.onnx_helpers import load_harness as _harness
from tests.compiler.frontend.onnx_helpers import ort_run as _ort

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(17)


def _history() -> dict[str, list]:
    out = defaultdict(list)
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "":
            out[s.name].append(s)
    return {k: sorted(v, key=lambda s: s.since_version) for k, v in out.items()}


HISTORY = _history()
NEWEST = onnx.defs.onnx_opset_version()


# ----- the audit: every op version is converted by a converter of it, or refused ------------


def _one_node_model(op: str, opset: int):
    node = helper.make_node(op, ["a", "b"], ["y"], name="n")
    graph = helper.make_graph([node], "g", [], [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_every_op_version_is_converted_by_its_converter_or_refused():
    """For every op with a converter and every op version an accepted opset can hold: the
    importer picks a converter implementing exactly that version, or refuses the node with a
    message naming the op version."""
    checked = 0
    for op in sorted(set(CONVERTERS) | set(OLDER_CONVERTERS)):
        for schema in HISTORY.get(op, []):
            v = schema.since_version
            if not MIN_OPSET <= v <= NEWEST:
                continue
            conv = converter_for(op, v)
            found = unsupported_operators(_one_node_model(op, v), v)
            if conv is None:
                assert [k for k in found if k.startswith(f"{op}-{v} ")], (op, v, found)
            else:
                assert conv.min_version <= v and (conv.max_version or v) >= v, (op, v)
                assert not [k for k in found if k.startswith(f"{op}-")], (op, v, found)
            checked += 1
    assert checked > 300


# Changes of an op's form between two versions one converter implements, each checked by
# hand: the converter handles both forms (by its inputs, attributes or ctx.version).
HANDLED_FORM_CHANGES = {
    ("Attention", 23, 24),  # the nonpad_kv_seqlen input (attention.py handles it)
    ("BatchNormalization", 6, 7),  # is_test: legacy.py refuses training mode (is_test=0)
    ("BatchNormalization", 9, 14),  # renamed inputs; training outputs are refused
    ("Clip", 1, 6),  # default bounds: legacy.py uses each version's
    ("DFT", 17, 20),  # axis attribute -> input (ctx.version)
    ("Dropout", 10, 12),  # ratio attribute -> input; training_mode input checked
    ("Gemm", 9, 11),  # C optional
    ("GridSample", 16, 20),  # modes renamed (bilinear -> linear), N-D: vision.py reads ctx.version
    ("OptionalHasElement", 15, 18),  # the input became optional: sequence.py checks ctx.has(0)
    ("Upsample", 7, 9),  # scales attribute -> input: vision.py reads ctx.version
    ("MaxPool", 1, 8),  # an Indices output (version 1 has none)
    ("Pad", 13, 18),  # axes input
    ("ReduceSum", 11, 13),  # axes attribute -> input
    *((r, 13, 18) for r in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")),
    *((r, 13, 18) for r in ("ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd")),
    ("ReduceSumSquare", 13, 18),
    ("Resize", 11, 13),  # roi and scales optional
    ("Split", 11, 13),  # split attribute -> input
    ("Squeeze", 11, 13),  # axes attribute -> input
    ("Unsqueeze", 11, 13),  # axes attribute -> input
}


def _form(schema):
    attrs = {}
    for name, a in schema.attributes.items():
        d = a.default_value
        attrs[name] = helper.get_attribute_value(d) if d is not None and d.name else None
    inputs = tuple((i.name, int(i.option)) for i in schema.inputs)
    outputs = tuple((o.name, int(o.option)) for o in schema.outputs)
    return attrs, inputs, outputs


def form_changes() -> set[tuple[str, int, int]]:
    """(op, v1, v2) for consecutive versions one converter implements whose inputs, outputs
    or attribute defaults differ, or where an attribute with a default was removed."""
    changes = set()
    for op in sorted(set(CONVERTERS) | set(OLDER_CONVERTERS)):
        versions = HISTORY.get(op, [])
        for a, b in zip(versions, versions[1:], strict=False):
            conv = converter_for(op, a.since_version)
            if conv is None or conv is not converter_for(op, b.since_version):
                continue
            (aa, ai, ao), (ba, bi, bo) = _form(a), _form(b)
            changed = ai != bi or ao != bo
            for name, default in aa.items():
                if name in ba and ba[name] != default:
                    changed = True
                if name not in ba and default is not None:
                    changed = True  # the old version applied a default the new one lacks
            if changed:
                changes.add((op, a.since_version, b.since_version))
    return changes


def test_every_form_change_within_a_converter_was_checked():
    """A converter implementing two op versions whose form differs (an input added, a default
    changed, an attribute removed) must handle both: each such pair is listed above once
    checked, so a new converter (or a lowered min_version) cannot skip the audit."""
    unchecked = form_changes() - HANDLED_FORM_CHANGES
    assert not unchecked, f"audit these op versions, then list them: {sorted(unchecked)}"


# The op versions refused after the audit (ops with converters); the others convert.
REFUSED = {
    "BatchNormalization": [1],  # consumed_inputs, is_test: no test mode to rely on
    "PRelu": [1, 6],  # slope broadcasting undefined before version 7
    "Reshape": [1],  # shape attribute
    "Resize": [10],  # Upsample-like semantics (no coordinate_transformation_mode)
    "Selu": [1],  # other default alpha and gamma
    "Split": [1],  # split as attribute or input, axis without a default
    "Tile": [1],  # tiles and axis inputs
}


def test_the_refused_op_versions_are_the_audited_ones():
    refused = {}
    for op in REFUSED:
        versions = [s.since_version for s in HISTORY[op]]
        refused[op] = [v for v in versions if converter_for(op, v) is None]
    assert refused == REFUSED
    for op, versions in REFUSED.items():  # each is refused, not only unconverted
        for v in versions:
            key = next(iter(unsupported_operators(_one_node_model(op, v), v)))
            assert key.startswith(f"{op}-{v} (the version of opset {v}; passlens converts")


def test_overlapping_converters_are_refused_at_registration():
    with pytest.raises(ValueError, match="two converters of one version"):
        converter("Slice", max_version=12)(lambda ctx: None)
    with pytest.raises(ValueError, match="two converters of one version"):
        converter("Softmax", min_version=5, max_version=11)(lambda ctx: None)


# ----- old-version models against onnxruntime / the ONNX reference ------------------------


def make_model(nodes, inputs, outputs, opset, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 4 if opset < 8 else 7
    onnx.checker.check_model(model)
    return model


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _reference(model, *inputs):
    from onnx.reference import ReferenceEvaluator

    names = [i.name for i in model.graph.input]
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs, strict=True)))


def _check(model, *inputs, expected=None, rtol=1e-5, atol=1e-6, build=False):
    module = from_onnx(model)
    got = run(module, *inputs)
    expected = _ort(model, *inputs) if expected is None else expected
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    if build:
        from compiler.backend import build as build_module

        compiled = build_module(module)(*inputs)
        for c, g in zip(compiled, got, strict=True):
            np.testing.assert_allclose(np.asarray(c), g, rtol=1e-5, atol=1e-6)
    return module


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_and_opset7_broadcasts():
    node = helper.make_node("And", ["a", "b"], ["y"])
    model = make_model(
        [node], [_vi("a", BOOL, [3, 4]), _vi("b", BOOL, [4])], [_vi("y", BOOL, [3, 4])], 7
    )
    a, b = RNG.random((3, 4)) > 0.5, RNG.random(4) > 0.5
    _check(model, a, b, build=True)


def test_shrink_opset9():
    node = helper.make_node("Shrink", ["x"], ["y"], lambd=0.7, bias=0.2)
    model = make_model([node], [_vi("x", F32, ["batch", 5])], [_vi("y", F32, ["batch", 5])], 9)
    _check(model, _f32(3, 5), build=True)
    _check(model, _f32(6, 5))


def test_scatter_opset10_is_scatter_elements():
    node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)
    model = make_model(
        [node],
        [_vi("x", F32, [3, 5]), _vi("i", I64, [3, 2]), _vi("u", F32, [3, 2])],
        [_vi("y", F32, [3, 5])],
        10,
    )
    idx = np.array([[0, 4], [1, 3], [2, 0]], dtype=np.int64)
    _check(model, _f32(3, 5), idx, _f32(3, 2), build=True)


@pytest.mark.parametrize("opset", [7, 9])
def test_gemm_and_batch_norm_opset7_and_9(opset):
    gemm = helper.make_node("Gemm", ["x", "w", "c"], ["h"], transB=1, alpha=0.5, beta=2.0)
    bn = helper.make_node("BatchNormalization", ["h4", "s", "b", "m", "v"], ["y"], epsilon=1e-3)
    shape = helper.make_tensor("shape", I64, [4], [-1, 6, 1, 1])
    reshape = helper.make_node("Reshape", ["h", "shape"], ["h4"])
    inits = [
        helper.make_tensor("w", F32, [6, 4], _f32(6, 4).ravel()),
        helper.make_tensor("c", F32, [6], _f32(6).ravel()),
        helper.make_tensor("s", F32, [6], _f32(6).ravel()),
        helper.make_tensor("b", F32, [6], _f32(6).ravel()),
        helper.make_tensor("m", F32, [6], _f32(6).ravel()),
        helper.make_tensor("v", F32, [6], np.abs(_f32(6)).ravel() + 0.5),
        shape,
    ]
    model = make_model(
        [gemm, reshape, bn], [_vi("x", F32, [3, 4])], [_vi("y", F32, [3, 6, 1, 1])], opset, inits
    )
    _check(model, _f32(3, 4), build=True)


def test_gemm_6_legacy_broadcast_against_the_reference():
    node = helper.make_node("Gemm", ["x", "w", "c"], ["y"], broadcast=1, transA=1)
    model = make_model(
        [node],
        [_vi("x", F32, [4, 3]), _vi("w", F32, [4, 5]), _vi("c", F32, [5])],
        [_vi("y", F32, [3, 5])],
        6,
    )
    x, w, c = _f32(4, 3), _f32(4, 5), _f32(5)
    _check(model, x, w, c, expected=[x.T @ w + c])
    _check(model, x, w, c, expected=_reference(model, x, w, c))


def test_slice_1_attributes_with_a_symbolic_batch():
    node = helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[100, -1], axes=[1, 2])
    model = make_model(
        [node], [_vi("x", F32, ["batch", 4, 6])], [_vi("y", F32, ["batch", 3, 2])], 9
    )
    module = _check(model, _f32(2, 4, 6), build=True)
    _check(model, _f32(5, 4, 6))
    assert str(module.main.ret_type) == "f32[batch, 3, 2]"


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_2_attributes(mode):
    attrs = {"value": 1.5} if mode == "constant" else {}
    node = helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 2, 0, 2, 1], mode=mode, **attrs)
    model = make_model([node], [_vi("x", F32, [2, 3, 4])], [_vi("y", F32, [2, 7, 7])], 10)
    _check(model, _f32(2, 3, 4), build=mode == "constant")


def test_split_squeeze_unsqueeze_reduce_attribute_forms_opset9():
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], axis=1, split=[1, 3]),
        helper.make_node("Squeeze", ["a"], ["sa"], axes=[1]),
        helper.make_node("Unsqueeze", ["sa"], ["ua"], axes=[0, 3]),
        helper.make_node("ReduceSum", ["b"], ["rs"], axes=[1], keepdims=0),
        helper.make_node("ReduceMean", ["b"], ["rm"], axes=[0, 2], keepdims=1),
        helper.make_node("ReduceMax", ["b"], ["rx"]),
    ]
    model = make_model(
        nodes,
        [_vi("x", F32, [2, 4, 5])],
        [
            _vi("ua", F32, [1, 2, 5, 1]),
            _vi("rs", F32, [2, 5]),
            _vi("rm", F32, [1, 3, 1]),
            _vi("rx", F32, [1, 1, 1]),
        ],
        9,
    )
    _check(model, _f32(2, 4, 5), build=True)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [9, 11])
def test_softmax_before_13_normalises_every_dim_from_axis(op, opset):
    node = helper.make_node(op, ["x"], ["y"])  # axis 1 by default: dims 1 and 2 together
    model = make_model(
        [node], [_vi("x", F32, ["batch", 3, 4])], [_vi("y", F32, ["batch", 3, 4])], opset
    )
    _check(model, _f32(2, 3, 4), build=True)
    _check(model, _f32(5, 3, 4))


def test_hardmax_11_and_its_symbolic_refusal():
    node = helper.make_node("Hardmax", ["x"], ["y"], axis=1)
    model = make_model([node], [_vi("x", F32, [2, 3, 4])], [_vi("y", F32, [2, 3, 4])], 11)
    _check(model, _f32(2, 3, 4))
    model = make_model([node], [_vi("x", F32, [2, "n", 4])], [_vi("y", F32, [2, "n", 4])], 11)
    with pytest.raises(UnsupportedOperatorError, match="Hardmax needs a static size of dim 1"):
        from_onnx(model, strict=True)


def test_clip_6_topk_1_flatten_1_maxpool_1_opset7():
    nodes = [
        helper.make_node("Clip", ["x"], ["c"], min=-0.5, max=0.25),
        helper.make_node("TopK", ["x"], ["v", "i"], k=2, axis=-1),
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("AveragePool", ["x"], ["q"], kernel_shape=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Flatten", ["x"], ["f"], axis=2),
    ]
    model = make_model(
        nodes,
        [_vi("x", F32, [1, 2, 4, 4])],
        [
            _vi("c", F32, [1, 2, 4, 4]),
            _vi("v", F32, [1, 2, 4, 2]),
            _vi("i", I64, [1, 2, 4, 2]),
            _vi("p", F32, [1, 2, 3, 3]),
            _vi("q", F32, [1, 2, 5, 5]),
            _vi("f", F32, [2, 16]),
        ],
        7,
    )
    _check(model, _f32(1, 2, 4, 4))


def test_clip_6_default_bounds_are_flt_max():
    node = helper.make_node("Clip", ["x"], ["y"], min=0.0)
    model = make_model([node], [_vi("x", F32, [3])], [_vi("y", F32, [3])], 6)
    x = np.array([-1.0, 2.0, np.inf], dtype=np.float32)
    _check(model, x, expected=[np.array([0.0, 2.0, np.finfo(np.float32).max], np.float32)])


def test_binary_ops_with_legacy_broadcast_opset6():
    node = helper.make_node("Add", ["a", "b"], ["y"], broadcast=1, axis=1)
    mul = helper.make_node("Mul", ["y", "c"], ["z"], broadcast=1)  # suffix: c is [4]
    model = make_model(
        [node, mul],
        [_vi("a", F32, [2, 3, 4]), _vi("b", F32, [3]), _vi("c", F32, [4])],
        [_vi("z", F32, [2, 3, 4])],
        6,
    )
    a, b, c = _f32(2, 3, 4), _f32(3), _f32(4)
    _check(model, a, b, c, expected=[(a + b[:, None]) * c], build=True)
    same = helper.make_node("Sub", ["a", "b"], ["y"])  # no broadcast: equal shapes
    model = make_model(
        [same], [_vi("a", F32, [2, 3]), _vi("b", F32, [2, 3])], [_vi("y", F32, [2, 3])], 6
    )
    a, b = _f32(2, 3), _f32(2, 3)
    _check(model, a, b, expected=[a - b])


def test_legacy_broadcast_without_the_attribute_needs_equal_shapes():
    node = helper.make_node("Add", ["a", "b"], ["y"])
    graph = helper.make_graph(
        [node], "g", [_vi("a", F32, [2, 3]), _vi("b", F32, [3])], [_vi("y", F32, [2, 3])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    model.ir_version = 4
    with pytest.raises(FrontendError, match=r"Add-6 without broadcast=1 needs equal shapes"):
        from_onnx(model)


def test_test_mode_dropout_and_batch_norm_6():
    nodes = [
        helper.make_node("Dropout", ["x"], ["d"], is_test=1, ratio=0.3),
        helper.make_node(
            "BatchNormalization", ["d", "s", "b", "m", "v"], ["y"], is_test=1, epsilon=1e-4
        ),
    ]
    stats = [_f32(3), _f32(3), _f32(3), np.abs(_f32(3)) + 0.5]
    inits = [helper.make_tensor(n, F32, [3], v) for n, v in zip("sbmv", stats, strict=True)]
    model = make_model([*nodes], [_vi("x", F32, [2, 3, 4])], [_vi("y", F32, [2, 3, 4])], 6, inits)
    x = _f32(2, 3, 4)
    s, b, m, v = (t[:, None] for t in stats)
    expected = (x - m) / np.sqrt(v + 1e-4) * s + b
    _check(model, x, expected=[expected], rtol=1e-5)  # no reference of Dropout-6


def test_cast_1_type_names_and_concat_1_default_axis():
    nodes = [
        helper.make_node("Cast", ["x"], ["c"], to="DOUBLE"),
        helper.make_node("Concat", ["c", "c"], ["y"]),  # axis 1 by default
    ]
    model = make_model(nodes, [_vi("x", F32, [2, 3])], [_vi("y", TensorProto.DOUBLE, [2, 6])], 3)
    x = _f32(2, 3)
    c = x.astype(np.float64)
    _check(model, x, expected=[np.concatenate([c, c], axis=1)], build=True)


@pytest.mark.parametrize(
    "op, opset, attrs, match",
    [
        ("Selu", 5, {}, r"Selu-1 \(the version of opset 5; passlens converts Selu from version 6"),
        ("PRelu", 6, {}, r"PRelu-6 \(the version of opset 6"),
        ("Dropout", 6, {}, r"Dropout-6 in training mode \(is_test=0\)"),
        ("BatchNormalization", 6, {}, r"BatchNormalization-6 in training mode"),
        ("BatchNormalization", 7, {"spatial": 0}, r"BatchNormalization-7 with spatial=0"),
        ("Reshape", 4, {"shape": [3, 2]}, r"Reshape-1 \(the version of opset 4"),
    ],
)
def test_op_versions_passlens_does_not_implement_are_unsupported(op, opset, attrs, match):
    inputs = {"PRelu": ["x", "x"], "BatchNormalization": ["x", "s", "s", "s", "s"]}
    node = helper.make_node(op, inputs.get(op, ["x"]), ["y"], **attrs)
    inits = [helper.make_tensor("s", F32, [3], [1.0, 1.0, 1.0])]
    graph = helper.make_graph([node], "g", [_vi("x", F32, [2, 3])], [_vi("y", F32, [2, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 4
    with pytest.raises(UnsupportedOperatorError, match=match):
        from_onnx(model, strict=True)


def test_the_opset_floor_is_1():
    node = helper.make_node("Relu", ["x"], ["y"])
    model = make_model([node], [_vi("x", F32, [3])], [_vi("y", F32, [3])], 1)
    x = _f32(3)
    _check(model, x, expected=[np.maximum(x, 0)])


@pytest.mark.skipif(NEWEST < 27, reason="Range-27 is newer than the installed onnx")
def test_range_27_float16_accumulates_in_float32_unless_stash_type_is_0():
    f16 = TensorProto.FLOAT16
    s, lim, d = np.float16(0.3), np.float16(100), np.float16(0.7)
    n = int(np.ceil((np.float32(lim) - np.float32(s)) / np.float32(d)))
    in32 = (np.float32(s) + np.float32(d) * np.arange(n, dtype=np.float32)).astype(np.float16)
    for attrs in ({}, {"stash_type": 1}, {"stash_type": 0}):
        node = helper.make_node("Range", ["s", "l", "d"], ["y"], **attrs)
        inputs = [_vi("s", f16, []), _vi("l", f16, []), _vi("d", f16, [])]
        model = make_model([node], inputs, [_vi("y", f16, ["n"])], 27)
        got = run(from_onnx(model), s, lim, d)[0]
        assert np.array_equal(got, in32) == (attrs.get("stash_type", 1) == 1)


# ----- the node tests of old opsets ---------------------------------------------------------


OLD_OPSET_TESTS = [
    *(f"test_{op}{n}d" for op in ("and", "or", "xor") for n in (2, 3, 4)),
    *(f"test_{op}_bcast{s}" for op in ("and", "or", "xor") for s in ("3v1d", "3v2d", "4v2d")),
    *(f"test_{op}_bcast{s}" for op in ("and", "or", "xor") for s in ("4v3d", "4v4d")),
    "test_not_2d",
    "test_not_3d",
    "test_not_4d",
    "test_shrink_hard",
    "test_shrink_soft",
    "test_scatter_with_axis",
    "test_scatter_without_axis",
]


def test_node_tests_of_old_opsets_pass():
    harness = _harness()
    root = harness.node_test_dir()
    results = [harness.run_case(root / name) for name in OLD_OPSET_TESTS]
    assert all(r.opset < 11 for r in results)
    failing = [f"{r.name}: {r.status} {r.message}" for r in results if r.status != "passed"]
    assert not failing


def test_dropout_7_is_the_identity_and_its_unspecified_mask_is_refused():
    node = helper.make_node("Dropout", ["x"], ["y"], ratio=0.4)
    model = make_model([node], [_vi("x", F32, [2, 3])], [_vi("y", F32, [2, 3])], 7)
    _check(model, _f32(2, 3))
    node = helper.make_node("Dropout", ["x"], ["y", "mask"])
    model = make_model(
        [node], [_vi("x", F32, [2, 3])], [_vi("y", F32, [2, 3]), _vi("mask", F32, [2, 3])], 9
    )
    with pytest.raises(UnsupportedOperatorError, match=r"Dropout \(output 1 \('mask'\)\)"):
        from_onnx(model, strict=True)
