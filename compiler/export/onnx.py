"""``to_onnx``: an IR Module -> onnx.ModelProto (ai.onnx opset 17 or newer) that opens in
Netron and runs in onnxruntime.

``main`` becomes the graph: its parameters the graph inputs (symbolic dims as ``dim_param``
with the symbol's name), named Constants initializers under their names (unnamed ones get
``const_N``), every binding one or a few ONNX nodes, an If an ONNX If whose branch graphs read
outer values directly, a call of another function of the module is inlined, and a Tuple output
gives several graph outputs. A symbolic dim used by an op (a reshape target ``[n, 128]``, an
arange bound) is computed from the shape of a graph input that has it.

Each ONNX node is named by the torch module path its IR node came from, the way
torch.onnx.export names them: ``/stages.0/blocks.0/pwconv1/MatMul`` (a module path's numeric
parts stay with the name before them, as torch's scopes do; a node without one is ``/MatMul``;
repeats get ``_1``, ``_2``, ...). Netron and Model Explorer group and search by those
namespaces, and ``from_onnx`` reads the module path back from them. Each node also carries its
IR node's provenance as ``metadata_props`` (``passlens.module``, ``passlens.op``,
``passlens.node``, ``passlens.file``, ``passlens.pass``) and as its doc string, so Netron shows
where it came from. Its outputs are named after the IR node's name hint, else its op.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.frontend.onnx_frontend import checkable
from compiler.ir.names import fresh_name
from compiler.ir.nodes import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Tuple,
    TupleGetItem,
)
from compiler.ir.symbolic import ANY, Dim, SymExpr
from compiler.ir.types import DType, TensorType, TupleType, Type, symbol_bindings

DEFAULT_OPSET = 18
MIN_OPSET = 17

INT64_MAX = 2**63 - 1


class ExportError(FrontendError):
    """A module cannot be written as ONNX; the message names the node and why."""


Lowering = Callable[["Exporter", Call, list], Any]
LOWERINGS: dict[str, Lowering] = {}


def lowers(*ops: str):
    """Register the ONNX lowering of IR ops."""

    def deco(fn: Lowering) -> Lowering:
        for op in ops:
            LOWERINGS[op] = fn
        return fn

    return deco


def _dims_of(ty: Type) -> list | None:
    return None if not isinstance(ty, TensorType) or ty.shape is None else list(ty.shape)


def value_info(name: str, ty: Type):
    """A ValueInfoProto for a tensor type (symbolic dims as dim_param, '?' left unknown)."""
    from onnx import helper

    if not isinstance(ty, TensorType):
        raise ExportError(f"value {name!r} of type {ty} is not a tensor")
    shape = None
    if ty.shape is not None:
        shape = [d if isinstance(d, int) else (str(d) if d is not ANY else None) for d in ty.shape]
    return helper.make_tensor_value_info(name, ONNX_DTYPE[ty.dtype], shape)


def _sequence_info(name: str, ty: Type):
    """A ValueInfoProto of an ONNX sequence for a tuple of tensors of one dtype (what the
    ONNX frontend makes of a sequence); the element shape is the fields' when they agree."""
    from onnx import helper

    fields = ty.fields if isinstance(ty, TupleType) else ()
    if not isinstance(ty, TupleType) or not all(isinstance(f, TensorType) for f in fields):
        raise ExportError(f"value {name!r} of type {ty} is neither a tensor nor a sequence")
    if len({f.dtype for f in fields}) > 1:
        raise ExportError(f"value {name!r} of type {ty}: a sequence holds tensors of one dtype")
    dtype = fields[0].dtype if fields else DType.float32
    elem = value_info(name, fields[0]) if fields and len(set(fields)) == 1 else None
    shape = None
    if elem is not None and elem.type.tensor_type.HasField("shape"):
        shape = [
            d.dim_param or (d.dim_value if d.HasField("dim_value") else None)
            for d in elem.type.tensor_type.shape.dim
        ]
    return helper.make_tensor_sequence_value_info(name, ONNX_DTYPE[dtype], shape)


