"""The registry of ATen converters and the conversion of FX nodes, shared by the torch
frontend and the converters.

``torch_ops`` registers its converters here with :func:`converts` and reads what a converter
needs (:class:`ConvertContext`, :func:`op_name`, :func:`provenance_of`, dtypes); the frontend
(``torch_frontend``) imports ``torch_ops`` to fill the registry and converts the graph with
:func:`convert_node`. Keeping both here, not in the frontend, means neither module imports
the other back. Nothing here imports torch at module level.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from compiler.frontend.errors import FrontendError
from compiler.frontend.locations import source_location
from compiler.ir.nodes import Constant, Expr, IRError, Var
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import ANY, Dim, SymExpr, dims_equal, sym
from compiler.ir.types import DType, TensorType, TupleType, torch_dtypes
from compiler.passes.infra.rewrite import with_provenance

Converter = Callable[["ConvertContext", Any, list, dict], Any]
Check = Callable[[Any], str | None]
ATEN_CONVERTERS: dict[str, Converter] = {}
ATEN_CHECKS: dict[str, Check] = {}


def converts(*targets: str, check: Check | None = None):
    """Register a converter for ATen targets (``aten.linear.default`` or ``aten.linear``).

    ``check(node)``, when given, says why a node of these targets cannot be converted (None
    when it can); the up-front check lists such nodes with the unsupported operators."""

    def deco(fn: Converter) -> Converter:
        for t in targets:
            ATEN_CONVERTERS[t] = fn
            if check is not None:
                ATEN_CHECKS[t] = check
        return fn

    return deco


def target_name(target: Any) -> str:
    """The name converters are registered under for an FX target: ``aten.add.Tensor``,
    ``operator.getitem``, ``higher_order.cond``, ``torch.sym_max`` ..."""
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", "") or ""
    if module == "_operator" or target in _PY_OPS:
        return f"operator.{target.__name__}"
    if module == "torch.ops.higher_order" and hasattr(target, "name"):
        return f"higher_order.{target.name()}"
    if module in ("torch", "math", "builtins") and hasattr(target, "__name__"):
        return f"{module}.{target.__name__}"
    if hasattr(target, "_schema") or hasattr(target, "_overloadpacket"):
        return str(target)
    if hasattr(target, "__name__"):
        return f"{module}.{getattr(target, '__qualname__', target.__name__)}".strip(".")
    return str(target)


_PY_OPS = {
    operator.add: "add",
    operator.sub: "sub",
    operator.mul: "mul",
    operator.floordiv: "floordiv",
    operator.truediv: "truediv",
    operator.mod: "mod",
    operator.neg: "neg",
    operator.getitem: "getitem",
}


def find_converter(target: Any) -> Converter | None:
    """The converter for an FX target: exact overload first, then the overload packet; an
    in-place variant (``aten.relu_.default``) uses the functional op's converter."""
    name = target_name(target)
    for candidate in (name, _functional_name(name)):
        if candidate is None:
            continue
        if candidate in ATEN_CONVERTERS:
            return ATEN_CONVERTERS[candidate]
        packet = candidate.rsplit(".", 1)[0] if candidate.startswith("aten.") else None
        if packet in ATEN_CONVERTERS:
            return ATEN_CONVERTERS[packet]
    return None


def find_check(target: Any) -> Check | None:
    """The argument check registered with a target's converter, if any."""
    name = target_name(target)
    for candidate in (name, _functional_name(name)):
        if candidate is not None and candidate in ATEN_CHECKS:
            return ATEN_CHECKS[candidate]
    return None


def _functional_name(name: str) -> str | None:
    """``aten.add.Tensor`` for ``aten.add_.Tensor``; None when ``name`` is not in-place."""
    parts = name.split(".")
    if len(parts) != 3 or parts[0] != "aten":
        return None
    op = parts[1]
    if op.endswith("_") and not op.endswith("__"):
        return f"aten.{op[:-1]}.{parts[2]}"
    return None


def op_name(node) -> str:
    """The ATen op name of a node without namespace, overload or in-place underscore
    (``relu`` for ``aten.relu_.default``)."""
    name = target_name(node.target)
    name = _functional_name(name) or name
    parts = name.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "aten" else parts[-1]


