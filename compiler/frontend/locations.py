"""`file:line` of the model's code, as recorded in provenance and in import errors.

A notebook cell has no file of its own: IPython compiles each cell to a temporary name
(`/tmp/ipykernel_<pid>/<hash>.py`) that means nothing to a reader and is gone with the kernel.
Such a location is written as the cell's prompt, `In[5]:10` (the name Jupyter shows next to
the cell and in its own tracebacks), or `<notebook cell>:10` when the running kernel does not
know the cell (another kernel's, or a stack trace stored in an ONNX file)."""

from __future__ import annotations

import re
import sys

# IPython's and ipykernel's names for a cell's code (``<ipython-input-5-...>`` before IPython 8)
_CELL_FILE = re.compile(r"(^|[/\\])ipykernel_\d+[/\\][^/\\]+\.py$|^<ipython-input-\d+-[0-9a-f]+>$")


def _cell_prompt(path: str) -> str | None:
    """`In[5]` for a cell the running IPython shell compiled, else None (no IPython, or not
    one of its cells). IPython is looked up, never imported: outside it there are no cells."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if not callable(name):
        return None
    try:
        kind_and_prompt = name(path)
    except Exception:  # an IPython whose method differs: fall back to the pattern
        return None
    if not kind_and_prompt or len(kind_and_prompt) != 2 or kind_and_prompt[0] != "Cell":
        return None
    return str(kind_and_prompt[1])


def source_location(path: str, line: int | str) -> str:
    """`path:line`, a notebook cell's path replaced by its prompt (`In[5]:10`) or, when the
    cell is unknown here, by `<notebook cell>`."""
    prompt = _cell_prompt(path)
    if prompt is None and _CELL_FILE.search(path):
        prompt = "<notebook cell>"
    return f"{prompt or path}:{line}"


__all__ = ["source_location"]
