"""Finding steps in a trace: by number or pass name (`"fold-constant"`, the second one
`"fold-constant#2"`, or a spec), the imported step, the final step, the failed one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from explorer.step import Step


def find_step(steps: Sequence[Step], key: int | str) -> Step:
    """The step numbered `key`, or the first (`name#n`: the n-th) whose pass name or spec
    is `key`."""
    if not isinstance(key, (int, str)):
        raise TypeError(f"index a trace with an int or a pass name, not {type(key).__name__}")
    if isinstance(key, int):
        if not -len(steps) <= key < len(steps):
            raise IndexError(f"no step {key}: the trace has steps 0 to {len(steps) - 1}")
        return steps[key]
    name, _, nth = key.partition("#")
    matches = [s for s in steps if s.name == name or s.spec == name]
    if not matches:
        names = sorted({s.name for s in steps})
        raise KeyError(f"no step named {key!r}; steps: {', '.join(names)}")
    if not nth:
        return matches[0]
    if not nth.isdigit() or not 1 <= int(nth) <= len(matches):
        raise KeyError(
            f"no step {key!r}: {name!r} ran {len(matches)} time"
            f"{'s' if len(matches) > 1 else ''} (use {name}#1 to {name}#{len(matches)})"
        )
    return matches[int(nth) - 1]


def imported_step(steps: Sequence[Step]) -> Step:
    """The step holding the imported module."""
    return next(s for s in steps if s.kind == "import")


def final_step(steps: Sequence[Step]) -> Step:
    """The last step with a module (the last good one if a pass failed); not one a pass built
    for itself (TVM's FoldConstant compiling its kernels) unless all are."""
    with_module = [s for s in reversed(steps) if s.module is not None]
    own = [s for s in with_module if not getattr(s.module, "inner", False)]
    return (own or with_module)[0]


def failed_step(steps: Sequence[Step]) -> Step | None:
    """The innermost failed pass, if one failed."""
    failed = [s for s in steps if s.failed]
    return failed[-1] if failed else None
