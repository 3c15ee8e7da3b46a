"""The stepper's tables as widgets of their own, for a notebook cell that wants just one:

    ParamTable(step, baseline=None)     # name, shape, dtype, bytes, status; totals and delta
    ShapeTable(step, report=None)       # annotated vs computed shapes, mismatches first
    NumericsTable(step, report)         # error against the reference, per-node errors
    TextDiff(step, baseline=None)       # the IR diff, side by side or unified

Each is an ipywidgets box whose content comes from `widgets.tables_html` and
`widgets.ir_text` (the same HTML as the stepper's tabs, the Panel app and the report);
`show(step, ...)` points it at another step.
"""

from __future__ import annotations

import ipywidgets as w

from widgets.boxes import step_diff
from widgets.ir_text import ir_text_html, text_diff_html
from widgets.tables_html import numerics_table_html, param_table_html, shape_table_html


class _Table(w.VBox):
    def __init__(self, step, controls: list | None = None):
        self.html = w.HTML()
        super().__init__([*(controls or []), self.html])
        self.step = step
        self.refresh()

    def refresh(self) -> None:
        self.html.value = self.render()

    def render(self) -> str:  # pragma: no cover - every table overrides it
        raise NotImplementedError


class ParamTable(_Table):
    """The parameters of `step` with their status against `baseline` (default: the step
    before it): new, removed, resized, cast, duplicate of another, N copies of a weight."""

    def __init__(self, step, baseline=None):
        self.baseline = baseline
        super().__init__(step)

    def show(self, step, baseline=None) -> None:
        self.step, self.baseline = step, baseline
        self.refresh()

    def render(self) -> str:
        baseline = self.baseline if self.baseline is not None else self.step.previous
        return param_table_html(self.step, baseline)


class ShapeTable(_Table):
    """Every value's annotated type, shape changes against the previous step and, with a check
    `report`, annotated vs computed shapes (mismatches first)."""

    def __init__(self, step, report=None):
        self.report = report
        super().__init__(step)

    def show(self, step, report=None) -> None:
        self.step = step
        if report is not None:
            self.report = report
        self.refresh()

    def render(self) -> str:
        return shape_table_html(self.step, self.report)


class NumericsTable(ShapeTable):
    """What a check `report` says about `step`: error against the reference, findings, and
    the per-node errors of a divergence (earliest first, with their source layer)."""

    def render(self) -> str:
        return numerics_table_html(self.step, self.report)


class TextDiff(_Table):
    """The IR text diff of `step` against `baseline` (default: the step before it), side by
    side or unified (a toggle)."""

    MODES = ("side-by-side", "unified")

    def __init__(self, step, baseline=None, mode: str = "side-by-side"):
        if mode not in self.MODES:
            raise ValueError(f"mode must be one of {', '.join(self.MODES)}, not {mode!r}")
        self.baseline = baseline
        self.mode_toggle = w.ToggleButtons(options=list(self.MODES), value=mode)
        self.mode_toggle.observe(lambda _: self.refresh(), names="value")
        super().__init__(step, [self.mode_toggle])

    @property
    def mode(self) -> str:
        return self.mode_toggle.value

    def show(self, step, baseline=None) -> None:
        self.step, self.baseline = step, baseline
        self.refresh()

    def render(self) -> str:
        baseline = self.baseline if self.baseline is not None else self.step.previous
        if baseline is None:
            return ir_text_html(self.step)
        return text_diff_html(step_diff(baseline, self.step), mode=self.mode)


__all__ = ["NumericsTable", "ParamTable", "ShapeTable", "TextDiff"]
