"""What recording ONNX Runtime's graph transformers costs, and what it shows beside ORT's own
means (issue #41).

The model is a transformers ``BertModel`` built in code from a small config (4 layers, hidden
256, 4 heads, intermediate 1024, BERT's vocabulary of 30,522; random weights), exported with
``torch.onnx.export(dynamo=True)`` on token ids of length 128.

1. Cost: the ORT stage of ``explore(..., compiler="onnxruntime")`` (ORT's transformers rebuilt
   one application at a time, each step recorded with its rewrites) against one
   ``InferenceSession`` creation at ``ORT_ENABLE_ALL`` on the same model (the stage's input:
   the model after onnxscript's optimizer), medians of ``--reps`` runs of each, in turn; the
   stage again with its one-go session made from the model's bytes with default options (a
   user's session, ``from_bytes``: what the stage did before) and whether it gives the same
   steps; then the whole explore (export, onnxscript, ORT) once.
2. What each shows: ORT's verbose log of one session (lines, transformer applications named,
   those that changed the model) and ``optimized_model_filepath`` (one model: the end state),
   beside passlens's trace of the same model (ORT steps, each a graph with a diff and
   rewrites, and the check's numbers per step).

    .venv/bin/python bench/ort_recording.py [--reps 5] [--layers 4] [--no-check]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def bert(layers: int, hidden: int, seq: int):
    """A transformers BertModel of random weights and its token ids, wrapped to return the
    last hidden state."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=4 * hidden,
        max_position_embeddings=512,
    )
    model = transformers.BertModel(config).eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.bert = m

        def forward(self, ids):
            return self.bert(input_ids=ids).last_hidden_state

    return LastHidden(model).eval(), (torch.randint(0, 30522, (1, seq)),)


