"""Reducing a `diverged` finding of an IREE trace (`explorer.reduce.reduce(report)`) to the
smallest MLIR input and iree-compile flag set that still diverge (the result and its
upstream script: `explorer.iree.repro`).

The check compiles each step's dump without the recording's flags, so the first diverging
step is where the recorded compile departs from IREE's own pipeline: a flag's pass. The
reduction starts from the last agreeing step's dump (the module just before that pass) and
the recording's flags (`flags=`, without the target and printing ones passlens sets), compiled
with `--compile-from=<the phase before the dump's own>` as the check does, and holds it to
two facts at every candidate, each checked by compiling with iree-compile and running with
iree.runtime on the report's inputs, judged against the check's reference (torch eager, by the
tolerance then float64, as the check judges):

* with the kept flags it diverges from the reference;
* without any of the flags it agrees (the MLIR computes the model; the flags break it).

Then, each candidate tried once and kept when both hold:

1. the flags, one at a time: a flag without which it still diverges is dropped (a flag that
   changes the numbers, like the bf16 demotion's type and operations, stays);
2. the MLIR: its `loc(...)` debug locations taken out (they name the user's files);
   top-level symbols nothing refers to (functions other than `main`, globals) deleted one at a
   time; the parameters inlined as `dense<"0x...">` constants (the `.irpa` file's bytes,
   exact) when they are small (`MAX_INLINE_BYTES`), so the script needs no parameter file.

The budget counts from the call; no new candidate starts once it is spent and the smallest
so far is the result (`cut_short`). Raises `NotReproducible` when the dump with the flags
does not diverge or diverges without them too (nothing the flags do to reduce), and
`ReduceError` for a finding of another kind, the import's finding, or a loaded trace (it
keeps no parameter file).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tempfile
import time
from typing import Any

import numpy as np

from explorer.reduce import NotReproducible, ReduceError
from explorer.reduce.errors import diverged_finding

MAX_INLINE_BYTES = 1 << 20  # parameters inlined into the MLIR (above: the .irpa beside it)
MAX_SYMBOL_TRIES = 64  # unused top-level symbols tried for deletion
ENTRY = "main"
_PARAM = re.compile(
    r'#flow\.parameter\.named<"(?P<scope>[^"\\]*)"::"(?P<key>[^"\\]*)">\s*:\s*'
    r"(?P<type>tensor<(?P<shape>[0-9x]*?)x?(?P<dtype>f16|bf16|f32|f64|i8|i16|i32|i64)>)"
)
_DTYPES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
}


class _OutOfBudget(Exception):
    pass


def pick_finding(report, finding) -> Any:
    """The finding to reduce: the first failure by default, a Finding, or its index; a
    `diverged` one at a pass of the trace."""
    finding = diverged_finding(
        report, finding, "an IREE trace's", "a diverged step (a pass that changed the numbers)"
    )
    if finding.step is report.trace.steps[0]:
        raise NotReproducible(
            "the finding is at the import: compiled by iree-compile from the start without the "
            "recording's flags it already differs from the reference (IREE's own pipeline, or "
            "a model changed since it was recorded), so no dump agrees to reduce from"
        )
    return finding


class Oracle:
    """Candidates (MLIR text, flags) compiled from `phase` and run, judged against the
    reference; each distinct one once, within the budget."""

    def __init__(self, phase, runtime, inputs, reference, float64, rtol, atol, workdir, job):
        self.phase, self.runtime, self.inputs = phase, runtime, inputs
        self.reference, self.float64 = reference, float64
        self.rtol, self.atol = rtol, atol
        self.workdir, self.job = workdir, job
        self.deadline = math.inf
        self.memo: dict[tuple, tuple[bool, float, str]] = {}
        self.outputs: dict[tuple, list] = {}
        self.tried = 0
        self.errors: list[str] = []

    def run(self, text: str, flags: tuple) -> tuple[bool, float, str]:
        """(diverged, max abs difference, why it failed to compile or run: '' when it ran);
        the outputs are kept in `outputs`."""
        from explorer.check.numbers import judge_outputs
        from explorer.iree.check import compile_module
        from explorer.iree.convert import IREEError

        key = _key(text, flags)
        if key in self.memo:
            return self.memo[key]
        if time.perf_counter() > self.deadline:
            raise _OutOfBudget
        self.tried += 1
        self.job(
            f"candidate {self.tried}: compiling and running ({len(flags)} flag(s), "
            f"{len(text):,} characters of MLIR)",
            self.tried,
        )
        try:
            vmfb = compile_module(text, self.phase, self.workdir, flags)
            got = self.runtime.run(vmfb, self.inputs)
        except Exception as e:  # noqa: BLE001 (a candidate that cannot run does not hold)
            if not isinstance(e, IREEError):
                e = IREEError(f"{type(e).__name__}: {str(e)[:300]}")
            if len(self.errors) < 3:
                self.errors.append(str(e)[:300])
            self.memo[key] = (False, math.inf, str(e)[:300])
            return self.memo[key]
        cmp = judge_outputs(got, self.reference, self.float64, self.rtol, self.atol)
        self.memo[key] = (cmp.diverged, float(cmp.max_abs), "")
        self.outputs[key] = list(got)
        return self.memo[key]

    def same(self, a: tuple, b: tuple) -> bool:
        """Whether the candidates `a` and `b` (text, flags) both ran and gave the same
        outputs, within the check's tolerance of each other: the same divergence."""
        from explorer.check.numbers import allclose

        got, want = self.outputs.get(_key(*a)), self.outputs.get(_key(*b))
        return allclose(got, want, self.rtol, self.atol)

    def holds(self, text: str, flags: tuple, current: tuple) -> bool:
        """With `flags` it diverges, the same way as the `current` candidate (text, flags),
        and without any flag it agrees."""
        bad, _, why = self.run(text, flags)
        if not bad or why or not self.same((text, flags), current):
            return False
        clean, _, why = self.run(text, ())
        return not clean and not why


