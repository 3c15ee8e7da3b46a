"""Traces written before the house was rebuilt (issue 40) still load, show and check.

The files in data/pre40/ were written by passlens at commit 5054aec (before modules moved into
explorer/passlens/ and the check runner changed), one per compiler: passlens's own, TVM's Relax
and torch.compile's Inductor. A module move that leaks into the trace format (a class path, a
registry name, an adapter's key) makes one of these fail."""

from pathlib import Path

import pytest

import explorer

DATA = Path(__file__).parent / "data" / "pre40"


@pytest.mark.parametrize(
    "name, compiler, first, count",
    [
        ("passlens_torch", "passlens", "torch.export", None),
        ("tvm", "tvm", "torch.export", None),
        ("inductor", "inductor", "dynamo 0/0 forward (container.py:248)", 32),
    ],
)
def test_a_trace_written_before_issue_40_loads_with_its_report(
    name, compiler, first, count, tmp_path
):
    trace = explorer.load(DATA / f"{name}.passlens")
    assert trace.compiler == compiler
    names = [s.name for s in trace]
    assert names[0] == first
    if count is not None:
        assert len(names) == count
    assert trace.report is not None and trace.report.ok
    assert trace.report.inputs is not None and trace.report.inputs[0].shape == (2, 4)
    assert trace.to_html(tmp_path / "page.html", progress=False).stat().st_size > 1000
    assert names[-1] in (tmp_path / "page.html").read_text()
    assert trace[-1].diff() is not None and trace.summary()


def test_a_passlens_trace_written_before_issue_40_checks_again():
    trace = explorer.load(DATA / "passlens_torch.passlens")
    report = trace.check(trace.report.inputs, progress=False)
    assert report.ok and len(report.steps) == len(trace)