class Exporter:
    """Lowers one function (and what it calls) to ONNX nodes."""

    def __init__(self, module: Module, opset: int):
        self.module = module
        self.opset = opset
        self.graphs: list[list] = []  # node lists: the main graph, then open If branches
        self.scopes: list[dict[int, Any]] = []  # id(expr) -> ONNX name (or list for tuples)
        self.initializers: list = []
        self.constants: dict[int, str] = {}
        self.used: set[str] = set()
        self.symbol_sources: dict[str, tuple[str, int]] = {}
        self.symbol_values: dict[str, str] = {}
        # per inlined call: the callee's symbols in the caller's dims (``n`` -> ``batch``)
        self.dim_envs: list[dict[str, Dim]] = []
        self.current: Expr | None = None
        self.domains: dict[str, int] = {}  # opsets of other domains (opaque ONNX ops)

    # ----- names ------------------------------------------------------------------------
    def unique(self, hint: str) -> str:
        """A value or node name not used yet, derived from ``hint``."""
        return fresh_name(re.sub(r"\s+", "_", hint.strip()) or "v", self.used)

    def lookup(self, expr: Expr) -> Any:
        if isinstance(expr, Constant):
            return self.constant(expr)
        for scope in reversed(self.scopes):
            if id(expr) in scope:
                return scope[id(expr)]
        raise ExportError(f"{expr!r} is used before it is computed")

    def name(self, expr: Expr) -> str:
        """The ONNX name holding a tensor expression's value."""
        value = self.lookup(expr)
        if isinstance(value, list):
            raise ExportError(f"a tuple {expr!r} is used where a tensor is expected")
        return value

    # ----- building ---------------------------------------------------------------------
    def node(self, op_type: str, inputs: Sequence[str], outputs: int = 1, **attrs) -> Any:
        """Append an ONNX node for the current IR node; returns its output name(s)."""
        from onnx import helper

        ir = self.current
        hint = (ir.name if ir is not None and ir.name else None) or (
            ir.op if isinstance(ir, Call) else op_type
        )
        outs = [self.unique(hint) for _ in range(outputs)]
        scope = node_scope(ir.prov.module_path if ir is not None else None)
        node = helper.make_node(
            op_type,
            list(inputs),
            outs,
            name=fresh_name(f"{scope}/{op_type}", self.used),
            **{k: v for k, v in attrs.items() if v is not None},
        )
        if ir is not None and not ir.prov.is_empty:
            node.doc_string = ir.prov.describe()
            for key, value in ir.prov.items():
                entry = node.metadata_props.add()
                entry.key, entry.value = f"passlens.{key}", value
        self.graphs[-1].append(node)
        return outs[0] if outputs == 1 else outs

    def const(self, value: Any, dtype: DType | str) -> str:
        """An initializer holding ``value`` (small literals made by a lowering)."""
        from onnx import numpy_helper

        arr = np.asarray(value).astype(DType.of(dtype).numpy)
        name = self.unique("const")
        self.initializers.append(numpy_helper.from_array(arr, name))
        return name

    def i64(self, values: Any) -> str:
        """An i64 initializer."""
        return self.const(np.asarray(values, dtype=np.int64), DType.int64)

    def constant(self, c: Constant) -> str:
        """The initializer of an IR Constant (one per Constant object)."""
        from onnx import numpy_helper

        if id(c) not in self.constants:
            name = self.unique(c.name or "const")
            data = c.data
            self.initializers.append(numpy_helper.from_array(np.asarray(data, order="C"), name))
            self.constants[id(c)] = name
        return self.constants[id(c)]

    # ----- symbolic dims ----------------------------------------------------------------
    def symbol(self, name: str) -> str:
        """An i64 [1] tensor holding the value of symbol ``name`` at run time (inside an
        inlined call, a callee's symbol is the caller's dim it stands for)."""
        if self.dim_envs and name in self.dim_envs[-1]:
            env = self.dim_envs.pop()
            try:
                return self.dim(env[name])
            finally:
                self.dim_envs.append(env)
        if name not in self.symbol_values:
            if name not in self.symbol_sources:
                raise ExportError(
                    f"the symbolic dim {name!r} is used by an op but no graph input has it"
                )
            input_name, axis = self.symbol_sources[name]
            saved, self.current = self.current, None
            shape = self.node("Shape", [input_name], start=axis, end=axis + 1)
            self.current = saved
            self.symbol_values[name] = shape
        return self.symbol_values[name]

    def dim(self, d: Dim) -> str:
        """An i64 [1] tensor holding a dim (an int, or an expression of symbols)."""
        if isinstance(d, int):
            return self.i64([d])
        if d is ANY:
            raise ExportError("an op needs the value of an unknown ('?') dim")
        return self._poly(d)

    def _poly(self, e: SymExpr) -> str:
        total = None
        for mono, coeff in e._terms:
            term = self.i64([coeff]) if coeff != 1 or not mono else None
            for atom, power in mono:
                for _ in range(power):
                    v = self._atom(atom)
                    term = v if term is None else self.node("Mul", [term, v])
            total = term if total is None else self.node("Add", [total, term])
        return total if total is not None else self.i64([0])

    def _atom(self, atom: Any) -> str:
        if isinstance(atom, str):
            return self.symbol(atom)
        kind, inner, divisor = atom
        v = self._poly(inner) if isinstance(inner, SymExpr) else self.i64([inner])
        if kind == "floordiv":  # exact for non-negative sizes
            return self.node("Div", [v, self.i64([divisor])])
        return self.node("Mod", [v, self.i64([divisor])])

    def dim_of(self, name: str, ty: Type, axis: int) -> str:
        """An i64 [1] tensor holding dim ``axis`` of a value (from its shape when unknown)."""
        dims = _dims_of(ty)
        d = dims[axis] if dims is not None else ANY
        if d is ANY:
            saved, self.current = self.current, None
            out = self.node("Shape", [name], start=axis, end=axis + 1)
            self.current = saved
            return out
        return self.dim(d)

    def dims(self, dims: Sequence[Dim]) -> str:
        """An i64 [n] tensor of dims (an initializer when they are all ints)."""
        if all(isinstance(d, int) for d in dims):
            return self.i64(list(dims))
        return self.node("Concat", [self.dim(d) for d in dims], axis=0)

    def scalar(self, d: Dim, dtype: DType = DType.int64) -> str:
        """A 0-d tensor holding a dim (or number) in ``dtype``."""
        if isinstance(d, (int, float)):
            return self.const(d, dtype)
        v = self.node("Reshape", [self.dim(d), self.i64([])])
        return v if dtype is DType.int64 else self.node("Cast", [v], to=ONNX_DTYPE[dtype])

    def shape_of(self, name: str, ty: Type) -> str:
        """An i64 tensor of a value's shape (an initializer when static)."""
        dims = _dims_of(ty)
        if dims is not None and all(d is not ANY for d in dims):
            try:
                return self.dims(dims)
            except ExportError:
                pass
        return self.node("Shape", [name])

    # ----- functions --------------------------------------------------------------------
    def bindings(self, nodes: Sequence[Expr]) -> None:
        for node in nodes:
            self.current = node
            self.scopes[-1][id(node)] = self.lower(node)
        self.current = None

    def lower(self, node: Expr) -> Any:
        if isinstance(node, Call):
            fn = LOWERINGS.get(node.op)
            if fn is None and node.op == "call_lowered":
                raise ExportError(
                    f"{_where(node)}: a compiled kernel (call_lowered of "
                    f"@{node.attrs['kernel']}) cannot be exported to ONNX; export the module "
                    "from a step before legalize-ops"
                )
            if fn is None:
                raise ExportError(f"{_where(node)}: op {node.op} has no ONNX lowering")
            args = [self.lookup(a) for a in node.args]
            try:
                return fn(self, node, args)
            except ExportError as e:
                if getattr(e, "located", False):
                    raise
                located = ExportError(f"{_where(node)}: {e}")
                located.located = True
                raise located from None
            except Exception as e:
                raise ExportError(f"{_where(node)}: {type(e).__name__}: {e}") from e
        if isinstance(node, Tuple):
            return [self.lookup(f) for f in node.fields]
        if isinstance(node, TupleGetItem):
            value = self.lookup(node.tuple_value)
            if not isinstance(value, list):
                raise ExportError(f"{_where(node)}: item of a non-tuple value")
            return value[node.index]
        if isinstance(node, If):
            return self.lower_if(node)
        if isinstance(node, Loop):
            return self.lower_loop(node)
        if isinstance(node, FuncCall):
            return self.inline(node)
        raise ExportError(f"cannot export {type(node).__name__}")

    def inline(self, node: FuncCall) -> Any:
        fn = self.module[node.func]
        args = [self.lookup(a) for a in node.args]
        saved = self.current
        self.scopes.append({id(p): a for p, a in zip(fn.params, args, strict=True)})
        self.dim_envs.append(symbol_bindings([p.ty for p in fn.params], [a.ty for a in node.args]))
        try:
            self.bindings(fn.bindings)
            out = self.lookup(fn.output)
        finally:
            self.scopes.pop()
            self.dim_envs.pop()
            self.current = saved
        return out

    def lower_loop(self, node: Loop) -> list:
        """An ONNX Loop whose body graph is the body function (its captured parameters read
        the outer values directly, as ONNX subgraphs do)."""
        from onnx import helper

        fn = self.module[node.func]
        k = node.num_carried
        outer = [self.name(a) for a in node.args]
        if isinstance(node.max_trips.ty, TensorType) and node.max_trips.ty.dtype is not DType.int64:
            outer[0] = self.node("Cast", [outer[0]], to=ONNX_DTYPE[DType.int64])
        if node.max_trips.ty.shape != ():
            outer[0] = self.node("Reshape", [outer[0], self.i64([])])
        if node.cond.ty.shape != ():
            outer[1] = self.node("Reshape", [outer[1], self.i64([])])
        saved = self.current
        self.graphs.append([])
        inputs = []
        scope: dict[int, Any] = {}
        for i, p in enumerate(fn.params[: 2 + k]):
            name = self.unique(p.name)
            scope[id(p)] = name
            ty = TensorType((), DType.int64) if i == 0 else p.ty
            inputs.append(value_info(name, ty))
        if fn.params[0].ty.dtype is not DType.int64:
            self.current = node
            scope[id(fn.params[0])] = self.node(
                "Cast", [inputs[0].name], to=ONNX_DTYPE[fn.params[0].ty.dtype]
            )
        for p, a in zip(fn.params[2 + k :], outer[2 + k :], strict=True):
            scope[id(p)] = a
        self.scopes.append(scope)
        self.dim_envs.append(
            symbol_bindings([p.ty for p in fn.params[2:]], [a.ty for a in node.args[2:]])
        )
        try:
            self.bindings(fn.bindings)
            self.current = node
            results = self.lookup(fn.output)
            if not isinstance(results, list):
                raise ExportError(f"{_where(node)}: the loop body does not return a tuple")
            outputs = []
            for r, t in zip(results, fn.ret_type.fields, strict=True):
                if isinstance(r, list):
                    raise ExportError(f"{_where(node)}: the loop body yields a nested tuple")
                out = self.node("Identity", [r])  # body outputs are made in the body
                outputs.append(value_info(out, t))
            nodes = self.graphs[-1]
        finally:
            self.graphs.pop()
            self.scopes.pop()
            self.dim_envs.pop()
        body = helper.make_graph(nodes, f"{node.func}_body", inputs, outputs)
        self.current = node
        outs = self.node("Loop", outer[: 2 + k], outputs=len(node.ty.fields), body=body)
        self.current = saved
        return outs if isinstance(outs, list) else [outs]

    def lower_if(self, node: If) -> Any:
        from onnx import helper

        cond = self.name(node.cond)
        ct = node.cond.ty
        if isinstance(ct, TensorType) and ct.dtype is not DType.bool:
            cond = self.node("Cast", [cond], to=ONNX_DTYPE[DType.bool])
        branches = []
        for label, block in (("then", node.then_branch), ("else", node.else_branch)):
            self.graphs.append([])
            self.scopes.append({})
            try:
                self.bindings(block.bindings)
                self.current = node
                result = self.lookup(block.result)
                results = result if isinstance(result, list) else [result]
                types = (
                    list(block.result.ty.fields)
                    if isinstance(block.result.ty, TupleType)
                    else [block.result.ty]
                )
                outputs = []
                for r, t in zip(results, types, strict=True):
                    if isinstance(r, list):
                        raise ExportError(f"{_where(node)}: a branch yields a nested tuple")
                    out = self.node("Identity", [r])  # branch outputs are made in the branch
                    outputs.append(value_info(out, t))
                nodes = self.graphs[-1]
            finally:
                self.graphs.pop()
                self.scopes.pop()
            branches.append(helper.make_graph(nodes, f"{label}_branch", [], outputs))
        self.current = node
        count = len(branches[0].output)
        outs = self.node(
            "If", [cond], outputs=count, then_branch=branches[0], else_branch=branches[1]
        )
        if isinstance(node.ty, TupleType):
            return outs if isinstance(outs, list) else [outs]
        return outs

    def function(self, fn: Function, graph_name: str):
        from onnx import helper

        self.graphs.append([])
        self.scopes.append({})
        inputs = []
        for p in fn.params:
            name = self.unique(p.name)
            if isinstance(p.ty, TupleType):  # an ONNX sequence (see _sequence_info)
                inputs.append(_sequence_info(name, p.ty))
                self.current = None
                self.scopes[-1][id(p)] = [
                    self.node("SequenceAt", [name, self.i64(k)]) for k in range(len(p.ty))
                ]
                continue
            self.scopes[-1][id(p)] = name
            inputs.append(value_info(name, p.ty))
            for axis, d in enumerate(_dims_of(p.ty) or []):
                if isinstance(d, SymExpr) and len(d.free_symbols) == 1 and str(d) in d.free_symbols:
                    self.symbol_sources.setdefault(str(d), (name, axis))
        self.bindings(fn.bindings)
        result = self.lookup(fn.output)
        results = result if isinstance(result, list) else [result]
        types = list(fn.output.ty.fields) if isinstance(fn.output.ty, TupleType) else [fn.output.ty]
        outputs = []
        seen: set[str] = set()
        for i, (r, t) in enumerate(zip(results, types, strict=True)):
            if isinstance(r, list):  # a tuple of tensors: an ONNX sequence
                info = _sequence_info("sequence", t)
                self.current = None
                if r:
                    r = self.node("SequenceConstruct", r)
                else:
                    r = self.node(
                        "SequenceEmpty",
                        [],
                        dtype=info.type.sequence_type.elem_type.tensor_type.elem_type,
                    )
                seen.add(r)
                outputs.append(_sequence_info(r, t))
                continue
            if (
                r in seen
                or r in {i.name for i in inputs}
                or r in {t.name for t in self.initializers}
            ):
                self.current = None
                r = self.node("Identity", [r])
            seen.add(r)
            outputs.append(value_info(r, t))
        nodes = self.graphs.pop()
        return helper.make_graph(nodes, graph_name, inputs, outputs, self.initializers)


