"""The IREE check's bisection against a run of every step (issue 46, item 3).

The model: the tests' MLP (8 -> 16 -> 4, seed 0, input 2 x 8), recorded with iree-compile to
executable-configurations (the last phase the check runs) with the option that demotes the
inputs of contractions to bf16 (``--iree-global-opt-demote-contraction-inputs-type=bf16``,
``--iree-global-opt-demote-contraction-inputs-operations=all``), then checked twice in the
same process: ``trace.check()`` (the import, the first and last runnable steps, then
bisection) and the same check with every runnable step compiled and run. Printed: each
check's answer (the first diverging step and the last agreeing one), its compiles and runs
against the runnable steps, and its seconds; then the same for the clean model (no flag).

    PYTHONPATH=$PWD .venv/bin/python bench/iree_check.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from importlib.metadata import version

    import explorer
    from explorer.check import Options
    from explorer.iree.check import check_iree
    from tests.explorer.iree.test_iree_check import BF16, MLP

    print(f"torch {torch.__version__}, iree-base-compiler {version('iree-base-compiler')}")
    for label, flags in (("bf16 demotion", BF16), ("clean", [])):
        torch.manual_seed(0)
        model = MLP().eval()
        x = torch.randn(2, 8)
        start = time.perf_counter()
        trace = explorer.explore(
            model,
            (x,),
            compiler="iree",
            pipeline="executable-configurations",
            flags=flags,
            progress=False,
        )
        recorded = time.perf_counter() - start
        changed = sum(s.status == "changed" and s.depth == 1 for s in trace.steps)
        print(
            f"{label}: recorded to executable-configurations in {recorded:.1f} s, "
            f"{len(trace.steps)} steps, {changed} changed"
        )
        for how, bisect in (("bisection", True), ("every step", False)):
            start = time.perf_counter()
            report = check_iree(trace, None, Options(progress=False), bisect=bisect)
            seconds = time.perf_counter() - start
            info = report.bisection
            first = report.first_failure
            answer = (
                "ok" if first is None else f"{first.kind} at #{first.step.index} {first.step.name}"
            )
            if info["last_agreeing"] is not None:
                last = trace.steps[info["last_agreeing"]]
                answer += f" (last agreeing #{last.index} {last.name})"
            print(
                f"  {how:>10}: {answer}; ran the import + {len(info['ran'])} of "
                f"{info['runnable']} runnable steps, {info['compiles']} compiles, {seconds:.1f} s"
            )


if __name__ == "__main__":
    main()
