"""What ``report.reduce()`` costs and how far it gets: each replica of a real bug
(docs/bugs.md) on a whole model, reduced to a small module and pipeline that still show the same finding.

    .venv/bin/python bench/reduce.py [--budget SECONDS]

The models: ConvNeXt-base (``compiler.models.convnext()``: random weights built in code,
224x224, 354 MB of weights) through a pipeline with the linear-broadcast replica; the ONNX
If/Squeeze model of docs/bugs.md bug 3 (exported by the TorchScript exporter) with the
dynamic-to-static squeeze replica; the nested-tuple module of docs/bugs.md bug 5 with the
lazy-transform-params replica. Each is explored and checked (not timed as part of the
reduction), then reduced.

Goal (issue #16): each reduces to at most a handful of bindings and one or two passes, in
under 60 s on ConvNeXt-base.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CLEANUP = "infer-types,canonicalize-bindings"


def _convnext_base():
    from compiler.models import convnext

    spec = f"{CLEANUP},dynamic-to-static,replica-linear-broadcast,fold-constant,dce,fuse-ops"
    return "ConvNeXt-base (IR, 224x224)", convnext(), spec


def _pad_squeeze_onnx():
    from tests.test_seeds import pad_squeeze_onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data, _ = pad_squeeze_onnx()
    spec = f"{CLEANUP},replica-dynamic-to-static-squeeze,decompose-ops,fold-constant,dce,fuse-ops"
    return "ONNX If/Squeeze (bug 3)", data, spec


def _nested_tuple():
    from tests.compiler.passes.test_lazy_params import NESTED

    spec = f"{CLEANUP},fold-constant,replica-lazy-transform-params,dce"
    return "nested-tuple transform (bug 5)", NESTED, spec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per reduction")
    args = parser.parse_args()
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    import explorer

    rows = []
    for make in (_convnext_base, _pad_squeeze_onnx, _nested_tuple):
        label, source, spec = make()
        start = time.perf_counter()
        trace = explorer.explore(source, pipeline=spec)
        explored = time.perf_counter() - start
        start = time.perf_counter()
        report = trace.check(progress=False)
        checked = time.perf_counter() - start
        first = report.first_failure
        print(f"\n== {label}: {first.kind} at #{first.step.index} {first.step.name}")
        print(f"   pipeline: {spec}")
        print(f"   explore {explored:.1f} s, check {checked:.1f} s (not part of the reduction)")
        small = report.reduce(budget=args.budget, progress=False)
        (b0, b1), (p0, p1) = small.bindings, small.passes
        print(
            f"   reduced in {small.seconds:.2f} s: bindings {b0} -> {b1}, passes {p0} -> {p1}, "
            f"{small.tried} candidates checked{', CUT SHORT' if small.cut_short else ''}"
        )
        print(f"   reduced pipeline: {small.pipeline}")
        weights = f"{len(small.generated)} generated, {len(small.saved_weights)} kept"
        print(f"   weights: {weights}; test file {len(small.test_source)} characters")
        for line in small.ir.splitlines():
            print("   | " + line)
        rows.append((label, small))
    print("\nsummary (goal: a handful of bindings, 1-2 passes, under 60 s on ConvNeXt-base):")
    ok = True
    for label, small in rows:
        good = small.bindings[1] <= 5 and small.passes[1] <= 2 and small.seconds < 60
        ok = ok and good
        print(
            f"  {label:<34} {small.bindings[0]:>4} -> {small.bindings[1]} bindings, "
            f"{small.passes[0]} -> {small.passes[1]} passes, {small.seconds:6.2f} s, "
            f"{small.tried:>3} candidates: {'ok' if good else 'OVER'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
