"""``from_onnx``: an ONNX model (path, bytes or ModelProto) -> IR Module.

What happens, in order, each step ending in a :class:`FrontendError` that says what and where:

1. load: a path is read (never written), bytes are parsed, a ModelProto is used as given (never
   modified). A truncated or corrupt file is reported as such.
2. opset: the default-domain opset must be one passlens imports (1 up to the newest the
   installed onnx knows; 13-21 is what the node-test coverage claims). Each converter says
   which op versions it implements (``min_version``, ``max_version``), so an op version of an
   old (or new) opset whose semantics differ is reported as unsupported, not converted.
3. operators: every node (subgraphs included) whose op ONNX does not know, or passlens cannot
   convert (no converter, an op version or attribute the converter does not handle), is listed
   at once with its node name in an :class:`UnsupportedOperatorError`.
4. ``onnx.checker`` on the model; its complaint is reported with a hint when a node reads a
   name nothing defines (a missing initializer).
5. conversion, node by node (converters in :mod:`compiler.frontend.onnx_ops`, each given a
   :class:`~compiler.frontend.onnx_context.ConvertContext`): initializers become named
   Constants (their ONNX names), Constant nodes unnamed constants, graph inputs parameters
   whose ``dim_param`` dims are symbolic dims of those names, ``If`` an IR If whose branches
   read outer values directly. An ONNX sequence is an IR tuple of its tensors and an optional
   its element, or the ``EMPTY`` marker, so their lengths and presence must be known at import
   time: a sequence or optional graph input takes its length or presence from
   ``example_inputs`` (see :func:`from_onnx`). Every IR node gets the provenance of its ONNX node
   (framework ``onnx``, node name, op type, and the torch module path when the node name or the
   dynamo exporter's metadata carries one), and the IR node producing an ONNX value gets that
   value's name as its name hint. Problems found while converting (an op form that needs a
   constant but gets a computed value, ...) are collected and reported together.

Types of the IR come from the IR's own inference, not from the ONNX value_info annotations.
"""

from __future__ import annotations

import os
import re
from typing import Any

from compiler.frontend.errors import FrontendError, UnsupportedOperatorError
from compiler.frontend.onnx_context import (
    EMPTY,
    ConversionError,
    ConvertContext,
    Scope,
    Unsupported,
    dtype_of,
    tensor_value,
)
from compiler.ir.nodes import Block, Constant, Expr, Function, IRError, Module, Var
from compiler.ir.nodes import Tuple as IRTuple
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import ANY, Dim, sym
from compiler.ir.types import TensorType, TupleType, Type

MIN_OPSET = 1
"""The oldest default-domain opset imported. Which op versions of an opset convert is each
converter's own ``min_version`` (see compiler.frontend.onnx_ops.registry)."""

CLAIMED_OPSETS = range(13, 22)
"""Opsets the coverage figures are claimed for (bench/onnx_coverage.py)."""

_DEFAULT_DOMAINS = ("", "ai.onnx")


class OnnxImportError(FrontendError):
    """A model that is not valid ONNX, or that passlens cannot read (opset, dtype, file)."""


class UnsupportedOnnxFeature(OnnxImportError):
    """A valid model that uses something passlens does not support (an opset, a dtype)."""


# ----- names, dims, provenance ------------------------------------------------------------


