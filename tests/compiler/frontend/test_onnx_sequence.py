"""ONNX sequences (IR tuples of known length) and optionals (resolved at import): the node
tests, models built here against onnxruntime, compiled models, and the clear errors of what
depends on run-time data."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from compiler.backend import build
from compiler.frontend import FrontendError, UnsupportedOperatorError, from_onnx
from compiler.interpret import InterpretError, run
from compiler.ir.types import TupleType
from tests.compiler.frontend.onnx_helpers import load_harness as _harness

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
RNG = np.random.default_rng(17)


PASSING = [
    "test_identity_opt",
    "test_identity_sequence",
    "test_if_seq",
    "test_optional_get_element_optional_sequence",
    "test_optional_get_element_optional_tensor",
    "test_optional_get_element_sequence",
    "test_optional_get_element_tensor",
    "test_optional_has_element_empty_no_input_name_optional_input",
    "test_optional_has_element_empty_no_input_name_tensor_input",
    "test_optional_has_element_empty_no_input_optional_input",
    "test_optional_has_element_empty_no_input_tensor_input",
    "test_optional_has_element_empty_optional_input",
    "test_optional_has_element_optional_input",
    "test_optional_has_element_tensor_input",
    "test_sequence_insert_at_back",
    "test_sequence_map_add_1_sequence_1_tensor",
    "test_sequence_map_add_1_sequence_1_tensor_expanded",
    "test_sequence_map_add_2_sequences",
    "test_sequence_map_add_2_sequences_expanded",
    "test_sequence_map_extract_shapes",
    "test_sequence_map_extract_shapes_expanded",
    "test_sequence_map_identity_1_sequence",
    "test_sequence_map_identity_1_sequence_1_tensor",
    "test_sequence_map_identity_1_sequence_1_tensor_expanded",
    "test_sequence_map_identity_1_sequence_expanded",
    "test_sequence_map_identity_2_sequences",
    "test_sequence_map_identity_2_sequences_expanded",
    "test_split_to_sequence_2",
    "test_split_to_sequence_nokeepdims",
]

UNSUPPORTED = {  # a layout or presence known only at run time
    "test_sequence_insert_at_front": "position computed at run time",
    "test_split_to_sequence_1": "chunk size computed at run time",
    "test_if_opt": "empty optional",
    "test_loop13_seq": "carrying a sequence",
    "test_loop16_seq_none": "carrying a sequence",
}


def test_sequence_node_tests_pass():
    harness = _harness()
    root = harness.node_test_dir()
    results = [harness.run_case(root / name) for name in PASSING]
    failing = [f"{r.name}: {r.status} {r.message}" for r in results if r.status != "passed"]
    assert not failing
    for name, reason in UNSUPPORTED.items():
        r = harness.run_case(root / name)
        assert r.status == "unsupported" and reason in r.message, (name, r.message)


def test_the_harness_compares_sequences_element_by_element():
    harness = _harness()
    seq = onnx.numpy_helper.from_list([np.ones(2, np.float32), np.zeros(3, np.float32)])
    ok = (np.ones(2, np.float32), np.zeros(3, np.float32))
    assert harness._compare((ok,), [seq], 1e-3, 1e-7) == ""
    assert "expected 2" in harness._compare((ok[:1],), [seq], 1e-3, 1e-7)
    wrong = (np.ones(2, np.float32), np.ones(3, np.float32))
    assert "differs" in harness._compare((wrong,), [seq], 1e-3, 1e-7)
    assert "not a sequence" in harness._compare((ok[0],), [seq], 1e-3, 1e-7)
    empty = onnx.numpy_helper.from_optional(None, name="o")
    assert harness._compare(((),), [empty], 1e-3, 1e-7) == ""


# ----- models built here, against onnxruntime ---------------------------------------------


def make_model(nodes, inputs, outputs, opset=18, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _seq_vi(name, dtype, shape):
    return helper.make_tensor_sequence_value_info(name, dtype, shape)


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _same(got, want):
    """Outputs of run (tuples for sequences) against onnxruntime's (lists for sequences)."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if isinstance(w, list):
            assert isinstance(g, tuple) and len(g) == len(w)
            _same(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
            assert np.asarray(g).dtype == np.asarray(w).dtype


def _split_concat_model(split_value=None, runtime_split=False, keepdims=1, new_axis=0):
    """x [B, 6] -> SplitToSequence along 1 -> ConcatFromSequence -> y, plus the length."""
    inputs, inits, split_in = [_vi("x", F32, ["B", 6])], [], []
    if runtime_split:
        inputs.append(_vi("split", I64, [len(split_value)]))
        split_in = ["split"]
    elif split_value is not None:
        inits.append(helper.make_tensor("split", I64, np.shape(split_value), split_value))
        split_in = ["split"]
    nodes = [
        helper.make_node("SplitToSequence", ["x", *split_in], ["s"], axis=1, keepdims=keepdims),
        helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=1, new_axis=new_axis),
        helper.make_node("SequenceLength", ["s"], ["n"]),
    ]
    outputs = [_vi("y", F32, ["B", "W"]), _vi("n", I64, [])]
    return make_model(nodes, inputs, outputs, initializers=inits)