def _key(text: str, flags) -> tuple:
    return hashlib.sha256(text.encode()).hexdigest(), tuple(flags)


def reference_of(trace, report, runtime, inputs, import_text: str, workdir: str):
    """(reference outputs, float64 reference or None, its description) as the check made
    them: torch eager (and float64) for a torch model, else the import compiled from the start
    without flags."""
    from explorer.check.references import float64_reference, torch_reference
    from explorer.iree.check import compile_module

    model = trace.source
    if report.reference.startswith("torch"):
        import torch

        tensors = [torch.from_numpy(np.array(x)) for x in inputs]
        source = {"model": model}
        try:
            source["exported"] = torch.export.export(model, tuple(tensors))
        except Exception:  # noqa: BLE001 (the forward alone, as the check falls back)
            pass
        try:
            outputs, _, how = torch_reference(source, tensors)
        except Exception as e:  # noqa: BLE001 (the model cannot run: nothing to reduce against)
            raise ReduceError(
                f"the torch reference could not run ({type(e).__name__}: {str(e)[:300]})"
            ) from None
        f64 = None
        if "exported" in source and how.startswith("the exported graph"):
            f64 = float64_reference("torch", source, tensors, [])
        return tuple(np.asarray(o) for o in outputs), f64, f"torch eager ({how})"
    vmfb = compile_module(import_text, None, workdir)
    return runtime.run(vmfb, inputs), None, "the import compiled from the start, no flags"


# ===== MLIR candidates ==========================================================================


def without_locations(text: str) -> str:
    """`text` printed without its `loc(...)` debug information."""
    from explorer.iree.convert import parse_module

    _, module = parse_module(text, "the reduced MLIR")
    return module.operation.get_asm(enable_debug_info=False)


def unused_symbols(text: str) -> list[str]:
    """The top-level symbols of `text` (not `main`) whose name no other op mentions."""
    from explorer.iree.convert import parse_module

    _, module = parse_module(text, "the reduced MLIR")
    found = []
    for op in module.body.operations:
        attrs = op.operation.attributes
        if "sym_name" not in attrs:
            continue
        name = str(attrs["sym_name"]).strip('"')
        if name == ENTRY:
            continue
        pattern = re.compile(r"@" + re.escape(name) + r"(?![\w$.-])")
        if len(pattern.findall(text)) == 1:  # its own definition only
            found.append(name)
    return found[:MAX_SYMBOL_TRIES]


