"""Tiny ONNX files that describe huge values (issue #14): importing them and running the
default pipeline stays small and fast; what is too big to fold is computed at run time."""

from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import passes
from compiler.frontend import from_onnx
from compiler.frontend.onnx_context import MAX_RANK
from compiler.frontend.onnx_frontend import OnnxImportError
from compiler.ir import Constant

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
BIG = 10**8  # elements: 400 MB of f32


def _model(nodes, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", [], outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _fill(name: str, shape: str, value: np.ndarray):
    return helper.make_node(
        "ConstantOfShape", [shape], [name], value=numpy_helper.from_array(value)
    )


def _import_and_run(data: bytes):
    """The module after the default pipeline, every snapshot's constants and the peak of
    memory allocated meanwhile (numpy's buffers included)."""
    tracemalloc.start()
    try:
        result = passes.run(from_onnx(data), "default")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok, result.failure and result.failure.traceback
    constants = [
        c
        for snap in result.snapshots
        if snap.module is not None
        for fn in snap.module.functions.values()
        for c in fn.iter_nodes()
        if isinstance(c, Constant)
    ]
    return result.module, constants, peak


def test_constant_of_shape_of_a_huge_shape_is_not_folded():
    shape = numpy_helper.from_array(np.array([BIG], dtype=np.int64), "shape")
    data = _model(
        [_fill("y", "shape", np.array([1.5], dtype=np.float32))],
        [helper.make_tensor_value_info("y", F32, [BIG])],
        [shape],
    )
    assert len(data) < 200  # a 134-byte file once became a 400 MB constant
    module, constants, peak = _import_and_run(data)
    assert max((c.data.nbytes for c in constants), default=0) < 1024
    assert peak < 32 << 20
    assert module.main.output.ty.shape == (BIG,)  # computed by the module when it runs


def test_constant_of_shape_of_a_computed_huge_shape_is_not_folded():
    # the shape is computed (Add of two constants): the frontend fills by padding an empty
    # tensor, and the pads become constant only in dynamic-to-static
    half = numpy_helper.from_array(np.array([BIG // 2], dtype=np.int64), "half")
    nodes = [
        helper.make_node("Add", ["half", "half"], ["shape"]),
        _fill("y", "shape", np.array([2.5], dtype=np.float32)),
    ]
    data = _model(nodes, [helper.make_tensor_value_info("y", F32, None)], [half])
    module, constants, peak = _import_and_run(data)
    assert max((c.data.nbytes for c in constants), default=0) < 1024
    assert peak < 32 << 20
    assert module.main.output.ty.shape == (BIG,)


def test_gather_nd_batch_positions_of_a_huge_batch_are_not_built_at_import():
    # GatherND with batch_dims needs the position of each batch element; for 1e8 of them
    # (declared by ConstantOfShape, no data) the frontend used to build that array itself
    shape = numpy_helper.from_array(np.array([BIG, 1], dtype=np.int64), "shape")
    nodes = [
        _fill("data", "shape", np.array([1.0], dtype=np.float32)),
        _fill("idx", "shape", np.array([0], dtype=np.int64)),
        helper.make_node("GatherND", ["data", "idx"], ["y"], batch_dims=1),
    ]
    data = _model(nodes, [helper.make_tensor_value_info("y", F32, [BIG])], [shape])
    onnx.checker.check_model(onnx.load_from_string(data))
    module, constants, peak = _import_and_run(data)
    assert max((c.data.nbytes for c in constants), default=0) < 1024
    assert peak < 32 << 20


def test_constant_of_shape_of_a_shape_of_absurd_rank_is_refused():
    # the shape input is itself a ConstantOfShape of 1e8 elements: a rank of 1e8 (once an
    # 800 MB tuple of dims before numpy refused it)
    dims = numpy_helper.from_array(np.array([BIG], dtype=np.int64), "dims")
    nodes = [
        _fill("shape", "dims", np.array([1], dtype=np.int64)),
        _fill("y", "shape", np.array([1.0], dtype=np.float32)),
    ]
    data = _model(nodes, [helper.make_tensor_value_info("y", F32, None)], [dims])
    tracemalloc.start()
    try:
        with pytest.raises(OnnxImportError, match=f"{BIG} values: more than {MAX_RANK} dims"):
            from_onnx(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20


def test_constant_of_shape_with_more_dims_than_a_tensor_can_have_is_refused():
    shape = numpy_helper.from_array(np.ones(100, dtype=np.int64), "shape")
    data = _model(
        [_fill("y", "shape", np.array([1.0], dtype=np.float32))],
        [helper.make_tensor_value_info("y", F32, None)],
        [shape],
    )
    with pytest.raises(OnnxImportError, match=f"100 values: more than {MAX_RANK} dims"):
        from_onnx(data)
