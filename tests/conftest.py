"""Test-suite configuration.

Under CI (``CI`` set), hypothesis runs derandomized: the same examples every run, so a
submission's result does not depend on luck; locally it keeps exploring new examples.

No test depends on how long something took: output that appears only after some wall time
(the progress line of a job that took ``LINE_AFTER`` seconds, the note under a slow import)
is switched off for every test by ``no_wall_time_output``; a test of that output sets the
threshold itself (``monkeypatch.setattr(progress, "LINE_AFTER", 0.0)``). On a loaded machine
a check may take 5 s and a first import 2 s; the suite must stay green there.

Under pytest-xdist (`-n 2`), a worker whose session is over ignores SIGINT: execnet, the
worker's transport, sends the worker a SIGINT when the worker is still busy 5 s after the
controller closed it, and the worker's last work after its results are sent is pytest's final
garbage collection, so the KeyboardInterrupt landed in whatever finalizer that collection was
running and was printed after `[100%]` as a PytestUnraisableExceptionWarning with a
KeyboardInterrupt traceback (`pytest_sessionfinish` below; test:
tests/test_pytest_teardown.py).
"""

import os
import signal

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def no_wall_time_output(monkeypatch):
    """Thresholds in seconds set out of reach: what a test sees does not depend on load."""
    from explorer import progress, summary

    monkeypatch.setattr(progress, "LINE_AFTER", float("inf"))
    monkeypatch.setattr(progress, "DELAY", float("inf"))
    monkeypatch.setattr(summary, "FIRST_CALL_NOTE_MS", float("inf"))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """A pytest-xdist worker whose tests have all run ignores SIGINT (see the module
    docstring); a Ctrl-C of the user's goes to the controller too, which stops the run."""
    if hasattr(session.config, "workerinput"):  # a pytest-xdist worker, its tests all run
        signal.signal(signal.SIGINT, signal.SIG_IGN)
