"""ONNX Runtime's transformers rebuilt one application at a time: the part that runs
onnxruntime, with nothing of passlens imported, so that it can also run as a script in a child
process under a memory limit (a model from a file is untrusted: its optimization may ask for any
amount of memory, and a failing allocation in C++ must not take the user's kernel down).

    python -I ort_child.py FOLDER LEVEL LIMIT    # FOLDER/model.onnx in; result.json and
                                                 # step files out

See explorer/onnxruntime/ort_steps.py for what the steps are and why they are made so.
"""

import contextlib
import json
import os
import re
import sys
import tempfile
import time

APPLIED = re.compile(r"GraphTransformer (\S{1,200}) modified: ([01])")
MAX_LOG_BYTES = 64 << 20
LEVELS = ("off", "basic", "extended", "all")


def level_value(level):
    import onnxruntime as ort

    g = ort.GraphOptimizationLevel
    return {
        "off": g.ORT_DISABLE_ALL,
        "basic": g.ORT_ENABLE_BASIC,
        "extended": g.ORT_ENABLE_EXTENDED,
        "all": g.ORT_ENABLE_ALL,
    }[level]


def session(model, level="off", disabled=(), out=None, verbose=False):
    """An InferenceSession of ``model`` (serialized) on the CPU at ``level``, ``disabled``
    transformers off, written to ``out`` when given; ORT quiet unless ``verbose``."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = level_value(level)
    so.log_severity_level = 0 if verbose else 3
    if verbose:
        so.log_verbosity_level = 1
    if out is not None:
        so.optimized_model_filepath = out
    return ort.InferenceSession(
        model, so, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled)
    )


@contextlib.contextmanager
def captured_stderr():
    """File descriptor 2 sent to a temporary file (ORT logs from C++); yields a list that
    holds the text once the block ends."""
    out = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read(MAX_LOG_BYTES).decode("utf-8", "replace"))


def applications(model, level):
    """Every transformer application ORT makes at ``level``, in order, with whether it
    changed the model (from its verbose log)."""
    with captured_stderr() as log:
        session(model, level, verbose=True)
    return [(name, flag == "1") for name, flag in APPLIED.findall(log[0])]


def disabled_after(applied, position):
    """The transformers first applied after ``position``: what step ``position`` disables."""
    first = {}
    for i, (name, _) in enumerate(applied):
        first.setdefault(name, i)
    return sorted(n for n, i in first.items() if i > position)


def optimized(model, level, disabled=()):
    """The model as ORT leaves it at ``level`` with ``disabled`` off (serialized)."""
    with tempfile.TemporaryDirectory(prefix="passlens-ort-") as d:
        path = os.path.join(d, "optimized.onnx")
        session(model, level, disabled, out=path)
        with open(path, "rb") as f:
            return f.read()


def rebuild(model, level, advance=None):
    """``{"applied", "steps": [(name, position, model bytes, seconds)], "base", "one_go"}``:
    the steps at ``level`` (a step equal to the one before it is dropped)."""
    base = optimized(model, "off")
    applied = applications(model, level)
    steps = []
    previous = base
    for i, (name, modified) in enumerate(applied):
        if not modified:
            continue
        t0 = time.perf_counter()
        data = optimized(model, level, disabled_after(applied, i))
        if advance is not None:
            advance(name)
        if data != previous:
            steps.append((name, i, data, time.perf_counter() - t0))
            previous = data
    one_go = optimized(model, level)
    return {"applied": applied, "steps": steps, "base": base, "one_go": one_go}


def main(folder, level, limit):
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    status = {"status": "ok"}
    try:
        with open(os.path.join(folder, "model.onnx"), "rb") as f:
            model = f.read()
        result = rebuild(model, level)
        for k, (_, _, data, _) in enumerate(result["steps"]):
            with open(os.path.join(folder, f"step{k}.onnx"), "wb") as f:
                f.write(data)
        for key in ("base", "one_go"):
            with open(os.path.join(folder, f"{key}.onnx"), "wb") as f:
                f.write(result[key])
        status["applied"] = result["applied"]
        status["steps"] = [[n, p, s] for n, p, _, s in result["steps"]]
    except MemoryError:
        status = {"status": "memory"}
    except Exception as e:  # ORT's refusal (or a memory failure it reports as one)
        text = str(e)
        memory = any(
            s in text.lower() for s in ("bad_alloc", "out of memory", "failed to allocate")
        )
        status = {"status": "memory" if memory else "refused", "message": text[:4000]}
    with open(os.path.join(folder, "result.json"), "w") as f:
        json.dump(status, f)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[2] not in LEVELS:
        sys.exit("usage: ort_child.py FOLDER off|basic|extended|all LIMIT")
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
