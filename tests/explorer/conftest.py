"""What tests of every compiler's adapter share: ``check_options_reach``, which runs a trace's
check with every check option set to a value no default has and asserts each one took effect,
so an adapter or a step runner that drops one (issue 40) fails the test of its compiler."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.check import check
from explorer.check.registry import _KINDS, Kind, register
from explorer.trust import current_trust

# a value of each check option that no default has
SPY_OPTIONS = {
    "reference": "import",
    "rtol": 0.25,
    "atol": 0.125,
    "bloat_threshold": 0.5,
    "bloat_min_bytes": 7,
    "trust_ops": ["spy.trusted_op"],
}


@pytest.fixture
def check_options_reach():
    """``check_options_reach(trace, inputs, import_reference=True)``: the trace checked
    through ``trace.check`` (its options) and ``explorer.check.check`` (all of them, the
    param-bloat thresholds too), each option at a value no default has; asserts that a
    detector saw every one in ``facts.options`` (with the trusted ops trusted while it ran),
    that the progress callback was called, that the report keeps the tolerances and ran on the
    inputs given, and (``import_reference``) that the reference is the imported step as asked.
    Returns the two reports."""
    seen: list = []

    def detect(facts):
        seen.append((facts.options, current_trust()))
        return []

    register(Kind("options-spy", "info", "records the options the detectors are given", detect))
    try:

        def run(trace, inputs, import_reference: bool = True):
            reports = []
            for full in (False, True):
                seen.clear()
                calls: list = []

                def progress(*args, calls=calls):
                    calls.append(args)

                if full:
                    report = check(trace, inputs, progress=progress, **SPY_OPTIONS)
                else:
                    opts = {k: SPY_OPTIONS[k] for k in ("reference", "rtol", "atol", "trust_ops")}
                    report = trace.check(inputs, progress=progress, **opts)
                assert seen, "no detector ran"
                for options, trusted in seen:
                    assert options.progress is progress
                    assert options.reference == "import"
                    assert (options.rtol, options.atol) == (0.25, 0.125)
                    assert options.trust_ops == ["spy.trusted_op"]
                    assert "spy.trusted_op" in trusted
                    if full:
                        assert (options.bloat_threshold, options.bloat_min_bytes) == (0.5, 7)
                assert calls, "the progress callback was never called"
                assert (report.rtol, report.atol) == (0.25, 0.125)
                assert report.inputs is not None
                given = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
                for got, want in zip(report.inputs, given, strict=False):
                    assert np.array_equal(np.asarray(got), np.asarray(want))
                if import_reference:
                    assert "as asked" in report.reference, report.reference
                reports.append(report)
            return reports

        yield run
    finally:
        _KINDS.pop("options-spy", None)