def median_time(fn, reps: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--no-check", action="store_true", help="leave out the check's numbers")
    args = parser.parse_args()

    import onnxruntime as ort
    import onnxscript
    import torch

    import explorer
    from explorer.onnxruntime.module import ONNXState
    from explorer.onnxruntime.ort_steps import (
        captured_stderr,
        optimized,
        read_log,
        run_ort_stage,
        session,
        session_threads,
        write_source,
    )
    from explorer.onnxruntime.pipeline import Stage
    from explorer.onnxruntime.record import Recorder, run_stage

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# python bench/ort_recording.py --reps {args.reps} --layers {args.layers}")
    print(
        f"# onnxruntime {ort.__version__}, onnxscript {onnxscript.__version__}, torch "
        f"{torch.__version__}, python {platform.python_version()}, {os.cpu_count()} cpus, "
        f"load {load:.1f}"
    )
    model, inputs = bert(args.layers, args.hidden, args.seq)
    params = sum(p.numel() for p in model.parameters())

    start = time.perf_counter()
    trace = explorer.explore(model, inputs, compiler="onnxruntime", progress=False)
    whole = time.perf_counter() - start
    stage = next(s for s in trace.steps if s.name.startswith("ort"))
    stage_input = stage.before.proto()
    data = stage_input.SerializeToString()
    print(
        f"model: transformers BertModel, {args.layers} layers, hidden {args.hidden}, "
        f"{params / 1e6:.1f}M parameters, ids 1 x {args.seq}; ORT stage input "
        f"{len(stage_input.graph.node)} nodes, {len(data) / 1e6:.1f} MB"
    )

    # 1. the cost

    def record_stage(**options):
        state = ONNXState()  # what the stage before hands on (not timed)
        before = state.wrap(stage_input)
        rec = Recorder(state)
        rec.open_stage("ort:all", before)
        start, cpu = time.perf_counter(), time.process_time()
        _, run = run_stage(rec, Stage("ort", "all"), stage_input, [], options)
        rec.close_stage()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        steps = [(s.pass_name, s.options["log_position"]) for s in rec.snapshots[1:]]
        return seconds, run, steps, cpu

    def one_session():
        start, cpu = time.perf_counter(), time.process_time()
        session(data, "all")
        return time.perf_counter() - start, time.process_time() - cpu

    ones, records, cpus, rebuilds = [], [], ([], []), []
    for _ in range(args.reps):  # in turn, so that both see the same load of the machine
        seconds, cpu = one_session()
        ones.append(seconds)
        cpus[0].append(cpu)
        seconds, _, _, cpu = record_stage()
        records.append(seconds)
        cpus[1].append(cpu)
        rebuilds.append(median_time(lambda: run_ort_stage(stage_input, "all"), 1)[0])
    one, recorded = statistics.median(ones), statistics.median(records)
    cpu_one, cpu_stage = statistics.median(cpus[0]), statistics.median(cpus[1])
    run = trace.onnxruntime
    sessions = 2 + len(_disabled_sets(run))
    print(f"one InferenceSession at ORT_ENABLE_ALL: median {one:.3f} s (min {min(ones):.3f})")
    print(
        f"ORT stage recorded ({len(run.steps)} steps of {sum(m for _, m in run.applied)} "
        f"applications that changed the model, {sessions} sessions): median {recorded:.3f} s "
        f"(min {min(records):.3f})"
    )
    rebuild = statistics.median(rebuilds)
    print(
        f"  ORT's sessions and the input's file alone (run_ort_stage, nothing "
        f"recorded; {session_threads()} sessions at once): median {rebuild:.3f} s (the steps "
        f"are recorded while later sessions are made)"
    )
    with tempfile.TemporaryDirectory() as d:
        start = time.perf_counter()
        path, _ = write_source(stage_input, d)
        written = time.perf_counter() - start
        light, _ = median_time(lambda: optimized(path, "all", ["NoSuchTransformer"], d), args.reps)
    print(
        f"  of which one rebuilt step's session (the input's weights in a file ORT maps, one "
        f"thread, the model written): median {light:.3f} s; the input's file written once: "
        f"{written:.3f} s"
    )
    ratio = recorded / one
    verdict = "within" if ratio <= 3 else "OVER"
    print(f"ratio ORT stage / one session: {ratio:.1f}x (goal <= 3x: {verdict})")
    print(
        f"  CPU time of this process (all its threads), medians: one session {cpu_one:.3f} s, "
        f"the stage {cpu_stage:.3f} s ({cpu_stage / cpu_one:.1f}x)"
    )
    # the one-go check as a user's session makes it (the model's bytes, default options)
    _, mapped_run, mapped_steps, _ = record_stage()
    plain = [record_stage(from_bytes=True) for _ in range(min(3, args.reps))]
    seconds = statistics.median(p[0] for p in plain)
    _, plain_run, plain_steps, _ = plain[0]
    same = plain_steps == mapped_steps and plain_run.applied == mapped_run.applied
    print(
        f"  with the one-go session from the model's bytes (default options, a user's session) "
        f"instead: median {seconds:.3f} s ({seconds / one:.1f}x); its one-go model "
        f"{'equals' if plain_run.equal else 'DIFFERS from'} the last step, the log and steps "
        f"{'are the same' if same else 'DIFFER'}"
    )
    print(
        f"whole explore (export {trace.steps[0].seconds:.2f} s, onnxscript "
        f"{trace.steps[1].seconds:.2f} s, ORT {stage.seconds:.2f} s): {whole:.2f} s = "
        f"{whole / one:.0f}x one session"
    )

    # 2. what ORT shows
    with tempfile.TemporaryDirectory() as d, captured_stderr() as log:
        out = os.path.join(d, "optimized.onnx")
        session(data, "all", verbose=True, out=out)
        import onnx

        final = onnx.load(out)
    lines = log[0].splitlines()
    applied = read_log(log[0])
    named = {n for n, _ in applied}
    changed = [n for n, modified in applied if modified]
    print("ORT's own output for one session at ORT_ENABLE_ALL:")
    print(
        f"  verbose log: {len(lines)} lines; {len(applied)} transformer applications of "
        f"{len(named)} transformers named; {len(changed)} changed the model: "
        f"{', '.join(changed)}"
    )
    print(
        f"  optimized_model_filepath: one model, the end state ({len(stage_input.graph.node)} "
        f"-> {len(final.graph.node)} nodes); no intermediate graph, no diff, no numbers"
    )

    # 3. what passlens shows
    ort_steps = [trace.steps[c] for c in stage.children]
    rewrites = sum(len(s.rewrites) for s in ort_steps)
    nodes = " -> ".join(str(s.module.node_count) for s in [stage.previous, *ort_steps])
    print("passlens for the same model:")
    print(
        f"  {len(trace.steps)} steps (export, {len(trace.steps[1].children)} onnxscript, "
        f"{len(ort_steps)} ORT: {', '.join(s.name for s in ort_steps)}); ORT nodes {nodes}"
    )
    print(
        f"  each step a graph, a diff and its rewrites ({rewrites} ORT rewrites named by "
        f"transformer, each with the nodes it matched and made); the one-go model "
        f"{'equals' if run.equal else 'DIFFERS from'} the last step"
    )
    if not args.no_check:
        start = time.perf_counter()
        report = trace.check()
        checked = sum(1 for r in report.steps if r.max_abs is not None)
        worst = max((r.max_abs or 0.0) for r in report.steps)
        print(
            f"  check: {checked} steps run in onnxruntime (optimizations off) against torch, "
            f"per node by value name; worst max abs error {worst:.2e}; "
            f"{len(report.findings)} findings; {time.perf_counter() - start:.1f} s"
        )
    return 0


def _disabled_sets(run) -> list[list[str]]:
    """The transformer sets the rebuilt sessions disabled, one session each (an application
    that disables the same set as the one before it makes none)."""
    from explorer.onnxruntime.ort_steps import disabled_after

    sets: list[list[str]] = []
    for i, (_, modified) in enumerate(run.applied):
        if modified:
            d = disabled_after(run.applied, i)
            if not sets or d != sets[-1]:
                sets.append(d)
    return sets


if __name__ == "__main__":
    sys.exit(main())
