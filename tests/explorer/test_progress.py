"""Progress of long work (explore per pass, check per step, to_html per step, reduce): one line
per job when stderr is no terminal (CI logs), silent with progress=False and for quick work,
a tqdm bar on a terminal, an ipywidgets bar in Jupyter, callbacks."""

import io
import os
import re

import pytest

import explorer
from compiler import models
from explorer import progress as prog
from tests.compiler.passes.test_lazy_params import NESTED

PIPELINE = "decompose-ops,fold-constant,dead-code-elimination"


@pytest.fixture(scope="module")
def failed():
    """A trace whose pass fails (something to reduce)."""
    return explorer.explore(NESTED, pipeline="fold-constant,replica-lazy-transform-params")


def jobs(capsys, progress, tmp_path, failed) -> dict[str, str]:
    """What each of the four jobs writes on stderr with ``progress``."""
    err = {}
    trace = explorer.explore(models.mlp(), pipeline=PIPELINE, progress=progress)
    err["explore"] = capsys.readouterr().err
    report = trace.check(progress=progress)
    err["check"] = capsys.readouterr().err
    trace.to_html(tmp_path / "r.html", report=report, progress=progress)
    err["to_html"] = capsys.readouterr().err
    failed.check(progress=False).reduce(budget=5, progress=progress)
    err["reduce"] = capsys.readouterr().err
    return err


def test_not_a_terminal_one_line_per_job(capsys, tmp_path, failed):
    err = jobs(capsys, True, tmp_path, failed)
    assert all(text.count("\n") == 1 and text.endswith("\n") for text in err.values()), err
    assert "\r" not in "".join(err.values())  # no redrawn bars in a log
    assert re.fullmatch(
        r"exploring: 3/3 passes in \d+\.\d s \(last: dead-code-elimination\)\n", err["explore"]
    )
    assert re.fullmatch(r"checking: 4/4 steps in \d+\.\d s \(last: \S+\)\n", err["check"])
    assert err["to_html"].startswith("writing the report: 4/4 steps in ")
    assert re.fullmatch(r"reducing \(.*\) \d+ candidates tried.*, \d+\.\d s\n", err["reduce"])


def test_progress_false_is_silent(capsys, tmp_path, failed, monkeypatch):
    monkeypatch.setattr(prog, "LINE_AFTER", 0.0)  # even for "long" jobs
    monkeypatch.setattr(prog, "DELAY", 0.0)
    assert jobs(capsys, False, tmp_path, failed) == dict.fromkeys(
        ["explore", "check", "to_html", "reduce"], ""
    )


def test_by_default_quick_jobs_are_silent_and_long_ones_get_their_line(
    capsys, tmp_path, monkeypatch
):
    monkeypatch.setattr(prog, "LINE_AFTER", float("inf"))  # no job is "long"
    trace = explorer.explore(models.mlp(), pipeline=PIPELINE)
    trace.check()
    trace.to_html(tmp_path / "r.html")
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(prog, "LINE_AFTER", 0.0)  # every job is "long"
    trace.check()
    assert capsys.readouterr().err.startswith("checking: 4/4 steps in ")


def test_callbacks():
    seen = []
    trace = explorer.explore(models.mlp(), pipeline=PIPELINE, progress=lambda *a: seen.append(a))
    # before each pass; the total is known before the first
    assert [a[:2] for a in seen] == [(1, 3), (2, 3), (3, 3)]
    assert [a[2] for a in seen] == ["decompose-ops", "fold-constant", "dead-code-elimination"]
    nested = []
    explorer.explore(models.mlp(), progress=lambda *a: nested.append(a))  # default: nested
    assert nested[0][:3] == (1, 8, "default") and nested[-1][:2] == (8, 8)
    pages = []
    trace.to_html(os.devnull, progress=lambda *a: pages.append(a))
    assert pages == [(i + 1, 4, s.name) for i, s in enumerate(trace.steps)]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_tqdm_bar_after_a_while(monkeypatch):
    pytest.importorskip("tqdm")
    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    trace = explorer.explore(models.mlp(), pipeline=PIPELINE)
    assert term.getvalue() == ""  # quick: no bar at all
    trace.check(progress=True)
    out = term.getvalue()
    assert "checking" in out and "4/4" in out and "\r" in out  # tqdm redraws its line


def test_a_bar_that_is_never_due_starts_no_timer_thread(monkeypatch):
    # tests/conftest.py sets DELAY to inf: a timer waiting that long raised OverflowError in
    # its thread (an unhandled thread exception in every test drawing a bar or a widget)
    import threading

    died = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    monkeypatch.setattr(prog, "mode_of", lambda progress: "bar")
    assert prog.DELAY == float("inf")
    job = prog.Job(None, "checking", 2)
    timer = job._timer
    if timer is not None:
        timer.join(5)
    job.close()
    assert timer is None and died == []


def test_jupyter_gets_a_widget(monkeypatch):
    ipywidgets = pytest.importorskip("ipywidgets")
    shown = []
    monkeypatch.setattr(prog, "in_notebook", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda w: shown.append(w))
    trace = explorer.explore(models.mlp(), pipeline=PIPELINE, progress=True)
    (box,) = shown
    label, bar, text = box.children
    assert isinstance(bar, ipywidgets.IntProgress) and isinstance(text, ipywidgets.Label)
    assert label.value == "exploring" and bar.value == bar.max == 3
    assert bar.bar_style == "success" and text.value.startswith("exploring: 3/3 passes")
    assert len(trace) == 4


