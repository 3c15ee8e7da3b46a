"""``passlens export TRACE --step N --format model-explorer|onnx --out PATH``."""

import json

import numpy as np
import onnx
import pytest

import explorer
from tests.passlens.test_cli import IR, assert_one_line_error, run


@pytest.fixture
def saved(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    trace = explorer.explore(IR, (x,), pipeline="fold-constant,dce")
    path = tmp_path / "t.passlens"
    trace.save(path)
    return path


def test_export_model_explorer(capsys, saved, tmp_path):
    out_path = tmp_path / "g.json"
    code, out, err = run(capsys, "export", saved, "--step", "1", "--out", out_path)
    assert code == 0, err
    assert f"wrote step 1 (fold-constant): {out_path}" in out
    assert f"open it with: model-explorer {out_path} --node_data_paths=" in out
    doc = json.loads(out_path.read_text())
    assert doc["label"] == "passlens step 1 fold-constant"
    labels = {n["label"] for g in doc["graphs"] for n in g["nodes"]}
    assert {"add", "x"} <= labels


def test_export_with_check_writes_the_errors(capsys, tmp_path):
    from tests.explorer.check.test_check import _FlipAdd  # noqa: F401  (registers the wrong pass)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    trace = explorer.explore(IR, (x,), pipeline="test-check-flip-add")
    trace.save(tmp_path / "flip.passlens")
    out_path = tmp_path / "g.json"
    code, out, err = run(capsys, "export", tmp_path / "flip.passlens", "--check", "--out", out_path)
    assert code == 0, err
    assert "diverged" in err  # the check's headline
    data = json.loads((tmp_path / "g.max_error.json").read_text())
    assert data["main"]["results"]
    assert "g.max_error.json" in out


def test_export_onnx(capsys, saved, tmp_path):
    out_path = tmp_path / "m.onnx"
    code, out, err = run(
        capsys,
        "export",
        saved,
        "--step",
        "dead-code-elimination",
        "--format",
        "onnx",
        "--out",
        out_path,
    )
    assert code == 0, err
    onnx.checker.check_model(onnx.load(str(out_path)))
    assert "Netron" in out


def test_export_onnx_says_how_to_get_netron_when_it_is_missing(
    capsys, saved, tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path))  # no netron on the PATH
    args = ["export", saved, "--step", "dead-code-elimination", "--format", "onnx"]
    code, out, err = run(capsys, *args, "--out", tmp_path / "m.onnx")
    assert code == 0, err
    assert "open it with Netron: netron " in out and "pip install netron" in out


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["--step", "9"], ["no step 9: the trace has steps 0 to 2"]),
        (["--step", "nope"], ["no step named 'nope'"]),
        (["--format", "onnx", "--check"], ["--check goes with --format model-explorer only"]),
    ],
)
def test_export_errors(capsys, saved, tmp_path, argv, fragments):
    code, out, err = run(capsys, "export", saved, "--out", tmp_path / "x", *argv)
    assert code == 2
    assert_one_line_error(err, *fragments)


def test_export_a_bad_format_is_a_usage_error(capsys, saved, tmp_path):
    code, out, err = run(capsys, "export", saved, "--format", "svg", "--out", tmp_path / "x")
    assert code == 2 and "invalid choice: 'svg'" in err


def test_export_check_of_a_float16_overflow(capsys, tmp_path):
    """``passlens export --check`` of a trace whose check sees an infinite error writes JSON
    Model Explorer reads (no Infinity), with "inf" where the error is."""
    from tests.explorer.test_interop import f16_overflow, strict_json

    trace, _ = f16_overflow()
    trace.save(tmp_path / "f16.passlens")
    out_path = tmp_path / "g.json"
    with np.errstate(over="ignore"):
        code, out, err = run(
            capsys, "export", tmp_path / "f16.passlens", "--check", "--out", out_path
        )
    assert code == 0, err
    assert "diverged" in err
    strict_json(out_path.read_text())
    data = strict_json((tmp_path / "g.max_error.json").read_text())
    assert data["main"]["results"]["main/return"]["value"] == "inf"
