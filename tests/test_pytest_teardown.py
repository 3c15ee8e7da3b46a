"""Nothing is raised at the end of a pytest-xdist run (issue 45): execnet sends a worker that
is still busy 5 s after the controller closed it a SIGINT, which landed in a finalizer of
pytest's final garbage collection and was printed after `[100%]` as a
PytestUnraisableExceptionWarning with a KeyboardInterrupt traceback. tests/conftest.py's
`pytest_sessionfinish` has a worker whose tests have all run ignore SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# a test leaving objects whose finalizers take 6 s to the final garbage collection: the
# worker is still busy when execnet's 5 s are up
SLOW_END = textwrap.dedent(
    """
    import gc
    import time


    class SlowToFinalize:
        def __del__(self):
            time.sleep(0.5)


    def test_leaves_slow_finalizers_to_the_end():
        gc.disable()  # the cycles below are freed by pytest's gc.collect() at the very end
        for _ in range(12):
            obj = SlowToFinalize()
            obj.cycle = obj
    """
)


def test_an_xdist_worker_slow_to_end_prints_no_keyboard_interrupt(tmp_path):
    pytest.importorskip("xdist")
    (tmp_path / "test_slow_end.py").write_text(SLOW_END)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider",
         "-p", "no:warnings", "-p", "tests.conftest", str(tmp_path / "test_slow_end.py")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "1 passed" in out, out
    assert "Unraisable" not in out and "KeyboardInterrupt" not in out, out


def test_the_hook_ignores_sigint_in_a_worker_only():
    from tests import conftest

    class Session:
        class config:  # noqa: N801  (a stand-in for pytest's Config)
            pass

    before = signal.getsignal(signal.SIGINT)
    try:
        conftest.pytest_sessionfinish(Session())  # not a worker: Ctrl-C still stops
        assert signal.getsignal(signal.SIGINT) is before
        Session.config.workerinput = {"workerid": "gw0"}
        conftest.pytest_sessionfinish(Session())
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
