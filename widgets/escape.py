"""Text from a model made safe for where it is shown: HTML, SVG, Graphviz HTML-like labels
(:func:`esc`) and JSON inside a ``<script>`` element (:func:`json_script`).

Every renderer in :mod:`widgets` passes what it takes from a model (names, attributes, types,
paths, messages) through these.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def esc(value: Any, limit: int | None = None) -> str:
    """Text from a model made safe for HTML, SVG and Graphviz HTML-like labels: control
    characters replaced, optionally cut to ``limit`` characters, ``<>&"'`` escaped."""
    text = _CONTROL.sub("\ufffd", str(value))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=True)


def jsonable(x: Any) -> Any:
    """``x`` as JSON can hold it: dict keys and unknown objects as text, NaN and infinities as
    their text ('nan', 'inf') rather than the non-standard tokens ``json`` writes."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    return str(x)


def json_script(data: Any) -> str:
    """JSON that is safe inside a ``<script type="application/json">`` element."""
    try:  # most data is JSON-ready already: walking it to convert costs more than dumping it
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = json.dumps(jsonable(data), separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


__all__ = ["esc", "json_script", "jsonable"]
