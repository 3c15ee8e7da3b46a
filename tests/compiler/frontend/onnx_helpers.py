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
