"""Lazy parameter ops: `get_item` fetches weight `index` and `set_item` hands result
`index` over, both through callbacks given at run time (TVM's `get_item` / `set_item`).

A pass cannot carry callbacks and neither can a module, so the numpy reference looks them up
in a context set around a run, whoever runs it (the interpreter, fold checks, a notebook)::

    with lazy_callbacks(get_item=weights.__getitem__, set_item=out.__setitem__):
        interpret.run(module, function="main_transform_params")

`set_item` returns the value it was given: a function's output then depends on every
`set_item` (so dead-code elimination keeps them, in binding order) and has the type it had
before the lazy passes. Neither op may be folded or evaluated at compile time.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.ir.op_registry import OPAQUE, AttrSpec, TypeInferenceError, define_op
from compiler.ir.parser import ParseError, parse_type
from compiler.ir.types import Type

GetItem = Callable[[int], Any]
SetItem = Callable[[int, Any], None]


@dataclass(frozen=True)
class LazyCallbacks:
    """The callbacks `get_item` and `set_item` call (None: that op cannot run)."""

    get_item: GetItem | None = None
    set_item: SetItem | None = None


_NO_CALLBACKS = LazyCallbacks()
_CURRENT: contextvars.ContextVar[LazyCallbacks | None] = contextvars.ContextVar(
    "lazy_callbacks", default=None
)


@contextlib.contextmanager
def lazy_callbacks(
    get_item: GetItem | None = None, set_item: SetItem | None = None
) -> Iterator[LazyCallbacks]:
    """Make `get_item(index) -> array` and `set_item(index, value)` the callbacks of the
    lazy ops inside the `with` block (nested blocks replace them, then restore)."""
    token = _CURRENT.set(LazyCallbacks(get_item, set_item))
    try:
        yield current_callbacks()
    finally:
        _CURRENT.reset(token)


def current_callbacks() -> LazyCallbacks:
    """The callbacks active here."""
    return _CURRENT.get() or _NO_CALLBACKS


@functools.cache
def _parse_type(text: str) -> Type:
    try:
        return parse_type(text)
    except ParseError as e:
        raise TypeInferenceError(f"attribute type={text!r} is not a type: {e.message}") from None


def _no_callback(op: str, index: int) -> RuntimeError:
    return RuntimeError(
        f"{op}(index={index}) ran with no {op} callback: run it inside "
        f"`with compiler.ops.lazy_params.lazy_callbacks({op}=...)`"
    )


def _get_item_infer(types: list[Type], attrs) -> Type:
    if attrs["index"] < 0:
        raise TypeInferenceError(f"index must be >= 0, got {attrs['index']}")
    return _parse_type(attrs["type"])


def _get_item_compute(values: list, attrs) -> Any:
    fetch = current_callbacks().get_item
    if fetch is None:
        raise _no_callback("get_item", attrs["index"])
    value = fetch(attrs["index"])
    if isinstance(value, tuple):
        return tuple(np.asarray(v) for v in value)
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _set_item_infer(types: list[Type], attrs) -> Type:
    if attrs["index"] < 0:
        raise TypeInferenceError(f"index must be >= 0, got {attrs['index']}")
    return types[0]


def _set_item_compute(values: list, attrs) -> Any:
    store = current_callbacks().set_item
    if store is None:
        raise _no_callback("set_item", attrs["index"])
    store(attrs["index"], values[0])
    return values[0]


define_op(
    "get_item",
    inputs=(),
    attrs={
        "index": AttrSpec("int", doc="which weight to fetch (0 is the first weight)"),
        "type": AttrSpec("str", doc="the weight's type in the text format, e.g. 'f32[4, 3]'"),
    },
    infer=_get_item_infer,
    compute=_get_item_compute,
    pattern=OPAQUE,
    doc="Fetch weight `index` through the run-time get_item callback (lazy parameter loading).",
)

define_op(
    "set_item",
    inputs=("value",),
    attrs={"index": AttrSpec("int", doc="which result this is (0 is the first)")},
    infer=_set_item_infer,
    compute=_set_item_compute,
    pattern=OPAQUE,
    doc="Hand result `index` to the run-time set_item callback; returns the value unchanged.",
)

# Ops with effects: never evaluate them at compile time (fold-constant, dead-code checks).
SIDE_EFFECT_OPS = frozenset({"get_item", "set_item"})

__all__ = ["LazyCallbacks", "SIDE_EFFECT_OPS", "current_callbacks", "lazy_callbacks"]