_UNSAFE_IN_SCOPE = re.compile(r"[\s/\\\x00-\x1f\x7f]+")
MAX_SCOPE_CHARS = 1000  # a module path longer than this (an untrusted model's) is cut


def node_scope(module_path: str | None) -> str:
    """The namespace part of an ONNX node name for a torch module path, as torch.onnx.export
    writes it: ``stages.0.blocks.0.pwconv1`` -> ``/stages.0/blocks.0/pwconv1`` (a numeric part
    stays with the name before it: ``stages.0`` is one scope); ``""`` for no path. Slashes,
    whitespace and control characters inside a name become ``_``, so a name never makes a
    namespace of its own."""
    if not module_path:
        return ""
    scopes: list[str] = []
    for part in module_path[:MAX_SCOPE_CHARS].split("."):
        part = _UNSAFE_IN_SCOPE.sub("_", part)
        if not part:
            continue
        if scopes and part.isdigit():
            scopes[-1] = f"{scopes[-1]}.{part}"
        else:
            scopes.append(part)
    return "".join(f"/{s}" for s in scopes)


def _where(node: Expr) -> str:
    label = f"%{node.name}" if node.name else type(node).__name__
    if isinstance(node, Call):
        label += f" = {node.op}(...)"
    if not node.prov.is_empty:
        label += f" from {node.prov.describe()}"
    return label


def to_onnx(module: Module | Function, *, opset: int = DEFAULT_OPSET, function: str = "main"):
    """Export ``function`` of a module (calls of other functions inlined) as an ONNX model
    of ai.onnx ``opset`` (17 or newer) that passes onnx.checker and runs in onnxruntime."""
    import onnx
    from onnx import helper

    if opset < MIN_OPSET:
        raise ExportError(f"to_onnx writes opset {MIN_OPSET} or newer, got {opset}")
    if isinstance(module, Function):
        module = Module({function: module})
    if not isinstance(module, Module):
        raise ExportError(f"to_onnx takes a Module, got {type(module).__name__}")
    exporter = Exporter(module, opset)
    graph = exporter.function(module[function], function)
    others = [helper.make_opsetid(d, v) for d, v in sorted(exporter.domains.items())]
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset), *others],
        producer_name="passlens",
        ir_version=min(onnx.IR_VERSION, 10),
    )
    try:
        onnx.checker.check_model(checkable(model))
    except onnx.checker.ValidationError as e:
        raise ExportError(f"the exported model fails onnx.checker: {e}") from None
    return model


# ----- lowerings --------------------------------------------------------------------------

_UNARY = {
    "abs": "Abs",
    "neg": "Neg",
    "sign": "Sign",
    "relu": "Relu",
    "identity": "Identity",
    "match_shape": "Identity",  # its symbols name dims the value already has
    "logical_not": "Not",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "erf": "Erf",
    "sin": "Sin",
    "cos": "Cos",
    "floor": "Floor",
    "ceil": "Ceil",
    "round": "Round",
    "reciprocal": "Reciprocal",
    "softplus": "Softplus",
    "isnan": "IsNaN",
}
for _ir, _onnx in _UNARY.items():
    LOWERINGS[_ir] = lambda e, n, a, _op=_onnx: e.node(_op, [a[0]])

