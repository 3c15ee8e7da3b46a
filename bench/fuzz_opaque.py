"""The opaque-target fuzzer of bench/fuzz_untrusted.py (``--opaque-targets``, issue #39): every
operator registered in this process's torch dispatcher (``aten``, ``prims``, ``quantized``,
``inductor``, ``profiler``, ``_c10d_functional``, ...) named as an opaque op's target, the way a
crafted trace or IR text would name it, and run through ``compiler.opaque.run.run`` with
no trust given. Each must be either

- **refused**: the op is not on passlens' allowlist (``compiler.opaque.allow``), and running
  it raises the one clear ``OpaqueOpError`` that names it, before anything runs; or
- **sized and safe**: on the allowlist, and run with arguments made from its schema (small
  tensors, and hostile variants: huge sizes, huge repeat counts, negative and huge ints), it
  gives a value or a clear ``OpaqueOpError``, never a crash (signal), a hang, text on the
  terminal, a file written, another exception type, or an allocation past the interpreter's
  limit (the worker runs under an address-space limit a little above it, so an unsized
  allocation shows up as a ``MemoryError``/crash instead of taking the machine).

The allowed ops run in a worker process (``--worker``), restarted after a crash; the worker
runs in an empty temporary folder that must still be empty afterwards, with its stdout and
stderr captured (anything an op prints is a failure).
"""

from __future__ import annotations

import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the worker's address-space limit above what it has mapped once torch is imported: a little
# over the interpreter's limit for one value (compiler.opaque.run.MAX_RESULT_BYTES, 4 GiB)
HEADROOM = 6 << 30
OP_TIMEOUT = 20.0  # seconds for one op's variants in the worker before it counts as a hang


# ----- the targets ------------------------------------------------------------------------------


def all_targets() -> list[str]:
    """``ns.name.overload`` of every operator in the dispatcher (the names a file can give)."""
    import torch  # noqa: F401  (registers its namespaces)
    from torch._C import _dispatch_get_all_op_names

    out = set()
    for full in _dispatch_get_all_op_names():
        ns, _, rest = full.partition("::")
        name, _, overload = rest.partition(".")
        out.add(f"{ns}.{name}.{overload or 'default'}")
    return sorted(out)


def allowed(target: str) -> bool:
    from compiler.opaque import allow as opaque_allow

    return opaque_allow.refusal("torch", target, frozenset()) is None


# ----- arguments from a schema ------------------------------------------------------------------

# the variants tried on every allowed op: small and ordinary first, then hostile
VARIANTS = (
    "small", "int", "huge", "negative", "zero", "empty", "scalar", "dtypes", "mixed", "small1",
    "indices",
)


def _tensor(kind: str, name: str, position: int = 0):
    import torch

    if kind == "mixed":  # a big first tensor, the others 1x1: kernels that trust sizes
        return torch.rand(64, 4) + 0.5 if position == 0 else torch.ones(1, 1)
    if kind == "small1":  # a 1x1 first tensor, the others big
        return torch.ones(1, 1) if position == 0 else torch.rand(64, 4) + 0.5
    if kind == "indices":  # every tensor an index far out of range
        return torch.full((2, 3), 1 << 40, dtype=torch.int64)
    if kind == "zero":
        return torch.zeros(2, 3)
    if kind == "empty":
        return torch.zeros(0, 3)
    if kind == "scalar":
        return torch.tensor(3.0)
    if kind == "dtypes":
        return torch.tensor([[True, False, True], [False, False, True]])
    if kind == "int":
        return torch.tensor([[1, 2, 0], [3, 1, 2]], dtype=torch.int64)
    if kind == "huge" and name in ("repeats", "indices", "index", "size", "sizes", "shape"):
        return torch.tensor([1 << 40, 1], dtype=torch.int64)
    if kind == "negative" and name in ("repeats", "indices", "index"):
        return torch.tensor([-1, -(1 << 40)], dtype=torch.int64)
    return torch.rand(2, 3) + 0.5


def _int(kind: str, name: str) -> int:
    if kind == "huge":
        return 1 << 40
    if kind == "negative":
        return -(1 << 40)
    if kind == "zero":
        return 0
    if kind == "empty":
        return -1
    return 0 if name in ("dim", "axis", "start", "offset") else 2


