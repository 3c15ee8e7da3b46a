"""TfIdfVectorizer on integer token ids: the node tests, models against onnxruntime (a
symbolic batch, every mode, skips, weights), a compiled model, and clear errors."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from compiler.frontend import FrontendError, UnsupportedOperatorError, from_onnx
from compiler.interpret import run
from tests.compiler.frontend.onnx_helpers import load_harness as _harness

RNG = np.random.default_rng(9)
POOL = dict(ngram_counts=[0, 4], pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])


def test_tfidf_node_tests_pass():
    harness = _harness()
    root = harness.node_test_dir()
    results = [harness.run_case(d) for d in sorted(root.glob("test_tfidfvectorizer_*"))]
    assert len(results) == 7
    assert [r.message for r in results if r.status != "passed"] == []


def _model(shape, dtype=TensorProto.INT64, out=None, **attrs):
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", dtype, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out or ["a", "b"][: len(shape)])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def _ort(model, x):
    return ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})


@pytest.mark.parametrize(
    "mode, weights", [("TF", None), ("IDF", None), ("IDF", "w"), ("TFIDF", "w"), ("TFIDF", None)]
)
@pytest.mark.parametrize("lo, hi, skips", [(1, 1, 0), (1, 2, 3), (2, 2, 0), (2, 2, 2)])
def test_tfidf_against_onnxruntime_with_a_symbolic_batch(mode, weights, lo, hi, skips):
    attrs = dict(POOL, mode=mode, min_gram_length=lo, max_gram_length=hi, max_skip_count=skips)
    attrs["ngram_indexes"] = [6, 0, 1, 2, 3, 4, 5]
    if weights:
        attrs["weights"] = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 4.0]
    model = _model(["batch", 10], TensorProto.INT32, **attrs)
    module = from_onnx(model)
    for batch in (1, 4):
        x = RNG.integers(1, 9, (batch, 10)).astype(np.int32)
        got, expected = run(module, x)[0], _ort(model, x)[0]
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected)


def test_tfidf_compiles():
    attrs = dict(POOL, mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=2)
    attrs["ngram_indexes"] = list(range(7))
    model = _model([12], **attrs, out=[7])
    module = from_onnx(model)
    from compiler.backend import build

    x = RNG.integers(1, 9, 12).astype(np.int64)
    np.testing.assert_allclose(build(module)(x)[0], run(module, x)[0])
    np.testing.assert_allclose(run(module, x)[0], _ort(model, x)[0])


def test_tfidf_errors():
    attrs = dict(POOL, mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0)
    with pytest.raises(FrontendError, match="7 ngram_indexes for 7 pool|fewer entries"):
        from_onnx(_model([6], **attrs, ngram_indexes=[0, 1, 2], out=[3]), strict=True)
    with pytest.raises(FrontendError, match="needs a static row length"):
        from_onnx(_model(["n"], **attrs, ngram_indexes=list(range(7)), out=[7]), strict=True)
    strings = dict(attrs, pool_strings=["a", "b"], ngram_counts=[0, 2])
    del strings["pool_int64s"]
    with pytest.raises(UnsupportedOperatorError, match="a pool of strings"):
        from_onnx(_model([6], **strings, ngram_indexes=[0, 1], out=[2]), strict=True)
