"""ConvNeXt-base import time: from an ExportedProgram (torch.export already done) and from the
ONNX file of the same model, beside TVM's ``from_exported_program`` when ``tvm`` is importable.

    .venv/bin/python bench/import_speed.py [--reps N]

Random weights (no downloads): the ConvNeXt-base-sized torch model from the torch zoo of the
tests, at full size (dims 128/256/512/1024, depths 3/3/27/3, 224x224 input).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _median_time(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")

    import torch

    from compiler.frontend import from_onnx, from_torch
    from tests.compiler.frontend.torch_zoo import ConvNeXt

    torch.manual_seed(0)
    model = ConvNeXt(dims=(128, 256, 512, 1024), depths=(3, 3, 27, 3), num_classes=1000).eval()
    x = torch.randn(1, 3, 224, 224)
    params = sum(p.numel() for p in model.parameters())
    start = time.perf_counter()
    ep = torch.export.export(model, (x,))
    export_s = time.perf_counter() - start
    fx_nodes = sum(1 for n in ep.graph.nodes if n.op == "call_function")
    print(f"model: ConvNeXt-base-sized, {params / 1e6:.1f}M params, torch.export {export_s:.2f} s, "
          f"{fx_nodes} FX call nodes")

    t_ep, module = _median_time(lambda: from_torch(ep, (x,)), args.reps)
    bindings = len(module.main.bindings)
    print(f"from_torch(ExportedProgram): median {t_ep:.3f} s over {args.reps}, {bindings} bindings")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "convnext.onnx")
        torch.onnx.export(model, (x,), path, opset_version=17, dynamo=False)
        size = os.path.getsize(path)
        t_onnx, mod_onnx = _median_time(lambda: from_onnx(path), args.reps)
        print(f"from_onnx(file, {size / 1e6:.0f} MB): median {t_onnx:.3f} s over {args.reps}, "
              f"{len(mod_onnx.main.bindings)} bindings")

    try:
        import tvm  # noqa: F401
        from tvm.relax.frontend.torch import from_exported_program
    except ImportError:
        print("TVM: not importable here, no comparison in this run")
    else:
        t_tvm, _ = _median_time(lambda: from_exported_program(ep), args.reps)
        print(f"TVM from_exported_program: median {t_tvm:.3f} s; passlens / TVM = {t_ep / t_tvm:.2f}x")
    goal = "ok" if t_ep < 1.0 else "OVER"
    print(f"goal: from_torch under 1.0 s -> {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
