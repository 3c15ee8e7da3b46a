"""The module side of a reduction: a candidate is a `Cut` of the imported module, and a
`Cutter` builds the module a cut stands for.

A cut names @main's outputs (a subset of the original ones, or any of its nodes), the nodes
replaced by something simpler (the *frontier*), the public functions left out and the weights
whose values are made from their names. A node of the frontier becomes:

- in @main, a new runtime input of the node's type, when its value depends on the inputs and
  is not a small integer or boolean tensor (random inputs of the right shape then feed it);
- otherwise a constant holding the value the node had (computed once, on random inputs) —
  a shape computation or a value made from the weights alone stays foldable by the passes,
  and outside @main a function's signature cannot change.

What no longer feeds an output is dropped (dead-code-elimination), and so are @main's runtime
inputs nobody reads. A rebuilt call gets the type its new operands give (a module that
verifies has no other).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from compiler import PasslensError, evaluate, passes
from compiler.ir import (
    ANY,
    Block,
    Call,
    Constant,
    DType,
    Expr,
    FuncCall,
    Function,
    If,
    Module,
    SymExpr,
    TensorType,
    Tuple,
    Var,
    children,
    function_constants,
    remap_operands,
)
from explorer.passlens.reduce.testfile import generated_weight

INLINE = 32  # elements: the IR text shows a weight this small with its values
SHAPE_LIKE = 1024  # elements: an integer or boolean value this small is a shape computation
RANDOM_DIM = 2  # the size given to a symbolic dim for random values (as the check does)

Item = tuple  # ("node", function, node) | ("out", node) | ("fn", function name)


class CannotBuild(Exception):
    """A cut that cannot be made into a module (a tuple value, or a value of unknown shape,
    to stand in for): such a candidate simply does not hold."""


@dataclass(frozen=True)
class Cut:
    """One candidate, as changes to the imported module: @main's `outputs` (nodes or
    parameters of the original @main), the `frontier` (`(function, id(node))` pairs of
    nodes replaced by a new input or a constant), the public functions `dropped` and the
    weights (by name) whose values are `generated` from their names."""

    outputs: tuple
    frontier: frozenset = frozenset()
    dropped: frozenset = frozenset()
    generated: frozenset = frozenset()


def count_bindings(module: Module) -> int:
    """Bound nodes of every function, inside If branches too."""
    return sum(1 for fn in module.functions.values() for _ in fn.iter_nodes())


class Cutter:
    """Builds the modules of cuts of `module` (the imported module, kept unchanged)."""

    def __init__(self, module: Module):
        self.module = module
        main = module["main"]
        out = main.output
        self.tuple_output = isinstance(out, Tuple)
        self.outputs = tuple(out.fields) if self.tuple_output else (out,)
        self._stand_ins: dict[tuple[str, int], Expr] = {}
        self._values: dict[str, dict] = {}
        self._dependent: dict[str, set[int]] = {}
        self._generated: dict[str, Constant] = {}
        self._names = set(module.constants())
        self._top: dict[int, int] | None = None  # id of a binding of @main -> its position

    def start(self) -> Cut:
        """The cut that changes nothing."""
        return Cut(self.outputs)

    # ----- building -------------------------------------------------------------------------
    def build(self, cut: Cut) -> tuple[Module, list[Item]]:
        """The module of `cut` and what can still be removed from it (its live bindings,
        its outputs when there are several, its public functions nobody calls)."""
        functions, maps = {}, {}
        try:
            for name, fn in self.module.functions.items():
                if name not in cut.dropped:
                    functions[name], maps[name] = self._function(name, fn, cut)
            module = passes.run(
                Module(functions, self.module.attrs), "dead-code-elimination", record=False
            ).module
            module = module.with_function("main", _without_unused_inputs(module["main"]))
        except CannotBuild:
            raise
        except (PasslensError, TypeError, ValueError) as e:  # e.g. a call whose new operands
            raise CannotBuild(str(e)) from None  # do not type-check: not a candidate
        items = self._items(module, cut, maps)
        if cut.generated:
            module = self._with_generated(module, cut.generated)
        return module, items

    def without(self, cut: Cut, chunk: Sequence[Item]) -> Cut | None:
        """`cut` with the items of `chunk` removed (None if no output would be left)."""
        frontier, dropped = set(cut.frontier), set(cut.dropped)
        gone = {id(item[1]) for item in chunk if item[0] == "out"}
        outputs = [o for o in cut.outputs if id(o) not in gone]
        for item in chunk:
            if item[0] == "node" and item[1] == "main" and any(item[2] is o for o in outputs):
                outputs = self._moved_up(outputs, item[2], frontier)
            elif item[0] == "node":
                frontier.add((item[1], id(item[2])))
            elif item[0] == "fn":
                dropped.add(item[1])
        if not outputs:
            return None
        return replace(
            cut, outputs=tuple(outputs), frontier=frozenset(frontier), dropped=frozenset(dropped)
        )

    def _moved_up(self, outputs: list[Expr], node: Expr, frontier: set) -> list[Expr]:
        """@main's `outputs` with `node` removed: the nodes it reads take its place (when
        it reads only inputs and weights, it becomes an input itself, in `frontier`)."""
        bindings = self.module["main"].bindings
        if self._top is None:
            self._top = {id(b): i for i, b in enumerate(bindings)}
        above = sorted(self._top[i] for i in reads(node, self._top) if ("main", i) not in frontier)
        if not above:
            frontier.add(("main", id(node)))
            return outputs
        out = [o for o in outputs if o is not node]
        out += [bindings[i] for i in above if not any(bindings[i] is o for o in out)]
        return out

    def _function(self, name: str, fn: Function, cut: Cut) -> tuple[Function, dict[int, Expr]]:
        mapping: dict[int, Expr] = {}
        new_params: list[Var] = []
        for b in fn.bindings:
            if (name, id(b)) in cut.frontier:
                s = mapping[id(b)] = self._stand_in(name, b)
                if isinstance(s, Var):
                    new_params.append(s)
        roots = cut.outputs if name == "main" else (fn.output,)
        bindings = _block(fn.bindings, mapping, _needed(roots, mapping))
        if name == "main":
            outs = [mapping.get(id(o), o) for o in cut.outputs]
            if self.tuple_output or len(outs) > 1:
                output: Expr = Tuple(outs)
                bindings.append(output)
            else:
                output = outs[0]
        else:
            output = mapping.get(id(fn.output), fn.output)
        params, attrs = list(fn.params), fn.attrs
        if new_params:
            k = fn.num_input
            params = [*fn.params[:k], *new_params, *fn.params[k:]]
            if "num_input" in fn.attrs or k < len(fn.params):
                attrs = attrs.with_(num_input=k + len(new_params))
        return Function(params, bindings, output, attrs, fn.prov), mapping

    def _items(self, module: Module, cut: Cut, maps: dict[str, dict[int, Expr]]) -> list[Item]:
        items: list[Item] = []
        if len(cut.outputs) > 1:
            items += [("out", o) for o in cut.outputs]
        for name, fn in self.module.functions.items():
            if name not in module.functions:
                continue
            live = {id(n) for n in module[name].iter_nodes()}
            for b in fn.bindings:
                if (name, id(b)) in cut.frontier or not isinstance(b.ty, TensorType):
                    continue
                if id(maps[name].get(id(b), b)) in live:
                    items.append(("node", name, b))
        called = {
            n.func
            for f in module.functions.values()
            for n in f.iter_nodes()
            if isinstance(n, FuncCall)
        }
        items += [
            ("fn", name)
            for name, fn in module.functions.items()
            if name != "main" and not fn.is_private and name not in called
        ]
        return items

    def _with_generated(self, module: Module, names: frozenset) -> Module:
        functions = {}
        for fname, fn in module.functions.items():
            mapping: dict[int, Expr] = {
                id(c): self._generated_constant(c)
                for c in function_constants(fn)
                if c.name in names
            }
            if not mapping:
                functions[fname] = fn
                continue
            bindings = _block(fn.bindings, mapping)
            output = mapping.get(id(fn.output), fn.output)
            functions[fname] = Function(fn.params, bindings, output, fn.attrs, fn.prov)
        return module.replace(functions=functions)

    def _generated_constant(self, c: Constant) -> Constant:
        if c.name not in self._generated:
            data = generated_weight(c.name, str(c.data.dtype), c.data.shape)
            self._generated[c.name] = Constant(data, name=c.name, prov=c.prov)
        return self._generated[c.name]

    # ----- what stands for a cut node --------------------------------------------------------
    def _stand_in(self, fname: str, node: Expr) -> Expr:
        key = (fname, id(node))
        if key not in self._stand_ins:
            if not isinstance(node.ty, TensorType):
                raise CannotBuild(f"a {node.ty} value cannot be cut")
            if fname == "main" and not self._constant_like(fname, node):
                s: Expr = Var(node.name or _hint(node), self._known_type(fname, node), node.prov)
            else:
                value = self._value(fname, node)
                name = self._fresh_name(node) if value.size > INLINE else None
                s = Constant(value, name=name, prov=node.prov)
            self._stand_ins[key] = s
        return self._stand_ins[key]

    def _constant_like(self, fname: str, node: Expr) -> bool:
        ty = node.ty
        if ty.dtype.is_int or ty.dtype is DType.bool:
            n = ty.numel
            if not isinstance(n, int) or n <= SHAPE_LIKE:
                return True
        if fname not in self._dependent:
            self._dependent[fname] = _depends_on_params(self.module[fname])
        return id(node) not in self._dependent[fname]

    def _known_type(self, fname: str, node: Expr) -> TensorType:
        ty = node.ty
        if ty.shape is not None and not any(d is ANY for d in ty.shape):
            return ty
        v = self._values_of(fname).get(node)
        if isinstance(v, np.ndarray):
            return TensorType(v.shape, DType.of(v.dtype))
        raise CannotBuild(f"%{node.name or _hint(node)}: {ty} has no known shape")

    def _value(self, fname: str, node: Expr) -> np.ndarray:
        v = self._values_of(fname).get(node)
        ty = node.ty
        if isinstance(v, (np.ndarray, np.generic)):
            v = np.asarray(v)
            if ty.is_static and v.shape == ty.shape:
                v = v.astype(ty.dtype.numpy, copy=False)
            return v
        if ty.is_static:
            return _random_value(ty.shape, ty.dtype.numpy, np.random.default_rng(0))
        raise CannotBuild(f"%{node.name or _hint(node)}: no value known for a {ty}")

    def _values_of(self, fname: str) -> dict:
        """The values of a function's nodes on random inputs (seed 0), computed once; empty
        when they cannot be computed (they only help: a shape, a value to keep)."""
        if fname not in self._values:
            fn = self.module[fname]
            try:
                inputs = random_inputs(fn.params)
                self._values[fname] = evaluate(self.module, inputs, function=fname).values
            except Exception:
                self._values[fname] = {}
        return self._values[fname]

    def _fresh_name(self, node: Expr) -> str:
        base = "reduced." + re.sub(r"[^A-Za-z0-9_.]+", "_", _hint(node)).strip("_.")
        name, k = base, 1
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        return name


# ===== helpers ==================================================================================


def _hint(node: Expr) -> str:
    return node.name or getattr(node, "op", None) or type(node).__name__.lower()


def _remapped(node: Expr, mapping: dict[int, Expr]) -> Expr:
    """`node` reading its operands through `mapping` (the same node when none changes; a
    call made again gets the type its new operands give; an If's branches are left to the
    caller)."""
    new = remap_operands(node, mapping)
    if isinstance(new, Call) and new is not node:
        return Call(new.op, new.args, new.attrs, prov=new.prov, name=new.name)
    return new


def _needed(roots: Sequence[Expr], frontier: dict[int, Expr]) -> set[int]:
    """Ids of the nodes `roots` depend on, not looking past the nodes of the frontier."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if id(n) in seen or id(n) in frontier:
            continue
        seen.add(id(n))
        stack.extend(children(n))
    return seen


