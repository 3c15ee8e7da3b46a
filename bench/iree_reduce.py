"""The IREE reducer and its upstream script (issue 46, item 4).

The model: the tests' MLP (8 -> 16 -> 4, seed 0, input 2 x 8), recorded with iree-compile to
global-optimization (the phase the demotion runs in) with a harmless flag
(``--iree-opt-strip-assertions``, iree-compile's default at O1) and the two flags that demote
the inputs of contractions to bf16; checked (bisection), then reduced
(``explorer.reduce.reduce``) and the upstream script written and run twice in a child
process (the venv's python, ``-I``): with the kept flags and with ``--without-flags``.
Printed: the finding, the flags before and after, the MLIR's characters before and after,
the candidates compiled and run and the seconds of each part, the script's exit codes and
its max error lines.

    PYTHONPATH=$PWD .venv/bin/python bench/iree_reduce.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from importlib.metadata import version

    import explorer
    from explorer.reduce import reduce
    from tests.explorer.iree.test_iree_reduce import BF16, HARMLESS, MLP

    print(f"torch {torch.__version__}, iree-base-compiler {version('iree-base-compiler')}")
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(2, 8)
    start = time.perf_counter()
    trace = explorer.explore(
        model,
        (x,),
        compiler="iree",
        pipeline="global-optimization",
        flags=[HARMLESS, *BF16],
        progress=False,
    )
    recorded = time.perf_counter() - start
    start = time.perf_counter()
    report = trace.check(progress=False)
    checked = time.perf_counter() - start
    first = report.first_failure
    print(f"recorded in {recorded:.1f} s ({len(trace.steps)} steps), checked in {checked:.1f} s")
    print(f"finding: {first.kind} at #{first.step.index} {first.step.name}")
    r = reduce(report, budget=600, progress=False)
    print(
        f"reduced in {r.seconds:.1f} s, {r.tried} candidates compiled and run; "
        f"flags {len(r.recorded_flags)} -> {len(r.flags)} (kept: {' '.join(r.flags)}); "
        f"MLIR {r.chars[0]:,} -> {r.chars[1]:,} characters, weights inlined: {r.inlined}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        script = r.upstream_repro(tmp)
        for args in ([], ["--without-flags"]):
            start = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-I", str(script), *args],
                capture_output=True,
                text=True,
                cwd=tmp,
                check=False,
            )
            seconds = time.perf_counter() - start
            said = [ln for ln in proc.stdout.splitlines() if "max abs error" in ln]
            print(
                f"repro.py {' '.join(args) or '(with the flags)'}: exit {proc.returncode} "
                f"in {seconds:.1f} s; {'; '.join(said)}"
            )


if __name__ == "__main__":
    main()
