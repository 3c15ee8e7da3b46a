"""An FX graph of torch.compile as passlens's neutral graph model, and its text.

Every FX node becomes a graph node with its FX name as id: placeholders are inputs, or
weights when they take a parameter or buffer of the model (Dynamo passes them as inputs; the
ATen graph after AOTAutograd takes them in the same order); `get_attr` nodes are weights
(constants Inductor folded or lifted); calls are ops named by their target
(`aten.addmm.default`, `torch._C._nn.linear`, `method sum`); the output node is the
return. Types come from the node's fake value (`meta["val"]` / `meta["example_value"]`)
in passlens's notation, symbolic dims as text (`f32[s77, 8]`). Provenance is the user's
module (`nn_module_stack`: `layers.0.mlp`), the op, the FX node and the last user frame of
`stack_trace` (`model.py:12`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from explorer.graph import GraphEdge, GraphModel, GraphNode, Param

if TYPE_CHECKING:
    from explorer.inductor.module import FXModule, FXState

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_ROOT = re.compile(r"^L\[['\"][^'\"]+['\"]\]\.?")
_MODULES = re.compile(r"\._modules\[['\"]([^'\"]+)['\"]\]")
_INDEX = re.compile(r"\[['\"]?([\w.]+)['\"]?\]")
_GETATTR = re.compile(r"getattr\(([^,()]+), ['\"]([^'\"]+)['\"]\)")


# ===== types and provenance ====================================================================


def _dtype(dtype: Any) -> str:
    from compiler.ir import DType

    name = str(dtype).replace("torch.", "")
    try:
        return DType.of(name).short
    except TypeError:
        return name


def _dim(d: Any) -> int | str:
    """A size: an int, or a symbolic size as its expression (`s77`; never int() of a
    SymInt, which would read its example value and specialize it)."""
    if isinstance(d, int):
        return int(d)
    return str(d)


def value_type(val: Any) -> tuple[str, tuple | None, str | None]:
    """`(type text, shape, dtype)` of a node's fake value (a tensor, a tuple of them, a
    symbolic int)."""
    if hasattr(val, "shape") and hasattr(val, "dtype"):
        shape = tuple(_dim(d) for d in val.shape)
        dt = _dtype(val.dtype)
        return f"{dt}[{', '.join(str(d) for d in shape)}]", shape, dt
    if isinstance(val, (tuple, list)):
        inner = [value_type(v)[0] for v in val]
        return f"({', '.join(inner)}{',' if len(inner) == 1 else ''})", None, None
    if val is None:
        return "?", None, None
    name = type(val).__name__
    if name in ("SymInt", "SymFloat", "SymBool", "int", "float", "bool"):
        return f"{name.lower().removeprefix('sym')} {val}", None, None
    return name, None, None


def module_path(stack_entry: str) -> str:
    """A Dynamo module path (`L['self']._modules['layers']._modules['0'].mlp`) as the
    model's dotted path (`layers.0.mlp`)."""
    p = str(stack_entry)
    for _ in range(8):
        q = _GETATTR.sub(r"\1.\2", p)
        if q == p:
            break
        p = q
    p = _ROOT.sub("", p)
    p = _MODULES.sub(r".\1", p)
    p = _INDEX.sub(r".\1", p)
    return p.strip(".")


def node_module(node: Any) -> str:
    """The user's module a node came from (its innermost `nn_module_stack` entry)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    entry = list(stack.values())[-1]
    return module_path(entry[0] if isinstance(entry, tuple) else entry)


def node_location(node: Any) -> str | None:
    """`file:line` of the last frame of the node's `stack_trace`."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = _FRAME.findall(str(trace))
    if not frames:
        return None
    file, line, _ = frames[-1]
    return f"{file}:{line}"


def op_name(node: Any) -> str:
    """The op a call node runs: `aten.add.Tensor`, `torch._C._nn.linear`, `method sum`."""
    target = node.target
    if node.op == "call_method":
        return f"method {target}"
    if node.op == "call_module":
        return f"module {target}"
    if isinstance(target, str):
        return target
    mod = type(target).__module__ or ""
    if mod.startswith("torch._ops") or type(target).__name__ in ("OpOverload", "OpOverloadPacket"):
        return str(target)
    try:
        from torch.fx.node import _get_qualified_name

        return _get_qualified_name(target)
    except Exception:  # a callable FX cannot name
        return getattr(target, "__name__", type(target).__name__)


def _flat_nodes(value: Any) -> list:
    out: list = []

    def visit(v: Any) -> None:
        if isinstance(v, (tuple, list)):
            for x in v:
                visit(x)
        elif isinstance(v, dict):
            for x in v.values():
                visit(x)
        elif hasattr(v, "op") and hasattr(v, "name") and hasattr(v, "meta"):
            out.append(v)

    visit(value)
    return out


def node_key(node: Any, type_text: str) -> tuple:
    """What makes a node the same node in two steps: name, op, target, inputs, type."""
    ins = tuple(a.name for a in _flat_nodes((node.args, node.kwargs)))
    return (
        node.name,
        node.op,
        op_name(node) if node.op.startswith("call") else node.target,
        ins,
        type_text,
    )


# ===== the graph model ==========================================================================


