"""The ONNX graph writer: `Exporter` turns a function's bindings into ONNX nodes
(named by their module path), and `to_onnx` builds the checked model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.export.onnx.registry import DEFAULT_OPSET, EXPORTERS, MIN_OPSET, ExportError
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


def dims_of(ty: Type) -> list | None:
    """The dims of a tensor type, None when its rank is unknown (or it is no tensor)."""
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
        """A value or node name not used yet, derived from `hint`."""
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
        """An initializer holding `value` (small literals made by a lowering)."""
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
        """An i64 [1] tensor holding the value of symbol `name` at run time (inside an
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
        """An i64 [1] tensor holding dim `axis` of a value (from its shape when unknown)."""
        dims = dims_of(ty)
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
        """A 0-d tensor holding a dim (or number) in `dtype`."""
        if isinstance(d, (int, float)):
            return self.const(d, dtype)
        v = self.node("Reshape", [self.dim(d), self.i64([])])
        return v if dtype is DType.int64 else self.node("Cast", [v], to=ONNX_DTYPE[dtype])

    def shape_of(self, name: str, ty: Type) -> str:
        """An i64 tensor of a value's shape (an initializer when static)."""
        dims = dims_of(ty)
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
            fn = EXPORTERS.get(node.op)
            if fn is None and node.op == "call_lowered":
                raise ExportError(
                    f"{node_label(node)}: a compiled kernel (call_lowered of "
                    f"@{node.attrs['kernel']}) cannot be exported to ONNX; export the module "
                    "from a step before legalize-ops"
                )
            if fn is None:
                raise ExportError(f"{node_label(node)}: op {node.op} has no ONNX lowering")
            args = [self.lookup(a) for a in node.args]
            try:
                return fn(self, node, args)
            except ExportError as e:
                if getattr(e, "located", False):
                    raise
                located = ExportError(f"{node_label(node)}: {e}")
                located.located = True
                raise located from None
            except Exception as e:
                raise ExportError(f"{node_label(node)}: {type(e).__name__}: {e}") from e
        if isinstance(node, Tuple):
            return [self.lookup(f) for f in node.fields]
        if isinstance(node, TupleGetItem):
            value = self.lookup(node.tuple_value)
            if not isinstance(value, list):
                raise ExportError(f"{node_label(node)}: item of a non-tuple value")
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
                raise ExportError(f"{node_label(node)}: the loop body does not return a tuple")
            outputs = []
            for r, t in zip(results, fn.ret_type.fields, strict=True):
                if isinstance(r, list):
                    raise ExportError(f"{node_label(node)}: the loop body yields a nested tuple")
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
                        raise ExportError(f"{node_label(node)}: a branch yields a nested tuple")
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
            for axis, d in enumerate(dims_of(p.ty) or []):
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
    writes it: `stages.0.blocks.0.pwconv1` -> `/stages.0/blocks.0/pwconv1` (a numeric part
    stays with the name before it: `stages.0` is one scope); `""` for no path. Slashes,
    whitespace and control characters inside a name become `_`, so a name never makes a
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


def node_label(node: Expr) -> str:
    """How an error names an IR node: `%y = matmul(...) from <its provenance>`."""
    label = f"%{node.name}" if node.name else type(node).__name__
    if isinstance(node, Call):
        label += f" = {node.op}(...)"
    if not node.prov.is_empty:
        label += f" from {node.prov.describe()}"
    return label


def to_onnx(module: Module | Function, *, opset: int = DEFAULT_OPSET, function: str = "main"):
    """Export `function` of a module (calls of other functions inlined) as an ONNX model
    of ai.onnx `opset` (17 or newer) that passes onnx.checker and runs in onnxruntime."""
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
