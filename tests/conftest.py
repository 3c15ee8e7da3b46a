"""Test-suite configuration.

Under CI (``CI`` set), hypothesis runs derandomized: the same examples every run, so a
submission's result does not depend on luck; locally it keeps exploring new examples.

No test depends on how long something took: output that appears only after some wall time
(the progress line of a job that took ``LINE_AFTER`` seconds, the note under a slow import)
is switched off for every test by ``no_wall_time_output``; a test of that output sets the
threshold itself (``monkeypatch.setattr(progress, "LINE_AFTER", 0.0)``). On a loaded machine
a check may take 5 s and a first import 2 s; the suite must stay green there.
"""

import os

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
