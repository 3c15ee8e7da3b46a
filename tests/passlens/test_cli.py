"""The ``passlens`` command, run in-process: explore, show, errors and exit codes."""

import importlib.util
import textwrap

import pytest

import explorer
from explorer.store import load
from passlens.cli import main
from tests.explorer.store.test_store import tiny_onnx

IR = """\
weights {
  $a: f32[3] = [1.0, 2.0, 3.0]
}
def @main(%x: f32[n, 3]) -> f32[n, 3] {
  %e: f32[3] = exp($a)
  %dead: f32[n, 3] = relu(%x)
  %y: f32[n, 3] = add(%x, %e)
  return %y
}
"""


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@pytest.fixture
def ir_file(tmp_path):
    path = tmp_path / "model.ir"
    path.write_text(IR)
    return path


@pytest.fixture
def onnx_file(tmp_path):
    pytest.importorskip("compiler.frontend.onnx_frontend")
    onnx, model = tiny_onnx()
    path = tmp_path / "tiny.onnx"
    onnx.save(model, str(path))
    return path


def run(capsys, *argv):
    code = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *fragments: str):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("passlens: error: "), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in lines[0], (f, lines[0])


# ----- explore ----------------------------------------------------------------------------


def test_explore_ir_text_prints_the_summary_and_saves(capsys, ir_file, tmp_path):
    out_path = tmp_path / "run.passlens"
    code, out, err = run(capsys, "explore", ir_file, "--save", out_path)
    assert code == 0 and err == ""
    head, *rows = out.splitlines()
    assert head.split()[:3] == ["#", "pass", "status"]
    assert any("fold-constant" in r and "changed" in r and "-1 exp" in r for r in rows)
    assert f"saved the trace to {out_path}" in out
    trace = load(out_path)
    assert trace.frontend == "text" and trace["dead-code-elimination"].status == "changed"


def test_explore_with_a_pipeline(capsys, ir_file):
    code, out, _ = run(capsys, "explore", ir_file, "--pipeline", "fold-constant")
    names = [line.split()[1] for line in out.splitlines()[1:]]
    assert code == 0 and names == ["parse", "fold-constant"]


def test_explore_onnx(capsys, onnx_file):
    code, out, err = run(capsys, "explore", onnx_file)
    assert code == 0 and err == ""
    rows = out.splitlines()[1:]
    assert rows[0].split()[1] == "onnx" and rows[1].split()[1] == "from_onnx"
    assert any("fuse-ops" in r for r in rows)


def test_explore_python_file_with_model_function(capsys, tmp_path):
    path = tmp_path / "net.py"
    path.write_text(
        textwrap.dedent("""
        import numpy as np
        from compiler import models

        def model():
            return models.mlp((8, 4), batch=2), (np.ones((2, 8), np.float32),)
    """)
    )
    out_path = tmp_path / "net.passlens"
    code, out, err = run(capsys, "explore", path, "--pipeline", "decompose-ops", "--save", out_path)
    assert code == 0 and err == "" and "decompose-ops" in out
    assert load(out_path).example_inputs[0].shape == (2, 8)


