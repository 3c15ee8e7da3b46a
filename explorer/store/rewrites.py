"""A step's rewrites in a trace file: `"rewrites"` in its manifest record, a list of
`[rule, [matched...], [produced...], cut]`. Read back checked and capped: a file is
untrusted, so a rule or a node name is text of bounded length, a rewrite keeps at most
`MAX_NAMES` names per side, and a step at most `MAX_REWRITES` rewrites."""

from __future__ import annotations

from typing import Any

from compiler import LimitError
from explorer.rewrites import MAX_NAMES, Rewrite
from explorer.store.fileformat import TraceFileError

MAX_REWRITES = 1_000_000  # per step
MAX_NAME_CHARS = 4096  # a rule's or a node's name


def encode_rewrites(rewrites) -> list:
    """The manifest's form of a step's rewrites."""
    return [[r.rule, list(r.matched), list(r.produced), r.cut] for r in rewrites]


def decode_rewrites(data: Any, where: str) -> tuple[Rewrite, ...]:
    """A step's rewrites read from a file (`where` names the file and step in errors)."""
    if data is None:
        return ()
    if not isinstance(data, list):
        raise TraceFileError(f"{where}: damaged passlens trace file (rewrites is not a list)")
    if len(data) > MAX_REWRITES:
        raise LimitError(f"{where}: {len(data)} rewrites, over the limit of {MAX_REWRITES}")
    out = []
    for k, rec in enumerate(data):
        ok = (
            isinstance(rec, list)
            and len(rec) == 4
            and _name(rec[0])
            and all(isinstance(side, list) and len(side) <= MAX_NAMES for side in rec[1:3])
            and all(_name(n) for side in rec[1:3] for n in side)
            and type(rec[3]) is int
            and 0 <= rec[3] <= 1 << 40
        )
        if not ok:
            raise TraceFileError(f"{where}: damaged passlens trace file (rewrite {k})")
        out.append(Rewrite(rec[0], tuple(rec[1]), tuple(rec[2]), rec[3]))
    return tuple(out)


def _name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME_CHARS


__all__ = ["MAX_NAME_CHARS", "MAX_REWRITES", "decode_rewrites", "encode_rewrites"]
