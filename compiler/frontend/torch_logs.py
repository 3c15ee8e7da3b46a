"""torch's own log records, held back while passlens captures a model.

torch.export logs a failing operator's whole traceback through the ``torch`` loggers (19
``E1201 ... fake_tensor.py`` lines for one broadcast error) before passlens can say in one
line what went wrong. While :func:`held_torch_logs` is active, every record a ``torch.*``
logger would print is kept instead: on success the kept records are printed after all (they may
be warnings a user wants), on failure they are kept on the error (``torch_log``), where the
CLI's ``--verbose`` shows them.
"""

from __future__ import annotations

import contextlib
import logging

MAX_KEPT = 2000
"""At most this many records are kept (the rest counted): a model logging in a loop must not
fill memory."""


class _Keep(logging.Handler):
    """Stands in for a logger's handlers: keeps a record any of them would have printed."""

    def __init__(self, records: list, counts: list, handlers: list[logging.Handler]):
        super().__init__(min((h.level for h in handlers), default=logging.NOTSET))
        self.records = records
        self.counts = counts

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) < MAX_KEPT:
            self.records.append(record)
        else:
            self.counts[0] += 1


class HeldLog:
    """What the torch loggers said while held: ``lines()`` as text, ``replay()`` to print."""

    def __init__(self, records: list, counts: list, handlers: dict):
        self._records = records
        self._counts = counts
        self._handlers = handlers

    def __len__(self) -> int:
        return len(self._records)

    def lines(self) -> list[str]:
        out = []
        for record in self._records:
            try:
                text = record.getMessage()
            except Exception:  # noqa: BLE001 - a record whose arguments do not format
                text = str(record.msg)
            if record.exc_info and record.exc_info[1] is not None:
                import traceback

                text += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
            out.append(f"{record.levelname} {record.name}: {text}")
        if self._counts[0]:
            out.append(f"... and {self._counts[0]} more records")
        return out

    def replay(self) -> None:
        """Print the kept records through the handlers they would have gone to."""
        for record in self._records:
            logger = logging.getLogger(record.name)
            while logger is not None:
                for h in self._handlers.get(logger, logger.handlers):
                    if _prints(h) and record.levelno >= h.level:
                        h.handle(record)
                if not logger.propagate:
                    break
                logger = logger.parent


def _prints(handler: logging.Handler) -> bool:
    """A handler writing to an open stream (stderr), not a file nor torch's structured trace
    (``TORCH_TRACE``, a lazily opened file that tlparse reads)."""
    return (
        isinstance(handler, logging.StreamHandler)
        and not isinstance(handler, logging.FileHandler)
        and type(handler).__name__ != "LazyTraceHandler"
        and getattr(handler, "stream", None) is not None
    )


@contextlib.contextmanager
def held_torch_logs():
    """Keep what the ``torch`` loggers print while the block runs; yields a :class:`HeldLog`.

    A logger of torch's with its own handlers (torch._logging installs them on ``torch`` and
    some children) has them swapped for a keeper until the block ends, which keeps what they
    would have printed (their levels); records of other torch loggers reach it by propagation
    as before. Loggers outside torch are left alone."""
    records: list[logging.LogRecord] = []
    counts = [0]
    manager = logging.Logger.manager
    names = [n for n in list(manager.loggerDict) if n == "torch" or n.startswith("torch.")]
    loggers = {logging.getLogger("torch")} | {
        lg for n in names if isinstance(lg := manager.loggerDict[n], logging.Logger)
    }
    swapped: dict[logging.Logger, list[logging.Handler]] = {}
    for lg in loggers:
        printing = [h for h in lg.handlers if _prints(h)]
        if printing:  # only what reaches a terminal: files and torch's trace log stay
            swapped[lg] = list(lg.handlers)
            others = [h for h in lg.handlers if not _prints(h)]
            lg.handlers = [*others, _Keep(records, counts, printing)]
    held = HeldLog(records, counts, swapped)
    try:
        yield held
    finally:
        for lg, handlers in swapped.items():
            lg.handlers = handlers
