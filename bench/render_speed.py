"""How fast the graph view draws (issue #12): the Python payload and the browser's layout and
drawing, measured in one run in headless Chromium (Debian's chromium, through playwright):

1. ConvNeXt-base, default pipeline (torch.export, random weights):
   - Python, per step: what Jupyter / Panel send when a step is shown
     (``widgets.graph_view.graph_data``: the step's payload against its previous step and the
     baseline's own payload), from cold caches ("first view", server side), its JSON, and a
     revisit (cached);
   - the HTML report (``trace.to_html``): for every changed step, the time from clicking its
     timeline row until its graph is drawn (in page JS: ``performance.now()`` around the
     click, which parses the payload, lays out and draws synchronously; and until the next
     frame is painted), then a revisit of each (a step already shown).
2. ``many_ops(5000)`` (11,000 nodes): the report's write time and size, and the first view of
   step 2 from page load (navigation start to the graph drawn / painted).
3. ``decoder(32)`` (~10,000 nodes): first view of step 2 from page load, and the component's
   own time (``JSON.parse`` of the step's and its baseline's payloads + ``setData`` + draw);
   ``expand(id)`` of every collapsed group visible at first view and of 30 groups at deeper
   levels (their ancestors opened first); expand-all.
4. ``flat_chain(10000)`` (no module paths): the report's write time, first view of step 2,
   expanding one segment group.

And the Python payload (``graph_data``, cold) of step 2 of the three scale models.

    .venv/bin/python bench/render_speed.py [--python | --expand-all | --reports [chain,decoder,1b]]
        [--layers 16 --hidden 2048]

``--python``: only the Python payloads of the three scale models (each the fastest of three
cold runs, with its CPU time), no browser. ``--reports``: the reports of issue 43's models at
scale (the 10,000-op chain, the 32-layer 256-wide decoder and the 1.24B decoder, each from
torch and checked), written once each (goals: under 5 s, 3 s and 3 s), and at 1B ``save``
beside ``torch.save`` of the same state dict (goal: at most 1.2x), four rounds alternating
which goes first, each writing a new file in the same folder and deleting it; ``--layers`` and
``--hidden`` make that decoder smaller (default 16 and 2048: the 1B). ``--expand-all``:
decoder(32)'s expand-all alone (three runs), with the longest main-thread task of each
(Chromium's Long Tasks API).

Goals: first view < 1 s (Python and browser; ``many_ops`` from page load < 2 s), revisit
< 50 ms, report of ``many_ops(5000)`` written in < 10 s, expanding a group < 0.5 s.
Browser figures are given twice: "js" (the synchronous JavaScript: parse, the layouts' batch
sent to the component's Web Worker, or the drawing when every layout is cached) and "painted"
(until the next frame after the graph is drawn: the worker's layout, the DOM, style, layout
and paint included); the goal is checked on both.
"""

from __future__ import annotations

import os
import platform
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ARGS = ["--no-sandbox", "--disable-gpu"]
VIEWPORT = {"width": 1600, "height": 1000}
DEEP_SAMPLE = 30
PAYLOAD_RUNS = 3  # cold payloads of a scale model: the fastest is reported

# Installed before the report's own scripts: the time (ms from navigation start) at which the
# graph component first sets data-draw-ms (the graph is laid out and drawn), and the next
# frame after it (painted); and a helper that waits for the next painted frame.
INIT_JS = """
window.__pl = {};
// the page's long tasks (> 50 ms, Chromium's Long Tasks API), for the expand-all's longest
window.__plLong = [];
try {
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) window.__plLong.push([e.startTime, e.duration]);
  }).observe({ type: "longtask", buffered: true });
} catch (e) { /* no Long Tasks API */ }
// the next painted frame once the graph is drawn (its layouts come from a Web Worker: while
// data-layout is "pending" the drawing is still to come)
window.__plFrame = () => new Promise((r) => {
  const frame = () => requestAnimationFrame(() => setTimeout(r, 0));
  const el = document.querySelector(".plg");
  if (!el || el.dataset.layout !== "pending") return frame();
  const mo = new MutationObserver(() => {
    if (el.dataset.layout !== "pending") { mo.disconnect(); frame(); }
  });
  mo.observe(el, { attributes: true, attributeFilter: ["data-layout"] });
});
new MutationObserver(() => {
  if (window.__pl.drawn !== undefined) return;
  window.__pl.drawn = performance.now();
  requestAnimationFrame(() => setTimeout(() => { window.__pl.painted = performance.now(); }, 0));
}).observe(document, { attributes: true, subtree: true, attributeFilter: ["data-draw-ms"] });
"""

