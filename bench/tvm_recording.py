"""What recording a TVM pipeline costs: TVM's Relax ``zero`` pipeline on a small ConvNeXt-like
model imported with ``from_exported_program``, three ways, interleaved, in one process:

* ``alone``: the pipeline in a plain ``PassContext``;
* ``recorded``: with passlens's recording PassInstrument (``explorer.tvm.record``): a
  snapshot per pass application, nested ones included, and a structural-equality check for
  every pass that returned a new module object;
* ``printed``: with an instrument printing the module (TVMScript) after every pass, what one
  does without passlens.

Recording keeps references only; converting snapshots to graphs happens when a view asks, so
it is not part of this cost. Time: median and minimum wall time of ``--reps`` runs per mode
(the minimum is the least disturbed by other processes). The goal (issue #19) is recorded /
alone <= 1.10.

    .venv/bin/python bench/tvm_recording.py [--reps N] [--blocks N] [--channels N]
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
import warnings

GOAL = 1.10


def _model(blocks: int, channels: int):
    import torch

    class Block(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.dwconv = torch.nn.Conv2d(c, c, 7, padding=3, groups=c)
            self.norm = torch.nn.LayerNorm(c)
            self.pwconv1 = torch.nn.Linear(c, 4 * c)
            self.pwconv2 = torch.nn.Linear(4 * c, c)
            self.gamma = torch.nn.Parameter(torch.full((c,), 1e-6))

        def forward(self, x):
            y = self.dwconv(x).permute(0, 2, 3, 1)
            y = self.pwconv2(torch.nn.functional.gelu(self.pwconv1(self.norm(y))))
            return x + (self.gamma * y).permute(0, 3, 1, 2)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, channels, 4, stride=4)
            self.blocks = torch.nn.Sequential(*[Block(channels) for _ in range(blocks)])
            self.head = torch.nn.Linear(channels, 10)

        def forward(self, x):
            return self.head(self.blocks(self.stem(x)).mean((2, 3)))

    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 3, 32, 32),)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--channels", type=int, default=32)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")

    import tvm
    from tvm import relax

    from explorer.tvm.module import TVMState
    from explorer.tvm.record import run_pipeline
    from explorer.tvm.source import import_tvm_source

    model, inputs = _model(args.blocks, args.channels)
    imported = import_tvm_source(model, inputs, TVMState())
    module = imported.module
    bindings = sum(len(b.bindings) for b in module["main"].body.blocks)

    @tvm.instrument.pass_instrument
    class PrintAfterEach:
        def __init__(self):
            self.chars = 0

        def run_after_pass(self, mod, info):
            self.chars += len(mod.script(show_meta=False))

    def alone():
        with tvm.transform.PassContext():
            return relax.get_pipeline("zero")(module), None

    def recorded():
        snaps, _, _ = run_pipeline(module, "zero", TVMState())
        assert all(s.error is None for s in snaps)
        return None, len(snaps)

    def printed():
        with tvm.transform.PassContext(instruments=[PrintAfterEach()]):
            return relax.get_pipeline("zero")(module), None

    modes = {"alone": alone, "recorded": recorded, "printed": printed}
    times: dict[str, list[float]] = {m: [] for m in modes}
    steps = 0
    alone()  # warm up: TVM's lazily loaded pieces (the kernel build FoldConstant runs)
    for _ in range(args.reps):
        for name, fn in modes.items():
            gc.collect()
            start = time.perf_counter()
            _, n = fn()
            times[name].append(time.perf_counter() - start)
            steps = n or steps

    base_med = statistics.median(times["alone"])
    base_min = min(times["alone"])
    print(f"# {shlex.join([os.path.basename(sys.executable), *sys.argv])}")
    print(
        f"# tvm {tvm.__version__}, python {platform.python_version()}, "
        f"{os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"model: {args.blocks} ConvNeXt-like blocks x {args.channels} channels, "
        f"{bindings} bindings in main; zero pipeline: {steps} pass applications recorded"
    )
    head = f"{'mode':10} {'median s':>9} {'min s':>8} {'x alone (median)':>17}"
    print(f"{head} {'x alone (min)':>14}")
    for name in modes:
        med, low = statistics.median(times[name]), min(times[name])
        print(f"{name:10} {med:9.3f} {low:8.3f} {med / base_med:17.2f} {low / base_min:14.2f}")
    ratio = min(times["recorded"]) / base_min
    verdict = "within" if ratio <= GOAL else "OVER"
    print(f"recording costs {ratio:.2f}x the pipeline alone (min): {verdict} the {GOAL}x goal")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
