"""Fuzzing passlens with untrusted inputs (issue #14): IR text, trace files and ONNX models,
each mutated from a valid seed, through what a user does with them (import or load, the
default pipeline, ``check``, the HTML report). Every case must end in a result or one of
passlens' own errors (``compiler.errors.PasslensError``): never another exception type, a hang
or a crash.

    .venv/bin/python bench/fuzz_untrusted.py [--cases N] [--seed S] [--timeout SECONDS]
    .venv/bin/python bench/fuzz_untrusted.py --probes [--timeout SECONDS]
    .venv/bin/python bench/fuzz_untrusted.py --opaque-targets [--limit N]

Prints, per input kind, the cases tried, those that worked, the clear errors (by type), the
other exceptions (crashes; each listed with its input) and the hangs (a case over the time
bound, caught with SIGALRM). tests/explorer/test_fuzz_untrusted.py runs the same mutators
under hypothesis with fewer cases.

``--opaque-targets`` (issue #39) names every operator registered in torch's dispatcher as an
opaque op's target, as a crafted file would, and confirms each is either refused before it runs
or, on passlens's allowlist, runs sized and safe on arguments made from its schema (small,
huge, negative, zero, empty, 0-d, other dtypes): no crash, hang, raw terminal text, file
written or allocation past the limit (bench/fuzz_opaque.py).

``--probes`` runs the crafted probes of issue #31 at their real size instead, each in a process
of its own (so its peak memory is its own): amplification in ``load`` (array entries naming one
zero-filled member, chains of derived arrays, a zip-bombed ONNX source), budgets in ``check``
(a 100-byte IR text asking for a 12000 x 12000 input, a 73-byte ONNX file declaring 6.6 GB of
input, a loop at the iteration cap, nested loops each under it), ``reduce`` on overlapping and
3,000-deep step trees and a spec 3,000 brackets deep, and a 1,000,000-line module text through
``to_html``. Each prints its outcome, wall time, peak RSS and the size of its input file.
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
    ap.add_argument("--probes", action="store_true", help="the crafted probes of issue #31")
    ap.add_argument("--probe", help=argparse.SUPPRESS)  # one probe, in this process
    ap.add_argument(
        "--opaque-targets", action="store_true", help="every torch op as an opaque target"
    )
    ap.add_argument("--limit", type=int, help="--opaque-targets: only the first N targets")
    args = ap.parse_args(argv)
    if args.opaque_targets:
        sys.path.insert(0, str(ROOT / "bench"))
        import fuzz_opaque

        sys.exit(fuzz_opaque.main(args.limit))
    if args.probe:
        return run_probe(args.probe)
    if args.probes:
        return run_probes(args.timeout)
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


# ----- the crafted probes of issue #31, at their real size -------------------------------------


def _zip(path: Path, members: dict) -> None:
    """A zip of ``members`` (bytes, or a (size, chunk) pair written as zeros in chunks)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for name, data in members.items():
            if isinstance(data, tuple):
                size, chunk = data
                with zf.open(name, "w", force_zip64=True) as f:
                    zero = bytes(chunk)
                    for _ in range(size // chunk):
                        f.write(zero)
            else:
                zf.writestr(name, data)


def _trace_members(trace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = trace.save(Path(tmp) / "t.passlens")
        with zipfile.ZipFile(path) as zf:
            return {i.filename: zf.read(i.filename) for i in zf.infolist()}


def _npy_zeros(shape: tuple, tail: int) -> tuple[bytes, int]:
    """An .npy header of zeros of ``shape`` (float32), and its data size."""
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        f, {"descr": "<f4", "fortran_order": False, "shape": shape}
    )
    return f.getvalue(), int(np.prod(shape)) * 4


def _amplified(tmp: Path, entries: int, derived: bool) -> Path:
    """A small trace whose ir.json names one zero-filled 300 MB member from ``entries``
    arrays (or derives each from the one before, transposed)."""
    import explorer
    from compiler import models

    members = _trace_members(explorer.explore(models.mlp((4, 3), batch=2), pipeline="dce"))
    shape = (8660, 8660)  # 300 MB of float32 zeros
    header, size = _npy_zeros(shape, 0)
    ir = json.loads(members["ir.json"])
    first = len(ir["arrays"])
    ir["arrays"].append({"dtype": "float32", "shape": list(shape), "member": "arrays/z.npy"})
    for k in range(entries):
        if derived:
            rec = {"dtype": "float32", "shape": list(shape)}
            rec["derived"] = {"from": first + k, "axes": [1, 0]}
        else:
            rec = {"dtype": "float32", "shape": list(shape), "member": "arrays/z.npy"}
        ir["arrays"].append(rec)
    ir["nodes"] += [{"kind": "const", "array": first + 1 + k} for k in range(entries)]
    members["ir.json"] = json.dumps(ir).encode()
    path = tmp / "amplified.passlens"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        with zf.open("arrays/z.npy", "w", force_zip64=True) as f:
            f.write(header)
            zero = bytes(size // 100)
            for _ in range(100):
                f.write(zero)
    return path


def _onnx_bomb(tmp: Path) -> Path:
    """An ONNX trace whose source.onnx member is 2.5 GB of zeros (a few MB zipped)."""
    import explorer
    from compiler import models
    from compiler.frontend import to_onnx

    proto = to_onnx(models.mlp((4, 3), batch=2))
    members = _trace_members(explorer.explore(proto.SerializeToString()))
    manifest = json.loads(members["manifest.json"])
    manifest["source"] = {"kind": "onnx", "member": "source.onnx"}
    members["manifest.json"] = json.dumps(manifest).encode()
    members["source.onnx"] = (5 << 29, 1 << 24)
    path = tmp / "bomb.passlens"
    _zip(path, members)
    return path


def _big_input_onnx() -> bytes:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [40000, 41250])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [40000, 41250])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


