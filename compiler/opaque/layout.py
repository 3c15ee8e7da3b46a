"""The `opaque` op's attribute layout (the op: compiler/ops/opaque.py): the input
references and literals of `args` / `kwargs` and their limits, target names, the recorded
result type, and the error an opaque op raises. Imports nothing that runs an op, so the
frontends, the printer and the verifier can use it without torch or onnxruntime."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from compiler.errors import PasslensError
from compiler.ir.op_registry import TypeInferenceError
from compiler.ir.symbolic import SymExpr
from compiler.ir.types import DType, TensorType, TupleType, Type

FRAMEWORKS = ("torch", "onnx")
RUNNERS = {"torch": "torch", "onnx": "onnxruntime"}
"""Who computes an opaque op's values, by framework (for messages and views)."""

MAX_TARGET = 200
MAX_ARGS = 64
MAX_DEPTH = 4
MAX_LIST = 1024

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_TORCH_TARGET = re.compile(rf"^{_IDENT}\.{_IDENT}\.{_IDENT}$")
_ONNX_TARGET = re.compile(rf"^(?:{_IDENT}(?:\.{_IDENT})*)::{_IDENT}$")
_REF = re.compile(r"^%(\d{1,4})$")
ONNX_DEFAULT_DOMAIN = "ai.onnx"


class OpaqueOpError(PasslensError, RuntimeError):
    """An opaque op could not run (its framework is missing, does not know the op, or gave a
    value that is not of the op's type); the message names the op and what to do."""


# ----- the argument layout ------------------------------------------------------------------


def input_ref(index: int) -> str:
    """How the `index`-th tensor input is written in `args` / `kwargs`: `"%index"`."""
    return f"%{index}"


def literal(text: str) -> str:
    """A literal string argument as stored (one starting with `%` gets another `%`)."""
    return "%" + text if text.startswith("%") else text


def unescape(text: str) -> str | int:
    """A stored string as the argument it stands for: an input index (int) or the literal."""
    m = _REF.fullmatch(text)
    if m:
        return int(m.group(1))
    if text.startswith("%%"):
        return text[1:]
    if text.startswith("%"):
        raise TypeInferenceError(
            f"argument {text!r} is neither an input reference %i nor an escaped literal %%..."
        )
    return text


