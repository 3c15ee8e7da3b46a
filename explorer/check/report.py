"""What a check found: the findings (kinds and severities), per-node errors, each step's
numbers, and the Report that holds them (text and HTML)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compiler import PasslensError
from compiler.ir import Expr
from explorer.check.layers import ErrorMap, LayerError, error_map
from explorer.check.registry import order_of, severity_of
from explorer.fmt import num
from explorer.summary import Column, html_table, name_column, step_column, text_table

if TYPE_CHECKING:  # a Step / Trace is given; the trace module imports this one
    from explorer.step import Step, TraceSteps

NODE_ERRORS_KEPT = 20  # node errors kept per diverged finding
WARNING_PREFIX = "warning: "  # a note that starts so is a warning: the headline counts it

Progress = Callable[[int, int, str], None]


class CheckError(PasslensError, RuntimeError):
    """The check cannot run: no inputs, inputs that do not fit, an unusable reference."""


# ===== reduction ==============================================================================

# Report.reduce runs explorer.reduce.reduce, which registers itself here when imported (by
# `import explorer`): that package imports the check, so this module cannot import it.
_reducer: list[Callable[..., Any]] = []


def register_reducer(reduce: Callable[..., Any]) -> None:
    """Make `reduce` what `Report.reduce` runs (`explorer.reduce` does this)."""
    _reducer[:] = [reduce]


# ===== results ================================================================================


@dataclass(eq=False)
class Finding:
    """One thing the check found: its `kind` (one of the registered kinds,
    `explorer.check.detectors.KINDS`), the step, the IR node(s), a plain-language
    `message` and kind-specific `details` (each detector module lists its own)."""

    kind: str
    step: Step
    nodes: list = field(default_factory=list)
    message: str = ""
    details: dict = field(default_factory=dict)

    @property
    def severity(self) -> str:
        """`error`, `warning` or `info`."""
        return severity_of(self.kind)

    @property
    def is_failure(self) -> bool:
        """Whether this is a problem (info findings such as signature-changed are not)."""
        return self.severity != "info"

    def __str__(self) -> str:
        return f"#{self.step.index} {self.step.name} [{self.kind}] {self.message}"

    def __repr__(self) -> str:
        return f"<Finding {self.kind} at #{self.step.index} {self.step.name}>"


@dataclass
class NodeError:
    """How far an IR node's value is from the reference value it was matched with."""

    node: Expr
    where: str  # ``module.path (fx_node)``: where the node came from in the source
    max_abs: float
    max_rel: float
    shape: tuple
    float64: Any = None  # its judge.Float64Judgement when the float64 rule judged it

    def __str__(self) -> str:
        text = f"{self.where} differs by {num(self.max_abs)} (max abs, {num(self.max_rel)} rel"
        j = self.float64
        if j is not None:
            text += f"; {num(j.error)} from float64 where the reference is {num(j.reference_error)}"
        return text + ")"


@dataclass(eq=False)
class StepCheck:
    """The numbers of one step: `status` is reference, ok, diverged, shape-mismatch,
    run-failed, failed (the pass raised) or not run; `same_as` is the index of the step
    whose module this one shows (its results reused); `computed` / `reused` count the
    bindings evaluated and taken from the cache for this step; `layers` holds each source
    layer's error against the reference (for `Report.error_map`)."""

    step: Step
    status: str
    max_abs: float | None = None
    max_rel: float | None = None
    same_as: int | None = None
    computed: int = 0
    reused: int = 0
    seconds: float = 0.0
    layers: dict[str, LayerError] = field(default_factory=dict)  # for the error map, by layer
    rule: str = "tolerance"  # what judged the status (judge.py): "tolerance" or "float64"

    @property
    def same_module(self) -> str | None:
        """Which step's module this one shows, in words (None when it has its own): `same
        module as #8` for a step that changed nothing, `same module as its last pass #9` for
        a composite step (a pipeline's row), which shows the module its last sub-pass made (`same
        module as #25, the last of its passes to change it` when the passes after #25 changed
        nothing)."""
        if self.same_as is None:
            return None
        if self.same_as <= self.step.index:
            return f"same module as #{self.same_as}"
        # only a composite row shows a later step's module: its last pass's, which is the
        # module of the last of its passes that changed it (the ones after share it)
        last, steps = self.step, getattr(self.step.trace, "steps", None)
        while steps is not None and last.children and last.children[-1] < len(steps):
            last = steps[last.children[-1]]
        if last.index == self.same_as:
            return f"same module as its last pass #{self.same_as}"
        return f"same module as #{self.same_as}, the last of its passes to change it"


