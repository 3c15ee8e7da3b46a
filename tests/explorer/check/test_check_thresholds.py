"""Every detector of the check, and every threshold and tolerance it has, just inside and just
outside: a changed constant or a flipped condition fails one of these (bench/mutations.py
makes such changes on purpose)."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.ir import ANY, Call, Constant, Function, Module, Var, tensor
from compiler.passes import Pass, Sequential, register_pass
from explorer.check import BLOAT_MIN_BYTES, BLOAT_THRESHOLD, check
from tests.compiler.passes.test_dynamic_to_static import SEEDS_PAD_SQUEEZE, seeds_input
from tests.compiler.passes.test_manager import _Explode
from tests.explorer.check.test_check import _FlipAdd, kinds


def _replace_main_output(module: Module, build) -> Module:
    main = module["main"]
    fn = Function.from_output(main.params, build(main.output), main.attrs)
    return Module({**module.functions, "main": fn})


@register_pass
@dataclass(frozen=True)
class _GrowParams(Pass):
    """Adds a named f32 constant of ``elements`` elements to @main without changing its
    numbers: ``y + 0 * sum(extra)``."""

    name: ClassVar[str] = "test-check-grow-params"
    elements: int = 0

    def transform(self, module, ctx):
        extra = Constant(np.ones(self.elements, np.float32), name="extra")
        zero = Constant(np.zeros((), np.float32))
        return _replace_main_output(
            module, lambda y: Call("add", [y, Call("multiply", [zero, Call("sum", [extra])])])
        )


@register_pass
@dataclass(frozen=True)
class _Nudge(Pass):
    """@main's output times ``scale`` plus ``offset``: a wrong pass by a chosen amount."""

    name: ClassVar[str] = "test-check-nudge"
    scale: float = 1.0
    offset: float = 0.0

    def transform(self, module, ctx):
        scale = Constant(np.float32(self.scale))
        offset = Constant(np.float32(self.offset))
        return _replace_main_output(
            module, lambda y: Call("add", [Call("multiply", [y, scale]), offset])
        )