def _value(ty, kind: str, name: str, tensors: list, real=None):
    """An argument of type ``ty`` (a torch.JitType) for the variant ``kind``; tensors it needs
    are appended to ``tensors`` and referred to as ``%i``."""
    import torch

    k = ty.kind()
    real_name = str(real) if real is not None else ""
    if "ScalarType" in real_name and kind == "dtypes":
        from compiler.ir.types import DType

        return DType.float64
    if k == "OptionalType":
        return None if kind == "small" else _value(ty.getElementType(), kind, name, tensors, real)
    if k == "TensorType":
        tensors.append(_tensor(kind, name, len(tensors)))
        return f"%{len(tensors) - 1}"
    if k == "ListType":
        el = ty.getElementType()
        if el.kind() in ("TensorType", "OptionalType"):
            return [_value(el, kind, name, tensors), _value(el, kind, name, tensors)]
        return [_value(el, kind, name, tensors) for _ in range(2)]
    if k in ("IntType", "SymIntType"):
        return _int(kind, name)
    if k in ("FloatType", "NumberType", "ComplexType", "SymFloatType"):
        return {"huge": 1e30, "zero": 0.0, "negative": -1e30, "empty": float("nan")}.get(kind, 0.5)
    if k in ("BoolType", "SymBoolType"):
        return kind == "huge"
    if k == "StringType":
        return "mean"  # a str argument: never on the allowlist, but give one anyway
    if k == "ScalarTypeType":
        return None  # a dtype: torch's default
    if k in ("DeviceObjType", "LayoutType", "MemoryFormatType"):
        return None
    if k == "TupleType":
        return [_value(e, kind, name, tensors) for e in ty.elements()]
    del torch
    raise ValueError(f"no value of type {ty}")


def call_for(target: str, kind: str):
    """``(values, attrs)`` of an opaque op calling ``target`` with arguments made from its
    schema for the variant ``kind``; None when its schema has a type we cannot make."""
    import torch

    from compiler.opaque.run import resolve_torch_op

    try:
        op = resolve_torch_op(target)
    except Exception:
        return None
    tensors: list = []
    args: list = []
    kwargs: list = []
    try:
        for a in op._schema.arguments:
            if a.default_value is not None and kind == "small" and a.kwarg_only:
                continue
            v = _value(a.type, kind, a.name, tensors, a.real_type)
            if a.kwarg_only:
                kwargs.append([a.name, v])
            else:
                args.append(v)
    except ValueError:
        return None
    values = [t.numpy() for t in tensors]
    attrs = {
        "framework": "torch",
        "target": target,
        "args": _freeze(args),
        "kwargs": tuple((k, _freeze(v)) for k, v in kwargs),
        "type": "f32[]",
        "opset": None,
        "outputs": None,
        "pure": True,
    }
    del torch
    return values, attrs


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


# ----- the worker -------------------------------------------------------------------------------


def worker() -> None:
    """Read targets (one a line) on stdin; for each, write ``start`` then its outcome as JSON
    lines on the fd given by PASSLENS_FUZZ_FD. stdout/stderr go to files the parent reads."""
    out = os.fdopen(int(os.environ["PASSLENS_FUZZ_FD"]), "w", buffering=1)
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from compiler.opaque.layout import OpaqueOpError
    from compiler.opaque.run import run

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (mapped + HEADROOM, hard))
    for line in sys.stdin:
        target = line.strip()
        out.write(json.dumps({"start": target}) + "\n")
        results = {}
        for kind in VARIANTS:
            call = call_for(target, kind)
            if call is None:
                results[kind] = "no-args"
                continue
            values, attrs = call
            try:
                got = run(values, attrs)
                arrays = got if isinstance(got, tuple) else (got,)
                nbytes = sum(np.asarray(a).nbytes for a in arrays)
                results[kind] = f"ran ({nbytes:,} B)"
            except OpaqueOpError as e:
                results[kind] = "clear error: " + str(e).splitlines()[0][:160]
            except MemoryError:
                results[kind] = "UNSIZED: MemoryError under the address-space limit"
            except Exception as e:  # noqa: BLE001  (what the fuzzer looks for)
                results[kind] = f"OTHER {type(e).__name__}: {str(e)[:160]}"
        out.write(json.dumps({"done": target, "results": results}) + "\n")


