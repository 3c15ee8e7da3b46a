"""The kinds of finding a check can report: each a :class:`Kind` (its name, severity,
description and detector), registered in one list, ``explorer.check.detectors.KINDS``.

This module knows no detector: the detectors register their kinds here, so a finding
(``report.Finding``) can tell its severity and the report its order without importing them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from explorer.check.facts import StepFacts
    from explorer.check.report import Finding

SEVERITIES = ("error", "warning", "info")


@dataclass
class Kind:
    """A kind of finding. ``detect`` gets what the check knows of one step (a
    :class:`~explorer.check.facts.StepFacts`) and returns the findings of this kind there;
    ``node_mark`` is the short text the graph view puts on the nodes a finding names (empty:
    the kind name). Findings of one step are listed in registry order."""

    name: str
    severity: str  # error (a failure), warning (a failure, not wrong numbers) or info
    description: str
    detect: Callable[[StepFacts], Iterable[Finding]]
    node_mark: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity of {self.name!r} must be one of {SEVERITIES}")

    @property
    def is_failure(self) -> bool:
        """Whether findings of this kind are problems (info findings are not)."""
        return self.severity != "info"


_KINDS: dict[str, Kind] = {}


def register(*kinds: Kind) -> list[Kind]:
    """Add ``kinds`` to the registry, in order (a kind registered again is replaced where it
    was); returns them."""
    for kind in kinds:
        _KINDS[kind.name] = kind
    return list(kinds)


def kinds() -> list[Kind]:
    """Every registered kind, in registry order."""
    return list(_KINDS.values())


def kind_of(name: str) -> Kind | None:
    """The registered kind called ``name``, or None."""
    return _KINDS.get(name)


def severity_of(name: str) -> str:
    """The severity of the kind called ``name`` (``error`` for a kind nobody registered)."""
    kind = _KINDS.get(name)
    return kind.severity if kind is not None else "error"


def order_of(name: str) -> int:
    """The position of kind ``name`` in the registry (after every kind when unknown)."""
    for i, key in enumerate(_KINDS):
        if key == name:
            return i
    return len(_KINDS)
