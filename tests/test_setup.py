"""Checks that the development environment built by `make venv` is the expected one."""

import shutil
import subprocess


def test_torch_is_pinned_cpu_2_13_0():
    import torch

    assert torch.__version__.split("+")[0] == "2.13.0", torch.__version__


def test_graphviz_dot_available():
    dot = shutil.which("dot")
    assert dot is not None, "graphviz 'dot' not on PATH (make venv installs it)"
    proc = subprocess.run([dot, "-V"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    # dot -V prints its version on stderr, e.g. "dot - graphviz version 2.43.0 (0)".
    assert "graphviz" in (proc.stdout + proc.stderr).lower()