def weights_of(nbytes: int, batch=2) -> Module:
    """``x @ W`` with a named weight of ``nbytes`` bytes (f32[4, nbytes / 16])."""
    data = np.random.default_rng(0).standard_normal((4, nbytes // 16)).astype(np.float32)
    x = Var("x", tensor([batch, 4]))
    w = Constant(data, name="W")
    return Module({"main": Function.from_output([x], Call("matmul", [x, w]))})


def bloat(before_bytes: int, added_bytes: int, **options) -> list:
    assert added_bytes % 4 == 0
    trace = explorer.explore(
        weights_of(before_bytes), pipeline=f"test-check-grow-params{{elements={added_bytes // 4}}}"
    )
    assert trace.final.param_bytes == before_bytes + added_bytes
    report = check(trace, progress=False, **options)
    assert report.numbers_checked and all(r["max_abs"] == 0 for r in report.rows())
    return report.of_kind("param-bloat")


# ----- param-bloat: the relative threshold (10%) -----------------------------------------------


@pytest.mark.parametrize(
    "added, reported",
    [
        (3680, False),  # 8.98% of 40 KiB: under the threshold (and over the byte floor)
        (4096, False),  # exactly 10%: bloat is growth by *more* than the threshold
        (4100, True),  # 10.01%
        (4508, True),  # 11.0%
    ],
)
def test_bloat_threshold_just_inside_and_just_outside(added, reported):
    found = bloat(40960, added)
    assert bool(found) is reported
    if reported:
        (f,) = found
        assert (f.details["bytes_before"], f.details["bytes_after"]) == (40960, 40960 + added)
        assert f.details["growth"][0][0] == "extra" and f.nodes[0].name == "extra"
        assert "`extra` is new" in f.message


def test_bloat_threshold_is_an_option():
    assert bloat(40960, 3680, bloat_threshold=0.05)  # 9% is over 5%
    assert not bloat(40960, 4508, bloat_threshold=0.2)  # 11% is under 20%


# ----- param-bloat: the byte floor (1 KiB) -----------------------------------------------------


@pytest.mark.parametrize(
    "added, reported",
    [
        (920, False),  # 0.9 KiB on a 64-byte model: 15x growth, but under the floor
        (1020, False),
        (1024, True),  # "at least" the floor
        (1128, True),  # 1.1 KiB
    ],
)
def test_bloat_byte_floor_just_inside_and_just_outside(added, reported):
    assert bool(bloat(64, added)) is reported


def test_bloat_byte_floor_is_an_option():
    assert not bloat(64, 1128, bloat_min_bytes=2048)
    assert bloat(64, 920, bloat_min_bytes=512)


def test_bloat_needs_both_the_growth_and_the_floor():
    # 2.5%: over the byte floor, under the threshold (a fold adding 1 KiB to a 41 KiB model)
    assert not bloat(40960, 1024)
    # 50x growth, under the floor
    assert not bloat(64, 256)


def test_param_bloat_without_numbers_is_still_reported():
    model = weights_of(64, batch=ANY)  # no static shape: no numbers
    trace = explorer.explore(model, pipeline="test-check-grow-params{elements=300}")
    report = check(trace, progress=False)
    assert not report.numbers_checked
    assert kinds(report) == ["param-bloat"]


def test_param_bloat_of_a_nested_pipeline_is_reported_once_at_its_pass():
    for batch in (2, ANY):  # with numbers and without
        trace = explorer.explore(
            weights_of(64, batch=batch),
            pipeline=[Sequential((_GrowParams(elements=300),), label="group")],
        )
        report = check(trace, progress=False)
        assert report.numbers_checked is (batch == 2)
        (f,) = report.of_kind("param-bloat")
        assert f.step.name == "test-check-grow-params" and f.step.parent is not None


# ----- diverged: rtol and atol of Trace.check and check() --------------------------------------


def _checks(trace):
    """The check with its default tolerances, both ways of calling it."""
    return [trace.check(progress=False), check(trace, progress=False)]


@pytest.fixture(scope="module")
def matmul_trace_factory():
    def make(scale=1.0, offset=0.0, model=None):
        spec = f"test-check-nudge{{scale={scale!r},offset={offset!r}}}"
        return explorer.explore(model if model is not None else weights_of(4096), pipeline=spec)

    return make


@pytest.mark.parametrize(
    "scale, diverged",
    [
        (1 + 0.7e-4, False),  # inside rtol = 1e-4
        (1 - 0.7e-4, False),
        (1 + 1.5e-4, True),  # outside
        (1 - 1.5e-4, True),
    ],
)
def test_relative_tolerance_just_inside_and_just_outside(matmul_trace_factory, scale, diverged):
    trace = matmul_trace_factory(scale=scale)
    for report in _checks(trace):
        assert (kinds(report) == ["diverged"]) is diverged, str(report)
        assert report.ok is not diverged


def _zero_model() -> Module:
    """Returns ``x - x``: zeros, so only atol counts."""
    x = Var("x", tensor([2, 8]))
    return Module({"main": Function.from_output([x], Call("subtract", [x, x]))})


@pytest.mark.parametrize(
    "offset, diverged",
    [(0.7e-5, False), (-0.7e-5, False), (1.5e-5, True), (-1.5e-5, True)],
)
def test_absolute_tolerance_just_inside_and_just_outside(matmul_trace_factory, offset, diverged):
    trace = matmul_trace_factory(offset=offset, model=_zero_model())
    for report in _checks(trace):
        assert (kinds(report) == ["diverged"]) is diverged, str(report)


def test_tolerances_are_options(matmul_trace_factory):
    trace = matmul_trace_factory(scale=1 + 1.5e-4)
    assert trace.check(rtol=2e-4, progress=False).ok
    assert check(trace, rtol=2e-4, progress=False).ok
    assert not trace.check(rtol=0.5e-4, atol=0, progress=False).ok
    zero = matmul_trace_factory(offset=1.5e-5, model=_zero_model())
    assert zero.check(atol=2e-5, progress=False).ok and check(zero, atol=2e-5).ok


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_where_the_reference_has_a_number_diverges():
    """0 * inf: NaN against the reference's 0 is beyond any tolerance; NaN against NaN is
    not an error."""
    trace = explorer.explore(_zero_model(), pipeline=[_Nudge(scale=float("inf"))])
    for report in _checks(trace):
        assert kinds(report) == ["diverged"]
    x = Var("x", tensor([2, 8]))
    zero = Call("subtract", [x, x])
    nan = Module({"main": Function.from_output([x], Call("divide", [zero, zero]))})
    assert explorer.explore(nan, pipeline=[_Nudge(scale=2.0)]).check(progress=False).ok


def test_float16_mlp_diverges_at_the_default_tolerance():
    """An MLP converted to float16 is 1.9% off: not "ok" at the defaults (1e-4, 1e-5)."""
    trace = explorer.explore(
        models.mlp((32, 64, 16), batch=4, seed=2), pipeline="convert-dtype{dtype=float16}"
    )
    for report in _checks(trace):
        assert kinds(report) == ["diverged"] and report.first_failure.step is trace.final
        assert 0.01 < report.first_failure.details["max_rel"] < 0.03
    # just inside looser tolerances
    assert trace.check(rtol=1e-1, progress=False).ok
    assert trace.check(atol=1e-3, progress=False).ok
    assert not trace.check(rtol=1e-2, progress=False).ok


def test_a_step_that_changes_wrong_numbers_again_is_reported_again():
    spec = "test-check-nudge{scale=2.0},test-check-nudge{scale=3.0},dead-code-elimination"
    trace = explorer.explore(weights_of(4096), pipeline=spec)
    report = trace.check(progress=False)
    assert kinds(report) == ["diverged", "diverged"]
    assert [f.step.index for f in report.findings] == [1, 2]
    assert report.rows()[3]["status"] == "diverged"  # still wrong, not reported again


def test_a_step_that_undoes_a_divergence_is_ok():
    spec = "test-check-nudge{scale=2.0},test-check-nudge{scale=0.5}"
    report = explorer.explore(weights_of(4096), pipeline=spec).check(progress=False)
    assert kinds(report) == ["diverged"] and [r["status"] for r in report.rows()][1:] == [
        "diverged",
        "ok",
    ]


# ----- shape-mismatch, run-failed, pass-failed, signature-changed ------------------------------


def test_shape_mismatch_is_reported_once_at_the_step_that_made_it():
    spec = "replica-dynamic-to-static-squeeze,test-check-flip-add,dead-code-elimination"
    trace = explorer.explore(SEEDS_PAD_SQUEEZE, (seeds_input(),), pipeline=spec)
    report = trace.check(progress=False)
    assert [f.kind for f in report.of_kind("shape-mismatch")] == ["shape-mismatch"]
    assert report.of_kind("shape-mismatch")[0].step is trace["replica-dynamic-to-static-squeeze"]
    clean = explorer.explore(SEEDS_PAD_SQUEEZE, (seeds_input(),), pipeline="dynamic-to-static")
    assert not clean.check(progress=False).of_kind("shape-mismatch")


@register_pass
@dataclass(frozen=True)
class _Mislabel(Pass):
    """A wrong pass: @main's output goes through a relu annotated with the wrong shape."""

    name: ClassVar[str] = "test-check-mislabel"

    def transform(self, module, ctx):
        return _replace_main_output(module, lambda y: Call("relu", [y], ty=tensor([3])))


CALLS_F = """
def @main(%x: f32[4]) -> f32[4] {
  %y: f32[4] = call @f(%x)
  return %y
}
def @f(%a: f32[4]) -> f32[4] attrs {private = true} {
  %b: f32[4] = add(%a, const(f32[], 1.0))
  return %b
}"""


def test_a_mismatch_computed_again_later_is_not_reported_again():
    """After test-check-flip-add changes @f, the mislabelled relu after ``call @f`` is
    computed again (its input changed): still the mismatch made by test-check-mislabel."""
    trace = explorer.explore(CALLS_F, pipeline="test-check-mislabel,test-check-flip-add")
    report = trace.check(progress=False)
    (mismatch,) = report.of_kind("shape-mismatch")
    assert mismatch.step is trace["test-check-mislabel"]
    assert "annotated f32[3] but computes f32[4]" in mismatch.message
    assert [f.step.name for f in report.of_kind("diverged")] == ["test-check-flip-add"]


RUN_FAILS = """
def @main(%x: f32[2]) -> f32[10000000000] {
  %a: f32[2] = add(%x, %x)
  %z: f32[10000000000] = zeros(shape=[10000000000], dtype=f32)
  return %z
}"""


def test_run_failed_is_reported_where_it_starts_only():
    trace = explorer.explore(RUN_FAILS, pipeline="test-check-flip-add")
    report = trace.check((np.ones(2, np.float32),), progress=False)
    assert kinds(report) == ["run-failed"]
    assert report.findings[0].step is trace.imported
    fine = explorer.explore(RUN_FAILS.replace("10000000000", "3"), pipeline="test-check-flip-add")
    assert not fine.check((np.ones(2, np.float32),), progress=False).of_kind("run-failed")


def test_pass_failed_is_reported_at_the_pass_not_at_its_pipeline():
    x = Var("x", tensor([4]))
    trace = explorer.explore(
        Module({"main": Function.from_output([x], Call("add", [x, x]))}),
        pipeline=["dead-code-elimination", Sequential((_Explode(),), label="group")],
    )
    report = trace.check(progress=False)
    assert kinds(report) == ["pass-failed"]
    assert report.findings[0].step.name == "test-explode"
    assert report.findings[0].step.parent is not None


def test_signature_changed_only_when_the_convention_changes():
    report = explorer.explore(weights_of(64), pipeline="test-check-flip-add").check(progress=False)
    assert report.ok and not report.of_kind("signature-changed")


assert _FlipAdd  # registers test-check-flip-add


def test_the_defaults_are_the_documented_ones():
    assert BLOAT_THRESHOLD == 0.10 and BLOAT_MIN_BYTES == 1024


def test_param_bytes_from_the_module_equal_the_graphs():
    """Step.param_bytes counts a module's weights without building its graph (the check asks
    it of every step): the same count as the graph's, for stored, lifted and lazy weights,
    constants folded and grown."""
    from compiler.ir import Module
    from explorer.passlens.convert import graph_of_module, module_size
    from tests.compiler.passes.test_lazy_params import MODEL as LAZY_MODEL
    from tests.compiler.passes.test_lazy_params import W1, W2, X

    traces = [
        explorer.explore(weights_of(4096), pipeline="test-check-grow-params{elements=300},default"),
        explorer.explore(
            LAZY_MODEL,
            (X, W1, W2),
            pipeline="lift-transform-params,lazy-transform-params,fold-constant,lazy-get-input",
        ),
    ]
    seen = 0
    for trace in traces:
        for step in trace.steps:
            if isinstance(step.module, Module):
                want = graph_of_module(step.module).param_bytes
                assert module_size(step.module)[1] == want, step.name
                seen += want > 0
    assert seen >= 4