def _block(
    bindings: Sequence[Expr], mapping: dict[int, Expr], needed: set[int] | None = None
) -> list[Expr]:
    """`bindings` rebuilt on `mapping` (id of an old node -> its replacement: the
    stand-ins of the frontier, then every node rebuilt here), without the nodes of the
    frontier and those not `needed` (ids; None: all are); enters If branches. A rebuilt
    call's type is inferred again (a module that verifies has no other), an If keeps its
    annotation (it covers the more precise types)."""
    out = []
    for b in bindings:
        if id(b) in mapping or (needed is not None and id(b) not in needed):
            continue  # a node of the frontier (its stand-in is a leaf), or one nothing needs
        new = _remapped(b, mapping)
        if isinstance(b, If):
            then_b, else_b = b.then_branch, b.else_branch
            new = new.replace(
                then_branch=Block(
                    _block(then_b.bindings, mapping, needed),
                    mapping.get(id(then_b.result), then_b.result),
                ),
                else_branch=Block(
                    _block(else_b.bindings, mapping, needed),
                    mapping.get(id(else_b.result), else_b.result),
                ),
            )
        if new is not b:
            mapping[id(b)] = new
        out.append(new)
    return out


def reads(node: Expr, top: dict[int, int]) -> set[int]:
    """Ids of the bindings of `top` (ids of a function's top-level bindings) that `node`
    reads; for an If, what its branches read too."""
    out: set[int] = set()
    seen: set[int] = set()
    stack = list(children(node))
    while stack:
        n = stack.pop()
        if id(n) in seen or isinstance(n, (Var, Constant)):
            continue
        seen.add(id(n))
        if id(n) in top:
            out.add(id(n))
        else:  # a node inside a branch: what it reads
            stack.extend(children(n))
    return out


