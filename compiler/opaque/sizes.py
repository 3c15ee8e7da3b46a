"""Sizing an opaque op before it runs (compiler/opaque/run.py), and what runs when it cannot
be sized: the arguments come from a model, a trace or an IR file, untrusted.

- **Bounds.** An op whose result size depends on its input *values* (`nonzero`,
  `repeat_interleave.Tensor`, ONNX `NonZero`, `com.microsoft::Range`) cannot be sized on
  fake tensors or by ONNX shape inference; for those this module has a bound per op computed
  from the actual inputs before the op runs (`torch_bound`, `onnx_bound`): the most bytes
  its results (and the index tensors it makes on the way) can hold.
- **A budget.** What has neither a size nor a bound runs under an address-space limit
  (`memory_budget`: `RLIMIT_AS` lowered for the length of the call, then restored), so an
  allocation over the interpreter's limit for one value fails cleanly (torch: "can't allocate
  memory", onnxruntime: "Failed to allocate memory") and becomes a `BudgetError`. A whole
  ONNX model (the check's onnxruntime reference and its float64 variant) runs in a child
  process with its own limit (`run_onnx_model`): it imports only numpy, onnxruntime and (for
  the float64 fallback: the split run of onnx_mixed.py, the reference evaluator) onnx, so it
  starts in a fraction of a second.
- **Output.** What an op writes to fd 1 / fd 2 or `sys.stdout` / `sys.stderr` while it runs
  is captured (`captured_output`) and re-emitted as one warning, control characters escaped
  (`\\x1b`) and cut to `MAX_PRINTED` characters: nothing an op prints reaches the terminal
  raw.

Nothing here imports torch, onnx or onnxruntime at import time.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from compiler.opaque.layout import OpaqueOpError

MAX_RANK = 64
"""The most dims an opaque op's result may have (a ``ConstantOfShape`` of a 65-long shape)."""

MAX_VALUE_INPUT = 4096
"""An ONNX input of at most this many numeric elements is given to shape inference as a value
(a shape, repeats, pads, Range's start / limit / delta, Resize's scales), so the size of what
the op makes from it is known before it runs."""

BUDGET_HEADROOM = 512 << 20
"""Address space allowed beyond the limit for one value while an unsized op runs (its
temporaries, a thread's stack)."""

CHILD_HEADROOM = 1 << 30
"""Address space a child process running a whole ONNX model may use beyond its budget, the
model and its inputs (the interpreter, onnxruntime's libraries, its threads' stacks)."""

MODEL_COPIES = 3
"""How many times a model's size a child may hold for it (its bytes, onnxruntime's copy of the
initializers, prepacked weights)."""

MAX_PRINTED = 2000
"""The most characters of what an op printed that are re-emitted (the rest is counted)."""


class BudgetError(OpaqueOpError):
    """An op or a model that could not be sized before it ran needed more memory than its
    budget: it was stopped there (nothing over the budget was allocated)."""


class ModelRefusedError(OpaqueOpError):
    """onnxruntime refused the model itself: its `InferenceSession` could not be made (an
    invalid attribute such as a Transpose with a negative `perm`, a type it does not take),
    before anything ran. `reason` is onnxruntime's message, escaped."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def gib(n: int) -> str:
    return f"{n / (1 << 30):.3g} GiB"


# ----- torch: bounds from the actual inputs -----------------------------------------------------


def bind(op, target: str, args: Sequence[Any], kwargs: Iterable[tuple[str, Any]]) -> list:
    """The call's arguments against `op`'s torch schema: `(parameter, value)` pairs in
    call order, the positional arguments then the keywords (`kwargs` as `(name, value)`
    pairs). OpaqueOpError for more positional arguments than the schema has, or a keyword it
    does not name. The one binder of the stored arguments (`run.check_torch_args`), the fake
    run's (`run`'s sizing) and the bounds' (`torch_bound`)."""
    params = list(op._schema.arguments)
    positional = [p for p in params if not p.kwarg_only]
    args = list(args)
    if len(args) > len(positional):
        raise OpaqueOpError(
            f"torch {target} takes at most {len(positional)} positional arguments, the op "
            f"gives {len(args)}"
        )
    by_name = {p.name: p for p in params}
    bound = list(zip(positional, args, strict=False))
    for name, value in kwargs:
        if name not in by_name:
            raise OpaqueOpError(f"torch {target} has no argument {name!r}")
        bound.append((by_name[name], value))
    return bound


