"""What a source MLIR module may hold before iree-compile sees it: pure computation only.

An MLIR file (or text) someone sent is compiled by iree-compile as the trace records it and,
when it is checked, run by iree.runtime. MLIR can do more than compute: a
`hal.executable.objects` attribute or `#hal.executable.object<{path = ...}>` makes iree-compile
read a file of the machine and link it into the executable (its bytes then show in the
dumps, so a shared trace would carry them), `hal.executable.binary` is native code as data,
`llvm.inline_asm` is machine code, an external function declaration becomes an import the
runtime resolves, and the transform dialect is a script that drives the compiler. None of
that is needed to express a model at IREE's input level, so a source is held to:

* operations of the computation dialects in `ALLOWED_DIALECTS` (torch, linalg, tensor,
  arith, math, stablehlo, tosa, flow, util, ... : what torch-mlir, iree-turbine and the other
  IREE importers emit);
* no function declared without a body (`func.func private @f(...)`, `util.func`);
* no attribute or type of a dialect in `DENIED_DIALECTS` (`#hal.`, `!vm.`, `#llvm.`, ...),
  by name or in its value.

Anything else is one `IREEError` naming the op and why, before iree-compile runs. The torch
models passlens exports itself pass through the same gate. The dumps iree-compile prints
later hold hal, stream and vm ops of its own making; those are not sources and are not gated.
"""

from __future__ import annotations

import re
from typing import Any

from explorer.iree.convert import MAX_OPS, IREEError

#: dialects whose operations a source may use: computation at IREE's input level
ALLOWED_DIALECTS = frozenset(
    {
        "builtin", "func", "torch", "torch_c", "tm_tensor", "util", "arith", "math", "complex",
        "linalg", "tensor", "scf", "cf", "ml_program", "stablehlo", "chlo", "tosa", "flow",
        "shape", "iree_linalg_ext", "iree_tensor_ext", "bufferization",
    }
)  # fmt: skip
#: dialects no attribute or type of a source may name: devices, executables, the VM, machine
#: code, compiler scripts
DENIED_DIALECTS = frozenset(
    {
        "hal", "stream", "vm", "llvm", "emitc", "gpu", "spirv", "rocdl", "nvvm", "amdgpu",
        "iree_codegen", "iree_gpu", "iree_cpu", "transform", "pdl", "pdl_interp", "irdl",
        "memref", "async", "vmvx", "ukernel",
    }
)  # fmt: skip
_FUNCTIONS = {"func.func", "util.func"}
_NAMED = re.compile(r"[#!]([A-Za-z_][\w$]*)\.")  # #hal.executable.object, !vm.ref
_BODYLESS = "declares a function without a body (an import the runtime would resolve)"


def _denied(text: str) -> str | None:
    for m in _NAMED.finditer(text):
        if m.group(1) in DENIED_DIALECTS:
            return m.group(1)
    return None


def _refuse(op_name: str, why: str) -> IREEError:
    return IREEError(
        f"the source MLIR is refused: {op_name[:80]} {why}; a source may hold only the "
        "computation dialects of IREE's input (explorer.iree.gate.ALLOWED_DIALECTS)"
    )


def check_source(module: Any) -> None:
    """Raise one `IREEError` when the parsed source `module` (an iree.compiler.ir Module) holds
    anything but computation: an op outside `ALLOWED_DIALECTS`, a function without a body, an
    attribute or type of a dialect in `DENIED_DIALECTS`."""
    seen = [0]

    def visit(op: Any) -> None:
        seen[0] += 1
        if seen[0] > MAX_OPS:
            raise IREEError(f"the source MLIR has more than {MAX_OPS:,} operations")
        name = op.name
        dialect = name.split(".", 1)[0]
        if dialect not in ALLOWED_DIALECTS:
            raise _refuse(name, f"is an operation of the {dialect!r} dialect")
        attrs = op.attributes
        for i in range(len(attrs)):
            attr = attrs[i]
            prefix = attr.name.split(".", 1)[0]
            if "." in attr.name and prefix in DENIED_DIALECTS:
                raise _refuse(name, f"carries the attribute {attr.name[:80]!r}")
            bad = _denied(str(attr.attr))
            if bad is not None:
                raise _refuse(name, f"carries a {bad!r} attribute ({attr.name[:40]})")
        for result in op.results:
            bad = _denied(str(result.type))
            if bad is not None:
                raise _refuse(name, f"makes a value of a {bad!r} type")
        if name in _FUNCTIONS and not any(len(r.blocks) for r in op.regions):
            raise _refuse(name, _BODYLESS)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    bad = _denied(str(arg.type))
                    if bad is not None:
                        raise _refuse(name, f"takes an argument of a {bad!r} type")
                for inner in block.operations:
                    visit(inner.operation)

    visit(module.operation)


__all__ = ["ALLOWED_DIALECTS", "DENIED_DIALECTS", "check_source"]