def graph_of_fx(graph: Any, attrs: dict, state: FXState, module: FXModule) -> GraphModel:
    """The graph model of an FX graph (node ids are the FX node names)."""
    g = GraphModel()
    types: dict[str, str] = {}
    weights = state.graph_weights.get(module.graph_index, [])
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    tensors = [n for n in placeholders if hasattr(_val(n), "shape")]
    by_position = dict(zip((n.name for n in tensors), weights, strict=False))
    labels = dict(
        zip((n.name for n in tensors), state.graph_inputs.get(module.graph_index, []), strict=False)
    )
    if len(tensors) != len(weights):
        by_position = (
            labels
        ) = {}  # inputs that do not line up with Dynamo's: no names rather than wrong ones
    made: dict[str, Any] = {}  # fake values of nodes a pass made without one
    for node in graph.nodes:
        val = _val(node)
        if val is None and node.op == "call_function":
            val = made[node.name] = _fake_value(node, made)
        ty, shape, dtype = value_type(val)
        if node.op == "output":  # its fake value comes and goes between passes: its inputs'
            outs = [types.get(a.name, "?") for a in _flat_nodes(node.args)]
            ty, shape, dtype = f"({', '.join(outs)}{',' if len(outs) == 1 else ''})", None, None
        types[node.name] = ty
        path = node_module(node) if node.op != "placeholder" else ""  # an input is no layer's
        prov = {"framework": "torch", "node": node.name}
        if path:
            prov["module"] = path
        loc = node_location(node)
        if loc:
            prov["file"] = loc
        if node.op.startswith("call"):
            prov["op"] = op_name(node)
        ref = state.ref(node_key(node, ty), prov)
        if node.op == "placeholder":
            tensor = by_position.get(node.name)
            if tensor is not None:
                _weight(g, state, node, ref, tensor, ty, shape, dtype, str(node.target))
                continue
            g.nodes[node.name] = GraphNode(
                node.name,
                "input",
                "input",
                labels.get(node.name, str(node.target)),
                "forward",
                ty,
                shape,
                dtype,
                {},
                prov,
                path,
                0,
                ref,
            )
        elif node.op == "get_attr":
            value = attrs.get(str(node.target))
            if hasattr(value, "shape") and hasattr(value, "dtype"):
                ty, shape, dtype = value_type(value)
                _weight(g, state, node, ref, value, ty, shape, dtype, str(node.target))
                continue
            g.nodes[node.name] = GraphNode(
                node.name,
                "const",
                "get_attr",
                str(node.target),
                "forward",
                ty,
                shape,
                dtype,
                {},
                prov,
                path,
                0,
                ref,
            )
        elif node.op == "output":
            g.nodes[node.name] = GraphNode(
                node.name,
                "output",
                "return",
                "return",
                "forward",
                ty,
                shape,
                dtype,
                {},
                {},
                "",
                0,
                ref,
            )
            for i, a in enumerate(_flat_nodes(node.args)):
                g.edges.append(GraphEdge(a.name, node.name, i, types.get(a.name, "?")))
        else:
            op = prov["op"]
            attrs_text = {
                f"arg{i}": _short(a) for i, a in enumerate(node.args) if not _flat_nodes(a)
            }
            attrs_text.update({k: _short(v) for k, v in node.kwargs.items() if not _flat_nodes(v)})
            g.nodes[node.name] = GraphNode(
                node.name,
                "op",
                op,
                node.name,
                "forward",
                ty,
                shape,
                dtype,
                attrs_text,
                prov,
                path,
                0,
                ref,
            )
            for i, a in enumerate(_flat_nodes((node.args, node.kwargs))):
                g.edges.append(GraphEdge(a.name, node.name, i, types.get(a.name, "?")))
        g.by_object[id(ref)] = node.name
    return g


def _fake_value(node: Any, made: dict[str, Any]) -> Any:
    """The value of a node a pass made without `meta["val"]` (a custom pass's
    `graph.call_function`), from its inputs' fake values under their fake mode: what the
    node's type is. None when it cannot be had (an input without a value, or an op that
    fails on them): the type stays unknown."""
    import torch

    if not isinstance(node.target, torch._ops.OpOverload):
        return None  # only ATen ops: running a Python callable is running the user's code
    vals = []

    def value(a: Any) -> Any:
        if hasattr(a, "op") and hasattr(a, "meta"):
            v = _val(a)
            v = made.get(a.name) if v is None else v
            if v is None:
                raise LookupError(a.name)
            vals.append(v)
            return v
        return a

    try:
        args = torch.fx.node.map_aggregate(node.args, value)
        kwargs = torch.fx.node.map_aggregate(node.kwargs, value)
        mode = next((v.fake_mode for v in vals if hasattr(v, "fake_mode")), None)
        if mode is None:
            return None
        with mode:
            return node.target(*args, **kwargs)
    except Exception:  # the type stays unknown, as before the pass's node had one
        return None


def _val(node: Any) -> Any:
    val = node.meta.get("val")
    return node.meta.get("example_value") if val is None else val


def _short(value: Any, limit: int = 120) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _weight(g, state, node, ref, tensor, ty, shape, dtype, fallback) -> None:
    name, const = state.weight(tensor, fallback)
    nbytes = int(tensor.numel() * tensor.element_size())
    layer = name.rpartition(".")[0]
    prov = {"framework": "torch", "node": node.name, "module": layer} if layer else {}
    g.nodes[node.name] = GraphNode(
        node.name,
        "weight",
        "weight",
        name,
        "forward",
        ty,
        shape,
        dtype,
        {},
        prov,
        layer,
        nbytes,
        ref,
    )
    g.params[name] = Param(name, tuple(shape or ()), dtype or "", nbytes, node.name, const)
    g.by_object[id(ref)] = node.name


def text_of_fx(graph: Any) -> str:
    """The FX graph as Python, every value annotated with its type."""
    try:
        return graph.python_code(root_module="self", verbose=True).src.strip("\n") + "\n"
    except TypeError:  # an older torch.fx without verbose
        return graph.python_code(root_module="self").src.strip("\n") + "\n"


__all__ = ["graph_of_fx", "module_path", "node_location", "node_module", "op_name", "text_of_fx"]
