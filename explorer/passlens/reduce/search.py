"""Reducing a finding, start to end: focus on the nodes it names, then delta debugging over
the passes and over the module's bindings in turn until neither shrinks, then weights made
from their names where their values do not matter, then the result made into its IR text and
test file and checked once more through that file."""

from __future__ import annotations

import runpy
import tempfile
import time
from dataclasses import replace
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from compiler.ir import Module, Tuple, print_module
from explorer.passlens.reduce.focus import candidates
from explorer.passlens.reduce.module import INLINE, CannotBuild, Cut, Cutter, count_bindings
from explorer.passlens.reduce.oracle import Oracle, OutOfBudget, Progress, Target
from explorer.passlens.reduce.pass_source import PassSource, pass_source
from explorer.passlens.reduce.pipeline import (
    Unit,
    ddmin,
    passes_of,
    spec_of,
    unit_index,
    units_of,
)
from explorer.passlens.reduce.testfile import make_test_source
from explorer.passlens.user_passes import MissingPasses, is_own
from explorer.reduce.errors import NotReproducible, ReduceError
from explorer.reduce.result import WEIGHTS_FILE, Reduction, write_weights
from explorer.trust import needed_trust

if TYPE_CHECKING:
    from explorer.check import Finding, Report
    from explorer.trace import Trace


def reduce_passlens(
    report: Report,
    finding: Finding | int | None = None,
    *,
    budget: float = 60.0,
    progress: Progress | bool | None = None,
) -> Reduction:
    """The passlens adapter's reducer (`explorer.reduce.reduce` runs it for a passlens trace,
    inside the trust it was given): see there for `finding`, `budget` and `progress`."""
    started = time.perf_counter()
    finding = _pick(report, finding)
    trace, step = report.trace, finding.step
    what = f"{finding.kind} at #{step.index} {step.name}"
    if step.kind != "pass":
        raise NotReproducible(
            f"{what} is a finding of the {step.kind} step, not of a pass: a reduction keeps a "
            "pass's finding while it shrinks the module and the pipeline"
        )
    units = units_of(trace)
    position = unit_index(units, step)
    if position is None:
        raise NotReproducible(f"{what}: no pass of the trace's pipeline ran that step")
    try:
        passes_of(units, range(position + 1))
    except MissingPasses as e:
        raise ReduceError(f"the trace's pipeline cannot run here: {e}") from None
    module = trace.imported.module
    if module is None or "main" not in module:
        raise ReduceError("the imported module has no @main to reduce")
    cutter = Cutter(module)
    target = Target.of(finding, position, report)
    oracle = Oracle(target, cutter, units, budget, progress, start=started)
    search = _Search(oracle, cutter, units, position, budget)
    try:
        search.run(finding, trace, report)
        return search.result(finding)
    finally:
        oracle.done()


def _pick(report: Report, finding: Finding | int | None) -> Finding:
    if finding is None:
        first = report.first_failure
        if first is None:
            raise ReduceError(f"nothing to reduce: {report.headline()}")
        return first
    if isinstance(finding, int) and not isinstance(finding, bool):
        if not -len(report.findings) <= finding < len(report.findings):
            raise ReduceError(
                f"no finding {finding}: the report has {len(report.findings)} (0 is the first)"
            )
        return report.findings[finding]
    if not any(finding is f for f in report.findings):
        raise ReduceError("the finding to reduce must be one of the report's findings")
    return finding


def _size(module: Module) -> tuple[int, int, int]:
    """What the bindings phase makes smaller: bindings, then @main's outputs, then functions
    (moving an output up to the nodes it reads may add outputs, never bindings)."""
    out = module["main"].output
    outputs = len(out.fields) if isinstance(out, Tuple) else 1
    return count_bindings(module), outputs, len(module.functions)


