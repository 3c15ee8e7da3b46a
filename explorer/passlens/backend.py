"""What a step after legalize-ops or codegen adds: which stage it is at, its backend texts
(loop IR, LLVM IR, assembly), its executable and the size of its exported artifact.

A step of passlens's own compiler holds a ``compiler.ir.Module`` (whose kernels it holds,
``compiler.backend``); another compiler's step holds an adapter's module, which answers for
itself (``backend_stage``, ``texts()``; see :mod:`explorer.adapters`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Protocol

from compiler.ir import Module


class BackendStep(Protocol):
    """A step as the backend reads it (an :class:`explorer.step.Step` is one; the step module
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
    """``"loops"`` for a module after legalize-ops, ``"compiled"`` after codegen, else None."""
    if module is not None and not isinstance(module, Module):  # another compiler's
        return module.backend_stage
    backend = "" if module is None else str(module.attrs.get("backend", "") or "")
    if backend.startswith("llvm"):
        return "compiled"
    return "loops" if backend == "loops" else None


def backend_texts(module: Any, stage: str) -> dict[str, str]:
    """The backend's text views of a module at ``stage``: ``"loop IR"``, and when compiled
    ``"LLVM IR"`` and ``"assembly"``; a module without its kernels (a loaded trace's whose
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
    """The ``compiler.backend.Executable`` of a step after codegen (built here: the step keeps
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
