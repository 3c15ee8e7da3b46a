"""The op registry: every op is declared once with its inputs, attributes, type inference,
numpy reference implementation and fusion pattern.

It is part of the IR because nodes read it (a Call infers its type from its op); the op
families (compiler/ops/) register into it, and importing compiler.ir imports them, so every
op is here whenever a node can be built."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.ir.attrs import Attrs, TypeInferenceError
from compiler.ir.symbolic import ANY, SymExpr, is_dim
from compiler.ir.types import DType, Type


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()

# Fusion patterns, as in TVM's OpPatternKind: what fuse-ops may group around an anchor.
ELEMWISE = "elemwise"  # same shape in and out, one element at a time
BROADCAST = "broadcast"  # elementwise with numpy broadcasting
INJECTIVE = "injective"  # each output element reads one input element (reshape, transpose, ...)
REDUCE = "reduce"  # reductions over axes
ANCHOR = "anchor"  # compute-heavy ops elementwise ops fuse into (conv2d, matmul)
OPAQUE = "opaque"  # never fused
PATTERNS = (ELEMWISE, BROADCAST, INJECTIVE, REDUCE, ANCHOR, OPAQUE)

ATTR_KINDS = ("int", "float", "bool", "str", "ints", "floats", "dim", "dims", "dtype", "any")


@dataclass(frozen=True)
class AttrSpec:
    """One attribute of an op: its kind, its default (REQUIRED if none) and what it means."""

    kind: str
    default: Any = REQUIRED
    doc: str = ""
    # a dim attribute the op can run without when the inputs leave its symbols unbound (it
    # then gets the symbolic value): a compiled kernel's result shape, found from its buffers
    may_stay_symbolic: bool = False

    def __post_init__(self):
        if self.kind not in ATTR_KINDS:
            raise ValueError(f"unknown attribute kind {self.kind!r}")


def _convert(op: str, name: str, kind: str, value: Any) -> Any:
    def bad(expected: str) -> TypeInferenceError:
        return TypeInferenceError(f"{op}: attribute {name} must be {expected}, got {value!r}")

    if value is None:
        return None
    if kind == "any":
        return _tuples(value)
    if kind == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise bad("an integer")
        return int(value)
    if kind == "float":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise bad("a number")
        return float(value)
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise bad("true or false")
        return bool(value)
    if kind == "str":
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if kind == "dtype":
        try:
            return DType.of(value)
        except TypeError:
            raise bad("a dtype") from None
    if kind in ("ints", "floats", "dims"):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise bad("a list")
        inner = {"ints": "int", "floats": "float", "dims": "dim"}[kind]
        return tuple(_convert(op, name, inner, v) for v in value)
    if kind == "dim":
        if value is ANY or isinstance(value, SymExpr):
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise bad("an integer or symbolic dimension")
        return int(value)
    raise AssertionError(kind)


def _tuples(value: Any) -> Any:
    """Lists (nested too) as tuples, so an attribute value is hashable."""
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return value


@dataclass(frozen=True)
class OpDef:
    """The declaration of an op (see `define_op`)."""

    name: str
    inputs: tuple[str, ...]
    attrs: Mapping[str, AttrSpec]
    infer: Callable[[list[Type], Attrs], Type]
    compute: Callable[[list[np.ndarray], Attrs], Any]
    pattern: str
    doc: str
    num_outputs: int = 1
    required_inputs: int = field(init=False)
    variadic: bool = field(init=False)

    def __post_init__(self):
        variadic = bool(self.inputs) and self.inputs[-1].startswith("*")
        required = sum(1 for i in self.inputs if not i.endswith("?") and not i.startswith("*"))
        if variadic and not self.inputs[-1].endswith("?"):
            required += 1  # at least one value for a variadic input (``*xs?``: none or more)
        object.__setattr__(self, "variadic", variadic)
        object.__setattr__(self, "required_inputs", required)

    def check_arity(self, n: int) -> None:
        """Raise TypeInferenceError unless `n` inputs suit this op."""
        if n < self.required_inputs or (not self.variadic and n > len(self.inputs)):
            names = ", ".join(self.inputs)
            raise TypeInferenceError(f"{self.name} takes inputs ({names}), got {n} input(s)")

    def normalize_attrs(self, attrs: Mapping[str, Any] | None) -> Attrs:
        """Check names and kinds, fill defaults; returns the canonical Attrs."""
        attrs = dict(attrs or {})
        unknown = set(attrs) - set(self.attrs)
        if unknown:
            known = ", ".join(self.attrs) or "none"
            raise TypeInferenceError(
                f"{self.name} has no attribute(s) {', '.join(sorted(unknown))} (known: {known})"
            )
        out = {}
        for name, spec in self.attrs.items():
            if name in attrs:
                out[name] = _convert(self.name, name, spec.kind, attrs[name])
            elif spec.default is REQUIRED:
                raise TypeInferenceError(f"{self.name} needs attribute {name}")
            else:
                out[name] = spec.default
        return Attrs(out)


_REGISTRY: dict[str, OpDef] = {}


def define_op(
    name: str,
    *,
    inputs: Sequence[str],
    infer: Callable[[list[Type], Attrs], Type],
    compute: Callable[[list[np.ndarray], Attrs], Any],
    attrs: Mapping[str, AttrSpec] | None = None,
    pattern: str = OPAQUE,
    doc: str = "",
) -> OpDef:
    """Declare an op. `inputs` names its inputs: `x` required, `x?` optional, `*xs`
    variadic (last; `*xs?` may be empty). `infer` maps input types and attrs to the
    result type (raising TypeInferenceError with a clear message); `compute` is the numpy
    reference."""
    if name in _REGISTRY:
        raise ValueError(f"op {name!r} is defined twice")
    if pattern not in PATTERNS:
        raise ValueError(f"unknown fusion pattern {pattern!r}")
    opdef = OpDef(name, tuple(inputs), dict(attrs or {}), infer, _arrays(compute), pattern, doc)
    _REGISTRY[name] = opdef
    return opdef


def _arrays(compute: Callable[[list[np.ndarray], Attrs], Any]):
    """`compute` giving arrays only: numpy returns a scalar (`np.int64`) where a 0-d array
    is meant (`np.take` with a 0-d index, a full reduction), and every caller (the
    interpreter, folding, the kernels' references) wants the 0-d array the type annotates."""

    def arrays(values: list[np.ndarray], attrs: Attrs) -> Any:
        return _as_array(compute(values, attrs))

    arrays.__doc__, arrays.__wrapped__ = compute.__doc__, compute
    return arrays


def _as_array(value: Any) -> Any:
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_as_array(v) for v in value)
    return value


def get_op(name: str) -> OpDef:
    """The definition of op `name`; an unknown name raises KeyError with suggestions."""
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KeyError(f"unknown op {name!r}{hint}") from None


def all_ops() -> dict[str, OpDef]:
    """Every registered op by name."""
    return dict(_REGISTRY)


def is_dim_value(value: Any) -> bool:
    """Whether `value` can be a dimension."""
    return is_dim(value)
