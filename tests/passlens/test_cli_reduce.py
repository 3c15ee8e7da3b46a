"""``passlens reduce TRACE --out DIR``, run in-process: the saved trace checked, its first
failure reduced, the files written; errors are one line and exit 2."""

import pytest

import explorer
from compiler import models
from passlens.cli import main
from tests.compiler.passes.test_lazy_params import NESTED


@pytest.fixture
def failed_trace_file(tmp_path):
    trace = explorer.explore(NESTED, pipeline="fold-constant,replica-lazy-transform-params")
    path = tmp_path / "failed.passlens"
    trace.save(path)
    return path


def test_reduce_checks_the_trace_and_writes_the_reduction(capsys, failed_trace_file, tmp_path):
    out = tmp_path / "reduced"
    assert main(["reduce", str(failed_trace_file), "--out", str(out), "--budget", "30"]) == 0
    captured = capsys.readouterr()
    assert "checking" in captured.err
    assert "first at #2 replica-lazy-transform-params" in captured.err
    assert "reducing" in captured.err  # the progress line
    assert "reduced pass-failed at #2 replica-lazy-transform-params" in captured.out
    assert "pipeline: replica-lazy-transform-params" in captured.out
    names = ["reduced.passlens", "reduced.ir", "pipeline.txt", "test_reduced.py"]
    assert f"wrote {', '.join(names)} to {out}" in captured.out
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    assert (out / "pipeline.txt").read_text() == "replica-lazy-transform-params\n"
    reduced = explorer.load(out / "reduced.passlens")  # a trace like any other
    assert reduced.failure is not None and reduced.failure.name == "replica-lazy-transform-params"
    assert main(["show", str(out / "reduced.passlens")]) == 0


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--finding", "3"], "no finding 3: the report has 1 (0 is the first)"),
        (["--budget", "0"], "bad budget 0"),
    ],
)
def test_reduce_errors_are_one_line(capsys, failed_trace_file, tmp_path, argv, fragment):
    assert main(["reduce", str(failed_trace_file), "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("passlens: error: ") and fragment in err


def test_reduce_a_trace_without_problems_says_so(capsys, tmp_path):
    path = tmp_path / "ok.passlens"
    explorer.explore(models.mlp((8, 4)), pipeline="dce").save(path)
    assert main(["reduce", str(path), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().endswith("passlens: error: nothing to reduce: check ok")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("damage", ["lifted limit", "overlapping steps"])
def test_a_crafted_trace_is_one_clear_error_for_reduce(capsys, failed_trace_file, damage, tmp_path):
    """issue #31: a file's step spec lifting a safety limit, or steps listing overlapping
    children, end in one passlens error line (exit 2), not a hang or a lifted limit."""
    import json
    import zipfile

    from tests.explorer.store.test_store import rewrite_member
    from tests.passlens.test_cli import assert_one_line_error

    with zipfile.ZipFile(failed_trace_file) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    if damage == "lifted limit":
        step = next(s for s in manifest["steps"] if s["name"] == "fold-constant")
        step["spec"] = "fold-constant{max_bytes=1000000000000}"
        fragment = "max_bytes is a safety limit"
    else:
        manifest["steps"][1]["children"] = [2]  # step 2's parent is not step 1
        manifest["steps"][0]["children"] = [2]  # listed under two steps
        fragment = "as a child, whose parent is"
    rewrite_member(failed_trace_file, "manifest.json", json.dumps(manifest).encode())
    out = tmp_path / "out"
    assert main(["reduce", str(failed_trace_file), "--out", str(out), "--budget", "30"]) == 2
    assert_one_line_error(capsys.readouterr().err.splitlines()[-1], fragment)