def mutated_input(node) -> Any | None:
    """The FX node an in-place operator writes to (its first argument), or None."""
    schema = getattr(node.target, "_schema", None)
    if schema is None or not schema.arguments or not node.args:
        return None
    info = schema.arguments[0].alias_info
    if info is not None and info.is_write and hasattr(node.args[0], "op"):
        return node.args[0]
    return None


def is_view(node) -> bool:
    """Whether an FX node's result aliases its input (a view), which an in-place write into
    it would also change: the IR has values, not storage, so that cannot be converted."""
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    if schema is None or not schema.returns:
        return False
    info = schema.returns[0].alias_info
    return info is not None and not info.is_write


def dtype_of_torch(dtype) -> DType:
    """The IR dtype of a torch dtype; FrontendError for one the IR has not."""
    table = {t: d for d, t in torch_dtypes().items()}
    if dtype not in table:
        raise FrontendError(f"torch dtype {dtype} is not supported by passlens")
    return table[dtype]


@dataclass
class ConvertContext:
    """What a converter needs: values of FX nodes so far, symbol names, the current node."""

    values: dict
    symbols: dict[str, Dim]
    node: Any = None
    graph_module: Any = None
    functions: dict = field(default_factory=dict)  # loop bodies, by name (shared by subgraphs)
    # FX nodes kept as opaque ops (no converter, or a use the converter refuses), shared by
    # subgraphs: node -> why
    opaque: dict = field(default_factory=dict)

    def add_function(self, hint: str, fn) -> str:
        """Add a private function (a loop body) to the module; returns its name."""
        from compiler.ir.names import fresh_name

        base = re.sub(r"[^A-Za-z0-9_]+", "_", hint).strip("_")[:48] or "body"
        if base[0].isdigit():
            base = "f_" + base
        name = fresh_name(base, set(self.functions) | {"main"})
        self.functions[name] = fn.with_attrs(private=True)
        return name

    def convert_graph(self, graph_module, inputs: Sequence[Any]) -> list[Any]:
        """Convert a subgraph (a branch of ``torch.cond``) applied to ``inputs``; returns the
        converted values of its outputs. Its nodes are not bound here: the caller puts them
        in a block."""
        sub = ConvertContext(
            {},
            self.symbols,
            graph_module=graph_module,
            functions=self.functions,
            opaque=self.opaque,
        )
        placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(inputs):
            raise FrontendError(
                f"a subgraph takes {len(placeholders)} inputs but is given {len(inputs)}"
            )
        for node, value in zip(placeholders, inputs, strict=True):
            sub.values[node.name] = value
        outputs: list[Any] = []
        for node in graph_module.graph.nodes:
            if node.op == "get_attr":
                sub.values[node.name] = read_attribute(graph_module, node.target)
            elif node.op == "call_function":
                sub.node = node
                sub.values[node.name] = convert_node(sub, node)
                target = mutated_input(node)
                if target is not None:
                    sub.values[target.name] = sub.values[node.name]
            elif node.op == "output":
                outs = node.args[0]
                outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
                outputs = [lookup(sub.values, o) for o in outs]
        return outputs

    def arg(self, args: list, kwargs: dict) -> dict[str, Any]:
        """The current node's converted arguments by schema name, defaults filled in."""
        schema = getattr(self.node.target, "_schema", None)
        if schema is None:
            raise FrontendError(f"{target_name(self.node.target)} has no schema")
        out: dict[str, Any] = {}
        positional = [a for a in schema.arguments if not a.kwarg_only]
        for i, a in enumerate(positional):
            if i < len(args):
                out[a.name] = args[i]
        for a in schema.arguments:
            if a.name in out:
                continue
            if a.name in kwargs:
                out[a.name] = kwargs[a.name]
            elif a.has_default_value():
                out[a.name] = a.default_value
            else:
                out[a.name] = None
        return out

    @property
    def out_dtype(self) -> DType:
        """The dtype torch.export recorded for the current node's (first) result."""
        val = self.node.meta.get("val")
        if isinstance(val, (list, tuple)):
            val = val[0]
        if val is None or not hasattr(val, "dtype"):
            raise FrontendError(f"torch recorded no tensor type for {self.node.name}")
        return dtype_of_torch(val.dtype)

    @property
    def out_shape(self) -> list[Dim] | None:
        """The shape torch.export recorded for the current node's result, as dims."""
        val = self.node.meta.get("val")
        if val is None or not hasattr(val, "shape"):
            return None
        return [self.dim(d) for d in val.shape]

    def expr(self, value: Any, like: Expr | None = None) -> Expr:
        """``value`` as an IR expression; Python numbers become constants of ``like``'s dtype."""
        if isinstance(value, Expr):
            return value
        if isinstance(value, (bool, int, float)):
            dtype = like.ty.dtype if like is not None and isinstance(like.ty, TensorType) else None
            if dtype is None:
                dtype = (
                    DType.bool
                    if isinstance(value, bool)
                    else (DType.int64 if isinstance(value, int) else DType.float32)
                )
            return Constant(np.asarray(value, dtype=dtype.numpy))
        raise FrontendError(f"cannot use {value!r} as a tensor value")

    def dim(self, value: Any) -> Dim:
        """A torch size (int or SymInt) as a dim."""
        return symint_to_dim(value, self.symbols)


