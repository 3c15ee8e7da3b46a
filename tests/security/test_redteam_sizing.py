"""Red-team break of issue 39's promise that every value is sized before it exists:
``prims.copy_strided`` (allowlisted) allocates a storage as large as its strides say, while
the fake-tensor sizing counts only the result's elements (2 floats: 8 bytes), so an 8-byte
input makes an 8 GiB allocation, past the 4 GiB limit for one value, before any check.
Run in a child process under an address-space limit. Fixed: ops sized by their strides
(``*_strided*``) are off the allowlist, so it is refused before it runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
    import numpy as np
    from compiler.opaque import run as opaque_run
    from compiler.opaque import OpaqueOpError
    attrs = {"framework": "torch", "target": "prims.copy_strided.default",
             "args": ("%0", (1 << 31,)), "kwargs": (), "type": "f32[2]"}
    try:
        opaque_run.run([np.ones(2, np.float32)], attrs)
        print("RAN")
    except OpaqueOpError as e:
        print("ERROR", e)
    """
)


def test_copy_strided_with_huge_strides_is_refused_by_sizing_not_by_the_allocator():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-300:]
    assert "refused to run opaque op prims.copy_strided.default" in proc.stdout, proc.stdout
