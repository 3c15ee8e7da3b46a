"""How fast the widgets draw: the ConvNeXt-base default pipeline (torch.export, random
weights), in one run:

- the first view of a step (collapsed to at most 300 boxes): what the stepper and the Panel
  app do when a step is shown — its header (the diff), the before graph and the after graph
  diff-coloured against it, with their node details — from cold render caches;
- revisiting a step (the same views again: the layout cache);
- the fully expanded graph of the imported module (every node a box), from a cold cache;
- the HTML report of the whole trace: its size and the time to write it;
- the Panel app's server side: building the app and stepping to a new step.

    .venv/bin/python bench/render_speed.py

Goals: first view < 1 s, revisit < 50 ms, fully expanded < 3 s, report < 10 MB.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ok(value: float, goal: float) -> str:
    return "ok" if value < goal else "OVER"


def main() -> int:
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    import torch

    import explorer
    from tests.frontend.torch_zoo import ConvNeXt
    from widgets import render, views
    from widgets.report import write_html

    torch.manual_seed(0)
    model = ConvNeXt(dims=(128, 256, 512, 1024), depths=(3, 3, 27, 3), num_classes=1000).eval()
    x = torch.randn(1, 3, 224, 224)
    start = time.perf_counter()
    trace = explorer.explore(model, (x,))
    print(f"trace: {len(trace)} steps, built in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    for s in trace:
        s.graph  # noqa: B018 (the explorer's graph models, built lazily)
    nodes = max(len(s.graph.nodes) for s in trace)
    print(
        f"graph models of every step: {time.perf_counter() - start:.2f} s (largest {nodes} nodes)"
    )
    rows = {r["step"]: r for r in trace.summary()}

    def cold() -> None:
        render.LAYOUTS.clear()
        render._VIEWS.table.clear()
        render._DIFFS.table.clear()

    def view(step) -> int:
        """What a front end draws when it shows ``step``; returns the boxes drawn."""
        prev = step.previous
        views.header_html(step, rows[step.index])
        boxes = 0
        for s, base in ((prev, None), (step, prev)) if prev is not None else ((step, None),):
            collapsed = render.default_collapsed(s, base)
            svg, details = views.graph_state(s, base, collapsed)
            boxes = len(details)
        return boxes

    # ----- first view and revisit of every step ----------------------------------------------
    first, again = [], []
    for step in trace:
        cold()
        t0 = time.perf_counter()
        boxes = view(step)
        t1 = time.perf_counter()
        view(step)
        t2 = time.perf_counter()
        first.append(t1 - t0)
        again.append(t2 - t1)
        print(
            f"  #{step.index} {step.name:<26} {len(step.graph.nodes):>4} nodes -> {boxes:>3} "
            f"boxes   first view {1000 * (t1 - t0):7.1f} ms   revisit {1000 * (t2 - t1):6.2f} ms"
        )
    # stepping through the trace once, caches warm from the previous step only
    cold()
    t0 = time.perf_counter()
    for step in trace:
        view(step)
    walk = time.perf_counter() - t0
    worst, worst_again = max(first), max(again)
    print(
        f"first view of a step (cold caches): max {1000 * worst:.0f} ms, "
        f"median {1000 * sorted(first)[len(first) // 2]:.0f} ms "
        f"(goal < 1 s: {_ok(worst, 1.0)})"
    )
    print(
        f"revisiting a step: max {1000 * worst_again:.2f} ms (goal < 50 ms: "
        f"{_ok(worst_again, 0.05)})"
    )
    print(f"stepping through all {len(trace)} steps once: {walk:.2f} s")

    # ----- the fully expanded graph ------------------------------------------------------------
    step = trace.imported
    cold()
    t0 = time.perf_counter()
    svg, details = views.graph_state(step, None, frozenset())
    expanded = time.perf_counter() - t0
    print(
        f"fully expanded #{step.index} {step.name}: {len(details)} boxes, SVG "
        f"{len(svg) / 1e6:.2f} MB, {expanded:.2f} s (goal < 3 s: {_ok(expanded, 3.0)})"
    )
    step = trace.final  # for comparison: after fuse-ops, every fused function's body shown
    cold()
    t0 = time.perf_counter()
    svg, details = views.graph_state(step, step.previous, frozenset())
    took = time.perf_counter() - t0
    print(
        f"  (and #{step.index} {step.name} against its previous step, fully expanded: "
        f"{len(details)} boxes, SVG {len(svg) / 1e6:.2f} MB, {took:.2f} s)"
    )

    # ----- the HTML report ---------------------------------------------------------------------
    cold()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        t0 = time.perf_counter()
        size = write_html(trace, path)
        took = time.perf_counter() - t0
    print(
        f"HTML report of the whole trace: {size / 1e6:.2f} MB in {took:.2f} s "
        f"(goal < 10 MB: {_ok(size, 10e6)})"
    )

    # ----- the Panel app (server side) ---------------------------------------------------------
    from widgets.app import PassApp

    cold()
    t0 = time.perf_counter()
    app = PassApp(trace)
    built = time.perf_counter() - t0
    target = trace["fold-constant"].index
    t0 = time.perf_counter()
    app.index = target
    stepped = time.perf_counter() - t0
    print(
        f"Panel app: built (on #{trace.steps[0].index}) in {1000 * built:.0f} ms, "
        f"stepping to #{target} fold-constant {1000 * stepped:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
