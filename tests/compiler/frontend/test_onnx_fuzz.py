"""Fuzzing from_onnx: valid models mutated at the byte level (flips, truncation, insertion)
and at the protobuf level (wrong attributes, dangling inputs, bad shapes and dtypes, other
ops, opsets and initializers) must each end in an imported module or a FrontendError: never
another exception, a hang or a crash."""

from __future__ import annotations

import functools

import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from compiler import models
from compiler.frontend import FrontendError, from_onnx, to_onnx
from compiler.ir import Module, parse


def _conv_model() -> onnx.ModelProto:
    """A conv net with computed shapes: Conv, MaxPool, Shape/Gather/Concat -> Reshape, Pad,
    Slice, ReduceMean with axes input, Split, Squeeze."""
    w = numpy_helper.from_array(np.ones((4, 2, 3, 3), np.float32), "conv.weight")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "conv.bias")
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "conv.weight", "conv.bias"],
            ["c"],
            name="/conv/Conv",
            pads=[1, 1, 1, 1],
            strides=[1, 1],
        ),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Concat", ["n", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["p", "target"], ["flat"]),
        helper.make_node("Pad", ["flat", "pads"], ["padded"], mode="constant"),
        helper.make_node("Slice", ["padded", "starts", "ends", "axes"], ["sl"]),
        helper.make_node("ReduceMean", ["sl", "axes"], ["m"], keepdims=1),
        helper.make_node("Split", ["sl", "split"], ["a", "b2"], axis=1),
        helper.make_node("Squeeze", ["m", "axes"], ["y"]),
    ]
    inits = [
        w,
        b,
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
        numpy_helper.from_array(np.array([0, 1, 0, -1], np.int64), "pads"),
        numpy_helper.from_array(np.array([1], np.int64), "starts"),
        numpy_helper.from_array(np.array([9], np.int64), "ends"),
        numpy_helper.from_array(np.array([1], np.int64), "axes"),
        numpy_helper.from_array(np.array([4, 4], np.int64), "split"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 8, 8])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
        ],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


_IF_MODULE = """
def @main(%x: f32[3, 1, 4]) -> f32[*] {
  %s: i64[3] = shape_of(%x)
  %d: i64[1] = take(%s, const(i64[1], [1]), axis=0)
  %c: bool[1] = equal(%d, const(i64[1], [1]))
  %out: f32[*] = if %c {
    %q: f32[3, 4] = squeeze(%x, axes=[1])
    yield %q
  } else {
    %r: f32[3, 1, 4] = relu(%x)
    yield %r
  }
  return %out
}
"""


@functools.cache
def seed_models() -> tuple[bytes, ...]:
    seeds = [
        to_onnx(models.mlp((8, 16, 4), batch=2)),
        to_onnx(parse(_IF_MODULE)),
        _conv_model(),
    ]
    for s in seeds:  # the seeds themselves import
        assert isinstance(from_onnx(s), Module)
    return tuple(s.SerializeToString() for s in seeds)


def assert_imports_or_frontend_error(data) -> None:
    try:
        module = from_onnx(data)
    except FrontendError:
        return
    assert isinstance(module, Module)


_FUZZ = settings(
    max_examples=120,
    deadline=5000,  # ms: an import that hangs fails the test
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)


@_FUZZ
@given(data=st.data())
def test_byte_mutations(data):
    corpus = seed_models()
    blob = bytearray(data.draw(st.sampled_from(corpus)))
    kind = data.draw(st.sampled_from(["flip", "truncate", "insert", "delete", "splice"]))
    n = len(blob)
    if kind == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, n - 1))
            blob[i] ^= data.draw(st.integers(1, 255))
    elif kind == "truncate":
        blob = blob[: data.draw(st.integers(0, n - 1))]
    elif kind == "insert":
        i = data.draw(st.integers(0, n))
        blob[i:i] = data.draw(st.binary(min_size=1, max_size=16))
    elif kind == "delete":
        i = data.draw(st.integers(0, n - 1))
        del blob[i : i + data.draw(st.integers(1, 16))]
    else:  # splice the start of one model onto the end of another
        other = data.draw(st.sampled_from(corpus))
        blob = blob[: data.draw(st.integers(0, n))] + other[data.draw(st.integers(0, len(other))) :]
    assert_imports_or_frontend_error(bytes(blob))


