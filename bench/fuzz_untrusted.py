"""Fuzzing passlens with untrusted inputs (issue #14): IR text, trace files and ONNX models,
each mutated from a valid seed, through what a user does with them (import or load, the
default pipeline, ``check``, the HTML report). Every case must end in a result or one of
passlens' own errors (``compiler.errors.PasslensError``): never another exception type, a hang
or a crash.

    .venv/bin/python bench/fuzz_untrusted.py [--cases N] [--seed S] [--timeout SECONDS]

Prints, per input kind, the cases tried, those that worked, the clear errors (by type), the
other exceptions (crashes; each listed with its input) and the hangs (a case over the time
bound, caught with SIGALRM). tests/explorer/test_fuzz_untrusted.py runs the same mutators
under hypothesis with fewer cases.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import random
import signal
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# ----- seeds ----------------------------------------------------------------------------------

IR_SEED = """# passlens IR
weights {
  $w: f32[4, 3] = [[1, 0, -1], [0.5, 2, 0], [0, 0, 1], [-2, 1, 0.25]]
  $b: f32[3] = [0.5, -1, 2]
}

def @main(%x: f32[batch, 4], %y: f32[batch, 3]) -> (f32[batch, 3], f32[batch]) attrs {num_input = 2} {
  %m: f32[batch, 3] = matmul(%x, $w, out_dtype=none)
  %a: f32[batch, 3] = add(%m, $b)
  %r: f32[batch, 3] = relu(%a)
  %s: f32[batch, 3] = call @helper(%r, %y)
  %t: f32[batch] = sum(%s, axes=[1], keepdims=false)
  %o: (f32[batch, 3], f32[batch]) = (%s, %t)
  return %o
}

def @helper(%p: f32[n, 3], %q: f32[n, 3]) -> f32[n, 3] attrs {private = true} {
  %e: f32[n, 3] = multiply(%p, %q)
  %f: f32[n, 3] = reshape(%e, shape=[n, 3])
  return %f
}
"""

# fragments a mutation inserts: deep nesting, huge numbers, symbolic blow-ups, odd unicode
_TOKENS = [
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "*",
    "+",
    "-",
    "//",
    "%",
    ",",
    "=",
    "?",
    "@main",
    "%x",
    "$w",
    "f32",
    "i64",
    "bool",
    "0",
    "-1",
    "9" * 5000,
    "1e308",
    "nan",
    "\ud800",
    "\u202e",
    "<script>",
    '"',
    "\\",
    "\n",
    "(" * 2000,
    "*".join(f"(a{i} + b{i})" for i in range(24)),
    "[" * 3000,
    "call @main(%x, %y)",
    "10000000000",
]


_NUMBERS = ["0", "1", "2", "-1", "7", "64", "1000000", "10000000000", "3000000000000000000000"]


def mutate_text(text: str, rng: random.Random) -> str:
    """One to three random edits: change a number (most often: the text still parses and the
    module is built, checked and rendered with odd sizes), delete a span, duplicate one,
    insert a token, swap two lines."""
    import re

    for _ in range(rng.choice([1, 1, 2, 3])):
        n = len(text)
        kind = rng.randrange(6)
        if kind >= 4:
            numbers = list(re.finditer(r"(?<![\w.])\d+(?![\w.])", text))
            if numbers:
                m = rng.choice(numbers)
                text = text[: m.start()] + rng.choice(_NUMBERS) + text[m.end() :]
                continue
            kind = 2
        i = rng.randrange(n + 1)
        if kind == 0 and n:
            text = text[:i] + text[i + rng.randint(1, 20) :]
        elif kind == 1 and n:
            j = min(n, i + rng.randint(1, 40))
            text = text[:i] + text[i:j] + text[i:]
        elif kind == 2:
            text = text[:i] + rng.choice(_TOKENS) + text[i:]
        else:
            lines = text.splitlines()
            if len(lines) > 1:
                a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[a], lines[b] = lines[b], lines[a]
                text = "\n".join(lines)
    return text


def _json_mutation(value, rng: random.Random, depth: int = 0):
    """``value`` with one random leaf or container replaced by something hostile."""
    hostile = [
        None,
        -1,
        10**9,
        10**30,
        1e308,
        "",
        "<img src=x onerror=alert(1)>",
        "\ud800",
        [],
        {},
        [[[[[]]]]],
        "f32[" + "9" * 30 + "]",
        "(" * 500,
        True,
    ]
    if isinstance(value, bool) or not isinstance(value, (int, str, list, dict)):
        return rng.choice(hostile)
    if isinstance(value, int):  # most often another number: the file still loads
        return rng.choice([0, 1, -1, 2, 7, 10**9, value + 1, value - 1, rng.choice(hostile)])
    if isinstance(value, str):
        return rng.choice(["", "<img src=x onerror=alert(1)>", value + value, value[:-1], "\ud800"])
    if depth > 40 or not value or rng.random() < 0.1:
        return rng.choice(hostile)
    if isinstance(value, list):
        i = rng.randrange(len(value))
        out = list(value)
        out[i] = _json_mutation(value[i], rng, depth + 1)
        return out
    key = rng.choice(sorted(value, key=str))
    out = dict(value)
    out[key] = _json_mutation(value[key], rng, depth + 1)
    return out


def seed_trace_bytes() -> bytes:
    """A saved trace of the IR seed through the default pipeline, legalize-ops and codegen,
    with the report of its check and the inputs it ran on."""
    import explorer

    trace = explorer.explore(IR_SEED, pipeline="default,legalize-ops,codegen")
    trace.check(_inputs_for(trace), progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "seed.passlens"
        trace.save(path, inputs=True)
        return path.read_bytes()


def mutate_trace(data: bytes, rng: random.Random) -> bytes:
    """Mutate a trace zip: a JSON value in manifest.json / ir.json / report.json, an npy
    member's bytes, or the zip's own bytes."""
    kind = rng.randrange(4)
    if kind == 3:  # raw bytes of the archive
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b[: rng.randint(len(b) // 2, len(b))] if rng.random() < 0.2 else b)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    if kind in (0, 1):
        name = "manifest.json" if kind == 0 else "ir.json"
        if "report.json" in members and rng.random() < 1 / 3:
            name = "report.json"
        obj = json.loads(members[name])
        for _ in range(rng.randint(1, 3)):
            obj = _json_mutation(obj, rng)
        members[name] = json.dumps(obj).encode("utf-8", "surrogatepass")
    else:
        arrays = [k for k in members if k.startswith("arrays/")]
        if arrays:
            name = rng.choice(arrays)
            b = bytearray(members[name])
            for _ in range(rng.randint(1, 6)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            members[name] = bytes(b)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    return out.getvalue()


def seed_onnx_bytes() -> list[bytes]:
    """Valid ONNX models: an MLP and a tiny ConvNeXt from compiler.models, and the IR seed,
    each exported by passlens' ONNX exporter."""
    from compiler import models
    from compiler.frontend import to_onnx
    from compiler.ir import parse

    tiny = models.convnext(dims=(8, 16), depths=(1, 1), image=16, num_classes=4)
    modules = [models.mlp((8, 16, 4), batch=2), tiny, parse(IR_SEED)]
    return [to_onnx(m).SerializeToString() for m in modules]


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(3)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        elif op == 1:
            del b[i : i + rng.randint(1, 8)]
        else:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(b)