def delete_symbol(text: str, name: str) -> str | None:
    """`text` without the top-level op defining `name` (None when it is not there)."""
    from explorer.iree.convert import parse_module

    _, module = parse_module(text, "the reduced MLIR")
    for op in module.body.operations:
        attrs = op.operation.attributes
        if "sym_name" in attrs and str(attrs["sym_name"]).strip('"') == name:
            op.operation.erase()
            return module.operation.get_asm(enable_debug_info=True)
    return None


def parameters_of(irpa: bytes, workdir: str) -> dict[str, bytes]:
    """The parameter file's entries (key -> bytes)."""
    import iree.runtime as rt

    path = os.path.join(workdir, "inline.irpa")
    with open(path, "wb") as f:
        f.write(irpa)
    index = rt.ParameterIndex()
    index.load(path)
    out = {}
    for key, entry in index.items():
        if entry.is_file:
            out[str(key)] = bytes(entry.file_view)
        elif entry.is_splat:
            pattern = bytes(entry.splat_pattern)
            out[str(key)] = pattern * (int(entry.length) // max(1, len(pattern)))
    return out


def inline_parameters(text: str, params: dict[str, bytes]) -> str | None:
    """`text` with every `#flow.parameter.named` global holding its bytes as a `dense` hex
    constant (exact); None when one is missing, of another size, or of a dtype not known."""
    missing = []

    def sub(m: re.Match) -> str:
        data = params.get(m["key"])
        dims = [int(d) for d in m["shape"].split("x") if d] if m["shape"] else []
        width = 2 if m["dtype"] == "bf16" else np.dtype(_DTYPES[m["dtype"]]).itemsize
        if data is None or len(data) != int(np.prod(dims, dtype=np.int64)) * width:
            missing.append(m["key"])
            return m[0]
        return f'dense<"0x{data.hex().upper()}"> : {m["type"]}'

    out = _PARAM.sub(sub, text)
    return None if missing or out == text else out


# ===== the reducer ==============================================================================


def reduce_iree(report, finding=None, budget: float = 60.0, progress=None):
    """Reduce `finding` (the first failure by default, a Finding or its index) of an IREE
    trace's check `report` (see the module docstring); an `explorer.iree.repro.IREEReduction`."""
    from explorer.iree.check import IREERuntime, resumable, resume_from, user_flags
    from explorer.iree.repro import IREEReduction
    from explorer.progress import Job

    start = time.perf_counter()
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget >= 0:
        raise ReduceError(f"budget is a number of seconds (0 or more), not {budget!r:.40}")
    finding = pick_finding(report, finding)
    trace, step = report.trace, finding.step
    run = getattr(trace, "iree", None)
    if run is None:
        raise ReduceError(
            "this IREE trace was loaded from a file: it keeps no parameter file to run its "
            "dumps with; explore the model again, check it, then reduce"
        )
    if report.inputs is None:
        raise ReduceError("the report checked no numbers: check with inputs, then reduce")
    last = finding.details.get("last_agreeing")
    last_step = trace.steps[last] if isinstance(last, int) else None
    module = last_step.module if last_step is not None else step.before
    if module is None or not hasattr(module, "mlir"):
        raise ReduceError(f"#{step.index} {step.name[:80]} has no module before it to reduce")
    from explorer.iree.convert import IREEError

    try:
        text = resumable(module.mlir)
        import_text = resumable(trace.steps[0].module.mlir)
    except IREEError as e:
        raise NotReproducible(f"the last agreeing dump does not parse back: {e}") from None
    phase = None if module is trace.steps[0].module else resume_from(module.phase)
    flags = tuple(user_flags(run.flags))
    inputs = [np.ascontiguousarray(np.asarray(x)) for x in report.inputs]
    callback = progress if callable(progress) else None
    job = Job(False if callback else progress, "reducing", None, unit="candidate")
    tried = [0]

    def say(what: str, count: int = 0) -> None:
        tried[0] = max(tried[0], count)
        status = {"phase": what, "tried": tried[0], "seconds": time.perf_counter() - start}
        if callback is not None:
            callback(status)
        else:
            job.show(tried[0], what)

    try:
        with tempfile.TemporaryDirectory(prefix="passlens-iree-reduce-") as workdir:
            irpa = None
            if run.irpa is not None:
                irpa = os.path.join(workdir, "params.irpa")
                with open(irpa, "wb") as f:
                    f.write(run.irpa)
            runtime = IREERuntime(irpa)
            say("the reference")
            reference, f64, ref_name = reference_of(
                trace, report, runtime, inputs, import_text, workdir
            )
            oracle = Oracle(
                phase, runtime, inputs, reference, f64, report.rtol, report.atol, workdir, say
            )
            oracle.deadline = start + budget
            found = _search(oracle, text, flags, run.irpa, workdir, step, budget)
            text, flags, dropped, inlined, cut_short = found
            bad, max_abs, _ = oracle.run(text, flags)
            _, clean_abs, _ = oracle.run(text, ())
            expected64 = None
            if f64 is not None and f64.available:
                expected64 = [np.asarray(o) for o in f64.outputs]
            del runtime
    finally:
        job.close()
    return IREEReduction(
        finding=finding,
        step=step.name,
        last_agreeing=last_step.index if last_step is not None else 0,
        phase=phase,
        mlir=text,
        flags=list(flags),
        dropped=list(dropped),
        recorded_flags=list(user_flags(run.flags)),
        inputs=inputs,
        expected=[np.asarray(o) for o in reference],
        expected64=expected64,
        reference=ref_name,
        irpa=None if inlined else run.irpa,
        inlined=inlined,
        chars=(len(resumable(module.mlir)), len(text)),
        max_abs=max_abs,
        clean_abs=clean_abs,
        rtol=float(report.rtol),
        atol=float(report.atol),
        tried=oracle.tried,
        seconds=time.perf_counter() - start,
        budget=float(budget),
        cut_short=cut_short,
    )


def _search(oracle: Oracle, text: str, flags: tuple, irpa, workdir: str, step, budget):
    """(text, flags, dropped flags, whether the parameters were inlined, cut short)."""
    try:
        if not flags:
            raise NotReproducible(
                f"the trace was recorded without flags: the dump before #{step.index} "
                f"{step.name[:80]} agrees compiled by IREE's own pipeline, and nothing is left "
                "to make it diverge"
            )
        bad, max_abs, why = oracle.run(text, flags)
        if not bad:
            raise NotReproducible(
                f"the dump before #{step.index} {step.name[:80]}, compiled with the recording's "
                f"flags, {'fails: ' + why if why else 'agrees with the reference'} (max abs "
                f"{max_abs:.3g}): the divergence needs more than that dump and its flags"
            )
        clean, clean_abs, why = oracle.run(text, ())
        if clean or why:
            raise NotReproducible(
                f"the dump before #{step.index} {step.name[:80]} "
                f"{'fails' if why else 'diverges'} without the flags too: it is not the flags "
                "that change the numbers"
            )
    except _OutOfBudget:
        raise ReduceError(
            f"the budget of {budget:g} s was spent before the dump was run: give more"
        ) from None
    dropped: list[str] = []
    inlined, cut_short = False, False
    try:
        changed = True
        while changed and len(flags) > 1:
            changed = False
            for f in list(flags):
                trial = tuple(x for x in flags if x != f)
                # dropped when it changes nothing of the divergence (the same outputs)
                if trial and oracle.holds(text, trial, (text, flags)):
                    flags, changed = trial, True
                    dropped.append(f)
        trial = without_locations(text)
        if trial != text and oracle.holds(trial, flags, (text, flags)):
            text = trial
        tried: set[str] = set()
        while True:
            names = [n for n in unused_symbols(text) if n not in tried]
            if not names:
                break
            tried.add(names[0])
            trial = delete_symbol(text, names[0])
            if trial is not None and oracle.holds(trial, flags, (text, flags)):
                text = trial
        if irpa is not None and len(irpa) <= MAX_INLINE_BYTES:
            trial = inline_parameters(text, parameters_of(irpa, workdir))
            if (
                trial is not None
                and "#flow.parameter" not in trial
                and oracle.holds(trial, flags, (text, flags))
            ):
                text, inlined = trial, True
    except _OutOfBudget:
        cut_short = True
    return text, flags, dropped, inlined, cut_short


__all__ = [
    "MAX_INLINE_BYTES",
    "Oracle",
    "delete_symbol",
    "inline_parameters",
    "pick_finding",
    "reduce_iree",
    "unused_symbols",
    "without_locations",
]
