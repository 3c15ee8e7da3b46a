"""Running the check: the reference, every step on the same inputs, the findings.

The loop is the `Checker`'s and the same for every compiler; how one step's module is
run is a `StepRunner`'s, the public interface an adapter implements (as TVM's
`PassInstrument` and torch.fx's `Interpreter` are: two methods to write, hooks with no-op
defaults to override where the compiler differs):

    class MyRunner(StepRunner):
        def prepare(self, inputs):            # the runtime inputs and weights, or (None, None)
            return [np.asarray(inputs[0])], []
        def run(self, module) -> Run:          # one step's module on them
            ...

    Checker(trace, inputs, options, MyRunner()).run()   # the Report (Adapter.check does this)

The runner sees the check as `self.check` (its `trace`, `options`, `notes`,
`runtime` and `weights`, `reference` and `ref_outputs`, `findings`, `results`).
passlens's interpreter (`explorer.passlens.check.Interpreter`: per-node values, one
value cache for every step) is one implementation; TVM's VM (`explorer/tvm/check.py`) and
torch.fx (`explorer/inductor/check.py`) are others. No runner overrides a private method of
this module (tests/explorer/test_adapters.py holds that).

A check of a re-run (`trace.rerun_of`) takes the results of the steps it shares with the
trace it was re-run from from that trace's last check, when its runner allows it
(`StepRunner.reuses_earlier_checks`; see `explorer.check.reuse`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from compiler import InterpretError
from compiler.opaque import ModelRefusedError
from explorer.check import detectors, reuse  # noqa: F401 (detectors: the built-in kinds)
from explorer.check.facts import Options, Reference, Run, StepFacts
from explorer.check.judge import failure_note, used_note
from explorer.check.numbers import OutputsCompared, judge_outputs, leaves
from explorer.check.references import float64_reference, onnx_reference, torch_reference
from explorer.check.registry import kinds
from explorer.check.report import WARNING_PREFIX, Finding, Report, StepCheck
from explorer.progress import Job

if TYPE_CHECKING:  # a Step / Trace is given; the trace module imports this one
    from explorer.step import Step

# ===== the interface an adapter implements ======================================================


class StepRunner:
    """How the check runs one compiler's steps: `prepare` the inputs once, `run`
    each step's module; every other method is a hook with a no-op default (a runner that
    gives outputs only needs none of them). `check` is the `Checker` running it, set
    before `prepare`."""

    #: why the imported step is the reference when the source is no framework model
    own_source: str = "the source is IR"
    #: whether the weights :meth:`prepare` gave are the module's own (the report then lists
    #: the runtime inputs only as the inputs the steps ran on)
    weights_stored: bool = False
    #: whether a check of a re-run may take, for the steps it shares with the trace it was
    #: re-run from, that trace's check's results instead of running them (the runner needs
    #: nothing of a step's run beyond its Run to run the steps after it)
    reuses_earlier_checks: bool = False
    check: Checker

    # ----- what every runner writes -----------------------------------------------------------
    def prepare(self, inputs: Any) -> tuple[list | None, list | None]:
        """The runtime inputs and the weights every step runs on, from the `inputs` given
        to the check (None: none were given; `self.check.trace.example_inputs` are the
        trace's). `(None, None)`: the numbers are not checked (say why in
        `self.check.notes`); raise `CheckError` for inputs that cannot be used."""
        raise NotImplementedError(f"{type(self).__name__} does not prepare inputs")

    @contextlib.contextmanager
    def timed_run(self, known: tuple = (), cut: int = 800) -> Iterator[Run]:
        """A step's `Run`, filled in the `with` block and timed: an exception of `known` (the
        runner's own errors, whose text is meant for the user) becomes its error as it says,
        any other its type and text cut to `cut` characters. A step that cannot be run is a
        finding, never a crash."""
        run = Run()
        start = time.perf_counter()
        try:
            yield run
        except known as e:
            run.error = InterpretError(str(e))
        except Exception as e:
            run.error = InterpretError(f"{type(e).__name__}: {str(e)[:cut]}")
        run.seconds = time.perf_counter() - start

    def given_inputs(self, inputs: Any) -> tuple | list | None:
        """The inputs to check on as a sequence: `inputs` as given to the check, else the
        trace's example inputs; None, with a note saying so, when there are neither (a
        `prepare` then returns `(None, None)`)."""
        if inputs is None:
            inputs = self.check.trace.example_inputs
        if inputs is None:
            self.check.notes.append(
                "numbers not checked: give inputs (trace.check(x)) or explore with example inputs"
            )
            return None
        return inputs if isinstance(inputs, (tuple, list)) else (inputs,)

    def run(self, module: Any) -> Run:
        """Run one step's module on `self.check.runtime` / `self.check.weights` and return
        its `Run` (outputs, or the error: a step that cannot run is a finding, never a
        crash)."""
        raise NotImplementedError(f"{type(self).__name__} does not run modules")

    # ----- hooks: a step ----------------------------------------------------------------------
    def should_run(self, step: Step) -> bool:
        """Whether a step's module (new to this check) is run; False: it is `not run`. May
        set what the step is judged by (`self.check.ref_outputs`)."""
        return True

    def not_run_reason(self, step: Step) -> str:
        """Why `should_run` said no, for the report's note on the `not run` rows."""
        return "the runner does not run them"

    def generation(self, before: Run | None) -> int:
        """The value generation of a step's run, from the run of the module its pass was given
        (values a runner reuses between steps; see passlens's memo)."""
        return 0

    def retie(self, step: Step, run: Run) -> Run:
        """The run as its ties are judged (the reference's order of tied indices; see
        passlens's tie_judging), once the reference is known; the same run by default."""
        return run

    def judged(self, step: Step, outputs: tuple) -> tuple:
        """The outputs as they are judged against the reference; the same by default."""
        return outputs

    def values(self) -> dict:
        """The node values of the run just made (what per-node detectors read)."""
        return {}

    def layers(self, module: Any) -> dict:
        """Per-layer errors of a step that ran (the error map); none by default."""
        return {}

    def warm_up(self) -> None:
        """One-time set-up before the first module of the check runs (loading kernels),
        inside the check's progress: say what it does with `self.check.phase`."""

    def after_step(self, step: Step, run: Run | None) -> None:
        """Called after a new step was run and its findings made (`run`: None when it was
        not run)."""

    # ----- hooks: the reference ---------------------------------------------------------------
    def set_reference(self, import_run: Run) -> bool:
        """Set `self.check.reference` (and `ref_outputs`) itself; True: done, False (the
        default): the check's own (the source run by torch / onnxruntime, or the imported
        step)."""
        return False

    def node_values(self) -> dict:
        """The imported step's node values, by provenance (the per-node reference); none by
        default."""
        return {}

    def reference_calls(self) -> Any:
        """The calls of the import's run torch's reference may take instead of making them
        again (`references.torch_reference`'s `shared`, let go of by its `done()` after the
        reference's run), handed over once; None (the default): none."""
        return None

    # ----- hooks: memory and counts -----------------------------------------------------------
    def plan(self, order: list[Step]) -> None:
        """Called once with the order the steps run in (to free values after their last use)."""

    def release(self, order: list[Step], k: int) -> None:
        """Called after the step at `order[k]` ran: free what no later step needs."""

    def reuse(self) -> tuple[int, int]:
        """`(values shared between steps, values of rebuilt nodes reused)` for the report."""
        return 0, 0


