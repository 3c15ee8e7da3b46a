"""``passlens explore model.mlir --compiler iree [--flag=--iree-...]``, run in-process: an MLIR
file recorded phase by phase, iree-compile flags passed on (both ``--flag=X`` and ``--flag X``),
and every refusal (a flag that writes files or runs a program, a flag with another compiler, a
missing or misplaced .mlir file, a bad phase) one line on stderr with exit code 2, before
iree-compile runs."""

from __future__ import annotations

import importlib.util

import pytest

import explorer
from passlens.cli import main
from tests.passlens.test_cli import assert_one_line_error, run

SMALL = """
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""

needs_iree = pytest.mark.skipif(
    importlib.util.find_spec("iree") is None or importlib.util.find_spec("iree.compiler") is None,
    reason="passlens[iree] is not installed",
)


@pytest.fixture
def mlir_file(tmp_path):
    path = tmp_path / "small.mlir"
    path.write_text(SMALL)
    return path


@pytest.fixture
def compiles(monkeypatch):
    """The iree-compile runs of the test: each one's flags (run_compile still runs)."""
    import explorer.iree.record as record

    seen = []
    real = record.run_compile

    def spy(mlir, argv, job, workdir):
        seen.append(list(argv))
        return real(mlir, argv, job, workdir)

    monkeypatch.setattr(record, "run_compile", spy)
    return seen


@needs_iree
def test_an_mlir_file_is_recorded_and_flags_reach_iree_compile_in_both_forms(
    capsys, tmp_path, mlir_file, compiles
):
    saved = tmp_path / "t.passlens"
    code, out, err = run(
        capsys,
        "explore",
        mlir_file,
        "--compiler",
        "iree",
        "--pipeline",
        "global-optimization",
        "--flag=--iree-opt-const-eval=false",
        "--flag",
        "--iree-llvmcpu-target-cpu=generic",
        "--save",
        saved,
    )
    assert code == 0, err
    assert "mlir file: small.mlir" in out and "saved the trace" in out
    assert len(compiles) == 1
    argv = compiles[0]
    extra = argv.index("--iree-opt-const-eval=false")
    assert argv[extra + 1] == "--iree-llvmcpu-target-cpu=generic"  # in the order given
    assert argv.index("--compile-to=global-optimization") < extra  # after passlens's own
    trace = explorer.load(saved)
    phases = [s.name for s in trace.steps if s.kind == "pass" and s.depth == 0]
    assert phases == ["input", "abi", "preprocessing", "global-optimization"]
    # the flag did what it says: no const-eval JIT pass ran (it runs without the flag)
    assert "iree-consteval-jit-globals" not in {s.name for s in trace.steps}
    argv = ["explore", mlir_file, "--compiler", "iree", "--pipeline", "global-optimization"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "iree-consteval-jit-globals" in out


REFUSED = [
    ("--iree-hal-dump-executable-files-to={tmp}/dumps", "its name has 'dump'"),
    ("--iree-llvmcpu-embedded-linker-path=/bin/sh", "its name has 'linker'"),
    ("--iree-hal-preprocess-executables-with=touch {tmp}/dumps", "preprocess-executables"),
    ("--iree-load-plugin={tmp}/x.so", "its name has 'plugin'"),
    ("--iree-opt-export-parameters={tmp}/dumps", "export-parameters"),
    (
        "--iree-preprocessing-pass-pipeline=builtin.module(iree-util-dump-module{path={tmp}/dumps})",
        "its value names 'dump'",
    ),
    ("--mlir-print-ir-tree-dir={tmp}/dumps", "the recording sets it"),
    ("--compile-to=vm", "the recording sets it"),
    ("--iree-hal-target-device=vulkan", "the recording sets it"),
    ("--output-format=vm-c", "only --iree-... options"),
    ("--o={tmp}/dumps", "only --iree-... options"),
    ("-o", "'--name' or '--name=value'"),
]


@needs_iree
@pytest.mark.parametrize("flag, why", REFUSED)
def test_a_flag_that_writes_files_or_runs_a_program_is_refused_before_iree_compile_runs(
    capsys, tmp_path, mlir_file, compiles, flag, why
):
    flag = flag.replace("{tmp}", str(tmp_path))
    code, out, err = run(capsys, "explore", mlir_file, "--compiler", "iree", f"--flag={flag}")
    assert code == 2 and out == ""
    assert_one_line_error(err, "refused", why)
    assert compiles == [] and not (tmp_path / "dumps").exists()


@needs_iree
def test_an_unknown_flag_is_iree_compiles_own_error(capsys, mlir_file):
    code, _, err = run(
        capsys, "explore", mlir_file, "--compiler", "iree", "--flag=--iree-no-such-option=1"
    )
    assert code == 2
    assert_one_line_error(err, "Unknown command line argument '--iree-no-such-option=1'")


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["{tmp}/missing.mlir", "--compiler", "iree"], ["no such file", "missing.mlir"]),
        (["{mlir}"], ["small.mlir is MLIR: explore it with --compiler iree"]),
        (["{mlir}", "--compiler", "tvm"], ["is MLIR: explore it with --compiler iree"]),
        (
            ["{mlir}", "--flag=--iree-opt-const-eval=false"],
            ["--flag passes iree-compile flags: use it with --compiler iree"],
        ),
        (["{mlir}", "--compiler", "iree", "--pipeline", "fast"], ["bad --pipeline 'fast'"]),
        (["{mlir}", "--compiler", "iree", "--flag=--iree-x=a\x00b"], ["control character"]),
    ],
)
def test_iree_errors_are_one_line_and_exit_2(capsys, tmp_path, mlir_file, argv, fragments):
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{mlir}", str(mlir_file)) for a in argv]
    code, out, err = run(capsys, "explore", *argv)
    assert code == 2 and out == ""
    assert_one_line_error(err, *fragments)


def test_help_names_the_mlir_source_and_the_flag_option(capsys):
    assert main(["explore", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--flag --iree-NAME[=VALUE]" in out and "model.mlir" in out
