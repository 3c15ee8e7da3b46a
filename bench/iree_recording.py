"""What recording IREE's iree-compile costs (issue 46 item 6), for the tests' MLP (8 -> 16 -> 4,
tests/explorer/iree/test_iree.py) and transformer block (layer norm, attention, MLP;
tests/explorer/iree/test_iree_block.py; width 16, and wider with `--widths`).

For each model, `--reps` times in turn:

- `explore(model, args, compiler="iree")` to the end (a .vmfb): the torch export with
  iree-turbine (weights externalized to an .irpa), iree-compile as a child printing the module
  after every pass (one thread: `--mlir-disable-threading`), the stream read into steps;
- one plain `iree-compile` of the same MLIR (the import step's text, as the recording gives
  it to iree-compile), with the same target flags, threaded (its default), printing nothing;
- iree-compile with the recording's flags, its stream written to a file nothing reads (how much
  of the recording is iree-compile printing, how much is reading the stream).

Once, for comparison: the plain iree-compile on one thread, and iree-compile printing only the
passes that changed the module (`--mlir-print-ir-after-change`; passlens records every pass).

Then, from one recording: its steps (phases, passes, how many changed the module), the dumps
iree-compile printed (the passes' own, the const-eval JIT's dropped ones, the phase markers),
the stream's bytes, the largest dump, the distinct modules kept, and the trace saved
(`trace.save`, every step's graph and text: its bytes and the time to save) against the
weights' bytes (the parameters' own; the .irpa file). Saving parses every distinct module into
its graph, so the whole trace is saved only while its modules hold at most `--full-save-mib`
of MLIR; a trace recorded to `--save-phase` is saved too.

    .venv/bin/python bench/iree_recording.py [--reps 3] [--widths 16,256]
        [--save-phase executable-configurations] [--full-save-mib 16]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def models(widths: list[int]):
    """(label, model, example args) of each model measured."""
    import torch

    from tests.explorer.iree.test_iree import MLP
    from tests.explorer.iree.test_iree_block import HEADS, TOKENS, Block

    torch.manual_seed(0)
    yield "MLP 8->16->4", MLP().eval(), (torch.randn(2, 8),)
    for w in widths:
        torch.manual_seed(0)
        yield f"transformer block, width {w}", Block(w, HEADS).eval(), (torch.randn(1, TOKENS, w),)


def plain_compile(mlir_path: str, out: str, extra: tuple[str, ...] = ()) -> float:
    """One iree-compile of ``mlir_path`` to a .vmfb with the recording's target flags, its
    printing flags left out (threads on, unless ``extra`` says otherwise): seconds."""
    from explorer.iree.record import compile_flags, iree_compile_path

    flags = [f for f in compile_flags("end", "llvm-cpu", ()) if not f.startswith("--mlir-")]
    flags += extra
    start = time.perf_counter()
    done = subprocess.run(
        [iree_compile_path(), mlir_path, *flags, "-o", out],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"plain iree-compile failed: {done.stderr[-2000:]}")
    return seconds


def printing_compile(mlir_path: str, tmp: str, extra: tuple[str, ...] = ()) -> tuple[float, int]:
    """iree-compile with the recording's own flags (every pass printed, one thread), its
    stream written to a file that nothing reads: (seconds, the stream's bytes)."""
    from explorer.iree.record import compile_flags, iree_compile_path

    stream = os.path.join(tmp, "stream.txt")
    cmd = [
        iree_compile_path(),
        mlir_path,
        *compile_flags("end", "llvm-cpu", ()),
        *extra,
        f"--dump-compilation-phases-to={os.path.join(tmp, 'phases')}",
        "-o",
        os.path.join(tmp, "printed.vmfb"),
    ]
    with open(stream, "wb") as f:
        start = time.perf_counter()
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=f, timeout=3600)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"iree-compile printing every pass failed (exit {done.returncode})")
    size = os.path.getsize(stream)
    os.remove(stream)
    return seconds, size


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


