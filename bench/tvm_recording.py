"""What recording a TVM pipeline costs: TVM's Relax ``zero`` pipeline on a ConvNeXt (torchvision's
layout; ``--size small`` by default, ``--size base`` for ConvNeXt-base) imported with
``from_exported_program``, three ways, interleaved, in one process:

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

    .venv/bin/python bench/tvm_recording.py [--reps N] [--size small|base]
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


def _model(dims: tuple, depths: tuple, image: int):
    """ConvNeXt in torchvision's layout (stem, stages of blocks, downsampling between them)."""
    import torch
    from torch import nn

    class LayerNorm2d(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.block = nn.Sequential(
                nn.Conv2d(c, c, 7, padding=3, groups=c),
                _Permute((0, 2, 3, 1)),
                nn.LayerNorm(c, eps=1e-6),
                nn.Linear(c, 4 * c),
                nn.GELU(),
                nn.Linear(4 * c, c),
                _Permute((0, 3, 1, 2)),
            )
            self.layer_scale = nn.Parameter(torch.full((c, 1, 1), 1e-6))

        def forward(self, x):
            return x + self.layer_scale * self.block(x)

    class _Permute(nn.Module):
        def __init__(self, order):
            super().__init__()
            self.order = order

        def forward(self, x):
            return x.permute(*self.order)

    layers: list = [
        nn.Sequential(nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0], eps=1e-6))
    ]
    for i, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
        layers.append(nn.Sequential(*[Block(dim) for _ in range(depth)]))
        if i + 1 < len(dims):
            layers.append(
                nn.Sequential(LayerNorm2d(dim, eps=1e-6), nn.Conv2d(dim, dims[i + 1], 2, stride=2))
            )

    class ConvNeXt(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(
                LayerNorm2d(dims[-1], eps=1e-6), nn.Flatten(1), nn.Linear(dims[-1], 1000)
            )

        def forward(self, x):
            return self.classifier(self.features(x).mean((2, 3), keepdim=True))

    torch.manual_seed(0)
    return ConvNeXt().eval(), (torch.randn(1, 3, image, image),)


SIZES = {
    "small": ((32, 64, 128, 256), (1, 1, 3, 1), 64),  # a few seconds per run
    "base": ((128, 256, 512, 1024), (3, 3, 27, 3), 224),  # ConvNeXt-base, 88.6M parameters
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")

    import tvm
    from tvm import relax

    from explorer.tvm.module import TVMState
    from explorer.tvm.record import run_pipeline
    from explorer.tvm.source import import_tvm_source

    model, inputs = _model(*SIZES[args.size])
    n_params = sum(p.numel() for p in model.parameters())
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
        f"model: ConvNeXt {args.size} ({n_params / 1e6:.1f}M parameters), {bindings} bindings "
        f"in main; zero pipeline: {steps} pass applications recorded"
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