@pytest.mark.parametrize(
    "split,runtime,keepdims,new_axis",
    [
        (None, False, 1, 0),  # pieces of 1
        (None, False, 0, 1),  # pieces of 1 without the axis, stacked again
        (4, False, 1, 0),  # a chunk size: pieces of 4 and 2
        ([1, 2, 3], False, 1, 0),
        ([2, 0, 4], False, 1, 0),  # an empty piece
        ([1, 2, 3], True, 1, 0),  # sizes computed at run time: three pieces of unknown size
    ],
)
def test_split_to_sequence_and_concat_match_onnxruntime(split, runtime, keepdims, new_axis):
    model = _split_concat_model(split, runtime, keepdims, new_axis)
    module = from_onnx(model)
    for batch in (2, 5):  # the batch dim stays symbolic
        x = RNG.standard_normal((batch, 6)).astype(np.float32)
        feeds = {"x": x}
        args = [x]
        if runtime:
            feeds["split"] = np.array(split, np.int64)
            args.append(feeds["split"])
        _same(run(module, *args), _ort(model, feeds))


def _sequence_ops_model():
    """A sequence input s (3 tensors [2, 4]), a tensor t [2, 4] and a position p:
    SequenceAt(s, -1), SequenceAt(s, p) (computed), SequenceErase(s, 0),
    SequenceInsert(s, t, 1), SequenceLength, and a ConcatFromSequence with new_axis."""
    one = helper.make_tensor("one", I64, [], [1])
    minus = helper.make_tensor("minus", I64, [], [-1])
    zero = helper.make_tensor("zero", I64, [], [0])
    nodes = [
        helper.make_node("SequenceAt", ["s", "minus"], ["last"]),
        helper.make_node("SequenceAt", ["s", "p"], ["picked"]),
        helper.make_node("SequenceErase", ["s", "zero"], ["erased"]),
        helper.make_node("SequenceInsert", ["s", "t", "one"], ["inserted"]),
        helper.make_node("SequenceLength", ["inserted"], ["n"]),
        helper.make_node("ConcatFromSequence", ["inserted"], ["stacked"], axis=0, new_axis=1),
    ]
    inputs = [_seq_vi("s", F32, [2, 4]), _vi("t", F32, [2, 4]), _vi("p", I64, [])]
    outputs = [
        _vi("last", F32, [2, 4]),
        _vi("picked", F32, [2, 4]),
        _seq_vi("erased", F32, [2, 4]),
        _seq_vi("inserted", F32, [2, 4]),
        _vi("n", I64, []),
        _vi("stacked", F32, [4, 2, 4]),
    ]
    return make_model(nodes, inputs, outputs, initializers=[one, minus, zero])


def test_sequence_ops_on_a_sequence_input_match_onnxruntime():
    model = _sequence_ops_model()
    module = from_onnx(model, example_inputs={"s": [None] * 3})
    assert module["main"].params[0].ty == TupleType(module["main"].params[0].ty.fields)
    assert len(module["main"].params[0].ty.fields) == 3
    for p in (0, -2, 2):
        s = [RNG.standard_normal((2, 4)).astype(np.float32) for _ in range(3)]
        t = RNG.standard_normal((2, 4)).astype(np.float32)
        pos = np.array(p, np.int64)
        got = run(module, s, t, pos)  # a list for the sequence is taken as a tuple
        _same(got, _ort(model, {"s": s, "t": t, "p": pos}))


def test_a_sequence_input_of_another_length_is_a_clear_run_error():
    module = from_onnx(_sequence_ops_model(), example_inputs={"s": [None] * 3})
    s = [np.zeros((2, 4), np.float32)] * 2
    with pytest.raises(InterpretError, match="input 0 .* expects"):
        run(module, s, np.zeros((2, 4), np.float32), np.array(0, np.int64))