_BINARY = {
    "add": "Add",
    "subtract": "Sub",
    "multiply": "Mul",
    "divide": "Div",
    "power": "Pow",
    "maximum": "Max",
    "minimum": "Min",
    "equal": "Equal",
    "less": "Less",
    "less_equal": "LessOrEqual",
    "greater": "Greater",
    "greater_equal": "GreaterOrEqual",
    "logical_and": "And",
    "logical_or": "Or",
    "logical_xor": "Xor",
}
for _ir, _onnx in _BINARY.items():
    LOWERINGS[_ir] = lambda e, n, a, _op=_onnx: e.node(_op, [a[0], a[1]])

# onnxruntime's CPU kernels of these ops lack small integer and bool types: compute in i32
_NARROW = (DType.int8, DType.int16, DType.uint8, DType.uint16, DType.bool)


def _widened(e, n: Call, a: list, op: str, **attrs) -> str:
    dtype = _dtype(n.args[0])
    if dtype not in _NARROW:
        return e.node(op, a, **attrs)
    wide = [e.node("Cast", [x], to=ONNX_DTYPE[DType.int32]) for x in a[:1]] + list(a[1:])
    if op in ("Max", "Min"):
        wide = [e.node("Cast", [x], to=ONNX_DTYPE[DType.int32]) for x in a]
    return e.node("Cast", [e.node(op, wide, **attrs)], to=ONNX_DTYPE[dtype])


LOWERINGS["maximum"] = lambda e, n, a: _widened(e, n, a, "Max")
LOWERINGS["minimum"] = lambda e, n, a: _widened(e, n, a, "Min")


def _dtype(expr: Expr) -> DType:
    return expr.ty.dtype


def _scalar_like(e: Exporter, value: Any, expr: Expr) -> str:
    return e.const(value, _dtype(expr))


@lowers("not_equal")
def _not_equal(e, n, a):
    return e.node("Not", [e.node("Equal", a)])


@lowers("rsqrt")
def _rsqrt(e, n, a):
    return e.node("Reciprocal", [e.node("Sqrt", a)])


@lowers("silu")
def _silu(e, n, a):
    return e.node("Mul", [a[0], e.node("Sigmoid", a)])


@lowers("log1p")
def _log1p(e, n, a):
    return e.node("Log", [e.node("Add", [a[0], _scalar_like(e, 1, n.args[0])])])


@lowers("expm1")
def _expm1(e, n, a):
    return e.node("Sub", [e.node("Exp", a), _scalar_like(e, 1, n.args[0])])


@lowers("gelu")
def _gelu(e, n, a):
    x = a[0]
    if e.opset >= 20:
        return e.node("Gelu", [x], approximate=n.attrs["approximate"])
    half, one = _scalar_like(e, 0.5, n), _scalar_like(e, 1.0, n)
    if n.attrs["approximate"] == "tanh":
        cube = e.node("Mul", [e.node("Mul", [x, x]), x])
        inner = e.node("Add", [x, e.node("Mul", [cube, _scalar_like(e, 0.044715, n)])])
        scaled = e.node("Mul", [inner, _scalar_like(e, math.sqrt(2 / math.pi), n)])
        gate = e.node("Add", [one, e.node("Tanh", [scaled])])
    else:
        gate = e.node(
            "Add", [one, e.node("Erf", [e.node("Div", [x, _scalar_like(e, math.sqrt(2), n)])])]
        )
    return e.node("Mul", [e.node("Mul", [x, half]), gate])


@lowers("leaky_relu")
def _leaky_relu(e, n, a):
    return e.node("LeakyRelu", a, alpha=n.attrs["alpha"])


@lowers("clip")
def _clip(e, n, a):
    dtype = _dtype(n)
    bounds = []
    for key, rounding in (("min", math.ceil), ("max", math.floor)):
        v = n.attrs[key]
        if v is None:
            bounds.append("")
            continue
        if dtype.is_int or dtype is DType.bool:
            info = np.iinfo(dtype.numpy) if dtype.is_int else None
            v = rounding(v)
            if info is not None:
                v = min(max(v, info.min), info.max)
        bounds.append(e.const(v, dtype))
    while bounds and bounds[-1] == "":
        bounds.pop()
    return e.node("Clip", [a[0], *bounds])


@lowers("floor_divide")
def _floor_divide(e, n, a):
    if _dtype(n).is_float:
        return e.node("Floor", [e.node("Div", a)])
    # floor division of integers: (a - floor_mod(a, b)) / b is exact
    rem = e.node("Mod", a, fmod=0)
    return e.node("Div", [e.node("Sub", [a[0], rem]), a[1]])


@lowers("mod")
def _mod(e, n, a):
    if _dtype(n).is_float:  # sign of the divisor: a - floor(a / b) * b
        q = e.node("Floor", [e.node("Div", a)])
        return e.node("Sub", [a[0], e.node("Mul", [q, a[1]])])
    return e.node("Mod", a, fmod=0)


@lowers("where")
def _where_op(e, n, a):
    return e.node("Where", a)


def _out_cast(e, n, y: str, dtype: DType) -> str:
    out = n.attrs.get("out_dtype")
    return y if out is None or out is dtype else e.node("Cast", [y], to=ONNX_DTYPE[out])


@lowers("matmul")
def _matmul(e, n, a):
    lhs, rhs = n.args
    if not n.attrs["transpose_b"]:
        return _out_cast(e, n, e.node("MatMul", a), _dtype(lhs))
    if rhs.ty.shape is None:
        raise ExportError("matmul with transpose_b: the rank of rhs is unknown")
    rank = len(rhs.ty.shape)
    gemm = lhs.ty.shape is not None and len(lhs.ty.shape) == 2 and rank == 2
    if gemm and lhs.ty.dtype in (DType.float32, DType.float64):
        y = e.node("Gemm", a, transB=1)  # a linear layer's (out, in) weight, as torch writes it
    else:
        perm = [*range(rank - 2), rank - 1, rank - 2]
        y = e.node("MatMul", [a[0], e.node("Transpose", [a[1]], perm=perm)])
    return _out_cast(e, n, y, _dtype(lhs))


@lowers("linear")
def _linear(e, n, a):
    x = n.args[0]
    if x.ty.shape is not None and len(x.ty.shape) == 2:
        y = e.node("Gemm", a, transB=1)
    else:
        y = e.node("MatMul", [a[0], e.node("Transpose", [a[1]], perm=[1, 0])])
        if len(a) > 2:
            y = e.node("Add", [y, a[2]])
    return _out_cast(e, n, y, _dtype(x))


def _perm(layout: str, canonical: str) -> list[int]:
    """Transpose a tensor in ``layout`` into ``canonical``."""
    return [layout.index(c) for c in canonical]


def _to_canonical(e, x: str, layout: str, canonical: str) -> str:
    return x if layout == canonical else e.node("Transpose", [x], perm=_perm(layout, canonical))


def _from_canonical(e, y: str, layout: str, canonical: str) -> str:
    return y if layout == canonical else e.node("Transpose", [y], perm=_perm(canonical, layout))


