"""Coverage of Hugging Face transformers models on both paths (issue #13): a table of model x
path, ``ok`` or the reason it is not, with the time each took.

    .venv/bin/python bench/transformers_zoo.py [NAME ...]

The models are tests/compiler/frontend/hf_zoo.py's (small random configs built in code, no
download).
Paths, each with a dynamic batch (and sequence length for text models), checked at the
example size (batch 2, seq 8) and at batch 3, seq 5:

- ``torch``: ``explorer.explore(model, args, "default,legalize-ops,codegen",
  dynamic_shapes=...)``, ``trace.check`` clean at both sizes, the compiled executable within
  1e-4 of eager torch;
- ``onnx``: ``torch.onnx.export`` (the exporter hf_zoo.EXPORTER names) with the same dynamic
  dims, then ``explorer.explore(path, args, "default,legalize-ops,codegen")``, ``trace.check``
  clean against onnxruntime at both sizes, the compiled executable within 1e-4 of eager torch.

Each path's ``opaque`` column is how many opaque ops the import kept (ops without a converter,
run by torch or onnxruntime: ``trace.opaque_ops()``, the count the explore summary gives),
with the first of their targets.

Prints a Markdown table (for BENCHMARKS.md) and the totals.
"""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OTHER = dict(batch=3, seq=5)


def _problem(trace, sizes, model, final_run) -> str:
    """'' when the trace is clean at every size and matches eager; else the first problem."""
    import torch

    if trace.failure is not None:
        return f"pass failed: {trace.failure.name}: {str(trace.failure.error)[:120]}"
    for args in sizes:
        report = trace.check(args, progress=False)
        bad = [f for f in report.findings if f.is_failure]
        if bad:
            return f"{len(bad)} finding(s), first: {str(bad[0])[:140]}"
    args = sizes[-1]
    with torch.no_grad():
        expected = model(*args).numpy()
    (got,) = final_run(*[a.numpy() for a in args])
    err = float(abs(got - expected).max())
    if got.shape != expected.shape or err > 1e-4 * max(1.0, float(abs(expected).max())):
        return f"differs from eager torch by {err:.2e}"
    return ""


OPAQUE_NAMED = 2  # the opaque targets a cell names


def opaque_cell(trace) -> str:
    """How many opaque ops the trace's import kept, and the first targets: ``0``, ``3
    (aten.sort x2, aten.histc)``."""
    rows = trace.opaque_ops()
    total = sum(r["count"] for r in rows)
    if not total:
        return "0"
    named = ", ".join(
        r["target"] + (f" x{r['count']}" if r["count"] > 1 else "") for r in rows[:OPAQUE_NAMED]
    )
    more = f", {len(rows) - OPAQUE_NAMED} more" if len(rows) > OPAQUE_NAMED else ""
    return f"{total} ({named}{more})"


def run_torch(name: str, opaque: list) -> str:
    import explorer
    from tests.compiler.frontend import hf_zoo

    model = hf_zoo.model(name)
    args = hf_zoo.inputs(name)
    trace = explorer.explore(
        model, args, "default,legalize-ops,codegen", dynamic_shapes=hf_zoo.dynamic_shapes(name)
    )
    opaque.append(opaque_cell(trace))
    sizes = [args, hf_zoo.inputs(name, **OTHER)]
    return _problem(trace, sizes, model, lambda *a: trace["codegen"].executable()(*a))


def run_onnx(name: str, tmp: Path, opaque: list) -> str:
    import explorer
    from tests.compiler.frontend import hf_zoo

    if name in hf_zoo.NO_ONNX:  # neither exporter succeeds (tried: a minute of export each)
        return f"not exported: {hf_zoo.NO_ONNX[name]}"
    path = tmp / f"{name}.onnx"
    hf_zoo.export_onnx(name, path)
    args = hf_zoo.inputs(name)
    trace = explorer.explore(str(path), args, "default,legalize-ops,codegen")
    opaque.append(opaque_cell(trace))
    sizes = [args, hf_zoo.inputs(name, **OTHER)]
    return _problem(trace, sizes, hf_zoo.model(name), lambda *a: trace["codegen"].executable()(*a))


def _cell(fn, *args) -> tuple[str, str, float]:
    """The path's status (ok or why not), its opaque-op count ("-" when it made no trace) and
    the seconds it took."""
    start = time.perf_counter()
    opaque: list[str] = []
    try:
        problem = fn(*args, opaque)
    except Exception as e:  # the table records why, and goes on
        problem = f"{type(e).__name__}: {str(e).splitlines()[0][:140]}"
    seconds = time.perf_counter() - start
    status = "ok" if not problem else problem.replace("|", "/")
    return status, (opaque[0] if opaque else "-").replace("|", "/"), seconds


def main(names: list[str]) -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    from tests.compiler.frontend import hf_zoo

    names = names or hf_zoo.ZOO
    head = "| model | family | torch.export (dynamic, compiled) | opaque | s |"
    print(head + " ONNX (dynamic, compiled; exporter) | opaque | s |")
    print("|---|---|---|---:|---:|---|---:|---:|")
    ok = {"torch": 0, "onnx": 0}
    clean = {"torch": 0, "onnx": 0}  # no opaque op kept
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            t, t_opaque, ts = _cell(run_torch, name)
            o, o_opaque, os_ = _cell(run_onnx, name, Path(tmp))
            ok["torch"] += t == "ok"
            ok["onnx"] += o == "ok"
            clean["torch"] += t_opaque == "0"
            clean["onnx"] += o_opaque == "0"
            exporter = hf_zoo.EXPORTER.get(name, "dynamo")
            print(
                f"| {name} | {hf_zoo.FAMILY[name]} | {t} | {t_opaque} | {ts:.1f} "
                f"| {o} ({exporter}) | {o_opaque} | {os_:.1f} |",
                flush=True,
            )
    n = len(names)
    print(f"\ntorch.export path: {ok['torch']}/{n} ok; ONNX path: {ok['onnx']}/{n} ok")
    print(
        f"no opaque op kept: torch.export path {clean['torch']}/{n}, ONNX path {clean['onnx']}/{n}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
