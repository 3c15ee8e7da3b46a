"""``passlens serve`` in a subprocess, for the tests that drive it over HTTP."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).parents[2]


@contextmanager
def passlens_serve(path: Path, *args: str) -> Iterator[tuple[str, int, str]]:
    """Run ``python -m passlens serve PATH --port 0 ARGS``; yield its URL, port and first
    line. On leaving, Ctrl-C must stop it with exit status 0."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "passlens", "serve", str(path), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    try:
        line = proc.stdout.readline()
        m = re.search(r"at (http://localhost:(\d+)/) \(Ctrl-C to stop\)", line)
        assert m, line + proc.stderr.read() if proc.poll() is not None else line
        yield m.group(1), int(m.group(2)), line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
