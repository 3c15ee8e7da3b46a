"""``from_torch``: a torch.nn.Module or ExportedProgram -> IR Module, through torch.export.

Parameters and buffers become named Constants (state_dict names such as
``stages.1.blocks.0.pwconv1.weight``), or weight parameters after the runtime inputs when
``keep_params_as_input``. Every IR node gets provenance from the FX node it came from: the
module path (``nn_module_stack``), the ATen op, the FX node name and the user's file:line.
torch.export's symbolic sizes become symbolic dims, named after the ``torch.export.Dim``
the user gave where there is one. Operators without a converter, and supported operators used
in a way the IR cannot express (a converter's ``check``: batch norm in training mode, a
transposed convolution, an in-place write into a view), are reported all at once, each with
the module paths where it occurs, before anything is converted.

Converters live in ``torch_ops``. In-place operators use the functional converter and later
readers of the mutated value see the result; ``torch.cond`` becomes an IR ``If``. Each
converted node's type is compared with the shape and dtype torch.export recorded for it, so a
converter bug is reported at the node rather than as wrong numbers later. Bindings keep the
order of the FX graph; nodes no output needs are dropped.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from compiler.frontend.errors import FrontendError, UnsupportedOperatorError
from compiler.ir.nodes import (
    Constant,
    Expr,
    Function,
    IRError,
    Module,
    Tuple,
    Var,
    collect_bindings,
)
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import ANY, Dim, SymExpr, dims_equal, sym
from compiler.ir.types import DType, TensorType, TupleType
from compiler.passes.rewrite import with_provenance

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


def _target_name(target: Any) -> str:
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
    name = _target_name(target)
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
    name = _target_name(target)
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
    name = _target_name(node.target)
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


def _is_view(node) -> bool:
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    if schema is None or not schema.returns:
        return False
    info = schema.returns[0].alias_info
    return info is not None and not info.is_write


def _dtype_of_torch(dtype) -> DType:
    import torch

    table = {
        torch.float16: DType.float16,
        torch.bfloat16: DType.bfloat16,
        torch.float32: DType.float32,
        torch.float64: DType.float64,
        torch.int8: DType.int8,
        torch.int16: DType.int16,
        torch.int32: DType.int32,
        torch.int64: DType.int64,
        torch.uint8: DType.uint8,
        torch.bool: DType.bool,
    }
    if dtype not in table:
        raise FrontendError(f"torch dtype {dtype} is not supported by passlens")
    return table[dtype]


def tensor_to_numpy(t) -> np.ndarray:
    """A torch tensor's values as a numpy array (bfloat16 via ml_dtypes), copied."""
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(DType.bfloat16.numpy).copy()
    return t.numpy().copy()


@dataclass
class ConvertContext:
    """What a converter needs: values of FX nodes so far, symbol names, the current node."""

    values: dict
    symbols: dict[str, Dim]
    node: Any = None
    graph_module: Any = None

    def convert_graph(self, graph_module, inputs: Sequence[Any]) -> list[Any]:
        """Convert a subgraph (a branch of ``torch.cond``) applied to ``inputs``; returns the
        converted values of its outputs. Its nodes are not bound here: the caller puts them
        in a block."""
        sub = ConvertContext({}, self.symbols, graph_module=graph_module)
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
                sub.values[node.name] = _attribute(graph_module, node.target)
            elif node.op == "call_function":
                sub.node = node
                sub.values[node.name] = _convert_node(sub, node)
                target = mutated_input(node)
                if target is not None:
                    sub.values[target.name] = sub.values[node.name]
            elif node.op == "output":
                outs = node.args[0]
                outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
                outputs = [_lookup(sub.values, o) for o in outs]
        return outputs

    def arg(self, args: list, kwargs: dict) -> dict[str, Any]:
        """The current node's converted arguments by schema name, defaults filled in."""
        schema = getattr(self.node.target, "_schema", None)
        if schema is None:
            raise FrontendError(f"{_target_name(self.node.target)} has no schema")
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
        return _dtype_of_torch(val.dtype)

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


def _module_path(node) -> str | None:
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


def _location(node) -> str | None:
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
    return f"{file}:{line}"


def provenance_of(node) -> Provenance:
    """Provenance of the IR nodes made from an FX node."""
    return Provenance(
        framework="torch",
        module_path=_module_path(node),
        source_op=_target_name(node.target) if node.op == "call_function" else node.op,
        source_node=node.name,
        location=_location(node),
    )


