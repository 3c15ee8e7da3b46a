"""How soon the graph is shown in JupyterLab after running a cell on the 32-layer decoder
(issue #35, part 3: within 2 s).

JupyterLab is served on localhost (tests/widgets/lab.py) and opened in headless Chromium
(playwright, Debian's chromium) at 1600x1000. A first cell (not timed here, its time printed)
builds two traces of ``bench/scale_models.decoder(32)`` (~10,000 nodes a step; the explorer's
graph models are left to be built when a view asks for them, as in a user's session). Then,
each in a cell of its own, timed from the run-cell command to the graph component drawn in that
cell's output (``data-draw-ms`` set on it) and to the next painted frame:

1. ``trace.stepper()`` (opens on step #2 fold-constant against #1);
2. ``GraphView(step, step.previous)`` on the other trace;
3. the same GraphView again (the payload already made: what a revisit costs).

Each cell prints the kernel's own time for it (building the widget and its payload, graph
models included); the rest is sending the payload to the browser, ``JSON.parse`` and the
component's layout and draw (``data-draw-ms``, printed too).

First, in this process and without a browser, the CPU time of what the kernel does for
``GraphView(step, step.previous)`` from nothing cached, part by part: the explorer's graph
models of the two steps, their diff, the step's payload, and the widget's message (the payload
as one binary buffer of JSON, ipywidgets' ``_remove_buffers`` walk of the state and the kernel
session's JSON), with the message's size; what the before side costs when it is first shown
(the baseline's payload, made and sent then); and the CPU time of ``trace.stepper()``. CPU
time, because on a shared machine the wall clock also counts the time other processes held
the CPU.

    .venv/bin/python bench/jupyter_speed.py

Goal: the graph shown < 2 s after running the cell (cases 1 and 2).
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
VIEWPORT = {"width": 1600, "height": 1000}

SETUP = """import time
t0 = time.perf_counter()
from bench import scale_models
from widgets import GraphView
trace_a = scale_models.decoder(32)
trace_b = scale_models.decoder(32)
print(f"setup: two traces of decoder(32) explored in {time.perf_counter() - t0:.1f} s")"""

CASES = [
    (
        "trace.stepper()",
        "t0 = time.perf_counter(); w = trace_a.stepper()\n"
        "print(f'kernel {1000 * (time.perf_counter() - t0):.0f} ms'); w",
    ),
    (
        "GraphView(step, step.previous)",
        "t0 = time.perf_counter(); step = trace_b['fold-constant']\n"
        "v = GraphView(step, step.previous)\n"
        "print(f'kernel {1000 * (time.perf_counter() - t0):.0f} ms'); v",
    ),
    (
        "GraphView again (payload cached)",
        "t0 = time.perf_counter(); v2 = GraphView(step, step.previous)\n"
        "print(f'kernel {1000 * (time.perf_counter() - t0):.0f} ms'); v2",
    ),
]

# run cell `i` and time it: until the graph component in its output is drawn (data-draw-ms set)
# and until the next frame after that
RUN_CELL_JS = """async (i) => {
  const app = window.jupyterapp;
  const nb = app.shell.currentWidget.content;
  const cell = nb.widgets[i].node;
  const drawnAt = () => cell.querySelector(".jp-OutputArea-output [data-draw-ms]");
  const t0 = performance.now();
  const drawn = new Promise((resolve) => {
    const obs = new MutationObserver(() => {
      if (drawnAt()) { obs.disconnect(); resolve(performance.now()); }
    });
    obs.observe(cell, { attributes: true, childList: true, subtree: true });
  });
  nb.activeCellIndex = i;
  app.commands.execute("notebook:run-cell");
  const t1 = await drawn;
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const t2 = performance.now();
  const el = drawnAt();
  return { drawn: t1 - t0, painted: t2 - t0, draw: +el.dataset.drawMs, boxes: +el.dataset.boxes,
           printed: cell.querySelector(".jp-OutputArea-output").innerText };
}"""


def kernel_parts() -> None:
    """The CPU seconds of each part of what the kernel does for a GraphView and for
    ``trace.stepper()`` (no browser), each on a trace of its own, nothing cached."""
    from ipywidgets.widgets.widget import _remove_buffers
    from jupyter_client.session import json_packer

    from bench import scale_models
    from widgets.boxes import step_diff
    from widgets.graph_data import graph_payload
    from widgets.graph_view import json_buffer

    trace = scale_models.decoder(32)
    step = trace["fold-constant"]

    def cpu(f):
        t = time.process_time()
        out = f()
        return out, time.process_time() - t

    def message(data: dict) -> tuple[bytes, list, float]:
        """What ipywidgets sends for ``data``: the state (``json_buffer``: one binary buffer)
        walked for buffers, and the kernel's JSON of the rest."""

        def send():
            state = {"data": json_buffer(data), "collapsed": data["after"]["collapsed"]}
            clean, paths, buffers = _remove_buffers(state)
            return json_packer({"state": clean, "buffer_paths": paths}), buffers

        (msg, buffers), seconds = cpu(send)
        return msg, buffers, seconds

    _, models = cpu(lambda: (step.previous.graph, step.graph))
    _, diff = cpu(lambda: step_diff(step.previous, step))
    after, payload = cpu(lambda: graph_payload(step, step.previous, stats=False))
    msg, buffers, sent = message({"after": after, "before": None, "baseline": True})
    size = len(msg) + sum(len(b) for b in buffers)
    before, toggle = cpu(lambda: graph_payload(step.previous, None, stats=False))
    _, _, toggle_sent = message({"after": before})
    print(
        f"kernel CPU for GraphView(step, step.previous) of decoder(32), nothing cached: graph "
        f"models {models:.2f} s + diff {diff:.2f} s + payload {payload:.2f} s + message "
        f"{sent:.2f} s = {models + diff + payload + sent:.2f} s; message {size / 1e6:.1f} MB "
        f"(the step's payload, one binary buffer); the baseline's payload, made and sent when "
        f"the before side is first shown: {toggle + toggle_sent:.2f} s"
    )
    trace = scale_models.decoder(32)
    _, stepper = cpu(trace.stepper)
    made = [s.index for s in trace.steps if s._graph is not None]
    print(
        f"kernel CPU for trace.stepper() of decoder(32), nothing cached: {stepper:.2f} s (graph "
        f"models made: steps {made} of {len(trace.steps)}; the timeline's badges from "
        "Step.size)"
    )