def symint_to_dim(value: Any, symbols: dict[str, Dim]) -> Dim:
    """An int, SymInt or sympy expression as a dim (symbols renamed through ``symbols``)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, SymExpr):
        return value
    expr = getattr(getattr(value, "node", None), "expr", value)
    import sympy

    kind = type(expr).__name__
    if isinstance(expr, sympy.Integer):
        return int(expr)
    if any(str(s).startswith("u") for s in getattr(expr, "free_symbols", ())):
        return ANY  # torch's unbacked sizes (u0: x[mask]'s length) are known only at run time
    if isinstance(expr, sympy.Symbol):
        name = str(expr)
        return symbols.setdefault(name, sym(name))
    if isinstance(expr, sympy.Add):
        out: Dim = 0
        for a in expr.args:
            out = out + symint_to_dim(a, symbols)
        return out
    if isinstance(expr, sympy.Mul):
        out = 1
        for a in expr.args:
            out = out * symint_to_dim(a, symbols)
        return out
    if isinstance(expr, sympy.Pow) and isinstance(expr.exp, sympy.Integer) and expr.exp > 0:
        base = symint_to_dim(expr.base, symbols)
        out = 1
        for _ in range(int(expr.exp)):
            out = out * base
        return out
    if kind in ("FloorDiv", "CleanDiv"):
        base, div = expr.args
        return symint_to_dim(base, symbols) // symint_to_dim(div, symbols)
    if kind in ("Mod", "PythonMod"):
        base, div = expr.args
        return symint_to_dim(base, symbols) % symint_to_dim(div, symbols)
    raise FrontendError(f"symbolic size {expr} is not supported (only +, *, //, % of sizes)")


def module_path_of(node) -> str | None:
    """The dotted path of the module an FX node came from (``stages.1.blocks.0``), or None."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    path, _ = list(stack.values())[-1]
    if path.startswith("_empty_nn_module_stack"):
        return None
    path = _clean_path(path)
    return path or None