_OPS = [
    "Relu",
    "Add",
    "Reshape",
    "Squeeze",
    "Pad",
    "If",
    "Conv",
    "ConvTranspose",
    "Gather",
    "Slice",
    "Concat",
    "Split",
    "MatMul",
    "Gemm",
    "NotAnOp",
    "Loop",
    "Resize",
    "Cast",
    "ReduceSum",
    "TopK",
]
_ATTR_VALUES = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(-(2**33), 2**33), max_size=6),
    st.lists(st.floats(allow_nan=False, width=32), max_size=4),
)


def _attr(name: str, value) -> onnx.AttributeProto:
    if isinstance(value, list) and not value:
        return helper.make_attribute(name, value, attr_type=onnx.AttributeProto.INTS)
    return helper.make_attribute(name, value)


def _all_graphs(graph):
    yield graph
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _all_graphs(a.g)


def _mutate(model: onnx.ModelProto, data) -> None:
    graphs = list(_all_graphs(model.graph))
    graph = data.draw(st.sampled_from(graphs))
    names = [o for n in graph.node for o in n.output] + [i.name for i in graph.input]
    kind = data.draw(
        st.sampled_from(
            [
                "attr",
                "drop_attr",
                "add_attr",
                "input",
                "op",
                "drop_init",
                "init_dims",
                "init_type",
                "input_dims",
                "input_type",
                "opset",
                "drop_node",
                "dup_node",
                "drop_output",
                "domain",
                "clear_branch",
            ]
        )
    )
    node = data.draw(st.sampled_from(list(graph.node))) if len(graph.node) else None
    if kind == "attr" and node is not None and len(node.attribute):
        a = data.draw(st.sampled_from(list(node.attribute)))
        a.CopyFrom(_attr(a.name, data.draw(_ATTR_VALUES)))
    elif kind == "drop_attr" and node is not None and len(node.attribute):
        del node.attribute[data.draw(st.integers(0, len(node.attribute) - 1))]
    elif kind == "add_attr" and node is not None:
        name = data.draw(st.sampled_from(["axis", "axes", "perm", "mode", "to", "keepdims", "zz"]))
        node.attribute.append(_attr(name, data.draw(_ATTR_VALUES)))
    elif kind == "input" and node is not None and len(node.input):
        i = data.draw(st.integers(0, len(node.input) - 1))
        node.input[i] = data.draw(st.sampled_from([*names, "dangling", ""]))
    elif kind == "op" and node is not None:
        node.op_type = data.draw(st.sampled_from(_OPS))
    elif kind == "drop_init" and len(graph.initializer):
        del graph.initializer[data.draw(st.integers(0, len(graph.initializer) - 1))]
    elif kind == "init_dims" and len(graph.initializer):
        t = data.draw(st.sampled_from(list(graph.initializer)))
        del t.dims[:]
        t.dims.extend(data.draw(st.lists(st.integers(-3, 2**31), max_size=4)))
    elif kind == "init_type" and len(graph.initializer):
        t = data.draw(st.sampled_from(list(graph.initializer)))
        t.data_type = data.draw(st.integers(0, 25))
    elif kind == "input_dims" and len(graph.input):
        shape = graph.input[0].type.tensor_type.shape
        del shape.dim[:]
        for d in data.draw(
            st.lists(st.one_of(st.integers(-2, 2**40), st.text(max_size=4)), max_size=70)
        ):
            dim = shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            else:
                dim.dim_param = d
    elif kind == "input_type" and len(graph.input):
        graph.input[0].type.tensor_type.elem_type = data.draw(st.integers(0, 25))
    elif kind == "opset":
        model.opset_import[0].version = data.draw(st.integers(-1, 40))
    elif kind == "drop_node" and node is not None:
        graph.node.remove(node)
    elif kind == "dup_node" and node is not None:
        graph.node.append(node)
    elif kind == "drop_output" and len(graph.output):
        del graph.output[data.draw(st.integers(0, len(graph.output) - 1))]
    elif kind == "domain" and node is not None:
        node.domain = data.draw(st.sampled_from(["com.microsoft", "ai.onnx.ml", "bogus"]))
    elif kind == "clear_branch":
        for g in graphs[1:]:
            del g.node[:]


@_FUZZ
@given(data=st.data())
def test_proto_mutations(data):
    model = onnx.ModelProto()
    model.ParseFromString(data.draw(st.sampled_from(seed_models())))
    for _ in range(data.draw(st.integers(1, 3))):
        _mutate(model, data)
    assert_imports_or_frontend_error(model)
    assert_imports_or_frontend_error(model.SerializeToString())
