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


def _project():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    with open(root / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    pins = {}
    for line in (root / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.strip()
    return root, project, pins


def test_each_compiler_extra_is_pinned_and_installed_by_make_venv():
    """The optional compilers (passlens[tvm], passlens[iree]) are pinned in constraints.txt,
    which every install applies, and `make venv` installs them so their tests run."""
    import re

    root, project, pins = _project()
    extras = project["optional-dependencies"]
    assert {"tvm", "iree"} <= set(extras)
    for extra in ("tvm", "iree"):
        for req in extras[extra]:
            name = re.split(r"[=<>!~\[ ;]", req, maxsplit=1)[0].lower()
            assert name in pins or "==" in req, f"passlens[{extra}]: {req} is not pinned"
    assert pins["iree-base-compiler"] == "3.13.0"
    assert pins["iree-base-runtime"] == "3.13.0"
    assert pins["iree-turbine"] == "3.9.0"
    installed = re.search(r"-e '\.\[([a-z,]+)\]'", (root / "Makefile").read_text())
    assert installed is not None
    assert {"test", "tvm", "iree"} <= set(installed.group(1).split(","))


def test_iree_extra_installs_next_to_the_pinned_torch():
    """passlens[iree] as installed: the pinned compiler and turbine, torch left at 2.13.0."""
    from importlib.metadata import PackageNotFoundError, version

    import pytest

    try:
        got = {n: version(n) for n in ("iree-base-compiler", "iree-base-runtime", "iree-turbine")}
    except PackageNotFoundError:
        pytest.skip("passlens[iree] is not installed")
    _, _, pins = _project()
    assert got == {n: pins[n] for n in got}
    assert version("torch").split("+")[0] == "2.13.0"
