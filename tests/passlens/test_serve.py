"""``passlens.serve``: returns a handle at once in Jupyter, serves until Ctrl-C in a script,
on the same default port as ``passlens serve`` (issue #18)."""

import sys
import types
import urllib.request

import pytest

import explorer
import passlens
from compiler import models
from passlens.cli import _parser


@pytest.fixture()
def calls(monkeypatch):
    """widgets.app.serve replaced by a recorder returning a fake handle (or None when blocking)."""
    import widgets.app

    seen: list[dict] = []

    class Handle:
        def __init__(self, port):
            self.port, self.stopped = port, False

        def stop(self):
            self.stopped = True

    def fake(trace, **options):
        seen.append(options)
        return None if options["block"] else Handle(options["port"])

    monkeypatch.setattr(widgets.app, "serve", fake)
    monkeypatch.setattr(passlens, "_servers", {})
    return seen


@pytest.fixture()
def kernel(monkeypatch):
    """A running IPython kernel, as far as passlens.in_kernel can tell."""
    shell = types.SimpleNamespace(kernel=object())
    fake = types.SimpleNamespace(get_ipython=lambda: shell)
    monkeypatch.setitem(sys.modules, "IPython", fake)


def test_the_default_port_is_the_clis():
    args = _parser().parse_args(["serve", "t.passlens"])
    assert args.port == passlens.PORT == 5006


def test_a_script_serves_until_ctrl_c(calls, monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not passlens.in_kernel()
    assert passlens.serve("t.passlens") is None
    assert calls == [{"port": 5006, "block": True}]


def test_a_terminal_ipython_is_not_a_kernel(calls, monkeypatch):
    shell = types.SimpleNamespace()  # TerminalInteractiveShell has no kernel
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert not passlens.in_kernel()
    passlens.serve("t.passlens")
    assert calls[-1]["block"] is True


def test_jupyter_gets_a_handle_at_once(calls, kernel):
    assert passlens.in_kernel()
    server = passlens.serve("t.passlens", report="r")
    assert server.port == 5006 and calls == [{"port": 5006, "block": False, "report": "r"}]
    # a re-run cell serves on the same port: the first server is stopped first
    again = passlens.serve("t.passlens")
    assert server.stopped and not again.stopped
    other = passlens.serve("t.passlens", port=5010)
    assert not again.stopped and other.port == 5010


def test_block_is_honoured_everywhere(calls, kernel):
    assert passlens.serve("t.passlens", block=True) is None
    assert passlens.serve("t.passlens", block=False, port=0).port == 0
    assert [c["block"] for c in calls] == [True, False]


def test_block_false_serves_from_a_thread(tmp_path):
    path = tmp_path / "t.passlens"
    explorer.explore(models.mlp()).save(path)
    server = passlens.serve(str(path), port=0, block=False)
    try:
        assert server.url == f"http://localhost:{server.port}/"
        assert urllib.request.urlopen(server.url, timeout=30).status == 200
    finally:
        server.stop()
    assert not server.thread.is_alive()


def test_a_jupyter_cell_does_not_hang(tmp_path):
    """In a real kernel, serve returns its handle at once (a blocking call would time out)."""
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell, new_notebook

    explorer.explore(models.mlp()).save(tmp_path / "t.passlens")
    cell = (
        "import passlens\n"
        "assert passlens.in_kernel()\n"
        "server = passlens.serve('t.passlens', port=0)\n"
        "assert server.url.startswith('http://localhost:')\n"
        "server.stop()\n"
    )
    nb = new_notebook(cells=[new_code_cell(cell)])
    client = NotebookClient(
        nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises on a failed assertion; a blocking serve times out


@pytest.fixture()
def checked_file(tmp_path):
    """A trace saved after a check that found a divergence (every add made a subtract)."""
    from tests.explorer.check.test_check import _FlipAdd  # noqa: F401  (registers the wrong pass)

    trace = explorer.explore(
        models.mlp((8, 16, 4), batch=2), pipeline="decompose-ops{ops=[linear]},test-check-flip-add"
    )
    report = trace.check(progress=False)
    assert report.of_kind("diverged")
    return trace.save(tmp_path / "checked.passlens"), report


def _numerics_shown(app, report) -> None:
    """The app shows the saved check: numerics of the diverged step, badges, the error map."""
    step = report.first_failure.step.index
    assert app.report is not None and app.report.headline() == report.headline()
    app.index = step
    app.tab = "numerics"
    pane = app.panes["numerics"].object
    assert "status diverged" in pane and "trace.check" not in pane
    assert f"max abs error {explorer.fmt.num(report.steps[step].max_abs)}" in pane
    assert "1 finding" in app.timeline.rows  # the badge of the diverged step
    app.tab = "error map"
    assert "First failing step: #" in app.map_views["error map"].html


def test_a_served_saved_trace_shows_its_check(checked_file):
    path, report = checked_file
    with passlens.serve(str(path), port=0, block=False) as server:  # a browser session opens
        assert urllib.request.urlopen(server.url, timeout=30).status == 200
        (app,) = server.apps
        _numerics_shown(app, report)


def test_passlens_serve_serves_the_saved_check(checked_file, monkeypatch):
    """`passlens serve TRACE` hands the app the trace it loaded, whose report the app shows."""
    import widgets.app
    from passlens.cli import main

    path, report = checked_file
    served = []
    monkeypatch.setattr(widgets.app, "serve", lambda trace, **kw: served.append(trace))
    assert main(["serve", str(path), "--port", "0"]) == 0
    (trace,) = served
    _numerics_shown(widgets.app.build_app(trace).passlens_app, report)
    plain = widgets.app.build_app(trace, report=False).passlens_app
    assert plain.report is None and "1 finding" not in plain.timeline.rows
