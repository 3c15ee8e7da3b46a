"""Models for the ONNX Runtime adapter's tests, built in code with random weights: a BERT-like
layer whose modules nest as a transformers BERT's do (``encoder.layer.0.attention.self.query``),
a small CNN, and ONNX files made with ``onnx.helper`` (a Conv and a Relu, names of one's
choosing: ORT's ConvActivationFusion fuses them)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from bench.ort_models import BertLike, SmallCNN  # the same models as the benchmark's


def bert_like() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return BertLike().eval(), (torch.randn(2, 8, 32),)


def small_cnn() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    model = SmallCNN().eval()
    with torch.no_grad():  # a BatchNorm that is not the identity
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    return model, (torch.randn(1, 3, 16, 16),)


def conv_relu_onnx(conv: str = "conv", relu: str = "relu", value: str = "y"):
    """An ONNX model (opset 17) of a Conv then a Relu named ``conv`` and ``relu`` (the Conv's
    value named ``value``), 1 x 3 x 8 x 8 in; and an input for it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], [value], name=conv, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", [value], ["out"], name=relu),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, (rng.standard_normal((1, 3, 8, 8)).astype(np.float32),)
