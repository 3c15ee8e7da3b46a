"""Red-team breaks of issue 39's promise that an allowlisted opaque op is a pure computation:
backward kernels on the allowlist take indices and saved tensors on trust, so a crafted trace
or IR file writes or reads outside its values when checked. Each attack runs in a child
process (a heap write can kill the process). Fixed: every gradient kernel (``*_backward``) is
off the allowlist, so each is refused before it runs."""

# ruff: noqa: E501  (IR snippets keep their long lines)

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MAXPOOL_BWD = """
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 1, 2, 2] {
  %a: f32[1, 1, 2, 2] = opaque(const(f32[1, 1, 1, 1], [[[[1.0]]]]), %x, const(i64[1, 1, 1, 1], [[[[1099511627776]]]]), framework="torch", target="aten.max_pool2d_with_indices_backward.default", args=["%0", "%1", [2, 2], [2, 2], [0, 0], [1, 1], false, "%2"], pure=true, type="f32[1, 1, 2, 2]")
  return %a
}
"""

ADAPTIVE_BWD = """
def @main(%x: f32[1, 1, 2, 2]) -> f32[1, 1, 2, 2] {
  %a: f32[1, 1, 2, 2] = opaque(const(f32[1, 1, 1, 1], [[[[1.0]]]]), %x, const(i64[1, 1, 1, 1], [[[[1099511627776]]]]), framework="torch", target="aten.adaptive_max_pool2d_backward.default", args=["%0", "%1", "%2"], pure=true, type="f32[1, 1, 2, 2]")
  return %a
}
"""

WEIGHT_NORM_BWD = """
def @main(%x: f32[64, 4]) -> f32[64, 4] {
  %a: (f32[64, 4], f32[1, 1]) = opaque(%x, %x, const(f32[1, 1], [[1.0]]), const(f32[1, 1], [[1.0]]), framework="torch", target="aten._weight_norm_interface_backward.default", args=["%0", "%1", "%2", "%3", 0], pure=true, type="(f32[64, 4], f32[1, 1])")
  %b: f32[64, 4] = %a[0]
  return %b
}
"""


def _explore_check(tmp_path, text: str) -> subprocess.CompletedProcess:
    path = tmp_path / "attack.ir"
    path.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "passlens", "explore", str(path), "--check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )


def test_maxpool2d_backward_out_of_range_index_does_not_kill_explore_check(tmp_path):
    proc = _explore_check(tmp_path, MAXPOOL_BWD)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    assert "refused to run opaque op" in proc.stderr and "_backward" in proc.stderr


def test_adaptive_max_pool2d_backward_out_of_range_index_does_not_kill_explore_check(tmp_path):
    proc = _explore_check(tmp_path, ADAPTIVE_BWD)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    assert "refused to run opaque op" in proc.stderr and "_backward" in proc.stderr


def test_weight_norm_backward_with_short_saved_tensors_does_not_corrupt_the_heap(tmp_path):
    proc = _explore_check(tmp_path, WEIGHT_NORM_BWD)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {proc.stderr[-300:]}"
    assert "refused to run opaque op" in proc.stderr and "_backward" in proc.stderr


CDIST_READ = textwrap.dedent(
    """
    import numpy as np
    from compiler.opaque import run as opaque_run
    from compiler.opaque import OpaqueOpError
    attrs = {"framework": "torch", "target": "aten._cdist_backward.default",
             "args": ("%0", "%1", "%2", 2.0, "%3"), "kwargs": (), "type": "f32[64, 3]"}
    x = np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32)
    one = np.ones((1, 1), np.float32)
    try:
        out = opaque_run.run([one, x, x, one], attrs)
    except OpaqueOpError:
        print("REFUSED")
    else:
        print("RAN", int((~np.isfinite(out)).sum()), float(np.nanmax(np.abs(out))))
    """
)


def test_cdist_backward_with_a_short_cdist_is_refused_not_read_past():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", CDIST_READ], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-300:]
    assert "REFUSED" in proc.stdout, proc.stdout
