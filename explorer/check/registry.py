"""The kinds of finding a check can report: each a `Kind` (its name, severity,
description and detector), registered in one list, `explorer.check.detectors.KINDS`.

This module knows no detector: the detectors register their kinds here, so a finding
(`report.Finding`) can tell its severity and the report its order without importing them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from compiler.ir import Expr

SEVERITIES = ("error", "warning", "info")


class Found(Protocol):
    """A finding as a kind reads it (a `report.Finding` is one; the report module imports
    this one, so the annotations here name this protocol): the IR nodes it names."""

    nodes: list


@dataclass
class Kind:
    """A kind of finding. `detect` gets what the check knows of one step (a
    `explorer.check.facts.StepFacts`) and returns the findings of this kind there.
    Findings of one step are listed in registry order.

    The graph view outlines and labels what `marks` returns for a finding: by default
    each node the finding names, labelled `node_mark` (no `node_mark`: nothing is marked);
    a kind whose labels depend on the finding gives `mark` instead, returning (IR node or
    graph node id, label) pairs."""

    name: str
    severity: str  # error (a failure), warning (a failure, not wrong numbers) or info
    description: str
    detect: Callable[[Any], Iterable[Found]]  # a facts.StepFacts -> its findings of this kind
    node_mark: str = ""
    mark: Callable[[Any], Iterable[tuple[Expr | str, str]]] | None = None  # a Finding -> marks

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity of {self.name!r} must be one of {SEVERITIES}")

    @property
    def is_failure(self) -> bool:
        """Whether findings of this kind are problems (info findings are not)."""
        return self.severity != "info"

    def marks(self, finding: Found) -> list[tuple[Expr | str, str]]:
        """What the graph view marks for `finding`: (IR node or graph node id, label)."""
        if self.mark is not None:
            return list(self.mark(finding))
        return [(node, self.node_mark) for node in finding.nodes] if self.node_mark else []


_KINDS: dict[str, Kind] = {}


def register(*kinds: Kind) -> list[Kind]:
    """Add `kinds` to the registry, in order (a kind registered again is replaced where it
    was); returns them."""
    for kind in kinds:
        _KINDS[kind.name] = kind
    return list(kinds)


def kinds() -> list[Kind]:
    """Every registered kind, in registry order."""
    return list(_KINDS.values())


def kind_of(name: str) -> Kind | None:
    """The registered kind called `name`, or None."""
    return _KINDS.get(name)


def severity_of(name: str) -> str:
    """The severity of the kind called `name` (`error` for a kind nobody registered)."""
    kind = _KINDS.get(name)
    return kind.severity if kind is not None else "error"


def order_of(name: str) -> int:
    """The position of kind `name` in the registry (after every kind when unknown)."""
    for i, key in enumerate(_KINDS):
        if key == name:
            return i
    return len(_KINDS)