class Report:
    """What `check` found: `findings` in step order, `first_failure` (the bisection
    answer), `ok`, per-step numbers (`steps` / `rows()`) and how many values were
    reused between steps. `numbers_checked` is False when no inputs were given and none
    could be made up (only failed passes and parameter bloat are then reported).
    `inputs`: the values the steps ran on, as numpy arrays in the order `check` takes
    them (the runtime inputs, then the weights unless they are the module's own), so
    `trace.check(report.inputs)` runs the same check again; None when no numbers were
    checked (or, for a loaded report, when the file was saved without them)."""

    def __init__(
        self,
        trace: TraceSteps,
        findings: list[Finding],
        steps: list[StepCheck],
        reference: str,
        rtol: float,
        atol: float,
        computed: int = 0,
        cache_hits: int = 0,
        memo_hits: int = 0,
        seconds: float = 0.0,
        notes: Sequence[str] = (),
        inputs: tuple | None = None,
    ):
        self.trace = trace
        self.findings = sorted(findings, key=lambda f: (f.step.index, order_of(f.kind)))
        self.steps = steps
        self.reference = reference
        self.rtol = rtol
        self.atol = atol
        self.computed = computed
        self.cache_hits = cache_hits
        self.memo_hits = memo_hits
        self.seconds = seconds
        self.notes = list(notes)
        self.numbers_checked = bool(reference)
        self.inputs = inputs
        # steps whose results were the check's of the trace this one was re-run from (their
        # numbers and findings taken, not computed again; see explorer.check.reuse)
        self.reused_steps = 0
        # what a check of a re-run of this trace reuses (explorer.check.reuse.CheckMemo; in
        # memory only: None for a loaded report)
        self.memo: Any = None
        self._error_map: ErrorMap | None = None

    @property
    def failures(self) -> list[Finding]:
        """The findings that are problems (not info)."""
        return [f for f in self.findings if f.is_failure]

    @property
    def first_failure(self) -> Finding | None:
        """The earliest problem, by step order: where things first went wrong."""
        fails = self.failures
        return fails[0] if fails else None

    @property
    def ok(self) -> bool:
        """Whether no problem was found (info findings allowed)."""
        return not self.failures

    def error_map(self) -> ErrorMap:
        """One row per step, one column per source layer (in model order), each cell the
        relative error of that layer's output at that step against the reference (NaN where
        the step does not have it), with the first failing step and layer: for a heat map of
        one's own (`plt.imshow(m.errors)`); the views draw it (see `explorer.check.layers`)."""
        if self._error_map is None:
            self._error_map = error_map(self)
        return self._error_map

    def of_kind(self, kind: str) -> list[Finding]:
        """The findings of one kind."""
        return [f for f in self.findings if f.kind == kind]

    def at(self, step: Step | int | str) -> list[Finding]:
        """The findings of one step (a Step, its index or its pass name)."""
        s = self.trace[step] if isinstance(step, (int, str)) else step
        return [f for f in self.findings if f.step is s]

    def reduce(
        self,
        finding: Finding | int | None = None,
        budget: float = 60.0,
        progress=None,
        trust_ops=None,
    ):
        """Shrink the module and the pipeline until nothing more can be removed while
        `finding` (the first failure by default, or its index in `findings`) still holds:
        same kind, at the same pass. Returns an `explorer.reduce.Reduction` (a trace of its
        own, its IR text, pipeline spec and a pytest file that fails while the bug is there).
        `budget`: seconds; `progress`: a callback, or None / True / False (see
        `explorer.progress`); `trust_ops`: opaque ops to run although not known to be pure
        computations, as for `trace.check`. See `explorer.reduce.reduce`."""
        if not _reducer:
            raise RuntimeError("no reducer registered: import explorer (explorer.reduce)")
        return _reducer[0](self, finding, budget=budget, progress=progress, trust_ops=trust_ops)

    def rows(self) -> list[dict]:
        """One row per step for a numerics table: step, depth, pass, status, max abs and max
        rel error against the reference, findings, the step whose results were reused."""
        counts: dict[int, list[str]] = {}
        for f in self.findings:
            counts.setdefault(f.step.index, []).append(f.kind)
        return [
            {
                "step": c.step.index,
                "depth": c.step.depth,
                "pass": c.step.name,
                "status": c.status,
                "max_abs": c.max_abs,
                "max_rel": c.max_rel,
                "findings": counts.get(c.step.index, []),
                "same_as": c.same_as,
                "same_module": c.same_module,
                "computed": c.computed,
                "reused": c.reused,
                "rule": c.rule,
            }
            for c in self.steps
        ]

    @property
    def reuse_text(self) -> str:
        """How much the shared value cache saved, in words (and, for a check of a re-run, how
        many steps' results it took from the check of the trace it re-ran)."""
        from explorer.adapters import get_adapter

        text = get_adapter(getattr(self.trace, "compiler", "passlens")).reuse_text(self)
        if text is None:  # the default: the value cache's counts
            reused = self.cache_hits + self.memo_hits
            total = reused + self.computed
            share = f" ({100 * reused / total:.0f}%)" if total else ""
            text = (
                f"{self.computed} bindings computed, {reused} reused from earlier steps{share}: "
                f"{self.cache_hits} nodes shared between steps, {self.memo_hits} rebuilt nodes "
                "on the same values"
            )
        if self.reused_steps:
            n = self.reused_steps
            text += (
                f"; {n} step{'s' if n != 1 else ''}' results taken from the check of the trace "
                "this one re-ran"
            )
        return text

    @property
    def warnings(self) -> list[str]:
        """The notes that warn (`warning: ...`, such as onnxruntime refusing the source
        model, so the check compared with the import instead): the headline counts them."""
        return [n for n in self.notes if str(n).startswith(WARNING_PREFIX)]

    def headline(self) -> str:
        """One line: ok, or the count of problems and the first one; then the warnings' count."""
        fails = self.failures
        warned = len(self.warnings)
        warn = f"; {warned} warning{'s' if warned != 1 else ''} below" if warned else ""
        if not fails:
            info = len(self.findings)
            head = "check ok" if self.numbers_checked else "check ok, but numbers not checked"
            return head + (f" ({info} note{'s' if info != 1 else ''})" if info else "") + warn
        first = fails[0]
        return (
            f"check: {len(fails)} problem{'s' if len(fails) != 1 else ''}; first at "
            f"#{first.step.index} {first.step.name} ({first.kind})"
        ) + warn

    def __str__(self) -> str:
        lines = [self.headline()]
        reference = self.reference or "none"
        lines.append(f"reference: {reference}; rtol={self.rtol:g}, atol={self.atol:g}")
        lines += self.notes
        lines.append(f"values: {self.reuse_text}; {self.seconds:.2f} s")
        lines.append(text_table(_NUMBER_COLUMNS, self.rows()))
        if self.findings:
            lines.append("findings:")
            for f in self.findings:
                tag = "" if f.is_failure else " (info)"
                lines.append(f"  #{f.step.index} {f.step.name} [{f.kind}]{tag} {f.message}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        esc = html.escape
        colour = {"error": "#fdd", "warning": "#ffe9c6", "info": "#e8f0fe"}
        items = "".join(
            f"<li style='background:{colour[f.severity]}'><b>#{f.step.index} {esc(f.step.name)}"
            f"</b> [{esc(f.kind)}] {esc(f.message)}</li>"
            for f in self.findings
        )
        notes = "".join(f"<br>{esc(n)}" for n in self.notes)
        return (
            f"<div><b>{esc(self.headline())}</b><br>reference: {esc(self.reference)}; "
            f"rtol={self.rtol:g}, atol={self.atol:g}{notes}<br>values: {esc(self.reuse_text)}"
            + (f"<ul>{items}</ul>" if items else "")
            + html_table(_NUMBER_COLUMNS + (_FINDINGS_COLUMN,), self.rows(), row_attrs=_bad_row)
            + "</div>"
        )


# ===== the numbers table ======================================================================


def _status(row: dict) -> str:
    """A step's status, `(float64)` when values beyond the tolerance were judged against the
    float64 run (judge.py), and when it shows the very module of an earlier step (whose
    values it reused, not recomputed), which one: `ok (float64), same module as #8` (a
    composite row: `same module as its last pass #9`)."""
    same = f", {row['same_module']}" if row.get("same_module") else ""
    judged = " (float64)" if row.get("rule") == "float64" else ""  # see judge.py
    return row["status"] + judged + same


_NUMBER_COLUMNS = (
    step_column(),
    name_column(),
    Column("status", _status),
    Column("max abs", lambda r: num(r["max_abs"]), right=True, width=10),
    Column("max rel", lambda r: num(r["max_rel"]), right=True, width=10),
)
_FINDINGS_COLUMN = Column("findings", lambda r: ", ".join(r["findings"]))


def _bad_row(row: dict) -> str:
    return "" if row["status"] in ("ok", "reference", "not run") else "style='background:#fdd'"
