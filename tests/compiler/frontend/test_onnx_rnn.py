"""ONNX recurrent ops and loops (issue #17, family "rnn"): RNN, GRU and LSTM unrolled over a
static sequence length, and run as Loop nodes over a symbolic one. The backend node tests
that now pass, small models against onnxruntime (every direction, both layouts, initial
states, sequence_lens, peepholes, clip, linear_before_reset, activations; a symbolic batch),
compiled with the LLVM backend, the clear errors of forms not converted, and LSTM text
classifiers exported by torch through the whole pipeline. Loop and Scan unroll for constant
trip counts and lengths, and run as Loop nodes otherwise."""

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
from tests.compiler.frontend.onnx_helpers import round_trip_problem

F32, I32 = TensorProto.FLOAT, TensorProto.INT32
RNG = np.random.default_rng(17)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@pytest.fixture(scope="module")
def harness():
    return _harness()


_PASSING = ("test_rnn_", "test_simple_rnn_", "test_gru_", "test_lstm_")


def test_node_tests_of_the_family_pass(harness):
    root = harness.node_test_dir()
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith(_PASSING))
    assert len(dirs) == 18
    bad = []
    for d in dirs:
        r = harness.run_case(d)
        if r.status != "passed":
            bad.append(f"{r.name}: {r.status} {r.message}")
    assert not bad, bad


def test_node_tests_of_the_family_round_trip_through_to_onnx(harness):
    """The unrolled recurrences and scans export (as their parts) and give the same numbers in
    onnxruntime."""

    ort.set_default_logger_severity(3)
    root = harness.node_test_dir()
    dirs = sorted(
        d for d in root.iterdir() if d.is_dir() and d.name.startswith((*_PASSING, "test_scan"))
    )
    problems = [f"{d.name}: {p}" for d in dirs if (p := round_trip_problem(d))]
    assert not problems, problems


# ----- helpers -----------------------------------------------------------------------------


def _recurrent_model(
    op,
    direction="forward",
    layout=0,
    hidden=4,
    features=3,
    seq=5,
    batch="b",
    bias=True,
    initial=False,
    lens=False,
    peepholes=False,
    with_c=True,
    **attrs,
):
    """A model of one RNN / GRU / LSTM node: weights as initializers; X, the initial states
    and sequence_lens as inputs (a symbolic batch ``b``)."""
    nd = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    inits = [
        numpy_helper.from_array(
            (RNG.standard_normal((nd, g * hidden, features)) * 0.5).astype(np.float32), "W"
        ),
        numpy_helper.from_array(
            (RNG.standard_normal((nd, g * hidden, hidden)) * 0.5).astype(np.float32), "R"
        ),
    ]
    x_shape = [seq, batch, features] if layout == 0 else [batch, seq, features]
    state_shape = [nd, batch, hidden] if layout == 0 else [batch, nd, hidden]
    inputs = [helper.make_tensor_value_info("X", F32, x_shape)]
    names = ["X", "W", "R", ""]
    if bias:
        b = (RNG.standard_normal((nd, 2 * g * hidden)) * 0.5).astype(np.float32)
        inits.append(numpy_helper.from_array(b, "B"))
        names[3] = "B"
    names += ["", "", ""] if op == "LSTM" else ["", ""]
    if lens:
        inputs.append(helper.make_tensor_value_info("lens", I32, [batch]))
        names[4] = "lens"
    if initial:
        inputs.append(helper.make_tensor_value_info("h0", F32, state_shape))
        names[5] = "h0"
        if op == "LSTM":
            inputs.append(helper.make_tensor_value_info("c0", F32, state_shape))
            names[6] = "c0"
    if peepholes:
        p = (RNG.standard_normal((nd, 3 * hidden)) * 0.5).astype(np.float32)
        inits.append(numpy_helper.from_array(p, "P"))
        names.append("P")
    while names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" and with_c else [])
    node = helper.make_node(
        op, names, outs, hidden_size=hidden, direction=direction, layout=layout, **attrs
    )
    graph = helper.make_graph(
        [node],
        "g",
        inputs,
        [helper.make_tensor_value_info(o, F32, [None] * (4 if o == "Y" else 3)) for o in outs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def _inputs(model, batch, seq=5, layout=0, features=3, full=False):
    """Random inputs for a model of :func:`_recurrent_model`."""
    out = []
    for vi in model.graph.input:
        if vi.name == "X":
            shape = (seq, batch, features) if layout == 0 else (batch, seq, features)
            out.append(RNG.standard_normal(shape).astype(np.float32))
        elif vi.name == "lens":
            lens = RNG.integers(1, seq + 1, batch).astype(np.int32)
            lens[0] = seq if full else 1
            out.append(lens)
        else:
            dims = [d.dim_value or batch for d in vi.type.tensor_type.shape.dim]
            out.append(RNG.standard_normal(dims).astype(np.float32))
    return out


def ort_run(model, *inputs):
    """onnxruntime's outputs; its CPU kernels have no batchwise layout, so a layout-1 node is
    run as its layout-0 twin on transposed inputs, its outputs transposed back."""
    node = model.graph.node[0]
    layout = next((a.i for a in node.attribute if a.name == "layout"), 0)
    if layout == 1:
        model = onnx.ModelProto.FromString(model.SerializeToString())
        for a in model.graph.node[0].attribute:
            if a.name == "layout":
                a.i = 0
        for vi in model.graph.input:
            if vi.name in ("X", "h0", "c0"):
                dims = vi.type.tensor_type.shape.dim
                first, second = onnx.TensorShapeProto.Dimension(), onnx.TensorShapeProto.Dimension()
                first.CopyFrom(dims[0]), second.CopyFrom(dims[1])
                dims[0].CopyFrom(second), dims[1].CopyFrom(first)
        names = [vi.name for vi in model.graph.input]
        inputs = [
            x.transpose(1, 0, 2) if n in ("X", "h0", "c0") else x
            for n, x in zip(names, inputs, strict=True)
        ]
    sess = ort.InferenceSession(model.SerializeToString())
    outs = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs, strict=True)})
    if layout == 1:
        outs = [o.transpose(2, 0, 1, 3) if o.ndim == 4 else o.transpose(1, 0, 2) for o in outs]
    return outs


