"""Running numpy's BLAS on one thread for a while. The interpreter's blocked float64 matmul
(``nn._matmul_f64_blocks``) makes thousands of small calls, each of which a multi-threaded
OpenBLAS splits across its threads and waits for; on a busy 2-core machine that wait made a
1 GiB matmul 30x slower than on one thread (13 s against 0.4 s). The compiled runtime
(backend/runtime.py) runs its library calls on its own threads, one BLAS thread each.
OpenBLAS is found among the loaded libraries (as threadpoolctl does); without it nothing
changes."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
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
