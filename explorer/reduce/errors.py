"""What a reduction raises, whichever compiler's reducer runs (`explorer.reduce`)."""

from __future__ import annotations

from compiler import PasslensError


class ReduceError(PasslensError, RuntimeError):
    """A reduction could not be made: no finding to reduce, a pipeline that cannot run here,
    a budget spent before anything showed the finding again."""


class NotReproducible(ReduceError):
    """The finding does not show on its own (it needs the trace's own inputs, the framework's
    reference, or is not a pass's finding); the message says why."""


__all__ = ["NotReproducible", "ReduceError"]