def assert_matches_ort(model, *inputs, compile=False):
    module = from_onnx(model)
    got = run(module, *inputs)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    expected = ort_run(model, *inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
    if compile:
        from compiler.backend import build

        built = build(module)(*inputs)
        built = list(built) if isinstance(built, (list, tuple)) else [built]
        for b, g in zip(built, got, strict=True):
            assert b.shape == g.shape
            np.testing.assert_allclose(b, g, rtol=1e-5, atol=1e-6)
    return module


# ----- RNN, GRU, LSTM against onnxruntime -------------------------------------------------


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_directions_and_layouts_match_onnxruntime_with_a_symbolic_batch(op, direction, layout):
    model = _recurrent_model(op, direction, layout, initial=True, lens=True)
    module = from_onnx(model)
    assert "b" in str(module.main.params[0].ty)
    for batch in (1, 3):
        inputs = _inputs(model, batch, layout=layout)
        assert_matches_ort(model, *inputs)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_without_bias_and_initial_states(op):
    model = _recurrent_model(op, "bidirectional", bias=False)  # zero states of a symbolic batch
    for batch in (2, 4):
        assert_matches_ort(model, *_inputs(model, batch))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_clip_matches_onnxruntime(op):
    model = _recurrent_model(op, "forward", clip=0.3, initial=True)
    assert_matches_ort(model, *_inputs(model, 2))


def test_sequence_lens_covering_every_step_are_not_masked():
    lens = numpy_helper.from_array(np.array([5, 5], np.int32), "lens")
    model = _recurrent_model("GRU", "reverse", batch=2)
    assert len(model.graph.node[0].input) == 4  # X, W, R, B
    model.graph.node[0].input.append("lens")
    model.graph.initializer.append(lens)
    module = assert_matches_ort(model, *_inputs(model, 2))
    assert "where" not in str(module)


@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_linear_before_reset(lbr):
    model = _recurrent_model("GRU", "bidirectional", initial=True, linear_before_reset=lbr)
    assert_matches_ort(model, *_inputs(model, 2))


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_peepholes_and_input_forget(direction):
    model = _recurrent_model("LSTM", direction, initial=True, lens=True, peepholes=True)
    assert_matches_ort(model, *_inputs(model, 3))
    model = _recurrent_model("LSTM", direction, peepholes=True, input_forget=1)
    assert_matches_ort(model, *_inputs(model, 2))


@pytest.mark.parametrize(
    "op, activations, alpha, beta",
    [
        ("RNN", ["Relu"], None, None),
        ("RNN", ["LeakyRelu"], [0.2], None),
        ("RNN", ["Softsign"], None, None),
        ("RNN", ["Affine"], [0.5], [0.1]),
        ("GRU", ["HardSigmoid", "ScaledTanh"], [0.3, 0.8], [0.4, 1.5]),
        ("GRU", ["Sigmoid", "Elu"], [0.7], None),
        ("LSTM", ["Sigmoid", "Softplus", "ThresholdedRelu"], [0.1], None),
    ],
)
def test_activations_match_onnxruntime(op, activations, alpha, beta):
    attrs = {"activations": activations}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    model = _recurrent_model(op, "forward", initial=True, **attrs)
    assert_matches_ort(model, *_inputs(model, 2))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_recurrences_compile(op):
    model = _recurrent_model(
        op, "bidirectional", 1, initial=True, lens=True, peepholes=op == "LSTM"
    )
    assert_matches_ort(model, *_inputs(model, 3, layout=1), compile=True)


# ----- clear errors -------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_a_symbolic_sequence_length_runs_as_a_loop(op, direction, layout):
    """A sequence length known only at run time: each direction is one Loop node over a body
    function (not unrolled), Y keeps the symbolic length, the numbers match onnxruntime for
    several lengths (masks by sequence_lens included), and it compiles."""
    from compiler.ir import Loop, verify

    model = _recurrent_model(op, direction, layout, seq="s", initial=True, lens=True)
    module = from_onnx(model)
    verify(module)
    loops = [n for n in module.main.iter_nodes() if isinstance(n, Loop)]
    assert len(loops) == (2 if direction == "bidirectional" else 1)
    assert all(module[lp.func].is_private for lp in loops)
    assert [lp.func for lp in loops][0] == f"{op.lower()}_body"
    from compiler.ir import parse, structural_equal

    weights = {k: c.data for k, c in module.constants().items()}
    assert structural_equal(parse(str(module), params=weights), module)  # the text round-trips
    y = module.main.ret_type.fields[0]
    assert str(y) == ("f32[s, 2, b, 4]" if layout == 0 else "f32[b, s, 2, 4]").replace(
        ", 2,", ", 2," if direction == "bidirectional" else ", 1,"
    )
    for seq in (1, 6):
        inputs = _inputs(model, 2, seq=seq, layout=layout)
        assert_matches_ort(model, *inputs, compile=seq == 6 and op == "LSTM")


def test_a_long_sequence_runs_as_a_loop_instead_of_unrolling():
    from compiler.frontend.onnx_ops import rnn
    from compiler.ir import Loop

    model = _recurrent_model("GRU", seq=rnn.MAX_UNROLL + 1)
    module = from_onnx(model)
    assert any(isinstance(n, Loop) for n in module.main.iter_nodes())
    assert len(list(module.main.iter_nodes())) < 40  # one body, not 257 copies
    inputs = _inputs(model, 1, seq=rnn.MAX_UNROLL + 1)
    assert_matches_ort(model, *inputs)


def test_an_unknown_activation_is_unsupported():
    model = _recurrent_model("RNN")
    model.graph.node[0].attribute.append(helper.make_attribute("activations", ["Gelu"]))
    with pytest.raises(UnsupportedOperatorError, match="RNN activation 'Gelu'"):
        from_onnx(model, check=False, strict=True)
    # not strict: the node is kept as it is, for onnxruntime to run
    assert 'target="ai.onnx::RNN"' in str(from_onnx(model, check=False))


def test_invalid_attributes_are_clear_errors():
    model = _recurrent_model("GRU")
    for a in model.graph.node[0].attribute:
        if a.name == "hidden_size":
            a.i = 5
    with pytest.raises(OnnxImportError, match="W must have shape"):
        from_onnx(model, check=False)
    model = _recurrent_model("GRU", activations=["Sigmoid"])
    with pytest.raises(OnnxImportError, match="activations must list 2 functions"):
        from_onnx(model, check=False)
    model = _recurrent_model("RNN", "bidirectional", batch=2, initial=True)
    model.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 1  # h0 of one direction
    with pytest.raises(OnnxImportError, match="does not match 2 direction"):
        from_onnx(model, check=False)
    model = _recurrent_model("LSTM", layout=0)
    for a in model.graph.node[0].attribute:
        if a.name == "layout":
            a.i = 3
    with pytest.raises(OnnxImportError, match="layout must be 0 or 1"):
        from_onnx(model, check=False)


# ----- an LSTM text classifier exported by torch ------------------------------------------


def _lstm_classifier(torch, pool: str):
    """nn.Embedding + a 2-layer bidirectional nn.LSTM + nn.Linear on the last step's output
    (``pool="last"``) or the mean over the sequence (``"mean"``)."""

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 16)
            self.lstm = torch.nn.LSTM(16, 12, num_layers=2, bidirectional=True, batch_first=True)
            self.head = torch.nn.Linear(24, 4)

        def forward(self, ids):
            y, _ = self.lstm(self.embed(ids))
            return self.head(y[:, -1] if pool == "last" else y.mean(dim=1))

    return Classifier()


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_lstm_text_classifier_from_torch_checks_clean_and_compiles(dynamo, tmp_path):
    """nn.Embedding + a 2-layer bidirectional nn.LSTM + nn.Linear (random weights), exported
    at a fixed sequence length: the exporters emit ONNX LSTM nodes, which unroll; the trace
    checks clean against onnxruntime and the compiled executable matches it."""
    torch = pytest.importorskip("torch")
    import explorer

    torch.manual_seed(0)
    model = _lstm_classifier(torch, pool="last").eval()
    ids = torch.randint(0, 50, (2, 7))
    path = tmp_path / "lstm.onnx"
    torch.onnx.export(model, (ids,), str(path), dynamo=dynamo, input_names=["ids"])
    proto = onnx.load(str(path))
    assert [n.op_type for n in proto.graph.node].count("LSTM") == 2
    trace = explorer.explore(str(path), (ids,), "default,legalize-ops,codegen")
    assert trace.failure is None
    report = trace.check((ids,), progress=False)
    assert report.numbers_checked
    assert [str(f) for f in report.findings if f.is_failure] == []
    (expected,) = ort_run(proto, ids.numpy())
    (got,) = trace["codegen"].executable()(ids.numpy())
    assert got.shape == expected.shape == (2, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_lstm_text_classifier_with_a_dynamic_sequence_runs_as_loops(tmp_path):
    """The same kind of classifier exported with dynamic batch and sequence axes: each LSTM
    direction of each layer becomes one Loop node over the symbolic sequence; the trace
    checks clean and the compiled executable matches onnxruntime at other lengths."""
    torch = pytest.importorskip("torch")
    import explorer
    from compiler.ir import Loop

    torch.manual_seed(0)
    model = _lstm_classifier(torch, pool="mean").eval()
    ids = torch.randint(0, 50, (2, 7))
    path = tmp_path / "lstm_dynamic.onnx"
    torch.onnx.export(
        model,
        (ids,),
        str(path),
        dynamo=False,
        input_names=["ids"],
        dynamic_axes={"ids": {0: "batch", 1: "seq"}},
    )
    proto = onnx.load(str(path))
    trace = explorer.explore(str(path), (ids,), "default,legalize-ops,codegen")
    assert trace.failure is None
    module = trace["from_onnx"].module
    assert len([n for n in module.main.iter_nodes() if isinstance(n, Loop)]) == 4
    report = trace.check((ids,), progress=False)
    assert report.numbers_checked
    assert [str(f) for f in report.findings if f.is_failure] == []
    exe = trace["codegen"].executable()
    for shape in ((2, 7), (3, 11), (1, 1)):
        x = torch.randint(0, 50, shape).numpy()
        (expected,) = ort_run(proto, x)
        (got,) = exe(x)
        assert got.shape == expected.shape == (shape[0], 4)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# ----- Loop and Scan, unrolled ------------------------------------------------------------


def _loop_model(trip=4, trip_as_input=False, cond_from_data=False):
    """y carried (y + x * i), and a scan output y * 2 each iteration; x from outside."""
    i64, b = TensorProto.INT64, TensorProto.BOOL
    body_nodes = [
        helper.make_node("Cast", ["i"], ["i_f"], to=F32),
        helper.make_node("Mul", ["x", "i_f"], ["xi"]),
        helper.make_node("Add", ["y_in", "xi"], ["y_out"]),
        helper.make_node("Add", ["y_out", "y_out"], ["scan"]),
    ]
    if cond_from_data:
        body_nodes += [
            helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["cond_out"]),
        ]
    else:
        body_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    body = helper.make_graph(
        body_nodes,
        "body",
        [
            helper.make_tensor_value_info("i", i64, []),
            helper.make_tensor_value_info("cond_in", b, []),
            helper.make_tensor_value_info("y_in", F32, ["n", 3]),
        ],
        [
            helper.make_tensor_value_info("cond_out", b, []),
            helper.make_tensor_value_info("y_out", F32, ["n", 3]),
            helper.make_tensor_value_info("scan", F32, ["n", 3]),
        ],
        [numpy_helper.from_array(np.array(100.0, np.float32), "limit")],
    )
    inputs = [
        helper.make_tensor_value_info("x", F32, ["n", 3]),
        helper.make_tensor_value_info("y0", F32, ["n", 3]),
    ]
    inits = [numpy_helper.from_array(np.array(True), "cond")]
    if trip_as_input:
        inputs.append(helper.make_tensor_value_info("M", i64, []))
    else:
        inits.append(numpy_helper.from_array(np.array(trip, np.int64), "M"))
    node = helper.make_node("Loop", ["M", "cond", "y0"], ["y", "ys"], body=body)
    graph = helper.make_graph(
        [node],
        "g",
        inputs,
        [
            helper.make_tensor_value_info("y", F32, ["n", 3]),
            helper.make_tensor_value_info("ys", F32, [None, "n", 3]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def test_loop_with_a_constant_trip_count_unrolls_and_matches_onnxruntime():
    model = _loop_model(4)
    module = from_onnx(model)
    assert "n" in str(module.main.params[0].ty)
    for n in (1, 3):
        x, y0 = (RNG.standard_normal((n, 3)).astype(np.float32) for _ in range(2))
        assert_matches_ort(model, x, y0, compile=n == 3)
    assert str(module).count("cast(") == 4  # one body per iteration
    assert "-> (f32[n, 3], f32[4, n, 3])" in str(module)


@pytest.mark.parametrize("form", ["trip_as_input", "cond_from_data"])
def test_loops_not_unrolled_become_loop_nodes(form):
    """A trip count given at run time, or an early exit computed from data: one Loop node
    whose scan output has a run-time length; it matches onnxruntime (zero iterations
    included), compiles, and exports back to an ONNX Loop."""
    from compiler.backend import build
    from compiler.frontend import to_onnx
    from compiler.ir import Loop, verify

    model = _loop_model(**{form: True})
    module = from_onnx(model)
    verify(module)
    (loop,) = [n for n in module.main.iter_nodes() if isinstance(n, Loop)]
    assert loop.num_carried == 1 and loop.num_scan == 1
    assert str(loop.ty) == "(f32[n, 3], f32[?, n, 3])"
    assert "loop @" in str(module) and str(module).count("cast(") == 1  # one body
    exe = build(module)
    exported = to_onnx(module)
    assert [n.op_type for n in exported.graph.node].count("Loop") == 1
    trips = (0, 1, 5) if form == "trip_as_input" else (4,)
    for trip in trips:
        x, y0 = (RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
        x = np.abs(x) + 5  # the data-dependent exit comes after a few iterations
        inputs = [x, y0] + ([np.array(trip, np.int64)] if form == "trip_as_input" else [])
        expected = ort_run(model, *inputs)
        for got in (run(module, *inputs), exe(*inputs)):
            assert len(got) == 2
            for g, e in zip(got, expected, strict=True):
                if trip == 0 and g.ndim == 3:  # onnxruntime leaves an empty scan (0, 0, 3)
                    assert g.shape == (0, 2, 3) and e.size == 0
                    continue
                assert g.shape == e.shape
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
        for g, e in zip(ort_run(exported, *inputs), expected, strict=True):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    if form == "cond_from_data":
        assert 1 < expected[1].shape[0] < 4  # the exit really came early


def test_a_loop_body_reading_outer_values_captures_them():
    """The body reads x from the enclosing graph: x is a captured argument of the Loop (the
    body function takes it as a parameter), not a value leaking across functions."""
    from compiler.ir import Loop

    module = from_onnx(_loop_model(trip_as_input=True))
    (loop,) = [n for n in module.main.iter_nodes() if isinstance(n, Loop)]
    body = module[loop.func]
    assert [p.name for p in body.params][:3] == ["i", "cond", "state0"]
    assert module.main.params[0] in loop.captured  # x
    assert len(body.params) == len(loop.args)


def test_a_loop_that_never_ends_is_stopped(monkeypatch):
    from compiler import interpret
    from compiler.interpret import InterpretError

    monkeypatch.setattr(interpret, "MAX_LOOP_ITERATIONS", 50)
    model = _loop_model(trip_as_input=True)
    module = from_onnx(model)
    x, y0 = (np.ones((1, 3), np.float32) for _ in range(2))
    with pytest.raises(InterpretError, match="ran 50 iterations without ending"):
        run(module, x, y0, np.array(10**9, np.int64))


def _scan_model(in_dir=0, out_dir=0, in_axis=0, out_axis=0):
    """A running sum over a scan input (state [2]), scan outputs the sums and x * 3."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
            helper.make_node("Mul", ["x_t", "three"], ["x3"]),
            helper.make_node("Identity", ["s_out"], ["s_scan"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("s_in", F32, [2]),
            helper.make_tensor_value_info("x_t", F32, [2]),
        ],
        [
            helper.make_tensor_value_info("s_out", F32, [2]),
            helper.make_tensor_value_info("s_scan", F32, [2]),
            helper.make_tensor_value_info("x3", F32, [2]),
        ],
        [numpy_helper.from_array(np.array(3.0, np.float32), "three")],
    )
    x_shape = [5, 2] if in_axis == 0 else [2, 5]
    node = helper.make_node(
        "Scan",
        ["s0", "x"],
        ["s", "sums", "x3s"],
        body=body,
        num_scan_inputs=1,
        scan_input_axes=[in_axis],
        scan_input_directions=[in_dir],
        scan_output_axes=[out_axis, 0],
        scan_output_directions=[out_dir, 0],
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("s0", F32, [2]),
            helper.make_tensor_value_info("x", F32, x_shape),
        ],
        [
            helper.make_tensor_value_info("s", F32, [2]),
            helper.make_tensor_value_info("sums", F32, [None, None]),
            helper.make_tensor_value_info("x3s", F32, [5, 2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, x_shape


@pytest.mark.parametrize("in_dir, out_dir", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("in_axis, out_axis", [(0, 0), (1, 1), (-1, -1)])
def test_scan_unrolls_and_matches_onnxruntime(in_dir, out_dir, in_axis, out_axis):
    model, x_shape = _scan_model(in_dir, out_dir, in_axis, out_axis)
    s0 = RNG.standard_normal(2).astype(np.float32)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    assert_matches_ort(model, s0, x, compile=(in_dir, out_dir, in_axis) == (1, 1, 1))


def test_the_expanded_linear_attention_node_tests_pass(harness):
    """Their Scan runs over inputs reshaped by shapes computed from static ones (left unknown
    at import): the scan refines them to static shapes and unrolls."""
    root = harness.node_test_dir()
    dirs = sorted(
        d
        for d in root.iterdir()
        if d.name.startswith("test_linear_attention_") and d.name.endswith("_expanded")
    )
    assert len(dirs) == 14
    bad = [f"{r.name}: {r.status} {r.message}" for r in map(harness.run_case, dirs)]
    assert [b for b in bad if ": passed " not in b] == []


def test_the_scan_node_tests_pass(harness):
    """Scan-8 (batched) and Scan-9; then the Scan-9 tests brought to opset 13 by onnx's version
    converter (the Scan-11 form) give the expected outputs too."""
    from onnx import version_converter

    for name in ("test_scan_sum", "test_scan9_sum", "test_scan9_scalar", "test_scan9_multi_state"):
        r = harness.run_case(harness.node_test_dir() / name)
        assert r.status == "passed", f"{name}: {r.status} {r.message}"
    for name in ("test_scan9_sum", "test_scan9_scalar", "test_scan9_multi_state"):
        case = harness.load_case(harness.node_test_dir() / name)
        model = version_converter.convert_version(onnx.load_from_string(case.model), 13)
        inputs = [numpy_helper.to_array(t) for t in case.inputs]
        got = run(from_onnx(model), *inputs)
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        expected = [numpy_helper.to_array(t) for t in case.outputs]
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("in_dir, out_dir", [(0, 0), (1, 1)])
@pytest.mark.parametrize("in_axis, out_axis", [(0, 0), (1, 1)])
def test_a_scan_over_a_symbolic_length_runs_as_a_loop(in_dir, out_dir, in_axis, out_axis):
    from compiler.backend import build
    from compiler.ir import Loop

    model, x_shape = _scan_model(in_dir, out_dir, in_axis, out_axis)
    model.graph.input[1].type.tensor_type.shape.dim[in_axis].dim_param = "t"
    model.graph.output[2].type.tensor_type.shape.dim[0].dim_param = "t"
    module = from_onnx(model)
    assert any(isinstance(n, Loop) for n in module.main.iter_nodes())
    assert "t" in str(module.main.ret_type.fields[1])  # the stacked length stays symbolic
    exe = build(module)
    for t in (1, 7):
        shape = [t, 2] if in_axis == 0 else [2, t]
        s0 = RNG.standard_normal(2).astype(np.float32)
        x = RNG.standard_normal(shape).astype(np.float32)
        expected = ort_run(model, s0, x)
        for got in (run(module, s0, x), exe(s0, x)):
            for g, e in zip(got, expected, strict=True):
                assert g.shape == e.shape
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_unrolling_has_a_budget(monkeypatch):
    """Nested constant loops that would unroll into millions of nodes are refused (the budget
    made small here to keep the test quick)."""
    from compiler.frontend.onnx_ops import rnn

    monkeypatch.setattr(rnn, "MAX_UNROLLED_NODES", 5000)
    inner = _loop_model(4000)
    loop = inner.graph.node[0]
    outer_body = helper.make_graph(
        [
            helper.make_node(
                "Loop", ["M", "cond", "y_in"], ["y_out", "ys"], body=loop.attribute[0].g
            ),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "outer",
        [
            helper.make_tensor_value_info("j", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("y_in", F32, ["n", 3]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("y_out", F32, ["n", 3]),
        ],
    )
    node = helper.make_node("Loop", ["M", "cond", "y0"], ["y"], body=outer_body)
    graph = helper.make_graph(
        [node], "g", list(inner.graph.input), [inner.graph.output[0]], list(inner.graph.initializer)
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(UnsupportedOperatorError, match="unrolling would make more than 5000"):
        from_onnx(model, check=False, strict=True)
    with pytest.raises(UnsupportedOperatorError, match="unrolling would make more than 5000"):
        from_onnx(_recurrent_model("LSTM", "bidirectional", seq=100), strict=True)
    # not strict: a Loop cannot be kept opaque (its body is a graph), and the error says both
    with pytest.raises(UnsupportedOperatorError, match="cannot be kept as an opaque op"):
        from_onnx(model, check=False)
    from_onnx(_recurrent_model("LSTM", "bidirectional", seq=5))  # within the budget
    from_onnx(_recurrent_model("LSTM", "bidirectional", seq="s"))  # a loop: no unrolling


def test_a_loop_trip_count_computed_from_static_shapes_unrolls():
    model = _loop_model(trip_as_input=True)
    for vi in model.graph.input[:2]:  # x and y0 static: Shape(x)[1] = 3 iterations
        vi.type.tensor_type.shape.dim[0].dim_value = 2
    model.graph.input.pop()  # M
    model.graph.node.insert(0, helper.make_node("Shape", ["x"], ["shape"], start=1, end=2))
    model.graph.node.insert(1, helper.make_node("Squeeze", ["shape"], ["M"]))
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    y0 = RNG.standard_normal((2, 3)).astype(np.float32)
    module = assert_matches_ort(model, x, y0)
    assert "f32[3, 2, 3]" in str(
        module.main.ret_type if hasattr(module.main, "ret_type") else module
    )


def test_scan8_with_short_sequence_lens_is_unsupported(harness):
    case = harness.load_case(harness.node_test_dir() / "test_scan_sum")
    model = onnx.load_from_string(case.model)
    model.graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), "lens"))
    model.graph.node[0].input[0] = "lens"
    with pytest.raises(UnsupportedOperatorError, match="sequence_lens shorter than the inputs"):
        from_onnx(model, check=False)
    model.graph.initializer[-1].CopyFrom(numpy_helper.from_array(np.array([3], np.int64), "lens"))
    inputs = [numpy_helper.to_array(t) for t in case.inputs]
    got = run(from_onnx(model, check=False), *inputs)
    for g, e in zip(got, case.outputs, strict=True):
        np.testing.assert_allclose(g, numpy_helper.to_array(e), rtol=1e-6)