def run_allowed(targets: list[str], log=print, op_timeout: float = OP_TIMEOUT) -> dict:
    """Run ``targets`` in workers; {target: outcome dict} where a crash or hang is its own (an
    op silent for ``op_timeout`` seconds: the tests give a bound no loaded machine reaches)."""
    outcomes: dict = {}
    pending = list(targets)
    while pending:
        with tempfile.TemporaryDirectory(prefix="passlens-fuzz-") as cwd:
            r, w = os.pipe()
            stdout = open(Path(cwd).parent / f"{Path(cwd).name}.out", "w+b")
            env = dict(os.environ, PASSLENS_FUZZ_FD=str(w), PYTHONPATH=str(ROOT))
            proc = subprocess.Popen(
                [sys.executable, __file__, "--worker"],
                stdin=subprocess.PIPE,
                stdout=stdout,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                pass_fds=(w,),
            )
            os.close(w)
            proc.stdin.write(("\n".join(pending) + "\n").encode())
            proc.stdin.close()
            current = None
            import selectors

            sel = selectors.DefaultSelector()
            sel.register(r, selectors.EVENT_READ)
            last = time.monotonic()
            buf = b""
            mark = 0
            done = False
            while not done:
                if not sel.select(timeout=1.0):
                    if current and time.monotonic() - last > op_timeout:
                        proc.kill()
                        outcomes[current] = {"all": "HANG"}
                        pending.remove(current)
                        current = None
                        break
                    if proc.poll() is not None:
                        break
                    continue
                data = os.read(r, 1 << 16)  # raw reads: a buffered reader would hide lines
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    msg = json.loads(line)
                    last = time.monotonic()
                    if "start" in msg:
                        current = msg["start"]
                        stdout.seek(0, os.SEEK_END)
                        mark = stdout.tell()
                        continue
                    stdout.seek(mark)
                    printed = stdout.read()
                    res = msg["results"]
                    if printed:
                        raw = [b for b in printed if (b < 0x20 and b not in b"\n\r\t") or b == 0x7F]
                        res["printed"] = (
                            f"PRINTED {len(printed)} bytes with {len(raw)} raw control bytes: "
                            if raw
                            else f"text {len(printed)} bytes (escaped): "
                        ) + repr(printed[:80])
                    if os.listdir(cwd):
                        res["files"] = f"WROTE FILES {os.listdir(cwd)[:5]}"
                        for f in os.listdir(cwd):
                            os.unlink(os.path.join(cwd, f))
                    outcomes[msg["done"]] = res
                    pending.remove(msg["done"])
                    current = None
            code = proc.wait()
            os.close(r)
            if current is not None:  # died while running it
                outcomes[current] = {"all": f"CRASH (exit {code})"}
                pending.remove(current)
            stdout.close()
            os.unlink(stdout.name)
            if code == 0 and not pending:
                break
            if current is None and code not in (0, -9) and pending:
                # died between ops: count the next one so the loop always moves on
                nxt = pending.pop(0)
                outcomes[nxt] = {"all": f"CRASH (exit {code})"}
        log(f"  ... {len(outcomes)} of {len(targets)} allowed ops run")
    return outcomes


def refused_cleanly(target: str) -> tuple[bool, str]:
    """Does running ``target`` untrusted raise the refusal before it runs?"""
    from compiler.opaque.layout import OpaqueOpError
    from compiler.opaque.run import run

    attrs = {
        "framework": "torch",
        "target": target,
        "args": (),
        "kwargs": (),
        "type": "f32[]",
        "opset": None,
        "outputs": None,
        "pure": True,
    }
    try:
        run([], attrs)
    except OpaqueOpError as e:
        text = str(e)
        return "refused to run opaque op" in text and target in text, text.splitlines()[0]
    except Exception as e:  # noqa: BLE001
        return False, f"{type(e).__name__}: {e}"
    return False, "it ran"


def _bad(result: str) -> bool:
    return result.startswith(("OTHER", "UNSIZED", "PRINTED", "WROTE", "CRASH", "HANG"))


def main(limit: int | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    t0 = time.perf_counter()
    targets = all_targets()
    if limit:
        targets = targets[:limit]
    by_ns: dict = collections.defaultdict(collections.Counter)
    ok_refused, bad_refused, allow = [], [], []
    for t in targets:
        ns = t.split(".")[0]
        if allowed(t):
            allow.append(t)
            by_ns[ns]["allowed"] += 1
            continue
        ok, why = refused_cleanly(t)
        (ok_refused if ok else bad_refused).append((t, why))
        by_ns[ns]["refused" if ok else "NOT REFUSED"] += 1
    print(f"{len(targets)} operator overloads in {len(by_ns)} namespaces; "
          f"{len(allow)} on the allowlist, {len(ok_refused)} refused cleanly, "
          f"{len(bad_refused)} neither")
    for t, why in bad_refused[:20]:
        print(f"  NOT REFUSED {t}: {why}")
    outcomes = run_allowed(allow)
    tally: collections.Counter = collections.Counter()
    bad = []
    for t, res in sorted(outcomes.items()):
        kinds = set()
        for r in res.values():
            kinds.add(r.split(" ")[0].split(":")[0])
            if _bad(r):
                bad.append((t, r))
        for k in kinds:
            tally[k] += 1
    print("allowed ops, by what their variants gave (an op counts once per kind it gave):")
    for k, n in tally.most_common():
        print(f"  {k:>8}: {n}")
    print("by namespace:")
    for ns, c in sorted(by_ns.items()):
        print(f"  {ns:<28} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    print(f"unsafe or unclear outcomes: {len(bad)} (of {len(allow)} allowed ops); "
          f"not refused: {len(bad_refused)}")
    for t, r in bad[:40]:
        print(f"  {t}: {r}")
    print(f"wall time {time.perf_counter() - t0:.0f} s")
    return 1 if bad or bad_refused else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        n = int(sys.argv[2]) if sys.argv[1:2] == ["--limit"] else None
        sys.exit(main(n))