def _sequence_map_model(n="N"):
    """SequenceMap(s, t) with a body giving s[k] * t and the shape of s[k]; the elements of
    s have shape [n]."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["a", "b"], ["c"]), helper.make_node("Shape", ["a"], ["sh"])],
        "body",
        [_vi("a", F32, [n]), _vi("b", F32, [n])],
        [_vi("c", F32, [n]), _vi("sh", I64, [1])],
    )
    nodes = [helper.make_node("SequenceMap", ["s", "t"], ["o", "shapes"], body=body)]
    return make_model(
        nodes,
        [_seq_vi("s", F32, [n]), _vi("t", F32, [n])],
        [_seq_vi("o", F32, [n]), _seq_vi("shapes", I64, [1])],
    )


def test_sequence_map_matches_onnxruntime():
    model = _sequence_map_model()
    module = from_onnx(model, example_inputs={"s": [0, 0]})
    s = [RNG.standard_normal(5).astype(np.float32) for _ in range(2)]
    t = RNG.standard_normal(5).astype(np.float32)
    _same(run(module, tuple(s), t), _ort(model, {"s": s, "t": t}))


def test_a_loop_over_the_length_of_a_sequence_matches_onnxruntime():
    """What SequenceMap expands to: a Loop over SequenceLength that inserts into an empty
    sequence, unrolled because the length is known at import time."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("SequenceAt", ["s", "i"], ["x"]),
            helper.make_node("Relu", ["x"], ["y"]),
            helper.make_node("SequenceInsert", ["acc_in", "y"], ["acc_out"]),
        ],
        "body",
        [_vi("i", I64, []), _vi("cond_in", TensorProto.BOOL, []), _seq_vi("acc_in", F32, None)],
        [_vi("cond_out", TensorProto.BOOL, []), _seq_vi("acc_out", F32, None)],
    )
    nodes = [
        helper.make_node("SequenceLength", ["s"], ["n"]),
        helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", 9, [], [True])),
        helper.make_node("SequenceEmpty", [], ["e"], dtype=F32),
        helper.make_node("Loop", ["n", "c", "e"], ["out"], body=body),
        helper.make_node("ConcatFromSequence", ["out"], ["y"], axis=0),
    ]
    model = make_model(nodes, [_seq_vi("s", F32, ["B", 3])], [_vi("y", F32, ["T", 3])])
    module = from_onnx(model, example_inputs={"s": [0, 0, 0]})
    s = [RNG.standard_normal((k + 1, 3)).astype(np.float32) for k in range(3)]
    _same(run(module, s), _ort(model, {"s": s}))


def test_optionals_resolve_at_import_and_match_onnxruntime():
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(F32, ["B", 3]))
    nodes = [
        helper.make_node("OptionalHasElement", ["o"], ["has"]),
        helper.make_node("OptionalGetElement", ["o"], ["v"]),
        helper.make_node("Optional", ["v"], ["again"]),
        helper.make_node("OptionalGetElement", ["again"], ["w"]),
        helper.make_node("Add", ["v", "w"], ["y"]),
    ]
    model = make_model(
        nodes,
        [helper.make_value_info("o", opt)],
        [_vi("has", TensorProto.BOOL, []), _vi("y", F32, ["B", 3])],
    )
    module = from_onnx(model, example_inputs={"o": np.zeros((1, 3), np.float32)})
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    _same(run(module, x), _ort(model, {"o": x}))


def test_an_absent_optional_input_is_an_empty_tuple():
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(F32, [3]))
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"])]
    model = make_model(nodes, [helper.make_value_info("o", opt)], [_vi("has", 9, [])])
    module = from_onnx(model, example_inputs={"o": None})
    assert module["main"].params[0].ty == TupleType(())
    for absent in (None, ()):
        (has,) = run(module, absent)
        assert has.dtype == np.bool_ and not has
    present = from_onnx(model, example_inputs={"o": np.zeros(3, np.float32)})
    assert run(present, np.ones(3, np.float32))[0]


def test_an_empty_optional_output_is_an_empty_tuple():
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F32, [2]))
    nodes = [helper.make_node("Optional", [], ["o"], type=seq_type)]
    out = helper.make_value_info("o", helper.make_optional_type_proto(seq_type))
    model = make_model(nodes, [], [out])
    assert run(from_onnx(model)) == ((),)


# ----- compiled ---------------------------------------------------------------------------


