"""The compile tab of a torch.compile trace beside tlparse, on a model with a graph break and a
forced recompile (issue 43 item 11).

The model: a linear, ``torch._dynamo.graph_break()``, then elementwise ops (two frames:
``forward`` and Dynamo's resume function), compiled with static shapes on a batch of 2 and
called again on a batch of 3 (each frame recompiled: 4 compiles). Both tools see the same
model and calls:

1. tlparse: the model compiled in a child process with ``TORCH_TRACE`` set (read when torch is
   imported), tlparse run on the log (``--tlparse PATH``, default the venv's ``tlparse``; it
   is on PyPI as a Rust binary wheel). Counted in its pages: compiles, guard lines, recompile
   reasons, the compile-time figures of its compilation-metrics pages, kernel -> node links
   (with ``--inductor-provenance``, its provenance-tracking page);
2. passlens: ``explore(..., compiler="inductor", calls=[...])`` and its compile tab: the same
   counts from ``trace.compile_info``, and torch's own ``structured_logging_overhead_s`` (what
   listening to the structured trace costs the compile).

With ``--screenshots DIR`` both are shot at 1600x1000 in headless Chromium: the report's
compile tab (top, scrolled to the first frame's kernels, a fused kernel's code unfolded), a
kernel's node clicked (the graph with it selected), and tlparse's index, its provenance
highlighter of the first graph and its first compilation-metrics page.

With ``--jupyter`` too: the stepper's compile tab in a JupyterLab cell, and a kernel's node
clicked there.

    .venv/bin/python bench/compile_tab.py [--tlparse PATH] [--screenshots DIR [--jupyter]]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the model is the tests' (tests/explorer/inductor/models.py), imported from the checkout
CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import torch
from tests.explorer.inductor.models import Breaks
import torch._inductor.config as cfg
torch.manual_seed(0)
model = Breaks()
compiled = torch.compile(model, dynamic=False)
with cfg.patch({"fx_graph_cache": False}), torch.no_grad():
    compiled(torch.randn(2, 4))
    compiled(torch.randn(3, 4))
"""


