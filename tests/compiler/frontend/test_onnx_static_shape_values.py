"""Issue 41 item 6: Expand, Tile and ConstantOfShape fed by shapes computed from ``Shape(x)``
of a tensor of static shape keep static dims at import, as ``Reshape(x, Shape(x))`` does.

Each in the forms exporters write: the Shape itself, a Gather of one of its dims, a Slice of
it, and a Concat of such pieces with constants. The result's type is static (not '?'), the op
is the attribute form (``broadcast_to``, ``tile``, ``zeros`` / ``full``), and the values agree
with onnxruntime. A shape read from a graph input's value stays computed ('?')."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import from_onnx
from compiler.interpret import run
from tests.compiler.frontend.onnx_helpers import ort_run

pytest.importorskip("onnxruntime")

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _i64(name: str, values) -> TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


# the shape computations: nodes writing "shape" from x: f32[3, 4, 5]
SHAPE_FORMS = {
    "shape": ([helper.make_node("Shape", ["x"], ["shape"])], []),
    "slice": (
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Slice", ["s", "one", "three"], ["shape"]),
        ],
        [_i64("one", [1]), _i64("three", [3])],
    ),
    "gather_concat": (
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "idx"], ["g"], axis=0),
            helper.make_node("Unsqueeze", ["g", "zero"], ["u"]),
            helper.make_node("Concat", ["u", "tail"], ["shape"], axis=0),
        ],
        [_i64("idx", 2), _i64("zero", [0]), _i64("tail", [1, 2])],
    ),
    "shape_end": (  # Shape's start / end attributes (opset 15)
        [helper.make_node("Shape", ["x"], ["shape"], start=0, end=2)],
        [],
    ),
}
# the shape each form holds for x of shape (3, 4, 5)
SHAPE_VALUES = {
    "shape": [3, 4, 5],
    "slice": [4, 5],
    "gather_concat": [5, 1, 2],
    "shape_end": [3, 4],
}


def _model(form: str, op_nodes, inits=(), y_shape=None):
    nodes, shape_inits = SHAPE_FORMS[form]
    inputs = [helper.make_tensor_value_info("x", F, [3, 4, 5])]
    if y_shape is not None:
        inputs.append(helper.make_tensor_value_info("y", F, y_shape))
    graph = helper.make_graph(
        nodes + op_nodes,
        "g",
        inputs,
        [helper.make_tensor_value_info("out", F, None)],
        initializer=[*shape_inits, *inits],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _check(model, want_shape, want_op, *inputs):
    module = from_onnx(model)
    out = module.main.output
    assert out.ty.shape == tuple(want_shape), str(module)
    ops = [getattr(n, "op", None) for n in module.main.iter_nodes()]
    assert want_op in ops, ops
    expected = ort_run(model, *inputs)[0]
    got = run(module, *inputs)[0]
    assert got.shape == expected.shape == tuple(want_shape)
    np.testing.assert_array_equal(got, expected)


X = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("form", sorted(SHAPE_FORMS))
def test_expand_to_a_shape_computed_from_a_static_shape_keeps_static_dims(form):
    target = SHAPE_VALUES[form]
    y_shape = [1] * len(target)
    y_shape[-1] = target[-1]
    model = _model(form, [helper.make_node("Expand", ["y", "shape"], ["out"])], y_shape=y_shape)
    y = np.random.default_rng(1).standard_normal(y_shape).astype(np.float32)
    _check(model, target, "broadcast_to", X, y)


@pytest.mark.parametrize("form", sorted(SHAPE_FORMS))
def test_tile_by_repeats_computed_from_a_static_shape_keeps_static_dims(form):
    reps = SHAPE_VALUES[form]
    y_shape = [2] * len(reps)
    model = _model(form, [helper.make_node("Tile", ["y", "shape"], ["out"])], y_shape=y_shape)
    y = np.random.default_rng(2).standard_normal(y_shape).astype(np.float32)
    _check(model, [2 * r for r in reps], "tile", X, y)


@pytest.mark.parametrize("value", [0.0, 1.0, 2.5])
@pytest.mark.parametrize("form", sorted(SHAPE_FORMS))
def test_constant_of_shape_of_a_shape_computed_from_a_static_shape_keeps_static_dims(form, value):
    fill = helper.make_tensor("v", F, [1], [value])
    node = helper.make_node("ConstantOfShape", ["shape"], ["out"], value=fill)
    op = {0.0: "zeros", 1.0: "ones"}.get(value, "full")
    _check(_model(form, [node]), SHAPE_VALUES[form], op, X)


def test_a_shape_read_from_an_input_value_stays_computed():
    """``Expand(y, shape)`` of a graph input ``shape``: its value is known only when run, so
    the result's first dim stays '?' (the second is y's 4, whatever the shape says), and the
    run agrees with onnxruntime."""
    graph = helper.make_graph(
        [helper.make_node("Expand", ["y", "shape"], ["out"])],
        "g",
        [
            helper.make_tensor_value_info("y", F, [1, 4]),
            helper.make_tensor_value_info("shape", I64, [2]),
        ],
        [helper.make_tensor_value_info("out", F, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = from_onnx(model)
    assert [str(d) for d in module.main.output.ty.shape] == ["?", "4"]
    y = np.arange(4, dtype=np.float32).reshape(1, 4)
    shape = np.array([3, 4], np.int64)
    np.testing.assert_array_equal(run(module, y, shape)[0], ort_run(model, y, shape)[0])
