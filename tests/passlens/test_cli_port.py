"""``passlens serve`` on a port already in use: one line with a hint, exit code not 0."""

import socket
import subprocess
import sys

import pytest


def test_serve_port_in_use_says_so(tmp_path):
    pytest.importorskip("panel")
    import explorer
    from compiler import models

    trace = explorer.explore(models.mlp((4, 3), batch=2), pipeline="fold-constant")
    path = tmp_path / "t.passlens"
    trace.save(path)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "passlens", "serve", str(path), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode != 0
    assert "in use" in run.stderr and "--port 0" in run.stderr
    assert "Traceback" not in run.stderr
