"""Text from a model made safe for where it is shown: HTML, SVG, Graphviz HTML-like labels
(`esc`) and JSON inside a `<script>` element (`json_script`).

Every renderer in `widgets` passes what it takes from a model (names, attributes, types,
paths, messages) through these; `esc` also cuts a text at `widgets.bounds.MAX_TEXT`
characters with a note (a whole IR text, cut on its own, passes `limit=None`).
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

from widgets.bounds import MAX_TEXT, clip

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
# a character esc changes (escaped or replaced): most texts of a model have none
_CHANGED = re.compile(r"[<>&\"'\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def esc(value: Any, limit: int | None = MAX_TEXT) -> str:
    """Text from a model made safe for HTML, SVG and Graphviz HTML-like labels: control
    characters replaced, cut to `limit` characters with a note (`… (N more characters)`;
    None: not cut), `<>&"'` escaped."""
    text = str(value)
    if limit is not None:
        text = clip(text, limit)
    if _CHANGED.search(text) is None:  # (a table of 10,000 rows escapes 50,000 cells)
        return text
    return html.escape(_CONTROL.sub("\ufffd", text), quote=True)


def jsonable(x: Any) -> Any:
    """`x` as JSON can hold it: dict keys and unknown objects as text, NaN and infinities as
    their text ('nan', 'inf') rather than the non-standard tokens `json` writes. Walks with a
    stack of its own (no recursion over the value's nesting)."""

    def leaf(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, (str, int, float, bool)) or v is None:
            return v
        return str(v)

    root: list = [None]
    stack: list[tuple[Any, Any, Any]] = [(x, root, 0)]
    while stack:
        v, into, key = stack.pop()
        if isinstance(v, dict):
            out: Any = {str(k): None for k in v}
            stack.extend((item, out, str(k)) for k, item in v.items())
        elif isinstance(v, (list, tuple)):
            out = [None] * len(v)
            stack.extend((item, out, i) for i, item in enumerate(v))
        else:
            out = leaf(v)
        into[key] = out
    return root[0]


def json_script(data: Any) -> str:
    """JSON that is safe inside a `<script type="application/json">` element."""
    try:  # most data is JSON-ready already: walking it to convert costs more than dumping it
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = json.dumps(jsonable(data), separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


__all__ = ["esc", "json_script", "jsonable"]