def test_split_and_concat_compile():
    model = _split_concat_model([1, 2, 3])
    module = from_onnx(model)
    exe = build(module)
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    for g, w in zip(exe(x), run(module, x), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_sequence_inputs_and_outputs_compile():
    # static element shapes: a dim_param in a sequence element type is unknown ('?', the
    # elements may differ), which the interpreter runs but the backend cannot loop over
    model = _sequence_map_model(4)
    module = from_onnx(model, example_inputs={"s": [0, 0, 0]})
    exe = build(module)
    s = tuple(RNG.standard_normal(4).astype(np.float32) for _ in range(3))
    t = RNG.standard_normal(4).astype(np.float32)
    _same(exe(s, t), [list(v) for v in run(module, s, t)])


def test_a_module_that_only_moves_tensors_compiles():
    nodes = [helper.make_node("SequenceInsert", ["s", "t"], ["o"])]
    model = make_model(
        nodes, [_seq_vi("s", F32, [2]), _vi("t", F32, [2])], [_seq_vi("o", F32, [2])]
    )
    module = from_onnx(model, example_inputs={"s": [0]})
    s, t = (np.ones(2, np.float32),), np.zeros(2, np.float32)
    (out,) = build(module)(s, t)
    assert len(out) == 2 and np.array_equal(out[1], t)


# ----- what depends on run-time data: clear errors ----------------------------------------


def _unsupported(model, match, **kwargs):
    with pytest.raises(UnsupportedOperatorError, match=match):
        from_onnx(model, **kwargs)


def test_a_sequence_input_needs_its_length():
    model = _sequence_ops_model()
    _unsupported(model, r"graph input 's' is a sequence: .*example_inputs")
    with pytest.raises(FrontendError, match="names no graph input: q"):
        from_onnx(model, example_inputs={"s": [0], "q": [0]})
    with pytest.raises(FrontendError, match="must be a list or tuple"):
        from_onnx(model, example_inputs={"s": 3})


def test_an_optional_input_needs_its_presence():
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(F32, [3]))
    nodes = [helper.make_node("OptionalGetElement", ["o"], ["v"])]
    model = make_model(nodes, [helper.make_value_info("o", opt)], [_vi("v", F32, [3])])
    _unsupported(model, r"graph input 'o' is an optional: .*None or a value")
    with pytest.raises(FrontendError, match="OptionalGetElement of an empty optional"):
        from_onnx(model, example_inputs={"o": None})


def test_positions_and_chunk_sizes_computed_at_run_time_are_unsupported():
    nodes = [helper.make_node("SequenceInsert", ["s", "t", "p"], ["o"])]
    model = make_model(
        nodes,
        [_seq_vi("s", F32, [2]), _vi("t", F32, [2]), _vi("p", I64, [])],
        [_seq_vi("o", F32, [2])],
    )
    _unsupported(
        model, "SequenceInsert at a position computed at run time", example_inputs={"s": [0]}
    )
    nodes = [helper.make_node("SplitToSequence", ["x", "k"], ["o"])]
    model = make_model(nodes, [_vi("x", F32, [6]), _vi("k", I64, [])], [_seq_vi("o", F32, None)])
    _unsupported(model, "chunk size computed at run time")
    nodes = [helper.make_node("SplitToSequence", ["x"], ["o"])]
    model = make_model(nodes, [_vi("x", F32, ["B"])], [_seq_vi("o", F32, None)])
    _unsupported(model, "along a symbolic dim B")


def test_a_computed_position_in_tensors_of_different_shapes_is_unsupported():
    nodes = [helper.make_node("SequenceAt", ["s", "p"], ["v"])]
    model = make_model(nodes, [_seq_vi("s", F32, ["N"]), _vi("p", I64, [])], [_vi("v", F32, ["N"])])
    # a dim_param inside a sequence element is unknown (elements may differ): no common type
    _unsupported(model, "tensors differ in type", example_inputs={"s": [0, 0]})


def test_an_optional_chosen_at_run_time_is_unsupported():
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F32, [1]))
    opt_type = helper.make_optional_type_proto(seq_type)
    x = helper.make_tensor("x", F32, [1], [1.0])
    then_b = helper.make_graph(
        [helper.make_node("Optional", [], ["e"], type=seq_type)],
        "then",
        [],
        [helper.make_value_info("e", opt_type)],
    )
    else_b = helper.make_graph(
        [
            helper.make_node("Constant", [], ["c"], value=x),
            helper.make_node("SequenceConstruct", ["c"], ["s"]),
            helper.make_node("Optional", ["s"], ["f"]),
        ],
        "else",
        [],
        [helper.make_value_info("f", opt_type)],
    )
    nodes = [helper.make_node("If", ["cond"], ["o"], then_branch=then_b, else_branch=else_b)]
    model = make_model(nodes, [_vi("cond", 9, [])], [helper.make_value_info("o", opt_type)])
    _unsupported(model, "empty optional")


