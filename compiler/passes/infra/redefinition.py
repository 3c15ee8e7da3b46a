"""A pass registered again: by the same definition (a notebook cell run again,
`importlib.reload`, the same source executed twice) the new class replaces the old one with
a `PassRedefinedWarning`, one line; by another definition it is a
`PassRegistrationError` naming both, each as `module.qualname (file:line)`. (A rule
table registered again by its module replaces the old one quietly; by another module it is the
same error: `rules.rule_table`.)

Where a class is defined is read from the code of its methods and Python's line cache, which
holds notebook cells too (IPython puts each cell there), so it is known for a pass written in
a notebook, where `inspect.getsource` of a class fails."""

from __future__ import annotations

import inspect
import linecache
import re
import warnings
from tokenize import TokenError
from typing import Any

from compiler.errors import PasslensError


class PassRedefinedWarning(UserWarning):
    """A pass was registered again by the same definition: the new class replaced the old
    one."""


class PassRegistrationError(PasslensError, ValueError):
    """A pass name (or a pass's rule table) is taken by another definition; the message names
    both."""


def same_definition(a: Any, b: Any) -> bool:
    """Whether two classes come from one definition run twice: the same module and qualified
    name."""
    return (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


def where_defined(obj: Any) -> str:
    """Where a class (or function) is defined: `module.qualname (file:line)`, the place
    left out when Python cannot tell (a class made by `exec` of a string)."""
    name = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"
    found = definition_source(obj)
    return name if found is None else f"{name} ({found[0]}:{found[1]})"


def definition_source(obj: Any) -> tuple[str, int, str] | None:
    """`(file, first line, source)` of a class or function as the line cache holds it (its
    decorators included; notebook cells too), or None when the source is not known."""
    code = _code_of(obj)
    if code is None:
        return None
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return None
    start = code.co_firstlineno - 1
    if isinstance(obj, type):  # a method's first line: go up to the ``class`` statement
        pattern = re.compile(rf"^\s*class\s+{re.escape(obj.__name__)}\b")
        start = next((i for i in range(start, -1, -1) if pattern.match(lines[i])), -1)
        if start < 0:
            return None
    while start > 0 and lines[start - 1].lstrip().startswith("@"):
        start -= 1  # its decorators
    first = start
    while first < len(lines) and lines[first].lstrip().startswith("@"):
        first += 1
    try:
        body = inspect.getblock(lines[first:])
    except (IndexError, SyntaxError, TokenError):
        return None
    return code.co_filename, start + 1, "".join(lines[start:first] + list(body))


def _code_of(obj: Any):
    """The code object that locates `obj`: a function's own, or for a class, that of the
    first method written in its body (not one `dataclass` generated)."""
    if inspect.isfunction(obj):
        return obj.__code__
    if not isinstance(obj, type):
        return None
    codes = []
    for value in vars(obj).values():
        fn = getattr(value, "__func__", getattr(value, "fget", value))
        code = getattr(fn, "__code__", None)
        if code is not None and getattr(fn, "__qualname__", "").startswith(obj.__qualname__ + "."):
            if linecache.getlines(code.co_filename):
                codes.append(code)
    return min(codes, key=lambda c: c.co_firstlineno) if codes else None


def redefined(message: str, stacklevel: int) -> None:
    """Say, once per redefinition, that a registration replaced an earlier one (`stacklevel`
    counted from the caller of this function, as `warnings.warn` counts)."""
    warnings.warn(message, PassRedefinedWarning, stacklevel=stacklevel + 1)
