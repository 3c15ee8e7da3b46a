"""Bounded rendering: what a view makes of a file is bounded by what a person can read, not by
what the file holds (issue #39). A trace is untrusted: a name, a module path, a rule, an
attribute can be megabytes that compress to nothing, and one such text is repeated on every
node and every step that shows it.

- `clip`: one text cut to `MAX_TEXT` characters (or a smaller limit) with a visible
  note, `… (N more characters)`; `esc` cuts every text with it;
- `clip_id`: an identifier (a node id, a group id) cut the same way, but still unique (a
  digest of the whole text is kept);
- `clip_tree`: every text in a JSON-like value (a node's attributes, provenance) clipped,
  without recursion, and its size counted;
- `module_path`: a module path bounded to `MAX_GROUP_DEPTH` levels (the rest said
  in one last level) and each level cut, so the graph's group tree is never deeper than that;
- the budgets: a graph payload (`MAX_PAYLOAD_BYTES`, what one view of a step sends to the
  browser: the stepper, the Panel app, the report) and the whole report
  (`MAX_REPORT_BYTES`); past one, `RenderLimitError` says what is big and how to
  narrow it. ConvNeXt-base's report is 5 MB, the 10,000-op and 10,000-node models' 6-16 MB
  (their largest payload 7.9 MB): the budgets are some eight times those.
"""

from __future__ import annotations

import hashlib
from typing import Any

from compiler import LimitError

MAX_TEXT = 1000  # characters of one text of a node (a name, a path, a why line, an attribute)
MAX_ID = 300  # characters of a node's or a group's id in a payload (the rest: a digest)
MAX_SEGMENT = 200  # characters of one level of a module path
MAX_GROUP_DEPTH = 64  # levels of module groups drawn (a deeper path: its rest in the last one)
MAX_PAYLOAD_BYTES = 64 << 20  # one step's graph payload
MAX_REPORT_BYTES = 128 << 20  # the whole HTML report


class RenderLimitError(LimitError):
    """A view of a trace would be larger than its budget (`MAX_PAYLOAD_BYTES`,
    `MAX_REPORT_BYTES`); the message names what is big and how to narrow it."""


def more_note(n: int, what: str = "characters") -> str:
    return f"… ({n:,} more {what})"


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """`text` cut to `limit` characters, with a note saying how many were left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + more_note(len(text) - limit)


def clip_id(text: str, limit: int = MAX_ID) -> str:
    """An identifier cut to `limit` characters and still unique: the cut one ends in a
    digest of the whole (`…#3f2a9c0d1e2b4f56`)."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[:limit]}…#{digest}"


def clip_tree(value: Any, limit: int = MAX_TEXT) -> tuple[Any, int]:
    """`value` (text, numbers, lists, tuples and dicts, nested however deep) with every text
    (keys too) clipped to `limit`, and about how many bytes it takes as JSON. Walks with a
    stack of its own: no recursion over the value's nesting. Other objects become text."""
    size = 0

    def leaf(x: Any) -> Any:
        nonlocal size
        if isinstance(x, str):
            x = clip(x, limit)
            size += len(x) + 3
            return x
        if x is None or isinstance(x, (bool, int, float)):
            size += 8
            return x
        x = clip(str(x), limit)
        size += len(x) + 3
        return x

    if type(value) is dict:  # the common case, a dict of short texts: as it is (shared)
        n = 0
        for k, v in value.items():
            if type(k) is not str or type(v) is not str or len(k) > limit or len(v) > limit:
                break
            n += len(k) + len(v) + 6
        else:
            return value, n + 2
    if not isinstance(value, (dict, list, tuple)):
        return leaf(value), size
    root: list = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (value, container, key)
    while stack:
        x, into, key = stack.pop()
        if isinstance(x, dict):
            out: Any = {}
            for k, v in x.items():
                k = leaf(k) if isinstance(k, str) else clip(str(k), limit)
                out[k] = None
                stack.append((v, out, k))
        elif isinstance(x, (list, tuple)):
            out = [None] * len(x)
            stack.extend((v, out, i) for i, v in enumerate(x))
        else:
            out = leaf(x)
        size += 2
        into[key] = out
    return root[0], size


def module_path(path: str) -> str:
    """A module path as the graph groups it: at most `MAX_GROUP_DEPTH` levels (the
    levels past them said in the last: `… (4,937 more levels)`), each level cut to
    `MAX_SEGMENT` characters. A path within both is returned as it is."""
    if len(path) <= MAX_SEGMENT and path.count(".") < MAX_GROUP_DEPTH:
        return path
    parts = path.split(".", MAX_GROUP_DEPTH - 1)
    if len(parts) == MAX_GROUP_DEPTH and "." in parts[-1]:
        parts[-1] = more_note(parts[-1].count(".") + 1, "levels")  # (no dot in the note)
    return ".".join(p if len(p) <= MAX_SEGMENT else clip(p, MAX_SEGMENT) for p in parts)


def check_budget(nbytes: int, limit: int, what: str, how: str) -> None:
    """Raise `RenderLimitError` when `nbytes` is over `limit`: `what` names what
    is big, `how` says how to narrow it."""
    if nbytes > limit:
        raise RenderLimitError(
            f"{what} would be about {nbytes / 2**20:,.1f} MiB, over the "
            f"{limit / 2**20:,.0f} MiB budget of a view; {how}"
        )


__all__ = [
    "MAX_GROUP_DEPTH",
    "MAX_ID",
    "MAX_PAYLOAD_BYTES",
    "MAX_REPORT_BYTES",
    "MAX_SEGMENT",
    "MAX_TEXT",
    "RenderLimitError",
    "check_budget",
    "clip",
    "clip_id",
    "clip_tree",
    "module_path",
]
