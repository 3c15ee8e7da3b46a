"""`make demo` / `passlens demo`: a conversion explored end to end on a bundled model.

A small ConvNeXt-style torch model (random weights, built in code: channels-last linear layers
on 4-D inputs, as in torchvision's ConvNeXt) goes through torch.export, the IR and the default
pipeline. The demo prints the trace, what fold-constant changed, and the check against torch
eager; then it replays docs/bugs.md bug 1 with the bloat replica, where the check names the step,
the new constant and how many copies of the weight it holds. It writes an HTML report and a
saved trace under `build/demo/`.
"""

from __future__ import annotations

import os
import sys
import time


def _model():
    import torch
    from torch import nn

    class Block(nn.Module):
        """ConvNeXt block: depthwise conv, channels-last LayerNorm + Linear x4 + GELU + Linear."""

        def __init__(self, dim: int):
            super().__init__()
            self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.pwconv1 = nn.Linear(dim, 4 * dim)
            self.act = nn.GELU()
            self.pwconv2 = nn.Linear(4 * dim, dim)

        def forward(self, x):
            y = self.dwconv(x).permute(0, 2, 3, 1)
            y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
            return x + y.permute(0, 3, 1, 2)

    class TinyConvNeXt(nn.Module):
        def __init__(self, dim: int = 32, classes: int = 10):
            super().__init__()
            self.stem = nn.Conv2d(3, dim, 4, stride=4)
            self.blocks = nn.Sequential(Block(dim), Block(dim))
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            return self.head(self.blocks(self.stem(x)).mean((2, 3)))

    torch.manual_seed(0)
    return TinyConvNeXt().eval(), (torch.randn(1, 3, 32, 32),)


def main(out_dir: str = os.path.join("build", "demo")) -> int:
    """Run the demo, writing its reports and trace to `out_dir`; returns a process exit
    code (0 when every expectation held)."""
    import explorer

    os.makedirs(out_dir, exist_ok=True)
    model, args = _model()

    print("== 1. torch.export -> IR -> the default pipeline ==")
    start = time.perf_counter()
    trace = explorer.explore(model, args)
    print(f"({time.perf_counter() - start:.1f} s)\n{trace}\n")

    print("== 2. what fold-constant changed ==")
    print(trace["fold-constant"].diff(), "\n")

    print("== 3. every step checked against torch eager ==")
    report = trace.check(args, progress=False)
    print(report, "\n")

    print("== 4. bug 1 of docs/bugs.md: the linear-weight broadcast replica, then fold-constant ==")
    bloat = explorer.explore(model, args, pipeline="replica-linear-broadcast,fold-constant")
    bloat_report = bloat.check(args, progress=False)
    print(bloat)
    for finding in bloat_report.findings:
        step = finding.step
        print(f"  [{finding.kind}] step #{step.index} {step.name}: {finding.message}")
    print()

    html_path = os.path.join(out_dir, "passlens-demo.html")
    trace_path = os.path.join(out_dir, "passlens-demo.passlens")
    bloat_path = os.path.join(out_dir, "passlens-demo-bloat.html")
    try:
        trace.to_html(html_path, report=report)
        print(f"HTML report: {os.path.abspath(html_path)}")
        bloat.to_html(bloat_path, report=bloat_report)
        print(f"HTML report of the weight bloat: {os.path.abspath(bloat_path)}")
    except ImportError as e:  # the widgets package is optional for the compiler core
        print(f"(no HTML report: {e})")
    trace.save(trace_path)
    print(f"saved trace: {os.path.abspath(trace_path)}  (passlens show {trace_path})")

    bloat_found = any(f.kind == "param-bloat" for f in bloat_report.findings)
    ok = report.first_failure is None and bloat_found
    print("\ndemo", "ok" if ok else "FAILED: an expectation did not hold")
    return 0 if ok else 1