def main() -> int:
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}"
    )
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    from tests.widgets.lab import JUPYTER, jupyterlab, run_all

    if not JUPYTER.exists():
        print("jupyter is not installed in this environment", file=sys.stderr)
        return 2
    kernel_parts()
    cells = [SETUP] + [code for _label, code in CASES]
    results = []
    with tempfile.TemporaryDirectory() as tmp, jupyterlab(Path(tmp), cells) as url:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=ARGS)
            print(f"browser: chromium {browser.version}, headless, viewport 1600x1000")
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(300_000)
            page.goto(url)
            # the setup cell alone (run-all would run the timed cells too): wait for idle
            page.wait_for_function(
                "(document.querySelector('#jp-main-statusbar')?.innerText || '').includes('Idle')"
            )
            page.evaluate(
                """() => { const nb = window.jupyterapp.shell.currentWidget.content;
                           nb.activeCellIndex = 0;
                           return window.jupyterapp.commands.execute('notebook:run-cell'); }"""
            )
            page.wait_for_function(
                """() => (window.jupyterapp.shell.currentWidget.content.widgets[0].node
                          .querySelector('.jp-OutputArea-output')?.innerText || '')
                          .includes('setup:')""",
                timeout=600_000,
            )
            setup = page.evaluate(
                """() => window.jupyterapp.shell.currentWidget.content.widgets[0].node
                          .querySelector('.jp-OutputArea-output').innerText"""
            )
            print(setup.strip())
            for k, (label, _code) in enumerate(CASES, start=1):
                r = page.evaluate(RUN_CELL_JS, k)
                kernel = r["printed"].strip().splitlines()[0] if r["printed"] else "?"
                results.append((label, r))
                print(
                    f"  {label:<34} drawn {r['drawn']:6.0f} ms, painted {r['painted']:6.0f} ms "
                    f"after run-cell ({kernel}; component layout+draw {r['draw']:.0f} ms, "
                    f"{r['boxes']} boxes)"
                )
            page.screenshot(path=os.path.join(tempfile.gettempdir(), "jupyter_speed.png"))
            browser.close()
        del run_all  # (imported with the harness; the cells are run one by one here)
    for label, r in results[:2]:
        ok = "ok" if r["painted"] < 2000 else "OVER"
        print(
            f"{label}: graph shown {r['painted'] / 1000:.2f} s after running the cell "
            f"(goal < 2 s: {ok})"
        )
    print(f"load average at the end {os.getloadavg()[0]:.1f} (1 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
