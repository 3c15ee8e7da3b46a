"""The backend's speed: ConvNeXt-base, batch 1, 224x224, one forward pass, compiled by
``compiler.build`` against the numpy interpreter, torch eager and onnxruntime (same weights, so
the outputs are compared too), plus the build time and a fused elementwise chain against
numpy.

Forwards are interleaved (compiled, torch, onnxruntime, ... per repetition) so drift from other
processes hits them alike, with a pause before each (see PAUSE); median and minimum are
printed (the minimum is the least disturbed).
Goals (issue 7): compiled at most 2x torch eager; the fused chain faster than numpy; build
under 30 s.

    .venv/bin/python bench/backend_speed.py [--reps N] [--interpreter-reps N] [--no-onnx]
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

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# Seconds between two timed forwards: torch's OpenMP, onnxruntime's and OpenBLAS's worker
# threads spin for a while after their work, which slows down whatever runs next.
PAUSE = 0.3


def _stats(times: list[float]) -> str:
    return (
        f"median {statistics.median(times) * 1000:8.1f} ms  min {min(times) * 1000:8.1f} ms  "
        f"({len(times)} runs)"
    )


def _fused_chain(reps: int) -> None:
    """gelu(x * scale + shift) on a (1, 56, 56, 512) f32 tensor: one compiled loop nest
    against numpy evaluating the same float32 expression op by op."""
    from scipy import special

    from compiler import backend, passes
    from compiler.ir import parse

    text = """
def @main(%x: f32[1, 56, 56, 512], %s: f32[512], %b: f32[512]) -> f32[1, 56, 56, 512] {
  %m: f32[1, 56, 56, 512] = multiply(%x, %s)
  %a: f32[1, 56, 56, 512] = add(%m, %b)
  %g: f32[1, 56, 56, 512] = gelu(%a)
  return %g
}
"""
    module = passes.run(parse(text), "fuse-ops", raise_on_failure=True).module
    exe = backend.build(module)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 56, 56, 512)).astype(np.float32)
    s, b = (rng.standard_normal(512).astype(np.float32) for _ in range(2))
    half, root = np.float32(0.5), np.float32(1 / np.sqrt(2))

    def numpy_chain():
        a = x * s + b
        return half * a * (1 + special.erf(a * root))

    ours, theirs = [], []
    for _ in range(reps):
        start = time.perf_counter()
        got = exe(x, s, b)[0]
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        want = numpy_chain()
        theirs.append(time.perf_counter() - start)
    err = float(np.abs(got - want).max())
    ratio = statistics.median(theirs) / statistics.median(ours)
    print("\n== fused elementwise chain gelu(x * s + b), f32[1, 56, 56, 512]")
    print(f"   compiled (one loop nest)  {_stats(ours)}")
    print(f"   numpy (f32, op by op)     {_stats(theirs)}")
    verdict = "ok" if ratio > 1 else "NOT MET"
    print(f"   compiled is {ratio:.1f}x faster than numpy ({verdict}); max |diff| {err:.2e}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10, help="forwards of each fast runner")
    parser.add_argument("--interpreter-reps", type=int, default=2)
    parser.add_argument("--no-onnx", action="store_true", help="skip onnxruntime")
    args = parser.parse_args()
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load:.2f}, {time.strftime('%Y-%m-%d %H:%M')}"
    )

    import torch

    from compiler import backend, models
    from compiler.backend.codegen import host_target
    from compiler.backend.runtime import thread_count
    from compiler.interpret import run
    from tests.compiler.test_models import ConvNeXt, _load

    module = models.convnext()
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    print(
        f"model: ConvNeXt-base (compiler.models.convnext), 88.6M params, {len(module.main.bindings)} "
        f"bindings; target {host_target().describe()}; threads: passlens {thread_count()}, "
        f"torch {torch.get_num_threads()}"
    )

    start = time.perf_counter()
    exe = backend.build(module)
    build_s = time.perf_counter() - start
    print(f"\n== build: {build_s:.2f} s (cold: every kernel compiled in this process)")
    for snap in exe.result.snapshots:
        if snap.depth == 0:
            print(f"   {snap.spec:16s} {snap.seconds:6.2f} s")
    kernels = backend.kernel_calls(exe.module)
    n_calls = sum(1 for b in exe.module.main.bindings if getattr(b, "op", "") == "call_lowered")
    print(f"   {len(kernels)} kernels for {n_calls} call_lowered; library: {exe.libraries}")
    start = time.perf_counter()
    backend.build(module)
    print(f"   warm rebuild (kernels cached): {time.perf_counter() - start:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        size = exe.export(os.path.join(tmp, "convnext.plz"))
    print(f"   export: {size / 1e6:.1f} MB ({exe.param_bytes / 1e6:.1f} MB of weights)")

    torch_model = _load(ConvNeXt((128, 256, 512, 1024), (3, 3, 27, 3)), module)
    xt = torch.from_numpy(x)
    runners = {"compiled": lambda: exe(x)[0]}

    def torch_forward():
        with torch.no_grad():
            return torch_model(xt).numpy()

    runners["torch eager"] = torch_forward
    if not args.no_onnx:
        try:
            import onnxruntime as ort

            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "convnext.onnx")
                torch.onnx.export(torch_model, (xt,), path, opset_version=17, dynamo=False)
                session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            input_name = session.get_inputs()[0].name
            runners["onnxruntime"] = lambda: session.run(None, {input_name: x})[0]
        except Exception as e:  # noqa: BLE001 - the benchmark goes on without it
            print(f"onnxruntime: skipped ({type(e).__name__}: {e})")

    outputs = {name: fn() for name, fn in runners.items()}  # warm-up, and outputs to compare
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.reps):
        for name, fn in runners.items():
            time.sleep(PAUSE)
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    interp = []
    for _ in range(args.interpreter_reps):
        start = time.perf_counter()
        outputs["interpreter"] = run(module, x)[0]
        interp.append(time.perf_counter() - start)
    times["interpreter (numpy)"] = interp

    print("\n== ConvNeXt-base forward, batch 1, 224x224")
    for name, t in times.items():
        print(f"   {name:20s} {_stats(t)}")
    base = statistics.median(times["torch eager"])
    ours = statistics.median(times["compiled"])
    verdict = "ok" if ours <= 2 * base else "NOT MET"
    print(f"   compiled / torch eager (median): {ours / base:.2f}x (goal <= 2x: {verdict})")
    print(f"   compiled / torch eager (min):    {min(times['compiled']) / min(times['torch eager']):.2f}x")
    ref = outputs["torch eager"]
    for name, out in outputs.items():
        if name != "torch eager":
            print(f"   max |{name} - torch eager| = {float(np.abs(out - ref).max()):.2e}")
    print(f"   build under 30 s: {'ok' if build_s < 30 else 'NOT MET'} ({build_s:.2f} s)")

    _fused_chain(max(args.reps, 5))
    return 0


if __name__ == "__main__":
    sys.exit(main())
