"""What a step after legalize-ops or codegen adds: which stage it is at, its backend texts
(loop IR, LLVM IR, assembly), its executable and the size of its exported artifact; and
`relower`, a loaded trace's kernels made again (the adapter's `after_load`).

A step of passlens's own compiler holds a `compiler.ir.Module` (whose kernels it holds,
`compiler.backend`); another compiler's step holds an adapter's module, which answers for
itself (`backend_stage`, `texts()`; see `explorer.adapters`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Protocol

from compiler.ir import Module


class BackendStep(Protocol):
    """A step as the backend reads it (an `explorer.step.Step` is one; the step module
    imports this one, so the annotations here name this protocol): its number and name, its
    stage, the module it shows and its executable."""

    index: int
    name: str

    @property
    def backend_stage(self) -> str | None: ...

    @property
    def shown_module(self) -> Any: ...

    def executable(self) -> Any: ...


def backend_stage(module: Any) -> str | None:
    """`"loops"` for a module after legalize-ops, `"compiled"` after codegen, else None."""
    if module is not None and not isinstance(module, Module):  # another compiler's
        return module.backend_stage
    backend = "" if module is None else str(module.attrs.get("backend", "") or "")
    if backend.startswith("llvm"):
        return "compiled"
    return "loops" if backend == "loops" else None


def backend_texts(module: Any, stage: str) -> dict[str, str]:
    """The backend's text views of a module at `stage`: `"loop IR"`, and when compiled
    `"LLVM IR"` and `"assembly"`; a module without its kernels (a loaded trace's whose
    kernels did not come back) says so in its loop IR."""
    if module is not None and not isinstance(module, Module):
        return module.texts()
    from compiler import backend

    out: dict[str, str] = {}
    try:
        out["loop IR"] = backend.lowered_text(module)
        if stage == "compiled":
            out["LLVM IR"] = backend.llvm_text(module)
            out["assembly"] = backend.assembly_text(module)
    except backend.KernelNotFound as e:
        out.setdefault("loop IR", f"; not available: {e}\n")
    return out


def executable(step: BackendStep):
    """The `compiler.backend.Executable` of a step after codegen (built here: the step keeps
    it); ValueError for a step that is not compiled or whose kernels are missing."""
    if step.backend_stage != "compiled":
        raise ValueError(
            f"step {step.index} ({step.name}) is not compiled; run the pipeline through "
            "legalize-ops,codegen and take that step"
        )
    from compiler.backend import build, missing_kernels

    missing = missing_kernels(step.shown_module)
    if missing:
        raise ValueError(
            f"step {step.index} ({step.name}) cannot be rebuilt: its module does not hold "
            f"kernel @{missing[0]}"
            + (f" and {len(missing) - 1} more" if len(missing) > 1 else "")
            + "; run legalize-ops on the module again"
        )
    return build(step.shown_module, pipeline="", record=False)


def artifact_bytes(step: BackendStep) -> int | None:
    """The size of a compiled step's exported artifact (object code, plan and weights), or
    None when it cannot be rebuilt (a loaded trace whose kernels did not come back)."""
    try:
        exe = step.executable()
    except ValueError:
        return None
    with tempfile.TemporaryDirectory(prefix="passlens-artifact-") as tmp:
        return exe.export(Path(tmp) / "model.plz")


def relower(trace: Any) -> None:
    """A module holds its kernels, and a file keeps none: give a loaded trace's modules their
    kernels again, by running its legalize-ops steps on the modules they were given (lowering
    is deterministic and kernels are named by content, so the same names come back), then
    giving every loaded module that calls them one set of those kernels (the step's module is
    the same module with its kernels: same functions, same nodes). Compiled code is then made
    when a kernel first runs. A kernel that does not come back stays missing: running it says
    so. Only legalize-ops itself runs, whatever spec the file records (its options change
    whether it fails, not the kernels), so a file cannot make loading run other passes."""
    lowering = [
        s
        for s in trace.steps
        if s.kind == "pass"
        and s.name == "legalize-ops"
        and not s.failed
        and isinstance(s.before, Module)
        and isinstance(s.module, Module)
    ]
    if not lowering:
        return
    from compiler import passes
    from compiler.backend import KernelSet, missing_kernels, module_kernels, with_kernels

    found = KernelSet()
    for s in lowering:
        if missing_kernels(s.module):  # the pass by its name only: nothing else is run
            result = passes.run(s.before, "legalize-ops", record=False)
            found = found.with_kernels(module_kernels(result.module).values())
    if not found:
        return
    held: dict[int, Module] = {}

    def with_found(m: Any) -> Any:
        if not isinstance(m, Module) or not missing_kernels(m):
            return m
        if id(m) not in held:
            held[id(m)] = with_kernels(m, found)
        return held[id(m)]

    for s in trace.steps:  # one new module per loaded one, so steps still share theirs
        if s.module is not None:
            s.module = with_found(s.module)
        if s.snapshot is not None and s.before is not None:
            s.before = with_found(s.before)
