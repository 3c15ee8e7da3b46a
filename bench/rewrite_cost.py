"""What recording rule applications costs: the default pipeline on ConvNeXt-base (both linear
forms of compiler/models.py) run inside ``compiler.passes.collect_rewrites()`` against the
same run without it; both record snapshots (``record=True``, as the explorer does). Runs are
interleaved so drift hits both modes alike; the median and the minimum wall time are given
(the minimum is the least disturbed by other processes), in wall time and in this process's
CPU time (less disturbed by a loaded machine), and how many rule applications each rule
recorded. Goal: at most 1.10x.

Run against a checkout without rule records (``PYTHONPATH=/other/checkout``) it times the
pipeline alone, to compare the cost of the rule tables themselves with the closures before.

    .venv/bin/python bench/rewrite_cost.py [--reps N] [--forms linear,matmul]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import os
import platform
import shlex
import statistics
import sys
import time

from compiler import models, passes

GOAL = 1.10
collect = getattr(passes, "collect_rewrites", None)


def _run(module, collecting: bool):
    with collect() if collecting else contextlib.nullcontext([]) as records:
        result = passes.run(module, "default", record=True)
    assert result.ok, result.failure and result.failure.traceback
    return result, records


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--forms", default="linear,matmul")
    args = ap.parse_args(argv)
    print("command:", shlex.join([os.path.relpath(sys.executable), *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.2f}"
    )
    modes = (False, True) if collect is not None else (False,)
    for form in args.forms.split(","):
        start = time.perf_counter()
        module = models.convnext(linear_form=form)
        built = time.perf_counter() - start
        print(
            f"\n== ConvNeXt-base, linear_form={form}: {len(module.main.bindings)} bindings "
            f"(built in {built:.1f} s)"
        )
        _, records = _run(module, collect is not None)  # warm up, and count the rules
        by_rule = collections.Counter(r.rule for r in records)
        print(f"   rule applications recorded: {len(records)}")
        for rule, n in by_rule.most_common():
            print(f"     {n:5d}  {rule}")
        times = {(m, c): [] for m in modes for c in ("wall", "cpu")}
        for _ in range(args.reps):
            for mode in modes:
                gc.collect()
                t0, c0 = time.perf_counter(), time.process_time()
                result, records = _run(module, mode)
                times[mode, "cpu"].append(time.process_time() - c0)
                times[mode, "wall"].append(time.perf_counter() - t0)
                del result, records
        for clock in ("wall", "cpu"):
            for mode in modes:
                ts = times[mode, clock]
                label = "collect_rewrites" if mode else "no collecting   "
                print(
                    f"   {clock:4s} {label}  median {statistics.median(ts) * 1e3:8.2f} ms  "
                    f"min {min(ts) * 1e3:8.2f} ms  ({len(ts)} runs)"
                )
            if collect is not None:
                yes, no = times[True, clock], times[False, clock]
                med = statistics.median(yes) / statistics.median(no)
                verdict = "ok" if med <= GOAL else "OVER"
                print(
                    f"   {clock} ratio, collecting / not: median {med:.3f}x ({verdict} vs "
                    f"{GOAL}x), min {min(yes) / min(no):.3f}x"
                )


if __name__ == "__main__":
    main()