def _depends_on_params(fn: Function) -> set[int]:
    """Ids of the nodes of `fn` whose value depends on its parameters."""
    done: dict[int, bool] = {id(p): True for p in fn.params}
    for root in fn.iter_nodes():
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in done and not expanded:
                continue
            if isinstance(n, (Var, Constant)):
                done[id(n)] = False
                continue
            kids = children(n)
            if expanded:
                done[id(n)] = any(done.get(id(k), False) for k in kids)
                continue
            stack.append((n, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
    return {i for i, d in done.items() if d}


def _without_unused_inputs(fn: Function) -> Function:
    """@main without the runtime inputs no node reads (the weights it takes stay)."""
    k = fn.num_input
    read: set[int] = {id(fn.output)}
    for node in fn.iter_nodes():
        read.update(id(c) for c in children(node))
    unused = [p for p in fn.params[:k] if id(p) not in read]
    if not unused:
        return fn
    params = [p for p in fn.params if not any(p is u for u in unused)]
    attrs = fn.attrs
    if "num_input" in attrs or k < len(fn.params):
        attrs = attrs.with_(num_input=k - len(unused))
    return Function(params, fn.bindings, fn.output, attrs, fn.prov)


def random_inputs(params: Sequence[Var]) -> list[np.ndarray]:
    """Random values for parameters (standard normal floats, zeros otherwise, seed 0, each
    symbolic dim set to 2, as the check makes them); raises for an unknown shape."""
    rng = np.random.default_rng(0)
    env: dict[str, int] = {}
    out = []
    for p in params:
        ty = p.ty
        if not isinstance(ty, TensorType) or ty.shape is None or any(d is ANY for d in ty.shape):
            raise CannotBuild(f"%{p.name}: {ty} has no known shape")
        shape = []
        for d in ty.shape:
            if isinstance(d, SymExpr):
                for s in d.free_symbols:
                    env.setdefault(s, RANDOM_DIM)
                d = d.evaluate(env)
            shape.append(int(d))
        out.append(_random_value(tuple(shape), ty.dtype.numpy, rng))
    return out


def _random_value(shape: tuple, dtype: Any, rng: np.random.Generator) -> np.ndarray:
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype)
