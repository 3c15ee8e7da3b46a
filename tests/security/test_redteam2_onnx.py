"""Red-team round two: breaks of issue 39's promise that the check's onnxruntime reference run
is bounded. The run is made in a child process under an address-space limit
(``compiler.opaque.sizes.run_onnx_model``), which bounds memory but not time: a 281-byte
ONNX file whose ``Loop`` has a trip count of 10**12 and a body of one ``Add`` allocates
nothing, and ``passlens explore x.onnx --check`` never ends (the reference child spins; the
subprocess call has no timeout)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def _loop_model(trip: int):
    from onnx import TensorProto as T
    from onnx import helper as h

    body = h.make_graph(
        [
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
            h.make_node("Add", ["v_in", "one"], ["v_out"]),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond_in", T.BOOL, []),
            h.make_tensor_value_info("v_in", T.FLOAT, [1]),
        ],
        [
            h.make_tensor_value_info("cond_out", T.BOOL, []),
            h.make_tensor_value_info("v_out", T.FLOAT, [1]),
        ],
        [h.make_tensor("one", T.FLOAT, [1], [1.0])],
    )
    graph = h.make_graph(
        [h.make_node("Loop", ["M", "c", "x"], ["y"], body=body)],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1])],
        [h.make_tensor_value_info("y", T.FLOAT, [1])],
        [h.make_tensor("M", T.INT64, [], [trip]), h.make_tensor("c", T.BOOL, [], [True])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_loop_with_a_huge_trip_count_does_not_hang_explore_check(tmp_path):
    path = tmp_path / "loop.onnx"
    onnx.save(_loop_model(10**12), str(path))
    assert path.stat().st_size < 400
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "passlens", "explore", str(path), "--check"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # the reference child too is ended on timeout
    )
    try:
        _, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("explore --check of a 281-byte ONNX Loop still running after 180 s")
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"


def test_the_reference_loop_limit_is_the_interpreters():
    from compiler import interpret
    from explorer.check import references

    assert references.MAX_LOOP_WORK == interpret.MAX_LOOP_WORK
