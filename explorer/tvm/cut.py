"""Cuts of a Relax module's `main` for the TVM reducer (`explorer.tvm.reduce`).

A cut keeps one binding of one block of `main` with its producers in that block up to a
depth, as a new `main` of its own returning that binding's value: what flows in from outside
the kept bindings becomes an input (a tensor the reducer knows the value of: a parameter of
`main`, or a binding of an earlier block, read by a `probe`), and every constant that
is not a scalar becomes a weight parameter, bound back to its value with TVM's own
`relax.transform.BindParams` (TVM 0.27 cannot print a module's constants so that they parse
again: `script(show_meta=True)` crashes). The other functions the cut still calls (kernels,
private Relax functions) stay; the rest go.

The cut is printed as TVMScript and parsed back (`tvm.script.from_source`): the module the
pass is run on is the one a standalone script makes from that text, so what the reducer saw is
what the script shows. The text is checked first (`check_script`): it comes from the
model's names, and TVM's parser evaluates parts of it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.reduce.repro import identifier

SCRIPT_NAMES = frozenset({"I", "R", "T", "range"})  # what TVMScript reads that it does not bind
UNSAFE_NODES = (
    ast.Lambda, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Await, ast.Yield,
    ast.YieldFrom, ast.NamedExpr, ast.AsyncFunctionDef, ast.Try, ast.Raise, ast.Delete,
)  # fmt: skip


class CutRefused(Exception):
    """A cut that cannot be made (the reason is the message); the reducer tries the next."""


@dataclass
class Cut:
    """One cut: `text` (its TVMScript: the inputs, then the weights as parameters), the
    names and values of its `inputs` and `weights`, how many bindings it keeps, and
    `module`: the text parsed back with its weights bound, what the pass is run on."""

    text: str
    inputs: list[tuple[str, np.ndarray]]
    weights: list[tuple[str, np.ndarray]]
    bindings: int
    module: Any = None


def var_name(var: Any) -> str:
    """A Relax variable's name (`name` in TVM 0.27, `name_hint` before)."""
    return str(getattr(var, "name", None) or getattr(var, "name_hint", "") or "v")


def gv_name(gv: Any) -> str:
    """A global function's name."""
    return str(getattr(gv, "name_hint", None) or getattr(gv, "name", gv))


def blocks(main: Any) -> list[list[Any]]:
    """The bindings of each block of `main`'s body."""
    return [list(b.bindings) for b in getattr(main.body, "blocks", ())]


def producers(bindings: list[Any], target: int, depth: int | None) -> list[int]:
    """The indices of `bindings[target]` and of the bindings of the block it reads, up to
    `depth` edges above it (None: all), in block order."""
    from tvm import relax

    index = {b.var.id_: i for i, b in enumerate(bindings)}
    keep: set[int] = set()
    frontier = [(target, 0)]
    while frontier:
        i, d = frontier.pop()
        if i in keep:
            continue
        keep.add(i)
        if depth is None or d < depth:
            for v in relax.analysis.free_vars(bindings[i].value):
                if v.id_ in index and index[v.id_] < i:
                    frontier.append((index[v.id_], d + 1))
    return sorted(keep)


def is_tensor(var: Any) -> bool:
    """Whether `var` holds a tensor (what a cut can take as an input)."""
    from tvm import relax

    return isinstance(var.ty, relax.TensorType)


