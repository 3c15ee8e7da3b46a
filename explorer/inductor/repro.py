"""The upstream repro of a torch.compile reduction (`InductorReduction.upstream_repro`): a
standalone script that needs only torch and numpy, laid out as torch's minifier writes its
`repro.py` (`torch/_dynamo/repro/after_aot.py`, `generate_compiler_repro_string`): the
versions it was made with, the custom pass's own source, `class Repro(torch.nn.Module)`
whose `forward` is the cut graph's code, `load_args` with the inputs (the reduction's own
values, embedded exactly), and a run at the bottom. The run traces `Repro` with
`torch.fx.symbolic_trace`, gives its nodes `meta["val"]` as Inductor's graphs have them,
runs it, applies the pass to its graph as Inductor does, runs it again, prints both outputs'
max abs / rel difference and torch's version, and exits 1 while they differ.

Nothing from the model goes into the script as code unless it is the graph's code FX
generated, checked node by node (`forward_source`: only `torch.ops` calls of torch's
own namespaces, torch's dtypes and layouts, operators, names it binds); names and texts go
in as literals (`explorer.reduce.repro.literal`).
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from explorer.reduce.errors import ReduceError
from explorer.reduce.repro import (
    DIFFERENCE_SOURCE,
    arrays_source,
    identifier,
    literal,
    pass_definition,
)

# the names the script defines or imports itself (a module's name maps to the module)
RESERVED: dict[str, str | None] = {
    "torch": "torch",
    "np": "numpy",
    "sys": "sys",
    "base64": "base64",
    **dict.fromkeys(
        "device inf nan NoneType PASS_NAME RTOL ATOL REDUCED_WITH INPUT_TYPES ARGS load_args "
        "load_inputs make_pass Repro difference verdict flat main".split()
    ),
}
OP_NAMESPACES = ("aten", "prims")  # torch.ops namespaces every torch has
GLOBALS = {"torch", "device", "inf", "nan", "NoneType"}  # what FX's code may read
NODES = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Assign, ast.Return, ast.Name,
    ast.Load, ast.Store, ast.Del, ast.Constant, ast.Tuple, ast.List, ast.Call, ast.keyword,
    ast.Attribute, ast.Subscript, ast.Slice, ast.UnaryOp, ast.BinOp, ast.USub, ast.UAdd,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.Not,
)  # fmt: skip


def forward_source(cut: Any, namespaces: tuple[str, ...] | None = OP_NAMESPACES) -> str:
    """The `forward` FX writes for the graph `cut` (its nodes' metadata left out, so no
    stack-trace comment), after a check that it holds nothing but what FX writes for ATen
    ops: `torch.ops` calls of `namespaces` (None: any op this process has), torch's
    dtypes, layouts and memory formats, `device(...)`, numbers and strings, operators, and
    names it binds itself. Anything else (another namespace's op, a repr that is not a
    literal) is a `ReduceError`."""
    import torch

    graph = copy.deepcopy(cut)
    for node in graph.nodes:
        node.meta = {}
    code = graph.python_code(root_module="self")
    unknown = sorted(set(code.globals) - GLOBALS - {"fx_pytree", "pytree"})
    if unknown:
        raise ReduceError(f"the cut's code reads {', '.join(map(repr, unknown))}: not torch's")
    source = code.src.strip("\n")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        raise ReduceError("the cut's code, as FX writes it, does not parse") from None
    (fn,) = tree.body if len(tree.body) == 1 else (None,)
    if not isinstance(fn, ast.FunctionDef) or fn.name != "forward" or fn.decorator_list:
        raise ReduceError("the cut's code is not one forward function")
    bound = {a.arg for a in fn.args.args}
    bound |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not _loads(n)}
    for node in ast.walk(fn):
        if not isinstance(node, NODES):
            raise ReduceError(f"the cut's code holds a {type(node).__name__}, not written")
        if isinstance(node, ast.Call) and not _is_op_call(node.func, torch, namespaces):
            raise ReduceError(f"the cut's code calls {ast.unparse(node.func)[:80]!r}")
        if isinstance(node, ast.Attribute) and not _allowed_attribute(node, torch):
            raise ReduceError(f"the cut's code reads {ast.unparse(node)[:80]!r}")
        if isinstance(node, ast.Name) and (
            not identifier(node.id) or _loads(node) and node.id not in bound | GLOBALS
        ):
            raise ReduceError(f"the cut's code reads the name {node.id!r}")
    return source


def _loads(node: ast.Name) -> bool:
    return isinstance(node.ctx, ast.Load)


def _chain(node: ast.AST) -> list[str] | None:
    """`torch.ops.aten.add.Tensor` as its names, or None when not names and dots."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _is_op_call(func: ast.AST, torch: Any, namespaces: tuple[str, ...] | None) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "device"
    parts = _chain(func)
    if parts is None or parts[:2] != ["torch", "ops"] or len(parts) not in (4, 5):
        return False
    if (
        namespaces is not None
        and parts[2] not in namespaces
        or any(p.startswith("__") for p in parts)
    ):
        return False
    target = torch
    for p in parts[1:]:
        target = getattr(target, p, None)
        if target is None:
            return False
    kinds = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)
    if namespaces is None:  # the test file: any op of this process, higher-order ones too
        kinds += (torch._ops.HigherOrderOperator,)
    return isinstance(target, kinds)


