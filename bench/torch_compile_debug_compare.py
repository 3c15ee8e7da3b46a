"""What torch.compile's own debugging output shows for one model, beside what passlens shows.

The model: the 2-layer GPT-2 of bench/inductor_overhead.py (``transformers``, random weights,
hidden 128, input 1 x 32 tokens, logits out), compiled with Inductor on the CPU with a wrong
custom post-grad pass installed (``SplitVarMean``: every ``aten.var_mean`` split into ``var`` +
``mean``, ``correction=0`` dropped: notebook 08's pass), so that each tool is asked about a real
divergence.

1. ``TORCH_COMPILE_DEBUG=1`` (with ``TORCH_COMPILE_DEBUG_DIR``) and ``TORCH_TRACE`` set, in a
   child process (both are read when torch is imported): the debug folder's files, their sizes
   and lines, what they say about where each node comes from, about the pattern matcher and
   about the custom pass;
2. tlparse on the ``TORCH_TRACE`` log, when a ``tlparse`` binary is given (``--tlparse PATH``;
   it is on PyPI as ``tlparse``: ``python -m venv /tmp/tlparse-venv && /tmp/tlparse-venv/bin/pip
   install tlparse``; not a passlens dependency): the files it writes and the graphs among them;
3. passlens: ``explore(..., compiler="inductor")``, ``check``, ``reduce`` on the same model and
   pass.

    .venv/bin/python bench/torch_compile_debug_compare.py [--tlparse /tmp/tlparse-venv/bin/tlparse]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def split_var_mean():
    """Notebook 08's wrong custom post-grad pass (an instance): the one tests/explorer/
    test_inductor.py catches (its class name holds ``SplitVarMean``, which the debug output is
    searched for)."""
    from tests.explorer.inductor.test_inductor import SplitVarMeanForgetsCorrection

    return SplitVarMeanForgetsCorrection()


def model_and_input():
    from inductor_overhead import Logits, make_model

    model, ids = make_model("gpt2", 2)
    return Logits(model).eval(), ids


def child() -> None:
    """Compile once with the environment the parent set (the debug dump and the trace log)."""
    import torch
    import torch._inductor.config as inductor_config

    warnings.filterwarnings("ignore")
    model, ids = model_and_input()
    options = {
        "fx_graph_cache": False,
        "post_grad_custom_post_pass": split_var_mean(),
    }
    start = time.perf_counter()
    with inductor_config.patch(options), torch.no_grad():
        torch.compile(model)(ids)
    print(json.dumps({"seconds": time.perf_counter() - start}))


def describe_dump(folder: Path) -> dict:
    """The debug folder's files (name, bytes, lines) and what the graph files carry."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    out = {"files": [], "bytes": 0}
    for p in files:
        text = p.read_text(errors="replace")
        out["files"].append((str(p.relative_to(folder)), p.stat().st_size, text.count("\n")))
        out["bytes"] += p.stat().st_size
    graph_dir = next((p.parent for p in files if p.name == "fx_graph_readable.py"), None)
    if graph_dir is not None:
        readable = (graph_dir / "fx_graph_readable.py").read_text()
        transformed = (graph_dir / "fx_graph_transformed.py").read_text()
        out["file_comments"] = readable.count("# File:")
        out["module_paths"] = len(re.findall(r"transformer\.h\.\d", readable))
        comments = Counter(
            line.strip() for line in readable.splitlines() if line.strip().startswith("# File:")
        )
        out["file_comments_repeated"] = sum(1 for c in comments.values() if c > 1)
        ln_1 = [c for c in comments if "self.ln_1(" in c]
        out["ln_1_comment"] = (
            (re.sub(r"^# File: .*/", "# File: ", ln_1[0]), comments[ln_1[0]]) if ln_1 else None
        )
        out["var_mean_before"] = readable.count("aten.var_mean.correction(")
        out["var_mean_after"] = transformed.count("aten.var_mean.correction(")
        out["var_after"] = transformed.count("aten.var.correction(")
    every = "\n".join(p.read_text(errors="replace") for p in files)
    out["custom_pass_named"] = every.count("SplitVarMean")
    out["pattern_words"] = len(re.findall(r"pattern", every, re.IGNORECASE))
    return out


def run_tlparse(binary: str, trace_dir: Path, out: Path) -> dict:
    logs = sorted(trace_dir.glob("*.log"))
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    start = time.perf_counter()
    subprocess.run(
        [binary, str(logs[0]), "-o", str(out), "--no-browser", "--overwrite"],
        check=True,
        capture_output=True,
    )
    seconds = time.perf_counter() - start
    files = sorted(p for p in out.rglob("*") if p.is_file())
    graphs = sorted(
        re.sub(r"_\d+\.txt$", "", p.name)
        for p in files
        if p.suffix == ".txt" and "graph" in p.name and p.parent.name != "payloads"
    )
    every = "\n".join(p.read_text(errors="replace") for p in files if p.suffix in (".txt", ".html"))
    return {
        "version": version,
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "graphs": graphs,
        "custom_pass_named": every.count("SplitVarMean"),
        "pattern_words": len(re.findall(r"pattern", every, re.IGNORECASE)),
        "seconds": seconds,
    }