def _export(model, example_args, dynamic_shapes, example_kwargs):
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        return model
    if not isinstance(model, torch.nn.Module):
        raise FrontendError(
            f"from_torch needs a torch.nn.Module or ExportedProgram, got {type(model).__name__}"
        )
    if example_args is None:
        raise FrontendError("from_torch needs example_args (a tuple of example inputs)")
    if not isinstance(example_args, tuple):
        example_args = (
            (example_args,) if not isinstance(example_args, list) else tuple(example_args)
        )
    was_training = model.training
    model.eval()
    try:
        return torch.export.export(
            model, example_args, kwargs=example_kwargs, dynamic_shapes=dynamic_shapes
        )
    except Exception as e:  # torch.export's own errors are long; keep the head and say so
        head = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FrontendError(
            f"torch.export could not capture the model: {type(e).__name__}: {head}"
        ) from e
    finally:
        model.train(was_training)


def _dim_names(ep, dynamic_shapes) -> dict[str, str]:
    """torch's symbol names (s77) -> the user's Dim names (batch), from the user inputs.

    ``dynamic_shapes`` is what torch.export took: a tuple (one spec per positional input) or
    a dict by input name; each spec maps an axis to a ``torch.export.Dim``."""
    names: dict[str, str] = {}
    if dynamic_shapes is None:
        return names
    user_inputs = list(ep.graph_signature.user_inputs)
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    if isinstance(dynamic_shapes, dict):
        pairs = []
        for i, (key, spec) in enumerate(dynamic_shapes.items()):
            name = (
                key if key in placeholders else (user_inputs[i] if i < len(user_inputs) else None)
            )
            pairs.append((name, spec))
    else:
        args = tuple(ep.example_inputs[0]) if ep.example_inputs else ()
        specs = tuple(dynamic_shapes)
        if len(specs) < len(args) and specs and isinstance(specs[-1], (list, tuple)):
            specs = specs[:-1] + tuple(specs[-1])  # the last spec is for ``*args``
        leaves = _spec_leaves(args, specs)
        if len(leaves) != len(user_inputs):  # cannot be matched up: keep torch's names
            return names
        pairs = list(zip(user_inputs, leaves, strict=True))
    for name, spec in pairs:
        node = placeholders.get(name) if name is not None else None
        val = node.meta.get("val") if node is not None else None
        if val is None or not hasattr(val, "shape") or not isinstance(spec, (dict, list, tuple)):
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for axis, dim in items:
            if dim is None or not isinstance(axis, int) or axis >= len(val.shape):
                continue
            user_name = getattr(dim, "__name__", None)
            expr = getattr(getattr(val.shape[axis], "node", None), "expr", None)
            if (
                isinstance(user_name, str)
                and user_name.isidentifier()
                and expr is not None
                and type(expr).__name__ == "Symbol"
            ):
                names[str(expr)] = user_name
    return names


def _spec_leaves(value, spec) -> list:
    """The per-tensor specs of ``dynamic_shapes`` in the order of the flattened inputs, read
    alongside the example input they describe: a tensor's spec is a dict by axis or a sequence
    of Dims; a tuple, list or dict input (``*args``) has one spec per element (or None)."""
    import torch

    if isinstance(value, torch.Tensor):
        while (
            isinstance(spec, (list, tuple))
            and len(spec) == 1
            and isinstance(spec[0], (dict, list, tuple))
        ):
            spec = spec[0]  # ``*args`` of one tensor: a per-tensor spec holds no containers
        return [spec]
    if isinstance(value, (list, tuple)):
        specs = spec if isinstance(spec, (list, tuple)) else [None] * len(value)
        return [leaf for v, sp in zip(value, specs, strict=False) for leaf in _spec_leaves(v, sp)]
    if isinstance(value, dict):
        specs = spec if isinstance(spec, dict) else {}
        return [leaf for k, v in value.items() for leaf in _spec_leaves(v, specs.get(k))]
    return []  # a constant input has no placeholder