def _by_name(op, target: str, args: list, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments by the op's schema names, defaults filled in."""
    bound = {p.name: a for p, a in bind(op, target, args, kwargs.items())}
    for p in op._schema.arguments:
        if p.name not in bound:
            bound[p.name] = p.default_value if p.has_default_value() else None
    return bound


def _tensor(a: Any, name: str):
    import torch

    if not isinstance(a, torch.Tensor):
        raise TypeError(f"{name} is a {type(a).__name__}, not a tensor")
    return a


def _sum(t) -> float:
    """The sum of the positive values of `t` (float64: a bound, overflow-free)."""
    import torch

    if t.numel() == 0:
        return 0.0
    return float(t.detach().to(torch.float64).clamp_min(0).sum())


def _max(t) -> float:
    import torch

    return float(t.detach().to(torch.float64).max()) if t.numel() else 0.0


def _repeat_interleave(a: dict) -> float:
    repeats = _tensor(a["repeats"], "repeats")
    n = _sum(repeats)
    if a.get("output_size") is not None:
        n = max(n, float(a["output_size"]))
    if "self" not in a:  # repeat_interleave.Tensor: the indices 0.. repeated
        return n * 8
    x = _tensor(a["self"], "self")
    dim = a.get("dim")
    if dim is None:
        size, rest = x.numel(), 1
    else:
        size = x.shape[dim] if x.dim() else 1
        rest = x.numel() // size if size else 0
    if repeats.numel() == 1:  # one count for every slice
        n = max(n, _sum(repeats) * size)
    return n * 8 + n * rest * x.element_size()  # the index tensor, then the gathered slices


def _nonzero(a: dict) -> float:
    x = _tensor(a["self"], "self")
    return 2.0 * x.numel() * max(x.dim(), 1) * 8  # the indices (and a per-dim copy)


def _broadcast_numel(*ts) -> int:
    import torch

    return math.prod(torch.broadcast_shapes(*(t.shape for t in ts)))


def _masked_select(a: dict) -> float:
    x, mask = _tensor(a["self"], "self"), _tensor(a["mask"], "mask")
    n = _broadcast_numel(x, mask)
    return n * x.element_size() + n * max(x.dim(), mask.dim(), 1) * 8


def _unique(a: dict) -> float:
    x = _tensor(a["self"], "self")
    return x.numel() * (x.element_size() + 3 * 8)  # values, inverse, counts, sort indices


def _bincount(a: dict) -> float:
    x = _tensor(a["self"], "self")
    n = max(_max(x) + 1 if x.numel() else 0, float(a.get("minlength") or 0))
    return n * 8


def _one_hot(a: dict) -> float:
    x = _tensor(a["self"], "self")
    k = a.get("num_classes")
    k = _max(x) + 1 if k is None or k < 0 else float(k)
    return x.numel() * max(k, 0) * 8


def _index(a: dict) -> float:
    """`x[mask]` (a bool or uint8 index): each mask becomes its nonzero's index tensors,
    counted here; the result is then sized on fake tensors with those indices."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = _tensor(a["self"], "self")
    extra = 0.0
    mode = FakeTensorMode()
    with mode:
        fake_x = mode.from_tensor(x)
        indices = []
        for i in a["indices"] or ():
            if i is None:
                indices.append(None)
            elif i.dtype in (torch.bool, torch.uint8):
                with torch._subclasses.fake_tensor.unset_fake_temporarily():
                    count = int(torch.count_nonzero(i))
                extra += 2.0 * count * max(i.dim(), 1) * 8
                indices.extend(torch.empty((count,), dtype=torch.int64) for _ in range(i.dim()))
            else:
                indices.append(mode.from_tensor(i))
        out = torch.ops.aten.index.Tensor(fake_x, indices)
    return out.numel() * out.element_size() + extra


def _scalar(a: dict) -> float:
    return 8.0


def _lstsq(a: dict) -> float:
    """linalg_lstsq(A, B): solution, residuals, rank and singular values, each no bigger than
    A or B (float64 at most, 16 bytes an element for complex)."""
    x, y = _tensor(a["self"], "self"), _tensor(a["b"], "b")
    return 16.0 * (x.numel() + 2 * y.numel() + min(x.shape[-2:], default=1) * 2 + 8)


TORCH_BOUNDS: dict[str, Callable[[dict], float]] = {
    "aten.linalg_lstsq.default": _lstsq,
    "aten.repeat_interleave.Tensor": _repeat_interleave,
    "aten.repeat_interleave.self_Tensor": _repeat_interleave,
    "aten.nonzero.default": _nonzero,
    "aten.nonzero.out": _nonzero,
    "aten.argwhere.default": _nonzero,
    "aten.nonzero_numpy.default": _nonzero,
    "aten.masked_select.default": _masked_select,
    "aten.masked_select.out": _masked_select,
    "aten._unique.default": _unique,
    "aten._unique2.default": _unique,
    "aten.unique_dim.default": _unique,
    "aten.unique_consecutive.default": _unique,
    "aten.unique_dim_consecutive.default": _unique,
    "aten.bincount.default": _bincount,
    "aten.one_hot.default": _one_hot,
    "aten.index.Tensor": _index,
    "aten.item.default": _scalar,
    "aten._local_scalar_dense.default": _scalar,
    "aten.equal.default": _scalar,
}
"""Bounds, in bytes, of what an op whose result size depends on its input values makes (its
results and the index tensors it builds on the way), from the actual arguments. The ops are
every ATen op torch tags ``dynamic_output_shape`` or ``data_dependent_output`` (the ones
FakeTensorMode cannot size) and the composite ones that call them."""


def torch_bound(target: str, op, args: list, kwargs: Mapping[str, Any]) -> float | None:
    """The bound in bytes of what `op` makes on these (real) arguments, or None when passlens
    has none for it. OpaqueOpError when the arguments do not fit the bound's reading of them
    (the op would refuse them too; it is not run to find out)."""
    fn = TORCH_BOUNDS.get(target)
    if fn is None:
        return None
    try:
        return float(fn(_by_name(op, target, args, kwargs)))
    except Exception as e:
        head = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise OpaqueOpError(
            f"torch {target}: its output size depends on its input values and could not be "
            f"bounded from these arguments ({type(e).__name__}: {head}); it was not run"
        ) from None


# ----- onnx: bounds from the actual inputs ------------------------------------------------------


def _onnx_range(arrays: list, attrs) -> float:
    start, limit = (float(np.asarray(a).reshape(-1)[0]) for a in arrays[:2])
    delta = float(np.asarray(arrays[2]).reshape(-1)[0]) if len(arrays) > 2 else 1.0
    if delta == 0 or not all(math.isfinite(v) for v in (start, limit, delta)):
        return math.inf if delta == 0 or not math.isfinite(limit - start) else 0.0
    n = max(math.ceil((limit - start) / delta), 0)
    return n * np.asarray(arrays[0]).dtype.itemsize


def _onnx_nonzero(arrays: list, attrs) -> float:
    x = arrays[0]
    return x.size * max(x.ndim, 1) * 8.0


def _onnx_unique(arrays: list, attrs) -> float:
    x = arrays[0]
    return x.size * (x.dtype.itemsize + 3 * 8.0)


def _onnx_compress(arrays: list, attrs) -> float:
    x = arrays[0]
    return float(x.size * x.dtype.itemsize)


ONNX_BOUNDS: dict[str, Callable[[list, Mapping[str, Any]], float]] = {
    "ai.onnx::Range": _onnx_range,
    "com.microsoft::Range": _onnx_range,
    "ai.onnx::NonZero": _onnx_nonzero,
    "ai.onnx::Unique": _onnx_unique,
    "ai.onnx::Compress": _onnx_compress,
}
"""Bounds, in bytes, of what an ONNX op whose result size depends on its input values makes,
where ONNX shape inference cannot size it (a NonZero, a contrib op without an ONNX schema)."""


def onnx_bound(target: str, arrays: list, attrs: Mapping[str, Any]) -> float | None:
    fn = ONNX_BOUNDS.get(target)
    if fn is None:
        return None
    try:
        return float(fn(arrays, attrs))
    except Exception as e:
        raise OpaqueOpError(
            f"onnxruntime {target}: its output size depends on its input values and could not "
            f"be bounded from these inputs ({type(e).__name__}: {e}); it was not run"
        ) from None


def value_input(a: np.ndarray) -> bool:
    """Whether ONNX shape inference is given `a` as a value (small and numeric)."""
    return a.dtype.kind in "biuf" and a.size <= MAX_VALUE_INPUT


# ----- a budget where sizing is impossible -----------------------------------------------------

_BUDGET_LOCK = threading.RLock()


def _address_space() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


OUT_OF_MEMORY = (
    "can't allocate memory",
    "failed to allocate memory",
    "bad_alloc",
    "unable to allocate",
    "out of memory",
    "cannot allocate memory",
)


def out_of_memory(e: BaseException) -> bool:
    text = str(e).lower()
    return isinstance(e, MemoryError) or any(s in text for s in OUT_OF_MEMORY)


@contextlib.contextmanager
def memory_budget(what: str, budget: int):
    """Run the body with this process's address space limited to what it holds now plus
    `budget` (and `BUDGET_HEADROOM`): an allocation past it fails in the body, which raises
    BudgetError naming `what` and the budget. Where the limit cannot be set (no
    `resource` module or `/proc`), OpaqueOpError: the body is not run. One body at a time
    (the limit is the process's)."""
    try:
        import resource
    except ImportError:
        resource = None
    now = _address_space()
    if resource is None or now is None:
        raise OpaqueOpError(
            f"{what}: its output size cannot be known before it runs, and this platform cannot "
            "run it under a memory budget; it was not run"
        )
    with _BUDGET_LOCK:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = now + budget + BUDGET_HEADROOM
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, soft)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        try:
            yield
        except Exception as e:
            if out_of_memory(e):
                raise BudgetError(
                    f"{what} needed more than {gib(budget)} (its output size could not be "
                    "known before it ran, so it ran under that budget: "
                    "compiler.opaque.run.MAX_RESULT_BYTES) and was stopped"
                ) from None
            raise
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_CHILD = r"""
import json, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
folder, mode, OOM = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
optimize = sys.argv[5] == "optimize"

def done(status, **extra):
    with open(folder + "/status.json", "w") as f:
        json.dump(dict(status=status, **extra), f)
    sys.exit(0)

def memory(e):
    text = str(e).lower()
    return isinstance(e, MemoryError) or any(s in text for s in OOM)

try:
    import numpy as np
    with np.load(folder + "/inputs.npz", allow_pickle=False) as z:
        runtime = [z["in%d" % i] for i in range(len(z.files))]
    runtime = [x.astype(object) if x.dtype.kind == "U" else x for x in runtime]
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    outs = None
    try:
        try:
            sess = ort.InferenceSession(folder + "/model.onnx", options,
                                        providers=["CPUExecutionProvider"])
        except Exception as e:
            if mode == "fallback" or memory(e):
                raise
            text = str(e).replace(folder + "/", "")  # not the temporary folder's name
            done("refused", message="%s: %s" % (type(e).__name__, text))
        names = [i.name for i in sess.get_inputs()]
        if len(names) != len(runtime):
            done("inputs", count=len(names))
        outs = sess.run(None, dict(zip(names, runtime)))
        how = None
        missing_kernel = False
    except Exception as e:
        if mode != "fallback" or memory(e):
            raise
        first = str(e)[:200]
        missing_kernel = type(e).__name__ == "NotImplemented"
    if outs is None:  # no float64 kernel (Erf, ...): onnx's own numpy reference runs it
        import onnx
        from onnx.reference import ReferenceEvaluator
        model = onnx.load(folder + "/model.onnx")
        init = {t.name for t in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in init]
        if missing_kernel:  # onnxruntime runs the nodes it has kernels for (onnx_mixed.py)
            try:
                outs, by_reference = run_mixed(model, dict(zip(names, runtime)), options)
                how = "mixed:" + ",".join(by_reference)
            except Exception as e3:
                if memory(e3):
                    raise
                outs = None
                first = "%s (split run: %s)" % (first, str(e3)[:200])
    if outs is None:
        try:
            outs = ReferenceEvaluator(model).run(None, dict(zip(names, runtime)))
        except Exception as e2:
            if memory(e2):
                raise
            done("error", message="onnxruntime: %s; onnx.reference: %s" % (first, e2))
        how = "reference"
    arrays = {}
    for k, o in enumerate(outs):
        o = np.asarray(o)
        arrays["out%d" % k] = o.astype(str) if o.dtype == object else o
    np.savez(folder + "/outputs.npz", **arrays)
    done("ok", how=how, objects=[k for k, o in enumerate(outs) if np.asarray(o).dtype == object])
except SystemExit:
    raise
except BaseException as e:
    done("memory" if memory(e) else "error", message="%s: %s" % (type(e).__name__, e))
"""


# the child's program: the split run (onnx_mixed.py, which imports nothing of passlens) first
_CHILD = (
    open(os.path.join(os.path.dirname(__file__), "onnx_mixed.py"), encoding="utf-8").read() + _CHILD
)

CHILD_SECONDS = 900
"""How long the child running a whole ONNX model (``run_onnx_model``) may take: a model from
a file can loop without allocating (a ``Loop`` whose condition stays true); past it the child
is ended and a BudgetError says so."""


@contextlib.contextmanager
def _timed(what: str):
    try:
        yield
    except subprocess.TimeoutExpired:
        raise BudgetError(
            f"{what} did not finish within {CHILD_SECONDS} s "
            "(compiler.opaque.sizes.CHILD_SECONDS) and was stopped"
        ) from None


def run_onnx_model(
    model: bytes,
    runtime: list,
    *,
    what: str,
    budget: int,
    fallback: bool = False,
    budget_name: str = "compiler.opaque.run.MAX_RESULT_BYTES",
    optimize: bool = True,
) -> tuple[list[np.ndarray], str | None]:
    """Run the serialized ONNX `model` on `runtime` (its inputs in order) with onnxruntime
    (CPUExecutionProvider) in a child process whose address space is limited to
    `MODEL_COPIES` x the model, its inputs, `budget` and `CHILD_HEADROOM`: an allocation
    past it fails there and becomes a BudgetError naming `what`; a crash of the child is an
    OpaqueOpError. With `fallback`, when onnxruntime has no kernel for some node (in its
    dtype: float64 Conv, Erf), onnxruntime runs the nodes it has kernels for and onnx's
    reference evaluator the others (compiler/opaque/onnx_mixed.py), or, when that split run
    fails or onnxruntime fails otherwise, the reference evaluator runs the whole model. The
    outputs, and how they were made: None (onnxruntime), "mixed:<op types the reference
    ran, comma-separated>" or "reference". ValueError("inputs", n) when the model takes n
    inputs, not `len(runtime)`; ModelRefusedError when onnxruntime cannot make a session
    of it (without `fallback`).
    `optimize=False`: onnxruntime runs the model with its graph optimizations off (the model
    as it is, as a step of an ONNX Runtime trace is checked)."""
    arrays = [np.asarray(x) for x in runtime]
    inputs_bytes = sum(a.nbytes for a in arrays)
    limit = MODEL_COPIES * len(model) + inputs_bytes + budget + CHILD_HEADROOM
    with tempfile.TemporaryDirectory(prefix="passlens-onnx-") as folder, _timed(what):
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(model)
        feed = {f"in{i}": (a.astype(str) if a.dtype == object else a) for i, a in enumerate(arrays)}
        np.savez(os.path.join(folder, "inputs.npz"), **feed)
        with open(os.path.join(folder, "log.txt"), "wb") as log:
            proc = subprocess.run(
                [
                    sys.executable,
                    "-I",
                    "-c",
                    _CHILD,
                    str(limit),
                    folder,
                    "fallback" if fallback else "plain",
                    json.dumps(OUT_OF_MEMORY),
                    "optimize" if optimize else "as-is",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                check=False,
                timeout=CHILD_SECONDS,
            )
        status = None
        try:
            with open(os.path.join(folder, "status.json")) as f:
                status = json.load(f)
        except (OSError, ValueError):
            pass
        if status is None:
            with open(os.path.join(folder, "log.txt"), "rb") as f:
                tail = escape(f.read(4000).decode("utf-8", "backslashreplace"), 300)
            raise BudgetError(
                f"{what} stopped (exit status {proc.returncode}) within a budget of "
                f"{gib(budget)} beyond the model and its inputs (address space "
                f"{gib(limit)}): {tail or 'no message'}"
            )
        if status["status"] == "inputs":
            raise ValueError("inputs", status["count"])
        if status["status"] == "memory":
            raise BudgetError(
                f"{what} needed more than {gib(budget)} beyond the model and its inputs "
                f"(address space {gib(limit)}; {budget_name}) and was stopped: "
                f"{escape(status['message'], 300)}"
            )
        if status["status"] == "refused":
            reason = escape(status["message"], 600)
            raise ModelRefusedError(
                f"{what} failed: onnxruntime refuses the model: {reason}", reason
            )
        if status["status"] != "ok":
            raise OpaqueOpError(f"{what} failed: {escape(status['message'], 600)}")
        objects = set(status.get("objects") or ())
        with np.load(os.path.join(folder, "outputs.npz"), allow_pickle=False) as z:
            outs = [z[f"out{k}"] for k in range(len(z.files))]
        outs = [o.astype(object) if k in objects else o for k, o in enumerate(outs)]
        return outs, status.get("how")


# ----- what an op prints -----------------------------------------------------------------------


class OpaqueOutputWarning(UserWarning):
    """An opaque op printed something while it ran (shown escaped, never raw)."""


def escape(text: str, cap: int = MAX_PRINTED) -> str:
    """`text` with every character that is not printable (ESC, BEL, CR, newlines too)
    written as an escape (`\\x1b`), cut to `cap` characters with a note."""
    out = []
    for c in text[: cap + 1]:
        if c.isprintable():
            out.append(c)
        else:
            out.append(c.encode("unicode_escape").decode("ascii"))
    s = "".join(out)
    if len(text) > cap or len(s) > cap:
        s = s[:cap] + f"... ({len(text):,} characters in all)"
    return s


class _Capped(io.TextIOBase):
    """A text stream keeping the first `MAX_PRINTED` characters written to it."""

    def __init__(self):
        self.parts: list[str] = []
        self.kept = 0
        self.total = 0

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        s = str(s)
        self.total += len(s)
        if self.kept <= MAX_PRINTED:
            self.parts.append(s[: MAX_PRINTED + 1 - self.kept])
            self.kept += len(self.parts[-1])
        return len(s)


_STDIO: list = []  # libc's fflush and its stdout / stderr FILE pointers, found once


def _flush_c() -> None:
    """Flush C stdio's stdout and stderr (text a C library printed but has not written yet)."""
    with contextlib.suppress(Exception):
        if not _STDIO:
            import ctypes

            libc = ctypes.CDLL(None)
            streams = [ctypes.c_void_p.in_dll(libc, n) for n in ("stdout", "stderr")]
            _STDIO.append((libc.fflush, streams))
        fflush, streams = _STDIO[0]
        for f in streams:
            fflush(f)


_SINK: list = []  # one temporary file, reused (truncated) by every capture


_CAPTURE_LOCK = threading.RLock()
_capturing = threading.local()


@contextlib.contextmanager
def captured_output(what: str):
    """Capture what the body writes to fd 1 / fd 2 (C and C++ code, onnxruntime's log) and to
    `sys.stdout` / `sys.stderr` (Python code), then warn it once, escaped and cut
    (OpaqueOutputWarning naming `what`). One capture at a time (fds are the process's);
    nested captures are the outer one."""
    if getattr(_capturing, "on", False):
        yield
        return
    with _CAPTURE_LOCK:
        _capturing.on = True
        for s in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                s.flush()
        _flush_c()
        py = _Capped()
        saved_py = sys.stdout, sys.stderr
        if not _SINK:
            _SINK.append(tempfile.TemporaryFile())
        tmp = _SINK[0]
        saved = []
        try:
            for fd in (1, 2):
                try:
                    saved.append((fd, os.dup(fd)))
                    os.dup2(tmp.fileno(), fd)
                except OSError:  # no such fd (a service without a terminal): nothing to hide
                    pass
            sys.stdout = sys.stderr = py
            yield
        finally:
            sys.stdout, sys.stderr = saved_py
            _flush_c()
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)
            size = os.lseek(tmp.fileno(), 0, os.SEEK_END)  # what fd 1 and fd 2 wrote
            raw = ""
            if size:
                os.lseek(tmp.fileno(), 0, os.SEEK_SET)
                raw = os.read(tmp.fileno(), 4 * MAX_PRINTED).decode("utf-8", "backslashreplace")
                os.lseek(tmp.fileno(), 0, os.SEEK_SET)
                os.ftruncate(tmp.fileno(), 0)
            _capturing.on = False
            text = "".join(py.parts) + raw
            total = py.total + size
            if total:
                note = f" ({total:,} characters in all)" if total > len(text) else ""
                warnings.warn(
                    f"{what} printed while it ran (escaped): {escape(text)}{note}",
                    OpaqueOutputWarning,
                    stacklevel=3,
                )


__all__ = [
    "MAX_RANK",
    "MAX_VALUE_INPUT",
    "ONNX_BOUNDS",
    "TORCH_BOUNDS",
    "BudgetError",
    "OpaqueOutputWarning",
    "captured_output",
    "escape",
    "memory_budget",
    "onnx_bound",
    "run_onnx_model",
    "bind",
    "torch_bound",
    "value_input",
]