def _clean_path(path: str) -> str:
    # older torch versions give L['self'].stages[1].blocks[0]; newer give stages.1.blocks.0
    path = re.sub(r"^L\['self'\]\.?", "", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    path = re.sub(r"\['([^']+)'\]", r".\1", path)
    return path.strip(".")


def _is_torch_file(path: str) -> bool:
    """Whether a frame's file is torch's own (``.../site-packages/torch/nn/modules/...``)."""
    parts = path.replace("\\", "/").split("/")
    return any(p in ("torch", "functorch", "torchgen") for p in parts[:-1])


def location_of(node) -> str | None:
    """``file:line`` of the model's code that made an FX node (from its stack trace), or None."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    if not frames:
        return None
    # the innermost frame of the model's code: not torch itself, not code torch generated
    # (``<eval_with_key>.3`` in the branches of torch.cond); a library the model comes from
    # (transformers' modeling_llama.py) is the model's code: its line is the one that used
    # the op, the user's wrapper only called it
    user = [f for f in frames if not _is_torch_file(f[0]) and not f[0].startswith("<")]
    file, line = (user or frames)[-1]
    return source_location(file, line)


def provenance_of(node) -> Provenance:
    """Provenance of the IR nodes made from an FX node."""
    return Provenance(
        framework="torch",
        module_path=module_path_of(node),
        source_op=target_name(node.target) if node.op == "call_function" else node.op,
        source_node=node.name,
        location=location_of(node),
    )


def read_attribute(graph_module, target: str) -> Any:
    """The object a ``get_attr`` node reads (a branch subgraph of ``torch.cond``)."""
    obj = graph_module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def lookup(values: dict, arg: Any) -> Any:
    """Map FX arguments (nodes, lists, tuples) to converted values."""
    if hasattr(arg, "op") and hasattr(arg, "name") and hasattr(arg, "target"):
        return values[arg.name]
    if isinstance(arg, (list, tuple)):
        return type(arg)(lookup(values, a) for a in arg)
    return arg


def convert_node(ctx: ConvertContext, node) -> Any:
    """Convert an FX ``call_function`` node with its registered converter, check the result
    against what torch.export recorded and give the new IR nodes the node's provenance; any
    failure becomes a FrontendError naming the node and where it came from."""
    conv = convert_opaque if node in ctx.opaque else find_converter(node.target)
    args = [lookup(ctx.values, a) for a in node.args]
    kwargs = {k: lookup(ctx.values, v) for k, v in node.kwargs.items()}
    known = _existing_ids(args, kwargs)
    try:
        out = conv(ctx, node, args, kwargs)
        _check_result(ctx, node, out)
    except Exception as e:  # never a deep crash: say which node failed and where it came from
        where = provenance_of(node).describe()
        msg = str(e) if isinstance(e, (FrontendError, IRError)) else f"{type(e).__name__}: {e}"
        raise FrontendError(
            f"converting {node.name} = {target_name(node.target)} at {where}: {msg}"
        ) from e
    prov = provenance_of(node)
    if prov.module_path is None:  # no module stack (inside torch.cond): the weights' module
        prov = replace(prov, module_path=_weight_module(args))
    return _stamp(out, prov, known, node.name)


# ----- opaque ops: what has no converter, kept as it is and run by torch -------------------


def opaque_problem(node) -> str | None:
    """Why an FX node cannot be kept as an opaque op (None when it can): only a torch
    operator (an OpOverload, called as ``torch.ops.ns.name.overload``) that writes into none
    of its arguments but an in-place op's first, and whose results torch.export typed."""
    target = node.target
    schema = getattr(target, "_schema", None)
    if schema is None or not hasattr(target, "_overloadpacket"):
        return "not a torch operator passlens could call"
    from compiler.ir.attrs import TypeInferenceError
    from compiler.opaque.layout import check_target

    try:
        check_target("torch", target_name(target))
    except TypeInferenceError as e:
        return str(e)
    import torch

    if torch.Tag.nondeterministic_seeded in getattr(target, "tags", ()):
        # a check would compare two different random draws: a false finding, so refused
        return "random values (a converted model could not reproduce the original's numbers)"
    for i, a in enumerate(schema.arguments):
        info = a.alias_info
        if info is not None and info.is_write and i > 0:
            return f"it writes into its argument {a.name}"
    return _untyped(node.meta.get("val"))


def _untyped(val) -> str | None:
    if val is None:
        return "torch.export recorded no type for its result"
    if isinstance(val, (list, tuple)):
        if not val:
            return "it returns an empty list"
        for v in val:
            why = _untyped(v)
            if why is not None:
                return why
        return None
    if not (hasattr(val, "shape") and hasattr(val, "dtype")):
        return f"it returns a {type(val).__name__}, not tensors"
    try:
        dtype_of_torch(val.dtype)
    except FrontendError as e:
        return str(e)
    return None


def _recorded_type(ctx: ConvertContext, val) -> Any:
    if isinstance(val, (list, tuple)):
        return TupleType([_recorded_type(ctx, v) for v in val])
    return TensorType([ctx.dim(d) for d in val.shape], dtype_of_torch(val.dtype))


def convert_opaque(ctx: ConvertContext, node, args: list, kwargs: dict) -> Expr:
    """An FX node without a converter as an ``opaque`` call: its tensor arguments become the
    call's inputs, the rest are kept as attributes, its type is what torch.export recorded."""
    import torch

    from compiler.ir.nodes import Call
    from compiler.opaque.layout import input_ref, literal, opaque_attrs

    why = opaque_problem(node)
    if why is not None:
        raise FrontendError(f"no converter, and it cannot be kept as an opaque op: {why}")
    inputs: list[Expr] = []

    def lay(v: Any) -> Any:
        if isinstance(v, Expr):
            if not isinstance(v.ty, TensorType):
                raise FrontendError(f"an argument of type {v.ty} (only tensors are kept)")
            inputs.append(v)
            return input_ref(len(inputs) - 1)
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, str):
            return literal(v)
        if isinstance(v, SymExpr):
            return v
        if isinstance(v, (list, tuple)):
            return tuple(lay(x) for x in v)
        if isinstance(v, torch.dtype):
            return dtype_of_torch(v)
        if isinstance(v, torch.device):
            return literal(str(v))
        if v is ANY:
            raise FrontendError("an argument is a size known only at run time")
        raise FrontendError(f"an argument of type {type(v).__name__} cannot be kept")

    laid_args = [lay(a) for a in args]
    laid_kwargs = [(k, lay(v)) for k, v in kwargs.items()]
    ty = _recorded_type(ctx, node.meta.get("val"))
    attrs = opaque_attrs("torch", target_name(node.target), ty, laid_args, laid_kwargs, pure=True)
    return Call("opaque", inputs, attrs)