def _check_supported(ep) -> None:
    """Raise UnsupportedOperatorError listing every operator (or use of one) that cannot be
    converted, each with the module paths where it occurs."""
    missing: dict[str, list[str]] = {}
    graphs = [m.graph for m in ep.graph_module.modules() if hasattr(m, "graph")]
    for node in (n for g in graphs for n in g.nodes):
        if node.op != "call_function":
            continue
        name = _target_name(node.target)
        reason = None
        if find_converter(node.target) is None:
            key = name
        else:
            check = find_check(node.target)
            try:
                reason = check(node) if check is not None else None
            except Exception as e:  # a check must never crash the import
                reason = f"arguments that could not be checked ({type(e).__name__}: {e})"
            target = mutated_input(node)
            if reason is None and target is not None and _is_view(target):
                reason = f"in place on a view: {target.name} = {_target_name(target.target)}"
            if reason is None:
                continue
            key = f"{name} ({reason})"
        where = _module_path(node) or "<model>"
        loc = _location(node)
        missing.setdefault(key, []).append(f"{where}" + (f" ({loc})" if loc else ""))
    if missing:
        raise UnsupportedOperatorError(missing)


def from_torch(
    model,
    example_args: Sequence | None = None,
    dynamic_shapes=None,
    keep_params_as_input: bool = False,
    example_kwargs: dict | None = None,
) -> Module:
    """Import a torch model (or ExportedProgram) through torch.export into an IR Module.

    ``dynamic_shapes`` is passed to torch.export and names the symbolic dims after the
    ``torch.export.Dim`` objects in it (with an ExportedProgram it only names them).
    ``keep_params_as_input`` makes parameters and buffers function parameters after the
    runtime inputs (``num_input``); :func:`weight_values` gives their values by name."""
    from compiler.frontend import torch_ops  # noqa: F401  (registers converters)

    ep = _export(model, example_args, dynamic_shapes, example_kwargs)
    _check_supported(ep)
    sig = ep.graph_signature
    renames = _dim_names(ep, dynamic_shapes)
    symbols: dict[str, Dim] = {old: sym(new) for old, new in renames.items()}
    state = dict(ep.state_dict)
    constants = dict(getattr(ep, "constants", {}) or {})
    kind_of: dict[str, tuple[str, str | None]] = {}
    for spec in sig.input_specs:
        kind_of[spec.arg.name] = (spec.kind.name, getattr(spec, "target", None))

    values: dict = {}
    inputs: list[Var] = []
    weights: list[tuple[Var, np.ndarray]] = []
    shared: dict[tuple, np.ndarray] = {}
    ctx = ConvertContext(values, symbols, graph_module=ep.graph_module)
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            continue
        kind, target = kind_of.get(node.name, ("USER_INPUT", None))
        prov = Provenance(
            framework="torch",
            module_path=_param_module(target),
            source_op="placeholder",
            source_node=node.name,
        )
        if kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            tensor = state.get(target) if target in state else constants.get(target)
            if tensor is None:
                raise FrontendError(
                    f"no value for {kind.lower()} {target!r} in the exported program"
                )
            data = _shared_array(tensor, shared)
            if keep_params_as_input and kind in ("PARAMETER", "BUFFER"):
                var = Var(target, TensorType(data.shape, DType.of(data.dtype)), prov=prov)
                weights.append((var, data))
                values[node.name] = var
            else:
                values[node.name] = Constant(data, name=target, prov=prov)
        elif kind == "USER_INPUT":
            val = node.meta.get("val")
            if val is None or not hasattr(val, "shape"):
                raise FrontendError(
                    f"input {node.name} is a {type(val).__name__}; only tensor inputs are supported"
                )
            ty = TensorType([ctx.dim(d) for d in val.shape], _dtype_of_torch(val.dtype))
            var = Var(node.name, ty, prov=Provenance(framework="torch", source_node=node.name))
            inputs.append(var)
            values[node.name] = var
        else:
            raise FrontendError(f"input kind {kind} of {node.name} is not supported")

    output: Expr | None = None
    order: list[Expr] = []  # bindings in the order of the FX graph
    bound: set[int] = set()
    for node in ep.graph.nodes:
        if node.op == "get_attr":
            values[node.name] = _attribute(ep.graph_module, node.target)
        elif node.op == "call_function":
            ctx.node = node
            values[node.name] = _convert_node(ctx, node)
            _bind_new(values[node.name], order, bound)
            target = mutated_input(node)
            if target is not None:  # in place: later readers of the input see the result
                values[target.name] = values[node.name]
        elif node.op == "output":
            output = _output(ctx, node, sig)
            _bind_new(output, order, bound)
    if output is None:
        raise FrontendError("the exported graph has no output")
    params = inputs + [v for v, _ in weights]
    attrs = {"num_input": len(inputs)}
    used = {id(b) for b in collect_bindings([output])}
    fn = Function(params, [b for b in order if id(b) in used], output, attrs)
    module = Module({"main": fn})
    if weights:
        values_attr = tuple(Constant(d, name=v.name, prov=v.prov) for v, d in weights)
        module = module.replace(attrs={"param_values": values_attr})
    return module