class _Search:
    """The reduction's state: the smallest candidate so far (a cut and the units kept)."""

    def __init__(self, oracle: Oracle, cutter: Cutter, units: list[Unit], position: int, budget):
        self.oracle, self.cutter, self.units = oracle, cutter, units
        self.position = position
        self.budget = budget
        self.cut: Cut | None = None
        self.kept: tuple[int, ...] = tuple(range(position + 1))
        self.cut_short = False

    def run(self, finding: Finding, trace: Trace, report: Report) -> None:
        try:
            self._focus(finding)
            if self.cut is None:
                self._not_reproducible(finding, trace, report)
            self._shrink()
        except OutOfBudget:
            self.cut_short = True
            if self.cut is None:
                raise ReduceError(
                    f"the time budget ({self.budget:g} s) ran out before a candidate showed "
                    f"{finding.kind} at {finding.step.name} again: give a larger budget"
                ) from None
        self._standalone_weights()

    def _accept(self, cut: Cut, kept: tuple[int, ...], module: Module, phase: str) -> None:
        self.cut, self.kept = cut, kept
        self.oracle.best(phase, module, kept)

    # ----- the phases ---------------------------------------------------------------------
    def _focus(self, finding: Finding) -> None:
        """The first candidate that holds: cuts around the named nodes, else the module."""
        self.oracle.status["phase"] = "focus"
        for cut in chain(candidates(finding, self.cutter), [self.cutter.start()]):
            try:
                module, _ = self.cutter.build(cut)
            except CannotBuild:
                continue
            if self.oracle.holds_module(module, self.kept):
                self._accept(cut, self.kept, module, "focus")
                return

    def _shrink(self) -> None:
        """Passes, then bindings, again until neither shrinks."""
        while True:
            before = (self.cut, self.kept)
            self._passes()
            self._bindings()
            if (self.cut, self.kept) == before:
                return

    def _passes(self) -> None:
        last = self.kept[-1]
        current = list(self.kept[:-1])
        module, _ = self.cutter.build(self.cut)

        def without(chunk: list[int]) -> list[int] | None:
            cand = [i for i in current if i not in chunk]
            if not self.oracle.holds_module(module, (*cand, last)):
                return None
            current[:] = cand
            self._accept(self.cut, (*cand, last), module, "passes")
            return cand

        ddmin(current[:], without)

    def _bindings(self) -> None:
        module, items = self.cutter.build(self.cut)
        size = [_size(module)]

        def without(chunk: list) -> list | None:
            cand = self.cutter.without(self.cut, chunk)
            if cand is None:
                return None
            try:
                module, left = self.cutter.build(cand)
            except CannotBuild:
                return None
            if _size(module) >= size[0] or not self.oracle.holds_module(module, self.kept):
                return None
            size[0] = _size(module)
            self._accept(cand, self.kept, module, "bindings")
            return left

        ddmin(items, without)

    def _standalone_weights(self) -> None:
        """Weights made from their names wherever the finding does not need their values:
        all at once, else one by one (the first try runs even when the budget is spent)."""
        module, _ = self.cutter.build(self.cut)
        big = [
            name
            for name, c in module.constants().items()
            if c.data.size > INLINE and name not in self.cut.generated
        ]
        if not big:
            return
        self.oracle.status["phase"] = "weights"
        every = replace(self.cut, generated=self.cut.generated | frozenset(big))
        if self.oracle.holds(every, self.kept, force=True):
            self.cut = every
            return
        for name in big:
            one = replace(self.cut, generated=self.cut.generated | {name})
            try:
                if self.oracle.holds(one, self.kept):
                    self.cut = one
            except OutOfBudget:
                self.cut_short = True
                return

    def _not_reproducible(self, finding: Finding, trace: Trace, report: Report) -> None:
        """Raise NotReproducible, saying why as far as can be told."""
        name = finding.step.name
        module = self.cutter.module
        why = (
            f"the imported module, checked again through the passes up to {name} with random "
            "inputs (seed 0), does not show it"
        )
        if (
            trace.example_inputs is not None
            and not self.oracle.spent
            and self.oracle.run(module, self.kept, trace.example_inputs)
        ):
            why = (
                "it needs the trace's own inputs: with random inputs of the same shapes "
                "(seed 0) it does not show"
            )
        elif finding.kind == "diverged" and trace.frontend in ("torch", "onnx"):
            why = (
                f"the check compared the steps with {report.reference}; compared with the "
                f"imported module instead, the steps up to {name} do not diverge"
            )
        if self.oracle.errors:
            why += f" (a candidate could not be checked: {self.oracle.errors[0]})"
        raise NotReproducible(
            f"{finding.kind} at #{finding.step.index} {name} is not reproducible on its own: {why}"
        )

    # ----- the result -----------------------------------------------------------------------
    def result(self, finding: Finding) -> Reduction:
        module, _ = self.cutter.build(self.cut)
        ir = print_module(module, show_provenance=True)
        big = {n: c for n, c in module.constants().items() if c.data.size > INLINE}
        generated = {
            n: (str(c.data.dtype), c.data.shape) for n, c in big.items() if n in self.cut.generated
        }
        saved = {n: np.asarray(c.data) for n, c in big.items() if n not in self.cut.generated}
        pipeline = spec_of(self.units, self.kept)
        target = self.oracle.target
        trust = needed_trust(module)  # trusted now (or it would not have run): kept trusted
        objects = [self.units[i].pass_object for i in self.kept]
        users = list(dict.fromkeys(type(p) for p in objects if not is_own(p)))
        written: PassSource | None = pass_source(users) if users else None
        source = make_test_source(
            ir,
            pipeline,
            target.kind,
            len(self.kept) - 1,
            self.units[self.position].step.name,
            finding.message,
            target.rtol,
            target.atol,
            generated,
            list(saved),
            trust_ops=trust,
            user_passes=written,
        )
        # a file that could not write a pass is checked with the pass given to it
        given = users if written is not None and written.missing else None
        trace, report, reproduced = self._through_the_test(source, saved, finding, given)
        trace.trusted_ops = trace.trusted_ops | trust
        return Reduction(
            finding=finding,
            trace=trace,
            report=report,
            reproduced=reproduced,
            ir=ir,
            pipeline=pipeline,
            test_source=source,
            bindings=(count_bindings(self.cutter.module), count_bindings(module)),
            passes=(len(self.units), len(self.kept)),
            tried=self.oracle.tried,
            seconds=self.oracle.seconds,
            budget=self.budget,
            cut_short=self.cut_short,
            generated=list(generated),
            saved_weights=saved,
        )

    def _through_the_test(self, source: str, saved: dict, finding: Finding, given=None):
        """The reduced trace as the test file builds it (`given`: the pass classes handed to
        a file that could not write them), its report and the finding in it; raises
        NotReproducible if the file does not show the finding."""
        target = self.oracle.target
        with tempfile.TemporaryDirectory(prefix="passlens-reduce-") as tmp:
            path = Path(tmp) / "test_reduced.py"
            path.write_text(source, encoding="utf-8")
            if saved:
                write_weights(Path(tmp) / WEIGHTS_FILE, saved)
            namespace = runpy.run_path(str(path), run_name="passlens_reduced_test")
            build = namespace["build_trace"]
            trace = build() if given is None else build(passes=given)
            report = trace.check(rtol=target.rtol, atol=target.atol, progress=False)
            hits = target.found(trace, report, len(self.kept) - 1)
            seen_by_test = bool(namespace["findings"](trace))
        if not hits or not seen_by_test:
            raise NotReproducible(
                f"{finding.kind} at {finding.step.name}: the reduced module shows it, but not "
                "once written as IR text and parsed back, as the test file does"
            )
        return trace, report, hits[0]
