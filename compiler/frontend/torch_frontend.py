"""``from_torch``: a torch.nn.Module or ExportedProgram -> IR Module, through torch.export.

Parameters and buffers become named Constants (state_dict names such as
``stages.1.blocks.0.pwconv1.weight``), or weight parameters after the runtime inputs when
``keep_params_as_input``. Every IR node gets provenance from the FX node it came from: the
module path (``nn_module_stack``), the ATen op, the FX node name and the user's file:line.
torch.export's symbolic sizes become symbolic dims, named after the ``torch.export.Dim``
the user gave where there is one. Operators without a converter are reported all at once,
each with the module path where it occurs.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from compiler.frontend.errors import FrontendError, UnsupportedOperatorError
from compiler.ir.nodes import Constant, Expr, Function, IRError, Module, Tuple, Var
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import Dim, SymExpr, sym
from compiler.ir.types import DType, TensorType
from compiler.passes.rewrite import with_provenance


Converter = Callable[["ConvertContext", Any, list, dict], Any]
ATEN_CONVERTERS: dict[str, Converter] = {}


def converts(*targets: str):
    """Register a converter for ATen targets (``aten.linear.default`` or ``aten.linear``)."""

    def deco(fn: Converter) -> Converter:
        for t in targets:
            ATEN_CONVERTERS[t] = fn
        return fn

    return deco


def _target_name(target: Any) -> str:
    if isinstance(target, str):
        return target
    name = getattr(target, "__module__", "") or ""
    if name == "_operator" or target in _PY_OPS:
        return f"operator.{target.__name__}"
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


def find_converter(target: Any) -> Optional[Converter]:
    """The converter for an FX target: exact overload first, then the overload packet."""
    name = _target_name(target)
    if name in ATEN_CONVERTERS:
        return ATEN_CONVERTERS[name]
    packet = name.rsplit(".", 1)[0] if name.startswith("aten.") else name
    return ATEN_CONVERTERS.get(packet)


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

    def expr(self, value: Any, like: Optional[Expr] = None) -> Expr:
        """``value`` as an IR expression; Python numbers become constants of ``like``'s dtype."""
        if isinstance(value, Expr):
            return value
        if isinstance(value, (bool, int, float)):
            dtype = like.ty.dtype if like is not None and isinstance(like.ty, TensorType) else None
            if dtype is None:
                dtype = DType.bool if isinstance(value, bool) else (
                    DType.int64 if isinstance(value, int) else DType.float32
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
    try:
        import sympy
    except ImportError:  # pragma: no cover
        raise FrontendError(f"cannot read symbolic size {value!r}") from None
    if isinstance(expr, sympy.Integer):
        return int(expr)
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
    if isinstance(expr, sympy.floor) or type(expr).__name__ == "FloorDiv":
        if type(expr).__name__ == "FloorDiv":
            base, div = expr.args
            return symint_to_dim(base, symbols) // symint_to_dim(div, symbols)
    if type(expr).__name__ == "Mod" or isinstance(expr, sympy.Mod):
        base, div = expr.args
        return symint_to_dim(base, symbols) % symint_to_dim(div, symbols)
    raise FrontendError(f"symbolic size {expr} is not supported (only +, *, //, % of sizes)")


def _module_path(node) -> Optional[str]:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    path, _ = list(stack.values())[-1]
    path = _clean_path(path)
    return path or None


def _clean_path(path: str) -> str:
    # older torch versions give L['self'].stages[1].blocks[0]; newer give stages.1.blocks.0
    path = re.sub(r"^L\['self'\]\.?", "", path)
    path = re.sub(r"\[(\d+)\]", r".\1", path)
    path = re.sub(r"\['([^']+)'\]", r".\1", path)
    return path.strip(".")


def _location(node) -> Optional[str]:
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    if not frames:
        return None
    user = [f for f in frames if "site-packages" not in f[0] and "/torch/" not in f[0]]
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
        raise FrontendError(f"from_torch needs a torch.nn.Module or ExportedProgram, got {type(model).__name__}")
    if example_args is None:
        raise FrontendError("from_torch needs example_args (a tuple of example inputs)")
    if not isinstance(example_args, tuple):
        example_args = (example_args,) if not isinstance(example_args, list) else tuple(example_args)
    was_training = model.training
    model.eval()
    try:
        return torch.export.export(model, example_args, kwargs=example_kwargs, dynamic_shapes=dynamic_shapes)
    except Exception as e:  # torch.export's own errors are long; keep the head and say so
        head = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FrontendError(f"torch.export could not capture the model: {type(e).__name__}: {head}") from e
    finally:
        model.train(was_training)


def _dim_names(ep, dynamic_shapes) -> dict[str, str]:
    """torch's symbol names (s77) -> the user's Dim names (batch), from the user inputs."""
    import torch

    names: dict[str, str] = {}
    if dynamic_shapes is None:
        return names
    specs = list(dynamic_shapes.values()) if isinstance(dynamic_shapes, dict) else list(dynamic_shapes)
    user_nodes = [
        n for n in ep.graph.nodes
        if n.op == "placeholder" and n.name in set(ep.graph_signature.user_inputs)
    ]
    for node, spec in zip(user_nodes, specs):
        val = node.meta.get("val")
        if val is None or not hasattr(val, "shape") or spec is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for axis, dim in items:
            if dim is None or axis >= len(val.shape):
                continue
            user_name = getattr(dim, "__name__", None)
            expr = getattr(getattr(val.shape[axis], "node", None), "expr", None)
            if user_name and expr is not None and type(expr).__name__ == "Symbol":
                names[str(expr)] = user_name
    return names


def _check_supported(ep) -> None:
    missing: dict[str, list[str]] = {}
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        if find_converter(node.target) is None:
            where = _module_path(node) or "<model>"
            loc = _location(node)
            missing.setdefault(_target_name(node.target), []).append(
                f"{where}" + (f" ({loc})" if loc else "")
            )
    if missing:
        raise UnsupportedOperatorError(missing)


def from_torch(
    model,
    example_args: Optional[Sequence] = None,
    dynamic_shapes=None,
    keep_params_as_input: bool = False,
    example_kwargs: Optional[dict] = None,
) -> Module:
    """Import a torch model (or ExportedProgram) through torch.export into an IR Module."""
    from compiler.frontend import torch_ops  # noqa: F401  (registers converters)

    ep = _export(model, example_args, dynamic_shapes, example_kwargs)
    _check_supported(ep)
    sig = ep.graph_signature
    renames = _dim_names(ep, dynamic_shapes)
    symbols: dict[str, Dim] = {old: sym(new) for old, new in renames.items()}
    state = dict(ep.state_dict)
    constants = dict(getattr(ep, "constants", {}) or {})
    kind_of: dict[str, tuple[str, str]] = {}
    for spec in sig.input_specs:
        kind_of[spec.arg.name] = (spec.kind.name, getattr(spec, "target", None))

    values: dict = {}
    inputs: list[Var] = []
    weights: list[Var] = []
    ctx = ConvertContext(values, symbols)
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            continue
        kind, target = kind_of.get(node.name, ("USER_INPUT", None))
        prov = Provenance(framework="torch", module_path=_param_module(target), source_node=node.name)
        if kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            tensor = state.get(target) if target in state else constants.get(target)
            if tensor is None:
                raise FrontendError(f"no value for {kind.lower()} {target!r} in the exported program")
            data = tensor_to_numpy(tensor)
            if keep_params_as_input and kind in ("PARAMETER", "BUFFER"):
                var = Var(target, TensorType(data.shape, DType.of(data.dtype)), prov=prov)
                weights.append((var, data))
                values[node.name] = var
            else:
                values[node.name] = Constant(data, name=target, prov=prov)
        elif kind == "USER_INPUT":
            val = node.meta.get("val")
            if val is None or not hasattr(val, "shape"):
                raise FrontendError(f"input {node.name} is not a tensor; only tensor inputs are supported")
            ty = TensorType([ctx.dim(d) for d in val.shape], _dtype_of_torch(val.dtype))
            var = Var(node.name, ty, prov=prov)
            inputs.append(var)
            values[node.name] = var
        else:
            raise FrontendError(f"input kind {kind} of {node.name} is not supported")

    output: Optional[Expr] = None
    for node in ep.graph.nodes:
        if node.op == "call_function":
            ctx.node = node
            values[node.name] = _convert_node(ctx, node)
        elif node.op == "output":
            outs = node.args[0]
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            exprs = [_lookup(values, o) for o in outs]
            exprs = [ctx.expr(e) for e in exprs]
            output = exprs[0] if len(exprs) == 1 else Tuple(exprs, prov=Provenance(framework="torch", source_node="output"), name="output")
    if output is None:
        raise FrontendError("the exported graph has no output")
    params = inputs + [v for v, _ in weights]
    attrs = {"num_input": len(inputs)}
    fn = Function.from_output(params, output, attrs)
    module = Module({"main": fn})
    if weights:
        values_attr = tuple(Constant(d, name=v.name, prov=v.prov) for v, d in weights)
        module = module.replace(attrs={"param_values": values_attr})
    return module


def _param_module(target: Optional[str]) -> Optional[str]:
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
    except (FrontendError, IRError, TypeError, ValueError) as e:
        where = provenance_of(node).describe()
        raise FrontendError(f"converting {node.name} = {_target_name(node.target)} at {where}: {e}") from e
    return _stamp(out, provenance_of(node), known, node.name)


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
