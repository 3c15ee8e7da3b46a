"""What an adapter's `rerun` needs from a trace it recorded: how the trace was recorded
(kept in memory only, never saved), the step a re-run starts from, and the passes a
`replace={old: new}` swaps.

    keep_recording(trace, source, example_inputs, pipeline, {"opt_level": 3})  # at record time
    recorded = recording_of(trace)        # RerunError for a trace read from a file
    swap = Replacements(replace)          # {"FastGelu": FastGeluFixed(), OldClass: NewClass}
    new = swap.pick(pass_object, names)   # the replacement of one pass, or None
    swap.check_used(available_names)      # a key that named no pass: RerunError

Used by the TVM, Inductor and ONNX Runtime adapters (each re-records the whole run: see their
`rerun`). A key of `replace` is a pass's name (its step's name or the compiler's own name
for it), its class, or the pass object itself; a class matches an instance of that class or
of a class redefined from the same source (the same module, name and qualified name: a
notebook cell run again). A value is a pass object, or a class made with no arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from explorer.trace import RerunError


@dataclass
class Recorded:
    """How a trace was recorded: its source, the example inputs, the pipeline as given (pass
    objects included) and the other options of `explore`. In memory only: a saved trace
    does not keep it (a trace read from a file cannot be recorded again)."""

    source: Any
    example_inputs: Any
    pipeline: Any
    options: dict = field(default_factory=dict)
    #: the pass object each step ran, by step index (where the recorder knows it)
    passes: dict = field(default_factory=dict)
    #: ``id(pass object) -> its name when recorded`` (a pass that made no step has one too)
    names: dict = field(default_factory=dict)


def keep_recording(
    trace: Any,
    source: Any,
    example_inputs: Any,
    pipeline: Any,
    options: dict,
    passes: dict | None = None,
    names: dict | None = None,
) -> Any:
    """Keep on `trace` how it was recorded (for `rerun`); returns the trace."""
    trace.recorded_with = Recorded(
        source, example_inputs, pipeline, dict(options), dict(passes or {}), dict(names or {})
    )
    return trace


def step_names(trace: Any, passes: dict) -> dict[int, set[str]]:
    """`id(pass object) -> the names of the steps it ran` for `passes` (step index ->
    pass object): what a `replace` key may call a pass besides its own name."""
    names: dict[int, set[str]] = {}
    for index, obj in passes.items():
        if 0 <= index < len(trace.steps):
            step = trace.steps[index]
            names.setdefault(id(obj), set()).update(n for n in (step.name, step.spec) if n)
    return names


def recording_of(trace: Any) -> Recorded:
    """How `trace` was recorded; a `RerunError` when it does not say (a trace read
    from a file keeps no source, inputs or pass objects)."""
    recorded = getattr(trace, "recorded_with", None)
    if not isinstance(recorded, Recorded):
        raise RerunError(
            f"this {trace.compiler} trace cannot be re-run: it was loaded from a file (or made "
            "without explore), which keeps no model, inputs or pass objects to record again; "
            f"explore the model again (explorer.explore(model, inputs, "
            f"compiler={trace.compiler!r}, ...)) and rerun that trace"
        )
    return recorded


def check_from_step(trace: Any, from_step: Any) -> int | None:
    """The index of the step `from_step` names (a number or a step name), None for None;
    a `RerunError` for a step the trace does not have."""
    if from_step is None:
        return None
    if isinstance(from_step, bool) or not isinstance(from_step, (int, str)):
        raise RerunError(f"from_step is a step's number or name, not {type(from_step).__name__}")
    try:
        step = trace[from_step]
    except IndexError:
        raise RerunError(
            f"from_step={from_step}: this trace has no such step ({len(trace)} steps, 0 to "
            f"{len(trace) - 1})"
        ) from None
    except (KeyError, ValueError) as e:
        why = str(e.args[0] if e.args else e)
        raise RerunError(f"from_step={from_step[:80]!r}: {why[:300]}") from None
    return step.index


def same_class(a: type, b: type) -> bool:
    """Whether two classes are one, or one redefined from the same source (a notebook cell
    run again: the same module, name and qualified name)."""
    if a is b:
        return True
    return (
        getattr(a, "__module__", None) == getattr(b, "__module__", None)
        and getattr(a, "__name__", None) == getattr(b, "__name__", None)
        and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None)
    )


def make_pass(value: Any, kind: Any, what: str) -> Any:
    """A replacement as an object of `kind` (a type or tuple of types): `value` itself,
    or `value()` for a class; a TypeError naming `what` is expected otherwise."""
    if isinstance(value, type):
        try:
            value = value()
        except TypeError as e:
            raise RerunError(
                f"replace: {value.__name__} cannot be made with no arguments ({e}); give an "
                "instance"
            ) from None
    if not isinstance(value, kind):
        raise RerunError(f"replace: a new pass is {what}, not {type(value).__name__}")
    return value


class Replacements:
    """The `replace` argument of a `rerun`: which pass each key names, and its new pass
    (see the module docstring): `make(value)` is the new pass of a value (default:
    `make_pass` with `kind` and `what`)."""

    def __init__(self, replace: Any, kind: Any, what: str, make: Any = None):
        if replace is None:
            replace = {}
        if not isinstance(replace, dict):
            raise RerunError(
                "replace is a dict {old pass name, class or object: new pass}, not "
                f"{type(replace).__name__}"
            )
        make = make or (lambda value: make_pass(value, kind, what))
        self.items = [(key, make(value)) for key, value in replace.items()]
        self.used: set[int] = set()

    def __bool__(self) -> bool:
        return bool(self.items)

    def pick(self, obj: Any, names: Iterable[str], cls: type | None = None) -> Any:
        """The new pass for `obj` (a pass known by `names`, of class `cls`: its type by
        default), or None when no key names it."""
        names = {n for n in names if n}
        cls = type(obj) if cls is None else cls
        for k, (key, new) in enumerate(self.items):
            if key is obj or (
                isinstance(key, str)
                and key in names
                or isinstance(key, type)
                and same_class(cls, key)
            ):
                self.used.add(k)
                return new
        return None

    def check_used(self, available: Iterable[str]) -> None:
        """A `RerunError` for the keys that named no pass (listing the passes there
        are)."""
        unused = [key for k, (key, _) in enumerate(self.items) if k not in self.used]
        if not unused:
            return
        names = ", ".join(dict.fromkeys(n for n in available if n)) or "none"
        keys = ", ".join(_key_text(key) for key in unused)
        raise RerunError(
            f"replace: no pass of this trace's pipeline is {keys} (its passes: {names[:600]})"
        )


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return repr(key[:80])
    if isinstance(key, type):
        return f"of class {key.__name__}"
    return f"the object {type(key).__name__}"


__all__ = [
    "Recorded",
    "Replacements",
    "RerunError",
    "check_from_step",
    "keep_recording",
    "make_pass",
    "recording_of",
    "same_class",
    "step_names",
]
