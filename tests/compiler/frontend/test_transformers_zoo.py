"""Hugging Face transformers models (tests/compiler/frontend/hf_zoo.py: small random configs built in
code, no download) on both paths (issue #13):

- torch.export with a dynamic batch (and sequence length for text models), through the
  default pipeline and then legalize-ops and codegen: ``trace.check`` clean (no divergence, no
  shape mismatch, no failed pass) at the example size and at another size, and the compiled
  executable matches eager torch at that other size.
- an ONNX file from ``torch.onnx.export`` of the same model, with the same dynamic dims,
  through the same pipeline: the shapes the file computes at run time are known in dims (no
  '?' in the imported module), ``trace.check`` is clean against onnxruntime at both sizes, and
  the compiled executable matches eager at the other size.

bench/transformers_zoo.py prints the same matrix as a table (BENCHMARKS.md)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from compiler.ir.symbolic import ANY

pytest.importorskip("transformers")

from tests.compiler.frontend import hf_zoo  # noqa: E402

PIPELINE = "default,legalize-ops,codegen"
OTHER = dict(batch=3, seq=5)  # the second size every dynamic trace is checked at
SLOW = {"mobilevit", "t5", "swin"}  # 10-20 s each on both paths


def _params(names):
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in names]


def _failures(report) -> list[str]:
    return [str(f) for f in report.findings if f.is_failure]


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    assert abs(got - expected).max() <= 1e-4 * max(1.0, abs(expected).max())


def _eager(model, args) -> np.ndarray:
    with torch.no_grad():
        return model(*args).numpy()


@pytest.mark.parametrize("name", _params(hf_zoo.ZOO))
def test_torch_path_with_dynamic_dims_checks_clean_and_the_compiled_build_matches(name):
    model = hf_zoo.model(name)
    args, other = hf_zoo.inputs(name), hf_zoo.inputs(name, **OTHER)
    trace = explorer.explore(model, args, PIPELINE, dynamic_shapes=hf_zoo.dynamic_shapes(name))
    assert trace.failure is None
    main = trace.imported.module["main"]
    assert str(main.params[0].ty.shape[0]) == "batch"  # the user's dim names
    if "text" in hf_zoo._INPUTS[name]:
        assert str(main.params[0].ty.shape[1]) == "seq"
    for size in (args, other):
        report = trace.check(size, progress=False)
        assert report.numbers_checked
        assert _failures(report) == []
    (got,) = trace["codegen"].executable()(*[a.numpy() for a in other])
    _close(got, _eager(model, other))


@pytest.mark.parametrize("name", _params(hf_zoo.ZOO))
def test_onnx_path_with_dynamic_dims_checks_clean_and_the_compiled_build_matches(name, tmp_path):
    path = tmp_path / f"{name}.onnx"
    hf_zoo.export_onnx(name, path)
    args, other = hf_zoo.inputs(name), hf_zoo.inputs(name, **OTHER)
    trace = explorer.explore(str(path), args, PIPELINE)
    assert trace.failure is None
    main = trace.imported.module["main"]
    assert str(main.params[0].ty.shape[0]) == "batch"
    # the shapes the model computes at run time are known in dims: no '?' anywhere
    assert not [b for b in main.bindings if ANY in (getattr(b.ty, "shape", None) or ())]
    for size in (args, other):
        report = trace.check(size, progress=False)
        assert report.numbers_checked
        assert _failures(report) == []
    (got,) = trace["codegen"].executable()(*[a.numpy() for a in other])
    _close(got, _eager(hf_zoo.model(name), other))
