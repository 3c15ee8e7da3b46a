"""Every pass (that a spec string can build) preserves results: on random modules drawn by
hypothesis, and on the model zoo built in our IR (small ConvNeXt, MLP)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from compiler import models, passes
from compiler.interpret import run
from compiler.ir import verify
from compiler.passes import PipelineError, build_pipeline
from tests.compiler.ir.ir_strategies import modules

# Passes that change how a function is called, by design (``changes_signature``, checked in
# test_calling.py); each has its own tests that compose the new signature (lift-transform-params,
# lazy-*, the replica in test_replicas.py); bind-params needs values only Python can give
# (test_bind_params.py).
SIGNATURE_CHANGING = {name for name, cls in passes.all_passes().items() if cls.changes_signature}
# Passes that round floats on purpose: compared with a tolerance.
LOSSY = {"convert-dtype{dtype=float16}": 2e-2, "to-mixed-precision": 5e-3}


# Passes whose spec needs options: the spec the matrix runs them with.
WITH_OPTIONS = {
    "convert-dtype": "convert-dtype{dtype=float16}",
    "convert-layout": "convert-layout{layout=NHWC}",
}


def _spec_passes() -> list[str]:
    """Every registered pass but the signature-changing ones, ``sequential`` and the test
    passes, with its options if it needs some. Nothing is dropped because it fails to build:
    ``test_every_pass_of_the_matrix_builds`` fails instead."""
    return [
        WITH_OPTIONS.get(name, name)
        for name in sorted(passes.all_passes())
        if name not in SIGNATURE_CHANGING and name != "sequential" and not name.startswith("test-")
    ]


SPECS = _spec_passes()


def test_the_list_covers_the_library():
    assert {"fold-constant", "fuse-ops", "decompose-ops", "dynamic-to-static"} <= set(SPECS)
    assert len(SPECS) >= 12
    assert set(WITH_OPTIONS.values()) <= set(SPECS)
    assert "bind-params" in SIGNATURE_CHANGING  # its values only Python can give


@pytest.mark.parametrize("spec", SPECS)
def test_every_pass_of_the_matrix_builds(spec):
    (built,) = build_pipeline(spec).passes
    assert str(built) == spec


def test_a_pass_that_cannot_be_built_fails_the_matrix(monkeypatch):
    """A registered pass whose spec does not build is an error, not a pass left out."""
    from compiler.passes.convert_layout import ConvertLayout

    monkeypatch.setitem(WITH_OPTIONS, "convert-layout", "convert-layout")
    specs = _spec_passes()
    assert "convert-layout" in specs
    with pytest.raises(PipelineError, match="convert-layout"):
        build_pipeline("convert-layout")
    assert passes.all_passes()["convert-layout"] is ConvertLayout


def _flatten(value) -> list:
    if isinstance(value, tuple):
        return [x for v in value for x in _flatten(v)]
    return [value]


F16_MAX = 65504.0


def _compare(spec, before, after, inputs, tol):
    want = _flatten(run(before, *inputs))
    got = _flatten(run(after, *inputs))
    assert len(got) == len(want), spec
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, spec
        g, w = g.astype(np.float64), w.astype(np.float64)
        if spec in LOSSY:
            # float16 cannot hold values beyond its range: they become inf by design
            keep = ~(np.abs(w) > F16_MAX / 2)
            g, w = g[keep], w[keep]
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=spec)


@pytest.mark.parametrize("spec", SPECS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=modules())
def test_pass_preserves_results_on_random_modules(spec, gen):
    result = passes.run(gen.module, spec, verify_each=True)
    assert result.ok, result.failure and result.failure.traceback
    rng = np.random.default_rng(0)
    inputs = gen.inputs(rng)
    _compare(spec, gen.module, result.module, inputs, LOSSY.get(spec, 1e-5))


@pytest.fixture(scope="module")
def zoo():
    rng = np.random.default_rng(0)
    small = models.convnext(dims=(8, 16, 32, 64), depths=(1, 1, 2, 1), image=32, seed=1)
    mlp = models.mlp((32, 64, 16), batch=4, seed=2, activation="gelu")
    return [
        ("convnext", small, [rng.standard_normal((1, 3, 32, 32)).astype(np.float32)]),
        ("mlp", mlp, [rng.standard_normal((4, 32)).astype(np.float32)]),
    ]


@pytest.mark.parametrize("spec", SPECS + ["default"])
def test_pass_preserves_results_on_the_zoo(spec, zoo):
    for name, module, inputs in zoo:
        result = passes.run(module, spec)
        assert result.ok, f"{name}: {result.failure and result.failure.traceback}"
        verify(result.module)
        _compare(f"{spec} on {name}", module, result.module, inputs, LOSSY.get(spec, 1e-4))
