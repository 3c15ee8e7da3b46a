"""Hugging Face transformers models (tests/compiler/frontend/hf_zoo.py: small random configs
built in code, no download) on both paths (issue #13):

- torch.export with a dynamic batch (and sequence length for text models), through the
  default pipeline and then legalize-ops and codegen: ``trace.check`` clean (no divergence, no
  shape mismatch, no failed pass) at the example size and at another size, and the compiled
  executable matches eager torch at that other size.
- an ONNX file from ``torch.onnx.export`` of the same model, with the same dynamic dims,
  through the same pipeline: the shapes the file computes at run time are known in dims (no
  '?' in the imported module), ``trace.check`` is clean against onnxruntime at both sizes, and
  the compiled executable matches eager at the other size.

Issue 29 grew the zoo: mixture-of-experts decoders (Mixtral with transformers' default
grouped-experts kernel, Qwen2-MoE with batched experts), vision transformers with relative
position bias (BEiT, Swin v2), convolutional audio feature extractors (wav2vec 2.0, WavLM,
Data2Vec audio), encoder-decoders (BART, Marian, Whisper) and more decoders and encoders.
Mixtral runs transformers' own custom op ``grouped_mm_fallback`` as an opaque op (torch
computes it, compiled code calls it on the host). A model failing for a known reason would be
marked xfail with the reason (:data:`XFAIL_TORCH`, empty today); one no torch.onnx.export mode
exports is not run on the ONNX path (``hf_zoo.NO_ONNX``). Models of the same family as a
tested one are run by the bench only (``hf_zoo.BENCH_ONLY``).

bench/transformers_zoo.py prints the same matrix as a table (BENCHMARKS.md)."""

from __future__ import annotations

import functools

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
NAMES = [n for n in hf_zoo.ZOO if n not in hf_zoo.BENCH_ONLY]

# models that fail on the torch path today, with why
XFAIL_TORCH: dict[str, str] = {}
# the relative position index is computed in the file from static sizes: those values are
# '?' when imported and dynamic-to-static folds them (values that read a symbolic dim never are)
STATIC_SHAPE_COMPUTATIONS = {"beit"}


def _params(names, xfail=None):
    out = []
    for n in names:
        marks = [pytest.mark.slow] if n in SLOW else []
        if xfail and n in xfail:
            marks.append(pytest.mark.xfail(strict=False, reason=xfail[n]))
        out.append(pytest.param(n, marks=marks))
    return out


_model = functools.cache(hf_zoo.model)  # built once for both paths


def _failures(report) -> list[str]:
    return [str(f) for f in report.findings if f.is_failure]


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    assert abs(got - expected).max() <= 1e-4 * max(1.0, abs(expected).max())


@functools.cache
def _eager(name: str) -> np.ndarray:
    """Eager torch at the other size."""
    with torch.no_grad():
        return _model(name)(*hf_zoo.inputs(name, **OTHER)).numpy()


@pytest.fixture(scope="module", autouse=True)
def _release_models():
    yield
    _model.cache_clear()
    _eager.cache_clear()


@pytest.mark.parametrize("name", _params(NAMES, XFAIL_TORCH))
def test_torch_path_with_dynamic_dims_checks_clean_and_the_compiled_build_matches(name):
    model = _model(name)
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
    _close(got, _eager(name))


def _unknown(module) -> list:
    return [b for b in module["main"].bindings if ANY in (getattr(b.ty, "shape", None) or ())]


@pytest.fixture(scope="module")
def onnx_cache(request):
    """Where the ONNX files torch.onnx.export made are kept between runs (pytest's cache,
    .pytest_cache/d/hf-zoo-onnx; None without the cache plugin): the export is torch's, about
    two thirds of this file's time, and the same model exported by the same versions is the
    same file (`hf_zoo.export_key`)."""
    cache = getattr(request.config, "cache", None)
    return None if cache is None else cache.mkdir("hf-zoo-onnx")


def exported(name: str, folder, cache) -> str:
    """`name` exported to ONNX in `folder` (its files copied from `cache` when an export of
    the same model by the same versions is there, else exported and kept there: the .onnx and
    its external data file); the .onnx file's path."""
    import os
    import shutil

    path = folder / f"{name}.onnx"
    kept = cache / hf_zoo.export_key(name, _model(name)) if cache else None
    if kept is not None and (kept / path.name).is_file():
        for f in kept.iterdir():
            shutil.copyfile(f, folder / f.name)
        return str(path)
    hf_zoo.export_onnx(name, path, built=_model(name))
    if kept is not None:
        part = cache / f"{kept.name}.{os.getpid()}.part"
        part.mkdir()
        for f in folder.iterdir():
            if f.name.startswith(path.name):  # the model and its external data
                shutil.copyfile(f, part / f.name)
        try:
            os.replace(part, kept)  # whole or not at all (two workers may write it)
        except OSError:  # the other one was first
            shutil.rmtree(part, ignore_errors=True)
    return str(path)


@pytest.mark.parametrize("name", _params([n for n in NAMES if n not in hf_zoo.NO_ONNX]))
def test_onnx_path_with_dynamic_dims_checks_clean_and_the_compiled_build_matches(
    name, tmp_path, onnx_cache
):
    path = exported(name, tmp_path, onnx_cache)
    args, other = hf_zoo.inputs(name), hf_zoo.inputs(name, **OTHER)
    trace = explorer.explore(str(path), args, PIPELINE)
    assert trace.failure is None
    main = trace.imported.module["main"]
    assert str(main.params[0].ty.shape[0]) == "batch"
    # the shapes the model computes at run time are known in dims: no '?' anywhere (values
    # computed from static sizes alone: no '?' once dynamic-to-static has folded them)
    if name not in STATIC_SHAPE_COMPUTATIONS:
        assert not _unknown(trace.imported.module)
    assert not _unknown(trace["dynamic-to-static"].module)
    for size in (args, other):
        report = trace.check(size, progress=False)
        assert report.numbers_checked
        assert _failures(report) == []
    (got,) = trace["codegen"].executable()(*[a.numpy() for a in other])
    _close(got, _eager(name))


def test_the_export_key_changes_with_what_the_export_depends_on():
    name = "bert"
    model = hf_zoo.model(name)
    key = hf_zoo.export_key(name, model)
    assert hf_zoo.export_key(name, hf_zoo.model(name)) == key  # built again: the same
    assert hf_zoo.export_key(name, model, dynamic=False) != key
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] += 1.0  # one weight changed
    assert hf_zoo.export_key(name, model) != key