def _identifier(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    if not name or not (name[0].isalpha() or name[0] == "_"):
        name = "d_" + name
    return name


def dim_of(d, symbols: dict[str, Dim]) -> Dim:
    """An ONNX TensorShapeProto.Dimension as a dim: int, named symbol or ANY."""
    kind = d.WhichOneof("value")
    if kind == "dim_value":
        if d.dim_value < 0:
            raise ConversionError(f"negative dimension {d.dim_value}")
        return int(d.dim_value)
    if kind == "dim_param" and d.dim_param:
        return symbols.setdefault(d.dim_param, sym(_identifier(d.dim_param)))
    return ANY


def _initializer_provenance(name: str) -> Provenance:
    module = name.rsplit(".", 1)[0] if "." in name and "/" not in name else None
    return Provenance(
        framework="onnx", module_path=module, source_op="initializer", source_node=name
    )


# ----- loading and checking ---------------------------------------------------------------


def load_model(model: Any):
    """``model`` (path, bytes or ModelProto) as a ModelProto; a file is only read."""
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        _check_text(model, "the given ModelProto")
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        data, where = bytes(model), f"the given {len(model)} bytes"
        base_dir = None
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        where = path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise OnnxImportError(f"cannot read ONNX file {path}: {e.strerror or e}") from None
        base_dir = os.path.dirname(os.path.abspath(path))
    else:
        raise OnnxImportError(
            f"from_onnx takes a path, bytes or an onnx.ModelProto, got {type(model).__name__}"
        )
    if not data:
        raise OnnxImportError(f"{where} is empty, not an ONNX model")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise OnnxImportError(
            f"{where} is not a valid ONNX model (truncated or corrupt protobuf: {e})"
        ) from None
    if not proto.HasField("graph"):
        raise OnnxImportError(f"{where} holds no graph: not an ONNX model, or a corrupt one")
    _check_text(proto, where)
    if base_dir is not None and _uses_external_data(proto.graph):
        from onnx.external_data_helper import load_external_data_for_model

        try:
            load_external_data_for_model(proto, base_dir)
        except Exception as e:
            raise OnnxImportError(f"cannot load the external data of {where}: {e}") from None
    return proto


def _check_text(model, where: str) -> None:
    found = _bad_text(model.graph)
    if found is None and any(not isinstance(o.domain, str) for o in model.opset_import):
        found = "an opset_import domain"
    if found:
        raise OnnxImportError(f"{where} is corrupt: {found} is not valid UTF-8 text")


def _bad_text(graph, where: str = "graph") -> str | None:
    """Where a name of the graph is not text (protobuf hands undecodable strings over as
    bytes), or None."""

    def bad(value) -> bool:
        return not isinstance(value, str)

    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        if bad(vi.name):
            return f"a value name of {where}"
        t = vi.type.tensor_type
        if any(bad(d.dim_param) for d in t.shape.dim):
            return f"a dim_param of {vi.name} in {where}"
    if any(bad(t.name) for t in graph.initializer):
        return f"an initializer name of {where}"
    for i, node in enumerate(graph.node):
        fields = [node.op_type, node.name, node.domain, *node.input, *node.output]
        fields += [a.name for a in node.attribute]
        if any(bad(f) for f in fields):
            return f"node #{i} of {where}"
        for a in node.attribute:
            for g in [a.g] if a.type == 5 else list(a.graphs) if a.type == 10 else []:
                found = _bad_text(g, f"{a.name} of node #{i}")
                if found:
                    return found
    return None


def _uses_external_data(graph) -> bool:
    return any(t.data_location == 1 for t in graph.initializer)


def default_opset(model) -> int:
    """The model's ai.onnx opset version (OnnxImportError if it declares none or a bad one)."""
    import onnx

    versions = [o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS]
    if not versions:
        if model.graph.node and all(n.domain not in _DEFAULT_DOMAINS for n in model.graph.node):
            # only ops of other domains (ai.onnx.ml, training, ...): none has a converter
            from compiler.frontend.onnx_ops import NOT_CONVERTED

            ops: dict[str, list[str]] = {}
            for node, label in _iter_nodes(model.graph):
                op = f"{node.domain}.{node.op_type}"
                key = f"{op} ({NOT_CONVERTED.get(op, f'domain {node.domain}')})"
                ops.setdefault(key, []).append(label)
            raise UnsupportedOperatorError(ops, framework="onnx")
        raise OnnxImportError("the model imports no ai.onnx opset (opset_import has none)")
    if len(set(versions)) > 1:
        raise OnnxImportError(f"the model imports several ai.onnx opsets: {versions}")
    version = versions[0]
    newest = onnx.defs.onnx_opset_version()
    if version > newest:
        raise OnnxImportError(
            f"the model's ai.onnx opset {version} is newer than any onnx "
            f"{onnx.__version__} knows (up to {newest})"
        )
    if version < MIN_OPSET:
        raise UnsupportedOnnxFeature(
            f"the model's ai.onnx opset {version} is older than passlens imports "
            f"({MIN_OPSET} to {newest}); convert it with "
            f"onnx.version_converter.convert_version(model, 13)"
        )
    return version


def node_label(node, index: int, prefix: str = "") -> str:
    """How a node is named in messages: its name, else ``#index (OpType)``."""
    label = node.name or f"#{index} ({node.op_type})"
    return prefix + label


def _iter_nodes(graph, prefix: str = ""):
    """(node, label) for every node of a graph and its subgraphs, in order."""
    for i, node in enumerate(graph.node):
        label = node_label(node, i, prefix)
        yield node, label
        for attr in node.attribute:
            if attr.type == 5:  # GRAPH
                yield from _iter_nodes(attr.g, f"{label}/{attr.name}:")
            elif attr.type == 10:  # GRAPHS
                for k, g in enumerate(attr.graphs):
                    yield from _iter_nodes(g, f"{label}/{attr.name}[{k}]:")


def converter_key(node) -> str:
    """The key of a node's converter: its op type, ``domain.op_type`` outside ai.onnx
    (``ai.onnx.preview.FlexAttention``)."""
    if node.domain in _DEFAULT_DOMAINS:
        return node.op_type
    return f"{node.domain}.{node.op_type}"


def node_problem(node, opset: int, other_opsets: dict, local_functions: set):
    """Why passlens cannot convert an ONNX node, and whether it may still be kept as an opaque
    op that onnxruntime runs: ``(reason, opaque_ok)``, or None when a converter takes it."""
    import onnx

    from compiler.frontend.onnx_ops import (
        CONVERTERS,
        NOT_CONVERTED,
        converter_for,
        oldest_version,
        registry,
    )

    domain = node.domain
    if domain not in _DEFAULT_DOMAINS:
        if (domain, node.op_type) in local_functions:
            return f"{domain}.{node.op_type} (a model-local function)", False
        if domain not in other_opsets:
            return f"{domain}.{node.op_type} (domain {domain!r} is not in opset_import)", False
        if (conv := CONVERTERS.get(f"{domain}.{node.op_type}")) is None:
            why = NOT_CONVERTED.get(f"{domain}.{node.op_type}", f"domain {domain}")
            return f"{domain}.{node.op_type} ({why})", True
        if other_opsets[domain] < conv.min_version:
            return f"{domain}.{node.op_type} ({domain} opset {other_opsets[domain]})", True
        if extra := sorted(a.name for a in node.attribute if a.name not in conv.attrs):
            return f"{domain}.{node.op_type} (attribute {', '.join(extra)})", True
        return None
    if not onnx.defs.has(node.op_type, ""):
        return f"{node.op_type} (not an ONNX operator)", False
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except onnx.defs.SchemaError:
        schema = None
    if schema is None:
        return f"{node.op_type} (not in opset {opset})", False
    conv = converter_for(node.op_type, schema.since_version)
    if conv is None and node.op_type not in CONVERTERS:
        why = NOT_CONVERTED.get(node.op_type)
        # random values: a check would compare two different draws (a false finding)
        opaque_ok = why not in (registry.RANDOM_VALUES, registry.NO_STRING_TYPE)
        return (f"{node.op_type} ({why})" if why else node.op_type), opaque_ok
    if conv is None:
        v, oldest = schema.since_version, oldest_version(node.op_type)
        return (
            f"{node.op_type}-{v} (the version of opset {opset}; passlens "
            f"converts {node.op_type} from version {oldest})"
        ), True
    extra = sorted(a.name for a in node.attribute if a.name not in conv.attrs)
    if extra:
        return f"{node.op_type} (attribute {', '.join(extra)})", True
    return None


def unsupported_operators(model, opset: int, strict: bool = True) -> dict[str, list[str]]:
    """Every op passlens cannot import, with the nodes using it (subgraphs included); with
    ``strict=False`` only those that cannot be kept as opaque ops either."""
    found: dict[str, list[str]] = {}
    other_opsets = {o.domain: o.version for o in model.opset_import}
    local_functions = {(f.domain, f.name) for f in model.functions}
    for node, label in _iter_nodes(model.graph):
        problem = node_problem(node, opset, other_opsets, local_functions)
        if problem is None or (problem[1] and not strict):
            continue
        found.setdefault(problem[0], []).append(label)
    return found


def _undefined_names(graph, outer: frozenset = frozenset(), prefix: str = "") -> list[str]:
    """Messages for node inputs that nothing defines (a missing initializer, a typo)."""
    known = set(outer) | {i.name for i in graph.input} | {t.name for t in graph.initializer}
    known |= {t.values.name for t in graph.sparse_initializer}
    problems = []
    for i, node in enumerate(graph.node):
        label = node_label(node, i, prefix)
        for name in node.input:
            if name and name not in known:
                problems.append(
                    f"node {label} ({node.op_type}) reads {name!r}, which no node, "
                    "graph input or initializer defines (a missing initializer?)"
                )
        for attr in node.attribute:
            subs = [attr.g] if attr.type == 5 else list(attr.graphs) if attr.type == 10 else []
            for g in subs:
                problems += _undefined_names(g, frozenset(known), f"{label}/{attr.name}:")
        known.update(o for o in node.output if o)
    for out in graph.output:
        if out.name not in known:
            problems.append(f"graph output {out.name!r} is not defined by any node or input")
    return problems


def checkable(model):
    """The model as onnx.checker wants it: the checker requires a shape on every graph output,
    and an unknown-rank output (an If whose branches differ in rank) has none. Such outputs are
    valid for onnxruntime and Netron; they are checked in a copy where they have an empty one."""
    outputs = model.graph.output
    if all(o.type.tensor_type.HasField("shape") for o in outputs if o.type.HasField("tensor_type")):
        return model
    copy = type(model)()
    copy.CopyFrom(model)
    for o in copy.graph.output:
        if o.type.HasField("tensor_type") and not o.type.tensor_type.HasField("shape"):
            o.type.tensor_type.shape.SetInParent()
    return copy


def check_model(model) -> None:
    """``onnx.checker.check_model`` with its complaint as an OnnxImportError."""
    import onnx

    problems = _undefined_names(model.graph)
    if problems:
        raise OnnxImportError("the graph is not valid: " + "; ".join(problems[:10]))
    try:
        if model.ByteSize() > 2**31 - 1:
            raise OnnxImportError("the model is over 2 GB: save it with external data")
        onnx.checker.check_model(checkable(model))
    except (onnx.checker.ValidationError, onnx.onnx_cpp2py_export.checker.ValidationError) as e:
        first = str(e).strip().splitlines()
        raise OnnxImportError(
            "the model fails onnx.checker: "
            + (first[0] if first else type(e).__name__)
            + ("\n" + "\n".join(first[1:6]) if len(first) > 1 else "")
        ) from None
    except OnnxImportError:
        raise
    except Exception as e:  # the C++ checker raises other types for malformed protos
        raise OnnxImportError(f"the model fails onnx.checker: {type(e).__name__}: {e}") from None


# ----- conversion -------------------------------------------------------------------------

RANDOM_WHEN_REFUSED = frozenset({"Dropout"})
"""Ops whose converter refuses exactly their random forms (Dropout in training mode): such a
node is never kept opaque, since a check would compare two different random draws."""

POISON = object()
"""The value of an ONNX name whose producing node could not be converted."""

_NOT_GIVEN = object()


class Importer:
    """Converts an ONNX graph (and its subgraphs) to IR expressions."""

    def __init__(
        self,
        opset: int,
        example_inputs: dict | None = None,
        model=None,
        strict: bool = True,
    ):
        self.opset = opset
        self.model = model
        self.strict = strict
        self._value_types: dict | None = None  # ONNX value name -> TypeProto (for opaque ops)
        self.example_inputs = example_inputs or {}
        self.empty_inputs: set[str] = set()  # optional inputs imported as absent
        self.symbols: dict[str, Dim] = {}
        self.shape_memo: dict = {}  # symbolic values of shape computations, by node
        self.unsupported: dict[str, list[str]] = {}
        self._versions: dict[str, int] = {}
        self.functions: dict[str, Function] = {}  # loop bodies, by name

    def add_function(self, hint: str, fn: Function) -> str:
        """Add a private function (a loop body) to the module; returns its name."""
        from compiler.ir.names import fresh_name

        base = re.sub(r"[^A-Za-z0-9_]+", "_", hint).strip("_")[:48] or "body"
        if base[0].isdigit():
            base = "f_" + base
        name = fresh_name(base, set(self.functions) | {"main"})
        self.functions[name] = fn.with_attrs(private=True)
        return name

    def op_version(self, op_type: str) -> int:
        """The version of ``op_type`` in the model's opset (its schema's since_version)."""
        if op_type not in self._versions:
            import onnx

            try:
                version = onnx.defs.get_schema(op_type, self.opset, "").since_version
            except onnx.defs.SchemaError:
                version = self.opset
            self._versions[op_type] = version
        return self._versions[op_type]

    def note_unsupported(self, what: str, label: str) -> None:
        self.unsupported.setdefault(what, []).append(label)

    def initializers(self, graph, scope: Scope, prefix: str = "") -> None:
        for t in graph.initializer:
            try:
                value = tensor_value(t)
            except Unsupported as e:
                self.note_unsupported(str(e), f"initializer {prefix}{t.name}")
                scope.values[t.name] = POISON
                continue
            except ConversionError as e:
                raise OnnxImportError(f"initializer {prefix}{t.name}: {e}") from None
            scope.values[t.name] = Constant(
                value, name=t.name, prov=_initializer_provenance(t.name)
            )
        if len(graph.sparse_initializer):
            names = [t.values.name for t in graph.sparse_initializer]
            self.note_unsupported("sparse initializers", ", ".join(names))
            for n in names:
                scope.values[n] = POISON

    def param(self, value_info) -> Var:
        """The parameter of a graph input; a sequence input is a tuple of as many tensors as
        its example (``example_inputs``) has, an optional one its element, or an empty tuple
        when its example is None (its scope value is then ``EMPTY``: see ``main``)."""
        name = value_info.name
        ty = self._input_type(value_info.type, self.example_inputs.get(name, _NOT_GIVEN), name)
        prov = Provenance(framework="onnx", source_op="input", source_node=name)
        if ty is EMPTY:
            self.empty_inputs.add(name)
            ty = TupleType(())
        return Var(name, ty, prov=prov)

    def _input_type(self, t, example, name: str, in_sequence: bool = False) -> Type | object:
        kind = t.WhichOneof("value")
        if kind == "tensor_type":
            dtype = dtype_of(t.tensor_type.elem_type)
            shape = None
            if t.tensor_type.HasField("shape"):
                shape = [dim_of(d, self.symbols) for d in t.tensor_type.shape.dim]
                if in_sequence:  # a dim_param may differ between the elements of a sequence
                    shape = [d if isinstance(d, int) else ANY for d in shape]
            return TensorType(shape, dtype)
        if kind == "sequence_type":
            if example is _NOT_GIVEN:
                raise Unsupported(
                    f"graph input {name!r} is a sequence: passlens needs its length at import "
                    f"time (from_onnx(..., example_inputs={{{name!r}: [...]}}))"
                )
            if not isinstance(example, (list, tuple)):
                raise ConversionError(
                    f"example_inputs[{name!r}] must be a list or tuple (the input is a "
                    f"sequence), got {type(example).__name__}"
                )
            elem = t.sequence_type.elem_type
            return TupleType(self._element_type(elem, e, name) for e in example)
        if kind == "optional_type":
            if example is _NOT_GIVEN:
                raise Unsupported(
                    f"graph input {name!r} is an optional: passlens needs to know at import "
                    f"time whether it holds a value (from_onnx(..., example_inputs={{{name!r}: "
                    "None or a value}))"
                )
            if example is None:
                return EMPTY
            return self._input_type(t.optional_type.elem_type, example, name, in_sequence)
        raise Unsupported(f"graph inputs of {kind or 'unknown'} type")

    def _element_type(self, t, example, name: str) -> Type:
        ty = self._input_type(t, example, name, in_sequence=True)
        if ty is EMPTY or t.WhichOneof("value") != "tensor_type":
            raise Unsupported(f"graph input {name!r}: a sequence of non-tensor values")
        return ty

    def nodes(self, graph, scope: Scope, prefix: str = "") -> None:
        from compiler.frontend.onnx_ops import CONVERTERS, converter_for

        for index, node in enumerate(graph.node):
            label = node_label(node, index, prefix)
            inputs = [scope.lookup(n) if n else None for n in node.input]
            if any(v is POISON for v in inputs):
                for o in node.output:
                    scope.values[o] = POISON
                continue
            missing = [n for n, v in zip(node.input, inputs, strict=True) if n and v is None]
            if missing:
                raise OnnxImportError(
                    f"node {label} ({node.op_type}) reads {missing[0]!r}, which is not defined "
                    "before it (a missing initializer?)"
                )
            if node.domain in _DEFAULT_DOMAINS:  # the converter of the op's version
                conv = converter_for(node.op_type, self.op_version(node.op_type))
            else:
                conv = CONVERTERS.get(converter_key(node))
            keep_opaque = not self.strict and self._problem(node) is not None
            if conv is None and not keep_opaque:
                # found by unsupported_operators first, except in a fuzzed model
                raise OnnxImportError(f"node {label}: no converter for {node.op_type}")
            ctx = ConvertContext(self, node, label, inputs, scope)
            try:
                if keep_opaque:
                    outputs = self.opaque(ctx)
                else:
                    try:
                        result = conv.fn(ctx)
                        outputs = self._outputs(ctx, result)
                    except Unsupported as e:
                        if self.strict or node.op_type in RANDOM_WHEN_REFUSED:
                            raise
                        try:  # a form the converter refuses: kept as it is, if it can be
                            outputs = self.opaque(ctx)
                        except Unsupported as why:
                            reason = f"{e}; cannot be kept as an opaque op: {why}"
                            raise Unsupported(reason) from None
            except Unsupported as e:
                self.note_unsupported(f"{node.op_type} ({e})", label)
                for o in node.output:
                    scope.values[o] = POISON
                continue
            except (ConversionError, IRError) as e:
                raise OnnxImportError(f"node {label} ({node.op_type}): {e}") from None
            except OnnxImportError:
                raise
            except Exception as e:  # a converter bug or a fuzzed model: say where
                raise OnnxImportError(
                    f"node {label} ({node.op_type}) could not be converted: {type(e).__name__}: {e}"
                ) from e
            for name, value in zip(node.output, outputs, strict=True):
                if name:
                    scope.values[name] = value

    def _problem(self, node):
        """What :func:`node_problem` says of a node the model's opsets allow to be opaque."""
        problem = node_problem(
            node,
            self.opset,
            {o.domain: o.version for o in self.model.opset_import} if self.model else {},
            {(f.domain, f.name) for f in self.model.functions} if self.model else set(),
        )
        return problem if problem is not None and problem[1] else None

    def value_types(self) -> dict:
        """ONNX value name -> TypeProto, from the model's annotations and ONNX shape
        inference (not strict: what it cannot infer stays unknown); computed once."""
        if self._value_types is None:
            import onnx

            model = self.model
            try:
                model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
            except Exception:  # a model shape inference cannot read: its annotations only
                model = self.model
            types: dict = {}

            def collect(graph) -> None:
                for vi in [*graph.input, *graph.value_info, *graph.output]:
                    if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                        types.setdefault(vi.name, vi.type)
                for n in graph.node:
                    for a in n.attribute:
                        for g in [a.g] if a.type == 5 else list(a.graphs) if a.type == 10 else []:
                            collect(g)

            if model is not None:
                collect(model.graph)
            self._value_types = types
        return self._value_types

    def opaque(self, ctx: ConvertContext) -> list:
        """The node as an ``opaque`` call that onnxruntime runs, typed by ONNX shape inference
        (or the model's value_info); Unsupported when it cannot be kept so."""
        from compiler.ir.attrs import TypeInferenceError
        from compiler.ir.nodes import Call, TupleGetItem
        from compiler.opaque.layout import check_target, input_ref, opaque_attrs

        node = ctx.node
        domain = node.domain if node.domain not in _DEFAULT_DOMAINS else "ai.onnx"
        target = f"{domain}::{node.op_type}"
        try:
            check_target("onnx", target)
        except TypeInferenceError as e:
            raise Unsupported(str(e)) from None
        opset = self.opset
        if node.domain not in _DEFAULT_DOMAINS:
            opset = {o.domain: o.version for o in self.model.opset_import}.get(node.domain, 1)
        inputs: list[Expr] = []
        args: list = []
        for name, value in zip(node.input, ctx.inputs, strict=True):
            if not name:
                args.append(None)
                continue
            if not isinstance(value, Expr) or not isinstance(value.ty, TensorType):
                raise Unsupported(f"input {name!r} is not a tensor")
            inputs.append(value)
            args.append(input_ref(len(inputs) - 1))
        kwargs = [(a.name, _attribute_value(a)) for a in node.attribute]
        positions = [i for i, n in enumerate(node.output) if n]
        if not positions:
            raise Unsupported("a node without outputs")
        types = []
        for i in positions:
            proto = self.value_types().get(node.output[i])
            if proto is None:
                raise Unsupported(
                    f"no type for its output {node.output[i]!r}: ONNX shape inference does not "
                    f"know {target} and the model gives no value_info for it"
                )
            t = proto.tensor_type
            shape = None
            if t.HasField("shape"):
                shape = [dim_of(d, self.symbols) for d in t.shape.dim]
            types.append(TensorType(shape, dtype_of(t.elem_type)))
        single = len(node.output) == 1
        ty = types[0] if single else TupleType(types)
        outputs_attr = None if positions == list(range(len(node.output))) else positions
        attrs = opaque_attrs(
            "onnx", target, ty, args, kwargs, opset=opset, outputs=outputs_attr, pure=True
        )
        try:
            call = Call("opaque", inputs, attrs, prov=ctx.prov)
        except IRError as e:
            raise Unsupported(str(e)) from None
        if single:
            return [self._named(call, node.output[0], ctx)]
        call = call.replace(name=node.name or None)
        out: list = [None] * len(node.output)
        for k, i in enumerate(positions):
            out[i] = TupleGetItem(call, k, prov=ctx.prov, name=node.output[i])
        return out

    def _outputs(self, ctx: ConvertContext, result) -> list:
        node = ctx.node
        values = list(result) if isinstance(result, (list, tuple)) else [result]
        wanted = [i for i, n in enumerate(node.output) if n]
        out: list = [None] * len(node.output)
        for i in wanted:
            value = values[i] if i < len(values) else None
            if value is None:
                raise Unsupported(f"output {i} ({node.output[i]!r})")
            if value is EMPTY:
                out[i] = value
                continue
            if not isinstance(value, Expr):
                raise ConversionError(f"converter returned {value!r} for output {i}")
            out[i] = self._named(value, node.output[i], ctx)
        return out

    def _named(self, value: Expr, name: str, ctx: ConvertContext) -> Expr:
        """The value with the ONNX value's name as its hint (when this node made it)."""
        if isinstance(value, (Var, Constant)) or value.name is not None:
            return value
        if value.prov is not ctx.prov:
            return value  # made by another node (an Identity-like converter passed it on)
        return value.replace(name=name)

    def graph_outputs(self, graph, scope: Scope, prefix: str) -> list:
        outs = []
        for o in graph.output:
            v = scope.lookup(o.name)
            if v is None:
                raise OnnxImportError(f"{prefix}graph output {o.name!r} is not defined")
            outs.append(v)
        return outs

    def branch(self, graph, outer: Scope, prefix: str) -> Block:
        if len(graph.input):
            raise ConversionError(f"{prefix} a branch graph takes no inputs")
        scope = Scope(parent=outer)
        self.initializers(graph, scope, prefix)
        self.nodes(graph, scope, prefix)
        outs = self.graph_outputs(graph, scope, prefix)
        if any(v is POISON for v in outs):
            raise Unsupported("a branch with unsupported nodes")
        if any(v is EMPTY for v in outs):
            raise Unsupported(
                "a branch giving an empty optional (its presence would be known only at run time)"
            )
        if not outs:
            raise ConversionError(f"{prefix} a branch graph has no outputs")
        result = outs[0] if len(outs) == 1 else IRTuple(outs)
        return Block.of(result, _BoundOutside(outer))

    def main(self, graph) -> Function:
        scope = Scope()
        self.initializers(graph, scope)
        params = []
        for vi in graph.input:
            if vi.name in scope.values:
                continue  # an initializer listed as an input (IR version < 4): a weight
            try:
                var = self.param(vi)
            except Unsupported as e:
                self.note_unsupported(str(e), f"graph input {vi.name}")
                scope.values[vi.name] = POISON
                continue
            except (ConversionError, ValueError, TypeError) as e:
                raise OnnxImportError(f"graph input {vi.name!r}: {e}") from None
            scope.values[vi.name] = EMPTY if vi.name in self.empty_inputs else var
            params.append(var)
        unknown = sorted(set(self.example_inputs) - {vi.name for vi in graph.input})
        if unknown:
            raise OnnxImportError(f"example_inputs names no graph input: {', '.join(unknown)}")
        self.nodes(graph, scope)
        outs = self.graph_outputs(graph, scope, "")
        if self.unsupported:
            raise UnsupportedOperatorError(self.unsupported, framework="onnx")
        if not outs:
            raise OnnxImportError("the graph has no outputs")
        # an empty optional output is an empty tuple; a single sequence output stays one
        # output (a 1-tuple holding its tuple), never its elements as several outputs
        outs = [IRTuple([]) if v is EMPTY else v for v in outs]
        single = len(outs) == 1 and not isinstance(outs[0].ty, TupleType)
        output = outs[0] if single else IRTuple(outs)
        return Function.from_output(params, output, {"num_input": len(params)})


_ATTRIBUTE_KINDS = {1: "float", 2: "int", 3: "string", 6: "floats", 7: "ints", 8: "strings"}


def _attribute_value(a) -> Any:
    """An ONNX attribute's value as an opaque op keeps it (numbers, strings, lists of them);
    Unsupported for a tensor, graph or type attribute."""
    from compiler.opaque.layout import literal

    if a.ref_attr_name:
        raise Unsupported(f"attribute {a.name} refers to a function attribute")
    kind = _ATTRIBUTE_KINDS.get(a.type)
    if kind is None:
        raise Unsupported(f"attribute {a.name} is not a number, string or list of them")

    def text(b: bytes) -> str:
        try:
            return literal(b.decode("utf-8"))
        except UnicodeDecodeError:
            raise Unsupported(f"attribute {a.name} is not UTF-8 text") from None

    if kind == "float":
        return float(a.f)
    if kind == "int":
        return int(a.i)
    if kind == "string":
        return text(a.s)
    if kind == "floats":
        return tuple(float(v) for v in a.floats)
    if kind == "ints":
        return tuple(int(v) for v in a.ints)
    return tuple(text(v) for v in a.strings)


class _BoundOutside:
    """The expressions of the enclosing scopes, for Block.of (an iterable of expressions)."""

    def __init__(self, scope: Scope):
        self.scope = scope

    def __iter__(self):
        scope: Scope | None = self.scope
        while scope is not None:
            yield from (v for v in scope.values.values() if isinstance(v, Expr))
            scope = scope.parent


def from_onnx(
    model: Any, *, check: bool = True, example_inputs: Any = None, strict: bool = False
) -> Module:
    """Import an ONNX model (a path, bytes or an onnx.ModelProto) as a Module with @main.

    ``check=False`` skips onnx.checker (the other checks still run). Raises FrontendError
    (UnsupportedOperatorError for operators passlens cannot convert) saying what and where.

    An operator ONNX knows that passlens does not convert (a contrib op such as
    ``com.microsoft::FusedMatMul``, an op version or attribute no converter takes) becomes an
    ``opaque`` call that onnxruntime runs (compiler/ops/opaque.py), typed by ONNX shape
    inference or the model's value_info; ``strict=True`` refuses such a model instead.

    ``example_inputs`` (a mapping from graph input names to values like the ones the module
    will run on) is read for the sequence and optional graph inputs only, and only for their
    structure: a sequence input becomes a tuple parameter of as many tensors as its example
    has (a list or tuple), an optional input is absent when its example is None (an empty
    tuple parameter) and its element otherwise. The tensors' types come from the model (a
    ``dim_param`` inside a sequence element type is unknown: elements may differ). Run the
    module with tuples (or lists) for those inputs, ``()`` or None for an absent optional;
    a sequence output is a tuple of arrays, an empty optional output an empty tuple.
    """
    proto = load_model(model)
    opset = default_opset(proto)
    unsupported = unsupported_operators(proto, opset, strict=strict)
    unknown = {k: v for k, v in unsupported.items() if "not an ONNX operator" in k}
    if unknown:
        raise UnsupportedOperatorError(unsupported, framework="onnx")
    if check:
        check_model(proto)
    if unsupported:
        raise UnsupportedOperatorError(unsupported, framework="onnx")
    if example_inputs is not None and not hasattr(example_inputs, "keys"):
        raise OnnxImportError("example_inputs must map graph input names to values")
    importer = Importer(
        opset,
        dict(example_inputs) if example_inputs is not None else None,
        model=proto,
        strict=strict,
    )
    try:
        main = importer.main(proto.graph)
    except RecursionError:
        raise OnnxImportError("the graph nests too deeply to import") from None
    return Module({"main": main, **importer.functions})


__all__ = [
    "from_onnx",
    "load_model",
    "check_model",
    "default_opset",
    "unsupported_operators",
    "OnnxImportError",
    "UnsupportedOnnxFeature",
    "ConvertContext",
    "Unsupported",
    "ConversionError",
    "MIN_OPSET",
    "CLAIMED_OPSETS",
]
