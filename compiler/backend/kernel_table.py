"""The process-wide table of lowered kernels by name, and their compiled forms.

A graph module refers to a kernel by name only (``call_lowered(..., kernel="add_relu_3f2a")``),
the way a TVM module refers to a PrimFunc by global symbol. Kernel names end with a hash of
the kernel's text, so equal kernels share one entry (and one compilation) however many
modules or call sites use them, and a name never means two different kernels.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from compiler.backend import codegen
from compiler.backend.loops import Kernel
from compiler.backend.runtime import CompiledKernel, KernelInfo
from compiler.ir.nodes import Call, Module

_KERNELS: dict[str, Kernel] = {}
_COMPILED: dict[tuple[str, int], Compiled] = {}
_lock = threading.RLock()
_engines: dict[int, codegen.JIT] = {}  # one per opt level: equal kernels share symbol names


class KernelNotFound(KeyError):
    """No kernel of that name in this process (it is made by legalize-ops)."""


def register(kernel: Kernel) -> str:
    """Add a kernel (or find its equal already there); returns its name."""
    with _lock:
        _KERNELS.setdefault(kernel.name, kernel)
    return kernel.name


def is_registered(name: str) -> bool:
    """Whether a kernel of that name was lowered in this process."""
    return name in _KERNELS


def lookup(name: str) -> Kernel:
    """The kernel called ``name``."""
    try:
        return _KERNELS[name]
    except KeyError:
        raise KernelNotFound(
            f"no lowered kernel @{name} in this process: kernels live in memory, so run "
            "legalize-ops on the module again (e.g. after loading a saved trace)"
        ) from None


@dataclass
class Compiled:
    """A compiled kernel: LLVM IR before and after optimisation, object code, and the
    runnable form. ``seconds`` is the time codegen and compilation took."""

    kernel: Kernel
    llvm_ir: str
    optimized_ir: str
    object_code: bytes
    info: KernelInfo
    runnable: CompiledKernel
    seconds: float
    _assembly: str | None = field(default=None, repr=False)

    @property
    def assembly(self) -> str:
        """Host assembly of the optimised code (made on first use)."""
        if self._assembly is None:
            import llvmlite.binding as llvm

            self._assembly = codegen.assembly(llvm.parse_assembly(self.optimized_ir))
        return self._assembly


def _engine(opt_level: int) -> codegen.JIT:
    if opt_level not in _engines:
        _engines[opt_level] = codegen.JIT()
    return _engines[opt_level]


def compiled(name: str, opt_level: int = 3) -> Compiled:
    """The compiled form of kernel ``name`` (compiled on first use, then cached)."""
    with _lock:
        done = _COMPILED.get((name, opt_level))
        if done is not None:
            return done
        import time

        start = time.perf_counter()
        kernel = lookup(name)
        text, steps = codegen.emit_kernel(kernel)
        mod = codegen.optimize(text, opt_level)
        optimized = str(mod)
        obj = codegen.object_code(mod)
        engine = _engine(opt_level)
        engine.add_object(obj)
        info = KernelInfo.of(kernel, steps)
        runnable = CompiledKernel(info, engine.address)
        done = Compiled(kernel, text, optimized, obj, info, runnable, time.perf_counter() - start)
        _COMPILED[(name, opt_level)] = done
        return done


def is_compiled(name: str, opt_level: int = 3) -> bool:
    """Whether kernel ``name`` has been compiled in this process."""
    return (name, opt_level) in _COMPILED


def kernel_calls(module: Module) -> dict[str, Call]:
    """Each kernel a module calls (by name, in order of first call) and its first call."""
    out: dict[str, Call] = {}
    for fn in module.functions.values():
        for node in fn.iter_nodes():
            if isinstance(node, Call) and node.op == "call_lowered":
                out.setdefault(node.attrs["kernel"], node)
    return out


__all__ = [
    "Compiled",
    "KernelNotFound",
    "compiled",
    "is_compiled",
    "is_registered",
    "kernel_calls",
    "lookup",
    "register",
]