def test_explore_torch_python_file(capsys, tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "tnet.py"
    path.write_text(
        textwrap.dedent("""
        import torch

        def model():
            net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
            return net.eval(), (torch.randn(2, 4),)
    """)
    )
    code, out, err = run(capsys, "explore", path, "--pipeline", "fold-constant")
    assert code == 0 and err == ""
    assert [line.split()[1] for line in out.splitlines()[1:]] == [
        "torch.export",
        "from_torch",
        "fold-constant",
    ]


def test_a_failed_pass_is_a_finding(capsys, tmp_path):
    from tests.compiler.passes.test_lazy_params import NESTED

    path = tmp_path / "nested.ir"
    path.write_text(NESTED)
    code, out, err = run(
        capsys, "explore", path, "--pipeline", "lift-transform-params,replica-lazy-transform-params"
    )
    assert code == 1 and err == ""
    last = out.strip().splitlines()[-1]
    assert last.startswith("pass #2 replica-lazy-transform-params failed at `%r")
    assert "call @transform" in last and "in @main_transform_params: AssertionError" in last


@pytest.mark.parametrize(
    "option,module", [("--check", "explorer.check"), ("--html", "widgets.report")]
)
def test_check_and_html_missing_or_working(capsys, ir_file, tmp_path, option, module):
    extra = [tmp_path / "r.html"] if option == "--html" else []
    code, out, err = run(capsys, "explore", ir_file, option, *extra)
    assert "fold-constant" in out  # the summary is printed first either way
    if not has_module(module):
        assert code == 2
        assert_one_line_error(err, f"{option} is not available in this passlens yet")
    else:
        assert code in (0, 1) and err == ""


# ----- show -------------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    trace = explorer.explore(IR, pipeline="fold-constant,dce")
    path = tmp_path / "t.passlens"
    trace.save(path)
    return path


def test_show_prints_the_summary(capsys, saved):
    code, out, err = run(capsys, "show", saved)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert (
        lines[0] == f"{saved}: 3 steps, frontend text, pipeline fold-constant,dead-code-elimination"
    )
    assert lines[1].split()[:2] == ["#", "pass"] and "-1 relu" in lines[4]


def test_show_a_step_and_a_diff(capsys, saved):
    code, out, _ = run(capsys, "show", saved, "--step", "1")
    assert code == 0 and out.startswith("# passlens IR") and "exp(" not in out
    code, out, _ = run(capsys, "show", saved, "--step", "dead-code-elimination")
    assert code == 0 and "relu" not in out
    code, out, _ = run(capsys, "show", saved, "--diff", "2")
    if has_module("explorer.diff"):
        assert code == 0 and out.startswith("#1 fold-constant -> #2 dead-code-elimination")
        assert "-  %dead: f32[n, 3] = relu(%x)" in out
    else:
        assert code == 2


def test_show_a_failed_step_marks_the_line_and_prints_the_traceback(capsys, tmp_path):
    trace = explorer.explore(IR, pipeline="fold-constant,test-explode")
    trace.save(tmp_path / "f.passlens")
    code, out, _ = run(capsys, "show", tmp_path / "f.passlens", "--step", "2")
    assert code == 0
    marked = [line for line in out.splitlines() if "<-- the pass failed here" in line]
    assert len(marked) == 1 and "add(" in marked[0]
    assert "pass #2 test-explode failed" in out and "Traceback (most recent call last)" in out


# ----- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv,fragments",
    [
        (["explore", "{tmp}/missing.onnx"], ["no such file", "missing.onnx"]),
        (["explore", "{ir}", "--pipeline", "convert-dtype{dtype=float99}"], ["bad pipeline spec"]),
        (["explore", "{tmp}/model.xyz"], ["unknown model type '.xyz'"]),
        (["explore", "{tmp}/bad.ir"], ["bad.ir:2:", "not defined"]),
        (["explore", "{tmp}/nomodel.py"], ["defines no model() function"]),
        (["explore", "{tmp}/crash.py"], ["running the file failed", "ZeroDivisionError"]),
        (["show", "{tmp}/missing.passlens"], ["no such trace file"]),
        (["show", "{ir}"], ["not a passlens trace file"]),
        (["show", "{saved}", "--step", "99"], ["no step 99: the trace has steps 0 to 2"]),
        (["show", "{saved}", "--step", "nope"], ["no step named 'nope'"]),
        (["show", "{saved}", "--diff", "0"], ["has no previous step"]),
    ],
)
def test_errors_are_one_line_and_exit_2(capsys, tmp_path, ir_file, saved, argv, fragments):
    (tmp_path / "model.xyz").write_text("?")
    (tmp_path / "bad.ir").write_text("def @main(%x: f32[2]) -> f32[2] {\n  return %q\n}\n")
    (tmp_path / "nomodel.py").write_text("x = 1\n")
    (tmp_path / "crash.py").write_text("1 / 0\n")
    subst = {"{tmp}": str(tmp_path), "{ir}": str(ir_file), "{saved}": str(saved)}
    for k, v in subst.items():
        argv = [a.replace(k, v) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert_one_line_error(err, *fragments)


def test_pass_name_typos_are_each_reported_with_a_suggestion_on_short_lines(capsys, ir_file):
    code, out, err = run(
        capsys, "explore", ir_file, "--pipeline", "defualt,fold-constnat{max_bytes=1},dce,zzz"
    )
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[0] == "passlens: error: bad pipeline spec: 3 unknown pass names"
    assert lines[1:4] == [
        "  'defualt': did you mean 'default'?",
        "  'fold-constnat': did you mean 'fold-constant'?",
        "  'zzz'",
    ]  # dce, an alias, is known
    assert "passlens passes" in lines[-1]
    assert max(map(len, lines)) <= 80


def test_passes_lists_every_pass_with_its_options_and_what_default_runs(capsys):
    from compiler.passes import all_passes, named_pipelines

    code, out, _ = run(capsys, "passes")
    assert code == 0
    listed = {
        line.strip()
        for line in out.splitlines()
        if line.startswith("  ") and not line.startswith("      ")
    }
    names = {n.split(" (also: ")[0] for n in listed if " = " not in n}
    assert names == set(all_passes()) - {"sequential"}
    assert f"default = {named_pipelines()['default']}" in listed
    # options with their defaults, written as a spec takes them; a required one says so
    assert "options: max_bytes=67108864, fold_qdq=false" in out
    assert "options: dtype (required)" in out
    assert "Compile the module's loop-IR kernels with LLVM" in out


def test_usage_errors_and_help(capsys):
    code, _, err = run(capsys, "frobnicate")
    assert code == 2 and "invalid choice" in err
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "explore" in out and "show" in out


def test_demo_runs(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing is written where it runs: --out says where
    out_dir = tmp_path / "out"
    code, out, _ = run(capsys, "demo", "--out", out_dir)
    assert code == 0 and "default pipeline" in out
    written = {p.name for p in out_dir.iterdir()}
    assert {"passlens-demo.html", "passlens-demo-bloat.html", "passlens-demo.passlens"} <= written
    assert not (tmp_path / "build").exists()
    bloat = (out_dir / "passlens-demo-bloat.html").read_text()
    assert "param-bloat at #" in bloat  # the check's findings are in the bloat report


# registers test-explode
from tests.compiler.passes import test_manager  # noqa: E402,F401


def test_show_the_backend_texts_of_a_compiled_step(capsys, tmp_path):
    text = textwrap.dedent(
        """
        def @main(%x: f32[4, 8]) -> f32[4, 8] {
          %e: f32[4, 8] = exp(%x)
          %r: f32[4, 8] = relu(%e)
          return %r
        }
        """
    )
    path = tmp_path / "b.passlens"
    explorer.explore(text, pipeline="fuse-ops,legalize-ops,codegen").save(path)
    code, out, _ = run(capsys, "show", path, "--step", "codegen", "--view", "loop IR")
    assert code == 0 and "kernel @fused_exp_relu" in out and "for i0 in 0..4" in out
    code, out, _ = run(capsys, "show", path, "--step", "codegen", "--view", "assembly")
    assert code == 0 and "fused_exp_relu" in out
    code, out, err = run(capsys, "show", path, "--step", "fuse-ops", "--view", "LLVM IR")
    assert code == 2
    assert_one_line_error(err, "step 1 (fuse-ops) has no 'LLVM IR' text; it has 'IR'")


def _notebook(path, cells):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for source, tags in cells:
        cell = new_code_cell(source)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    nbformat.write(nb, path)


def test_demo_runs_a_notebook_headless_and_prints_its_summary(capfd, tmp_path):
    nb = tmp_path / "t.ipynb"
    _notebook(
        nb,
        [
            ("x = 6 * 7", None),
            ("print('the answer is', x)", ["summary"]),
            ("open('r.html', 'w').write('<p>report</p>')", None),
        ],
    )
    out_dir = tmp_path / "out"
    code, out, err = run(capfd, "demo", "--notebook", nb, "--out", out_dir)
    assert code == 0
    assert "[3/3]" in out and "the answer is 42" in out
    assert (out_dir / "t.ipynb").is_file() and (out_dir / "r.html").is_file()
    assert f"HTML report:       {(out_dir / 'r.html').resolve()}" in out
    # what to do next, last; the kernel ran over local sockets (no TCP warning)
    assert out.rstrip().splitlines()[-3:] == [
        "open next:",
        f"  {(out_dir / 'r.html').resolve().as_uri()}   (the report: open it in a browser)",
        "  make lab   (JupyterLab on notebooks/: the tour, then one real compiler bug each)",
    ]
    assert "TCP" not in err and "WARNING" not in err


def test_demo_with_a_failing_notebook_says_which_cell(capsys, tmp_path):
    nb = tmp_path / "bad.ipynb"
    _notebook(nb, [("assert 1 == 2, 'the detector is broken'", None)])
    code, _, err = run(capsys, "demo", "--notebook", nb, "--out", tmp_path / "out")
    assert code == 1 and "the detector is broken" in err
    code, _, err = run(capsys, "demo", "--notebook", tmp_path / "missing.ipynb")
    assert code == 2 and "no notebook at" in err


def test_check_and_html_together_draw_the_findings_in_the_report(capsys, tmp_path):
    path = tmp_path / "bloat.py"  # a model file: model() returns the module to explore
    path.write_text(
        "from tests.explorer.test_diff import LINEAR_4D, linear_module\n"
        "def model():\n    return linear_module(LINEAR_4D)\n"
    )
    html = tmp_path / "r.html"
    code, out, err = run(
        capsys,
        "explore",
        path,
        "--pipeline",
        "replica-linear-broadcast,fold-constant",
        "--check",
        "--html",
        html,
    )
    assert code == 1 and err == "" and "param-bloat" in out
    text = html.read_text()
    assert "id='pl-banner'" in text and "param-bloat at #" in text  # the one-line banner
    assert '"bad":1' in text and "copies of linear.weight" in text  # drawn on the graph


def test_control_characters_in_a_trace_do_not_reach_the_terminal(capsys, tmp_path):
    """A step named with escape sequences (retitle the window, clear the screen) is shown as
    text: a shared trace must not drive the terminal of whoever opens it."""
    import json
    import zipfile

    from compiler import models
    from tests.explorer.store.test_store import rewrite_member

    path = tmp_path / "t.passlens"
    explorer.explore(models.mlp((4, 3), batch=2), pipeline="fold-constant").save(path)
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    manifest["steps"][1]["name"] = "fold\x1b]0;owned\x07\x1b[2J"
    rewrite_member(path, "manifest.json", json.dumps(manifest).encode())
    code, out, _ = run(capsys, "show", path)
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "fold\\x1b]0;owned\\x07\\x1b[2J" in out


def test_explore_check_save_and_html_keep_the_numerics_then_show_prints_them(capsys, tmp_path):
    """--check runs before --save and --html: the file and the report both hold the numerics,
    and `passlens show` prints the verdict and the numbers the check found."""
    from tests.explorer.check.test_check import _FlipAdd  # noqa: F401  (registers the wrong pass)

    model, saved, html = tmp_path / "model.ir", tmp_path / "run.passlens", tmp_path / "r.html"
    model.write_text(IR)
    code, out, err = run(
        capsys,
        "explore",
        model,
        "--pipeline",
        "test-check-flip-add,fold-constant",
        "--check",
        "--save",
        saved,
        "--html",
        html,
    )
    assert code == 1 and err == ""
    assert f"saved the trace to {saved}" in out and f"wrote {html}" in out
    headline = "check: 1 problem; first at #1 test-check-flip-add (diverged)"
    assert headline in out
    trace = load(saved)
    report = trace.report
    assert report is not None and report.headline() == headline
    assert [r["status"] for r in report.rows()] == ["ok", "diverged", "diverged"]
    assert report.inputs is not None and report.inputs[0].shape == (2, 3)  # random: n = 2
    text = html.read_text()
    assert "id='pl-banner'" in text and "diverged at #1" in text  # the one-line banner
    assert "max abs error" in text  # each step's numerics
    # show: the summary, then the check saved with the trace
    code, shown, err = run(capsys, "show", saved)
    assert code == 0 and err == ""
    lines = shown.splitlines()
    start = lines.index(headline)
    assert lines[start + 1].startswith("reference: the imported step")
    rows = {r.split()[1]: r.split() for r in lines if r[:3].strip().isdigit()}
    numbers = report.rows()[1]
    assert rows["test-check-flip-add"][-3:] == [
        "diverged",
        explorer.fmt.num(numbers["max_abs"]),
        explorer.fmt.num(numbers["max_rel"]),
    ]
    assert "findings:" in lines and any("[diverged] after test-check-flip-add" in x for x in lines)


def test_explore_saves_the_trace_when_the_check_cannot_run(capsys, tmp_path, monkeypatch):
    from explorer.check import CheckError
    from explorer.trace import Trace

    def refuse(self, *args, **kwargs):
        raise CheckError("the inputs do not fit")

    monkeypatch.setattr(Trace, "check", refuse)
    model, saved = tmp_path / "model.ir", tmp_path / "run.passlens"
    model.write_text(IR)
    code, out, err = run(capsys, "explore", model, "--check", "--save", saved)
    assert code == 2 and "the inputs do not fit" in err
    assert f"saved the trace to {saved}" in out and load(saved).report is None


def test_show_of_a_trace_without_a_report_prints_no_check(capsys, saved):
    code, out, _ = run(capsys, "show", saved)
    assert code == 0 and "check" not in out


def test_a_line_shows_before_the_slow_imports_on_a_terminal_only(capsys, ir_file):
    import io

    from passlens.cli import _parser, starting

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    args = _parser().parse_args(["explore", str(ir_file)])
    shown, piped = Terminal(), io.StringIO()
    starting(args, shown)
    starting(args, piped)
    assert shown.getvalue().startswith(f"passlens explore: importing {ir_file} (loading torch")
    assert piped.getvalue() == ""  # a pipe or a test gets nothing extra on stderr
    starting(_parser().parse_args(["passes"]), shown)  # instant: nothing to announce
    assert shown.getvalue().count("\n") == 1


def test_python_m_passlens_does_not_import_from_the_current_folder(tmp_path):
    """``python -m`` puts the current folder first on the import path: a ``numpy.py`` in the
    folder a command runs from (a downloaded model's folder) must not run in place of numpy."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    marker = tmp_path / "RAN"
    (tmp_path / "numpy.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit('the planted numpy ran')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "-m", "passlens", "passes"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "fold-constant" in proc.stdout and not marker.exists()


def test_check_of_a_huge_signature_without_inputs_is_one_clear_error(capsys, tmp_path):
    """issue #31: a 105-byte IR text asking for a 12000 x 12000 input ran `--check` for over
    200 s; random inputs are made only up to a stated size, and the error says what to do."""
    path = tmp_path / "big.ir"
    path.write_text(
        "def @main(%x: f32[12000, 12000]) -> f32[12000, 12000] {\n"
        "  %y: f32[12000, 12000] = matmul(%x, %x)\n  return %y\n}\n"
    )
    code, _, err = run(capsys, "explore", path, "--check")
    assert code == 2
    assert_one_line_error(
        err, "%x: f32[12000, 12000] would need 576,000,000 bytes", "pass real inputs", "256 MiB"
    )


SHAPE_BUG = """
import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.lin(x) + torch.ones(5)


def model():
    return M()
"""


def test_torchs_log_of_a_failed_capture_is_held_back_and_shown_by_verbose(capfd, tmp_path):
    path = tmp_path / "shape_bug.py"
    path.write_text(SHAPE_BUG)
    code = main(["explore", f"{path}:model", "--input-shape", "2,8"])
    _, err = capfd.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[0].startswith("passlens: error: ") and "broadcast" in lines[0]
    assert "fake_tensor" not in err  # torch's traceback lines are not printed
    assert len(lines) == 1 and lines[0].endswith("--verbose shows them)")
    code = main(["explore", f"{path}:model", "--input-shape", "2,8", "--verbose"])
    _, err = capfd.readouterr()
    assert code == 2
    assert "torch's log while capturing:" in err and "fake_tensor" in err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("passlens: error: ")


def test_inductor_on_an_onnx_file_is_one_line_before_asking_for_inputs(capsys, onnx_file):
    code, _, err = run(capsys, "explore", onnx_file, "--compiler", "inductor")
    assert code == 2
    assert err.strip().splitlines() == [err.strip()]
    assert "--compiler inductor compiles torch models" in err and "ONNX model" in err
    assert "TypeError" not in err and "--input-shape" not in err
    # the compilers that take it, named as this command's flag, not as the Python argument
    assert err.rstrip().endswith(": explore it with --compiler passlens, tvm or onnxruntime")
    assert "compiler '" not in err


def test_passes_lists_aliases_and_plain_text(capsys):
    code, out, _ = run(capsys, "passes")
    assert code == 0
    assert "  dead-code-elimination (also: dce)" in out.splitlines()
    assert "`" not in out and ":func:" not in out  # roles, literals and code: plain words
    assert "(those in ops)" in out  # decompose-ops's `ops`


def test_demo_help_says_what_it_does(capsys):
    code, out, _ = run(capsys, "demo", "--help")
    assert code == 0 and "ConvNeXt" in out and "--notebook" in out