def test_names_cannot_drive_the_terminal(capsys):
    job = prog.Job(True, "checking", 2)
    job.advance("\x1b[2J\x1b]0;owned\x07" + "x" * 100)
    job.close()
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b[2J" in err
    assert len(err) < 120  # the name is cut


def test_the_checks_phases_reach_the_callback_as_step_and_what():
    """Each part of a step that may take a while (the kernels' warm-up, the run, the torch
    reference, the float64 run made to judge with, the layer errors, the findings) is given to
    the callback as ``<step>: <what>`` with that step's index, after the step itself."""
    torch = pytest.importorskip("torch")
    from tests.explorer.check.test_check_float64 import _ScaleLayer

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()).eval()
    x = torch.randn(4, 16)
    trace = explorer.explore(model, (x,), pipeline=[_ScaleLayer(layer="0", scale=1.0005)])
    seen = []
    report = trace.check(progress=lambda *a: seen.append(a))
    assert report.steps[2].rule == "float64"  # the wrong pass was judged by the float64 run
    imported, scaled = trace.steps[1].name, trace.steps[2].name
    assert seen == [
        (0, 3, "torch.export"),
        (1, 3, imported),
        (1, 3, f"{imported}: warming up torch's kernels"),
        (1, 3, f"{imported}: running"),
        (1, 3, f"{imported}: the torch reference"),
        (1, 3, f"{imported}: layer errors"),
        (1, 3, f"{imported}: findings"),
        (2, 3, scaled),
        (2, 3, f"{scaled}: running"),
        (2, 3, f"{scaled}: the float64 run to judge with"),
        (2, 3, f"{scaled}: layer errors"),
        (2, 3, f"{scaled}: findings"),
    ]


def test_a_phase_is_shown_after_its_step_and_ends_with_the_next(monkeypatch):
    pytest.importorskip("tqdm")
    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    job = prog.Job(True, "checking", 2)
    job.advance("from_torch")
    job.phase("the float64 run")
    assert "from_torch: the float64 run" in term.getvalue()
    job.advance("fold-constant")
    assert job._text() == "fold-constant"
    job.close()
    assert job.summary().endswith("(last: fold-constant)")  # the line names the step alone


def test_the_timer_draws_the_bar_when_no_update_came(monkeypatch):
    """Before DELAY nothing is drawn; the timer's call (``tick``, made here directly: no
    test waits for time) draws the bar although no unit was done, then each second; closing
    the job cancels it, and a tick after that draws nothing."""
    pytest.importorskip("tqdm")
    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    monkeypatch.setattr(prog, "DELAY", 3600.0)  # the real timer does not fire in this test
    job = prog.Job(None, "checking", 5)
    job.advance("from_torch")
    job.phase("warming up torch's kernels")
    assert term.getvalue() == ""  # not due yet
    assert job._timer is not None and job._timer.is_alive()
    job.tick()
    drawn = term.getvalue()
    assert "checking" in drawn and "1/5" in drawn and "warming up torch's kernels" in drawn
    timer = job._timer  # armed again, for a second later
    assert timer.interval == 1.0 and timer.is_alive()
    job.close()
    timer.join(5)
    assert not timer.is_alive()  # cancelled
    after = term.getvalue()
    job.tick()
    assert term.getvalue() == after


def test_the_timer_draws_the_widget_too(monkeypatch):
    pytest.importorskip("ipywidgets")
    shown = []
    monkeypatch.setattr(prog, "in_notebook", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda w: shown.append(w))
    monkeypatch.setattr(prog, "DELAY", 3600.0)
    job = prog.Job(None, "checking", 3)
    job.advance("from_torch")
    assert shown == []
    job.tick()
    (box,) = shown
    assert box.children[2].value == "1/3 from_torch"
    job.close()
    assert not job._timer.is_alive() or job._timer.finished.wait(5)


def test_no_timer_without_a_bar():
    for progress in (False, lambda *a: None):
        assert prog.Job(progress, "checking", 1)._timer is None
    line = prog.Job(None, "checking", 1)  # stderr is no terminal here: a line at the end
    assert line.mode == "line" and line._timer is None


def test_the_float64_run_says_when_it_starts():
    from explorer.check.judge import Float64Reference

    calls = []
    f64 = Float64Reference(lambda: (calls.append("run") or ((),), {}), "a float64 run")
    f64.on_start = lambda: calls.append("start")
    assert calls == []  # made on first need only
    assert f64.available and f64.available
    assert calls == ["start", "run"]


def test_a_long_import_is_a_job_of_its_own_before_the_passes(capsys, monkeypatch):
    import torch

    import explorer

    monkeypatch.setattr(prog, "LINE_AFTER", 0.0)  # every import counts as long
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    explorer.explore(model, (torch.randn(2, 4),), progress=True)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("importing the model: ") and lines[0].endswith(" s")
    assert lines[1].startswith("exploring: ")
    calls = []
    explorer.explore(model, (torch.randn(2, 4),), progress=lambda *a: calls.append(a))
    assert calls and all(c[2] != "importing the model" for c in calls)  # callbacks: passes
