"""What a re-run saves (issue 42): a user's pass at the end of the default pipeline on a
ConvNeXt-sized model (gelu -> relu: the bug, found by the check), then fixed. Against
exploring and checking again from the import, ``trace.rerun(replace=...)`` records only the
fixed pass and its check runs only that step (the shared steps' results are the old check's).

Prints, for each way, the wall time (median of interleaved runs, and the minimum), the passes
the pass manager applied and the modules the interpreter ran, counted.

    .venv/bin/python bench/rerun.py [--reps N] [--depths 2,2,6,2] [--dims 64,128,256,512]
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

import explorer
from compiler import models
from compiler.ir import Constant, call
from compiler.passes import Pass, Rule, Rules
from compiler.passes.infra.manager import PassContext
from compiler.passes.infra.rewrite import rewrite_module
from compiler.passes.infra.rules import op
from explorer.passlens.check import Interpreter


def _relu(node, ctx):
    return call("relu", node.args[0])


def _erf_form(node, ctx):
    x = node.args[0]
    erf = call("erf", call("multiply", x, Constant.scalar(0.5**0.5)))
    half = call("multiply", x, Constant.scalar(0.5))
    return call("multiply", half, call("add", erf, Constant.scalar(1.0)))


@dataclass(frozen=True)
class FastGelu(Pass):
    """gelu as relu (wrong), or ``exact``: as its erf form."""

    name: ClassVar[str] = "fast-gelu"
    exact: bool = False

    def transform(self, module, ctx):
        rules = Rules(self.name, [Rule("gelu", op("gelu"), _erf_form if self.exact else _relu)])
        return rewrite_module(module, lambda name, fn: rules, self.name)


class Counts:
    """Passes applied and modules interpreted while it is on."""

    def __init__(self) -> None:
        self.passes = self.runs = 0
        apply, run = PassContext.apply, Interpreter.run
        counts = self

        def counting_apply(self, p, module):
            counts.passes += 1
            return apply(self, p, module)

        def counting_run(self, module):
            counts.runs += 1
            return run(self, module)

        PassContext.apply, Interpreter.run = counting_apply, counting_run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dims", default="64,128,256,512")
    ap.add_argument("--depths", default="2,2,6,2")
    ap.add_argument("--image", type=int, default=112)
    args = ap.parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    depths = [int(d) for d in args.depths.split(",")]
    module = models.convnext(dims=dims, depths=depths, image=args.image)
    x = np.random.default_rng(0).standard_normal((1, 3, args.image, args.image), np.float32)
    counts = Counts()

    old = explorer.explore(module, (x,), pipeline=["default", FastGelu()], progress=False)
    report = old.check(progress=False)
    assert report.first_failure.step is old["fast-gelu"], report.headline()

    times: dict[str, list[float]] = {"explore + check": [], "rerun + check": []}
    done: dict[str, tuple[int, int]] = {}
    for _ in range(args.reps):
        for way in times:
            counts.passes = counts.runs = 0
            start = time.perf_counter()
            if way == "explore + check":
                trace = explorer.explore(
                    module, (x,), pipeline=["default", FastGelu(exact=True)], progress=False
                )
            else:
                trace = old.rerun(replace={"fast-gelu": FastGelu(exact=True)}, progress=False)
            fixed = trace.check(progress=False)
            times[way].append(time.perf_counter() - start)
            assert fixed.ok, fixed.headline()
            done[way] = (counts.passes, counts.runs)

    print(f"$ {shlex.join([sys.executable.rsplit('/', 1)[-1], *sys.argv])}")
    print(f"python {platform.python_version()}, {platform.machine()}; ConvNeXt dims={dims},")
    print(f"depths={depths}, image {args.image}, {len(old)} steps; {args.reps} runs each")
    for way, ts in times.items():
        passes_run, runs = done[way]
        print(
            f"  {way:16s} median {statistics.median(ts):7.3f} s  min {min(ts):7.3f} s  "
            f"passes applied {passes_run:3d}  modules interpreted {runs:3d}"
        )
    ratio = statistics.median(times["explore + check"]) / statistics.median(times["rerun + check"])
    print(f"  the re-run is {ratio:.1f}x faster (medians, this run)")


if __name__ == "__main__":
    main()
