"""Fuzzing with untrusted inputs (issue #14): IR text, trace files and ONNX models mutated from
valid seeds (bench/fuzz_untrusted.py's mutators, driven by hypothesis) go through what a user
does with them: import or load, the default pipeline, ``check`` and the HTML report. Only
passlens' own errors may come out, and each case must finish within hypothesis' deadline.
bench/fuzz_untrusted.py runs many more cases and prints the counts (BENCHMARKS.md)."""

from __future__ import annotations

import functools
import importlib.util
import sys
import tempfile
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.errors import PasslensError

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def harness():
    spec = importlib.util.spec_from_file_location(
        "fuzz_untrusted", REPO / "bench" / "fuzz_untrusted.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@functools.cache
def trace_seed() -> bytes:
    return harness().seed_trace_bytes()


_FUZZ = settings(
    max_examples=40,
    deadline=20_000,  # ms: a case that hangs fails the test
    suppress_health_check=[HealthCheck.too_slow],
)


def _only_passlens_errors(fn, case) -> None:
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(case, Path(tmp))
        except PasslensError:
            pass


@_FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_mutated_ir_text(rng):
    h = harness()
    _only_passlens_errors(h.run_ir_text, h.mutate_text(h.IR_SEED, rng))


@_FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_mutated_trace_files(rng):
    h = harness()
    _only_passlens_errors(h.run_trace, h.mutate_trace(trace_seed(), rng))


@_FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_mutated_onnx_models(rng):
    h = harness()
    seeds = h.seed_onnx_bytes()
    _only_passlens_errors(h.run_onnx, h.mutate_bytes(rng.choice(seeds), rng))


def test_the_seeds_themselves_work():
    """The mutators start from inputs that import, check and render cleanly."""
    h = harness()
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h.run_ir_text(h.IR_SEED, Path(tmp))
        h.run_trace(trace_seed(), Path(tmp))
        for seed in h.seed_onnx_bytes():
            h.run_onnx(seed, Path(tmp))


@functools.cache
def opaque_fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_opaque", REPO / "bench" / "fuzz_opaque.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_dispatcher_op_named_by_a_file_is_refused_or_listed():
    """Every operator torch registers, named as an opaque op's target the way a crafted file
    would, is refused before it runs unless it is on the allowlist (bench/fuzz_untrusted.py
    --opaque-targets runs the listed ones too and prints the figures)."""
    fuzz = opaque_fuzzer()
    targets = fuzz.all_targets()
    assert len(targets) > 3000
    listed = [t for t in targets if fuzz.allowed(t)]
    refused = [t for t in targets if not fuzz.allowed(t)]
    assert refused and listed
    bad = [(t, why) for t in refused for ok, why in [fuzz.refused_cleanly(t)] if not ok]
    assert bad == []


def test_a_sample_of_listed_ops_runs_sized_and_safe():
    """Listed ops on schema-made arguments (small, huge, negative, zero, empty, 0-d, other
    dtypes), in a worker process: a value or a clear error, never a crash, a hang, raw text on
    the terminal or a file written."""
    fuzz = opaque_fuzzer()
    listed = [t for t in fuzz.all_targets() if fuzz.allowed(t)]
    sample = listed[:: max(1, len(listed) // 40)] + [
        "aten.repeat_interleave.Tensor",
        "aten.nonzero.default",
        "aten.arange.start_step",
        "aten._neg_view.default",
    ]
    # a hang is an op silent for 10 minutes: the bench's 20 s is a figure, and a loaded
    # machine must not turn a slow op into a finding
    outcomes = fuzz.run_allowed(sample, log=lambda *a: None, op_timeout=600.0)
    assert set(outcomes) == set(sample)
    bad = {t: r for t, res in outcomes.items() for r in res.values() if fuzz._bad(r)}
    assert bad == {}