# time the component's setData as the report calls it (report.js calls graph.setData on the
# object it also sets as window.passlensGraph)
WRAP_JS = """() => {
  const g = window.passlensGraph, setData = g.setData;
  g.setData = function (...args) {
    const t = performance.now();
    try { return setData.apply(this, args); }
    finally { window.__plSetData = performance.now() - t; }
  };
}"""

# click a timeline row: ms of the synchronous handler (payload parse, setData: layout, draw,
# minimap, view; the IR / diff / params panes) and until the next painted frame, with the
# component's setData and its layout+draw (data-draw-ms) and the boxes drawn
CLICK_JS = """async (i) => {
  const row = document.querySelector(`.pl-step-row[data-step="${i}"]`);
  const el = document.querySelector("#pl-graph");
  window.__plSetData = NaN;
  const t0 = performance.now();
  row.click();
  const t1 = performance.now();
  await window.__plFrame();
  const t2 = performance.now();
  return { js: t1 - t0, painted: t2 - t0, setData: window.__plSetData, draw: +el.dataset.drawMs,
           boxes: +el.dataset.boxes };
}"""

# the component alone on step `i` of the report: JSON.parse of its payload and its baseline's
# (fresh objects: nothing cached for them) + setData (layout and draw)
SET_DATA_JS = """async (i) => {
  const data = JSON.parse(document.getElementById("pl-data").textContent);
  const s = data.steps[i], prev = s.prev === null ? null : data.steps[s.prev];
  const el = document.querySelector("#pl-graph");
  const t0 = performance.now();
  const after = JSON.parse(document.getElementById("pl-g" + s.graph).textContent);
  const before = prev ? JSON.parse(document.getElementById("pl-g" + prev.graph).textContent) : null;
  const t1 = performance.now();
  window.passlensGraph.setData(after, before);
  const t2 = performance.now();
  await window.__plFrame();
  const t3 = performance.now();
  return { parse: t1 - t0, setData: t2 - t1, js: t2 - t0, painted: t3 - t0,
           draw: +el.dataset.drawMs, boxes: +el.dataset.boxes };
}"""

# time one component call (expand(id), expandAll()), synchronous and until painted
CALL_JS = """async ([what, arg]) => {
  const g = window.passlensGraph, el = document.querySelector("#pl-graph");
  const t0 = performance.now();
  if (what === "expand") g.expand(arg); else if (what === "expandAll") g.expandAll();
  else if (what === "setCollapsed") g.setCollapsed(arg);
  const t1 = performance.now();
  await window.__plFrame();
  const t2 = performance.now();
  await new Promise((r) => setTimeout(r, 200)); // (long tasks are reported a little later)
  const tasks = window.__plLong.filter(([s, d]) => s + d > t0 && s < t2).map(([s, d]) => d);
  return { js: t1 - t0, painted: t2 - t0, draw: +el.dataset.drawMs, boxes: +el.dataset.boxes,
           longest: tasks.length ? Math.max(...tasks) : 0, long: tasks.length };
}"""

# the group tree of step `i`'s payload, and the collapsed groups drawn as boxes right now
GROUPS_JS = """(i) => {
  const data = JSON.parse(document.getElementById("pl-data").textContent);
  const p = JSON.parse(document.getElementById("pl-g" + data.steps[i].graph).textContent);
  const visible = Array.from(document.querySelectorAll("#pl-graph g.plg-group[data-group]"))
    .map((e) => e.dataset.group);
  return { groups: p.groups.map((g) => [g.id, g.p, g.k]), visible,
           collapsed: window.passlensGraph.collapsed, nodes: p.nodes.length };
}"""


def _ok(value: float, goal: float) -> str:
    return "ok" if value < goal else "OVER"


def _med(xs):
    return statistics.median(xs)


def _ms(x: float) -> str:
    return f"{1000 * x:.0f} ms" if x >= 0.1 else f"{1000 * x:.1f} ms"


def cold() -> None:
    """Clear every render cache of the Python side (payloads, entries, diffs)."""
    from widgets import boxes, graph_data

    for memo in (graph_data._PAYLOADS, boxes._DIFFS, boxes._ENTRIES):
        memo.table.clear()
    from widgets import tables_html

    if hasattr(tables_html, "_SHAPE_TABLES"):  # (not in the code before 2026-12-03)
        tables_html._SHAPE_TABLES.table.clear()


