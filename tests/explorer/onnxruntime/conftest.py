"""The traces the ONNX Runtime adapter's tests share (each recorded once: an export is ~2 s)."""

from __future__ import annotations

import pytest

from tests.explorer.onnxruntime.models import bert_like, conv_relu_onnx, small_cnn


def _explore(source, inputs, **options):
    import explorer

    return explorer.explore(source, inputs, compiler="onnxruntime", progress=False, **options)


@pytest.fixture(scope="package")
def bert():
    """The BERT-like layer through the default pipeline (onnxscript, ort:all)."""
    model, inputs = bert_like()
    return _explore(model, inputs)


@pytest.fixture(scope="package")
def bert_fused():
    """The BERT-like layer through onnxscript, the transformers optimizer (bert), ort:all."""
    model, inputs = bert_like()
    return _explore(model, inputs, pipeline="onnxscript,transformers:bert,ort:all")


@pytest.fixture(scope="package")
def cnn():
    """The small CNN through the default pipeline."""
    model, inputs = small_cnn()
    return _explore(model, inputs)


@pytest.fixture(scope="package")
def add_to_sub():
    """The onnxscript rule a user might write wrongly: every Add made a Sub."""
    from onnxscript.rewriter import pattern

    def add(op, x, y):
        return op.Add(x, y)

    def sub(op, x, y):
        return op.Sub(x, y)

    return pattern.RewriteRule(add, sub, name="add_to_sub")


@pytest.fixture(scope="package")
def bert_wrong(add_to_sub):
    """The BERT-like layer with the wrong rule after onnxscript's optimizer."""
    model, inputs = bert_like()
    return _explore(model, inputs, rewrite_rules=[add_to_sub])


@pytest.fixture(scope="package")
def onnx_file(tmp_path_factory):
    """``(path, inputs)`` of a Conv + Relu ONNX file written to a temporary folder."""
    import onnx

    model, inputs = conv_relu_onnx()
    path = tmp_path_factory.mktemp("onnx") / "conv_relu.onnx"
    onnx.save(model, str(path))
    return path, inputs


@pytest.fixture(scope="package")
def file_trace(onnx_file):
    """The ONNX file through onnxscript and ort:extended (ConvActivationFusion)."""
    path, inputs = onnx_file
    return _explore(str(path), inputs, pipeline="onnxscript,ort:extended")
