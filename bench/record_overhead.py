"""What recording costs: the default pipeline on a ConvNeXt-base-sized model with
``record=True`` against ``record=False``, in one process, several repetitions each.

Two forms of the model: ``linear`` (every pass leaves it unchanged, so this measures the walk
and the bookkeeping) and ``matmul`` (linear layers written as ``matmul(x, permute_dims(W))``,
as TVM Relax's torch frontend does; fold-constant replaces the 73 transposes by constants,
which are transposed views of the weights, not copies). Time: median and minimum wall time of
interleaved runs (the minimum is the least disturbed by other processes). Memory: tracemalloc
peak above the level before the run (the model's weights are allocated before tracing starts,
so this is what the pipeline itself allocates), and what the result still holds after it.

    .venv/bin/python bench/record_overhead.py [--reps N] [--forms linear,matmul]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import shlex
import statistics
import sys
import time
import tracemalloc

from compiler import models, passes

GOAL = 1.10


def _time_runs(module, reps: int) -> dict[bool, list[float]]:
    """Wall times of ``reps`` runs per mode, interleaved so drift hits both modes alike."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(reps):
        for record in (False, True):
            gc.collect()
            start = time.perf_counter()
            result = passes.run(module, "default", record=record)
            times[record].append(time.perf_counter() - start)
            assert result.ok
            del result
    return times


def _memory_runs(module, reps: int) -> dict[bool, tuple[int, int]]:
    """Per mode, the largest tracemalloc peak above the start level, and what the result
    holds after the run (bytes)."""
    out: dict[bool, tuple[int, int]] = {}
    tracemalloc.start()
    try:
        for record in (False, True):
            peaks, held = [], []
            for _ in range(reps):
                gc.collect()
                base = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                result = passes.run(module, "default", record=record)
                current, peak = tracemalloc.get_traced_memory()
                peaks.append(peak - base)
                held.append(current - base)
                del result
            out[record] = (max(peaks), max(held))
    finally:
        tracemalloc.stop()
    return out


def _mb(n: float) -> str:
    return f"{n / 2**20:9.2f} MiB"


def _ratio(a: float, b: float) -> str:
    r = a / b if b else float("inf")
    return f"{r:.3f}x ({'ok' if r <= GOAL else 'OVER'} vs goal {GOAL:.2f}x)"


def bench(form: str, reps: int) -> None:
    """Build the model in ``form``, then print time and memory of both modes and the ratios."""
    start = time.perf_counter()
    module = models.convnext(linear_form=form)
    weights = sum(c.nbytes for c in module.constants().values())
    print(
        f"\n== ConvNeXt-base, linear_form={form}: {len(module.main.bindings)} bindings, "
        f"{weights / 1e6:.1f} MB of weights (built in {time.perf_counter() - start:.1f} s)"
    )
    result = passes.run(module, "default", record=True)  # warm-up, and what the run records
    changed = [s.pass_name for s in result.snapshots if s.changed and s.depth > 0]
    print(f"   snapshots: {len(result.snapshots)}, passes that changed the module: {changed}")
    del result

    times = _time_runs(module, reps)
    med = {k: statistics.median(v) for k, v in times.items()}
    for record in (False, True):
        t = times[record]
        print(
            f"   time   record={record!s:5}  median {med[record] * 1e3:8.2f} ms  "
            f"min {min(t) * 1e3:8.2f} ms  max {max(t) * 1e3:8.2f} ms  ({len(t)} runs)"
        )
    print(f"   time ratio (median, record / no record): {_ratio(med[True], med[False])}")
    fastest = {k: min(v) for k, v in times.items()}
    print(f"   time ratio (min, record / no record):    {_ratio(fastest[True], fastest[False])}")

    mem = _memory_runs(module, max(2, reps // 4))
    for record in (False, True):
        peak, held = mem[record]
        print(f"   memory record={record!s:5}  peak {_mb(peak)}  held by the result {_mb(held)}")
    own = _ratio(mem[True][0], mem[False][0])
    print(f"   peak memory ratio (pipeline's own allocations): {own}")
    total = {k: weights + v[0] for k, v in mem.items()}
    print(f"   peak memory ratio (with the model's weights):   {_ratio(total[True], total[False])}")


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark for the forms asked for and print every figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20, help="runs per mode for the timing")
    parser.add_argument("--forms", default="linear,matmul", help="model forms, comma separated")
    args = parser.parse_args(argv)
    exe = os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd()) else "python"
    print("command:", shlex.join([exe, *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    for form in args.forms.split(","):
        bench(form.strip(), args.reps)


if __name__ == "__main__":
    main()