def run_notebook(path: str, out_dir: str = os.path.join("build", "demo")) -> int:
    """Run a notebook headless in a fresh kernel (`make demo` runs the tour): the executed
    copy and whatever it writes (the tour's HTML report) land in `out_dir`; prints the outputs
    of the cells tagged `summary` and where everything is. Returns 0, or 1 if a cell failed."""
    from pathlib import Path

    import shutil
    import tempfile

    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    src = Path(path)
    if not src.is_file():
        print(f"passlens demo: no notebook at {src}", file=sys.stderr)
        return 2
    problem = kernel_problem()
    if problem:
        print(f"passlens demo: {problem}", file=sys.stderr)
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(src, as_version=4)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    print(f"running {src} headless ({len(code_cells)} code cells, a fresh kernel)", flush=True)
    done = [0]

    def progress(cell, cell_index, execute_reply, **_):
        if cell.cell_type == "code":
            done[0] += 1
            first = (cell.source.strip().splitlines() or [""])[0][:60]
            print(f"  [{done[0]}/{len(code_cells)}] {first}", flush=True)

    # the kernel talks over local sockets in a private folder, not TCP (which ipykernel warns
    # is unencrypted, and which any local user could connect to)
    sockets = tempfile.mkdtemp(prefix="passlens-kernel-")
    km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k"))
    client = NotebookClient(
        nb,
        km=km,
        timeout=600,
        resources={"metadata": {"path": str(out)}},
        on_cell_executed=progress,
    )
    start, started_at = time.perf_counter(), time.time()
    executed = out / src.name
    try:
        client.execute()
    except CellExecutionError as e:
        nbformat.write(nb, executed)
        print(f"\n{describe_failure(nb, e)}\n(the notebook so far: {executed})", file=sys.stderr)
        return 1
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
        shutil.rmtree(sockets, ignore_errors=True)
    nbformat.write(nb, executed)
    for cell in code_cells:
        if "summary" in cell.metadata.get("tags", []):
            for output in cell.outputs:
                text = output.get("text") or output.get("data", {}).get("text/plain", "")
                if text:
                    print("\n" + text.rstrip())
    print(f"\nran in {time.perf_counter() - start:.1f} s")
    print(f"executed notebook: {executed.resolve()}")
    for report in sorted(out.glob("*.html")):
        print(f"HTML report:       {report.resolve()} ({report.stat().st_size / 1e6:.1f} MB)")
    written = [p for p in sorted(out.iterdir()) if p.is_file() and p.stat().st_mtime >= started_at]
    for other in (p for p in written if p.suffix != ".html" and p.name != executed.name):
        print(f"also written:      {other.resolve()} ({other.stat().st_size / 1e3:.1f} kB)")
    reports = sorted(out.glob("*.html"))
    print("\nopen next:")
    if reports:
        print(f"  {reports[0].resolve().as_uri()}   (the report: open it in a browser)")
    print("  make lab   (JupyterLab on notebooks/: the tour, then one real compiler bug each)")
    return 0


def describe_failure(nb, error: BaseException) -> str:
    """A failed notebook run, for people: which code cell failed, its source, then the error
    with the end of its traceback (without terminal colours). `nb` is the notebook as far as
    it ran; falls back to the error's own text (a timeout, a dead kernel)."""
    import re

    def plain(text: str) -> str:
        return re.sub(r"\x1b\[[0-9;]*m", "", text)

    number = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        number += 1
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                trace = plain("\n".join(output.get("traceback", [])))
                rule = "-" * 60
                return (
                    f"code cell {number} failed: {output.get('ename')}: "
                    f"{plain(str(output.get('evalue')))}\n{rule}\n{cell.source}\n{rule}\n"
                    f"{trace[-2500:]}"
                )
    return plain(str(error))[-3000:]


def kernel_problem(kernel_name: str = "python3") -> str | None:
    """Why the Jupyter kernel `kernel_name` would not run this interpreter (and so not find
    passlens), or None when it would. jupyter_client runs `sys.executable` for a kernelspec
    whose command is a bare `python`/`python3` (the venv's own spec); a spec with another
    absolute path (e.g. a user-level one, which takes precedence) runs that Python instead."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    install = f"{sys.executable} -m ipykernel install --sys-prefix"
    try:
        spec = KernelSpecManager().get_kernel_spec(kernel_name)
    except NoSuchKernel:
        return f"no Jupyter kernel {kernel_name!r}: run {install}"
    exe = spec.argv[0] if spec.argv else ""
    major, minor = sys.version_info[:2]
    if exe in ("python", f"python{major}", f"python{major}.{minor}"):
        return None
    if os.path.abspath(exe) == os.path.abspath(sys.executable):
        return None
    return (
        f"the Jupyter kernel {kernel_name!r} ({spec.resource_dir}) runs {exe}, not "
        f"{sys.executable}: remove that kernelspec, or run {install}"
    )


if __name__ == "__main__":
    sys.exit(main())
