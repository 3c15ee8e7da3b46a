"""Progress of long work (explore, check, the HTML report, reduce), one helper for all.

`progress` is what the user passed:

- `None` (the default): a tqdm bar on a terminal and an ipywidgets bar in Jupyter, once
  the job has run `DELAY` seconds (quick work shows nothing; a timer draws it then even when
  the job is inside one long unit of work); elsewhere (CI logs, a pipe)
  one short line when a job that took `LINE_AFTER` seconds or more ends;
- `True`: the same, at once, and the line for every job;
- `False`: nothing;
- a callable: called instead (each job says with what).

Names in the text come from the model: control characters are shown escaped, so a pass or
step name cannot drive the terminal."""

from __future__ import annotations

import re
import sys
import threading
import time
import weakref
from typing import Any

DELAY = 1.0  # seconds before a bar appears (progress=None)
LINE_AFTER = 5.0  # seconds a job must take for its line (progress=None, not a terminal)
LABEL_CHARS = 48  # a step's name is cut after this many characters

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clean(text: Any, limit: int = LABEL_CHARS) -> str:
    """`text` as one short printable line (at most `limit` characters)."""
    text = _CONTROL.sub(lambda m: ascii(m.group())[1:-1], str(text))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where a widget shows)."""
    ipython = sys.modules.get("IPython")
    if ipython is None or "ipykernel" not in sys.modules:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False


def mode_of(progress: Any) -> str | None:
    """`callback`, `widget`, `bar` (tqdm), `line` or None (nothing)."""
    if progress is False:
        return None
    if callable(progress):
        return "callback"
    if in_notebook():
        return "widget"
    if _isatty(sys.stderr):
        return "bar"
    return "line"


class Job:
    """One job's progress: `advance(label)` after each unit of work (or `show(done,
    label)`), `phase(what)` for a part of the unit under way (shown `<label>: <what>`),
    `close()` at the end (or use it as a context manager). A bar or widget not drawn yet is
    drawn `DELAY` seconds after the start by a timer (`tick`), and redrawn each second
    after that, so a long unit of work is not silent; the timer is cancelled at close.

    `desc`: what the job does (`checking`); `total`: how many units (None: unknown);
    `callback`: how a callable `progress` is called, `callback(done, total, label)`
    (None: the caller calls it itself)."""

    def __init__(
        self,
        progress: Any,
        desc: str,
        total: int | None,
        unit: str = "step",
        callback=None,
    ):
        self.progress = progress
        self.mode = mode_of(progress)
        self.desc = desc
        self.total = total
        self.unit = unit
        self.callback = callback
        self.done = 0
        self.label = ""
        self.note = ""  # shown instead of the label (reduce: what it has found so far)
        self.line = None  # a callable giving the job's line instead of summary()'s own
        self.start = time.perf_counter()
        self.forced = progress is True
        self.what = ""  # the phase of the unit under way (see ``phase``)
        self._bar: Any = None
        self._widget: Any = None
        self._closed = False
        self._lock = threading.RLock()  # the timer's thread draws too
        self._timer: threading.Timer | None = None
        if self.mode in ("bar", "widget"):
            self._arm(0.0 if self.forced else DELAY)

    # ----- the timer ---------------------------------------------------------------------------
    def _arm(self, seconds: float) -> None:
        if not seconds <= threading.TIMEOUT_MAX:  # never due (a DELAY of inf): no timer, whose
            return  # thread would die of an OverflowError in its wait
        timer = threading.Timer(seconds, _tick, (weakref.ref(self),))  # a job dropped unclosed
        timer.daemon = True  # (an error) is not kept alive, nor drawn, by its timer
        self._timer = timer
        timer.start()

    def tick(self) -> None:
        """What the timer calls: draw the bar (or widget) as it stands, even when no update
        came since the start, and arm the timer again for a second later."""
        with self._lock:
            if self._closed:
                return
            if self.mode == "bar":
                self._show_bar(due=True)
            elif self.mode == "widget":
                self._show_widget(due=True)
            if self.mode in ("bar", "widget"):
                self._arm(1.0)

    # ----- updates ---------------------------------------------------------------------------
    def advance(self, label: str = "") -> None:
        """One more unit done (`label`: the name of the one starting or just done)."""
        self.show(self.done + 1, label)

    def show(self, done: int, label: str = "") -> None:
        """`done` units done."""
        with self._lock:
            self.done, self.label, self.what = done, label, ""
            self._draw(label)

    def phase(self, what: str) -> None:
        """A part of the unit under way (the reference, a float64 run): shown, and given to
        the callback, as `<label>: <what>`; the next `show` / `advance` ends it."""
        with self._lock:
            self.what = what
            self._draw(self._phased())

    def _phased(self) -> str:
        return f"{self.label}: {self.what}" if self.label and self.what else self.what or self.label

    def _draw(self, text: str) -> None:
        if self.mode == "callback":
            if self.callback is not None:
                self.callback(self.done, self.total, text)
        elif self.mode == "bar":
            self._show_bar()
        elif self.mode == "widget":
            self._show_widget()

    def _due(self) -> bool:
        return self.forced or time.perf_counter() - self.start >= DELAY

    def _text(self) -> str:
        if self.note:
            return clean(self.note, 100)
        if self.what:  # the step's name cut, its phase in full
            return (
                f"{clean(self.label)}: {clean(self.what, 60)}"
                if self.label
                else clean(self.what, 60)
            )
        return clean(self.label)

    def _show_bar(self, due: bool = False) -> None:
        if self._bar is None:
            if not (due or self._due()):
                return
            try:
                from tqdm import tqdm
            except ImportError:  # no tqdm: the line at the end only
                self.mode = "line"
                return
            extra = {} if self.unit else {"bar_format": "{desc}: {elapsed} {postfix}"}
            self._bar = tqdm(
                total=self.total,
                desc=self.desc,
                unit=self.unit or "it",
                file=sys.stderr,
                leave=False,
                dynamic_ncols=True,
                **extra,
            )
        self._bar.n = self.done
        self._bar.set_postfix_str(self._text(), refresh=False)
        self._bar.refresh()

    def _show_widget(self, due: bool = False) -> None:
        if self._widget is None:
            if not (due or self._due()):
                return
            try:
                import ipywidgets
                from IPython.display import display
            except ImportError:
                self.mode = "line"
                return
            bar = ipywidgets.IntProgress(value=0, min=0, max=max(self.total or 1, 1))
            text = ipywidgets.Label(value="")  # plain text: names are not HTML
            self._widget = (bar, text)
            display(ipywidgets.HBox([ipywidgets.Label(value=self.desc), bar, text]))
        bar, text = self._widget
        bar.max = max(self.total or self.done or 1, self.done, 1)
        bar.value = self.done
        text.value = f"{self.done}/{self.total or '?'} {self._text()}"

    # ----- the end -----------------------------------------------------------------------------
    def summary(self) -> str:
        """The job in one line: `checking: 25/25 steps in 0.3 s (last: fold-constant)`."""
        if self.line is not None:
            return clean(self.line(), 200)
        seconds = time.perf_counter() - self.start
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        unit = {"pass": "passes", "step": "steps"}.get(self.unit, self.unit)
        if not self.unit:  # one piece of work (an import): its time only
            return f"{self.desc}: {seconds:.1f} s" + (
                f" ({clean(self.label)})" if self.label else ""
            )
        text = f"{self.desc}: {count} {unit} in {seconds:.1f} s"
        if self.label:
            text += f" (last: {clean(self.label)})"
        return text

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            self._finish()

    def _finish(self) -> None:
        if self._bar is not None:
            self._bar.close()
        if self._widget is not None:
            bar, text = self._widget
            bar.value = bar.max if self.total is not None else bar.value
            bar.bar_style = "success"
            text.value = self.summary()
        seconds = time.perf_counter() - self.start
        if self.mode == "line" and (self.forced or seconds >= LINE_AFTER):
            sys.stderr.write(self.summary() + "\n")
            sys.stderr.flush()

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _tick(ref: weakref.ref) -> None:
    job = ref()
    if job is not None:
        job.tick()


__all__ = ["DELAY", "LINE_AFTER", "Job", "clean", "in_notebook", "mode_of"]
