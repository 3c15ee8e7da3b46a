"""codegen: compile every kernel a legalized module calls to machine code for the host (LLVM
IR from the loop IR, optimised at O3 so loops vectorise, JIT-loaded with MCJIT).

The graph is unchanged; the module is marked with the target (``attrs["backend"]``) so the
step is recorded as a change, and its time is the compilation time. A call legalize-ops left
in the graph fails this pass, with the reason it could not be lowered. A module legalize-ops
has not run on is left as it is. The compiled code stays with the module's kernels (its
``KernelSet``, shared by the modules of the run after legalize-ops), so building or running the
result compiles nothing again. The LLVM IR and the assembly of the step:
``compiler.backend.llvm_text(module)`` and ``compiler.backend.assembly_text(module)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Call, FuncCall, Module
from compiler.passes.infra.manager import Pass, PassContext, PassError, register_pass


@register_pass
@dataclass(frozen=True)
class Codegen(Pass):
    """Compile the module's loop-IR kernels with LLVM for the host CPU."""

    name: ClassVar[str] = "codegen"
    opt_level: int = 3

    def transform(self, module: Module, ctx: PassContext) -> Module:
        import compiler.backend.codegen as codegen
        import compiler.backend.kernels as kernels
        from compiler.passes.legalize_ops import is_host_call, unlowered_reason

        if module.attrs.get("backend") != "loops":
            return module  # not legalized (nothing to compile) or compiled already
        for fn in module.functions.values():
            if fn.attrs.get("primitive", False):
                continue
            for node in fn.iter_nodes():
                lowered = isinstance(node, Call) and (
                    node.op == "call_lowered" or is_host_call(node)
                )
                if isinstance(node, (Call, FuncCall)) and not lowered:
                    reason = unlowered_reason(module, node)
                    if reason is not None or isinstance(node, Call):
                        what = node.op if isinstance(node, Call) else f"call @{node.func}"
                        if what == "opaque":
                            what = f"opaque op {node.attrs['target']}"
                        raise PassError(
                            f"{what} was not lowered by legalize-ops"
                            + (f": {reason}" if reason else " (run legalize-ops first)"),
                            node,
                        )
        held = kernels.module_kernels(module)
        for name, node in kernels.kernel_calls(module).items():
            try:
                held.compiled(name, self.opt_level)
            except (codegen.CodegenError, kernels.KernelNotFound) as e:
                raise PassError(str(e), node) from None
        target = codegen.host_target().describe()
        return module.replace(attrs=module.attrs.with_(backend=f"llvm O{self.opt_level} {target}"))