def measure(label, model, args, reps: int, tmp: str, save_phase: str, full_save_mib: float):
    import explorer

    print(f"== {label}")
    record, plain, child, printing = [], [], [], []
    trace = None
    for k in range(reps):
        start = time.perf_counter()
        trace = explorer.explore(model, args, compiler="iree", progress=False)
        record.append(time.perf_counter() - start)
        child.append(trace.iree.seconds)
        if k == 0:
            src = os.path.join(tmp, "model.mlir")
            with open(src, "w", encoding="utf-8") as f:
                f.write(trace.steps[0].module.text())
        plain.append(plain_compile(src, os.path.join(tmp, "plain.vmfb")))
        printing.append(printing_compile(src, tmp)[0])
    med = statistics.median
    print(
        f"   plain iree-compile of the same MLIR (threaded): median {med(plain):.2f} s "
        f"(min {min(plain):.2f}, {reps} runs)"
    )
    print(
        f"   explore(compiler='iree') to the end:          median {med(record):.2f} s "
        f"(min {min(record):.2f}) = {med(record) / med(plain):.1f}x"
    )
    print(
        f"     of which iree-compile printing every pass (one thread): median {med(child):.2f} s"
        f" = {med(child) / med(plain):.1f}x; the rest: "
        f"{med(record) - med(child):.2f} s (the export, the import, building the steps)"
    )
    print(
        f"     iree-compile printing every pass into a file nothing reads: median "
        f"{med(printing):.2f} s = {med(printing) / med(plain):.1f}x (the child's time above, less "
        "this: its wait on passlens reading the stream)"
    )
    one = plain_compile(src, os.path.join(tmp, "plain.vmfb"), ("--mlir-disable-threading",))
    print(
        f"     for comparison, the plain iree-compile on one thread (--mlir-disable-threading): "
        f"{one:.2f} s = {one / med(plain):.1f}x"
    )
    changed_s, changed_bytes = printing_compile(src, tmp, ("--mlir-print-ir-after-change",))
    print(
        f"     for comparison, printing only the passes that changed the module "
        f"(--mlir-print-ir-after-change, not what passlens records): {changed_s:.2f} s = "
        f"{changed_s / med(plain):.1f}x, a {mib(changed_bytes)} stream"
    )
    steps = trace.steps
    phases = [s for s in steps if s.kind == "pass" and s.depth == 0]
    passes = [s for s in steps if s.kind == "pass" and s.depth == 1]
    changed = sum(s.status == "changed" for s in passes)
    printed = len(passes) + trace.iree.dropped + len(phases)
    print(
        f"   dumps printed by iree-compile: {printed:,} ({len(passes):,} passes, "
        f"{trace.iree.dropped:,} of the const-eval JIT dropped, {len(phases)} phase markers)"
    )
    print(
        f"   steps: {len(steps):,} (the import, {len(phases)} phases, {len(passes):,} passes; "
        f"{changed} passes changed the module)"
    )
    kept = {id(s.module): len(s.module.text()) for s in steps if s.module is not None}
    print(
        f"   stream: {mib(trace.iree.stream_bytes)} ({trace.iree.stream_bytes:,} bytes); "
        f"largest dump {mib(max(kept.values()))}; {len(kept)} distinct modules kept "
        f"(an unchanged pass shares its input's), {mib(sum(kept.values()))} of MLIR"
    )
    params = steps[0].graph.param_bytes
    irpa = len(trace.iree.irpa or b"")
    print(
        f"   weights: {mib(params)} of parameters ({params:,} bytes), the .irpa file "
        f"{mib(irpa)}; stream / weights {trace.iree.stream_bytes / params:,.0f}x"
    )
    if sum(kept.values()) <= full_save_mib * 2**20:
        save(trace, "end", params, tmp)
    else:  # saving parses every distinct module's MLIR into its graph
        print(
            f"   saved trace to the end: skipped ({mib(sum(kept.values()))} of MLIR to parse, over "
            f"--full-save-mib {full_save_mib})"
        )
    if save_phase != "end":
        part = explorer.explore(model, args, compiler="iree", pipeline=save_phase, progress=False)
        save(part, save_phase, params, tmp)


def save(trace, phase: str, params: int, tmp: str) -> None:
    """Save ``trace`` (every step's graph and text): its bytes and the time it took."""
    path = os.path.join(tmp, "trace.passlens")
    start = time.perf_counter()
    saved = trace.save(path) or path
    seconds = time.perf_counter() - start
    size = os.path.getsize(saved)
    print(
        f"   saved trace to {phase} ({len(trace.steps):,} steps): {mib(size)} ({size:,} bytes) "
        f"in {seconds:.1f} s = {size / params:,.1f}x the weights"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--widths", default="16", help="the block's widths, comma-separated")
    ap.add_argument(
        "--save-phase",
        default="executable-configurations",
        help="also record to this phase and save that trace (default: %(default)s, the last "
        "phase a check compiles from)",
    )
    ap.add_argument(
        "--full-save-mib",
        type=float,
        default=16.0,
        help="save the whole trace only when its distinct modules hold at most this much MLIR",
    )
    a = ap.parse_args()
    from importlib.metadata import version

    import torch

    widths = [int(w) for w in a.widths.split(",") if w.strip()]
    print(
        f"command: .venv/bin/python bench/iree_recording.py --reps {a.reps} --widths {a.widths}"
        f" --save-phase {a.save_phase} --full-save-mib {a.full_save_mib:g}"
    )
    print(
        f"iree-base-compiler {version('iree-base-compiler')}, iree-turbine "
        f"{version('iree-turbine')}, torch {torch.__version__}, python "
        f"{platform.python_version()}, {os.cpu_count()} cpus, "
        f"load {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    with tempfile.TemporaryDirectory(prefix="passlens-bench-iree-") as tmp:
        for label, model, args in models(widths):
            measure(label, model, args, a.reps, tmp, a.save_phase, a.full_save_mib)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
