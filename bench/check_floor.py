"""The floor of an op-by-op check: what one warm torch eager forward costs beside the two runs
any check that localizes a divergence to a node must make, torch's reference op by op (its
exported graph by `torch.fx.Interpreter`, and as the graph module's generated code) and one
interpreter forward of the imported module (torch's kernels), each the best of several warm
runs, as ratios to eager in the same run.

    .venv/bin/python bench/check_floor.py [--decoder LAYERS,HIDDEN] [--threads N]

Without ``--decoder``: ConvNeXt-base (bench/check_speed.py's). Where the reference op by op plus
the import's run already pass 2x eager, a check of every step at 2x eager cannot be had by
sharing work between the two: their Python per op, not their kernels, is the cost (a model of
many small ops, whose eager forward is mostly dispatch).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def best(fn, times: int) -> float:
    fn()
    out = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - start)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decoder", default="", help="bench/real_size.py's decoder, LAYERS,HIDDEN")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--times", type=int, default=7, help="warm runs, best of (default 7)")
    args = ap.parse_args()
    print(
        f"Command: .venv/bin/python bench/{os.path.basename(__file__)} {shlex.join(sys.argv[1:])}"
    )
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load}")

    import torch

    torch.set_num_threads(args.threads)
    import explorer
    from compiler import evaluate
    from compiler.passes import weight_params
    from explorer.check.references import _graph_args

    torch.manual_seed(0)
    if args.decoder:
        from bench.real_size import build_model

        layers, hidden = (int(n) for n in args.decoder.split(","))
        model, x, _, _ = build_model(layers, 128256, hidden=hidden)
        name = f"decoder {layers}x{hidden}"
    else:
        from tests.compiler.frontend.torch_zoo import ConvNeXt

        model = ConvNeXt(dims=(128, 256, 512, 1024), depths=(3, 3, 27, 3), num_classes=1000)
        model, x, name = model.eval(), torch.randn(1, 3, 224, 224), "ConvNeXt-base"
    trace = explorer.explore(model, (x,))
    ep = trace.source["exported"]
    graph_args = _graph_args(ep, [x])
    module = trace.imported.module
    stored = {c.name: c.data for c in module.attrs.get("param_values", ())}
    inputs = [x.numpy(), *(stored[p.name] for p in weight_params(module))]
    calls_n = sum(1 for n in ep.graph.nodes if n.op == "call_function")
    ops = sum(1 for _ in module["main"].iter_nodes())
    n = args.times
    with torch.no_grad():
        eager = best(lambda: model(x), n)
        unlifted = ep.module()
        generated = best(lambda: unlifted(x), n)
        fx = best(lambda: torch.fx.Interpreter(ep.graph_module).run(*graph_args), n)
    ours = best(lambda: evaluate(module, inputs), max(3, n // 2))
    # the check's first step: the import's run keeping its torch calls, then the reference
    # taking them (each timed alone, best of several)
    from compiler import SharedCalls, ValueCache, sharing_calls
    from explorer.check.references import _fx_run
    from explorer.passlens.shared import ImportCalls

    kept, taking = [], []
    for _ in range(max(3, n // 2)):
        cache, shared = ValueCache(), SharedCalls()
        start = time.perf_counter()
        with sharing_calls(shared):
            evaluate(module, inputs, cache=cache)
        kept.append(time.perf_counter() - start)
        calls = ImportCalls(shared, module["main"], cache.values)
        start = time.perf_counter()
        _fx_run(ep, [x], shared=calls)
        taking.append(time.perf_counter() - start)
        hits, made = shared.hits, shared.misses
        calls.done()
    kept_s, taking_s = min(kept), min(taking)
    print(f"{name}: {calls_n} ATen calls in the exported graph, {ops} IR bindings imported")
    rows = [
        (f"eager forward (warm, best of {n})", eager),
        ("exported graph, generated code", generated),
        ("exported graph, torch.fx.Interpreter", fx),
        ("interpreter, imported module (torch's)", ours),
        ("the same, keeping its torch calls", kept_s),
        (f"torch's reference taking them ({hits} found, {made} made)", taking_s),
    ]
    for label, seconds in rows:
        print(f"  {label:<58} {seconds * 1e3:7.1f} ms = {seconds / eager:.2f}x")
    print(
        f"  floor of the check's import step (no other step, no findings): "
        f"{(kept_s + taking_s) / eager:.2f}x eager"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