@lowers("conv1d", "conv2d")
def _conv(e, n, a):
    nd = 1 if n.op == "conv1d" else 2
    canon_d, canon_k = ("NCW", "OIW") if nd == 1 else ("NCHW", "OIHW")
    layout = n.attrs["data_layout"]
    x = _to_canonical(e, a[0], layout, canon_d)
    w = _to_canonical(e, a[1], n.attrs["kernel_layout"], canon_k)
    y = e.node(
        "Conv",
        [x, w, *a[2:]],
        strides=list(n.attrs["strides"]),
        pads=list(n.attrs["padding"]),
        dilations=list(n.attrs["dilation"]),
        group=n.attrs["groups"],
    )
    return _out_cast(e, n, _from_canonical(e, y, layout, canon_d), _dtype(n.args[0]))


@lowers("max_pool2d", "avg_pool2d")
def _pool(e, n, a):
    layout = n.attrs["layout"]
    x = _to_canonical(e, a[0], layout, "NCHW")
    pool = list(n.attrs["pool_size"])
    strides = list(n.attrs["strides"] or pool)
    common = {
        "kernel_shape": pool,
        "strides": strides,
        "pads": list(n.attrs["padding"]),
        "ceil_mode": int(n.attrs["ceil_mode"]),
    }
    if n.op == "max_pool2d":
        y = e.node("MaxPool", [x], dilations=list(n.attrs["dilation"]), **common)
    else:
        y = e.node(
            "AveragePool", [x], count_include_pad=int(n.attrs["count_include_pad"]), **common
        )
    return _from_canonical(e, y, layout, "NCHW")


@lowers("adaptive_avg_pool2d")
def _adaptive_avg_pool(e, n, a):
    layout = n.attrs["layout"]
    size = n.attrs["output_size"]
    if size is None:
        return e.node("Identity", a)
    x = _to_canonical(e, a[0], layout, "NCHW")
    perm = _perm(layout, "NCHW")
    shape = n.args[0].ty.shape
    h, w = shape[perm[2]], shape[perm[3]]
    if tuple(size) == (1, 1):
        y = e.node("GlobalAveragePool", [x])
    else:
        if not (isinstance(h, int) and isinstance(w, int)):
            raise ExportError(f"{_where(n)}: adaptive pooling to {list(size)} needs static H, W")
        y = x
        for axis, (n_in, n_out) in ((2, (h, size[0])), (3, (w, size[1]))):
            bins = []
            for i in range(n_out):
                lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
                part = e.node("Slice", [y, e.i64([lo]), e.i64([hi]), e.i64([axis])])
                bins.append(
                    e.node("ReduceMean", [part], axes=[axis], keepdims=1)
                    if e.opset < 18
                    else e.node("ReduceMean", [part, e.i64([axis])], keepdims=1)
                )
            y = bins[0] if len(bins) == 1 else e.node("Concat", bins, axis=axis)
    return _from_canonical(e, y, layout, "NCHW")


def _move_axis_to_1(e, x: str, rank: int, axis: int) -> tuple[str, list[int] | None]:
    axis %= rank
    if axis == 1:
        return x, None
    perm = [0, axis] + [i for i in range(1, rank) if i != axis]
    inverse = [perm.index(i) for i in range(rank)]
    return e.node("Transpose", [x], perm=perm), inverse


@lowers("batch_norm")
def _batch_norm(e, n, a):
    rank = len(n.args[0].ty.shape)
    x, inverse = _move_axis_to_1(e, a[0], rank, n.attrs["axis"])
    y = e.node("BatchNormalization", [x, *a[1:]], epsilon=n.attrs["epsilon"])
    return y if inverse is None else e.node("Transpose", [y], perm=inverse)


def _reduce(e, op: str, x: str, axes: Sequence[int] | None, keepdims: bool) -> str:
    """ReduceX with axes in the form the opset wants (ReduceSum: input from 13, others 18)."""
    keep = int(keepdims)
    if axes is None:
        return e.node(op, [x], keepdims=keep)
    if op == "ReduceSum" or e.opset >= 18:
        return e.node(op, [x, e.i64(list(axes))], keepdims=keep)
    return e.node(op, [x], axes=list(axes), keepdims=keep)


@lowers("layer_norm")
def _layer_norm(e, n, a):
    rank = len(n.args[0].ty.shape)
    axes = sorted(ax % rank for ax in n.attrs["axes"])
    eps = n.attrs["epsilon"]
    suffix = axes == list(range(axes[0], rank))
    if suffix and len(a) >= 2:
        return e.node("LayerNormalization", a, axis=axes[0], epsilon=eps)
    x = a[0]
    mean = _reduce(e, "ReduceMean", x, axes, True)
    d = e.node("Sub", [x, mean])
    var = _reduce(e, "ReduceMean", e.node("Mul", [d, d]), axes, True)
    y = e.node("Div", [d, e.node("Sqrt", [e.node("Add", [var, _scalar_like(e, eps, n)])])])
    if len(a) > 1:
        shape = [n.args[0].ty.shape[i] if i in axes else 1 for i in range(rank)]
        for p, op in zip(a[1:], ("Mul", "Add"), strict=False):
            y = e.node(op, [y, e.node("Reshape", [p, e.dims(shape)])])
    return y


@lowers("group_norm")
def _group_norm(e, n, a):
    data = n.args[0]
    rank = len(data.ty.shape)
    x, inverse = _move_axis_to_1(e, a[0], rank, n.attrs["channel_axis"])
    groups = n.attrs["num_groups"]
    shape = e.node("Shape", [x])
    grouped = e.node("Reshape", [x, e.i64([0, groups, -1])])
    mean = _reduce(e, "ReduceMean", grouped, [2], True)
    d = e.node("Sub", [grouped, mean])
    var = _reduce(e, "ReduceMean", e.node("Mul", [d, d]), [2], True)
    eps = _scalar_like(e, n.attrs["epsilon"], data)
    y = e.node("Div", [d, e.node("Sqrt", [e.node("Add", [var, eps])])])
    y = e.node("Reshape", [y, shape])
    per_channel = e.i64([-1] + [1] * (rank - 2))
    for p, op in zip(a[1:], ("Mul", "Add"), strict=False):
        y = e.node(op, [y, e.node("Reshape", [p, per_channel])])
    return y if inverse is None else e.node("Transpose", [y], perm=inverse)


@lowers("softmax", "log_softmax")
def _softmax(e, n, a):
    return e.node("Softmax" if n.op == "softmax" else "LogSoftmax", a, axis=n.attrs["axis"])


@lowers("scaled_dot_product_attention")
def _sdpa(e, n, a):
    q, k, v = n.args[:3]
    qk_rank = len(k.ty.shape)
    perm = list(range(qk_rank - 2)) + [qk_rank - 1, qk_rank - 2]
    scores = e.node("MatMul", [a[0], e.node("Transpose", [a[1]], perm=perm)])
    scale = n.attrs["scale"]
    if scale is None:
        feat = q.ty.shape[-1]
        if isinstance(feat, int):
            scale_name = _scalar_like(e, 1.0 / math.sqrt(feat), q)
        else:
            f = e.node("Cast", [e.scalar(feat)], to=ONNX_DTYPE[_dtype(q)])
            scale_name = e.node("Reciprocal", [e.node("Sqrt", [f])])
    else:
        scale_name = _scalar_like(e, scale, q)
    scores = e.node("Mul", [scores, scale_name])
    neg_inf = _scalar_like(e, -np.inf, q)
    if n.attrs["is_causal"]:
        shape = e.node("Shape", [scores], start=-2)
        ones = e.node("ConstantOfShape", [shape], value=_bool_tensor(True))
        keep = e.node("Trilu", [ones], upper=0)
        scores = e.node("Where", [keep, scores, neg_inf])
    if len(a) > 3:
        mask = n.args[3]
        if _dtype(mask) is DType.bool:
            scores = e.node("Where", [a[3], scores, neg_inf])
        else:
            scores = e.node("Add", [scores, a[3]])
    probs = e.node("Softmax", [scores], axis=-1)
    # a row with nothing to attend to is NaN in onnxruntime and zeros in the IR (torch)
    probs = e.node("Where", [e.node("IsNaN", [probs]), _scalar_like(e, 0, q), probs])
    return e.node("MatMul", [probs, a[2]])


