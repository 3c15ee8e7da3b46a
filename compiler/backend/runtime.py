"""Running compiled kernels on numpy arrays: binding symbolic dims, allocating the output and
workspaces, calling each compiled stage and performing library calls.

Parallelism: one pool of threads does all the work. A stage big enough is cut into more
chunks than threads, which the threads take one at a time (a thread slowed down by another
process on its core then simply takes fewer); ctypes releases the GIL during each call. A
matrix product is cut the same way into row or column blocks, each a single-threaded BLAS
call (numpy releases the GIL too): OpenBLAS's own threads are set to 1 while a kernel runs,
because its spinning threads and ours competing for the cores was measured to make a
ConvNeXt forward 4x slower on a loaded 2-core machine.

A :class:`KernelInfo` is everything the runtime needs about a kernel (buffers, dims, steps),
serialisable to JSON, so an exported artifact can be loaded without the loop IR.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.backend import loops as L
from compiler.backend.codegen import LibStep, LoopStep
from compiler.blas_threads import cpu_threads, one_blas_thread, parallel_chunks
from compiler.errors import PasslensError
from compiler.ir.symbolic import solve_dim
from compiler.ir.types import DType

# A stage with fewer estimated iterations than this runs on the calling thread only.
PARALLEL_MIN_WORK = 1 << 15

_STAGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


class KernelRunError(PasslensError, RuntimeError):
    """A kernel was called with arrays that do not fit its buffers; the message says how."""


thread_count = cpu_threads  # the runtime's threads: PASSLENS_THREADS or the CPUs it may use


# ----- index expressions: evaluation and JSON ---------------------------------------------


def eval_index(e: L.Expr, env: dict[str, int]) -> int:
    """The value of an i64 expression (a shape dim or loop extent) given dim values."""
    if isinstance(e, L.Const):
        return int(e.value)
    if isinstance(e, L.Var):
        if e.name not in env:
            raise KernelRunError(f"no value for symbolic dim {e.name}")
        return int(env[e.name])
    if isinstance(e, L.Binary):
        a, b = eval_index(e.a, env), eval_index(e.b, env)
        folded = L.fold_int(e.op, a, b)
        if folded is None:
            raise KernelRunError(f"cannot evaluate {e} (division by zero?)")
        return folded
    raise KernelRunError(f"{e} is not an index expression")


def expr_to_json(e: L.Expr) -> Any:
    """An index expression as nested lists: ``["c", 4]``, ``["v", "n"]``, ``["mul", a, b]``."""
    if isinstance(e, L.Const):
        return ["c", int(e.value)]
    if isinstance(e, L.Var):
        return ["v", e.name]
    if isinstance(e, L.Binary):
        return [e.op, expr_to_json(e.a), expr_to_json(e.b)]
    raise TypeError(f"{e} is not an index expression")


def expr_from_json(j: Any) -> L.Expr:
    """The inverse of :func:`expr_to_json`."""
    if j[0] == "c":
        return L.Const(j[1], L.INDEX)
    if j[0] == "v":
        return L.Var(j[1])
    return L.Binary(j[0], expr_from_json(j[1]), expr_from_json(j[2]))


# ----- library routines ---------------------------------------------------------------------


# A product smaller than this (multiply-adds) is one call.
PARALLEL_MIN_MACS = 1 << 20


def _numpy_matmul(out: np.ndarray, args: list[np.ndarray], attrs: dict) -> None:
    a, b = args
    compute = DType.of(attrs["compute"]).numpy if "compute" in attrs else a.dtype
    if not (a.dtype == compute and b.dtype == compute and out.dtype == compute):
        out[...] = np.matmul(a.astype(compute), b.astype(compute)).astype(out.dtype)
        return
    if a.ndim == 2 and _read_transposed(b) and a.shape[0] <= 64 < b.shape[1]:
        # b is a row-major (n, k) weight read transposed (matmul transpose_b: a tied
        # embedding table) by few rows: BLAS is faster with the big matrix as the left
        # operand, so out.T = b.T @ a.T (1.7x at 16 rows here), then transposed back
        _transposed_product(out, a, b.T)
        return
    if a.ndim != 2 or b.ndim != 2 or thread_count() == 1:
        with one_blas_thread():
            np.matmul(a, b, out=out)
        return
    (m, k), n = a.shape, b.shape[1]
    if m * n * k < PARALLEL_MIN_MACS:
        with one_blas_thread():
            np.matmul(a, b, out=out)
        return
    # blocks of rows, or of columns when there are fewer rows than columns (then each
    # thread packs only its part of b, as OpenBLAS's own threads do), two per thread
    by_rows = m > n
    size = m if by_rows else n
    chunks = max(1, min(2 * thread_count(), size // 16))
    bounds = [size * c // chunks for c in range(chunks + 1)]

    def block(c: int) -> None:
        lo, hi = bounds[c], bounds[c + 1]
        if by_rows:
            np.matmul(a[lo:hi], b, out=out[lo:hi])
        else:
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])

    with one_blas_thread():
        parallel_chunks(chunks, block)


def _read_transposed(b: np.ndarray) -> bool:
    """Whether ``b`` is a transposed view of a row-major matrix (column-major, not row-major)."""
    return b.ndim == 2 and b.flags.f_contiguous and not b.flags.c_contiguous


def _transposed_product(out: np.ndarray, a: np.ndarray, w: np.ndarray) -> None:
    """``out = a @ w.T`` for a row-major ``w`` (n, k), computed as ``(w @ a.T).T``."""
    n, m = w.shape[0], a.shape[0]
    tmp = np.empty((n, m), out.dtype)
    chunks = 1
    if thread_count() > 1 and m * n * a.shape[1] >= PARALLEL_MIN_MACS:
        chunks = max(1, min(2 * thread_count(), n // 16))
    bounds = [n * c // chunks for c in range(chunks + 1)]

    def block(c: int) -> None:
        lo, hi = bounds[c], bounds[c + 1]
        np.matmul(w[lo:hi], a.T, out=tmp[lo:hi])

    with one_blas_thread():
        if chunks == 1:
            block(0)
        else:
            parallel_chunks(chunks, block)
    out[...] = tmp.T


LIBRARY: dict[str, Callable[[np.ndarray, list[np.ndarray], dict], None]] = {
    "numpy.matmul": _numpy_matmul,
}


# ----- kernel metadata ------------------------------------------------------------------------


@dataclass(frozen=True)
class BufferInfo:
    """A kernel buffer as the runtime sees it."""

    name: str
    dtype: DType
    shape: tuple[L.Expr, ...]
    role: str


@dataclass(frozen=True)
class KernelInfo:
    """What the runtime needs to run a kernel: its buffers (params, then workspaces), the
    symbolic dims it takes, and its steps."""

    name: str
    buffers: tuple[BufferInfo, ...]
    dims: tuple[str, ...]
    steps: tuple[Any, ...]  # LoopStep | LibStep

    @staticmethod
    def of(kernel: L.Kernel, steps: Sequence[Any]) -> KernelInfo:
        """The info of a kernel whose stages codegen turned into ``steps``."""
        bufs = tuple(BufferInfo(b.name, b.dtype, b.shape, b.role) for b in kernel.buffers)
        return KernelInfo(kernel.name, bufs, kernel.dims, tuple(steps))

    def to_json(self) -> dict:
        """A JSON-able dict (see :meth:`from_json`)."""
        index = {b.name: i for i, b in enumerate(self.buffers)}

        def view(v: L.View) -> dict:
            return {
                "buffer": index[v.buffer.name],
                "shape": [expr_to_json(d) for d in v.shape],
                "transpose": v.transpose,
            }

        steps = []
        for s in self.steps:
            if isinstance(s, LoopStep):
                steps.append(
                    {
                        "kind": "loop",
                        "symbol": s.symbol,
                        "label": s.label,
                        "extent": None if s.extent is None else expr_to_json(s.extent),
                        "work": s.work,
                    }
                )
            else:
                c = s.call
                steps.append(
                    {
                        "kind": "library",
                        "routine": c.routine,
                        "label": c.label,
                        "out": view(c.out),
                        "args": [view(a) for a in c.args],
                        "attrs": {k: _attr_json(v) for k, v in c.attrs},
                    }
                )
        return {
            "name": self.name,
            "buffers": [
                {
                    "name": b.name,
                    "dtype": b.dtype.name,
                    "shape": [expr_to_json(d) for d in b.shape],
                    "role": b.role,
                }
                for b in self.buffers
            ],
            "dims": list(self.dims),
            "steps": steps,
        }

    @staticmethod
    def from_json(j: dict) -> KernelInfo:
        """Rebuild the info written by :meth:`to_json`."""
        bufs = tuple(
            BufferInfo(
                b["name"],
                DType.of(b["dtype"]),
                tuple(expr_from_json(d) for d in b["shape"]),
                b["role"],
            )
            for b in j["buffers"]
        )
        lbufs = [L.Buffer(b.name, b.shape, b.dtype, b.role) for b in bufs]

        def view(v: dict) -> L.View:
            return L.View(
                lbufs[v["buffer"]], tuple(expr_from_json(d) for d in v["shape"]), v["transpose"]
            )

        steps: list[Any] = []
        for s in j["steps"]:
            if s["kind"] == "loop":
                ext = None if s["extent"] is None else expr_from_json(s["extent"])
                steps.append(LoopStep(s["symbol"], s["label"], ext, int(s["work"])))
            else:
                call = L.LibCall(
                    s["routine"],
                    view(s["out"]),
                    tuple(view(a) for a in s["args"]),
                    tuple(s["attrs"].items()),
                    s["label"],
                )
                steps.append(LibStep(call))
        return KernelInfo(j["name"], bufs, tuple(j["dims"]), tuple(steps))


def _attr_json(v: Any) -> Any:
    return v.name if isinstance(v, DType) else v


def bind_dims(pairs: Sequence[tuple[Sequence[L.Expr], Sequence[int]]], env: dict[str, int]) -> None:
    """Give values to the symbolic dims of declared shapes from actual shapes: a dim that is a
    symbol binds it; a dim of one unbound symbol (``2*n + 1``, ``n // 2 + 1``) is solved for it
    (``compiler.ir.symbolic.solve_dim``)."""
    pending = [(d, int(a)) for shape, actual in pairs for d, a in zip(shape, actual, strict=False)]
    progress = True
    while progress:
        progress = False
        for d, a in pending:
            unbound = sorted(L.free_vars(d) - env.keys())
            if len(unbound) != 1:
                continue
            (name,) = unbound
            if isinstance(d, L.Var):
                env[name] = a
                progress = True
                continue
            # n // 2 + 1 too: every use of n in a kernel goes through its buffers' sizes
            found = solve_dim(
                lambda v, d=d, name=name: _size(d, {**env, name: v}), a, monotone=True
            )
            if found is not None:
                env[name] = found
                progress = True


def _size(d: L.Expr, env: dict[str, int]) -> int:
    try:
        return eval_index(d, env)
    except KernelRunError as e:  # a division by zero at this value: not a solution
        raise ArithmeticError(str(e)) from None


class CompiledKernel:
    """A kernel ready to run: its info and the compiled stage functions. ``owner`` is what
    holds the machine code (a JIT engine): kept alive as long as the kernel is."""

    def __init__(self, info: KernelInfo, address: Callable[[str], int], owner: Any = None):
        self.info = info
        self.owner = owner
        self.functions = {
            s.symbol: _STAGE_FN(address(s.symbol)) for s in info.steps if isinstance(s, LoopStep)
        }
        self.inputs = [b for b in info.buffers if b.role == "in"]
        self.output = next(b for b in info.buffers if b.role == "out")
        self.workspaces = [b for b in info.buffers if b.role == "work"]

    def __repr__(self) -> str:
        return f"<CompiledKernel @{self.info.name}: {len(self.info.steps)} steps>"

    def run(
        self,
        inputs: Sequence[np.ndarray],
        out_shape: Sequence[int] | None = None,
        env: dict[str, int] | None = None,
    ) -> np.ndarray:
        """Run on ``inputs`` (converted to contiguous arrays); returns a new output array.
        ``out_shape`` binds dims that appear only in the output; ``env`` gives dims the caller
        knows (checked against the inputs like every other dim)."""
        name = self.info.name
        if len(inputs) != len(self.inputs):
            raise KernelRunError(
                f"kernel @{name} takes {len(self.inputs)} inputs, got {len(inputs)}"
            )
        arrays = []
        for buf, a in zip(self.inputs, inputs, strict=False):
            a = np.asarray(a)
            if a.dtype != buf.dtype.numpy:
                raise KernelRunError(
                    f"kernel @{name}: input %{buf.name} must be {buf.dtype.name}, got {a.dtype}"
                )
            arrays.append(a if a.flags.c_contiguous else np.array(a, order="C"))
        env = dict(env) if env else {}
        for buf, a in zip(self.inputs, arrays, strict=False):
            if a.ndim != len(buf.shape):
                raise KernelRunError(
                    f"kernel @{name}: input %{buf.name} must have rank {len(buf.shape)}, "
                    f"got shape {a.shape}"
                )
        pairs = [(b.shape, a.shape) for b, a in zip(self.inputs, arrays, strict=False)]
        if out_shape is not None:
            pairs.append((self.output.shape, tuple(out_shape)))
        bind_dims(pairs, env)
        missing = [d for d in self.info.dims if d not in env]
        if missing:
            raise KernelRunError(
                f"kernel @{name}: the sizes of its inputs do not determine {', '.join(missing)}"
            )
        for buf, a in zip(self.inputs, arrays, strict=False):
            want = tuple(eval_index(d, env) for d in buf.shape)
            if want != a.shape:
                where = ", ".join(f"{k} = {v}" for k, v in sorted(env.items()))
                raise KernelRunError(
                    f"kernel @{name}: input %{buf.name} must have shape {list(want)}"
                    + (f" (where {where})" if where else "")
                    + f", got {a.shape}"
                )
        out = np.empty(
            tuple(eval_index(d, env) for d in self.output.shape), self.output.dtype.numpy
        )
        works = [
            np.empty(tuple(eval_index(d, env) for d in w.shape), w.dtype.numpy)
            for w in self.workspaces
        ]
        by_name = {b.name: a for b, a in zip(self.inputs, arrays, strict=False)}
        by_name[self.output.name] = out
        by_name.update((w.name, a) for w, a in zip(self.workspaces, works, strict=False))
        ordered = [by_name[b.name] for b in self.info.buffers]
        ptrs = (ctypes.c_void_p * max(len(ordered), 1))(*[a.ctypes.data for a in ordered])
        dims = (ctypes.c_int64 * max(len(self.info.dims), 1))(*[env[d] for d in self.info.dims])
        for step in self.info.steps:
            if isinstance(step, LoopStep):
                fn = self.functions[step.symbol]
                extent = 1 if step.extent is None else eval_index(step.extent, env)
                _run_parallel(fn, ptrs, dims, extent, step.work)
            else:
                call = step.call
                outv = _view(by_name[call.out.buffer.name], call.out, env)
                args = [_view(by_name[v.buffer.name], v, env) for v in call.args]
                LIBRARY[call.routine](outv, args, dict(call.attrs))
        return out


def _view(a: np.ndarray, v: L.View, env: dict[str, int]) -> np.ndarray:
    shape = tuple(eval_index(d, env) for d in v.shape)
    out = a.reshape(shape)
    return np.swapaxes(out, -1, -2) if v.transpose else out


def _run_parallel(fn, ptrs, dims, extent: int, work: int) -> None:
    if extent <= 0:
        return
    n = thread_count()
    if n == 1 or extent == 1 or extent * work < PARALLEL_MIN_WORK:
        fn(ptrs, dims, 0, extent)
        return
    chunks = min(4 * n, extent)
    bounds = [extent * k // chunks for k in range(chunks + 1)]
    parallel_chunks(chunks, lambda k: fn(ptrs, dims, bounds[k], bounds[k + 1]))


__all__ = [
    "CompiledKernel",
    "KernelInfo",
    "KernelRunError",
    "LIBRARY",
    "eval_index",
    "thread_count",
]
