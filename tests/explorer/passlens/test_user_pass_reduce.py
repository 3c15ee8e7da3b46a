"""A pass nobody registered, passed as an instance (issue 42): the check finds its bug and
``report.reduce()`` reduces it, running the very instance the trace ran; the test file it
writes defines the pass (imported from its module, or written from the notebook cell's source)
and runs on its own, or lists what it could not write and says so when run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import explorer
from tests.explorer.passlens.cells import (
    FAST_GELU,
    FAST_GELU_SELF_CONTAINED,
    model_and_input,
    run_cell,
)

ROOT = Path(__file__).resolve().parents[3]
UNREGISTERED = FAST_GELU_SELF_CONTAINED.replace("@register_pass\n", "")
BUG = 'return Call("relu", [node.args[0]])'


def _reduced(FastGelu, **options):
    module, x = model_and_input()
    trace = explorer.explore(module, (x,), pipeline=["default", FastGelu(**options)])
    report = trace.check(progress=False)
    assert report.first_failure.kind == "diverged"
    assert report.first_failure.step is trace["fast-gelu"]
    return report.reduce(budget=60, progress=False)


def _pytest(directory: Path, extra_path: str = "") -> subprocess.CompletedProcess:
    """The reduction's test file run by pytest in a fresh process, in its own folder."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), extra_path) if p))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_reduced.py"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_unregistered_instance_is_reduced_and_its_cell_written_into_the_test(tmp_path):
    FastGelu = run_cell(UNREGISTERED)["FastGelu"]
    reduction = _reduced(FastGelu, scale=2.0)
    assert reduction.pipeline == "fast-gelu{scale=2.0}" and reduction.passes[1] == 1
    assert reduction.bindings[1] == 1 and reduction.reproduced.kind == "diverged"
    source = reduction.test_source
    assert "class FastGelu(Pass):" in source and "def to_relu(node, ctx):" in source
    assert "@register_pass" not in source  # the file names its passes itself
    assert "PASSES = [FastGelu]" in source and "MISSING = []" in source
    assert "from compiler.passes.infra.rules import Rule, Rules, op" in source
    out = reduction.save(tmp_path / "case")
    failing = _pytest(out)  # fails while the bug is there, in a process of its own
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "diverged" in failing.stdout
    fixed = out / "test_reduced.py"
    fixed.write_text(fixed.read_text().replace(BUG, "return None"))
    passing = _pytest(out)  # the fix made in the file's copy of the pass: it passes
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_a_pass_from_an_importable_module_is_imported_by_the_test(tmp_path, monkeypatch):
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "my_gelu_passes.py").write_text(UNREGISTERED)
    monkeypatch.syspath_prepend(str(folder))
    import my_gelu_passes

    try:
        reduction = _reduced(my_gelu_passes.FastGelu)
        assert "from my_gelu_passes import FastGelu" in reduction.test_source
        assert "class FastGelu" not in reduction.test_source
        failing = _pytest(reduction.save(tmp_path / "case"), extra_path=str(folder))
        assert failing.returncode == 1 and "diverged" in failing.stdout
    finally:
        sys.modules.pop("my_gelu_passes", None)


def test_what_the_file_cannot_write_is_listed_and_said_when_it_runs(tmp_path):
    FastGelu = run_cell(FAST_GELU)["FastGelu"]  # reads RELU, a Rule the cell built
    reduction = _reduced(FastGelu)  # reproduced through the file, given the pass
    source = reduction.test_source
    assert "MISSING = ['RELU (a Rule FastGelu reads): it cannot be written here']" in source
    assert "Some could not be written (MISSING): define them to run it." in source
    failing = _pytest(reduction.save(tmp_path / "case"))
    assert failing.returncode == 1
    assert "this file could not write ['RELU (a Rule FastGelu reads)" in failing.stdout


def test_a_pass_without_source_is_named_in_the_file():
    FastGelu = run_cell(UNREGISTERED, cached=False)["FastGelu"]  # exec of a string
    reduction = _reduced(FastGelu)
    assert reduction.reproduced.kind == "diverged"
    assert "'fast-gelu' (__main__.FastGelu): its source is not known" in reduction.test_source
    assert "PASSES = []" in reduction.test_source
