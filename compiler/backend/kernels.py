"""The kernels of a module: what legalize-ops lowered, held by the module that calls them.

A graph module refers to a kernel by name only (`call_lowered(..., kernel="add_relu_3f2a")`),
the way a TVM module refers to a PrimFunc by global symbol, and keeps the kernels themselves
beside its functions, in `module.attrs["kernels"]` (a `KernelSet`, like the
PrimFuncs of a TVM IRModule). There is no table of kernels for the whole process: a kernel
lives as long as a module (or an executable) holds it. Kernel names end with a hash of the
kernel's text, so a name never means two different kernels, and equal kernels called from
several places of a module are one entry, compiled once.

A set compiles its kernels on first use (codegen, the interpreter running a legalized module,
the LLVM IR and assembly views) and keeps that code for as long as it lives; the modules of
one pipeline after legalize-ops share one set, so each kernel is compiled once per run. An
`Executable` loads the object code of the kernels it calls into an engine of its own
(`compiler.backend.build`): two executables share no machine code, and freeing one frees
its code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from compiler.backend import codegen
from compiler.backend.loops import Kernel
from compiler.backend.runtime import CompiledKernel, KernelInfo
from compiler.ir.nodes import Call, Module

ATTR = "kernels"  # the module attribute holding a module's KernelSet


class KernelNotFound(KeyError):
    """A module calls a kernel it does not hold (legalize-ops makes them)."""

    def __str__(self) -> str:  # KeyError's str() is the repr of its argument
        return str(self.args[0]) if self.args else ""


@dataclass
class Compiled:
    """A compiled kernel: LLVM IR before and after optimisation, object code, and the
    runnable form. `seconds` is the time codegen and compilation took."""

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


class KernelSet(Mapping):
    """The kernels a module calls, by name: an immutable mapping (equal, and hashed, by its
    names: a name is its kernel's content) that compiles each kernel on first use and keeps
    the code for as long as the set lives (one JIT engine per optimisation level)."""

    __slots__ = ("_kernels", "_compiled", "_engines", "_lock", "__weakref__")

    def __init__(self, kernels: Iterable[Kernel] = ()):
        self._kernels: dict[str, Kernel] = {}
        for k in kernels:
            self._kernels.setdefault(k.name, k)
        self._compiled: dict[tuple[str, int], Compiled] = {}
        self._engines: dict[int, codegen.JIT] = {}
        self._lock = threading.RLock()

    # ----- the mapping ----------------------------------------------------------------------
    def __getitem__(self, name: str) -> Kernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise KernelNotFound(
                f"the module holds no lowered kernel @{name}: kernels live with the module "
                "legalize-ops made, so run legalize-ops on the module again (e.g. after "
                "loading a saved trace or parsing the module's text)"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._kernels)

    def __len__(self) -> int:
        return len(self._kernels)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelSet):
            return NotImplemented
        return self._kernels.keys() == other._kernels.keys()

    def __hash__(self) -> int:
        return hash(frozenset(self._kernels))

    def __repr__(self) -> str:
        return f"<KernelSet of {len(self)} kernels>"

    def with_kernels(self, kernels: Iterable[Kernel]) -> KernelSet:
        """A set with `kernels` added (self when it holds them all already)."""
        new = [k for k in kernels if k.name not in self._kernels]
        return self if not new else KernelSet([*self._kernels.values(), *new])

    def only(self, names: Iterable[str]) -> KernelSet:
        """The set of just `names` (self when that is all it holds); a missing one raises."""
        names = list(dict.fromkeys(names))
        if set(names) == self._kernels.keys():
            return self
        return KernelSet([self[n] for n in names])

    # ----- compiled code --------------------------------------------------------------------
    def compiled(self, name: str, opt_level: int = 3) -> Compiled:
        """The compiled form of kernel `name` (compiled on first use, then kept)."""
        with self._lock:
            done = self._compiled.get((name, opt_level))
            if done is not None:
                return done
            start = time.perf_counter()
            kernel = self[name]
            text, steps = codegen.emit_kernel(kernel)
            mod = codegen.optimize(text, opt_level)
            optimized = str(mod)
            obj = codegen.object_code(mod)
            engine = self._engines.get(opt_level)
            if engine is None:
                engine = self._engines[opt_level] = codegen.JIT()
            engine.add_object(obj)
            info = KernelInfo.of(kernel, steps)
            runnable = CompiledKernel(info, engine.address, engine)
            done = Compiled(
                kernel, text, optimized, obj, info, runnable, time.perf_counter() - start
            )
            self._compiled[(name, opt_level)] = done
            return done

    def is_compiled(self, name: str, opt_level: int = 3) -> bool:
        """Whether kernel `name` has been compiled in this set."""
        return (name, opt_level) in self._compiled


_EMPTY = KernelSet()


def module_kernels(module: Module) -> KernelSet:
    """The kernels `module` holds (an empty set for a module legalize-ops has not made)."""
    ks = module.attrs.get(ATTR)
    return ks if isinstance(ks, KernelSet) else _EMPTY


def with_kernels(module: Module, kernels: KernelSet) -> Module:
    """`module` holding `kernels` (the same module when it holds that set already)."""
    if module.attrs.get(ATTR) is kernels:
        return module
    return module.replace(attrs=module.attrs.with_(**{ATTR: kernels}))


def opt_level_of(module: Module) -> int:
    """The optimisation level codegen compiled `module` at (`backend="llvm O2 ..."`), 3
    for a module codegen has not run on."""
    backend = str(module.attrs.get("backend", "") or "")
    level = backend.split()[1] if backend.startswith("llvm ") and len(backend.split()) > 1 else ""
    return int(level[1:]) if level[:1] == "O" and level[1:].isdigit() else 3


def kernel_calls(module: Module) -> dict[str, Call]:
    """Each kernel a module calls (by name, in order of first call) and its first call."""
    out: dict[str, Call] = {}
    for fn in module.functions.values():
        for node in fn.iter_nodes():
            if isinstance(node, Call) and node.op == "call_lowered":
                out.setdefault(node.attrs["kernel"], node)
    return out


def missing_kernels(module: Module) -> list[str]:
    """The kernels `module` calls but does not hold (a loaded or parsed module's)."""
    held = module_kernels(module)
    return [n for n in kernel_calls(module) if n not in held]


__all__ = [
    "ATTR",
    "Compiled",
    "KernelNotFound",
    "KernelSet",
    "kernel_calls",
    "missing_kernels",
    "module_kernels",
    "opt_level_of",
    "with_kernels",
]
