"""What two of the suite's slowest tests cost, before and after they were made cheaper (the
session after issue 45; the assertions are the same):

- notebooks: each sabotage run of tests/test_notebooks.py (a detector broken, the notebook must
  fail at a named line), run whole and cut to the failing cell's last input
  (`cut_to_the_failing_cell`): wall time and the kernel's CPU time (the kernel is a child
  process: its CPU is what `resource.RUSAGE_CHILDREN` gains once it has exited);
- zoo: the transformers zoo's ONNX export (`hf_zoo.export_onnx`, torch's exporter) beside the
  copy out of pytest's cache the ONNX-path test now makes on a warm run, per model.

    PYTHONPATH=. .venv/bin/python bench/suite_costs.py [--notebooks] [--zoo bart distilbert ...]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def notebooks() -> None:
    import nbformat
    from nbformat.v4 import new_code_cell

    from tests.test_notebooks import NOTEBOOKS, SABOTAGE, _execute, cut_to_the_failing_cell

    totals = {"whole": 0.0, "cut": 0.0}
    for name in sorted(SABOTAGE):
        sabotage, failing = SABOTAGE[name]
        for label in ("whole", "cut"):
            nb = nbformat.read(NOTEBOOKS / name, as_version=4)
            if label == "cut":
                nb = cut_to_the_failing_cell(nb, failing)
            nb.cells.insert(0, new_code_cell(sabotage))
            cpu, start = _children_cpu(), time.perf_counter()
            failure = _execute(nb, Path(tempfile.mkdtemp(prefix="passlens-cost-")))
            wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
            totals[label] += cpu
            held = failure is not None and failing in failure
            print(
                f"{name} {label:5}: wall {wall:5.1f} s, kernel CPU {cpu:5.1f} s, "
                f"fails at the named line: {held}",
                flush=True,
            )
    print(f"kernel CPU over the {len(SABOTAGE)} runs: whole {totals['whole']:.1f} s, "
          f"cut {totals['cut']:.1f} s")  # fmt: skip


def zoo(names: list[str]) -> None:
    from tests.compiler.frontend import hf_zoo

    for name in names:
        model = hf_zoo.model(name)
        folder = Path(tempfile.mkdtemp(prefix="passlens-cost-"))
        start = time.perf_counter()
        hf_zoo.export_onnx(name, folder / f"{name}.onnx", built=model)
        exported = time.perf_counter() - start
        start = time.perf_counter()
        hf_zoo.export_key(name, model)
        again = Path(tempfile.mkdtemp(prefix="passlens-cost-"))
        for f in folder.iterdir():  # what a warm run does: the key, then a copy
            shutil.copyfile(f, again / f.name)
        copied = time.perf_counter() - start
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(
            f"{name}: torch.onnx.export {exported:.2f} s; key + copy from the cache "
            f"{copied:.3f} s ({size / 1e6:.2f} MB)",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notebooks", action="store_true")
    ap.add_argument("--zoo", nargs="*", default=None)
    args = ap.parse_args()
    if args.notebooks:
        notebooks()
    if args.zoo:
        zoo(args.zoo)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
