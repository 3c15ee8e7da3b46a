"""lazy-transform-params: make the ``*_transform_params`` functions fetch each weight with
``get_item(i)`` just before its first use and hand each result to ``set_item(i, value)`` as
soon as it is computed (TVM Relax's LazyTransformParams), so weights can be loaded,
transformed and saved one at a time.

Weights (the parameters after ``num_input``) stop being parameters. Result ``i`` is field
``i`` of the returned tuple; when that tuple is not built inline but comes from a call of
another function (or any other tuple-valued binding), each of its items is taken with
``t[i]`` and set on its own, where TVM's pass fails with a bare AssertionError (docs/bugs.md bug 5;
``replica-lazy-transform-params`` copies that). ``set_item`` returns its value, so the
function still returns what it returned before (see ``compiler/ops/lazy_params.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Call, Constant, Expr, Function, Module, Tuple, TupleGetItem, Var
from compiler.ir.types import TupleType
from compiler.ops.lazy_params import SIDE_EFFECT_OPS
from compiler.passes import fold_constant
from compiler.passes.infra import rewrite
from compiler.passes.infra.calling import TRANSFORM_PARAMS_OF
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.lift_transform_params import external_reads, substitute

fold_constant.NOT_FOLDABLE.update(SIDE_EFFECT_OPS)  # their values exist only at run time


def get_item(param: Var, index: int, pass_name: str) -> Call:
    """``get_item(index)`` standing for weight ``param``."""
    prov = param.prov.with_pass(pass_name)
    return Call("get_item", (), {"index": index, "type": str(param.ty)}, prov=prov, name=param.name)


def is_stored(fn: Function) -> bool:
    """Whether ``fn`` already hands its results to set_item (or has none)."""
    out = fn.output
    fields = out.fields if isinstance(out, Tuple) else (out,)
    return all(isinstance(f, Call) and f.op == "set_item" for f in fields)


def lazy_function(
    fn: Function, fname: str, pass_name: str, num_weights: int, store: bool
) -> Function:
    """``fn`` with its last ``num_weights`` parameters fetched by get_item and (``store``) its
    results handed to set_item, each as late / as early as possible."""
    rewrite.progress.function = fname
    out_node = fn.output
    weights = fn.params[len(fn.params) - num_weights :]
    fetch = {id(w): get_item(w, i, pass_name) for i, w in enumerate(weights)}
    sets: dict[int, list[int]] = {}  # id(value) -> the result indices it is
    split: Expr | None = None  # a tuple value whose items are the results
    if store and isinstance(out_node, Tuple):
        for i, f in enumerate(out_node.fields):
            sets.setdefault(id(f), []).append(i)
    elif store and isinstance(out_node.ty, TupleType):
        split = out_node
    elif store:
        sets[id(out_node)] = [0]
    mapping: dict[int, Expr] = {}
    bindings: list[Expr] = []
    results: dict[int, Expr] = {}

    def set_results(old: Expr, new: Expr) -> None:
        prov = old.prov.with_pass(pass_name)
        for i in sets.get(id(old), ()):
            results[i] = Call("set_item", (new,), {"index": i}, prov=prov)
            bindings.append(results[i])
        if old is split:
            for i in range(len(new.ty.fields)):
                item = TupleGetItem(new, i, prov=prov)
                results[i] = Call("set_item", (item,), {"index": i}, prov=prov)
                bindings.extend((item, results[i]))

    def load_for(reads: list[Expr]) -> None:
        for r in reads:
            if id(r) in fetch and id(r) not in mapping:
                mapping[id(r)] = fetch[id(r)]
                bindings.append(fetch[id(r)])
                set_results(r, fetch[id(r)])

    inputs = fn.params[: len(fn.params) - len(weights)]
    fields = out_node.fields if isinstance(out_node, Tuple) else (out_node,)
    leaves = {id(x): x for x in (*inputs, *fields) if isinstance(x, (Var, Constant))}
    for leaf in leaves.values():
        if id(leaf) not in fetch:
            set_results(leaf, leaf)  # available from the start
    for node in fn.bindings:
        rewrite.progress.node = node
        load_for(external_reads(node))
        if store and node is out_node and isinstance(node, Tuple):
            continue  # the returned tuple is rebuilt from the set_item results below
        bindings.extend(substitute((node,), mapping))
        set_results(node, mapping.get(id(node), node))
    load_for([out_node])
    rewrite.progress.node = None
    if not store:
        output = mapping.get(id(out_node), out_node)
    elif isinstance(out_node.ty, TupleType):
        fields = [results[i] for i in range(len(out_node.ty.fields))]
        output = Tuple(fields, out_node.prov.with_pass(pass_name), out_node.name)
        bindings.append(output)
    else:
        output = results[0]
    return fn.replace(params=inputs, bindings=tuple(bindings), output=output)


def lazy_module(
    module: Module,
    names: list[str],
    pass_name: str,
    load: bool,
    store: bool,
    num_input: int | None = None,
) -> Module:
    """``module`` with the functions ``names`` made lazy (those with nothing to do kept).
    ``num_input``: the count of runtime inputs of a function without that attribute (None:
    all its parameters)."""
    functions = dict(module.functions)
    for name in names:
        fn = module[name]
        k = fn.num_input if num_input is None else fn.attrs.get("num_input", num_input)
        num_weights = len(fn.params) - k if load else 0
        do_store = store and not is_stored(fn)
        if num_weights or do_store:
            functions[name] = lazy_function(fn, name, pass_name, num_weights, do_store)
    return module.replace(functions=functions)


def is_transform_params(name: str, fn: Function) -> bool:
    """Whether ``fn`` is a weight transform (made by lift-transform-params, or so named)."""
    return TRANSFORM_PARAMS_OF in fn.attrs or name.endswith("transform_params")


@register_pass
@dataclass(frozen=True)
class LazyTransformParams(Pass):
    """Fetch transform_params weights with get_item and emit results with set_item."""

    name: ClassVar[str] = "lazy-transform-params"
    changes_signature: ClassVar[bool] = True

    def check(self, fn: Function, fname: str) -> None:
        """Called on each function before it is rewritten (the replica fails here)."""

    def transform(self, module: Module, ctx: PassContext) -> Module:
        names = [n for n, f in module.functions.items() if is_transform_params(n, f)]
        for name in names:
            self.check(module[name], name)
        # As in TVM, a transform without num_input takes weights only.
        return lazy_module(module, names, self.name, load=True, store=True, num_input=0)