def _check_value(value: Any, refs: list[int], depth: int, where: str) -> None:
    """Check one stored argument value (untrusted: from a file or IR text), collecting the
    input indices it refers to."""
    if depth > MAX_DEPTH:
        raise TypeInferenceError(f"{where}: lists nested deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, (bool, int, DType, SymExpr)):
        return
    if isinstance(value, float):
        return
    if isinstance(value, str):
        got = unescape(value)
        if isinstance(got, int):
            refs.append(got)
        return
    if isinstance(value, tuple):
        if len(value) > MAX_LIST:
            raise TypeInferenceError(f"{where}: a list of more than {MAX_LIST} values")
        for v in value:
            _check_value(v, refs, depth + 1, where)
        return
    raise TypeInferenceError(f"{where}: {type(value).__name__} values are not supported")


def _kwarg_pairs(kwargs: Any) -> tuple[tuple[str, Any], ...]:
    if kwargs is None:
        return ()
    if not isinstance(kwargs, tuple):
        raise TypeInferenceError("kwargs must be a list of [name, value] pairs")
    names = set()
    for pair in kwargs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise TypeInferenceError(f"kwargs must be [name, value] pairs, got {pair!r}")
        if not re.match(rf"^{_IDENT}$", pair[0]):
            raise TypeInferenceError(f"kwarg name {pair[0]!r} is not an identifier")
        if pair[0] in names:
            raise TypeInferenceError(f"kwarg {pair[0]} is given twice")
        names.add(pair[0])
    return kwargs


def check_layout(attrs: Mapping[str, Any], num_inputs: int) -> None:
    """Raise TypeInferenceError unless `args` / `kwargs` are well formed and refer to each
    of the `num_inputs` tensor inputs exactly once."""
    args = attrs.get("args") or ()
    if not isinstance(args, tuple):
        raise TypeInferenceError("args must be a list")
    pairs = _kwarg_pairs(attrs.get("kwargs"))
    if len(args) + len(pairs) > MAX_ARGS:
        raise TypeInferenceError(f"more than {MAX_ARGS} arguments")
    refs: list[int] = []
    for i, a in enumerate(args):
        _check_value(a, refs, 0, f"argument {i}")
    for name, v in pairs:
        _check_value(v, refs, 0, f"kwarg {name}")
    if sorted(refs) != list(range(num_inputs)):
        raise TypeInferenceError(
            f"args and kwargs must refer to each of the {num_inputs} input(s) once as "
            f"'%0'...; they refer to {sorted(refs)}"
        )


def check_target(framework: str, target: str) -> None:
    """Raise TypeInferenceError unless `target` is a well formed name for `framework`."""
    if framework not in FRAMEWORKS:
        raise TypeInferenceError(f"framework must be one of {', '.join(FRAMEWORKS)}")
    if len(target) > MAX_TARGET:
        raise TypeInferenceError(f"target is longer than {MAX_TARGET} characters")
    pattern = _TORCH_TARGET if framework == "torch" else _ONNX_TARGET
    if not pattern.fullmatch(target):  # ($ would let a final newline through)
        form = "namespace.op.overload" if framework == "torch" else "domain::OpType"
        raise TypeInferenceError(f"target {target!r} is not a {framework} op name ({form})")
    if framework == "torch" and any(p.startswith("__") for p in target.split(".")):
        raise TypeInferenceError(f"target {target!r}: a part starts with '__'")


@functools.lru_cache(maxsize=1024)
def result_type(text: str) -> Type:
    """The type of an opaque op's `type` attribute."""
    from compiler.ir.parser import ParseError, parse_type

    try:
        ty = parse_type(text)
    except ParseError as e:
        raise TypeInferenceError(f"attribute type={text!r} is not a type: {e.message}") from None
    fields = ty.fields if isinstance(ty, TupleType) else (ty,)
    if not all(isinstance(f, TensorType) for f in fields):
        raise TypeInferenceError(f"type={text!r}: an opaque op gives tensors or a tuple of them")
    return ty


# ----- building and describing ----------------------------------------------------------------


def _stored(value: Any) -> Any:
    """A Python argument as stored in the attributes (lists as tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_stored(v) for v in value)
    return value


def opaque_attrs(
    framework: str,
    target: str,
    ty: Type,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | Sequence[tuple[str, Any]] = (),
    *,
    opset: int | None = None,
    outputs: Sequence[int] | None = None,
    pure: bool = False,
) -> dict[str, Any]:
    """The attributes of an opaque call (`args` / `kwargs` already laid out: inputs as
    `input_ref`, literal strings through `literal`)."""
    pairs = kwargs.items() if isinstance(kwargs, Mapping) else kwargs
    attrs: dict[str, Any] = {
        "framework": framework,
        "target": target,
        "type": str(ty),
        "args": _stored(tuple(args)),
        "kwargs": tuple((k, _stored(v)) for k, v in pairs),
        "pure": bool(pure),
    }
    if opset is not None:
        attrs["opset"] = int(opset)
    if outputs is not None:
        attrs["outputs"] = tuple(int(o) for o in outputs)
    return attrs


def is_opaque(node: Any) -> bool:
    """Whether `node` is a call of the opaque op."""
    return getattr(node, "op", None) == "opaque"


def describe(attrs: Mapping[str, Any]) -> str:
    """`aten.cummax.default (run by torch, no converter)`."""
    runner = RUNNERS.get(attrs.get("framework"), str(attrs.get("framework")))
    return f"{attrs.get('target')} (run by {runner}, no converter)"


def resolve_symbols(value: Any, env: Mapping[str, int]) -> Any:
    """`value` with symbolic dims replaced by their values in `env` (KeyError if unbound)."""
    if isinstance(value, SymExpr):
        return value.evaluate(env)
    if isinstance(value, tuple):
        return tuple(resolve_symbols(v, env) for v in value)
    return value


def has_symbols(value: Any) -> bool:
    """Whether a stored argument holds a symbolic dim."""
    if isinstance(value, SymExpr):
        return True
    return isinstance(value, tuple) and any(has_symbols(v) for v in value)


__all__ = [
    "FRAMEWORKS",
    "RUNNERS",
    "OpaqueOpError",
    "check_layout",
    "check_target",
    "describe",
    "has_symbols",
    "input_ref",
    "is_opaque",
    "literal",
    "opaque_attrs",
    "resolve_symbols",
    "result_type",
    "unescape",
]