def _allowed_attribute(node: ast.Attribute, torch: Any) -> bool:
    """An attribute is part of an op's name (checked with its call) or torch's constant."""
    parts = _chain(node)
    if parts is None or parts[0] != "torch" or any(p.startswith("__") for p in parts):
        return False
    if parts[1] == "ops":
        return True  # the call around it is checked by _is_op_call
    value = getattr(torch, parts[1], None) if len(parts) == 2 else None
    return isinstance(value, torch.dtype | torch.layout | torch.memory_format)


def input_types(values: list) -> list[str]:
    """What each cut input is, for the script: a tensor's torch dtype name (`float32`,
    `bfloat16`), `int` / `float` / `bool` for a Python number, else `other`."""
    import torch

    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(str(v.dtype).removeprefix("torch."))
        elif isinstance(v, bool | int | float):
            out.append(type(v).__name__)
        else:
            out.append("other")  # the script refuses it (repro_source)
    return out


def class_source(forward: str, name: str) -> str:
    """`class NAME(torch.nn.Module)` whose `forward` is `forward` (as the minifier's
    `Repro`)."""
    body = "\n".join("    " + line if line.strip() else "" for line in forward.splitlines())
    return (
        f"class {name}(torch.nn.Module):\n    def __init__(self) -> None:\n"
        f"        super().__init__()\n\n{body.rstrip()}"
    )


def repro_source(reduction: Any) -> str:
    """The whole script for `reduction` (see the module docstring)."""
    import torch

    if reduction.fn is None or reduction.graph is None:
        raise ReduceError("this reduction keeps no pass or graph (made by hand or loaded)")
    what = f"the custom pass {reduction.pass_name!r}"
    code = pass_definition(reduction.fn, ("torch",), what, RESERVED)
    forward = forward_source(reduction.graph)
    types = list(reduction.input_types)
    for kind in types:
        if kind not in ("int", "float", "bool") and not isinstance(
            getattr(torch, kind, None), torch.dtype
        ):
            raise ReduceError(f"an input of type {kind!r} cannot be made in the script")
    versions = {"torch": torch.__version__, "git": getattr(torch.version, "git_version", "")}
    return f'''"""A custom Inductor pass changes the numbers of an ATen graph.

Written by passlens's reducer as torch's minifier writes repro.py: the pass's own source,
the graph Inductor gave it (cut down to what still shows the bug) as Repro.forward, the
inputs the bug shows on. Needs only torch and numpy. It runs the graph eagerly, applies the
pass to it as Inductor does, runs it again and prints how far the results moved; it exits 1
(BUG REPRODUCED) while they differ beyond tolerance, 0 once they agree.
"""

import base64
import sys
from math import inf, nan

import numpy as np
import torch
from torch import device
{code.import_lines()}

NoneType = type(None)

PASS_NAME = {literal(reduction.pass_name)}
RTOL, ATOL = {literal(float(reduction.rtol))}, {literal(float(reduction.atol))}
REDUCED_WITH = {literal(versions)}


# ----- the custom pass, as it was defined -----------------------------------------------------
{code.definitions_source()}


def make_pass():
    """The pass object, as it was set in torch._inductor.config."""
    return {code.make}


# ----- the graph the pass was given, cut down -------------------------------------------------
{class_source(forward, "Repro")}


# ----- the inputs: the values the bug shows on --------------------------------------------------
INPUT_TYPES = {literal(types)}  # a torch dtype, or int / float / bool for a Python number

{arrays_source(reduction.inputs)}

def load_inputs():
    """The inputs as the graph takes them."""
    out = []
    for kind, array in zip(INPUT_TYPES, load_args()):
        if kind in ("int", "float", "bool"):
            out.append({{"int": int, "float": float, "bool": bool}}[kind](array.item()))
        else:
            out.append(torch.from_numpy(array).to(getattr(torch, kind)))
    return out


{DIFFERENCE_SOURCE}

def flat(value):
    """The arrays of an output (tuples and lists flattened)."""
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in flat(v)]
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        return [(t.float() if t.dtype == torch.bfloat16 else t).numpy()]
    return [np.asarray(value)]


def main():
    args = load_inputs()
    gm = torch.fx.symbolic_trace(Repro())
    try:  # meta["val"] on every node, as the graphs Inductor hands its passes have
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        FakeTensorProp(gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(*args)
    except Exception as e:
        print(f"note: no meta['val'] on the nodes ({{type(e).__name__}}: {{e}})")
    with torch.no_grad():
        want = gm(*args)  # eager
        make_pass()(gm.graph)  # as Inductor runs a custom pass on the graph
        gm.recompile()
        got = gm(*args)
    version = f"torch {{torch.__version__}} (reduced with torch {{REDUCED_WITH['torch']}})"
    return verdict(PASS_NAME, version, flat(got), flat(want), RTOL, ATOL)


if __name__ == "__main__":
    sys.exit(main())
'''


