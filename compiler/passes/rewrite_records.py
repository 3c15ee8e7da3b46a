"""Rewrite records: which rule of a pass fired on which bindings (a STAND-IN).

This is the minimal version of the interface helper h34rules builds with rules as data (its
version replaces this file at merge): ``RewriteRecord`` and ``collect_rewrites()``. Until
rules are data, :class:`~compiler.passes.rewrite.Rewriter` records each replacement under the
name ``<pass>/<op of the matched binding>``.

Names are the printed names of the bindings (``compiler.ir.Printer`` naming a function's
parameters, then its bindings in order, If branches included), as the explorer's graph model
names its nodes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from compiler.ir.nodes import Constant, Expr, Function
from compiler.ir.printer import Printer


@dataclass(frozen=True)
class RewriteRecord:
    """One rule application: ``rule`` (``pass/rule``), the bindings it ``matched`` in the
    module before the pass (root first) and those it ``produced`` in the module after it (the
    root's replacement first), in ``function``."""

    rule: str
    matched: tuple[str, ...]
    produced: tuple[str, ...]
    function: str


_ACTIVE: list[list[RewriteRecord]] = []


@contextlib.contextmanager
def collect_rewrites() -> Iterator[list[RewriteRecord]]:
    """Collect a RewriteRecord for every rule application of any pass run inside."""
    records: list[RewriteRecord] = []
    _ACTIVE.append(records)
    try:
        yield records
    finally:
        _ACTIVE.remove(records)


def collecting() -> bool:
    """Whether a :func:`collect_rewrites` is active (a pass skips naming nodes otherwise)."""
    return bool(_ACTIVE)


def binding_names(fn: Function) -> dict[int, str]:
    """id(node) -> printed name, for a function's parameters and bindings."""
    printer = Printer()
    names = {id(p): printer.name_of(p) for p in fn.params}
    for node in fn.iter_nodes():
        names[id(node)] = printer.name_of(node)
    return names


def name_of(node: Expr, names: dict[int, str]) -> str | None:
    """A node's name: a named weight as ``$name``, a bound node by ``names``."""
    if isinstance(node, Constant):
        return f"${node.name}" if node.name else None
    return names.get(id(node))


def add(record: RewriteRecord) -> None:
    """Append ``record`` to every active collection."""
    for records in _ACTIVE:
        records.append(record)


__all__ = ["RewriteRecord", "collect_rewrites"]
