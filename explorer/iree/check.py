"""`trace.check` on an IREE trace: a step's MLIR dump compiled again with `iree-compile
--compile-from=<the phase before its own>` to a .vmfb for llvm-cpu, run with iree.runtime
(the local-task driver; the weights from the recording's .irpa parameter file) on the same
inputs, its outputs compared with torch eager's by passlens's own verdict rules (the
tolerance, then float64: `explorer/check/judge.py`).

`--compile-from=P` resumes *after* phase P, so a dump made inside phase P is given to the
compile from the phase before P: P's passes run on it again (from its start) and the rest of
the pipeline with them, with the recording's target (llvm-cpu, generic CPU) but not the
`flags=` it was recorded with, so a step's run shows what its module computes, not what a
flag does to it in the passes after it. The module attributes `iree.fixedpoint.*` (the state
of IREE's fixed-point iterator, which would stop a resumed pipeline) are taken out first.
Steps after executable-configurations (code generation and the VM program, where not every
dump resumes: a vm-phase dump compiles to a module that fails to load) and dumps MLIR cannot
parse back are not run, each with its reason.

Not every step is run: the check runs the import, the first and the last runnable step, then
bisects over the steps that changed the module (each run halves the steps where the first
divergence can be), so a trace of a few hundred changed steps takes about ten runs. The first
diverging step is the `diverged` finding, the step before it the last agreeing one (a later
step that changes the numbers again is not looked for). Outputs only: the values inside a
compiled module are not reachable from iree.runtime, so a finding names the step, not a node.
A failing compile or run of a step is its `run-failed` verdict, with iree-compile's
diagnostics.

What this finds: where the recorded compile departs from what IREE's own pipeline makes of a
step's module: a flag's pass (the flags are left out of the check's compiles), a pass of the
user's. A divergence IREE's own pipeline makes shows at the import already (compiled from the
start, it goes through the same passes as every resumed step): the check says so, and runs no
other step.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from typing import Any

import numpy as np

from compiler import InterpretError
from explorer.check.facts import Run
from explorer.check.numbers import judge_outputs, to_numpy
from explorer.check.report import CheckError
from explorer.check.runner import Checker, StepRunner
from explorer.iree.convert import IREEError, parse_module
from explorer.iree.record import (
    MAX_DIAGNOSTIC_CHARS,
    PHASES,
    PRINT_FLAGS,
    TARGET_FLAGS,
    iree_compile_path,
)

#: the last phase whose dumps are run (past it, not every dump resumes: see ``_LATE``)
LAST_RUN_PHASE = "executable-configurations"
RUN_PHASES = PHASES[: PHASES.index(LAST_RUN_PHASE) + 1]
COMPILE_TIMEOUT = 600.0  # seconds one iree-compile of a step may take
_STRIPPED = ("iree.fixedpoint.iteration", "iree.fixedpoint.modified")
_LATE = (
    f"steps after {LAST_RUN_PHASE} (executable-targets, hal, vm): the check resumes dumps up "
    "to there; past it IREE generates the executables' code and the VM program, whose dumps "
    "do not all resume (a vm-phase dump compiles to a module that fails to load)"
)
_UNPARSED = "dumps MLIR cannot parse back (IREE printed them in a form its own parser refuses)"
_BISECTION = (
    "bisection: only the import, the first and last runnable steps and the steps the "
    "bisection chose were compiled and run"
)


def resume_from(phase: str) -> str:
    """The `--compile-from` phase of a dump made in `phase`: the phase before it."""
    k = PHASES.index(phase)
    return "start" if k == 0 else PHASES[k - 1]


def resumable(text: str) -> str:
    """A dump as iree-compile takes it back: parsed (an `IREEError` if MLIR cannot),
    the fixed-point iterator's module attributes taken out."""
    _, module = parse_module(text, "the step's MLIR")
    attrs = module.operation.attributes
    stripped = False
    for name in _STRIPPED:
        if name in attrs:
            del attrs[name]
            stripped = True
    return module.operation.get_asm(enable_debug_info=True) if stripped else text


