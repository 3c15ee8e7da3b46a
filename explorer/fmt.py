"""Numbers for people, one way everywhere (issue #15): byte sizes in decimal units like the
trace summary (`262.1 kB`), signed deltas, and measured values. Every view and message of the
explorer and the widgets formats through these; widgets/static/graph.js keeps a JS copy of
`format_bytes` and `signed_bytes`."""

from __future__ import annotations


def format_bytes(n: float) -> str:
    """`262.1 kB`, `1.2 MB`, `512 B` (decimal units, one decimal)."""
    n = int(n)
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def signed_bytes(n: float, zero: str = "±0 B") -> str:
    """A change in bytes with its sign: `+14.4 MB`, `-2.0 kB`, `±0 B` (`zero`: a table
    may leave a no-change cell blank). One minus sign everywhere, ASCII: text is copied and
    searched."""
    if n == 0:
        return zero
    return ("+" if n > 0 else "-") + format_bytes(abs(n))


def signed(n: int) -> str:
    """A change in a count: `+3`, `-2`; empty for no change."""
    return f"{n:+d}" if n else ""


def num(x: float | None) -> str:
    """A measured value (an error, a tolerance): three significant digits; empty for none."""
    if x is None:
        return ""
    return "0" if x == 0 else f"{x:.3g}"