def main() -> None:
    """Print the figures and facts."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tlparse", help="a tlparse binary (pip install tlparse, in its own venv)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.child:
        child()
        return
    warnings.filterwarnings("ignore")
    print(f"command: {shlex.join([os.path.basename(sys.executable), *sys.argv])}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = dict(
            os.environ,
            TORCH_COMPILE_DEBUG="1",
            TORCH_COMPILE_DEBUG_DIR=str(tmp / "debug"),
            TORCH_TRACE=str(tmp / "trace"),
            PYTHONPATH=str(ROOT),
        )
        done = subprocess.run(
            [sys.executable, __file__, "--child"], env=env, capture_output=True, text=True
        )
        if done.returncode:
            sys.exit(f"the debug compile failed:\n{done.stderr[-3000:]}")
        seconds = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
        dump = describe_dump(tmp / "debug")
        print("\n== TORCH_COMPILE_DEBUG=1 (and TORCH_TRACE) ==")
        print(f"compile with the dump on: {seconds:.1f} s")
        print(f"{len(dump['files'])} files, {dump['bytes'] / 1e3:.0f} kB:")
        for name, size, lines in dump["files"]:
            short = re.sub(r"^torch_compile_debug/run_[^/]+/", "", name)
            print(f"  {short:78} {size / 1e3:7.1f} kB {lines:6} lines")
        print(f"'# File:' source comments in fx_graph_readable.py: {dump.get('file_comments')}")
        print(f"module paths (transformer.h.N) in fx_graph_readable.py: {dump.get('module_paths')}")
        print(
            f"'# File:' comments that head more than one place in the graph: "
            f"{dump.get('file_comments_repeated')}; e.g. {dump.get('ln_1_comment')}"
        )
        print(
            f"var_mean in fx_graph_readable.py / fx_graph_transformed.py: "
            f"{dump.get('var_mean_before')} / {dump.get('var_mean_after')}; aten.var in "
            f"transformed: {dump.get('var_after')}"
        )
        print(f"the custom pass named anywhere in the dump: {dump['custom_pass_named']} time(s)")
        print(f"the word 'pattern' anywhere in the dump: {dump['pattern_words']} time(s)")

        print("\n== tlparse ==")
        if a.tlparse:
            tl = run_tlparse(a.tlparse, tmp / "trace", tmp / "tlparse")
            print(
                f"{tl['version']}: {tl['files']} files, {tl['bytes'] / 1e3:.0f} kB in "
                f"{tl['seconds']:.1f} s"
            )
            print(f"graph texts ({len(tl['graphs'])}): {', '.join(tl['graphs'])}")
            print(f"the custom pass named anywhere in its pages: {tl['custom_pass_named']} time(s)")
            print(f"the word 'pattern' anywhere in its pages: {tl['pattern_words']} time(s)")
        else:
            print("not run (give --tlparse PATH)")

    print("\n== passlens ==")
    import explorer

    model, ids = model_and_input()
    start = time.perf_counter()
    trace = explorer.explore(
        model,
        (ids,),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_post_pass": split_var_mean()},
    )
    seconds = time.perf_counter() - start
    passes = [s for s in trace.steps if s.kind == "pass" and not s.children]
    changed = [s for s in passes if s.changed]
    patterns = Counter(s.name for s in trace.steps if s.name.startswith("pattern "))
    graphs = len({id(s.module) for s in trace.steps})
    print(
        f"explore: {seconds:.1f} s, {len(trace.steps)} steps ({len(passes)} pass applications, "
        f"{len(changed)} changed the graph: {', '.join(s.name for s in changed)}), "
        f"{graphs} distinct graphs kept"
    )
    print(f"pattern replacements as steps: {dict(patterns)}")
    node = next(
        n for n in trace["aot-autograd"].graph.nodes.values() if n.op.startswith("aten.addmm")
    )
    print(
        f"a node's provenance: {node.label} ({node.op}) -> {node.group}, "
        f"{Path(node.provenance.get('file', '?')).name}"
    )
    start = time.perf_counter()
    report = trace.check((ids,), progress=False)
    first = report.first_failure
    print(f"check: {time.perf_counter() - start:.1f} s; {report.headline()}")
    if first is not None:
        print(
            f"first finding: {first.kind} at #{first.step.index} {first.step.name}, "
            f"nodes {[n.name for n in first.nodes]}"
        )
        start = time.perf_counter()
        reduction = report.reduce(budget=60)
        print(f"reduce: {time.perf_counter() - start:.1f} s; {reduction}")


if __name__ == "__main__":
    main()