def name_nodes(check: Checker, step: Step, errors: list) -> None:
    """Give `step`'s `diverged` finding of `check` its per-node errors (`NodeError` s,
    first the node that differs first): the finding names that node and its message begins
    with it. For a runner that compares node values itself (after `after_step`)."""
    from explorer.check.report import NODE_ERRORS_KEPT

    if not errors:
        return
    for f in check.findings:
        if f.step is step and f.kind == "diverged" and not f.details.get("node_errors"):
            f.nodes = [errors[0].node]
            f.details["node_errors"] = errors[:NODE_ERRORS_KEPT]
            head = f"after {step.name}, "
            rest = f.message[len(head) :] if f.message.startswith(head) else f.message
            f.message = f"{head}{errors[0]}; {rest}"


# ===== the check ================================================================================


class Checker:
    """The check of one trace: the reference, every step run by `runner` on the same inputs,
    the detectors' findings, the `Report`. Not subclassed: a compiler's difference is
    its `StepRunner`."""

    def __init__(self, trace, inputs, options: Options, runner: StepRunner):
        self.trace = trace
        self.options = options
        self.rtol, self.atol = options.rtol, options.atol
        self.reference_kind = options.reference
        self.progress = options.progress
        self.runner = runner
        self.notes: list[str] = []
        self._not_run_notes: dict[str, list[int]] = {}  # reason -> [its note's index, rows]
        self.findings: list[Finding] = []
        self.state: dict = {}  # the detectors' check-wide state, by kind
        self.results: dict[int, Run] = {}  # id(module) -> its run
        self.ref_outputs: tuple | None = None
        self.first_step: dict[int, Step] = {}  # id(module) -> the first step that ran it
        self.checks: dict[int, StepCheck] = {}  # step index -> its numbers
        self.detected: dict[int, tuple] = {}  # step index -> (run, before, compared) detected
        self.notes_after: dict[int, int] = {}  # step index -> len(notes) once it was checked
        self.order: list[Step] = []
        self.reused_steps = 0  # steps whose results came from the check of a re-run trace
        self.reused_modules: set[int] = set()  # ids of the modules whose runs were reused
        self.reference = Reference()
        self._judged: dict[tuple, tuple] = {}  # ids of outputs and reference -> the judgement
        self.imported = trace.imported
        self.raw_inputs = inputs
        self.job: Job | None = None  # the progress of the check under way
        self.warmed = False  # whether the runner's warm_up was called
        runner.check = self
        self.runtime, self.weights = runner.prepare(inputs)

    def run_module(self, module) -> Run:
        """One module run by the step runner."""
        return self.runner.run(module)

    def phase(self, what: str) -> None:
        """Say what part of the step under way runs now (the kernels' warm-up, the reference,
        the float64 run, ...): the progress shows `<step>: <what>` and a callback is called
        with it as the name (nothing outside a check's run)."""
        if self.job is not None:
            self.job.phase(what)

    # ----- the reference -----------------------------------------------------------------------
    def _set_reference(self, import_run: Run) -> None:
        """Reference outputs, per-node reference values (FX node values by name for torch,
        else the imported step's values by provenance) and their description."""
        if self.runner.set_reference(import_run):
            return
        frontend = self.trace.frontend
        label = f"the imported step (#{self.imported.index} {self.imported.name})"
        ref = self.reference
        self.ref_outputs, ref.name = import_run.outputs, "the imported step"
        if import_run.outputs is not None:
            ref.node_values = self.runner.node_values()
        if self.reference_kind == "import" or frontend not in ("torch", "onnx"):
            why = "as asked" if self.reference_kind == "import" else self.runner.own_source
            ref.description = f"{label}, {why}"
            return
        if self.trace.source is None:  # a loaded trace: its file keeps no model to run
            self.notes.append(
                f"this trace was loaded from a file, which keeps no {frontend} model to run: "
                "the imported step is the reference (explore the model again to check against "
                f"{frontend})"
            )
            ref.description = f"{label}, as the trace keeps no {frontend} model"
            return
        self.phase(f"the {frontend} reference")
        try:
            if frontend == "torch":
                shared = self.runner.reference_calls()
                try:
                    inputs = self._all_inputs()
                    outputs, fx, how = torch_reference(self.trace.source, inputs, shared)
                finally:
                    if shared is not None:
                        shared.done()  # (the values it kept: the reference holds those it took)
                self.ref_outputs, ref.fx_values = outputs, fx
                ref.name = "torch eager"
                ref.description = f"torch eager ({how})"
            else:
                self.ref_outputs = onnx_reference(self.trace.source, self.runtime)
                ref.name = "onnxruntime"
                ref.description = "onnxruntime (CPUExecutionProvider)"
            ref.float64 = float64_reference(
                frontend, self.trace.source, self._all_inputs(), self.runtime
            )
            if ref.float64 is not None:  # made when first needed, in whichever step
                ref.float64.on_start = lambda: self.phase("the float64 run to judge with")
            return
        except ImportError as e:
            reason = f"{e.name or e} is not installed"
        except ModelRefusedError as e:  # not passlens's doing: a warning, not a silent fallback
            self.notes.append(
                f"{WARNING_PREFIX}onnxruntime refuses this model: {e.reason}; checked against "
                f"the import (#{self.imported.index} {self.imported.name}) instead, so nothing "
                "confirms what the file computes"
            )
            ref.description = f"{label}, as onnxruntime refuses the model"
            return
        except Exception as e:  # the framework could not run the model: say so, go on
            reason = f"{type(e).__name__}: {e}"
        self.notes.append(f"the {frontend} reference could not run ({reason})")
        ref.description = f"{label}, as the {frontend} reference failed"

    def _all_inputs(self) -> list:
        raw = self.raw_inputs if self.raw_inputs is not None else self.trace.example_inputs
        if raw is None:
            return self.runtime
        return list(raw) if isinstance(raw, (tuple, list)) else [raw]

    # ----- the main loop -----------------------------------------------------------------------
    def run(self) -> Report:
        """The check (with the cyclic garbage collector paused: the check makes hundreds of
        thousands of short-lived objects and no cycles worth collecting, and a full collection
        walks every object of the trace, up to a tenth of a small model's check)."""
        paused = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if paused:
                gc.enable()

    def _run(self) -> Report:
        start = time.perf_counter()
        steps = self.trace.steps
        order = self.order = _run_order(steps)
        self.runner.plan(order)
        first_step, checks = self.first_step, self.checks
        memo = reuse.earlier(self)
        shared = reuse.shared_prefix(order, memo) if memo is not None else 0
        job = self.job = Job(
            self.progress,
            "checking",
            len(steps),
            callback=lambda done, total, name: self.progress(
                order[max(done, 1) - 1].index, total, name
            ),
        )
        try:
            for k, step in enumerate(order):
                job.advance(step.name)
                module = step.module
                if k < shared:
                    checks[step.index] = self._reused(step, memo)
                elif step.kind == "source":
                    checks[step.index] = StepCheck(step, "reference")
                elif step.failed:
                    checks[step.index] = self._detect(StepCheck(step, "failed"))
                elif module is None:
                    checks[step.index] = StepCheck(step, "not run")
                    self._not_run("the trace keeps no module for them")
                elif id(module) in self.results:  # shown by a step already run: reuse its results
                    status, max_abs, max_rel = self._numbers(self.results[id(module)])
                    first = first_step[id(module)]
                    checks[step.index] = StepCheck(
                        step,
                        status,
                        max_abs,
                        max_rel,
                        same_as=first.index,
                        rule=checks[first.index].rule,
                    )
                elif self.runtime is None:  # no inputs: only what needs no numbers
                    checks[step.index] = self._detect(StepCheck(step, "not run"))
                else:
                    first_step[id(module)] = step
                    checks[step.index] = self._check_step(step)
                    self.runner.release(order, k)
                self.notes_after[step.index] = len(self.notes)
        finally:
            job.close()
            self.job = None
        used_note(self.reference, self.notes)
        cache_hits, memo_hits = self.runner.reuse()
        report = Report(
            self.trace,
            self.findings,
            [checks[s.index] for s in steps],
            self.reference.description,
            self.rtol,
            self.atol,
            sum(r.computed for i, r in self.results.items() if i not in self.reused_modules),
            cache_hits,
            memo_hits,
            time.perf_counter() - start,
            list(dict.fromkeys(self.notes)) if self.reused_steps else self.notes,
            inputs=self._inputs_used(),
        )
        report.reused_steps = self.reused_steps
        report.memo = reuse.keep(self, report.findings)
        return report

    def _reused(self, step: Step, memo: reuse.CheckMemo) -> StepCheck:
        """A step shared with the trace this one was re-run from: its results from that
        trace's check (`memo`), its detectors called again for their state only."""
        check, findings = reuse.reused_check(memo, step)
        self.findings.extend(findings)
        module = step.module
        if module is not None and id(module) in memo.results:
            self.results[id(module)] = memo.results[id(module)]
            self.first_step.setdefault(id(module), memo.first_step.get(id(module), step))
            self.reused_modules.add(id(module))
        if step is self.imported:
            self.reference, self.ref_outputs = memo.reference, memo.ref_outputs
        if step.index in memo.detected:
            run, before, compared = memo.detected[step.index]
            self._detect(check, run, before, compared, keep=False)
        self.notes[:] = memo.notes[: memo.notes_after.get(step.index, len(self.notes))]
        self.reused_steps += 1
        return check

    def _inputs_used(self) -> tuple | None:
        """The values the steps ran on, as `check` takes them: the runtime inputs, then the
        weights unless they are the module's own (None when the numbers were not checked)."""
        if self.runtime is None:
            return None
        weights = () if self.runner.weights_stored else tuple(self.weights or ())
        return (*self.runtime, *weights)

    def _numbers(self, run: Run) -> tuple[str, float | None, float | None]:
        """Status, max abs and max rel error of a run against the reference outputs."""
        if run.error is not None:
            return "run-failed", None, None
        if self.ref_outputs is None or run.outputs is None:
            return "ok", None, None
        cmp = self._judge(run.judged if run.judged is not None else run.outputs)
        return ("diverged" if cmp.diverged else "ok"), cmp.max_abs, cmp.max_rel

    def _judge(self, outputs: tuple) -> OutputsCompared:
        """Outputs against the reference: the tolerance, then the float64 rule (judge.py).
        Outputs that are the very arrays a step judged before (the memo's reuse: most steps
        after the import) are not compared again (a 1B model's logits take 30 ms a time)."""
        f64 = self.reference.float64
        key = (id(self.ref_outputs), *map(id, leaves(outputs)))
        seen = self._judged.get(key)
        if seen is not None:
            cmp = dataclasses.replace(seen[2])
        else:
            cmp = judge_outputs(outputs, self.ref_outputs, f64, self.rtol, self.atol)
            self._judged[key] = (outputs, self.ref_outputs, cmp)  # (ids stay theirs)
        failure_note(f64, self.notes)
        return cmp

    def _not_run(self, reason: str) -> None:
        """Count a `not run` row under `reason`; one note per reason says how many and
        why, so a table of "not run" rows does not read as steps the check skipped."""
        counts = self._not_run_notes
        if reason not in counts:
            counts[reason] = [len(self.notes), 0]
            self.notes.append("")
        entry = counts[reason]
        entry[1] += 1
        n = entry[1]
        self.notes[entry[0]] = f"{n} step{'s' if n > 1 else ''} not run: {reason}"

    def _check_step(self, step: Step) -> StepCheck:
        """Run a step's module (new to this check) and record what it shows."""
        runner = self.runner
        if not runner.should_run(step):
            check = StepCheck(step, "not run")
            self._not_run(runner.not_run_reason(step))
            runner.after_step(step, None)
            return check
        module = step.module
        before_mod = step.before if step.kind == "pass" else None
        before = self.results.get(id(before_mod)) if before_mod is not None else None
        generation = runner.generation(before)
        if not self.warmed:
            self.warmed = True
            runner.warm_up()
        self.phase("running")
        run = runner.run(module)
        run.generation = generation
        self.results[id(module)] = run
        if step is self.imported:
            self._set_reference(run)
        if run.error is None and self.ref_outputs is not None:
            run = runner.retie(step, run)
            self.results[id(module)] = run
        cmp = None
        if run.error is None and self.ref_outputs is not None and run.outputs is not None:
            run.judged = runner.judged(step, run.outputs)
            cmp = self._judge(run.judged)
        run.diverged = cmp is not None and cmp.diverged
        check = StepCheck(
            step,
            "run-failed" if run.error is not None else ("diverged" if run.diverged else "ok"),
            cmp.max_abs if cmp else None,
            cmp.max_rel if cmp else None,
            computed=run.computed,
            reused=run.reused,
            seconds=run.seconds,
            rule=cmp.rule if cmp is not None else "tolerance",
        )
        if run.error is None:
            self.phase("layer errors")
            check.layers = runner.layers(module)
            failure_note(self.reference.float64, self.notes)
        self.phase("findings")
        check = self._detect(check, run, before, cmp)
        runner.after_step(step, run)
        return check

    def _detect(
        self,
        check: StepCheck,
        run: Run | None = None,
        before: Run | None = None,
        compared: OutputsCompared | None = None,
        keep: bool = True,
    ) -> StepCheck:
        """Hand what is known of a step to every registered detector; keep their findings
        (`keep=False`: a step whose findings are an earlier check's, called for the
        detectors' state only)."""
        step = check.step
        self.detected[step.index] = (run, before, compared)
        label = f"after {step.name}" if step.kind == "pass" else f"the import ({step.name})"
        facts = StepFacts(
            step,
            label,
            check,
            self.options,
            self.reference,
            run,
            before,
            compared,
            self.runner.values() if keep else {},
            self.state,
        )
        for kind in kinds():
            found = kind.detect(facts)
            if keep:
                self.findings.extend(found)
        return check


# ===== helpers ==================================================================================


def _run_order(steps: list[Step]) -> list[Step]:
    """Steps with every parent after its descendants (a nested pipeline's step shows what its
    last child made), otherwise in index order."""
    end: dict[int, int] = {}
    for s in reversed(steps):
        end[s.index] = max([s.index, *(end.get(c, c) for c in s.children)])
    return sorted(steps, key=lambda s: (end[s.index], -s.depth, s.index))


__all__ = ["Checker", "StepRunner"]
