"""``from_torch``: a torch.nn.Module or ExportedProgram -> IR Module, through torch.export.

Parameters and buffers become named Constants (state_dict names such as
``stages.1.blocks.0.pwconv1.weight``), or weight parameters after the runtime inputs when
``keep_params_as_input``. Every IR node gets provenance from the FX node it came from: the
module path (``nn_module_stack``), the ATen op, the FX node name and the user's file:line.
torch.export's symbolic sizes become symbolic dims, named after the ``torch.export.Dim``
the user gave where there is one. With ``strict=True``, operators without a converter, and
supported operators used in a way the IR cannot express (a converter's ``check``: batch norm
in training mode, a transposed convolution, an in-place write into a view), are reported all at
once, each with the module paths where it occurs, before anything is converted; by default
they become opaque ops (below), and only what cannot be one is reported.

Converters live in ``torch_ops`` and register in ``torch_convert``, which also converts the
nodes. In-place operators use the functional converter and later readers of the mutated value
see the result; ``torch.cond`` becomes an IR ``If``. Each converted node's type is compared
with the shape and dtype torch.export recorded for it, so a converter bug is reported at the
node rather than as wrong numbers later. Bindings keep the order of the FX graph; nodes no
output needs are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.frontend.errors import FrontendError, UnsupportedOperatorError
from compiler.frontend.torch_convert import (
    ConvertContext,
    convert_node,
    dtype_of_torch,
    find_check,
    find_converter,
    is_view,
    location_of,
    lookup,
    module_path_of,
    mutated_input,
    read_attribute,
    target_name,
)
from compiler.frontend.torch_functionalize import functionalized
from compiler.ir.nodes import Constant, Expr, Function, Module, Tuple, Var, collect_bindings
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import Dim, SymExpr, sym
from compiler.ir.types import DType, TensorType


def tensor_to_numpy(t) -> np.ndarray:
    """A torch tensor's values as a numpy array (bfloat16 via ml_dtypes), copied."""
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(DType.bfloat16.numpy).copy()
    return t.numpy().copy()


