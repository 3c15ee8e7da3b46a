"""The oracle of a reduction: does a candidate (a module and a list of passes) still show the
same finding? The candidate is explored and checked exactly as the generated test will do
(IR source, random inputs of seed 0), and the finding must be of the same kind, at the same
pass, with the same error type for a failed pass or run and on the same op for a shape
mismatch (for `diverged`, beyond tolerance, as any such finding is). When the finding was
the trace's first failure, a candidate must have no failure before it either.

Answers are memoized by the candidate's structural hash; a candidate that cannot be built,
explored or checked simply does not hold. The oracle also keeps the time budget and shows
progress."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler.ir import Call, Module, structural_hash, verify
from explorer.passlens.record import explore
from explorer.passlens.reduce.module import CannotBuild, Cut, Cutter, count_bindings
from explorer.passlens.reduce.pipeline import Unit, passes_of, subtree
from explorer.progress import Job

if TYPE_CHECKING:
    from explorer.check import Finding, Report
    from explorer.trace import Trace

Progress = Callable[[dict], None]


class OutOfBudget(Exception):
    """The time budget is spent: the reduction stops with the best candidate so far."""


def _extra(finding: Finding) -> tuple:
    """What else must match for a finding to be the same one, beyond its kind and pass."""
    if finding.kind in ("pass-failed", "run-failed"):
        return ("error", type(finding.details.get("error")).__name__)
    if finding.kind == "shape-mismatch" and finding.nodes and isinstance(finding.nodes[0], Call):
        return ("op", finding.nodes[0].op)
    return ()


@dataclass(frozen=True)
class Target:
    """The finding to keep: its kind, what else must match, the position of its pass among the
    units, whether it was the first failure, the check's tolerances."""

    kind: str
    extra: tuple
    unit: int
    first: bool
    rtol: float
    atol: float

    @staticmethod
    def of(finding: Finding, unit: int, report: Report) -> Target:
        first = not any(f.step.index < finding.step.index for f in report.failures)
        return Target(finding.kind, _extra(finding), unit, first, report.rtol, report.atol)

    def found(self, trace: Trace, report: Report, position: int) -> list[Finding]:
        """The findings of `report` that are this one, at the `position`-th pass."""
        passes = [s for s in trace.steps if s.kind == "pass" and s.depth == 0]
        if position >= len(passes):
            return []
        inside = subtree(trace, passes[position])
        hits = [
            f
            for f in report.findings
            if f.kind == self.kind and f.step.index in inside and _extra(f) == self.extra
        ]
        if hits and self.first and any(f.step.index < hits[0].step.index for f in report.failures):
            return []
        return hits


class Oracle:
    """Answers whether candidates hold, within a time budget, counting and showing them."""

    def __init__(
        self,
        target: Target,
        cutter: Cutter,
        units: Sequence[Unit],
        budget: float,
        progress: Progress | bool | None,
        start: float | None = None,
    ):
        self.target = target
        self.cutter = cutter
        self.units = list(units)
        self.start = time.perf_counter() if start is None else start  # the budget's start
        self.deadline = self.start + budget
        self.tried = 0  # candidates explored and checked (memo hits not counted)
        self.errors: list[str] = []  # why candidates could not be checked, first ones
        self.status = {"phase": "", "bindings": None, "passes": None}
        self._memo: dict[tuple, bool] = {}
        self._callback = progress if callable(progress) else None
        self._job = Job(False if self._callback else progress, "reducing", round(budget), unit="s")
        self._job.line = self.line

    @property
    def spent(self) -> bool:
        """Whether the time budget is spent."""
        return time.perf_counter() > self.deadline

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start

    def holds(self, cut: Cut, kept: Sequence[int], force: bool = False) -> bool:
        """Whether the module of `cut` through the units `kept` shows the finding."""
        try:
            module, _ = self.cutter.build(cut)
        except CannotBuild:
            return False
        return self.holds_module(module, kept, force)

    def holds_module(self, module: Module, kept: Sequence[int], force: bool = False) -> bool:
        """Whether `module` through the units `kept` shows the finding (`force`: even
        when the budget is spent)."""
        try:
            key = (structural_hash(module), tuple(kept))
        except Exception:
            return False
        if key not in self._memo:
            if not force and time.perf_counter() > self.deadline:
                raise OutOfBudget
            self._memo[key] = self.run(module, kept) is not None
            self.tried += 1
            self.show()
        return self._memo[key]

    def run(
        self, module: Module, kept: Sequence[int], inputs: Any = None
    ) -> tuple[Trace, Report, list[Finding]] | None:
        """Explore and check a candidate: (trace, report, the matching findings) when it holds,
        else None."""
        try:
            verify(module)
            pipeline = passes_of(self.units, kept)
            trace = explore(module, inputs, pipeline=pipeline, progress=False)
            report = trace.check(rtol=self.target.rtol, atol=self.target.atol, progress=False)
        except KeyboardInterrupt:
            raise
        except Exception as e:  # a candidate that cannot be checked does not hold
            if len(self.errors) < 5:
                self.errors.append(f"{type(e).__name__}: {str(e)[:200]}")
            return None
        hits = self.target.found(trace, report, len(kept) - 1)
        return (trace, report, hits) if hits else None

    def best(self, phase: str, module: Module, kept: Sequence[int]) -> None:
        """Record the smallest candidate so far (for the progress line)."""
        self.status.update(phase=phase, bindings=count_bindings(module), passes=len(kept))
        self.show()

    def show(self) -> None:
        status = {**self.status, "tried": self.tried, "seconds": self.seconds}
        if self._callback is not None:
            self._callback(status)
        else:
            self._job.note = self.text(status)
            self._job.show(min(int(status["seconds"]), self._job.total or 0), status["phase"])

    @staticmethod
    def text(status: dict) -> str:
        """`(phase) 12 candidates tried, 40 bindings left, 3 passes left`."""
        left = ""
        if status["bindings"] is not None:
            left = f", {status['bindings']} bindings left, {status['passes']} passes left"
        return f"({status['phase']}) {status['tried']} candidates tried{left}"

    def line(self) -> str:
        """The job's line (CI logs): what was tried and how long it took."""
        status = {**self.status, "tried": self.tried}
        return f"reducing {self.text(status)}, {self.seconds:.1f} s"

    def done(self) -> None:
        """End the progress display."""
        self._job.close()