LOOP_AT_CAP = """
def @main(%x: f32[2]) -> f32[2] {
  %r: (f32[2],) = loop @body(const(i64[], 1000000), const(bool[], true), %x, carried=1)
  %y: f32[2] = %r[0]
  return %y
}

def @body(%i: i64[], %c: bool[], %acc: f32[2]) -> (bool[], f32[2]) attrs {private = true} {
  %a: f32[2] = add(%acc, const(f32[], 1.0))
  %t: (bool[], f32[2]) = (%c, %a)
  return %t
}
"""


def _fake_tree(n: int, overlapping: bool):
    from types import SimpleNamespace

    steps = []
    for i in range(n):
        children = list(range(i + 1, n)) if overlapping else ([i + 1] if i + 1 < n else [])
        spec = "dce,dce" if i < n - 1 else "dce"
        steps.append(
            SimpleNamespace(index=i, spec=spec, children=children, parent=i - 1 if i else None)
        )
        steps[-1].kind, steps[-1].depth = "pass", 0 if i == 0 else 1
    return SimpleNamespace(steps=steps)


def _huge_text_trace(tmp: Path) -> Path:
    """A TVM trace (format 3) whose final module text has 1,000,000 lines (or, without TVM,
    a passlens trace whose failed pass has a 1,000,000-line traceback)."""
    import explorer

    try:
        import torch
        import tvm  # noqa: F401
    except ImportError:
        torch = None
    if torch is not None:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
        trace = explorer.explore(model, (torch.randn(2, 4),), compiler="tvm", pipeline="zero")
        members = _trace_members(trace)
        manifest, ir = json.loads(members["manifest.json"]), json.loads(members["ir.json"])
        last = manifest["steps"][-1]["foreign_module"]
        huge = "  %v = R.add(%x, %x)\n" * 1_000_000
        ir["foreign_modules"][last]["text"] = huge + ir["foreign_modules"][last]["text"]
        members["ir.json"] = json.dumps(ir).encode()
    else:
        import tests.compiler.passes.test_manager  # noqa: F401  (registers test-explode)

        text = "def @main(%x: f32[2]) -> f32[2] {\n  %y: f32[2] = add(%x, %x)\n  return %y\n}"
        members = _trace_members(explorer.explore(text, pipeline="test-explode"))
        manifest = json.loads(members["manifest.json"])
        step = next(s for s in manifest["steps"] if s.get("traceback"))
        step["traceback"] = "  File 'x.py', line 1\n" * 1_000_000
        members["manifest.json"] = json.dumps(manifest).encode()
    path = tmp / "huge.passlens"
    _zip(path, members)
    return path


_ACTION = [0.0]  # when the user's action of a probe started (its input built)


def _go() -> None:
    _ACTION[0] = time.perf_counter()