class Namer:
    """Names for a cut's variables: the old name with anything but letters, digits and `_`
    replaced, never a dunder, never one taken."""

    def __init__(self):
        # TVMScript's own names: a variable named so would shadow them in the text
        self.taken: set[str] = {"I", "R", "T", "tvm", "metadata", "range", "main", "Module"}

    def __call__(self, name: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", str(name))[:40].lstrip("_") or "v"
        if base[0].isdigit() or not identifier(base):
            base = f"v_{base}"
        out, k = base, 0
        while out in self.taken or not identifier(out):
            k += 1
            out = f"{base}_{k}"
        self.taken.add(out)
        return out


def probe(mod: Any) -> tuple[Any, list[Any]]:
    """`mod` whose `main` also returns the value of every tensor binding (one build gives
    a cut's inputs from earlier blocks): the module and those bindings' variables."""
    import tvm
    from tvm import relax

    main = mod["main"]
    bb = relax.BlockBuilder(_without_main(mod))
    env: dict[int, Any] = {}
    read: list[Any] = []
    outs: list[Any] = []
    sub = _substitution(env)
    attrs = {k: v for k, v in (main.attrs or {}).items() if k != "global_symbol"}
    with bb.function("main", list(main.params), attrs=attrs, pure=bool(main.is_pure)):
        for block in main.body.blocks:
            dataflow = isinstance(block, relax.DataflowBlock)
            scope = bb.dataflow() if dataflow else _nothing()
            with scope:
                for b in block.bindings:
                    new = _emit(bb, b, sub, "lv")
                    env[b.var.id_] = new
                    if is_tensor(b.var):
                        read.append(b.var)
                        outs.append(bb.emit_output(new) if dataflow else new)
        bb.emit_func_output(relax.Tuple(outs) if outs else relax.Tuple([]))
    out = bb.get()
    return tvm.IRModule(dict(out.functions), attrs=mod.attrs, global_infos=mod.global_infos), read


def make_cut(mod: Any, bindings: list[Any], keep: list[int], dataflow: bool, values: dict):
    """The `Cut` of `mod`'s `main` keeping `bindings[keep]` (the last is the
    value returned). `values`: the known tensor values by variable id (`main`'s
    parameters, earlier blocks' bindings). Raises `CutRefused` saying why."""
    import tvm
    from tvm import relax

    kept = [bindings[i] for i in keep]
    kept_ids = {b.var.id_ for b in kept}
    namer = Namer()
    env: dict[int, Any] = {}
    inputs: list[tuple[Any, np.ndarray]] = []
    for b in kept:
        for v in relax.analysis.free_vars(b.value):
            if v.id_ in kept_ids or v.id_ in env:
                continue
            if not is_tensor(v) or v.id_ not in values:
                raise CutRefused(f"{var_name(v)} flows in and is not a tensor with a known value")
            env[v.id_] = relax.Var(namer(var_name(v)), v.ty)
            inputs.append((env[v.id_], values[v.id_]))
    consts = _constants([b.value for b in kept])
    weights = []
    for c in consts:
        w = relax.Var(namer(f"w{len(weights)}"), c.ty)
        env[c.id_] = w
        weights.append((w, np.asarray(c.value.numpy())))
    sub = _substitution(env)
    bb = relax.BlockBuilder(_without_main(mod))
    params = [p for p, _ in inputs] + [w for w, _ in weights]
    attrs = {
        k: v
        for k, v in (mod["main"].attrs or {}).items()
        if k not in ("global_symbol", "num_input")
    }
    with bb.function("main", params, attrs=attrs, pure=bool(mod["main"].is_pure)):
        with bb.dataflow() if dataflow else _nothing():
            for k, b in enumerate(kept):
                last = k == len(kept) - 1
                name = namer(var_name(b.var))
                new = _emit(bb, b, sub, name, output=last and dataflow)
                env[b.var.id_] = new
        bb.emit_func_output(new)
    built = bb.get()
    used = _reachable(built)
    for gv in used:
        if not identifier(gv_name(gv)):
            raise CutRefused(f"a function is named {gv_name(gv)!r}, not a plain name")
    cut = tvm.IRModule({gv: built[gv] for gv in used}, attrs=mod.attrs)
    text = str.__str__(cut.script())  # a TVM string: the plain str it holds
    check_script(text)
    return Cut(
        text,
        [(var_name(p), a) for p, a in inputs],
        [(var_name(w), a) for w, a in weights],
        len(kept),
    )


def parse(cut: Cut) -> Any:
    """The module a script makes from `cut`: its text parsed, its weights bound."""
    import tvm
    from tvm import relax

    mod = tvm.script.from_source(cut.text)
    if cut.weights:
        mod = relax.transform.BindParams(
            "main", {name: tvm.runtime.tensor(a) for name, a in cut.weights}
        )(mod)
    if len(mod["main"].params) != len(cut.inputs):
        raise CutRefused("its weights were not all bound by name once parsed")
    return mod


def check_script(text: str) -> None:
    """That the TVMScript `text` is only TVMScript: it parses as Python, reads no name but
    those it binds and `I`, `R`, `T` (no builtin, no `metadata`: constants are weight
    parameters), no dunder name or attribute, no statement TVMScript never prints. Raises
    `CutRefused` otherwise."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        raise CutRefused("its TVMScript does not parse as Python") from None
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, UNSAFE_NODES):
            raise CutRefused(f"its TVMScript holds a {type(node).__name__}")
        if isinstance(node, ast.Name):
            if node.id.startswith("__"):
                raise CutRefused(f"its TVMScript reads {node.id!r}")
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise CutRefused(f"its TVMScript reads the attribute {node.attr!r}")
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
    free = read - bound - SCRIPT_NAMES
    if free:
        raise CutRefused(f"its TVMScript reads {', '.join(sorted(free))[:200]}")


# ----- helpers ------------------------------------------------------------------------------------


class _nothing:
    """A context that does nothing (a block that is not a dataflow block)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _without_main(mod: Any) -> Any:
    import tvm

    funcs = {gv: f for gv, f in mod.functions.items() if gv_name(gv) != "main"}
    return tvm.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos)