def export_torch(model, example_args=None, dynamic_shapes=None, example_kwargs=None):
    """The ExportedProgram ``from_torch`` imports: torch.export of ``model`` in eval mode (its
    training flag is restored after), with torch.export's failure as a FrontendError; an
    ExportedProgram is taken as it is. Either is functionalised first when it writes in
    place into a view (``torch_functionalize``). The explorer calls it to show the FX graph
    it imports, and to check against, from the same capture."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        return functionalized(model)
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
        try:
            ep, log = _export_quietly(model, example_args, example_kwargs, dynamic_shapes)
        except Exception as e:
            if not _can_drop_cache(model, example_kwargs, e):
                raise
            # a Hugging Face model returns its key/value cache by default, an object
            # torch.export cannot output: the same forward without it, captured with the
            # config's use_cache off (restored after; the logits are the same, and the
            # reference runs this same exported graph)
            model.config.use_cache = False
            try:
                ep, log = _export_quietly(model, example_args, example_kwargs, dynamic_shapes)
            finally:
                model.config.use_cache = True
    except Exception as e:  # torch.export's own errors are long; keep the head and say so
        error = FrontendError(_capture_error(model, example_kwargs, e))
        error.torch_log = getattr(e, "_passlens_torch_log", [])
        raise error from e
    finally:
        model.train(was_training)
    log.replay()  # what torch said on the way (warnings), now that it worked
    return functionalized(ep)


def _export_quietly(model, example_args, example_kwargs, dynamic_shapes):
    """torch.export with torch's log held back (torch_logs); a failure carries the log's
    lines on the exception (``_passlens_torch_log``)."""
    import torch

    from compiler.frontend.torch_logs import held_torch_logs

    with held_torch_logs() as log:
        try:
            ep = torch.export.export(
                model, example_args, kwargs=example_kwargs, dynamic_shapes=dynamic_shapes
            )
        except Exception as e:
            e._passlens_torch_log = log.lines()
            raise
    return ep, log


def _returns_cache(e: BaseException) -> bool:
    """torch.export failed because the output holds a transformers cache object."""
    text = str(e)
    return "in output" in text and "cache_utils" in text and "pytree" in text


def _can_drop_cache(model, example_kwargs, e: BaseException) -> bool:
    """The capture failed on a Hugging Face cache output that ``config.use_cache = False``
    drops: the model has such a config, and the user did not pass ``use_cache``."""
    config = getattr(model, "config", None)
    if not _returns_cache(e) or getattr(config, "use_cache", None) is not True:
        return False
    return not (example_kwargs and "use_cache" in example_kwargs)


def _capture_error(model, example_kwargs, e: BaseException) -> str:
    """One line for torch.export's failure: the head of torch's message, or what to do."""
    if _returns_cache(e):
        kind = "a Hugging Face cache (DynamicCache)"
        return (
            f"torch.export could not capture the model: it returns {kind}, which torch.export "
            "cannot output; build the model with use_cache=False (config.use_cache = False) "
            "or have forward return only tensors"
        )
    head = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return f"torch.export could not capture the model: {type(e).__name__}: {head}"


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


def _check_supported(ep, strict: bool = False) -> dict:
    """The FX nodes to keep as opaque ops (no converter, or a use their converter refuses),
    each with why. Raises UnsupportedOperatorError listing every operator (or use of one)
    that can be neither converted nor kept opaque, or, with ``strict``, that cannot be
    converted, each with the module paths where it occurs."""
    from compiler.frontend.torch_convert import opaque_problem

    missing: dict[str, list[str]] = {}
    opaque: dict = {}
    graphs = [m.graph for m in ep.graph_module.modules() if hasattr(m, "graph")]
    for node in (n for g in graphs for n in g.nodes):
        if node.op != "call_function":
            continue
        name = target_name(node.target)
        reason = None
        keep = node  # the node kept opaque when this one cannot be converted
        target = mutated_input(node)
        view = None
        if target is not None and is_view(target):
            # the IR has values, not storage: no op, opaque or not, can stand for the write
            view = f"in place on a view: {target.name} = {target_name(target.target)}"
            keep = None
        if find_converter(node.target) is None:
            key = name if view is None else f"{name} ({view})"
            reason = "no converter"
        else:
            check = find_check(node.target)
            try:
                reason = check(node) if check is not None else None
            except Exception as e:  # a check must never crash the import
                reason = f"arguments that could not be checked ({type(e).__name__}: {e})"
            reason = reason or view
            if reason is None:
                continue
            key = f"{name} ({reason})"
            if target_name(node.target) == "operator.getitem":
                keep = node.args[0]  # an output the converter does not make: keep the producer
        if not strict and keep is not None:
            problem = opaque_problem(keep)
            if problem is None:
                opaque[keep] = reason
                continue
            key = f"{key}; cannot be kept as an opaque op: {problem}"
        where = module_path_of(node) or "<model>"
        loc = location_of(node)
        missing.setdefault(key, []).append(f"{where}" + (f" ({loc})" if loc else ""))
    if missing:
        raise UnsupportedOperatorError(missing)
    return opaque


def from_torch(
    model,
    example_args: Sequence | None = None,
    dynamic_shapes=None,
    keep_params_as_input: bool = False,
    example_kwargs: dict | None = None,
    strict: bool = False,
) -> Module:
    """Import a torch model (or ExportedProgram) through torch.export into an IR Module.

    ``dynamic_shapes`` is passed to torch.export and names the symbolic dims after the
    ``torch.export.Dim`` objects in it (with an ExportedProgram it only names them).
    ``keep_params_as_input`` makes parameters and buffers function parameters after the
    runtime inputs (``num_input``); :func:`weight_values` gives their values by name.

    An operator without a converter (or used in a way its converter refuses) is kept as an
    ``opaque`` op that torch runs (compiler/ops/opaque.py), typed from what torch.export
    recorded; ``strict=True`` refuses such a model instead (UnsupportedOperatorError)."""
    from compiler.frontend import torch_ops  # noqa: F401  (registers converters)

    ep = export_torch(model, example_args, dynamic_shapes, example_kwargs)
    opaque = _check_supported(ep, strict)
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
    ctx = ConvertContext(values, symbols, graph_module=ep.graph_module, opaque=opaque)
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
            ty = TensorType([ctx.dim(d) for d in val.shape], dtype_of_torch(val.dtype))
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
            values[node.name] = read_attribute(ep.graph_module, node.target)
        elif node.op == "call_function":
            ctx.node = node
            values[node.name] = convert_node(ctx, node)
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
    module = Module({"main": fn, **ctx.functions})
    if weights:
        values_attr = tuple(Constant(d, name=v.name, prov=v.prov) for v, d in weights)
        module = module.replace(attrs={"param_values": values_attr})
    return module


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
    """A read-only numpy view of a weight (see ``_weight_view``); tensors sharing storage
    (tied weights such as a GPT's ``wte.weight`` and ``lm_head.weight``) share one array."""
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
    data = _weight_view(tensor)
    data.flags.writeable = False
    if key is not None:
        shared[key] = data
    return data


def _weight_view(tensor) -> np.ndarray:
    """A weight's values without a copy: a numpy view of the model's own memory on the CPU (a
    1B-parameter model's weights are 5 GB: a copy doubled the memory an import takes; TVM
    copies them too). The view keeps the storage alive when the model drops its tensor
    (``model.half()``); a model changed in place after the import (an optimizer step) changes
    the constants of the steps that read the weight as it is. A copy where no view is possible
    (another device, a conjugated tensor)."""
    import torch

    t = tensor.detach()
    if t.device.type == "cpu" and not t.is_conj() and not t.is_neg() and t.layout == torch.strided:
        try:
            if t.dtype == torch.bfloat16:
                return t.view(torch.int16).numpy().view(DType.bfloat16.numpy)
            return t.numpy()
        except (RuntimeError, TypeError):  # a dtype numpy cannot view: copied below
            pass
    return tensor_to_numpy(t)


def _output(ctx: ConvertContext, node, sig) -> Expr:
    """The function output: the user outputs (mutated buffers and inputs are dropped)."""
    outs = node.args[0]
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    specs = list(getattr(sig, "output_specs", []) or [])
    if len(specs) == len(outs):
        outs = [o for o, spec in zip(outs, specs, strict=True) if spec.kind.name == "USER_OUTPUT"]
    exprs: list[Expr] = []
    for o in outs:
        value = lookup(ctx.values, o)
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


def weight_values(module: Module) -> dict[str, np.ndarray]:
    """The weight arrays of a module imported with ``keep_params_as_input``, by param name
    (kept in the module attribute ``param_values``)."""
    return {c.name: c.data for c in module.attrs.get("param_values", ())}
