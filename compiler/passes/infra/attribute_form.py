"""The attribute form of an op call whose shape, pads or axes come as constant tensors
(``reshape(x, const([2, 3]))`` -> ``reshape(x, shape=[2, 3])``): the form with a static result
type. dynamic-to-static rewrites to it; fold-constant reads the result type it gives to size a
folded value before computing it."""

from __future__ import annotations

import numpy as np

from compiler.ir.nodes import Call, Constant, IRError
from compiler.ir.op_registry import get_op
from compiler.passes.infra.manager import PassError

# For each op, which tensor inputs have an attribute form (input name -> attribute name).
# Entries for inputs an op does not declare are ignored, so the table may name the ONNX-style
# inputs an op gains later.
TENSOR_TO_ATTR: dict[str, dict[str, str]] = {
    "reshape": {"shape": "shape"},
    "pad": {"pads": "pads"},
    "squeeze": {"axes": "axes"},
    "unsqueeze": {"axes": "axes"},
    "broadcast_to": {"shape": "shape"},
    "expand": {"shape": "shape"},
    "tile": {"repeats": "repeats"},
    "strided_slice": {"begin": "begin", "end": "end", "axes": "axes", "strides": "strides"},
}


def _input_names(op: str) -> list[str]:
    return [name.strip("?*") for name in get_op(op).inputs]


def _attr_value(kind: str, data: np.ndarray):
    values = [int(v) for v in data.reshape(-1)]
    if kind in ("int", "dim"):
        if len(values) != 1:
            raise ValueError(f"expected one value, got {values}")
        return values[0]
    return values


def attribute_form(node: Call) -> Call | None:
    """``node`` with its constant shape/pads/axes inputs turned into attributes, or None."""
    table = TENSOR_TO_ATTR.get(node.op)
    if not table or len(node.args) < 2:
        return None
    names = _input_names(node.op)
    moved = {}
    for i, arg in enumerate(node.args[1:], start=1):
        name = names[min(i, len(names) - 1)]
        if name not in table or not isinstance(arg, Constant):
            return None  # only when every input after the data becomes an attribute
        kind = get_op(node.op).attrs[table[name]].kind
        moved[table[name]] = _attr_value(kind, arg.data)
    try:
        return Call(node.op, node.args[:1], node.attrs.with_(**moved), name=node.name)
    except IRError as e:
        raise PassError(f"the attribute form of {node.op}: {e}", node) from None


__all__ = ["TENSOR_TO_ATTR", "attribute_form"]