def _weight_module(args: list) -> str | None:
    """The module of the first weight among a node's direct arguments, if any."""
    for a in args:
        if isinstance(a, (Constant, Var)) and a.prov.source_op == "placeholder":
            if a.prov.module_path:
                return a.prov.module_path
    return None


def _check_result(ctx: ConvertContext, node, out: Any) -> None:
    """Compare a converter's result types with what torch.export recorded for the node; a
    difference is a converter bug, reported here rather than as wrong numbers later."""
    val = node.meta.get("val")
    if isinstance(out, Expr) and isinstance(out.ty, TensorType) and hasattr(val, "shape"):
        _check_tensor(ctx, out.ty, val)
    elif isinstance(out, (list, tuple)) and isinstance(val, (list, tuple)):
        for o, v in zip(out, val, strict=False):
            if isinstance(o, Expr) and isinstance(o.ty, TensorType) and hasattr(v, "shape"):
                _check_tensor(ctx, o.ty, v)
    elif isinstance(out, Expr) and isinstance(out.ty, TupleType) and isinstance(val, (list, tuple)):
        for t, v in zip(out.ty.fields, val, strict=False):
            if isinstance(t, TensorType) and hasattr(v, "shape"):
                _check_tensor(ctx, t, v)


def _check_tensor(ctx: ConvertContext, ty: TensorType, val) -> None:
    dtype = dtype_of_torch(val.dtype)
    try:
        shape = [ctx.dim(d) for d in val.shape]
    except FrontendError:
        shape = None
    ok = ty.dtype is dtype
    if ok and shape is not None and ty.shape is not None:
        ok = len(shape) == len(ty.shape) and all(
            dims_equal(a, b) is not False for a, b in zip(ty.shape, shape, strict=True)
        )
    if not ok:
        expected = TensorType(shape, dtype) if shape is not None else dtype
        raise FrontendError(f"the converted value has type {ty} but torch computes {expected}")


def _existing_ids(args, kwargs) -> set[int]:
    out: set[int] = set()

    def visit(v):
        if isinstance(v, Expr):
            out.add(id(v))
        elif isinstance(v, (list, tuple)):
            for x in v:
                visit(x)

    visit(args)
    visit(list(kwargs.values()))
    return out


def _stamp(out: Any, prov: Provenance, known: set[int], name: str) -> Any:
    if isinstance(out, Expr):
        return with_provenance(out, prov, known, name)
    if isinstance(out, (list, tuple)):
        return type(out)(_stamp(o, prov, known, f"{name}_{i}") for i, o in enumerate(out))
    return out