def verify(reduction: Any) -> float:
    """Rebuild the graph as the script does (its checked code as `Repro`, traced with
    `torch.fx.symbolic_trace`, `meta["val"]` propagated), run the pass on it here, and
    return how far the result moves (max abs); a `ReduceError` when it stays within
    tolerance (a pass that needs more of the graph than its code: the script would not show
    the bug)."""
    import math

    import numpy as np
    import torch

    from explorer.check.numbers import compare, leaves, to_numpy

    space = {"torch": torch, "device": torch.device, "inf": math.inf, "nan": math.nan}
    space["NoneType"] = type(None)
    exec(compile(class_source(forward_source(reduction.graph), "Repro"), "<repro>", "exec"), space)
    args = []
    for kind, a in zip(reduction.input_types, reduction.inputs, strict=True):
        if kind in ("int", "float", "bool"):
            args.append({"int": int, "float": float, "bool": bool}[kind](np.asarray(a).item()))
        else:
            args.append(torch.from_numpy(np.array(a)).to(getattr(torch, kind)))
    try:
        gm = torch.fx.symbolic_trace(space["Repro"]())
        _propagate(gm, args)
        with torch.no_grad():
            want = [to_numpy(x) for x in leaves(gm(*args))]
            reduction.fn(gm.graph)
            gm.recompile()
            got = [to_numpy(x) for x in leaves(gm(*args))]
    except Exception as e:  # noqa: BLE001 (the user's pass, torch's tracer: anything)
        raise ReduceError(
            f"the graph rebuilt from its code, as the script rebuilds it, could not be run with "
            f"the pass ({type(e).__name__}: {str(e)[:300]})"
        ) from None
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want, strict=False)):
        return float("inf")
    worst, beyond = 0.0, 0
    for g, w in zip(got, want, strict=True):
        a, _, n = compare(g, w, reduction.rtol, reduction.atol)
        worst, beyond = max(worst, a), beyond + n
    if not beyond:
        raise ReduceError(
            f"{reduction.pass_name!r} changes the cut's numbers only on the graph Inductor gave "
            "it, not on the graph rebuilt from its code (it reads more than the code holds, such "
            "as node metadata): a script would not show the bug"
        )
    return worst


def _propagate(gm: Any, args: list) -> None:
    """`meta["val"]` (fake tensors) on `gm`'s nodes, as the script does; left out when
    torch's FakeTensorProp cannot (the script says so too)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    try:
        FakeTensorProp(gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(*args)
    except Exception:  # noqa: BLE001 (as the script: the run goes on without it)
        pass


__all__ = ["class_source", "forward_source", "input_types", "repro_source", "verify"]