def _probe(name: str, tmp: Path) -> tuple[str, int]:
    """Run probe ``name``: (what came of it, the size of its input file or text); the time
    counted is the user's action's (``_go`` marks its start), not building the input."""
    import explorer

    if name.startswith("load:"):
        kind = name.split(":", 1)[1]
        path = {
            "8 entries, one 300 MB member": lambda: _amplified(tmp, 8, False),
            "24 entries, one 300 MB member": lambda: _amplified(tmp, 24, False),
            "24 derived transposes of it": lambda: _amplified(tmp, 24, True),
            "zip-bombed ONNX source (2.5 GB)": lambda: _onnx_bomb(tmp),
        }[kind]()
        _go()
        trace = explorer.load(path)
        return f"loaded ({len(trace)} steps)", path.stat().st_size
    if name.startswith("check: IR text"):
        side = 12000 if "12000" in name else 100000
        text = (
            f"def @main(%x: f32[{side}, {side}]) -> f32[{side}, {side}] {{\n"
            f"  %y: f32[{side}, {side}] = matmul(%x, %x)\n  return %y\n}}\n"
        )
        _go()
        explorer.explore(text).check(progress=False)
        return "checked", len(text)
    if name == "check: 73-byte ONNX, 6.6 GB input":
        data = _big_input_onnx()
        _go()
        explorer.explore(data).check(progress=False)
        return "checked", len(data)
    if name in ("check: loop at the iteration cap", "check: nested loops 1000 x 1000"):
        if "nested" in name:
            sys.path.insert(0, str(ROOT))
            from tests.explorer.test_untrusted_budgets import NESTED_LOOPS as text

            text = text.replace("def @main(%x: f32[2], %n: i64[])", "def @main(%x: f32[2])")
            text = text.replace(
                "(%n, const(bool[], true), %x, %n,",
                "(const(i64[], 1000), const(bool[], true), %x, const(i64[], 1000),",
            )
        else:
            text = LOOP_AT_CAP
        _go()
        report = explorer.explore(text, pipeline="default").check(progress=False)
        first = report.first_failure
        return (
            f"checked: {first.kind if first else 'ok'} {str(first.message)[:90] if first else ''}",
            len(text),
        )
    if name.startswith("reduce: "):
        from explorer.passlens.reduce.pipeline import units_of

        if "spec" in name:
            from compiler.passes import build_pipeline

            spec = "decompose-ops{ops=" + "[" * 3000 + "]" * 3000 + "}"
            _go()
            build_pipeline(spec)
            return "built", len(spec)
        tree = _fake_tree(40, True) if "overlapping" in name else _fake_tree(3000, False)
        _go()
        units = units_of(tree)
        return f"{len(units)} unit(s)", len(tree.steps)
    if name == "to_html: 1,000,000-line text":
        path = _huge_text_trace(tmp)
        _go()
        trace = explorer.load(path)
        trace.to_html(tmp / "huge.html", progress=False)
        return f"report of {(tmp / 'huge.html').stat().st_size / 2**20:.1f} MB", path.stat().st_size
    raise SystemExit(f"no probe {name!r}")


PROBES = [
    "load:8 entries, one 300 MB member",
    "load:24 entries, one 300 MB member",
    "load:24 derived transposes of it",
    "load:zip-bombed ONNX source (2.5 GB)",
    "check: IR text f32[12000, 12000]",
    "check: IR text f32[100000, 100000]",
    "check: 73-byte ONNX, 6.6 GB input",
    "check: loop at the iteration cap",
    "check: nested loops 1000 x 1000",
    "reduce: 40 steps, overlapping children",
    "reduce: a 3,000-deep step chain",
    "reduce: a spec 3,000 brackets deep",
    "to_html: 1,000,000-line text",
]


def run_probe(name: str) -> None:
    """One probe in this process; prints one JSON line (outcome, detail, seconds of the
    user's action, the process's peak RSS, the input's size)."""
    import resource

    from compiler.errors import PasslensError

    warnings.filterwarnings("ignore")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        try:
            detail, size = _probe(name, Path(d))
            outcome = "ok"
        except PasslensError as e:
            outcome, detail, size = "error", f"{type(e).__name__}: {str(e)[:300]}", 0
        except Exception as e:
            outcome, detail, size = "crash", f"{type(e).__name__}: {str(e)[:160]}", 0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    seconds = time.perf_counter() - max(start, _ACTION[0])
    print(json.dumps({"outcome": outcome, "detail": detail, "s": seconds, "mb": rss, "in": size}))


def run_probes(timeout: float) -> None:
    """Every probe in a process of its own, with a time bound (a hang past it is killed)."""
    import subprocess

    print(f"issue #31 probes, one process each, {timeout:.0f} s bound")
    for name in PROBES:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--probe", name]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            line = (proc.stdout.strip().splitlines() or [""])[-1]
            r = json.loads(line) if line.startswith("{") else None
        except subprocess.TimeoutExpired:
            r = {"outcome": "hang", "detail": f"killed after {timeout:.0f} s", "s": timeout}
        if r is None:
            r = {"outcome": "crash", "detail": proc.stderr.strip()[-200:], "s": 0, "mb": 0}
        size = f"{r.get('in', 0):,} B in" if r.get("in") else ""
        print(
            f"{name:42} {r['outcome']:6} {r['s']:6.1f} s {r.get('mb', 0):7.0f} MB peak  {size}\n"
            f"    {r['detail']}"
        )


if __name__ == "__main__":
    main()
