"""Two conversions of one model side by side: `compare(trace_a, trace_b)`.

Typical use: the torch path and the ONNX path of one model, or one model through two
pipelines. For each trace: node and op counts of the imported and the final module, parameter
bytes at every step, the built artifact's size when a build step recorded one (a step
attribute `artifact_bytes`); and where the two first differ. The first divergence walks the
*states* each trace goes through (the imported module, then every pass that changed the op
counts or the parameter bytes) in step: the first pair of states whose op counts or parameter
bytes differ is where the conversions part ways, whichever passes got them there.

The first *difference* is stricter and step for step: the first index at which the two traces'
steps differ in kind, pass, nesting, status or module (the very same Step object, or a module
structurally equal, is no difference). For a re-run and the trace it was re-run from
(`new.rerun_of is old`) it is the first step recorded anew whose module changed: the pass
that was fixed.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from compiler.ir import Module, structural_equal
from explorer.fmt import format_bytes, signed_bytes

if TYPE_CHECKING:  # the trace module imports this one (Trace.compare): its protocol here
    from explorer.step import Step
    from explorer.step import TraceSteps as Trace


@dataclass
class StepFigures:
    """The counts of one step: its index and name, nodes, op counts, parameter bytes."""

    index: int
    name: str
    nodes: int
    op_counts: dict[str, int]
    param_bytes: int

    @staticmethod
    def of(step: Step) -> StepFigures:
        """The figures of `step` (builds its graph model if not built yet)."""
        g = step.graph
        return StepFigures(step.index, step.name, len(g.nodes), g.op_counts(), g.param_bytes)

    @property
    def label(self) -> str:
        """`#3 fold-constant`."""
        return f"#{self.index} {self.name}"


@dataclass
class TraceFigures:
    """One side of a comparison: the imported and final steps' figures, parameter bytes per
    step (index, name, bytes, for the import and every pass that ran), the artifact size
    (None when nothing was built) and the failed pass, if one failed."""

    label: str
    frontend: str
    pipeline: str
    imported: StepFigures
    final: StepFigures
    param_bytes: list[tuple[int, str, int]]
    artifact_bytes: int | None
    failed: str | None


@dataclass
class Difference:
    """How two steps differ: op counts that differ (op -> (count a, count b)) and the
    parameter bytes (a, b) when they differ."""

    ops: dict[str, tuple[int, int]] = field(default_factory=dict)
    param_bytes: tuple[int, int] | None = None

    @staticmethod
    def between(a: StepFigures, b: StepFigures) -> Difference:
        """What differs between the figures of two steps."""
        ops = {
            op: (a.op_counts.get(op, 0), b.op_counts.get(op, 0))
            for op in sorted(set(a.op_counts) | set(b.op_counts))
            if a.op_counts.get(op, 0) != b.op_counts.get(op, 0)
        }
        params = (a.param_bytes, b.param_bytes) if a.param_bytes != b.param_bytes else None
        return Difference(ops, params)

    def __bool__(self) -> bool:
        return bool(self.ops) or self.param_bytes is not None

    def __str__(self) -> str:
        if not self:
            return "same op counts and parameter bytes"
        parts = [f"{op} {x} vs {y}" for op, (x, y) in self.ops.items()]
        if self.param_bytes is not None:
            x, y = self.param_bytes
            parts.append(f"params {format_bytes(x)} vs {format_bytes(y)}")
        return ", ".join(parts)


@dataclass
class Divergence:
    """The first pair of states (one step of each trace) whose op counts or parameter bytes
    differ, and how they differ."""

    step_a: Step
    step_b: Step
    difference: Difference

    def __str__(self) -> str:
        where = (
            "the imported modules differ"
            if self.step_a.kind == "import" and self.step_b.kind == "import"
            else f"after A #{self.step_a.index} {self.step_a.name} "
            f"and B #{self.step_b.index} {self.step_b.name}"
        )
        return f"{where}: {self.difference}"


@dataclass(eq=False)
class Comparison:
    """Two traces side by side (see the module docstring); prints as a table (plain text and
    Jupyter HTML)."""

    trace_a: Trace = field(repr=False)
    trace_b: Trace = field(repr=False)
    a: TraceFigures
    b: TraceFigures
    imported: Difference
    final: Difference
    first_divergence: Divergence | None

    @property
    def same(self) -> bool:
        """Whether the two conversions never differ in op counts or parameter bytes."""
        return self.first_divergence is None

    @cached_property
    def first_difference(self) -> int | None:
        """The index of the first step at which the two traces differ (see the module
        docstring: for a re-run, the pass that changed), or None when they are step for step
        the same; the index is the same in both traces (every step before it is alike)."""
        return first_difference(self.trace_a, self.trace_b)

    @property
    def shared_steps(self) -> int:
        """How many leading steps the two traces share as the very same Step objects (a
        re-run shares the steps before the first pass it ran again)."""
        n = 0
        for a, b in zip(self.trace_a.steps, self.trace_b.steps, strict=False):
            if a is not b:
                break
            n += 1
        return n

    # ----- display ------------------------------------------------------------------------
    def rows(self) -> list[tuple[str, str, str, bool]]:
        """Table rows `(label, value a, value b, differs)` shared by the text and HTML."""
        a, b = self.a, self.b
        rows: list[tuple[str, str, str, bool]] = [
            ("frontend", a.frontend or "-", b.frontend or "-", False),
            ("pipeline", a.pipeline or "-", b.pipeline or "-", a.pipeline != b.pipeline),
        ]
        for title, fa, fb in (("imported", a.imported, b.imported), ("final", a.final, b.final)):
            rows += [
                (f"{title} step", fa.label, fb.label, False),
                (f"{title} nodes", str(fa.nodes), str(fb.nodes), fa.nodes != fb.nodes),
                (
                    f"{title} params",
                    format_bytes(fa.param_bytes),
                    format_bytes(fb.param_bytes),
                    fa.param_bytes != fb.param_bytes,
                ),
            ]
        art_a, art_b = a.artifact_bytes, b.artifact_bytes
        rows.append(
            (
                "artifact",
                "-" if art_a is None else format_bytes(art_a),
                "-" if art_b is None else format_bytes(art_b),
                art_a != art_b,
            )
        )
        if a.failed or b.failed:
            rows.append(("failed pass", a.failed or "-", b.failed or "-", True))
        for title, fa, fb in (("imported", a.imported, b.imported), ("final", a.final, b.final)):
            for op in sorted(set(fa.op_counts) | set(fb.op_counts)):
                x, y = fa.op_counts.get(op, 0), fb.op_counts.get(op, 0)
                rows.append((f"{title} ops: {op}", str(x), str(y), x != y))
        return rows

    def param_lines(self, side: TraceFigures) -> list[str]:
        """Parameter bytes of the import and of every step that changed them."""
        out, last = [], None
        for index, name, nbytes in side.param_bytes:
            if last is None or nbytes != last:
                delta = "" if last is None else f" ({signed_bytes(nbytes - last)})"
                out.append(f"#{index} {name}: {format_bytes(nbytes)}{delta}")
            last = nbytes
        return out

    def headline(self) -> str:
        """One line: the first divergence, or that there is none; then the first step that
        differs, when the op counts do not tell."""
        k = self.first_difference
        where = ""
        if k is not None:
            names = [t.steps[k].name if k < len(t.steps) else "(no step)" for t in self.traces]
            shown = names[0] if names[0] == names[1] else f"A {names[0]}, B {names[1]}"
            where = f"first different step: #{k} {shown}"
        if self.first_divergence is None:
            head = "same op counts and parameter bytes at every stage"
            return f"{head}; {where}" if where else f"{head}; the same steps"
        return f"first divergence: {self.first_divergence}" + (f"; {where}" if where else "")

    @property
    def traces(self) -> tuple[Trace, Trace]:
        """The two traces, A then B."""
        return self.trace_a, self.trace_b

    def text(self) -> str:
        """The comparison as a plain-text table."""
        rows = self.rows()
        width = max(len(r[0]) for r in rows) + 2
        wa = max(len(self.a.label), *(len(r[1]) for r in rows)) + 2
        wb = max(len(self.b.label), *(len(r[2]) for r in rows)) + 2
        lines = [f"{'':<{width}}{self.a.label:<{wa}}{self.b.label:<{wb}}".rstrip()]
        for label, x, y, differs in rows:
            lines.append(f"{label:<{width}}{x:<{wa}}{y:<{wb}}{'*' if differs else ''}".rstrip())
        for side in (self.a, self.b):
            lines.append(f"param bytes by step, {side.label}: " + "; ".join(self.param_lines(side)))
        lines.append(self.headline())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        e = html.escape
        body = "".join(
            f"<tr class='{'pl-differs' if d else ''}'><td>{e(label)}</td><td>{e(x)}</td>"
            f"<td>{e(y)}</td><td>{'*' if d else ''}</td></tr>"
            for label, x, y, d in self.rows()
        )
        params = "".join(
            f"<li><b>{e(side.label)}</b>: {e('; '.join(self.param_lines(side)))}</li>"
            for side in (self.a, self.b)
        )
        # the display hook: both sides at the first step that differs, drawn by the widgets
        from widgets.rerun_view import comparison_html

        return (
            "<style>.pl-differs{background:#fff3cd}</style><div class='pl-compare'>"
            f"<p><b>{e(self.headline())}</b></p>{comparison_html(self)}"
            f"<table><thead><tr><th></th>"
            f"<th>{e(self.a.label)}</th><th>{e(self.b.label)}</th><th></th></tr></thead>"
            f"<tbody>{body}</tbody></table><p>param bytes by step:</p><ul>{params}</ul></div>"
        )

    def to_html(self, path):
        """Write the comparison's HTML (what Jupyter shows: both sides at the first step that
        differs, then the table) as one self-contained page; returns the path (a
        `pathlib.Path`)."""
        from pathlib import Path

        title = html.escape(f"{self.a.label} vs {self.b.label}")
        page = (
            "<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{title}</title><style>body{{font:13px system-ui,sans-serif;margin:12px}}"
            "</style></head><body>" + self._repr_html_() + "</body></html>"
        )
        data = page.encode("utf-8")
        Path(path).write_bytes(data)
        return Path(path)

    def changed_steps(self) -> tuple[Step, Step] | None:
        """The pair of steps, one of each trace, where they first differ: what the HTML opens
        on. For a re-run and the trace it re-ran (`rerun_of`, either way round), the first
        divergence from the first step recorded anew (`rerun_from`) on, else that step in
        both (a fix that changed values only); otherwise the first divergence; None when
        the two never differ."""
        a, b = self.trace_a, self.trace_b
        new = None
        if getattr(b, "rerun_of", None) is a:
            new = b
        elif getattr(a, "rerun_of", None) is b:
            new = a
        start = getattr(new, "rerun_from", None)
        d = self.first_divergence
        if isinstance(start, int) and 0 <= start < min(len(a.steps), len(b.steps)):
            if d is not None and min(d.step_a.index, d.step_b.index) >= start:
                return d.step_a, d.step_b
            return a.steps[start], b.steps[start]
        return None if d is None else (d.step_a, d.step_b)


# ===== the comparison ========================================================================


def compare(trace_a: Trace, trace_b: Trace, labels: Sequence[str] | None = None) -> Comparison:
    """Two conversions of one model side by side; `labels` name the sides (default: A and B
    with each trace's frontend, or pipeline when the frontends are the same)."""
    for t, which in ((trace_a, "trace_a"), (trace_b, "trace_b")):
        if not _is_trace(t):
            raise TypeError(f"compare() takes two Traces; {which} is a {type(t).__name__}")
    if labels is None:
        labels = _default_labels(trace_a, trace_b)
    elif len(labels) != 2:
        raise ValueError(f"labels must name the two traces, got {labels!r}")
    fa, fb = _figures(trace_a, labels[0]), _figures(trace_b, labels[1])
    return Comparison(
        trace_a,
        trace_b,
        fa,
        fb,
        Difference.between(fa.imported, fb.imported),
        Difference.between(fa.final, fb.final),
        first_divergence(trace_a, trace_b),
    )


def _is_trace(t: Any) -> bool:
    """Whether `t` is an `explorer.Trace` (by its class, without importing the trace
    module, which imports this one)."""
    return any(c.__name__ == "Trace" and c.__module__ == "explorer.trace" for c in type(t).__mro__)


def _default_labels(a: Trace, b: Trace) -> tuple[str, str]:
    ca, cb = getattr(a, "compiler", "passlens"), getattr(b, "compiler", "passlens")
    if ca != cb:
        return f"A: {ca} {_short(a.pipeline, 20)}", f"B: {cb} {_short(b.pipeline, 20)}"
    if a.frontend and b.frontend and a.frontend != b.frontend:
        return f"A: {a.frontend}", f"B: {b.frontend}"
    if a.pipeline != b.pipeline:
        return f"A: {_short(a.pipeline)}", f"B: {_short(b.pipeline)}"
    return "A", "B"


def _short(text: str, width: int = 30) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _ir_steps(trace: Trace) -> list[Step]:
    """The import and every innermost pass that produced a module, in order (not the passes
    on a module a pass built for itself: TVM's FoldConstant compiling its kernels)."""
    return [
        s
        for s in trace.steps
        if s.module is not None
        and not getattr(s.module, "inner", False)
        and (s.kind == "import" or (s.kind == "pass" and not s.children))
    ]


def _figures(trace: Trace, label: str) -> TraceFigures:
    steps = _ir_steps(trace)
    if not steps:
        raise ValueError(f"trace {label} has no imported module to compare")
    artifact = None
    for s in reversed(trace.steps):
        value = getattr(s, "artifact_bytes", None)
        if value is not None:
            artifact = int(value)
            break
    failure = trace.failure
    return TraceFigures(
        label=label,
        frontend=trace.frontend,
        pipeline=trace.pipeline,
        imported=StepFigures.of(trace.imported),
        final=StepFigures.of(trace.final),
        param_bytes=[(s.index, s.name, s.param_bytes) for s in steps],
        artifact_bytes=artifact,
        failed=None if failure is None else f"#{failure.index} {failure.name}",
    )


def _states(trace: Trace) -> list[tuple[Step, StepFigures]]:
    """The steps where op counts or parameter bytes change (the import first)."""
    out: list[tuple[Step, StepFigures]] = []
    for s in _ir_steps(trace):
        if out and (s.module is out[-1][0].module or not s.changed):
            continue
        figs = StepFigures.of(s)
        if out and (figs.op_counts, figs.param_bytes) == (
            out[-1][1].op_counts,
            out[-1][1].param_bytes,
        ):
            continue
        out.append((s, figs))
    return out


def first_divergence(trace_a: Trace, trace_b: Trace) -> Divergence | None:
    """The first pair of states of the two traces whose op counts or parameter bytes differ
    (see the module docstring), or None when they go through the same counts throughout."""
    sa, sb = _states(trace_a), _states(trace_b)
    for k in range(max(len(sa), len(sb))):
        step_a, fig_a = sa[min(k, len(sa) - 1)]
        step_b, fig_b = sb[min(k, len(sb) - 1)]
        difference = Difference.between(fig_a, fig_b)
        if difference:
            return Divergence(step_a, step_b, difference)
    return None


def first_difference(trace_a: Trace, trace_b: Trace) -> int | None:
    """The index of the first step at which the two traces differ (kind, pass, nesting,
    status or module; see the module docstring), or None when they are step for step alike."""
    a, b = trace_a.steps, trace_b.steps
    for i in range(min(len(a), len(b))):
        if not _same_step(a[i], b[i]):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _same_step(x: Step, y: Step) -> bool:
    if x is y:
        return True
    if (x.kind, x.name, x.spec, x.depth, x.status, x.parent, len(x.children)) != (
        y.kind,
        y.name,
        y.spec,
        y.depth,
        y.status,
        y.parent,
        len(y.children),
    ):
        return False
    return _same_module(x.shown_module, y.shown_module) and (
        x.source_graph is y.source_graph or x.source_graph is None or x.text == y.text
    )


def _same_module(m: Any, n: Any) -> bool:
    """Identity; else structural equality for passlens modules, the same text for others."""
    if m is n:
        return True
    if m is None or n is None:
        return False
    if isinstance(m, Module) and isinstance(n, Module):
        try:
            return structural_equal(m, n)
        except Exception:  # a module structural equality cannot walk is not known equal
            return False
    try:
        return type(m) is type(n) and m.text() == n.text()
    except Exception:
        return False


__all__ = [
    "Comparison",
    "Difference",
    "Divergence",
    "StepFigures",
    "TraceFigures",
    "compare",
    "first_difference",
    "first_divergence",
    "format_bytes",
]