def _attribute(graph_module, target: str) -> Any:
    """The object a ``get_attr`` node reads (a branch subgraph of ``torch.cond``)."""
    obj = graph_module
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _bind_new(value: Any, order: list[Expr], bound: set[int]) -> None:
    """Append the not yet bound nodes ``value`` needs to ``order``, dependencies first."""
    if isinstance(value, (list, tuple)):
        for v in value:
            _bind_new(v, order, bound)
        return
    if isinstance(value, Expr):
        fresh = collect_bindings([value], bound)
        order.extend(fresh)
        bound.update(id(b) for b in fresh)


def _shared_array(tensor, shared: dict[tuple, np.ndarray]) -> np.ndarray:
    """A read-only numpy copy of a weight; tensors sharing storage (tied weights such as a
    GPT's ``wte.weight`` and ``lm_head.weight``) share one array."""
    key = None
    try:
        key = (
            tensor.untyped_storage().data_ptr(),
            tensor.storage_offset(),
            tuple(tensor.shape),
            tuple(tensor.stride()),
            tensor.dtype,
        )
    except Exception:  # tensors without storage (fake, sparse): no sharing
        key = None
    if key is not None and key in shared:
        return shared[key]
    data = tensor_to_numpy(tensor)
    data.flags.writeable = False
    if key is not None:
        shared[key] = data
    return data


def _output(ctx: ConvertContext, node, sig) -> Expr:
    """The function output: the user outputs (mutated buffers and inputs are dropped)."""
    outs = node.args[0]
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    specs = list(getattr(sig, "output_specs", []) or [])
    if len(specs) == len(outs):
        outs = [o for o, spec in zip(outs, specs, strict=True) if spec.kind.name == "USER_OUTPUT"]
    exprs: list[Expr] = []
    for o in outs:
        value = _lookup(ctx.values, o)
        if value is None:
            raise FrontendError("the model returns None, which the IR cannot represent")
        if not isinstance(value, Expr):
            from compiler.frontend.torch_ops import dim_tensor

            if isinstance(value, (int, SymExpr)) and not isinstance(value, bool):
                value = dim_tensor(value)  # a size returned as a value
            else:
                value = ctx.expr(value)
        exprs.append(value)
    if len(exprs) == 1:
        return exprs[0]
    return Tuple(exprs, prov=Provenance(framework="torch", source_node="output"), name="output")


def _param_module(target: str | None) -> str | None:
    if not target or "." not in target:
        return None
    return target.rsplit(".", 1)[0]


def _lookup(values: dict, arg: Any) -> Any:
    """Map FX arguments (nodes, lists, tuples) to converted values."""
    if hasattr(arg, "op") and hasattr(arg, "name") and hasattr(arg, "target"):
        return values[arg.name]
    if isinstance(arg, (list, tuple)):
        return type(arg)(_lookup(values, a) for a in arg)
    return arg


def _convert_node(ctx: ConvertContext, node) -> Any:
    conv = find_converter(node.target)
    args = [_lookup(ctx.values, a) for a in node.args]
    kwargs = {k: _lookup(ctx.values, v) for k, v in node.kwargs.items()}
    known = _existing_ids(args, kwargs)
    try:
        out = conv(ctx, node, args, kwargs)
        _check_result(ctx, node, out)
    except Exception as e:  # never a deep crash: say which node failed and where it came from
        where = provenance_of(node).describe()
        msg = str(e) if isinstance(e, (FrontendError, IRError)) else f"{type(e).__name__}: {e}"
        raise FrontendError(
            f"converting {node.name} = {_target_name(node.target)} at {where}: {msg}"
        ) from e
    prov = provenance_of(node)
    if prov.module_path is None:  # no module stack (inside torch.cond): the weights' module
        prov = replace(prov, module_path=_weight_module(args))
    return _stamp(out, prov, known, node.name)


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
    dtype = _dtype_of_torch(val.dtype)
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


def weight_values(module: Module) -> dict[str, np.ndarray]:
    """The weight arrays of a module imported with ``keep_params_as_input``, by param name
    (kept in the module attribute ``param_values``)."""
    return {c.name: c.data for c in module.attrs.get("param_values", ())}
