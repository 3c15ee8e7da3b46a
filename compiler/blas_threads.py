"""Running numpy's BLAS on one thread for a while, and work split among threads of our own.
The interpreter's blocked float64 matmul (``nn_compute.matmul_f64``) makes thousands of small
calls, each of which a multi-threaded OpenBLAS splits across its threads and waits for; on a
busy 2-core machine that wait made a 1 GiB matmul 30x slower than on one thread (13 s against
0.4 s): its blocks go to ``parallel_chunks``'s threads instead, one BLAS thread each, as the
compiled runtime (backend/runtime.py) runs its library calls. OpenBLAS is found among the
loaded libraries (as threadpoolctl does); without it nothing changes.

A module of compiler/ itself, not of compiler/ops/ (op families only) or compiler/backend/:
both the interpreter's ops and the compiled runtime use it."""

from __future__ import annotations

import ctypes
import itertools
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GETTERS = tuple(s.replace("set_", "get_") for s in _SETTERS)
_found: list | None = None  # [(set, get)] of each OpenBLAS loaded


def _openblas() -> list:
    global _found
    if _found is not None:
        return _found
    _found = []
    try:
        import numpy  # noqa: F401 (loads numpy's BLAS)

        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:  # not Linux: leave the threads alone
        return _found
    for path in sorted(p for p in paths if p.startswith("/")):
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 4))  # only if loaded
        except OSError:
            continue
        for setter, getter in zip(_SETTERS, _GETTERS, strict=True):
            if hasattr(lib, setter) and hasattr(lib, getter):
                get = getattr(lib, getter)
                get.restype = ctypes.c_int
                _found.append((getattr(lib, setter), get))
                break
    return _found


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS (OpenBLAS) on one thread inside the block, as many threads as before
    after it."""
    libs = _openblas()
    before = [get() for _, get in libs]
    for set_, _ in libs:
        set_(1)
    try:
        yield
    finally:
        for (set_, _), n in zip(libs, before, strict=True):
            set_(n)


def cpu_threads() -> int:
    """The CPUs this process may run on (``PASSLENS_THREADS`` when set)."""
    env = os.environ.get("PASSLENS_THREADS")
    if env:
        return max(1, int(env))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


_pool: ThreadPoolExecutor | None = None


def parallel_chunks(n_chunks: int, fn: Callable[[int], None]) -> None:
    """Call ``fn(k)`` for k in ``range(n_chunks)`` on a pool's threads and this one, each
    thread taking the next chunk when it is done with one (numpy releases the GIL in its
    copies and BLAS calls). An exception of ``fn`` is raised here."""
    global _pool
    workers = min(cpu_threads(), n_chunks)
    if workers <= 1:
        for k in range(n_chunks):
            fn(k)
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=max(cpu_threads() - 1, 1), thread_name_prefix="blas")
    counter = itertools.count()  # next() is atomic under the GIL

    def work() -> None:
        for k in counter:
            if k >= n_chunks:
                return
            fn(k)

    futures = [_pool.submit(work) for _ in range(workers - 1)]
    work()
    for f in futures:
        f.result()
