"""What the ONNX converters share with the ONNX frontend: the limits and errors they use, the
ONNX dtypes, the provenance of a node, and :class:`ConvertContext`, what a converter sees.

``onnx_ops`` registers its converters and imports what it needs from here; ``onnx_frontend``
imports ``onnx_ops`` to convert nodes and builds a :class:`ConvertContext` for each. Keeping
these here, not in the frontend, means the converters never import the frontend back.
Nothing here imports onnx at module level.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from compiler.errors import PasslensError
from compiler.frontend.locations import source_location
from compiler.ir.nodes import Block, Call, Constant, Expr, TupleGetItem
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import Dim
from compiler.ir.types import DType, TensorType

if TYPE_CHECKING:
    from compiler.ir.nodes import Function

MAX_RANK = 64
"""Converters that make one IR node per axis refuse ranks above this (a corrupt model)."""

MAX_IMPORT_ELEMENTS = 1 << 20
"""Converters that compute a constant at import time (EyeLike, Range) do so up to this size."""


class Unsupported(Exception):
    """Raised by a converter: this node uses a form passlens does not convert."""


class ConversionError(PasslensError):
    """Raised by a converter: this node is invalid (the message says why)."""


class _EmptyOptional:
    """The value of an ONNX optional known at import time to hold nothing (see ``EMPTY``)."""

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY = _EmptyOptional()
"""An ONNX optional value that is empty, known at import time (``Optional`` without an input,
an optional graph input imported as absent). A present optional is its element itself (a
tensor, or a sequence: an IR tuple), so only the optional ops (``onnx_ops/sequence.py``) see
this marker; any other converter given it reports the node as unsupported."""


# ----- dtypes and tensors -----------------------------------------------------------------

DTYPES: dict[int, DType] = {
    1: DType.float32,  # FLOAT
    2: DType.uint8,
    3: DType.int8,
    5: DType.int16,
    6: DType.int32,
    7: DType.int64,
    9: DType.bool,
    10: DType.float16,
    11: DType.float64,
    16: DType.bfloat16,
    4: DType.uint16,
    12: DType.uint32,
    13: DType.uint64,
    17: DType.float8e4m3fn,
    18: DType.float8e4m3fnuz,
    19: DType.float8e5m2,
    20: DType.float8e5m2fnuz,
    21: DType.uint4,
    22: DType.int4,
    23: DType.float4e2m1,
    24: DType.float8e8m0,
    25: DType.uint2,
    26: DType.int2,
}
"""The IR dtype of each ONNX element type the IR has (the number in a TensorProto)."""

ONNX_DTYPE = {v: k for k, v in DTYPES.items()}
"""The ONNX element type of each IR dtype (what ``to_onnx`` writes)."""


def onnx_type_name(elem_type: int) -> str:
    """``FLOAT``, ``INT64``, ... for an ONNX element type number."""
    import onnx

    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"element type {elem_type}"


def dtype_of(elem_type: int) -> DType:
    """The IR dtype of an ONNX element type; Unsupported when the IR has none."""
    try:
        return DTYPES[elem_type]
    except KeyError:
        raise Unsupported(f"tensors of type {onnx_type_name(elem_type)}") from None


def tensor_value(t) -> np.ndarray:
    """The values of a TensorProto as a numpy array of an IR dtype (checked before reading)."""
    from onnx import numpy_helper

    dtype = dtype_of(t.data_type)
    if t.data_location == 1:  # EXTERNAL, not loaded
        raise ConversionError(f"tensor {t.name!r} keeps its data in an external file not loaded")
    if any(d < 0 for d in t.dims):
        raise ConversionError(f"tensor {t.name!r} has a negative dim {list(t.dims)}")
    numel = int(np.prod(t.dims, dtype=object)) if len(t.dims) else 1
    if dtype.bits < 8 and dtype is not DType.bool:  # int4, float4, int2, ...: packed
        numel = -(-numel * dtype.bits // 8)
    if t.HasField("raw_data"):
        stored = len(t.raw_data) // max(dtype.itemsize, 1)
    else:
        field_name = {
            DType.float32: "float_data",
            DType.float64: "double_data",
            DType.int64: "int64_data",
            DType.uint32: "uint64_data",
            DType.uint64: "uint64_data",
        }.get(dtype, "int32_data")
        stored = len(getattr(t, field_name))
    if stored != numel:
        raise ConversionError(
            f"tensor {t.name!r} of shape {list(t.dims)} needs {numel} values but holds {stored}"
        )
    try:
        arr = numpy_helper.to_array(t)
    except Exception as e:
        raise ConversionError(f"tensor {t.name!r} cannot be read: {e}") from None
    if arr.dtype != dtype.numpy:
        arr = arr.astype(dtype.numpy)
    return arr


# ----- provenance --------------------------------------------------------------------------


def module_path_of(node) -> str | None:
    """The torch module path a node came from: the dynamo exporter's ``name_scopes``
    metadata, else a TorchScript-exporter node name (``/layer1/layer1.0/conv1/Conv`` ->
    ``layer1.0.conv1``)."""
    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            # ['', 'layer1', 'layer1.0', 'conv1', 'convolution']: modules, then the FX node
            scopes = re.findall(r"'([^']*)'", prop.value)[:-1]
            path = _join_scopes([s for s in scopes if s])
            return path or None
    name = node.name
    if not name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p]
    if len(parts) < 2:
        return None
    return _join_scopes(parts[:-1]) or None


def _join_scopes(scopes: Sequence[str]) -> str:
    """Scope names to a dotted path; a scope naming a child of the previous one by its full
    name (``layer1`` then ``layer1.0``) replaces it."""
    path = ""
    last = ""
    for s in scopes:
        if last and s.startswith(last + "."):
            path = path[: len(path) - len(last)] + s
        else:
            path = f"{path}.{s}" if path else s
        last = s
    return path


def location_of(node) -> str | None:
    """``file:line`` of the user's code that made a node (the dynamo exporter's stack trace
    metadata), skipping frames inside installed packages."""
    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.stack_trace":
            frames = re.findall(r'File "([^"]+)", line (\d+)', prop.value)
            user = [f for f in frames if "site-packages" not in f[0]]
            if user or frames:
                file, line = (user or frames)[-1]
                return source_location(file, line)
    return None


def provenance_of(node) -> Provenance:
    """Provenance of the IR nodes made from an ONNX node."""
    return Provenance(
        framework="onnx",
        module_path=module_path_of(node),
        source_op=node.op_type,
        source_node=node.name or None,
        location=location_of(node),
    )


# ----- what a converter sees -------------------------------------------------------------


@dataclass
class Scope:
    """ONNX names visible in a graph: its own values, then its enclosing graphs'."""

    values: dict[str, Any] = field(default_factory=dict)
    parent: Scope | None = None

    def lookup(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        return None

    def bound_ids(self) -> set[int]:
        """ids of every expression visible from here (bound outside a branch built here)."""
        out: set[int] = set()
        scope: Scope | None = self
        while scope is not None:
            out.update(id(v) for v in scope.values.values() if isinstance(v, Expr))
            scope = scope.parent
        return out


class Importing(Protocol):
    """The import as a converter reaches it (``onnx_frontend.Importer`` is one; the frontend
    imports this module, so the annotations here name this protocol): the model's opset and an
    op's version in it, the symbolic shape values met so far, the forms noted as unsupported,
    and the calls that import a subgraph (its initializers, nodes and outputs, a branch) or add
    a function (a loop body) to the module."""

    opset: int
    shape_memo: dict
    unsupported: dict[str, list[str]]

    def op_version(self, op_type: str) -> int: ...

    def add_function(self, hint: str, fn: Function) -> str: ...

    def initializers(self, graph, scope: Scope, prefix: str = "") -> None: ...

    def nodes(self, graph, scope: Scope, prefix: str = "") -> None: ...

    def graph_outputs(self, graph, scope: Scope, prefix: str) -> list: ...

    def branch(self, graph, outer: Scope, prefix: str) -> Block: ...


class ConvertContext:
    """What a converter sees: the node, its inputs as IR expressions, its attributes, and
    helpers that give every IR node it makes the node's provenance."""

    def __init__(self, importer: Importing, node, label: str, inputs: list, scope: Scope):
        self.importer = importer
        self.node = node
        self.label = label
        self.inputs = inputs
        self.scope = scope
        self.prov = provenance_of(node)
        self.opset = importer.opset
        self.version = importer.op_version(node.op_type)
        self.attrs = {a.name: a for a in node.attribute}

    # ----- inputs ---------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        """Number of inputs given (trailing missing ones dropped)."""
        n = len(self.inputs)
        while n and self.inputs[n - 1] is None:
            n -= 1
        return n

    def has(self, i: int) -> bool:
        """Whether optional input ``i`` is given."""
        return i < len(self.inputs) and self.inputs[i] is not None

    def input(self, i: int) -> Expr:
        """Input ``i`` (an error when it is missing)."""
        if not self.has(i):
            raise ConversionError(f"input {i} is required")
        if self.inputs[i] is EMPTY:
            raise Unsupported(f"an empty optional as input {i}")
        return self.inputs[i]

    def const(self, i: int) -> np.ndarray | None:
        """The value of input ``i`` when it is an initializer or a Constant node, else None."""
        if not self.has(i):
            return None
        e = self.inputs[i]
        return e.data if isinstance(e, Constant) else None

    def dims(self, i: int, symbolic: bool = True) -> list[Dim] | None:
        """The value of input ``i`` in dims when it is a shape computation that reads a
        symbolic dim and whose result is known (``Shape`` of a ``[batch, seq]`` value, pieces
        of it, sums ...), a 0-d value as one dim; None otherwise, also for one computed from
        static shapes alone (unless ``symbolic`` is false), which dynamic-to-static folds (see
        compiler.frontend.shape_values)."""
        from compiler.frontend.shape_values import (
            depends_on_symbolic_dims,
            dims_of,
            symbolic_value,
        )

        if not self.has(i):
            return None
        e, memo = self.inputs[i], self.importer.shape_memo
        if symbolic and not depends_on_symbolic_dims(e, memo):  # dynamic-to-static folds it
            return None
        return dims_of(symbolic_value(e, memo))

    def reads_symbolic_dims(self, *inputs: int) -> bool:
        """Whether any of these inputs is computed from a symbolic dim."""
        from compiler.frontend.shape_values import depends_on_symbolic_dims

        memo = self.importer.shape_memo
        return any(self.has(i) and depends_on_symbolic_dims(self.inputs[i], memo) for i in inputs)

    def const_ints(self, i: int, what: str) -> list[int] | None:
        """Input ``i`` as a list of ints (None when missing); Unsupported when computed."""
        if not self.has(i):
            return None
        value = self.const(i)
        if value is None:
            raise Unsupported(f"{self.node.op_type} with a computed {what} input")
        if not np.issubdtype(value.dtype, np.integer):
            raise ConversionError(f"{what} must be integers, got {value.dtype}")
        return [int(v) for v in value.reshape(-1)]

    def ty(self, i: int) -> TensorType:
        """The tensor type of input ``i``."""
        t = self.input(i).ty
        if not isinstance(t, TensorType):
            raise ConversionError(f"input {i} is not a tensor")
        return t

    def rank(self, i: int) -> int:
        """The rank of input ``i``; Unsupported when it is unknown (or absurd)."""
        t = self.ty(i)
        if t.shape is None:
            raise Unsupported(f"{self.node.op_type} on a value of unknown rank")
        if len(t.shape) > MAX_RANK:
            raise ConversionError(f"input {i} has rank {len(t.shape)}, more than {MAX_RANK}")
        return len(t.shape)

    # ----- attributes -------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        """The value of an attribute (strings decoded), or ``default`` when absent."""
        from onnx import helper

        a = self.attrs.get(name)
        if a is None:
            return default
        if a.type == 0:  # UNDEFINED: a reference to a function attribute
            raise Unsupported(f"{self.node.op_type} attribute {name} referring to a function")
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            return [v.decode("utf-8", "replace") for v in value]
        return value

    # ----- building ---------------------------------------------------------------------
    def call(self, op: str, *args: Expr, **attrs) -> Call:
        """A call of an IR op with this node's provenance."""
        return Call(op, args, attrs, prov=self.prov)

    def constant(self, value: Any, dtype: DType | str | np.dtype) -> Constant:
        """An unnamed constant of ``dtype`` with this node's provenance."""
        dt = DType.of(dtype).numpy if not isinstance(dtype, np.dtype) else dtype
        return Constant(np.asarray(value).astype(dt), prov=self.prov)

    def like(self, value: Any, x: Expr) -> Constant:
        """A scalar constant of the dtype of ``x``."""
        return self.constant(value, x.ty.dtype)

    def tuple_item(self, value: Expr, index: int) -> TupleGetItem:
        """Field ``index`` of a tuple value, with this node's provenance."""
        return TupleGetItem(value, index, prov=self.prov)

    def subgraph(self, name: str) -> Block:
        """The graph attribute ``name`` converted as an If branch (its outputs a Tuple when
        there are several)."""
        a = self.attrs.get(name)
        if a is None or a.type != 5:
            raise ConversionError(f"attribute {name} must be a graph")
        return self.importer.branch(a.g, self.scope, f"{self.label}/{name}:")