def python_view(step, cpu: list | None = None) -> tuple[float, float, float, int]:
    """What Jupyter / Panel compute and send when ``step`` is shown, from cold caches:
    (graph_data seconds, JSON seconds, revisit seconds, JSON bytes); the process's CPU
    seconds of graph_data + JSON are appended to ``cpu``."""
    from widgets.escape import json_script
    from widgets.graph_view import graph_data

    cold()
    c0 = time.process_time()
    t0 = time.perf_counter()
    data = graph_data(step, step.previous, stats=False)  # as GraphView / GraphPane send it
    t1 = time.perf_counter()
    text = json_script(data)
    t2 = time.perf_counter()
    if cpu is not None:
        cpu.append(time.process_time() - c0)
    graph_data(step, step.previous, stats=False)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, len(text.encode())


def load(browser, path: Path, step: int | None = None):
    """Open the report at ``step`` (its first view); returns (page, ms to the graph drawn,
    ms to it painted, both from navigation start)."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(300_000)
    page.add_init_script(INIT_JS)
    url = path.as_uri() + (f"#step-{step}" if step is not None else "")
    page.goto(url, wait_until="load")
    page.wait_for_function("window.__pl.painted !== undefined")
    pl = page.evaluate("window.__pl")
    return page, pl["drawn"], pl["painted"]


def write_report(trace, path: Path) -> tuple[float, int]:
    cold()
    t0 = time.perf_counter()
    size = trace.to_html(path).stat().st_size
    return time.perf_counter() - t0, size


def fmt_b(r: dict) -> str:
    return f"js {r['js']:6.0f} ms, painted {r['painted']:6.0f} ms"


# ===== 1. ConvNeXt-base ========================================================================


def convnext(browser, tmp: Path) -> None:
    import torch

    import explorer
    from tests.compiler.frontend.torch_zoo import ConvNeXt

    print("\n== 1. ConvNeXt-base, default pipeline (torch.export, random weights)")
    torch.manual_seed(0)
    model = ConvNeXt(dims=(128, 256, 512, 1024), depths=(3, 3, 27, 3), num_classes=1000).eval()
    x = torch.randn(1, 3, 224, 224)
    t0 = time.perf_counter()
    trace = explorer.explore(model, (x,))
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    for s in trace:
        s.graph  # noqa: B018 (the explorer's graph models, built lazily, not timed below)
    print(
        f"trace: {len(trace)} steps, built in {built:.1f} s; graph models "
        f"{time.perf_counter() - t0:.2f} s (largest {max(len(s.graph.nodes) for s in trace)} "
        "nodes)"
    )

    print(
        "Python: graph_data(step, step.previous, stats=False) from cold caches (+ its JSON), "
        "then again:"
    )
    first, again = [], []
    for step in trace:
        build, ser, rev, size = python_view(step)
        first.append(build + ser)
        again.append(rev)
        print(
            f"  #{step.index} {step.name:<24} {step.status:<9} {len(step.graph.nodes):>5} nodes  "
            f"payload {1000 * build:6.0f} ms + JSON {1000 * ser:4.0f} ms ({size / 1e6:.2f} MB)  "
            f"revisit {1000 * rev:.3f} ms"
        )
    print(
        f"Python first view (payload + JSON): max {_ms(max(first))}, median {_ms(_med(first))} "
        f"(goal < 1 s: {_ok(max(first), 1.0)})"
    )
    print(
        f"Python revisit (cached): max {1000 * max(again):.3f} ms (goal < 50 ms: "
        f"{_ok(max(again), 0.05)})"
    )

    path = tmp / "convnext.html"
    took, size = write_report(trace, path)
    print(f"report: {size / 1e6:.2f} MB written in {took:.2f} s")
    page, drawn, painted = load(browser, path)
    page.evaluate(WRAP_JS)
    start = page.evaluate("JSON.parse(document.getElementById('pl-data').textContent).start")
    print(
        f"browser: page load, step #{start} shown: drawn at {drawn:.0f} ms, painted at "
        f"{painted:.0f} ms from navigation start"
    )
    changed = [s.index for s in trace if s.status == "changed" and s.index != start]
    shown = [start]
    first_js, first_painted = [], []
    for i in changed:
        r = page.evaluate(CLICK_JS, i)
        shown.append(i)
        first_js.append(r["js"])
        first_painted.append(r["painted"])
        print(
            f"  click #{i} {trace[i].name:<22} first view: {fmt_b(r)}; setData "
            f"{r['setData']:4.0f} ms, of which layout+draw {r['draw']:3.0f} ms; {r['boxes']} boxes"
        )
    rev_js, rev_painted = [], []
    for i in reversed(shown[:-1]):  # back through the steps already shown
        r = page.evaluate(CLICK_JS, i)
        rev_js.append(r["js"])
        rev_painted.append(r["painted"])
        print(
            f"  click #{i} {trace[i].name:<22} revisit:    {fmt_b(r)}; setData "
            f"{r['setData']:4.0f} ms, of which layout+draw {r['draw']:3.0f} ms"
        )
    page.close()
    for label, xs, goal in (
        ("first view (click -> drawn), js", first_js, 1000),
        ("first view (click -> painted)", first_painted, 1000),
        ("revisit (click -> drawn), js", rev_js, 50),
        ("revisit (click -> painted)", rev_painted, 50),
    ):
        print(
            f"browser {label}: max {max(xs):.0f} ms, median {_med(xs):.0f} ms over {len(xs)} "
            f"steps (goal < {goal} ms: {_ok(max(xs), goal)})"
        )


# ===== 2-4. the scale models =====================================================================


def scale_trace(kind: str, args: dict):
    from bench import scale_models

    t0 = time.perf_counter()
    trace = scale_models.TRACES[kind](**args)
    for s in trace:
        s.graph  # noqa: B018
    step = trace[scale_models.VIEW_STEP]
    call = f"{kind}({', '.join(str(v) for v in args.values())})"
    print(
        f"\n== {call}: {len(step.graph.nodes)} nodes at step #{step.index} {step.name}; trace "
        f"and graph models built in {time.perf_counter() - t0:.1f} s"
    )
    return trace, step


def python_payload(label: str, step, results: list, runs: int = PAYLOAD_RUNS) -> None:
    """The payload of ``step`` from cold caches, ``runs`` times: the fastest run (wall
    clock) is kept, with its CPU time (on a shared machine the wall clock also counts the
    time other processes held the CPU)."""
    timed, cpu = [], []
    for _ in range(runs):
        timed.append(python_view(step, cpu))
    k = min(range(runs), key=lambda i: timed[i][0] + timed[i][1])
    build, ser, _rev, size = timed[k]
    results.append((label, step, build, ser, size, cpu[k]))
    walls = ", ".join(f"{b + s:.2f}" for b, s, _r, _z in timed)
    print(
        f"Python graph_data(#{step.index}, #{step.previous.index}), cold, best of {runs}: "
        f"{build:.2f} s + JSON {ser:.2f} s ({size / 1e6:.1f} MB), CPU {cpu[k]:.2f} s "
        f"(all runs, wall: {walls} s)"
    )


def component(page, step: int, reps: int = 3) -> list[dict]:
    out = [page.evaluate(SET_DATA_JS, step) for _ in range(reps)]
    for k, r in enumerate(out):
        print(
            f"  component, run {k + 1}: JSON.parse {r['parse']:.0f} ms + setData "
            f"{r['setData']:.0f} ms (layout+draw {r['draw']:.0f} ms) = js {r['js']:.0f} ms, "
            f"painted {r['painted']:.0f} ms, {r['boxes']} boxes"
        )
    return out


def many_ops(browser, tmp: Path, results: list) -> None:
    trace, step = scale_trace("many_ops", {"n": 5000})
    python_payload("many_ops(5000)", step, results)
    path = tmp / "many_ops.html"
    took, size = write_report(trace, path)
    print(
        f"report written in {took:.2f} s (goal < 10 s: {_ok(took, 10)}; Graphviz: 193 s), "
        f"{size / 1e6:.1f} MB"
    )
    page, drawn, painted = load(browser, path, step.index)
    draw_ms = page.evaluate("+document.querySelector('#pl-graph').dataset.drawMs")
    print(
        f"browser first view of #{step.index} from page load: drawn at {drawn:.0f} ms "
        f"({_ok(drawn, 2000)}), painted at {painted:.0f} ms (goal < 2 s: {_ok(painted, 2000)}), "
        f"of which layout+draw {draw_ms:.0f} ms"
    )
    component(page, step.index, reps=1)
    page.close()


def decoder(browser, tmp: Path, results: list) -> None:
    trace, step = scale_trace("decoder", {"layers": 32})
    python_payload("decoder(32)", step, results)
    path = tmp / "decoder.html"
    took, size = write_report(trace, path)
    print(f"report written in {took:.2f} s, {size / 1e6:.1f} MB")
    page, drawn, painted = load(browser, path, step.index)
    print(
        f"browser first view of #{step.index}, whole page load: drawn at {drawn:.0f} ms, "
        f"painted at {painted:.0f} ms from navigation start"
    )
    runs = component(page, step.index, reps=3)
    for key, label in (("js", "js"), ("painted", "painted")):
        xs = [r[key] for r in runs]
        print(
            f"component first view ({label}): median {_med(xs):.0f} ms, max {max(xs):.0f} ms "
            f"(goal < 1 s: {_ok(max(xs), 1000)})"
        )

    info = page.evaluate(GROUPS_JS, step.index)
    groups = info["groups"]
    initial = info["collapsed"]
    closed = set(initial)
    visible = [g for g in info["visible"] if g in closed]
    index = {gid: k for k, (gid, _p, _k) in enumerate(groups)}

    def ancestors(gid: str) -> list[str]:
        out, p = [], groups[index[gid]][1]
        while p > 0:
            out.append(groups[p][0])
            p = groups[p][1]
        return out

    def expand_times(targets, label):
        js, painted = [], []
        worst = ("", 0.0)
        for gid in targets:
            opened = set(ancestors(gid))
            if opened & closed:  # open the ancestors first (not timed)
                page.evaluate(CALL_JS, ["setCollapsed", [g for g in initial if g not in opened]])
            r = page.evaluate(CALL_JS, ["expand", gid])
            js.append(r["js"])
            painted.append(r["painted"])
            if r["painted"] > worst[1]:
                worst = (gid, r["painted"], r["boxes"])
            page.evaluate(CALL_JS, ["setCollapsed", initial])  # back to the first view
        print(
            f"expand(id), {label}: {len(js)} groups: js max {max(js):.0f} ms, median "
            f"{_med(js):.0f} ms; painted max {max(painted):.0f} ms, median {_med(painted):.0f} ms "
            f"(goal < 0.5 s: {_ok(max(painted), 500)}; slowest {worst[0]!r}, {worst[2]} boxes "
            "after)"
        )

    expand_times(visible, "every collapsed group visible at first view")
    deep = [g for g in groups[1:] if g[0] in closed and set(ancestors(g[0])) & closed]
    deep_ids = [g[0] for g in deep]
    sample = random.Random(0).sample(deep_ids, min(DEEP_SAMPLE, len(deep_ids)))
    depth = {g: len(ancestors(g)) for g in sample}
    print(
        f"  ({len(visible)} collapsed groups visible at first view; {len(deep_ids)} collapsed "
        f"groups inside them, depth {min(depth.values())}-{max(depth.values())} sampled)"
    )
    expand_times(sample, f"a sample of {len(sample)} deeper groups (ancestors opened first)")
    r = page.evaluate(CALL_JS, ["expandAll", None])
    print(f"expand all: {fmt_b(r)}, {r['boxes']} boxes (no goal)")
    longest_task(r)
    page.close()


def longest_task(r: dict) -> None:
    print(
        f"  longest main-thread task meanwhile {r['longest']:.0f} ms, of {r['long']} long "
        "tasks (> 50 ms; the page answers between tasks)"
    )


def expand_all_only(browser, tmp: Path) -> None:
    """``--expand-all``: decoder(32)'s expand-all alone, three times from the first view, with
    the longest main-thread task of each."""
    trace, step = scale_trace("decoder", {"layers": 32})
    path = tmp / "decoder.html"
    write_report(trace, path)
    page, _drawn, _painted = load(browser, path, step.index)
    initial = page.evaluate("window.passlensGraph.collapsed")
    for k in range(3):
        r = page.evaluate(CALL_JS, ["expandAll", None])
        print(f"decoder(32) expand all, run {k + 1}: {fmt_b(r)}, {r['boxes']} boxes")
        longest_task(r)
        page.evaluate(CALL_JS, ["setCollapsed", initial])
    page.close()


def flat_chain(browser, tmp: Path, results: list) -> None:
    trace, step = scale_trace("flat_chain", {"n": 10000})
    python_payload("flat_chain(10000)", step, results)
    path = tmp / "flat_chain.html"
    took, size = write_report(trace, path)
    print(f"report written in {took:.2f} s (goal < 10 s: {_ok(took, 10)}), {size / 1e6:.1f} MB")
    page, drawn, painted = load(browser, path, step.index)
    print(
        f"browser first view of #{step.index} from page load: drawn at {drawn:.0f} ms, painted "
        f"at {painted:.0f} ms (goal < 2 s: {_ok(painted, 2000)})"
    )
    runs = component(page, step.index, reps=1)
    print(
        f"component first view: painted {runs[0]['painted']:.0f} ms "
        f"(goal < 1 s: {_ok(runs[0]['painted'], 1000)})"
    )
    info = page.evaluate(GROUPS_JS, step.index)
    kinds = {gid: k for gid, _p, k in info["groups"]}
    segs = [g for g in info["visible"] if kinds.get(g) == "segment"]
    if segs:
        gid = segs[len(segs) // 2]
        r = page.evaluate(CALL_JS, ["expand", gid])
        print(
            f"expand one segment ({gid!r}, of {len(segs)} drawn): {fmt_b(r)}, {r['boxes']} "
            f"boxes after (goal < 0.5 s: {_ok(r['painted'], 500)})"
        )
    else:
        print("no segment group drawn at first view")
    page.close()


def summarise(results: list) -> None:
    print("\n== Python payload of step 2 (graph_data against step 1, cold caches, best run)")
    for label, step, build, ser, size, cpu in results:
        total = build + ser
        print(
            f"  {label:<18} {len(step.graph.nodes):>6} nodes: "
            f"payload {build:.2f} s + JSON {ser:.2f} s = {total:.2f} s, {size / 1e6:.1f} MB, "
            f"CPU {cpu:.2f} s (first-view goal < 1 s: {_ok(total, 1.0)})"
        )


def python_only() -> int:
    """``--python``: the payloads of the three scale models alone (no browser)."""
    results: list = []
    for kind, args in (
        ("many_ops", {"n": 5000}),
        ("decoder", {"layers": 32}),
        ("flat_chain", {"n": 10000}),
    ):
        _trace, step = scale_trace(kind, args)
        python_payload(f"{kind}({', '.join(str(v) for v in args.values())})", step, results)
    summarise(results)
    print(f"load average at the end {os.getloadavg()[0]:.1f} (1 min)")
    return 0


# ===== reports at scale (issues 43 and 44) =======================================================


def _report_figures(label: str, trace, tmp: Path, goal: float) -> None:
    """The report of ``trace`` (with its check report) written as a user writes it, once,
    right after ``check``: seconds (wall and the process's CPU) and size."""
    import explorer.progress  # noqa: F401  (imports done before the clock starts)
    import widgets.report  # noqa: F401

    path = tmp / "report.html"
    c0 = time.process_time()
    t0 = time.perf_counter()
    size = trace.to_html(path, progress=False).stat().st_size
    took = time.perf_counter() - t0
    cpu = time.process_time() - c0
    graphs = sum(1 for s in trace.steps if s.status != "unchanged")
    print(
        f"  to_html {took:6.2f} s (CPU {cpu:.2f} s; goal < {goal:g} s: {_ok(took, goal)}), "
        f"{size / 1e6:.1f} MB; {len(trace.steps)} steps, {graphs} changed, load "
        f"{os.getloadavg()[0]:.1f}"
    )
    path.unlink()


SAVE_ROUNDS = 4  # save and torch.save, alternating which goes first: the best of each


def reports(tmp: Path, which: list[str], layers: int = 16, hidden: int = 2048) -> None:
    """``--reports``: the reports of issue 43's three models at scale, each explored from
    torch (``torch.export``, the default pipeline), checked against torch eager, then written
    once: the 10,000-op chain (``scale_models.torch_twin("flat_chain")``), the 32-layer,
    256-wide decoder and the 1.24B decoder of ``bench/real_size.py`` (or ``layers`` and
    ``hidden`` of it); at 1B also ``save`` beside ``torch.save`` of the model's state dict,
    in the same run."""
    import explorer
    from bench import real_size, scale_models

    def explored(label, model, inputs):
        t0 = time.perf_counter()
        trace = explorer.explore(model, inputs, progress=False)
        t1 = time.perf_counter()
        trace.check(inputs, progress=False)
        t2 = time.perf_counter()
        nodes = max(s.node_count for s in trace.steps)
        print(
            f"\n== {label}: explore {t1 - t0:.1f} s, check {t2 - t1:.1f} s (not counted), "
            f"largest step {nodes:,} nodes"
        )
        return trace

    if "chain" in which:
        model, inputs = scale_models.torch_twin("flat_chain", n=10000)
        trace = explored("flat_chain(10000) from torch", model, inputs)
        _report_figures("chain", trace, tmp, 5.0)
        del trace, model
    if "decoder" in which:
        model, ids, _nbytes, _init = real_size.build_model(32, 128256, hidden=256)
        trace = explored("decoder: 32 layers, hidden 256 (bench/real_size.py)", model, (ids,))
        _report_figures("decoder32", trace, tmp, 3.0)
        del trace, model
    if "1b" in which:
        model, ids, nbytes, _init = real_size.build_model(layers, 128256, hidden=hidden)
        shape = (
            "Llama-3.2-1B's shape"
            if (layers, hidden) == (16, 2048)
            else f"{layers} layers, hidden {hidden}, the 1B's vocabulary"
        )
        trace = explored(f"decoder of {shape}, {nbytes / 2**30:.2f} GiB of weights", model, (ids,))
        _report_figures("1b", trace, tmp, 3.0)
        saves, torch_saves, size = _save_figures(trace, model, tmp)
        ratio = min(saves) / min(torch_saves)
        print(
            f"  save {', '.join(f'{x:.2f}' for x in saves)} s ({size / nbytes:.3f}x the weights), "
            f"torch.save of the state dict {', '.join(f'{x:.2f}' for x in torch_saves)} s: best "
            f"{ratio:.2f}x (goal <= 1.2x: {'ok' if ratio <= 1.2 else 'OVER'}); load "
            f"{os.getloadavg()[0]:.1f}"
        )


def _save_figures(trace, model, tmp: Path) -> tuple[list[float], list[float], int]:
    """`trace.save` and `torch.save(model.state_dict())`, `SAVE_ROUNDS` times, alternating
    which goes first (the first write after a pause finds the page cache's pages cold, and the
    disk's write-back makes a single write vary 2-3x); each writes a new file in `tmp` and
    deletes it. Returns the seconds of each and the saved file's size."""
    import torch

    saves, torch_saves, size = [], [], 0
    for k in range(SAVE_ROUNDS):
        for which in ("save", "torch") if k % 2 == 0 else ("torch", "save"):
            path = tmp / ("run.passlens" if which == "save" else "state.pt")
            t0 = time.perf_counter()
            if which == "save":
                trace.save(path)
            else:
                torch.save(model.state_dict(), path)
            (saves if which == "save" else torch_saves).append(time.perf_counter() - t0)
            size = path.stat().st_size if which == "save" else size
            path.unlink()
    return saves, torch_saves, size


def main() -> int:
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}"
    )
    if "--python" in sys.argv[1:]:
        return python_only()
    if "--reports" in sys.argv[1:]:
        k = sys.argv.index("--reports")
        named = len(sys.argv) > k + 1 and not sys.argv[k + 1].startswith("--")
        which = sys.argv[k + 1].split(",") if named else ["chain", "decoder", "1b"]
        sizes = {
            key: int(sys.argv[sys.argv.index(f"--{key}") + 1])
            for key in ("layers", "hidden")
            if f"--{key}" in sys.argv
        }
        with tempfile.TemporaryDirectory() as tmp:
            reports(Path(tmp), which, **sizes)
        print(f"load average at the end {os.getloadavg()[0]:.1f} (1 min)")
        return 0
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    began = time.perf_counter()
    results: list = []
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        print(f"browser: chromium {browser.version}, headless, viewport 1600x1000")
        if "--expand-all" in sys.argv[1:]:
            expand_all_only(browser, Path(tmp))
            browser.close()
            return 0
        convnext(browser, Path(tmp))
        many_ops(browser, Path(tmp), results)
        decoder(browser, Path(tmp), results)
        flat_chain(browser, Path(tmp), results)
        browser.close()
    summarise(results)
    print(
        f"\ntotal {time.perf_counter() - began:.0f} s; load average at the end "
        f"{os.getloadavg()[0]:.1f} (1 min), {os.getloadavg()[1]:.1f} (5 min)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