# ----- what a user does with an input ---------------------------------------------------------


def _inputs_for(trace):
    """Random inputs fitting the imported module's runtime inputs (symbols -> 2)."""
    from compiler.ir.types import TensorType

    main = trace.imported.module["main"]
    rng = np.random.default_rng(0)
    out = []
    for p in main.params[: main.num_input]:
        if not isinstance(p.ty, TensorType) or p.ty.shape is None:
            return None
        shape = tuple(d if isinstance(d, int) else 2 for d in p.ty.shape)
        if any(d < 0 for d in shape) or int(np.prod(shape)) > 1 << 16:
            return None
        out.append(rng.standard_normal(shape).astype(p.ty.dtype.numpy))
    return tuple(out)


def use(trace, tmp: Path) -> None:
    """Check it (when its inputs can be made), summarise it and write its report."""
    inputs = _inputs_for(trace)
    if inputs is not None:
        trace.check(inputs, progress=False)
    trace.summary_text()
    trace.to_html(tmp / "report.html")


def run_ir_text(text: str, tmp: Path) -> None:
    import explorer

    use(explorer.explore(text, pipeline="default"), tmp)


def run_trace(data: bytes, tmp: Path) -> None:
    import explorer

    path = tmp / "case.passlens"
    path.write_bytes(data)
    trace = explorer.load(path)
    if trace.report is not None:  # the saved check, as `passlens show` and the report show it
        str(trace.report)
        trace.to_html(tmp / "saved-report.html")
    use(trace, tmp)


def run_onnx(data: bytes, tmp: Path) -> None:
    import explorer

    use(explorer.explore(data), tmp)


# ----- the driver -----------------------------------------------------------------------------


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def classify(fn, case, tmp: Path, timeout: float) -> tuple[str, str]:
    """``("ok" | "error" | "crash" | "hang", detail)`` for one case."""
    from compiler.errors import PasslensError

    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        fn(case, tmp)
        return "ok", ""
    except Hang:
        return "hang", ""
    except PasslensError as e:
        return "error", type(e).__name__
    except Exception as e:
        return "crash", "".join(traceback.format_exception(type(e), e, e.__traceback__)[-3:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300, help="cases per input kind")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    rng = random.Random(args.seed)
    trace_seed = seed_trace_bytes()
    onnx_seeds = seed_onnx_bytes()
    kinds = {
        "IR text": (lambda: mutate_text(IR_SEED, rng), run_ir_text),
        "trace file": (lambda: mutate_trace(trace_seed, rng), run_trace),
        "ONNX model": (lambda: mutate_bytes(rng.choice(onnx_seeds), rng), run_onnx),
    }
    print(f"{args.cases} cases per kind, seed {args.seed}, {args.timeout:.0f} s per case")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for kind, (make, fn) in kinds.items():
            counts: collections.Counter = collections.Counter()
            errors: collections.Counter = collections.Counter()
            bad = []
            start = time.perf_counter()
            for _ in range(args.cases):
                case = make()
                outcome, detail = classify(fn, case, tmp, args.timeout)
                counts[outcome] += 1
                if outcome == "error":
                    errors[detail] += 1
                elif outcome in ("crash", "hang"):
                    bad.append((outcome, detail, case))
            seconds = time.perf_counter() - start
            print(
                f"{kind:10}  tried {args.cases}  ok {counts['ok']}  clear errors "
                f"{counts['error']}  crashes {counts['crash']}  hangs {counts['hang']}  "
                f"({seconds:.0f} s)"
            )
            print("            errors: " + ", ".join(f"{k} {v}" for k, v in errors.most_common()))
            for outcome, detail, case in bad[:5]:
                shown = case if isinstance(case, str) else case[:80]
                print(f"  {outcome.upper()}: {detail.strip()[-400:]}\n    input: {shown!r:.300}")


if __name__ == "__main__":
    main()
