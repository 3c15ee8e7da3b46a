"""Reducing an IREE finding (explorer/iree/reduce.py, repro.py): the MLP recorded with the bf16
demotion flags and a harmless flag reduces to the dump before the demotion, the demotion's two
flags kept and the harmless one dropped; the upstream script (iree and numpy only) exits 1 with
the flags and 0 without them; what cannot be reduced is one clear error. Skipped when
passlens[iree] is not installed."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")
pytest.importorskip("iree.turbine")
torch = pytest.importorskip("torch")

import explorer  # noqa: E402
from explorer.iree.reduce import (  # noqa: E402
    delete_symbol,
    inline_parameters,
    unused_symbols,
    without_locations,
)
from explorer.reduce import NotReproducible, ReduceError, reduce  # noqa: E402
from tests.explorer.iree.test_iree import MLP  # noqa: E402

BF16 = [  # IREE 3.13's option that demotes matmul inputs to bf16 (changes the numbers)
    "--iree-global-opt-demote-contraction-inputs-type=bf16",
    "--iree-global-opt-demote-contraction-inputs-operations=all",
]
HARMLESS = "--iree-opt-strip-assertions"  # the MLP has no assertions: changes nothing
DEMOTE = "iree-global-opt-demote-contraction-inputs"


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    torch.manual_seed(0)
    model = MLP().eval()
    trace = explorer.explore(  # to the phase the demotion runs in, no further
        model,
        (torch.randn(2, 8),),
        compiler="iree",
        pipeline="global-optimization",
        flags=[HARMLESS, *BF16],
        progress=False,
    )
    report = trace.check(progress=False)
    calls = []
    reduction = reduce(report, budget=600, progress=calls.append)
    out = tmp_path_factory.mktemp("iree-repro")
    script = reduction.upstream_repro(out)
    return trace, report, reduction, script, calls


def test_the_reduction_keeps_the_demotion_flags_and_drops_the_harmless_one(reduced):
    trace, report, r, _, calls = reduced
    first = report.first_failure
    assert first.step.name == DEMOTE and r.finding is first
    assert r.flags == BF16 and r.dropped == [HARMLESS]
    assert r.recorded_flags == [HARMLESS, *BF16]
    # from the last agreeing step's dump, resumed after the phase before its own
    assert r.last_agreeing == first.details["last_agreeing"]
    assert trace.steps[r.last_agreeing].module.phase == "global-optimization"
    assert r.phase == "preprocessing"
    assert r.max_abs > 1e-4 > 1e-6 > r.clean_abs  # bf16 rounding with the flags, not without
    assert not r.cut_short and r.tried >= 4
    # the MLIR lost its locations (they name the user's files) and holds the weights
    assert "loc(" not in r.mlir and "#flow.parameter" not in r.mlir and r.inlined
    assert r.irpa is None and 'dense<"0x' in r.mlir
    assert r.chars[0] > 0 and r.reference.startswith("torch eager")
    text = str(r)
    assert "2 flag(s)" in text and f"flags dropped: {HARMLESS}" in text
    assert calls and calls[-1]["tried"] == r.tried and "compiling" in calls[-1]["phase"]


def test_the_script_reproduces_with_the_flags_and_not_without(reduced, tmp_path):
    _, _, r, script, _ = reduced
    folder = script.parent
    assert sorted(p.name for p in folder.iterdir()) == sorted(r.files)
    source = script.read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == {"iree", "numpy"}

    def run(path):  # -I: no PYTHONPATH, no user site, the script's folder not on the path
        return subprocess.run(
            [sys.executable, "-I", str(path)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=600,
        )

    bad = run(script)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "BUG REPRODUCED" in bad.stdout and "max abs error" in bad.stdout
    assert BF16[0] in bad.stdout
    assert "the same compile: iree-compile reduced.mlir --iree-hal-target" in bad.stdout
    line = next(ln for ln in source.splitlines() if ln.startswith("FLAGS = "))
    assert "bf16" in line
    without = folder / "repro_without_flags.py"
    without.write_text(source.replace(line, "FLAGS = []"))
    good = run(without)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "not reproduced: the outputs agree" in good.stdout


def test_what_cannot_be_reduced_is_one_clear_error(reduced, tmp_path, capsys):
    from passlens.cli import EXIT_ERROR, main

    trace, report, _, _, _ = reduced
    with pytest.raises(ReduceError, match="budget of 0 s was spent"):
        reduce(report, budget=0)
    with pytest.raises(ReduceError, match="no finding 7"):
        reduce(report, 7)
    path = tmp_path / "demoted.passlens"
    trace.save(path)
    loaded = explorer.load(path)
    with pytest.raises(ReduceError, match="loaded from a file"):
        reduce(loaded.report)
    # the command checks a saved trace first: a loaded IREE trace has no parameter file
    assert main(["reduce", str(path), "--out", str(tmp_path / "out")]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "passlens: error:" in err and "loaded from a file" in err
    assert not (tmp_path / "out").exists()
    # a model changed since it was recorded: the import differs, no dump agrees
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3).eval()
    small = explorer.explore(model, (torch.randn(2, 4),), compiler="iree", pipeline="abi")
    with torch.no_grad():
        model.weight += 1.0
    changed = small.check(progress=False)
    assert changed.first_failure.step is small.steps[0]
    with pytest.raises(NotReproducible, match="the finding is at the import"):
        reduce(changed)


GLOBALS = """module @m {
  util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<2x2xf32>
  util.global private @unused = 0 : i32
  util.func private @helper() {
    util.return
  }
  util.func public @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %w = util.global.load @w : tensor<2x2xf32>
    %0 = arith.addf %arg0, %w : tensor<2x2xf32> loc("a.py":1:0)
    util.return %0 : tensor<2x2xf32>
  }
}
"""


def test_the_mlir_candidates_keep_what_is_used_and_inline_exact_bytes():
    import numpy as np

    assert unused_symbols(GLOBALS) == ["unused", "helper"]
    smaller = delete_symbol(GLOBALS, "helper")
    assert "@helper" not in smaller and "@main" in smaller and "@unused" in smaller
    assert delete_symbol(GLOBALS, "nothing") is None
    assert "loc(" not in without_locations(GLOBALS)
    w = np.array([[1.5, -2.0], [0.25, 3.0]], np.float32)
    inlined = inline_parameters(GLOBALS, {"w": w.tobytes()})
    assert f'dense<"0x{w.tobytes().hex().upper()}"> : tensor<2x2xf32>' in inlined
    assert "#flow.parameter" not in inlined
    assert inline_parameters(GLOBALS, {"w": b"\0" * 12}) is None  # another size: not inlined
    assert inline_parameters(GLOBALS, {}) is None


MATMUL = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>)
      outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
"""


def test_an_mlir_source_reduces_against_its_import_compiled_without_the_flags(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 8)).astype(np.float32)
    b = rng.standard_normal((8, 4)).astype(np.float32)
    trace = explorer.explore(
        MATMUL, (a, b), compiler="iree", pipeline="global-optimization", flags=BF16
    )
    report = trace.check(progress=False)
    assert report.first_failure.step.name == DEMOTE, str(report)
    r = reduce(report, progress=False)
    assert r.flags == BF16 and r.dropped == [] and r.expected64 is None
    assert r.reference == "the import compiled from the start, no flags"
    assert r.irpa is None and not r.inlined and "PARAMS_FILE = None" in r.script()
    assert r.max_abs > 1e-3 and r.clean_abs < 1e-6
    assert "EXPECTED64 = []" in r.script()
    script = r.upstream_repro(tmp_path / "bug.py")  # a .py path names the script
    assert script == tmp_path / "bug.py" and script.is_file()
    assert (tmp_path / "reduced.mlir").read_text() == r.mlir
    assert not (tmp_path / "repro.py").exists()
    with pytest.raises(ReduceError, match="file name ending .py"):
        r.save(tmp_path / "other", "../escape.py")
