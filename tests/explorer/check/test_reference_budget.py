"""The check's onnxruntime reference run of a whole ONNX model, and its float64 variant, run in
a child process under an address-space limit (explorer/check/references.py,
compiler.opaque.run_onnx_model): a tiny file that makes a huge value from its data fails there
with one clear error, and a normal model's reference values are those of onnxruntime run here."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

import onnx  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import explorer  # noqa: E402
from compiler import models  # noqa: E402
from compiler.opaque import BudgetError  # noqa: E402
from explorer.check import CheckError, references  # noqa: E402


def contrib_range(limit: float = 1e10, name: str = "g") -> onnx.ModelProto:
    """A model whose ``com.microsoft::Range(0, limit, 1)`` output records a small type (a lie),
    beside an Add of its input: 175 bytes that ask onnxruntime for 4 * limit bytes."""
    inits = [
        numpy_helper.from_array(np.array(v, np.float32), n)
        for n, v in (("s", 0.0), ("l", limit), ("d", 1.0))
    ]
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    nodes = [
        helper.make_node("Range", ["s", "l", "d"], ["r"], domain="com.microsoft"),
        helper.make_node("Add", ["x", "x"], ["y"]),
    ]
    outputs = [
        helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, [8]),
        helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2]),
    ]
    graph = helper.make_graph(nodes, name, [x], outputs, initializer=inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 8
    return model


X = np.ones(2, np.float32)


def test_a_tiny_file_asking_for_40_gb_fails_the_reference_cleanly():
    model = contrib_range()
    assert len(model.SerializeToString()) < 256
    report = explorer.explore(model, (X,)).check()
    note = " ".join(report.notes)
    assert "onnxruntime's reference run of the ONNX model 'g' needed more than 4 GiB" in note
    assert "REFERENCE_BUDGET" in note
    # the imported step's own run of the op is refused before it runs, naming op and limit
    failed = [f.message for f in report.findings if f.kind == "run-failed"]
    assert failed and "com.microsoft::Range could make up to 40,000,000,000 bytes" in failed[0]


def test_the_budget_bites_where_the_machine_would_have_given_the_memory(monkeypatch):
    """1.6 GB would be allocated without the limit; under a 256 MiB budget it is refused."""
    monkeypatch.setattr(references, "REFERENCE_BUDGET", 256 << 20)
    with pytest.raises(
        BudgetError, match=r"reference run of the ONNX model 'g' needed more than 0\.25 GiB"
    ):
        references.onnx_reference({"model": contrib_range(4e8)}, [X])
    with pytest.raises(
        BudgetError, match=r"float64 reference run of the ONNX model 'g' needed more"
    ):
        references._onnx_float64(contrib_range(4e8), [X])


def test_the_reference_gives_what_onnxruntime_gives_here():
    import onnxruntime as ort

    from compiler.frontend import to_onnx

    proto = to_onnx(models.mlp((32, 64, 16), batch=4, seed=2, activation="gelu"))
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    here = sess.run(None, {sess.get_inputs()[0].name: x})
    there = references.onnx_reference({"model": proto}, [x])
    assert len(there) == len(here)
    for a, b in zip(there, here, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    # no float64 Erf in onnxruntime: onnx's reference evaluator runs it, in the child too
    outs, nodes, how = references._onnx_float64(proto, [x])
    assert outs[0].dtype == np.float64 and nodes == {} and "onnx.reference" in how
    np.testing.assert_allclose(outs[0], here[0], rtol=1e-4, atol=1e-5)


def test_a_wrong_number_of_inputs_is_still_a_check_error():
    with pytest.raises(CheckError, match=r"takes 1 input\(s\), 2 given"):
        references.onnx_reference({"model": contrib_range(4.0)}, [X, X])


def test_a_graph_name_with_escapes_is_shown_escaped(monkeypatch):
    monkeypatch.setattr(references, "REFERENCE_BUDGET", 256 << 20)
    with pytest.raises(BudgetError) as err:
        references.onnx_reference({"model": contrib_range(4e8, "\x1b]0;x\x07g")}, [X])
    assert "\x1b" not in str(err.value) and "\\x1b]0;x\\x07g" in str(err.value)


def test_a_small_reference_still_runs():
    outs = references.onnx_reference({"model": contrib_range(4.0)}, [X])
    np.testing.assert_array_equal(outs[0], np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(outs[1], 2 * X)
