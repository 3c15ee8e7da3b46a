"""The ORT stage's shortcuts give what ORT gives the plain way.

The stage makes every session from one file whose weights ORT maps (not from the model's
bytes), one-threaded with no arena, memory pattern or weight prepacking, and its one-go session
(the verbose log's applications, and the model at the level in one go, which the last step is
compared with) the same way, not as a user's default session of the bytes. Here, on the
BERT-like layer, the small CNN and an ONNX file of a Conv and a Relu whose weights are big
enough to be mapped, each at the levels it has transformers for:

* the log's applications and every model those sessions write (weights read back from the
  file they refer to) are those of default sessions made from the model's bytes;
* the recorded steps (names, log positions, models with their weights) are those of the stage
  rebuilt the plain way: a default session of the bytes per application, every model whole.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import explorer
from explorer.onnxruntime.module import ONNXState
from explorer.onnxruntime.ort_steps import (
    applications_and_model,
    captured_stderr,
    disabled_after,
    optimized,
    read_log,
    session,
    write_source,
)
from explorer.onnxruntime.pipeline import Stage
from explorer.onnxruntime.record import Recorder, run_stage


def _conv_relu_file() -> onnx.ModelProto:
    """A Conv (16 -> 16 channels, 9 KB of weights: mapped) then a Relu, as an ONNX file."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["out"], name="relu"),
        ],
        "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 16, 8, 8])],
        [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def inputs(bert, cnn):
    """The ORT stage's input of each model (the model as onnxscript's optimizer left it, with
    its weights; the file as it is), with the levels to try."""

    def stage_input(trace):
        outer = next(s for s in trace.steps if s.depth == 0 and s.name.startswith("ort"))
        return outer.before.proto()

    return {
        "bert": (stage_input(bert), ("basic", "all")),
        "cnn": (stage_input(cnn), ("extended", "all")),
        "file": (_conv_relu_file(), ("extended", "all")),
    }


def _plain(model: onnx.ModelProto, level: str, disabled=(), verbose=False):
    """A default session of the model's bytes (a user's), its model read back whole; with the
    log's applications when ``verbose``."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "plain.onnx")
        with captured_stderr() as log:
            session(model.SerializeToString(), level, disabled, out=out, verbose=verbose)
        written = onnx.load(out)
    return written, read_log(log[0])


def _whole(model: onnx.ModelProto) -> bytes:
    """A model as bytes that two equal models give: every initializer as raw data (whether
    ORT wrote it inline or as a reference), node metadata kept."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for t in m.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t), t.name))
    return m.SerializeToString(deterministic=True)


def _bare(model: onnx.ModelProto) -> bytes:
    """:func:`_whole` without node metadata (the recorder gives the exporter's back to the
    nodes ORT wrote) and with initializers in name order."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for node in m.graph.node:
        del node.metadata_props[:]
    inits = sorted(m.graph.initializer, key=lambda t: t.name)
    whole = [numpy_helper.from_array(numpy_helper.to_array(t), t.name) for t in inits]
    del m.graph.initializer[:]
    m.graph.initializer.extend(whole)
    return m.SerializeToString(deterministic=True)


@pytest.mark.parametrize("name", ["bert", "cnn", "file"])
def test_the_sessions_from_the_mapped_file_write_what_a_user_s_session_writes(
    inputs, name, tmp_path
):
    model, levels = inputs[name]
    path, where = write_source(model, str(tmp_path))
    assert where  # weights were mapped, not all held in the model
    for level in levels:
        applied, one_go = applications_and_model(path, level, str(tmp_path), fast=True)
        plain_one_go, plain_applied = _plain(model, level, verbose=True)
        assert applied == plain_applied and any(m for _, m in applied), (name, level)
        mapped = onnx.ModelProto()
        mapped.ParseFromString(one_go)
        onnx.external_data_helper.load_external_data_for_model(mapped, str(tmp_path))
        assert _whole(mapped) == _whole(plain_one_go), (name, level)
        sets = {tuple(disabled_after(applied, i)) for i, (_, m) in enumerate(applied) if m}
        for disabled in sorted(sets) + [()]:
            data = optimized(path, level, list(disabled), str(tmp_path))
            step = onnx.ModelProto()
            step.ParseFromString(data)
            onnx.external_data_helper.load_external_data_for_model(step, str(tmp_path))
            plain, _ = _plain(model, level, disabled)
            assert _whole(step) == _whole(plain), (name, level, disabled)


def _record(model: onnx.ModelProto, level: str, **options):
    """The ORT stage recorded on ``model`` as explore records it: the run, its steps'
    snapshots and the recorder's notes."""
    state = ONNXState()
    rec = Recorder(state)
    rec.open_stage(f"ort:{level}", state.wrap(model))
    _, run = run_stage(rec, Stage("ort", level), model, [], options)
    rec.close_stage()
    return run, rec.snapshots[1:], rec.notes


def _rebuilt_plainly(model: onnx.ModelProto, level: str):
    """The stage's steps rebuilt without a shortcut: the applications from a user's session,
    a default session of the model's bytes per application that changed the model, each
    model whole, one equal to the one before it dropped; ``(steps, one-go model)``."""
    one_go, applied = _plain(model, level, verbose=True)
    previous, _ = _plain(model, "off")
    steps = []
    for i, (name, modified) in enumerate(applied):
        if not modified:
            continue
        written, _ = _plain(model, level, disabled_after(applied, i))
        if _whole(written) != _whole(previous):
            steps.append((name, i, written))
        previous = written
    return steps, one_go


@pytest.mark.parametrize("name", ["bert", "cnn", "file"])
def test_the_recorded_steps_are_those_rebuilt_the_plain_way(inputs, name):
    model, levels = inputs[name]
    for level in levels:
        plain, plain_one_go = _rebuilt_plainly(model, level)
        for from_bytes in (False, True):
            run, snaps, _ = _record(model, level, from_bytes=from_bytes)
            assert run.equal is True, (name, level, from_bytes)
            got = [(s.pass_name, s.options["log_position"]) for s in snaps]
            assert got == [(n, i) for n, i, _ in plain], (name, level)
            for snap, (_, _, written) in zip(snaps, plain, strict=True):
                assert _bare(snap.module.proto()) == _bare(written), (name, level, snap.pass_name)
        assert _bare(snaps[-1].module.proto()) == _bare(plain_one_go), (name, level)


def test_a_one_go_model_unlike_the_last_step_is_a_warning(inputs, monkeypatch):
    """The byte-for-byte shortcut only says equal: another model is compared by content and
    its difference is a WARNING."""
    import explorer.onnxruntime.ort_steps as ort_steps

    real = ort_steps.run_ort_stage

    def unlike(*args, **kwargs):
        run = real(*args, **kwargs)
        run.one_go = run.base  # ORT's save of the input: not the last step
        return run

    monkeypatch.setattr(ort_steps, "run_ort_stage", unlike)
    model, _ = inputs["cnn"]
    run, snaps, notes = _record(model, "all")
    assert snaps and run.equal is False
    assert any(n.startswith("WARNING: the last rebuilt ORT step differs") for n in notes)


def test_the_one_go_model_of_a_trace_refers_to_the_stage_s_file_for_kept_weights(bert):
    """The one-go model the trace keeps is ORT's from the mapped file: a weight it kept is a
    reference the run names, a weight it made is held in it; equal to the last step."""
    run = bert.onnxruntime
    one_go = onnx.ModelProto()
    one_go.ParseFromString(run.one_go)
    kept = [t for t in one_go.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    assert kept and all(
        {e.key: e.value for e in t.external_data}["location"] == "passlens-input.bin" for t in kept
    )
    from explorer.onnxruntime.ort_steps import source_weight

    assert {source_weight(run, t) for t in kept} <= set(run.source.values())
    assert run.equal is True
    assert len(run.one_go) < sum(n for _, n in run.source) // 2  # kept weights not copied


def test_a_file_s_stage_rebuilt_in_the_child_is_the_same(tmp_path):
    """A model from a file is rebuilt in a child process: the same steps, equal to its
    one-go model."""
    model = _conv_relu_file()
    path = tmp_path / "conv_relu.onnx"
    onnx.save(model, str(path))
    trace = explorer.explore(str(path), compiler="onnxruntime", pipeline="ort", progress=False)
    run = trace.onnxruntime
    assert run.isolated and run.equal is True
    plain, _ = _rebuilt_plainly(model, "all")
    assert [(s.name, s.position) for s in run.steps] == [(n, i) for n, i, _ in plain]


def test_the_stage_s_file_holds_the_model_whole(tmp_path):
    """The input's file (the model without its big weights' data, beside the file of that
    data) read back is the model, every field of it: metadata, docs, functions, value infos,
    small, big, string and sparse weights, subgraphs; the model given is left as it was."""
    rng = np.random.default_rng(2)
    big = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "big")
    big.doc_string = "a weight with a doc"
    entry = big.metadata_props.add()
    entry.key, entry.value = "origin", "test"
    small = numpy_helper.from_array(np.arange(4, dtype=np.int64), "small")
    words = helper.make_tensor("words", TensorProto.STRING, [2], [b"a", b"b"])
    floats = helper.make_tensor("floats", TensorProto.FLOAT, [300], [0.5] * 300)  # float_data
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "sparse"),
        numpy_helper.from_array(np.array([0, 3], np.int64), "sparse_indices"),
        [4],
    )
    then = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [64])],
        [numpy_helper.from_array(rng.standard_normal(2000).astype(np.float32), "inner")],
    )
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "big"], ["y"], name="mm", doc_string="d"),
            helper.make_node("If", ["c"], ["z"], then_branch=then, else_branch=then),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [big, small, words, floats],
        doc_string="a graph",
        value_info=[helper.make_tensor_value_info("z", TensorProto.FLOAT, [64])],
        sparse_initializer=[sparse],
    )
    function = helper.make_function(
        "local",
        "f",
        ["a"],
        ["b"],
        [helper.make_node("Relu", ["a"], ["b"])],
        [helper.make_opsetid("", 17)],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], functions=[function]
    )
    model.doc_string, model.producer_name, model.model_version = "a model", "tests", 7
    helper.set_model_props(model, {"author": "passlens"})
    given = model.SerializeToString(deterministic=True)
    path, where = write_source(model, str(tmp_path))
    assert model.SerializeToString(deterministic=True) == given
    assert sorted(where.values()) == ["big"]  # 16 KB; the others small, not raw, or inside
    back = onnx.load(path)  # its external data read from the file beside it
    for t in back.graph.initializer:  # onnx's loader sets the default location it read
        if t.data_location == TensorProto.DEFAULT:
            t.ClearField("data_location")
    assert back.SerializeToString(deterministic=True) == given