def test_malformed_sequence_nodes_are_clear_errors():
    split = helper.make_tensor("split", I64, [2], [2, 2])
    nodes = [helper.make_node("SplitToSequence", ["x", "split"], ["o"])]
    model = make_model(nodes, [_vi("x", F32, [5])], [_seq_vi("o", F32, None)], initializers=[split])
    with pytest.raises(FrontendError, match=r"split sizes \[2, 2\] do not add up to the dim 5"):
        from_onnx(model)
    far = helper.make_tensor("far", I64, [], [3])
    nodes = [helper.make_node("SequenceAt", ["s", "far"], ["v"])]
    model = make_model(nodes, [_seq_vi("s", F32, [2])], [_vi("v", F32, [2])], initializers=[far])
    with pytest.raises(FrontendError, match=r"position 3 is out of range .* \(-2 to 1\)"):
        from_onnx(model, example_inputs={"s": [0, 0]})
    nodes = [helper.make_node("SplitToSequence", ["x"], ["o"], axis=0)]
    model = make_model(nodes, [_vi("x", F32, [5000])], [_seq_vi("o", F32, None)])
    _unsupported(model, "a sequence of 5000 tensors: passlens keeps up to 4096")


def _if_of_sequences(cond_input: bool):
    """If(cond) giving a sequence of 1 tensor in one branch and of 2 in the other."""
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F32, [1]))

    def branch(n, name):
        value = helper.make_tensor("v", F32, [1], [float(n)])
        nodes = [
            helper.make_node("Constant", [], ["c" + name], value=value),
            helper.make_node("SequenceConstruct", ["c" + name] * n, ["s" + name]),
        ]
        return helper.make_graph(nodes, name, [], [helper.make_value_info("s" + name, seq_type)])

    nodes = [
        helper.make_node(
            "If", ["cond"], ["o"], then_branch=branch(1, "t"), else_branch=branch(2, "e")
        )
    ]
    inputs, inits = [], []
    if cond_input:
        inputs = [_vi("cond", TensorProto.BOOL, [])]
    else:
        inits = [helper.make_tensor("cond", TensorProto.BOOL, [], [False])]
    return make_model(nodes, inputs, [helper.make_value_info("o", seq_type)], initializers=inits)


def test_an_if_choosing_a_sequence_length_at_run_time_is_unsupported():
    _unsupported(_if_of_sequences(True), "sequences of different lengths")
    (seq,) = run(from_onnx(_if_of_sequences(False)))  # a constant condition: the else branch
    assert len(seq) == 2 and all(np.array_equal(v, [2.0]) for v in seq)


def test_a_value_cache_takes_an_equal_sequence_again():
    from compiler.interpret import ValueCache, evaluate

    module = from_onnx(_sequence_map_model(4), example_inputs={"s": [0, 0]})
    s = [np.ones(4, np.float32), np.zeros(4, np.float32)]
    t = np.arange(4, dtype=np.float32)
    cache = ValueCache()
    first = evaluate(module, [s, t], cache=cache).outputs
    again = evaluate(module, [[v.copy() for v in s], t], cache=cache).outputs
    _same(again, [list(v) for v in first])
    with pytest.raises(InterpretError, match="different value for parameter %s"):
        evaluate(module, [[s[1], s[0]], t], cache=cache)


def test_sequence_inputs_and_outputs_export_as_onnx_sequences():
    from compiler.frontend import to_onnx

    module = from_onnx(_sequence_ops_model(), example_inputs={"s": [0, 0, 0]})
    exported = to_onnx(module)
    kinds = [vi.type.WhichOneof("value") for vi in exported.graph.input]
    assert kinds == ["sequence_type", "tensor_type", "tensor_type"]
    s = [RNG.standard_normal((2, 4)).astype(np.float32) for _ in range(3)]
    t = RNG.standard_normal((2, 4)).astype(np.float32)
    p = np.array(1, np.int64)
    _same(run(module, s, t, p), _ort(exported, {"s": s, "t": t, "p": p}))
