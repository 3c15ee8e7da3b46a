"""What the ONNX frontend tests share: the node-test harness (bench/onnx_coverage.py, loaded
once) and running a model in onnxruntime."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


@functools.cache
def load_harness():
    """bench/onnx_coverage.py as a module (run_all, run_case, node_test_dir, ...)."""
    spec = importlib.util.spec_from_file_location(
        "onnx_coverage", REPO / "bench" / "onnx_coverage.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def ort_run(model, *inputs) -> list:
    """The outputs of ``model`` (a ModelProto) in onnxruntime's CPU provider, the inputs given
    in the graph's order."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs, strict=True)))


def round_trip_problem(case_dir) -> str:
    """A node test imported, exported again with to_onnx and run in onnxruntime, against
    what passlens' interpreter computes from the import: "" when they agree, else what
    differs (the harness's comparison: floats within rtol 1e-3, atol 1e-6)."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from compiler.frontend import from_onnx, to_onnx
    from compiler.interpret import run

    harness = load_harness()
    ort.set_default_logger_severity(3)
    case = harness.load_case(case_dir)
    module = from_onnx(case.model)
    inputs = [onnx.numpy_helper.to_array(t) for t in case.inputs]
    sess = ort.InferenceSession(to_onnx(module).SerializeToString())
    got = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs, strict=True)})
    with np.errstate(all="ignore"):
        expected = [onnx.numpy_helper.from_array(np.asarray(v)) for v in run(module, *inputs)]
    return harness._compare(tuple(got), expected, 1e-3, 1e-6)