def _bool_tensor(value: bool):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray([value], dtype=np.bool_))


_REDUCE = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "prod": "ReduceProd",
}


@lowers(*_REDUCE)
def _reduce_op(e, n, a):
    axes = n.attrs["axes"]
    rank = n.args[0].ty.ndim
    if rank == 0:
        return e.node("Identity", a)
    dtype = _dtype(n.args[0])
    if dtype in _NARROW and n.op in ("max", "min"):
        wide = e.node("Cast", a, to=ONNX_DTYPE[DType.int32])
        y = _reduce(e, _REDUCE[n.op], wide, axes, n.attrs["keepdims"])
        return e.node("Cast", [y], to=ONNX_DTYPE[dtype])
    return _reduce(e, _REDUCE[n.op], a[0], axes, n.attrs["keepdims"])


@lowers("variance", "std")
def _variance(e, n, a):
    data = n.args[0]
    axes = n.attrs["axes"]
    rank = data.ty.ndim
    if rank is None:
        raise ExportError(f"{_where(n)}: needs a known rank")
    reduced = list(range(rank)) if axes is None else sorted(ax % rank for ax in axes)
    x = a[0]
    mean = _reduce(e, "ReduceMean", x, reduced, True)
    d = e.node("Sub", [x, mean])
    ss = _reduce(e, "ReduceSum", e.node("Mul", [d, d]), reduced, n.attrs["keepdims"])
    dims = [data.ty.shape[i] for i in reduced]
    if all(isinstance(d_, int) for d_ in dims):
        count = _scalar_like(e, max(math.prod(dims) - n.attrs["correction"], 0), data)
    else:
        shape = e.node("Shape", [x])
        picked = e.node("Gather", [shape, e.i64(reduced)])
        total = e.node("ReduceProd", [picked], keepdims=0)
        total = e.node("Cast", [total], to=ONNX_DTYPE[_dtype(data)])
        count = e.node("Sub", [total, _scalar_like(e, n.attrs["correction"], data)])
        count = e.node("Max", [count, _scalar_like(e, 0, data)])
    var = e.node("Div", [ss, count])
    return var if n.op == "variance" else e.node("Sqrt", [var])


@lowers("argmax", "argmin")
def _arg(e, n, a):
    op = "ArgMax" if n.op == "argmax" else "ArgMin"
    axis, keep = n.attrs["axis"], n.attrs["keepdims"]
    rank = n.args[0].ty.ndim
    if axis is not None:
        return e.node(op, a, axis=axis, keepdims=int(keep))
    flat = e.node("Reshape", [a[0], e.i64([-1])])
    y = e.node(op, [flat], axis=0, keepdims=0)
    if keep:
        if rank is None:
            raise ExportError(f"{_where(n)}: keepdims over every axis needs a known rank")
        y = e.node("Reshape", [y, e.i64([1] * rank)])
    return y


@lowers("cumsum")
def _cumsum(e, n, a):
    return e.node(
        "CumSum",
        [a[0], e.i64(n.attrs["axis"])],
        exclusive=int(n.attrs["exclusive"]),
        reverse=int(n.attrs["reverse"]),
    )


def _result_shape(e, n: Call) -> str | None:
    """The result's shape as an i64 tensor when every dim is known (ints or symbols)."""
    dims = _dims_of(n.ty)
    if dims is None or any(d is ANY for d in dims):
        return None
    try:
        return e.dims(dims)
    except ExportError:
        return None


@lowers("reshape")
def _reshape(e, n, a):
    allowzero = int(n.attrs["allowzero"])
    if len(a) == 2:
        return e.node("Reshape", a, allowzero=allowzero)
    target = list(n.attrs["shape"])
    if any(isinstance(d, SymExpr) for d in target):
        known = _result_shape(e, n)
        if known is not None:
            return e.node("Reshape", [a[0], known])
    return e.node("Reshape", [a[0], e.dims(target)], allowzero=allowzero)


@lowers("permute_dims")
def _permute(e, n, a):
    axes = n.attrs["axes"]
    return e.node("Transpose", a, perm=list(axes) if axes is not None else None)


@lowers("squeeze")
def _squeeze(e, n, a):
    axes = n.attrs["axes"]
    if axes is None:
        return e.node("Squeeze", a)
    return e.node("Squeeze", [a[0], e.i64(list(axes))])


@lowers("unsqueeze")
def _unsqueeze(e, n, a):
    return e.node("Unsqueeze", [a[0], e.i64(list(n.attrs["axes"]))])


def _computed_shape_reshape(e, n: Call, x: str, pieces) -> str:
    known = _result_shape(e, n)
    if known is not None:
        return e.node("Reshape", [x, known])
    return e.node("Reshape", [x, e.node("Concat", pieces(), axis=0)])


@lowers("flatten")
def _flatten(e, n, a):
    data = n.args[0]
    rank = data.ty.ndim
    if rank == 0:
        return e.node("Reshape", [a[0], e.i64([1])])

    def pieces():
        start, end = n.attrs["start_dim"] % rank, n.attrs["end_dim"] % rank
        shape = e.node("Shape", [a[0]])
        out = []
        if start > 0:
            out.append(e.node("Slice", [shape, e.i64([0]), e.i64([start])]))
        out.append(e.i64([-1]))
        if end + 1 < rank:
            out.append(e.node("Slice", [shape, e.i64([end + 1]), e.i64([rank])]))
        return out

    if rank is None:
        if n.attrs["start_dim"] == 0 and n.attrs["end_dim"] == -1:
            return e.node("Reshape", [a[0], e.i64([-1])])
        raise ExportError(f"{_where(n)}: flatten of unknown rank")
    return _computed_shape_reshape(e, n, a[0], pieces)


@lowers("broadcast_to", "expand")
def _expand(e, n, a):
    known = _result_shape(e, n)
    if known is not None:
        return e.node("Expand", [a[0], known])
    target = list(n.attrs["shape"])
    if n.op == "expand":  # -1 keeps the input's dim: 1 in a bidirectional Expand does that
        target = [1 if isinstance(d, int) and d == -1 else d for d in target]
    return e.node("Expand", [a[0], e.dims(target)])


@lowers("tile")
def _tile(e, n, a):
    reps = list(n.attrs["repeats"])
    rank = n.args[0].ty.ndim
    if rank is None:
        raise ExportError(f"{_where(n)}: tile of unknown rank")
    x = a[0]
    if len(reps) > rank:
        x = e.node("Unsqueeze", [x, e.i64(list(range(len(reps) - rank)))])
    reps = [1] * (max(rank, len(reps)) - len(reps)) + reps
    return e.node("Tile", [x, e.i64(reps)])


