"""What ``trace.check`` costs: checking every step of the ConvNeXt-base default pipeline
against torch eager, beside one interpreter forward pass and a naive re-run of every step
(no value reuse), in one run.

    .venv/bin/python bench/check_speed.py

Goal: the check costs at most 2x one interpreter forward pass of the imported module. Then
the cost of the error map's numbers (each layer's error at every step, taken while the check
runs): the same check with and without them.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> int:
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    import torch

    import explorer
    from compiler.interpret import run
    from tests.compiler.frontend.torch_zoo import ConvNeXt

    torch.manual_seed(0)
    model = ConvNeXt(dims=(128, 256, 512, 1024), depths=(3, 3, 27, 3), num_classes=1000).eval()
    x = torch.randn(1, 3, 224, 224)
    trace = explorer.explore(model, (x,))
    xs = x.numpy()
    print(
        f"trace: {len(trace)} steps, {sum(s.changed for s in trace if s.kind == 'pass')} passes "
        "changed the module"
    )

    start = time.perf_counter()
    run(trace.imported.module, xs)
    forward = time.perf_counter() - start
    print(f"one interpreter forward pass (imported module): {forward:.2f} s")

    start = time.perf_counter()
    for step in trace:
        if step.module is not None:
            run(step.module, xs)
    naive = time.perf_counter() - start
    runs = sum(1 for s in trace if s.module is not None)
    print(f"naive: every step's module run from scratch ({runs} runs): {naive:.2f} s")

    start = time.perf_counter()
    report = trace.check((x,), progress=False)
    checked = time.perf_counter() - start
    print(f"trace.check against torch eager: {checked:.2f} s ({report.headline()})")
    print(f"  {report.reuse_text}")
    ratio = checked / forward
    print(
        f"check / one forward = {ratio:.2f}x (goal <= 2x: {'ok' if ratio <= 2 else 'OVER'}); "
        f"naive / one forward = {naive / forward:.2f}x"
    )

    # what the error map's numbers cost: the same check without them, alternated, best of 3
    from unittest import mock

    from explorer.check.layer_errors import LayerErrors

    def timed() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        trace.check((x,), progress=False)
        return time.perf_counter() - wall, time.process_time() - cpu

    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(3):
        runs[True].append(timed())
        with mock.patch.object(LayerErrors, "of_step", lambda *_: {}):
            runs[False].append(timed())
    (w1, c1), (w0, c0) = (tuple(map(min, zip(*runs[k], strict=True))) for k in (True, False))
    layers = len(report.error_map().layers)
    print(
        f"error map ({layers} layers x {len(trace)} steps): check {w1:.2f} s wall / {c1:.2f} s "
        f"CPU with its numbers, {w0:.2f} s / {c0:.2f} s without (best of 3): "
        f"{w1 / w0:.2f}x wall, {c1 / c0:.2f}x CPU"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