def run_tlparse(tlparse: str, tmp: Path) -> Path:
    script = tmp / "child.py"
    script.write_text(CHILD)
    logs = tmp / "trace"
    env = dict(os.environ, TORCH_TRACE=str(logs), INDUCTOR_PROVENANCE="1")
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, str(script), str(ROOT)], env=env, check=True, capture_output=True
    )
    compiled = time.perf_counter() - start
    log = max(logs.iterdir(), key=lambda p: p.stat().st_mtime)
    out = tmp / "tl_out"
    start = time.perf_counter()
    subprocess.run(
        [tlparse, str(log), "-o", str(out), "--overwrite", "--no-browser", "--inductor-provenance"],
        check=True,
        capture_output=True,
    )
    files = [p for p in out.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    print(f"compile with TORCH_TRACE in a child: {compiled:.1f} s")
    print(
        f"tlparse: {len(files)} files, {size / 1000:.0f} kB in {time.perf_counter() - start:.1f} s"
    )
    index = (out / "index.html").read_text(errors="replace")
    ids = sorted(set(re.findall(r"\[(\d+/\d+)\]", index)))
    print(f"compiles listed on its index: {len(ids)} ({', '.join(ids)})")
    guards = [p for p in files if "dynamo_cpp_guards_str" in p.name]
    lines = sum(p.read_text(errors="replace").count("\n") for p in guards)
    print(f"guard pages: {len(guards)}, {lines} lines in all")
    metrics = sorted(p for p in files if p.name.startswith("compilation_metrics"))
    print(f"compilation-metrics pages: {len(metrics)}")
    if metrics:
        text = re.sub(r"<[^>]+>", " ", metrics[0].read_text(errors="replace"))
        text = text.split("Compile Time(seconds)", 1)[-1].split("Restarts and Failures")[0]
        times = re.findall(r"([A-Z][A-Za-z ]+?)\s*(?:\[\?\])?\s*:\s*([0-9.]+)", text)
        print(f"  {metrics[0].parent.name}'s times:", ", ".join(f"{k}={v}" for k, v in times))
    named = {p.name: p.read_text(errors="replace").count("size mismatch") for p in files}
    named = {k: v for k, v in named.items() if v and not k.startswith("raw.")}
    print(
        f"files naming the failed guard (size mismatch): {named} (json files linked from the index)"
    )
    prov = [p for p in files if "provenance" in p.name]
    print(f"provenance-tracking pages (kernel <-> node): {len(prov)}")
    return out


def run_passlens(out: Path | None) -> object:
    import torch

    import explorer
    from explorer.inductor.compile_log import TIMES
    from tests.explorer.inductor.models import Breaks  # the child's model too

    torch.manual_seed(0)
    start = time.perf_counter()
    trace = explorer.explore(
        Breaks(),
        (torch.randn(2, 4),),
        compiler="inductor",
        dynamic=False,
        calls=[(torch.randn(3, 4),)],
        progress=False,
    )
    seconds = time.perf_counter() - start
    frames = trace.compile_info["frames"]
    print(f"explore: {seconds:.1f} s, {len(trace.steps)} steps")
    print(f"frames in the compile tab: {len(frames)} ({', '.join(f['id'] for f in frames)})")
    lines = sum(f["guards"].count("\n") + 1 for f in frames if f["guards"])
    print(
        f"guards: {sum(f['guard_count'] or 0 for f in frames)} (guard_count), "
        f"{lines} lines of guard tree"
    )
    print(
        "recompile reasons naming the failed guard: "
        f"{sum(len(f['recompile_reasons']) for f in frames)}; restarts: "
        f"{sum(len(f['restart_reasons']) for f in frames)}; graph breaks: "
        f"{sum(1 for f in frames if f['graph_break'])}"
    )
    logging_cost = sum(dict(f["times"]).get(TIMES[-1][1], 0.0) for f in frames)
    total = sum(dict(f["times"]).get(TIMES[0][1], 0.0) for f in frames)
    print(
        f"torch's structured_logging_overhead_s: {logging_cost:.3f} s of {total:.2f} s "
        f"entire-frame compile time ({100 * logging_cost / max(total, 1e-9):.1f}%)"
    )
    first = frames[0]
    print("first frame's times:", ", ".join(f"{k}={v:.3f}" for k, v in first["times"]))
    print("  recorded groups:", ", ".join(f"{k}={v:.3f}" for k, v in first["recorded"]))
    kernels = [k for f in frames for k in f["kernels"]]
    links = sum(len(k["nodes"]) + len(k["pre"]) for k in kernels)
    print(
        f"kernels: {len(kernels)}, node links: {links}, source lines: "
        f"{sum(len(k['sources']) for k in kernels)}"
    )
    for k in first["kernels"]:
        print(f"  {k['name']}: post-grad {k['nodes']}, Dynamo {k['pre']}, {k['sources'][:1]}")
    if out is not None:
        report = out / "passlens_report.html"
        start = time.perf_counter()
        trace.to_html(report)
        print(
            f"report with the compile tab: {report.stat().st_size / 1000:.0f} kB in "
            f"{time.perf_counter() - start:.1f} s"
        )
    return trace


def shoot(trace, tl_out: Path | None, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    f = trace.compile_info["frames"][0]
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = b.new_page(viewport={"width": 1600, "height": 1000})
        page.goto((out / "passlens_report.html").as_uri())
        page.click("#pl-tabs button[data-tab=compile]")
        page.screenshot(path=str(out / "compile_tab.png"))
        page.locator(".pl-cf-kernels").first.scroll_into_view_if_needed()
        page.screenshot(path=str(out / "compile_tab_kernels.png"))
        resumed = page.locator("#pl-pane-compile section").nth(1)  # 1/0: a fused C++ kernel
        resumed.locator("details.pl-kcode summary").first.click()
        resumed.locator(".pl-cf-kernels").scroll_into_view_if_needed()
        page.screenshot(path=str(out / "compile_tab_kernel_code.png"))
        link = f"span.pl-node[data-step='{f['codegen_step']}'][data-node='addmm']"
        page.locator(link).first.click()
        page.locator("g.plg-sel").first.wait_for()
        page.screenshot(path=str(out / "compile_tab_node_clicked.png"))
        if tl_out is not None:
            page.goto((tl_out / "index.html").as_uri())
            page.screenshot(path=str(out / "tlparse_index.png"))
            prov = tl_out / "provenance_tracking_-_0_0_1.html"  # the first graph's highlighter
            if prov.is_file():
                page.goto(prov.as_uri())
                page.screenshot(path=str(out / "tlparse_provenance.png"))
            metrics = sorted(tl_out.rglob("compilation_metrics*.html"))
            if metrics:
                page.goto(metrics[0].as_uri())
                page.screenshot(path=str(out / "tlparse_compilation_metrics.png"))
        b.close()
    print(f"screenshots in {out}")


def shoot_jupyter(out: Path) -> None:
    """The stepper's compile tab in a JupyterLab cell (served on localhost), then a kernel's
    node clicked: the graph on inductor codegen with it selected."""
    from playwright.sync_api import expect, sync_playwright

    from tests.widgets.lab import jupyterlab, run_all

    folder = Path(tempfile.mkdtemp(prefix="passlens-compile-lab-"))
    cells = [
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nimport torch, explorer\n"
        "from tests.explorer.inductor.models import Breaks\n"
        "torch.manual_seed(0)\nt = explorer.explore(Breaks(), (torch.randn(2, 4),), "
        "compiler='inductor', dynamic=False, calls=[(torch.randn(3, 4),)], progress=False)",
        "s = t.stepper()\ns.tab = 'compile'\ns",
    ]
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(180000)
        expect.set_options(timeout=180000)
        with jupyterlab(folder, cells) as url:
            page.goto(url)
            run_all(page)
            cell = page.locator(".jp-OutputArea-output:has(.pl-header)").last
            expect(cell.locator(".pl-compile").first).to_be_visible()
            page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
            page.wait_for_timeout(500)  # the layout settles after the side panel closes
            cell.scroll_into_view_if_needed()
            page.screenshot(path=str(out / "jupyter_stepper_compile_tab.png"))
            cell.locator("span.pl-node[data-node='addmm']").first.click()
            expect(cell.locator("g.plg-sel")).to_have_attribute("data-node-id", "addmm")
            page.screenshot(path=str(out / "jupyter_stepper_node_clicked.png"))
        b.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tlparse", default=str(Path(sys.executable).parent / "tlparse"))
    ap.add_argument("--screenshots", type=Path, default=None)
    ap.add_argument("--jupyter", action="store_true", help="also the stepper in JupyterLab")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="passlens-compile-tab-"))
    out = args.screenshots or tmp
    out.mkdir(parents=True, exist_ok=True)
    tl_out = None
    print("== tlparse ==")
    if shutil.which(args.tlparse) or Path(args.tlparse).is_file():
        tl_out = run_tlparse(args.tlparse, tmp)
    else:
        print(f"no tlparse at {args.tlparse} (pip install tlparse)")
    print("== passlens ==")
    trace = run_passlens(out)
    if args.screenshots is not None:
        shoot(trace, tl_out, out)
        if args.jupyter:
            shoot_jupyter(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