@lowers("repeat")
def _repeat(e, n, a):
    reps, axis = n.attrs["repeats"], n.attrs["axis"]
    x = a[0]
    data = n.args[0]
    if axis is None:
        x, rank, axis = e.node("Reshape", [x, e.i64([-1])]), 1, 0
    else:
        rank = data.ty.ndim
        axis %= rank
    spread = e.node("Unsqueeze", [x, e.i64([axis + 1])])
    tiles = [1] * (rank + 1)
    tiles[axis + 1] = reps
    tiled = e.node("Tile", [spread, e.i64(tiles)])
    known = _result_shape(e, n)
    if known is None:
        mult = [1] * rank
        mult[axis] = reps
        known = e.node("Mul", [e.node("Shape", [x]), e.i64(mult)])
    return e.node("Reshape", [tiled, known])


@lowers("concat")
def _concat(e, n, a):
    return e.node("Concat", a, axis=n.attrs["axis"])


@lowers("split")
def _split(e, n, a):
    data = n.args[0]
    rank = data.ty.ndim
    axis = n.attrs["axis"] % rank
    spec = n.attrs["indices_or_sections"]
    if isinstance(spec, int):
        d = data.ty.shape[axis]
        if isinstance(d, int):
            bounds = [i * (d // spec) for i in range(spec + 1)]
            points = [e.i64([b]) for b in bounds]
        else:
            size = e.node("Div", [e.dim_of(a[0], data.ty, axis), e.i64([spec])])
            points = [e.node("Mul", [size, e.i64([i])]) for i in range(spec + 1)]
    else:
        points = [e.i64([0])] + [e.i64([i]) for i in spec] + [e.i64([INT64_MAX])]
    axes = e.i64([axis])
    return [
        e.node("Slice", [a[0], lo, hi, axes])
        for lo, hi in zip(points[:-1], points[1:], strict=True)
    ]


@lowers("strided_slice")
def _strided_slice(e, n, a):
    begin, end = list(n.attrs["begin"]), list(n.attrs["end"])
    axes = n.attrs["axes"]
    axes = list(axes) if axes is not None else list(range(len(begin)))
    strides = n.attrs["strides"]
    inputs = [a[0], e.i64(begin), e.i64(end), e.i64(axes)]
    if strides is not None:
        inputs.append(e.i64(list(strides)))
    return e.node("Slice", inputs)


@lowers("pad")
def _pad(e, n, a):
    data = n.args[0]
    mode = n.attrs["mode"]
    pads = a[1] if len(a) > 1 else e.i64(list(n.attrs["pads"]))
    inputs = [a[0], pads]
    if mode == "constant":
        inputs.append(e.const(n.attrs["value"], _dtype(data)))
    return e.node("Pad", inputs, mode=mode)


@lowers("resize")
def _resize(e, n, a):
    how = n.attrs["coordinate_transformation_mode"]
    if how == "half_pixel_symmetric" and e.opset < 19:
        raise ExportError(f"{_where(n)}: coordinate mode {how} needs opset 19")
    # given scales take part in the coordinate transform, so they are written, not sizes
    if n.attrs["scales"] is not None:
        scales, sizes = e.const(list(n.attrs["scales"]), DType.float32), ""
    else:
        scales, sizes = "", e.dims(list(n.attrs["sizes"]))
    cubic = {}
    if n.attrs["mode"] == "cubic":
        cubic = {
            "cubic_coeff_a": float(n.attrs["cubic_coeff_a"]),
            "exclude_outside": int(n.attrs["exclude_outside"]),
        }
    return e.node(
        "Resize",
        [a[0], "", scales, sizes],
        mode=n.attrs["mode"],
        coordinate_transformation_mode=how,
        nearest_mode=n.attrs["nearest_mode"],
        **cubic,
    )


@lowers("shape_of")
def _shape_of(e, n, a):
    return e.node("Shape", a)


def _fill_tensor(value: Any, dtype: DType):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray([value]).astype(dtype.numpy))


@lowers("full", "zeros", "ones")
def _full(e, n, a):
    value = {"zeros": 0, "ones": 1}.get(n.op, n.attrs.get("value"))
    dtype = n.attrs["dtype"]
    return e.node(
        "ConstantOfShape", [e.dims(list(n.attrs["shape"]))], value=_fill_tensor(value, dtype)
    )


@lowers("full_like", "zeros_like", "ones_like")
def _full_like(e, n, a):
    value = {"zeros_like": 0, "ones_like": 1}.get(n.op, n.attrs.get("value"))
    dtype = n.ty.dtype
    return e.node("ConstantOfShape", [e.node("Shape", a)], value=_fill_tensor(value, dtype))


@lowers("arange")
def _arange(e, n, a):
    dtype = n.ty.dtype
    compute = (
        dtype
        if dtype in (DType.int32, DType.int64, DType.float32, DType.float64)
        else (DType.float32 if dtype.is_float else DType.int64)
    )
    start, stop, step = (n.attrs[k] for k in ("start", "stop", "step"))
    args = [
        e.scalar(v, compute) if isinstance(v, SymExpr) else e.const(v, compute)
        for v in (start, stop, step)
    ]
    y = e.node("Range", args)
    return y if compute is dtype else e.node("Cast", [y], to=ONNX_DTYPE[dtype])


@lowers("take")
def _take(e, n, a):
    return e.node("Gather", a, axis=n.attrs["axis"])


@lowers("opaque")
def _opaque(e, n, a):
    """An opaque ONNX op goes out as the node it came from (same op version); an opaque torch
    op has no ONNX form."""
    import onnx

    from compiler.opaque.layout import ONNX_DEFAULT_DOMAIN, describe, result_type, unescape
    from compiler.opaque.run import _onnx_attribute

    attrs = n.attrs
    if attrs["framework"] != "onnx":
        raise ExportError(
            f"opaque op {describe(attrs)} cannot be exported to ONNX: passlens has no "
            "converter for it, so no ONNX form"
        )
    domain, op_type = attrs["target"].split("::")
    recorded = attrs["opset"]
    if domain == ONNX_DEFAULT_DOMAIN:
        domain = ""
        try:
            same = (
                onnx.defs.get_schema(op_type, recorded, "").since_version
                == onnx.defs.get_schema(op_type, e.opset, "").since_version
            )
        except onnx.defs.SchemaError:
            same = False
        if not same:
            raise ExportError(
                f"opaque op {attrs['target']} was recorded at opset {recorded}, and opset "
                f"{e.opset} has another version of it: it is exported only at an opset with "
                "the same version"
            )
    elif e.domains.setdefault(domain, recorded) != recorded:
        raise ExportError(
            f"ops of domain {domain} recorded at opsets {e.domains[domain]} and {recorded}"
        )
    inputs = ["" if x is None else a[unescape(x)] for x in attrs["args"]]
    ty = result_type(attrs["type"])
    fields = len(ty.fields) if isinstance(ty, TupleType) else 1
    positions = list(attrs["outputs"]) if attrs["outputs"] else list(range(fields))
    outs = e.node(op_type, inputs, outputs=max(positions) + 1, domain=domain)
    outs = outs if isinstance(outs, list) else [outs]
    node = e.graphs[-1][-1]
    for k in range(len(outs)):
        if k not in positions:
            node.output[k] = ""  # an optional output the model did not ask for
    for name, value in attrs["kwargs"]:
        node.attribute.append(_onnx_attribute(name, value, op_type, domain, recorded))
    kept = [outs[p] for p in positions]
    return kept if isinstance(ty, TupleType) else kept[0]


@lowers("nonzero")
def _nonzero(e, n, a):
    return e.node("NonZero", a)


@lowers("bincount")
def _bincount(e, n, a):
    """max(max(x) + 1, minlength) zeros, then a ScatterElements add of ones (or weights)."""
    dtype = n.attrs["dtype"]
    x = e.node("Cast", [a[0]], to=ONNX_DTYPE[DType.int64])
    top = e.node("Add", [e.node("ReduceMax", [x], keepdims=1), e.i64([1])])
    length = e.node("Max", [top, e.i64([n.attrs["minlength"]])])
    zeros = e.node("ConstantOfShape", [length], value=_fill_tensor(0, dtype))
    if len(a) > 1:
        updates = e.node("Cast", [a[1]], to=ONNX_DTYPE[dtype])
    else:
        updates = e.node("Expand", [e.const(1, dtype), e.node("Shape", [x])])
    return e.node("ScatterElements", [zeros, x, updates], axis=0, reduction="add")


@lowers("gather_elements")
def _gather_elements(e, n, a):
    return e.node("GatherElements", a, axis=n.attrs["axis"])


@lowers("scatter_elements")
def _scatter_elements(e, n, a):
    data, indices, updates = n.args
    upd = a[2]
    if indices.ty.shape != updates.ty.shape:  # only the leading block of updates is read
        ends = e.node("Shape", [a[1]])
        starts = e.i64([0] * len(indices.ty.shape))
        upd = e.node("Slice", [upd, starts, ends])
    reduction = n.attrs["reduction"]
    if reduction in ("max", "min") and e.opset < 18:
        raise ExportError(f"{_where(n)}: reduction {reduction} needs opset 18")
    return e.node("ScatterElements", [a[0], a[1], upd], axis=n.attrs["axis"], reduction=reduction)


@lowers("one_hot")
def _one_hot(e, n, a):
    dtype = n.attrs["dtype"]
    values = e.const([n.attrs["off_value"], n.attrs["on_value"]], dtype)
    return e.node("OneHot", [a[0], e.i64(n.attrs["depth"]), values], axis=n.attrs["axis"])


@lowers("tril", "triu")
def _trilu(e, n, a):
    k = n.attrs["k"]
    kname = e.scalar(k) if isinstance(k, SymExpr) else e.i64(int(k))
    return e.node("Trilu", [a[0], kname], upper=int(n.op == "triu"))


@lowers("topk")
def _topk(e, n, a):
    k = n.attrs["k"]
    if k == -1:  # the whole axis: its size, read from the data
        axis = n.attrs["axis"] % len(n.args[0].ty.shape)
        kname = e.node("Slice", [e.node("Shape", [a[0]]), e.i64([axis]), e.i64([axis + 1])])
    else:
        kname = e.i64([k])
    return e.node(
        "TopK",
        [a[0], kname],
        outputs=2,
        axis=n.attrs["axis"],
        largest=int(n.attrs["largest"]),
        sorted=1,
    )


__all__ = [
    "DEFAULT_OPSET",
    "LOWERINGS",
    "MIN_OPSET",
    "ExportError",
    "lowers",
    "node_scope",
    "to_onnx",
]


# ----- quantization (quantize, dequantize) ------------------------------------------------
#
# Written as the arithmetic they compute, in the float dtype the ops compute in: ONNX's
# QuantizeLinear wants a scalar or 1-D per-axis scale, where the IR's scale is any shape
# broadcasting to x (per axis as (C, 1, 1), per block repeated).


def _as_float(e, name: str, expr: Expr, ct: DType) -> str:
    return name if _dtype(expr) is ct else e.node("Cast", [name], to=ONNX_DTYPE[ct])


@lowers("quantize")
def _quantize_op(e, n, a):
    from compiler.ops.quantize import compute_float, quant_range

    x, s, z = n.args
    ct = compute_float(_dtype(x), _dtype(s))
    lo, hi = quant_range(_dtype(n))
    q = e.node("Round", [e.node("Div", [_as_float(e, a[0], x, ct), _as_float(e, a[1], s, ct)])])
    q = e.node("Add", [q, _as_float(e, a[2], z, ct)])
    q = e.node("Clip", [q, e.const(lo, ct), e.const(hi, ct)])
    return e.node("Cast", [q], to=ONNX_DTYPE[_dtype(n)])


@lowers("dequantize")
def _dequantize_op(e, n, a):
    from compiler.ops.quantize import compute_float

    x, s, z = n.args
    ct = compute_float(_dtype(s))
    d = e.node("Sub", [_as_float(e, a[0], x, ct), _as_float(e, a[2], z, ct)])
    y = e.node("Mul", [d, _as_float(e, a[1], s, ct)])
    return y if ct is _dtype(n) else e.node("Cast", [y], to=ONNX_DTYPE[_dtype(n)])


# ----- bitwise ops (#17 dtypes) --------------------------------------------------------------
# BitwiseAnd / Or / Xor / Not take integers only: bools use And / Or / Xor / Not.

_BITWISE = {"bitwise_and": ("BitwiseAnd", "And"), "bitwise_or": ("BitwiseOr", "Or")}
_BITWISE["bitwise_xor"] = ("BitwiseXor", "Xor")


@lowers(*_BITWISE)
def _bitwise_op(e, n, a):
    ints, bools = _BITWISE[n.op]
    return e.node(bools if _dtype(n) is DType.bool else ints, [a[0], a[1]])


@lowers("bitwise_not")
def _bitwise_not_op(e, n, a):
    return e.node("Not" if _dtype(n) is DType.bool else "BitwiseNot", a)


# ----- low-precision dtypes (#17 dtypes) ---------------------------------------------------
# The IR's cast to a float8 type does not saturate (ml_dtypes); ONNX's Cast does by default.

_FLOAT8 = (DType.float8e4m3fn, DType.float8e4m3fnuz, DType.float8e5m2, DType.float8e5m2fnuz)
# the opset whose Cast first takes each low-precision type
_SINCE = {DType.float4e2m1: 23, DType.float8e8m0: 24, DType.int2: 25, DType.uint2: 25}
_SINCE |= {d: 19 for d in _FLOAT8} | {DType.int4: 21, DType.uint4: 21}


@lowers("cast")
def _cast(e, n, a):
    dtype, src = n.attrs["dtype"], _dtype(n.args[0])
    need = max(_SINCE.get(dtype, 0), _SINCE.get(src, 0))
    if e.opset < need:
        what = dtype if _SINCE.get(dtype, 0) == need else src
        raise ExportError(
            f"a cast of {what.name} values needs opset {need} or newer, got {e.opset}"
        )
    if dtype in _FLOAT8:
        return e.node("Cast", a, to=ONNX_DTYPE[dtype], saturate=0)
    return e.node("Cast", a, to=ONNX_DTYPE[dtype])


@lowers("to_float8e8m0")
def _to_float8e8m0_op(e, n, a):
    if e.opset < 24:
        raise ExportError(f"a cast to float8e8m0 needs opset 24 or newer, got {e.opset}")
    attrs = {"saturate": int(n.attrs["saturate"]), "round_mode": n.attrs["round_mode"]}
    return e.node("Cast", a, to=ONNX_DTYPE[DType.float8e8m0], **attrs)


@lowers("bitcast")
def _bitcast_op(e, n, a):
    src, dtype = _dtype(n.args[0]), n.attrs["dtype"]
    if not src.is_float and not dtype.is_float and dtype is not DType.bool:
        return e.node("Cast", a, to=ONNX_DTYPE[dtype])  # same width: a wrapping cast
    if e.opset < 26:
        raise ExportError(f"a bitcast of {src.name} to {dtype.name} needs opset 26 or newer")
    return e.node("BitCast", a, to=ONNX_DTYPE[dtype])
