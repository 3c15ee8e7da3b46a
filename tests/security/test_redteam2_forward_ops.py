"""Red-team round two: breaks of issue 39's promise that an allowlisted opaque op is a pure
computation of its inputs. Forward kernels on the allowlist take one tensor's size on trust
from another's: given a 1-element running mean for 64 channels, a 1-element ``g`` for 64
rows, a coefficient matrix larger than its input, a ``kernel_size`` of 9x9 for a 3x3 weight
(``slow_conv_transpose2d``: ones convolved with ones give 5e34 and NaNs), they read (values no computation of the
inputs gives: 1e30s, NaNs) or write past the tensors they were given, and the process dies of
SIGSEGV / SIGBUS / SIGABRT. The fake-tensor sizing does not see it: the meta kernels check
the result's size, not the inputs' consistency.

Each attack is a direct ``compiler.opaque.run.run`` call (what a trace, IR text or ONNX
import's opaque op does) in a child process; the promise holds when the op is refused or
raises the one clear OpaqueOpError. One is also run end to end: ``passlens explore x.ir
--check``."""

# ruff: noqa: E501  (IR snippets keep their long lines)

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (7 << 30, 7 << 30))
    import numpy as np
    from compiler.opaque import run as opaque_run
    from compiler.opaque import OpaqueOpError
    rng = np.random.default_rng(0)
    def r(*s):
        return rng.standard_normal(s).astype(np.float32)
    values, target, args = {case}
    attrs = {{"framework": "torch", "target": target, "args": args, "kwargs": (),
             "type": "f32[1]"}}
    try:
        out = opaque_run.run(values, attrs)
    except OpaqueOpError as e:
        print("REFUSED", str(e)[:200])
    else:
        outs = out if isinstance(out, tuple) else (out,)
        big = max(float(np.abs(np.nan_to_num(o, nan=1e38)).max()) for o in outs if o.size)
        print("RAN", "largest |value|", big)
    """
)

CASES = {
    # eval-mode batch norm reading 64 channels of running stats from 1-element tensors
    "native_batch_norm_short_running_stats": (
        '[r(2, 64, 3), r(1), r(1), r(1), np.abs(r(1))], "aten.native_batch_norm.default", '
        '("%0", "%1", "%2", "%3", "%4", False, 0.1, 1e-5)'
    ),
    "native_batch_norm_legit_no_training_short_running_stats": (
        '[r(2, 64, 3), r(1), r(1), r(1), np.abs(r(1))], '
        '"aten._native_batch_norm_legit_no_training.default", '
        '("%0", "%1", "%2", "%3", "%4", 0.1, 1e-5)'
    ),
    "batch_norm_no_update_short_running_stats": (
        '[r(2, 64, 3), r(1), r(1), r(1), np.abs(r(1))], "aten._batch_norm_no_update.default", '
        '("%0", "%1", "%2", "%3", "%4", 0.1, 1e-5)'
    ),
    # training-mode batch norm updating 64 channels of 1-element running stats: a heap write
    "native_batch_norm_legit_functional_short_running_stats": (
        '[r(2, 64, 3), r(1), r(1), r(1), np.abs(r(1))], '
        '"aten._native_batch_norm_legit_functional.default", '
        '("%0", "%1", "%2", "%3", "%4", True, 0.1, 1e-5)'
    ),
    "batch_norm_with_update_functional_short_running_stats": (
        '[r(2, 64, 3), r(1), r(1), r(1), np.abs(r(1))], '
        '"aten._batch_norm_with_update_functional.default", '
        '("%0", "%1", "%2", "%3", "%4", 0.1, 1e-5)'
    ),
    "batch_norm_update_stats_short_running_stats": (
        '[r(2, 64, 3), r(1), np.abs(r(1))], "aten.batch_norm_update_stats.default", '
        '("%0", "%1", "%2", 0.1)'
    ),
    # weight norm of 64 rows given a 1-element g
    "weight_norm_short_g": (
        '[r(64, 3), r(1)], "aten._weight_norm.default", ("%0", "%1", 0)'
    ),
    # a transposed convolution told its 3x3 weight is 9x9 (ones in, ones weight: at most 9 out)
    "slow_conv_transpose2d_kernel_size_past_the_weight": (
        '[np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32)], '
        '"aten.slow_conv_transpose2d.default", '
        '("%0", "%1", (9, 9), None, (1, 1), (0, 0), (0, 0), (1, 1))'
    ),
    "slow_conv_transpose3d_kernel_size_past_the_weight": (
        '[np.ones((1, 1, 4, 4, 4), np.float32), np.ones((1, 1, 3, 3, 3), np.float32)], '
        '"aten.slow_conv_transpose3d.default", '
        '("%0", "%1", (9, 9, 9), None, (1, 1, 1), (0, 0, 0), (0, 0, 0), (1, 1, 1))'
    ),
    # coefficients [64, 64] over an input of 4 rows
    "compute_linear_combination_coefficients_past_the_input": (
        '[r(4, 3), r(64, 64)], "aten._compute_linear_combination.default", ("%0", "%1")'
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_op_with_inconsistent_inputs_is_refused_not_run_past_its_inputs(name):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(case=CASES[name])], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    assert proc.returncode == 0, proc.stderr[-300:]
    assert "REFUSED" in proc.stdout, proc.stdout


BATCH_NORM_TRAIN = """
def @main(%x: f32[2, 64, 3]) -> f32[2, 64, 3] {
  %a: (f32[2, 64, 3], f32[64], f32[64], f32[1], f32[1]) = opaque(%x, const(f32[1], [1.0]), const(f32[1], [0.0]), const(f32[1], [0.0]), const(f32[1], [1.0]), framework="torch", target="aten._native_batch_norm_legit_functional.default", args=["%0", "%1", "%2", "%3", "%4", true, 0.1, 1e-05], pure=true, type="(f32[2, 64, 3], f32[64], f32[64], f32[1], f32[1])")
  %b: f32[2, 64, 3] = %a[0]
  return %b
}
"""


def test_batch_norm_with_short_running_stats_does_not_kill_explore_check(tmp_path):
    path = tmp_path / "attack.ir"
    path.write_text(BATCH_NORM_TRAIN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "passlens", "explore", str(path), "--check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    assert "refused to run opaque op" in proc.stderr or "failed" in proc.stderr, proc.stderr[-300:]
