"""What ``trace.check`` costs: checking every step of the ConvNeXt-base default pipeline
against torch eager, as a ratio to one warm torch eager forward in the same run; beside one
interpreter forward pass of the imported module with each kernel set (torch's, numpy's) and a
naive re-run of every step (no value reuse).

    .venv/bin/python bench/check_speed.py [--repeat 3] [--no-error-map] [--threads N]
        [--decoder LAYERS,HIDDEN]

``--decoder 32,256``: bench/real_size.py's Llama-shaped decoder (vocab 128256, 16 tokens) of
that many layers and that width instead, timed the same way (real_size.py times one check of
a fresh process; this, ``--repeat`` warm ones).

Goal (issue 44): the check costs at most 2x one warm eager forward. The check is timed
``--repeat`` times (each a whole check: the reference, every step, the findings), eager the
best of 5 warm forwards taken just before. Then the cost of the error map's numbers (each
layer's error at every step, taken while the check runs): the same check with and without them.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def eager_forward(model, x, times: int = 5, cpu: list | None = None) -> float:
    """The best of ``times`` warm torch eager forwards (after one to warm up); ``cpu``, when
    given, gets the best CPU time (all threads) of them."""
    import torch

    with torch.no_grad():
        model(x)
        best = best_cpu = float("inf")
        for _ in range(times):
            start, start_cpu = time.perf_counter(), time.process_time()
            model(x)
            best = min(best, time.perf_counter() - start)
            best_cpu = min(best_cpu, time.process_time() - start_cpu)
    if cpu is not None:
        cpu.append(best_cpu)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="checks to time (default 3)")
    ap.add_argument("--no-error-map", action="store_true", help="skip the error map's cost")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive re-run")
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads for eager and the check alike (default: torch's own); on a busy "
        "machine two threads wait for each other, and one thread says more about the code",
    )
    ap.add_argument(
        "--decoder",
        default="",
        metavar="LAYERS,HIDDEN",
        help="bench/real_size.py's decoder of that size instead of ConvNeXt-base",
    )
    args = ap.parse_args()
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load average {_load()}"
    )
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    import explorer
    from compiler.interpret import evaluate, run
    from tests.compiler.frontend.torch_zoo import ConvNeXt

    torch.manual_seed(0)
    if args.decoder:
        from bench.real_size import build_model

        layers, hidden = (int(n) for n in args.decoder.split(","))
        model, x, _, _ = build_model(layers, 128256, hidden=hidden)
    else:
        model = ConvNeXt(dims=(128, 256, 512, 1024), depths=(3, 3, 27, 3), num_classes=1000)
        model = model.eval()
        x = torch.randn(1, 3, 224, 224)
    trace = explorer.explore(model, (x,))
    xs = x.numpy()

    def inputs(module) -> list:  # the input, then the weights @main takes (the decoder's)
        from compiler.passes import weight_params

        stored = {c.name: c.data for c in module.attrs.get("param_values", ())}
        return [xs, *(stored[p.name] for p in weight_params(module))]

    print(
        f"trace: {len(trace)} steps, {sum(s.changed for s in trace if s.kind == 'pass')} passes "
        f"changed the module; torch {torch.__version__}, {torch.get_num_threads()} threads"
    )

    forwards = {}
    for kernels in ("torch", "numpy", "torch"):
        start = time.perf_counter()
        ev = evaluate(trace.imported.module, inputs(trace.imported.module), kernels=kernels)
        forwards[kernels] = time.perf_counter() - start
        counts = {k: sum(v.values()) for k, v in ev.by_kernel.items()}
    print(
        f"one interpreter forward pass (imported module): {forwards['torch']:.2f} s with torch's "
        f"kernels ({counts.get('torch', 0)} ops on torch, {counts.get('numpy', 0)} on numpy), "
        f"{forwards['numpy']:.2f} s with numpy's"
    )
    if not args.no_naive:
        start = time.perf_counter()
        for step in trace:
            if step.module is not None:
                run(step.module, *inputs(step.module))
        naive = time.perf_counter() - start
        runs = sum(1 for s in trace if s.module is not None)
        print(f"naive: every step's module run from scratch ({runs} runs): {naive:.2f} s")

    ratios, cpu_ratios = [], []
    for i in range(args.repeat):
        cpu: list[float] = []
        eager = eager_forward(model, x, cpu=cpu)
        start, start_cpu = time.perf_counter(), time.process_time()
        report = trace.check((x,), progress=False)
        checked, checked_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        ratios.append(checked / eager)
        cpu_ratios.append(checked_cpu / cpu[0])
        print(
            f"run {i + 1}: eager forward {eager:.3f} s (warm, best of 5), trace.check "
            f"{checked:.2f} s = {checked / eager:.2f}x eager (load {_load()}); CPU time "
            f"{checked_cpu:.2f} s / {cpu[0]:.3f} s = {cpu_ratios[-1]:.2f}x; "
            f"{report.headline()}, rules {sorted({c.rule for c in report.steps})}"
        )
    print(f"  {report.reuse_text}")
    for c in report.steps:
        if c.seconds >= 0.005:
            print(f"  #{c.step.index} {c.step.name}: {c.status} ({c.rule}), {c.seconds:.3f} s")
    f64 = report_float64(report)
    if f64:
        print(f"  {f64}")
    print(
        f"check / one warm eager forward: {', '.join(f'{r:.2f}x' for r in ratios)} "
        f"(goal <= 2x: {'ok' if min(ratios) <= 2 else 'OVER'} at best, "
        f"{'ok' if max(ratios) <= 2 else 'OVER'} at worst); in CPU time (all threads; "
        f"steadier on a busy machine): {', '.join(f'{r:.2f}x' for r in cpu_ratios)}"
    )
    if args.no_error_map:
        return 0

    # what the error map's numbers cost: the same check without them, alternated, best of 3
    from unittest import mock

    from explorer.check.layer_errors import LayerErrors

    def timed() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        trace.check((x,), progress=False)
        return time.perf_counter() - wall, time.process_time() - cpu

    timings: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(3):
        timings[True].append(timed())
        with mock.patch.object(LayerErrors, "of_step", lambda *_: {}):
            timings[False].append(timed())
    (w1, c1), (w0, c0) = (tuple(map(min, zip(*timings[k], strict=True))) for k in (True, False))
    layers = len(report.error_map().layers)
    print(
        f"error map ({layers} layers x {len(trace)} steps): check {w1:.2f} s wall / {c1:.2f} s "
        f"CPU with its numbers, {w0:.2f} s / {c0:.2f} s without (best of 3): "
        f"{w1 / w0:.2f}x wall, {c1 / c0:.2f}x CPU"
    )
    return 0


def report_float64(report) -> str:
    """The note saying the float64 run was made, if it was."""
    return next((n for n in report.notes if "float64" in n), "")


if __name__ == "__main__":
    sys.exit(main())
