"""Traces: every step of a conversion, from the source model to the last pass.

`Trace` is a facade: it holds the steps and what the run was, and each of its methods
hands the work to the part that does it:

- recording (`explore`, `trace_from_module`): each compiler's adapter (passlens's:
  `explorer.passlens.record`), steps from snapshots by `explorer.recording`;
- a step (its graph, text, diff; a compiled step's texts and executable):
  `explorer.step` and `explorer.passlens.backend`;
- finding steps (`trace[3]`, `trace["fold-constant#2"]`, `final`, `failure`):
  `explorer.step_lookup`;
- the summary (`summary`, `opaque_ops`, its text and HTML): `explorer.summary`;
- checking (`check`, `param_map`): `explorer.check`;
- persistence (`save`; `explorer.load`): `explorer.store`;
- other viewers (`export`: Model Explorer, ONNX): `explorer.interop`;
- running again (`rerun`): the trace's adapter (passlens's: `explorer.passlens.rerun`);
  comparing (`compare`): `explorer.compare`;
- display hooks (`to_html`, `stepper`, `show`; `Step._repr_html_`): the only places
  the explorer reaches the widgets (tests/test_layers.py holds that).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compiler import PasslensError
from compiler.passes import SkippedPass
from explorer import step_lookup
from explorer.adapters import get_adapter
from explorer.check import check as check_trace
from explorer.check.param_map import param_map as trace_param_map
from explorer.compare import compare as compare_traces
from explorer.compare import first_difference as first_step_difference
from explorer.interop import export as export_step
from explorer.step import Step
from explorer.summary import opaque_ops as opaque_op_rows
from explorer.summary import summary_rows, trace_html, trace_text


class RerunError(PasslensError, ValueError):
    """`trace.rerun` cannot do what it was asked: a step out of range, a replacement that
    names no pass of the pipeline, a pass a loaded trace does not have (the message says how to
    supply it)."""


class Trace:
    """The recorded steps of one conversion, indexable by number or pass name."""

    def __init__(
        self,
        steps: Sequence[Step],
        source: Any = None,
        example_inputs: tuple | None = None,
        pipeline: str = "",
        frontend: str = "",
        skipped: Sequence[SkippedPass] = (),
        interrupted: bool = False,
        compiler: str = "passlens",
        trusted_ops=(),
        passes: Sequence[Any] = (),
    ):
        self.steps = list(steps)
        for s in self.steps:
            if s.trace is None:  # a step shared with the trace it was re-run from stays its
                s.trace = self
        self.source = source
        self.example_inputs = example_inputs
        self.pipeline = pipeline
        # the pipeline's top-level passes as objects (in memory only: what runs them again,
        # a pass nobody registered included); () for a loaded trace or another compiler's
        self.passes = tuple(passes)
        self.frontend = frontend
        # the passes of the pipeline a failure (or an interrupt) left unrun, in order
        self.skipped = list(skipped)
        self.interrupted = interrupted  # the run was stopped (Ctrl-C) in trace.failure
        self.compiler = compiler  # whose passes: an adapter name (explorer.adapters)
        # opaque ops this trace may run although not known to be pure computations: a live
        # torch model's own ops, or what explorer.load(..., trust_ops=) was told; never saved
        # (see explorer.trust)
        self.trusted_ops = frozenset(trusted_ops)
        # False when the source is a torch program read from a file (a .pt2): a check then
        # runs it as the reference only if every call it makes may run (explorer.trust)
        self.source_trusted = True
        # the last check's Report (trace.check, or read from a file by load); the views and
        # save use it unless given another
        self.report: Any = None
        # what the compiler said about itself while recording, as JSON (torch.compile: guards,
        # recompiles, compile times, kernels; explorer.inductor.compile_log); None: nothing
        self.compile_info: dict | None = None
        # made by ``old.rerun(...)``: the old Trace (in memory only, never saved) and the index
        # of the first step recorded anew (the steps before it are the old trace's own Step
        # objects); None on every other trace
        self.rerun_of: Trace | None = None
        self.rerun_from: int | None = None

    # ----- access -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, key) -> Step:
        """A step by number, or by pass name (`"fold-constant#2"`: the second one)."""
        return step_lookup.find_step(self.steps, key)

    @property
    def imported(self) -> Step:
        """The step holding the imported module."""
        return step_lookup.imported_step(self.steps)

    @property
    def final(self) -> Step:
        """The last step with a module (the last good one if a pass failed); not one a pass
        built for itself (TVM's FoldConstant compiling its kernels) unless all are."""
        return step_lookup.final_step(self.steps)

    @property
    def failure(self) -> Step | None:
        """The innermost failed pass, if one failed."""
        return step_lookup.failed_step(self.steps)

    # ----- summary ------------------------------------------------------------------------
    def summary(self) -> list[dict]:
        """One row per step: index, pass, status, node delta, op-count changes, param bytes and
        delta, changed shapes, time (see `explorer.summary.summary_rows`)."""
        return summary_rows(self)

    def __repr__(self) -> str:
        return self.summary_text()

    def opaque_ops(self) -> list[dict]:
        """The ops without a converter the import kept as opaque ops (run by torch or
        onnxruntime), one row per op: target, runner, count, places (see
        `explorer.summary.opaque_ops`)."""
        return opaque_op_rows(self)

    def summary_text(self) -> str:
        """The summary as a plain-text table (with the passes skipped, if any)."""
        return trace_text(self)

    def _repr_html_(self) -> str:
        return trace_html(self)

    # ----- checking --------------------------------------------------------------------------
    def check(
        self,
        inputs=None,
        reference: str = "source",
        rtol: float = 1e-4,
        atol: float = 1e-5,
        progress=None,
        trust_ops=None,
    ):
        """Run the reference and every step on the same inputs; returns a Report, which is
        also kept as `trace.report` (saved with the trace, shown by its views).
        `trust_ops`: opaque ops to run although passlens does not know them to be pure
        computations (`["mylib.scale"]`), for a trace you trust (see explorer.trust)."""
        report = check_trace(
            self,
            inputs,
            reference=reference,
            rtol=rtol,
            atol=atol,
            progress=progress,
            trust_ops=trust_ops,
        )
        self.report = report
        return report

    def _report(self, report):
        """The report a view shows: `report`, the trace's own when None, none when False."""
        if report is False:
            return None
        return self.report if report is None else report

    def param_map(self, **thresholds: float):
        """Weight bytes per source layer per step, and where a pass first made a layer's
        weights grow (`threshold` / `min_bytes`: the check's param-bloat thresholds by
        default): an `explorer.check.ParamMap`. A method of the trace, not of a check's
        report: it needs only the steps' graphs, no inputs and no reference."""
        return trace_param_map(self, **thresholds)

    # ----- running again, comparing --------------------------------------------------------------
    def rerun(self, pipeline=None, from_step=None, replace=None, progress=None) -> Trace:
        """A new trace: this one run again from the first pass that changed, sharing the steps
        before it (the very Step objects; this trace is not changed). `pipeline`: the new
        pipeline (default: this trace's passes); `replace`: `{pass name, spec or class:
        the pass (an instance or a class) to run in its place}`, inside named pipelines too;
        `from_step`: record anew from this step's top-level pass even if nothing before it
        changed; `progress` as for `explorer.explore`. A check of the new trace reuses
        this trace's last check for the shared steps. With nothing changed, a warning says so
        and every step is shared. Raises `RerunError`, or `Unsupported` for a
        compiler whose adapter cannot re-run (see the adapter's `rerun`)."""
        new = get_adapter(self.compiler).rerun(
            self, pipeline=pipeline, from_step=from_step, replace=replace, progress=progress
        )
        if getattr(new, "rerun_of", None) is None:  # recorded whole again (TVM, Inductor, ORT)
            new.rerun_of = self
            k = first_step_difference(self, new)
            new.rerun_from = len(new.steps) if k is None else k
        return new

    def compare(self, other: Trace, labels: Sequence[str] | None = None):
        """This trace and `other` side by side: `explorer.compare(self, other)` (an
        `explorer.Comparison`; its `first_difference` is the first step where the two
        differ, such as the pass a re-run changed)."""
        return compare_traces(self, other, labels=labels)

    # ----- persistence and other viewers ------------------------------------------------------
    def save(self, path, inputs: bool = False):
        """Save to a `.passlens` file (JSON + raw arrays, no pickle), with the last check
        report (`trace.report`) and, with `inputs`, the values it ran on; returns the
        path. See `explorer.store.save`."""
        from explorer.store.write import save  # (the store builds traces: it imports this)

        return save(self, path, inputs=inputs)

    def export(self, step, path, format: str = "model-explorer", report=None) -> list:
        """Write one step for another viewer: `model-explorer` (Google's Model Explorer
        graph JSON, plus node data files; with a check `report`, each node's max error) or
        `onnx` (for Netron). Returns the paths written. See `explorer.interop`."""
        return export_step(self, step, path, format=format, report=report)

    # ----- display hooks (the only places that reach the widgets) ----------------------------
    def to_html(
        self, path, report=None, max_boxes: int = 300, progress=None, max_bytes: int | None = None
    ):
        """Write one self-contained HTML report (with the findings of a check `report`
        drawn on the graphs: by default the trace's last one, `trace.report`; False for
        none); each step's graph opens with at most `max_boxes` boxes (module groups
        collapsed, finest first, until it fits); `progress` per step, as for
        `explorer.explore`. Returns the path (a `pathlib.Path`), as `save` and
        `export` do. A report over `max_bytes`
        (default 128 MiB: `widgets.bounds.MAX_REPORT_BYTES`) is a `LimitError` naming
        its largest steps, and no file."""
        from widgets.report import write_html

        extra = {} if max_bytes is None else {"max_bytes": max_bytes}
        write_html(
            self,
            path,
            report=self._report(report),
            max_boxes=max_boxes,
            progress=progress,
            **extra,
        )
        return Path(path)

    def show(self, step=None):
        """Display a step's graph in Jupyter (the final step by default)."""
        from IPython.display import display

        display(self.final if step is None else self[step])

    def stepper(self, report=None):
        """The Jupyter widget to step through the passes (with a check `report`, by default
        `trace.report`, False for none: its findings on the graphs and in the timeline,
        and the numerics tab). For a re-run (`rerun_of`), the stepper displayed for the
        trace it re-ran shows it in place and is returned (see `widgets.stepper`)."""
        from widgets.stepper import stepper_for

        return stepper_for(self, report=self._report(report))


__all__ = ["RerunError", "Step", "Trace"]
