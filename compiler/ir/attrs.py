"""Attribute mappings of calls and the error type inference raises (shared by the IR and the
op registry)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compiler.errors import PasslensError
from compiler.ir.symbolic import SymExpr


class TypeInferenceError(PasslensError, TypeError):
    """An op was given inputs or attributes it cannot accept; the message says why."""


class Attrs(Mapping):
    """Immutable, hashable attribute mapping of a call (keys sorted)."""

    __slots__ = ("_items", "_dict", "_hash", "_symbolic")

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()):
        pairs = tuple(sorted(dict(items).items()))
        object.__setattr__(self, "_items", pairs)
        object.__setattr__(self, "_dict", dict(pairs))
        object.__setattr__(self, "_hash", None)
        object.__setattr__(self, "_symbolic", None)

    def __setattr__(self, key, value):
        raise AttributeError("Attrs are immutable")

    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __iter__(self):
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._items)

    # the views of the dict held (read-only, iterated in C; Mapping's own are Python loops)
    def keys(self):
        return self._dict.keys()

    def values(self):
        return self._dict.values()

    def items(self):
        return self._dict.items()

    @property
    def symbolic(self) -> bool:
        """Whether a value is a symbolic size (a `SymExpr`, or a tuple holding one), which the
        interpreter resolves against a run's sizes (looked at once: attributes are immutable)."""
        if self._symbolic is None:
            found = any(
                isinstance(v, SymExpr)
                or (isinstance(v, tuple) and any(isinstance(x, SymExpr) for x in v))
                for v in self._dict.values()
            )
            object.__setattr__(self, "_symbolic", found)
        return self._symbolic

    @property
    def pairs(self) -> tuple[tuple[str, Any], ...]:
        """The `(name, value)` pairs sorted by name: what equality and the hash compare."""
        return self._items

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(self._items))
        return self._hash

    def __eq__(self, other) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        return isinstance(other, Mapping) and self._dict == dict(other)

    def with_(self, **changes: Any) -> Attrs:
        """A copy with some attributes changed."""
        return Attrs({**self._dict, **changes})

    def __repr__(self) -> str:
        return f"Attrs({self._dict!r})"


EMPTY_ATTRS = Attrs()