def compile_module(text: str, phase: str | None, workdir: str, flags=()) -> bytes:
    """`text` compiled by iree-compile (from `phase`, None: the start) to a .vmfb for
    llvm-cpu, with `flags` (checked iree-compile flags; the reducer's) after the target's;
    an `IREEError` with iree-compile's diagnostics when it fails."""
    src = os.path.join(workdir, "step.mlir")
    out = os.path.join(workdir, "step.vmfb")
    with open(src, "w", encoding="utf-8") as f:
        f.write(text)
    if os.path.exists(out):
        os.remove(out)
    cmd = [iree_compile_path(), src, *TARGET_FLAGS, *flags, "-o", out]
    if phase is not None and phase != "start":
        cmd.append(f"--compile-from={phase}")
    try:
        proc = subprocess.run(
            cmd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            cwd=workdir,
            timeout=COMPILE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise IREEError(
            f"iree-compile --compile-from={phase} took over {COMPILE_TIMEOUT:g} s "
            "(explorer.iree.check.COMPILE_TIMEOUT)"
        ) from None
    if proc.returncode != 0 or not os.path.exists(out):
        diagnostics = (proc.stderr or proc.stdout or "no diagnostics").strip()
        raise IREEError(
            f"iree-compile --compile-from={phase or 'start'} failed (exit code "
            f"{proc.returncode}): {diagnostics[-MAX_DIAGNOSTIC_CHARS:]}"
        )
    with open(out, "rb") as f:
        return f.read()


class IREERuntime:
    """iree.runtime on the local-task driver, with the trace's parameter file (scope
    `model`, as iree-turbine names it) when it has one."""

    def __init__(self, irpa_path: str | None):
        import iree.runtime as rt

        self.rt = rt
        self.config = rt.Config("local-task")
        self.index = None
        if irpa_path is not None:
            self.index = rt.ParameterIndex()
            self.index.load(irpa_path)

    def run(self, vmfb: bytes, inputs: list) -> tuple:
        rt = self.rt
        modules = []
        if self.index is not None:
            provider = self.index.create_provider(scope="model")
            modules.append(rt.create_io_parameters_module(self.config.vm_instance, provider))
        vm = rt.VmModule.copy_buffer(self.config.vm_instance, vmfb)
        modules.append(vm)
        loaded = rt.load_vm_modules(*modules, config=self.config)[-1]
        names = [n for n in vm.function_names if not n.startswith("__") and "$" not in n]
        if not names:
            raise IREEError("the compiled module exports no function to run")
        name = "main" if "main" in names else names[0]
        out = loaded[name](*inputs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        # copied: a DeviceArray's host view is the device buffer's memory, which a later run
        # may reuse once the array is gone (the outputs are judged after later steps ran)
        return tuple(np.array(o.to_host() if hasattr(o, "to_host") else o, copy=True) for o in outs)


class IREEStepRunner(StepRunner):
    """An IREE trace's steps compiled from their dumps and run with iree.runtime (see the
    module docstring). `bisect`: False runs every runnable step (bench/iree_check.py
    compares the two)."""

    own_source = "the source is MLIR"
    weights_stored = True  # the weights are the parameter file's

    def __init__(self, workdir: str, irpa_path: str | None, bisect: bool = True):
        self.workdir = workdir
        self.iree_rt = IREERuntime(irpa_path)
        self.bisect = bisect
        self.runs: dict[int, Run] = {}  # id(module) -> its run
        self.builds: dict[str, bytes | IREEError] = {}  # hash of what was compiled -> vmfb
        self.reasons: dict[int, str] = {}  # id(module) -> why it is not run
        self.chosen: set[int] | None = None  # ids of the modules the bisection ran
        self.first_diverging: Any = None  # the step where the bisection ended
        self.last_agreeing: Any = None
        self.candidates: list = []  # the first step of each runnable module, in order
        self.compiles = 0

    # ----- inputs and the reference ----------------------------------------------------------
    def prepare(self, inputs) -> tuple[list | None, list | None]:
        inputs = self.given_inputs(inputs)
        if inputs is None:
            return None, None
        return [np.ascontiguousarray(to_numpy(x)) for x in inputs], []

    def set_reference(self, import_run: Run) -> bool:
        """A torch model's reference is torch: its exported graph (`torch.export`, as
        iree-turbine exports it) run op by op with eager's ATen kernels, judged with the same
        graph run in float64 (the model's own forward, without a float64 run, when it does not
        export); an MLIR source's is the imported step."""
        check = self.check
        model = check.trace.source
        if check.reference_kind == "import" or not _is_torch_module(model):
            return False
        from explorer.check.references import float64_reference, torch_reference

        check.phase("the torch reference")
        ref = check.reference
        tensors = _inputs_of(check)
        source = {"model": model}
        try:
            import torch

            source["exported"] = torch.export.export(model, tuple(_torch_tensors(tensors)))
        except Exception as e:  # the forward alone: the tolerance judges
            check.notes.append(
                f"no float64 reference: torch.export failed ({type(e).__name__}: {str(e)[:200]})"
            )
        try:
            outputs, _, how = torch_reference(source, tensors)
        except Exception as e:  # the model cannot run: the import is the reference
            check.notes.append(
                f"the torch reference could not run ({type(e).__name__}: {str(e)[:300]})"
            )
            check.ref_outputs, ref.name = import_run.outputs, "the imported step"
            ref.description = "the imported step, as the torch reference failed"
            return True
        check.ref_outputs, ref.name = outputs, "torch eager"
        ref.description = f"torch eager ({how})"
        if "exported" in source and how.startswith("the exported graph"):
            ref.float64 = float64_reference("torch", source, tensors, [])
            if ref.float64 is not None:
                ref.float64.on_start = lambda: check.phase("the float64 run to judge with")
        return True

    # ----- which steps run ---------------------------------------------------------------------
    def should_run(self, step) -> bool:
        module = step.module
        if step is self.check.imported:
            return True
        if id(module) in self.reasons:
            return False
        if self.chosen is None:
            self._choose()
        if id(module) in self.reasons:
            return False
        if id(module) not in self.runs:
            self.reasons[id(module)] = _BISECTION if self.bisect else _UNPARSED
            return False
        return True

    def not_run_reason(self, step) -> str:
        return self.reasons.get(id(step.module), _BISECTION)

    def _choose(self) -> None:
        """Find the runnable modules, then run them all (`bisect` False) or the first, the
        last and what the bisection asks for."""
        check = self.check
        steps = check.trace.steps
        imported = check.imported
        seen = {id(imported.module)}
        self.chosen = set()
        for s in steps:
            m = s.module
            if s is imported or m is None or s.failed or id(m) in seen or s.depth == 0:
                continue
            seen.add(id(m))
            phase = getattr(m, "phase", "")
            if phase not in RUN_PHASES:
                self.reasons[id(m)] = _LATE
                continue
            self.candidates.append(s)
        import_run = self.runs.get(id(imported.module))
        if import_run is None or (import_run.error is None and check.ref_outputs is None):
            for s in self.candidates:
                self.reasons[id(s.module)] = "no reference to bisect against"
            return
        if not self.bisect:
            for s in list(self.candidates):
                self._try(s)
            bad = [k for k, s in enumerate(self.candidates) if self._bad(self.runs[id(s.module)])]
            if bad and not self._bad(import_run):
                k = bad[0]
                self.first_diverging = self.candidates[k]
                self.last_agreeing = self.candidates[k - 1] if k else check.imported
            return
        if self._bad(import_run):  # the import already differs: nothing to bisect
            for s in self.candidates:
                self.reasons[id(s.module)] = (
                    "bisection: the import, compiled by iree-compile from the start, already "
                    "differs from the reference or fails to run, so IREE's own pipeline (which "
                    "every step's run goes through) is where it differs: resuming from the "
                    "dumps cannot tell which of its passes"
                )
            return
        self._bisect()

    def _bisect(self) -> None:
        cands = self.candidates
        lo_step = self.check.imported
        # the first runnable step, then the last, then halves of what lies between
        while cands and self._try(cands[0]) is None:
            pass
        if not cands:
            return
        if self._bad(self.runs[id(cands[0].module)]):
            self.first_diverging, self.last_agreeing = cands[0], lo_step
            return
        while len(cands) > 1 and self._try(cands[-1]) is None:
            pass
        if len(cands) < 2 or not self._bad(self.runs[id(cands[-1].module)]):
            return  # every runnable step agrees, as far as bisection can tell
        lo, hi = 0, len(cands) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            run = self._try(cands[mid])
            if run is None:  # it does not parse: the list is one shorter
                hi -= 1
                continue
            if self._bad(run):
                hi = mid
            else:
                lo = mid
        self.first_diverging, self.last_agreeing = cands[hi], cands[lo]

    def _bad(self, run: Run) -> bool:
        check = self.check
        if run.error is not None:
            return True
        if check.ref_outputs is None or run.outputs is None:
            return False
        cmp = judge_outputs(
            run.outputs, check.ref_outputs, check.reference.float64, check.rtol, check.atol
        )
        return cmp.diverged

    def _try(self, step) -> Run | None:
        """Run `step`'s module; None (and the step out of the candidates) when its dump does
        not parse back."""
        module = step.module
        try:
            text = resumable(module.mlir)
        except IREEError:
            self.reasons[id(module)] = _UNPARSED
            self.candidates.remove(step)
            return None
        run = self._run_text(text, resume_from(module.phase), f"#{step.index} {step.name}")
        self.runs[id(module)] = run
        self.chosen.add(id(module))
        return run

    # ----- running -----------------------------------------------------------------------------
    def _run_text(self, text: str, phase: str | None, label: str) -> Run:
        check = self.check
        prefix = ""
        if self.chosen is not None:  # a step the bisection (or the run of all) chose
            prefix = f"{'bisection' if self.bisect else 'step'} run {len(self.chosen) + 1}: "
        key = hashlib.sha256(f"{phase}\n{text}".encode()).hexdigest()
        with self.timed_run((IREEError,), cut=800) as run:
            built = self.builds.get(key)
            if built is None:
                check.phase(f"{prefix}compiling {label} (--compile-from={phase or 'start'})")
                self.compiles += 1
                try:
                    built = compile_module(text, phase, self.workdir)
                except IREEError as e:
                    built = e
                self.builds[key] = built
            if isinstance(built, IREEError):
                raise built
            check.phase(f"{prefix}running {label} with iree.runtime")
            run.outputs = self.iree_rt.run(built, check.runtime)
            run.computed = 1
        return run

    def run(self, module) -> Run:
        found = self.runs.get(id(module))
        if found is not None:
            return found
        if module is self.check.imported.module:  # the import: compiled from the start
            try:
                text = resumable(module.mlir)
            except IREEError as e:
                run = Run(error=InterpretError(str(e)))
            else:
                run = self._run_text(text, None, "the import")
            self.runs[id(module)] = run
            return run
        raise CheckError("the IREE runner ran a step the bisection did not choose")

    def after_step(self, step, run: Run | None) -> None:
        """A step the bisection ran after the first diverging one: its row says it diverged,
        but the finding is the first diverging step's (the bisection cannot say whether a later
        step changed the numbers again)."""
        if run is None or not run.diverged:
            return
        last = self.last_agreeing
        if step is self.first_diverging and last is not None:
            for f in self.check.findings:
                if f.step is step and f.kind == "diverged":
                    f.details["last_agreeing"] = last.index
                    how = "bisection over" if self.bisect else "running all of"
                    f.message += (
                        f"; the step before it, #{last.index} {last.name}, agrees (found by "
                        f"{how} the steps that changed the module; outputs only)"
                    )
            return
        first = self.first_diverging
        if self.bisect and first is not None and step.index > first.index:
            self.check.findings[:] = [
                f for f in self.check.findings if not (f.step is step and f.kind == "diverged")
            ]


def _is_torch_module(model: Any) -> bool:
    try:
        import torch
    except ImportError:
        return False
    return isinstance(model, torch.nn.Module)


def _inputs_of(check: Checker) -> list:
    raw = check.raw_inputs if check.raw_inputs is not None else check.trace.example_inputs
    if raw is None:
        return list(check.runtime or [])
    return list(raw) if isinstance(raw, (tuple, list)) else [raw]


def _torch_tensors(values: list) -> list:
    import torch

    return [v if isinstance(v, torch.Tensor) else torch.from_numpy(np.asarray(v)) for v in values]


def summary_note(runner: IREEStepRunner, total_steps: int) -> str:
    """What the check ran, in words (the report's note)."""
    ran = sorted(
        (s for s in runner.candidates if id(s.module) in runner.runs), key=lambda s: s.index
    )
    listed = ", ".join(f"#{s.index}" for s in ran[:40]) + (", ..." if len(ran) > 40 else "")
    how = "bisection" if runner.bisect else "every runnable step"
    text = (
        f"{how}: ran the import and {len(ran)} of {len(runner.candidates)} runnable steps "
        f"that changed the module ({listed or 'none'}; {runner.compiles} compiles, "
        f"{total_steps} steps in all)"
    )
    first, last = runner.first_diverging, runner.last_agreeing
    if first is not None:
        failed = runner.runs[id(first.module)].error is not None
        text += (
            f"; the first step {'that fails to run' if failed else 'that diverges'} is "
            f"#{first.index} {first.name}, the last agreeing #{last.index} {last.name}"
        )
    elif runner.bisect and ran:
        text += "; the first and last runnable steps agree, so the steps between are taken to"
        text += " agree"
    return text + "; outputs only: per-node values are not reachable in a compiled IREE module"


def user_flags(flags: list[str]) -> list[str]:
    """The flags a recording was given (`flags=`), without its own (the target, the phase
    to compile to, the printing)."""
    own = {*TARGET_FLAGS, *PRINT_FLAGS}
    return [f for f in flags if f not in own and not f.startswith("--compile-to=")]


def check_iree(trace, inputs, options, bisect: bool = True):
    """`explorer.check.check` for an IREE trace (`bisect`: see `IREEStepRunner`)."""
    try:
        import iree.runtime  # noqa: F401
    except ImportError as e:
        raise CheckError(
            f"checking an IREE trace runs its steps with iree.runtime, which is not installed "
            f"({e}); pip install 'passlens[iree]'"
        ) from None
    run = getattr(trace, "iree", None)
    if run is None:
        raise CheckError(
            "this IREE trace was loaded from a file: it keeps each step's MLIR but not what "
            "the check runs it with (the recording's session and, for a model, the parameter "
            "file of its weights); explore the source again to check it"
        )
    with tempfile.TemporaryDirectory(prefix="passlens-iree-check-") as workdir:
        irpa = None
        if run.irpa is not None:
            irpa = os.path.join(workdir, "params.irpa")
            with open(irpa, "wb") as f:
                f.write(run.irpa)
        runner = IREEStepRunner(workdir, irpa, bisect)
        checker = Checker(trace, inputs, options, runner)
        report = checker.run()
        if checker.runtime is not None:
            extra = user_flags(run.flags)
            if extra:
                report.notes.append(
                    f"the steps were compiled from their dumps without the flags the trace was "
                    f"recorded with ({' '.join(extra)[:300]}): a step's run shows what its module "
                    "computes, not what the flags do in the passes after it"
                )
            report.notes.append(summary_note(runner, len(trace.steps)))
        report.bisection = {
            "ran": sorted(s.index for s in runner.candidates if id(s.module) in runner.runs),
            "runnable": len(runner.candidates),
            "compiles": runner.compiles,
            "first_diverging": getattr(runner.first_diverging, "index", None),
            "last_agreeing": getattr(runner.last_agreeing, "index", None),
        }
        del runner.iree_rt
    return report


__all__ = [
    "IREEStepRunner",
    "check_iree",
    "compile_module",
    "resumable",
    "resume_from",
]