def _emit(bb: Any, b: Any, sub: Any, name: str, output: bool = False) -> Any:
    """Emit binding `b` (its value with variables substituted) under `name`."""
    from tvm import relax

    value = sub.visit_expr(b.value)
    if isinstance(b, relax.MatchCast):
        new = bb.match_cast(value, b.ty, name_hint=name)
        return bb.emit_output(new) if output else new
    return bb.emit_output(value, name_hint=name) if output else bb.emit(value, name_hint=name)


def _substitution(env: dict[int, Any]) -> Any:
    """A mutator replacing variables and constants by what `env` maps their ids to."""
    from tvm import relax

    @relax.expr_functor.mutator
    class Substitute(relax.PyExprMutator):
        def __init__(self, env):
            super().__init__()
            self.env = env

        def visit_var_(self, var):
            return self.env.get(var.id_, var)

        def visit_dataflow_var_(self, var):
            return self.env.get(var.id_, var)

        def visit_generic_const_(self, const):
            return self.env.get(const.id_, const)

    return Substitute(env)


def _constants(values: list[Any]) -> list[Any]:
    """The constants of `values` that are not scalars, each once, in order of first use."""
    from tvm import relax

    found: dict[int, Any] = {}

    @relax.expr_functor.visitor
    class Constants(relax.PyExprVisitor):
        def visit_generic_const_(self, const):
            if const.id_ not in found and np.asarray(const.value.numpy()).ndim > 0:
                found[const.id_] = const

    visitor = Constants()
    for v in values:
        visitor.visit_expr(v)
    return list(found.values())


def _reachable(mod: Any) -> list[Any]:
    """The global functions `main` calls, itself included, directly or not."""
    from tvm import relax

    by_name = {gv_name(gv): gv for gv in mod.get_global_vars()}
    seen: dict[str, Any] = {}
    todo = [by_name["main"]]
    while todo:
        gv = todo.pop()
        name = gv_name(gv)
        if name in seen:
            continue
        seen[name] = gv
        fn = mod[gv]
        if isinstance(fn, relax.Function):
            todo.extend(by_name[gv_name(g)] for g in relax.analysis.all_global_vars(fn))
    return sorted(seen.values(), key=lambda g: gv_name(g))


__all__ = [
    "Cut",
    "CutRefused",
    "Namer",
    "blocks",
    "gv_name",
    "check_script",
    "is_tensor",
    "make_cut",
    "parse",
    "probe",
    "producers",
    "var_name",
]
