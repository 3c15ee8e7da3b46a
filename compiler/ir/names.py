"""Fresh names: ``fresh_name("linear", used)`` is ``linear``, then ``linear_1``, ``linear_2``...
(the separator is the caller's: ``_`` for IR values, ``.`` for weights, none for kernels)."""

from __future__ import annotations


def fresh_name(base: str, used: set[str], sep: str = "_") -> str:
    """``base`` if not in ``used``, else ``base{sep}k`` for the first k >= 1 that is not; the
    name returned is added to ``used``."""
    name, k = base, 0
    while name in used:
        k += 1
        name = f"{base}{sep}{k}"
    used.add(name)
    return name
