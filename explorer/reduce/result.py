"""The result of a reduction: the reduced trace (viewable like any other), its IR text, its
pipeline spec and the standalone pytest file, with how far it got and what it cost."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from explorer.reduce.testfile import WEIGHTS_FILE

if TYPE_CHECKING:
    from explorer.check import Finding, Report
    from explorer.trace import Trace

FILES = ("reduced.passlens", "reduced.ir", "pipeline.txt", "test_reduced.py")


@dataclass(eq=False)
class Reduction:
    """A finding reduced: ``trace`` (the reduced module through ``pipeline``, made from the IR
    text as the test makes it) and its check ``report``, in which ``reproduced`` is the same
    finding again; ``ir`` (text), ``pipeline`` (spec), ``test_source`` (the pytest file, which
    fails while the finding is there). ``saved_weights`` are the weights that need the model's
    own values (written to weights.npz beside the test), ``generated`` the ones whose values
    are made from their names. ``bindings`` and ``passes`` are (before, after); ``tried``
    counts the candidates checked; ``cut_short`` says the time budget ended the search."""

    finding: Finding
    trace: Trace
    report: Report
    reproduced: Finding
    ir: str
    pipeline: str
    test_source: str
    bindings: tuple[int, int]
    passes: tuple[int, int]
    tried: int
    seconds: float
    budget: float
    cut_short: bool = False
    generated: list[str] = field(default_factory=list)
    saved_weights: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def files(self) -> list[str]:
        """The names of the files :meth:`save` writes."""
        return [*FILES, WEIGHTS_FILE] if self.saved_weights else list(FILES)

    def save(self, directory: str | Path) -> Path:
        """Write ``reduced.passlens`` (the trace), ``reduced.ir``, ``pipeline.txt``,
        ``test_reduced.py`` and, when some weights need the model's values, ``weights.npz``
        into ``directory`` (made if missing); returns its path."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        self.trace.save(out / "reduced.passlens")
        (out / "reduced.ir").write_text(self.ir, encoding="utf-8")
        (out / "pipeline.txt").write_text(self.pipeline + "\n", encoding="utf-8")
        (out / "test_reduced.py").write_text(self.test_source, encoding="utf-8")
        if self.saved_weights:
            np.savez(out / WEIGHTS_FILE, **self.saved_weights)
        return out

    def lines(self) -> list[str]:
        """The summary, one fact a line (without the IR)."""
        f = self.finding
        (b0, b1), (p0, p1) = self.bindings, self.passes
        out = [
            f"reduced {f.kind} at #{f.step.index} {f.step.name}: {b0} -> {b1} bindings, "
            f"{p0} -> {p1} passes ({self.tried} candidates checked, {self.seconds:.1f} s)",
            f"pipeline: {self.pipeline}",
            f"still found: {self.reproduced}",
        ]
        weights = []
        if self.generated:
            weights.append(f"{len(self.generated)} made from their names (any values show it)")
        if self.saved_weights:
            names = ", ".join(f"`{n}`" for n in list(self.saved_weights)[:3])
            more = "..." if len(self.saved_weights) > 3 else ""
            weights.append(
                f"{len(self.saved_weights)} with the model's own values ({names}{more}), "
                f"saved in {WEIGHTS_FILE}: the finding needs them"
            )
        if weights:
            out.append("weights: " + "; ".join(weights))
        if self.cut_short:
            out.append(
                f"stopped by the time budget ({self.budget:g} s): a longer budget may reduce more"
            )
        return out

    def __repr__(self) -> str:
        return "\n".join([*self.lines(), "IR:", self.ir.rstrip("\n")])

    def _repr_html_(self) -> str:
        esc = html.escape
        head, *rest = self.lines()
        items = "".join(f"<li>{esc(line)}</li>" for line in rest)
        return f"<div><b>{esc(head)}</b><ul>{items}</ul><pre>{esc(self.ir)}</pre></div>"
