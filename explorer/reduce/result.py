"""The result of a reduction: the reduced trace (viewable like any other), its IR text, its
pipeline spec and the standalone pytest file, with how far it got and what it cost."""

from __future__ import annotations

import html
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from explorer.store.write import new_file_mode

if TYPE_CHECKING:
    from explorer.check import Finding, Report
    from explorer.trace import Trace

FILES = ("reduced.passlens", "reduced.ir", "pipeline.txt", "test_reduced.py")
WEIGHTS_FILE = "weights.npz"


def write_weights(file, saved: dict[str, np.ndarray]) -> None:
    """The saved weights in an .npz file (a path or a binary file object), by position: the
    k-th is `arr_k` and the test file lists the names in that order. Names are never
    keywords of `np.savez` (a weight named `file` or `allow_pickle` would be one)."""
    np.savez(file, *saved.values())


@dataclass(eq=False)
class Reduction:
    """A finding reduced: `trace` (the reduced module through `pipeline`, made from the IR
    text as the test makes it) and its check `report`, in which `reproduced` is the same
    finding again; `ir` (text), `pipeline` (spec), `test_source` (the pytest file, which
    fails while the finding is there). `saved_weights` are the weights that need the model's
    own values (written to weights.npz beside the test), `generated` the ones whose values
    are made from their names. `bindings` and `passes` are (before, after); `tried`
    counts the candidates checked; `cut_short` says the time budget ended the search."""

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
        """The names of the files `save` writes."""
        return [*FILES, WEIGHTS_FILE] if self.saved_weights else list(FILES)

    def save(self, directory: str | Path) -> Path:
        """Write `reduced.passlens` (the trace), `reduced.ir`, `pipeline.txt`,
        `test_reduced.py` and, when some weights need the model's values, `weights.npz`
        into `directory` (made if missing); returns its path.

        Each file is written as a new regular file this call creates, then renamed over the
        name: whatever was there (a symlink someone put in a shared folder, say) is replaced,
        never written through."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        self.trace.save(out / "reduced.passlens")  # the same way (a temporary file, renamed)
        write_new(out, "reduced.ir", self.ir.encode("utf-8"))
        write_new(out, "pipeline.txt", (self.pipeline + "\n").encode("utf-8"))
        write_new(out, "test_reduced.py", self.test_source.encode("utf-8"))
        if self.saved_weights:
            write_new(out, WEIGHTS_FILE, lambda f: write_weights(f, self.saved_weights))
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


def write_new(directory: Path, name: str, data) -> None:
    """Write `data` (bytes, or a function given a binary file) to `directory / name`
    through a file this call creates (O_EXCL, O_NOFOLLOW: never an existing file or a link's
    target), then renamed over `name` (a rename replaces a symlink, not what it points to)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
        os.replace(tmp, directory / name)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
