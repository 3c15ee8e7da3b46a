"""The backend: graph ops lowered to a loop-level IR (legalize-ops), LLVM code generation with
llvmlite (codegen), JIT execution and an exported build artifact (object code + weights).

    exe = compiler.backend.build(module)      # runs default,legalize-ops,codegen as needed
    exe(x)                                    # a tuple of numpy arrays, like interpret.run
    exe.export("model.plz")                   # bytes written: code + weights

Files: loops/ (the loop IR: exprs.py and stmts.py, each with its printer), lowering.py and
lower_*.py (the rules, one file per op family), compiler/ops/lowered.py (the graph op
`call_lowered`), codegen.py and mathlib.py (LLVM IR), kernels.py (the kernels a module holds,
compiled once), runtime.py (running kernels: threads, library calls), build.py (Executable,
export, load).

Layers: every module here except build.py sits below the passes, which import those modules
(legalize-ops: lowering and kernels; codegen: codegen and kernels) and never this
package; build.py and this package sit above the passes (`build` runs a pipeline). Importing
any module of the package runs this file first, which registers every lowering rule.
"""

from __future__ import annotations

from compiler.backend import (  # noqa: F401
    lower_bitwise,
    lower_elementwise,
    lower_index,
    lower_nn,
    lower_quantize,
    lower_reduce,
    lower_shape,
)
from compiler.backend.build import BuildError, Executable, build, load
from compiler.backend.kernels import (
    KernelNotFound,
    KernelSet,
    kernel_calls,
    missing_kernels,
    module_kernels,
    opt_level_of,
    with_kernels,
)
from compiler.backend.lowering import LoweringError, supported_ops
from compiler.ir.nodes import Call, Module


def _call_sites(module: Module) -> dict[str, list[str]]:
    sites: dict[str, list[str]] = {}
    for fname, fn in module.functions.items():
        for node in fn.iter_nodes():
            if isinstance(node, Call) and node.op == "call_lowered":
                name = f"%{node.name}" if node.name else "a binding"
                origin = node.prov.module_path or node.prov.source_node
                where = f"{name} (from {origin})" if origin else name
                sites.setdefault(node.attrs["kernel"], []).append(f"@{fname} {where}")
    return sites


def lowered_text(module: Module) -> str:
    """The loop IR of every kernel a module calls, each headed by its call sites (graph
    provenance), in order of first call: the text of a legalize-ops step."""
    held = module_kernels(module)
    parts = []
    for name, sites in _call_sites(module).items():
        shown = ", ".join(sites[:4]) + (f" and {len(sites) - 4} more" if len(sites) > 4 else "")
        parts.append(f"# called {len(sites)}x: {shown}\n{held[name].text}")
    return "\n\n".join(parts) + ("\n" if parts else "")


def llvm_text(module: Module, optimized: bool = True) -> str:
    """The LLVM IR (optimised, or as generated) of every kernel a module calls."""
    held = module_kernels(module)
    key = "optimized_ir" if optimized else "llvm_ir"
    level = opt_level_of(module)
    return "\n".join(getattr(held.compiled(name, level), key) for name in kernel_calls(module))


def assembly_text(module: Module) -> str:
    """The host assembly of every kernel a module calls."""
    held = module_kernels(module)
    level = opt_level_of(module)
    return "\n".join(held.compiled(name, level).assembly for name in kernel_calls(module))


__all__ = [
    "BuildError",
    "Executable",
    "KernelNotFound",
    "KernelSet",
    "LoweringError",
    "assembly_text",
    "build",
    "kernel_calls",
    "llvm_text",
    "load",
    "lowered_text",
    "missing_kernels",
    "module_kernels",
    "supported_ops",
    "with_kernels",
]
