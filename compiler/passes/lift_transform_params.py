"""lift-transform-params: move the weight preprocessing of a function out into a new function
``<name>_transform_params`` (TVM Relax's LiftTransformParams).

A function with a ``num_input = k`` attribute takes its runtime inputs first and its weights
after them. Every binding that depends on weights and reads nothing but weights, constants and
other such bindings is lifted: ``@main_transform_params(weights...)`` computes the values
``@main`` still needs (a weight it reads directly is passed through) and returns them as a
tuple; ``@main`` then takes ``(inputs..., transformed weights...)`` with ``num_input = k``.

The signature changes (``changes_signature``): calling ``@main`` with the original weights
now gives wrong numbers. The right call is ``p = run(m, *weights,
function="main_transform_params")`` then ``run(m, *inputs, *p)``. The new function carries
``transform_params_of = "main"`` so ``calling_convention`` (compiler/passes/infra/calling.py) finds
the pair and tools can compose it. Lifted nodes are the very same objects in the new function
(its parameters are the original weight Vars), so the explorer matches them by identity.
Bindings that read only constants are not lifted (folding them is fold-constant's job): they
stay in main when main reads them, and are also bound in the transform function when a lifted
binding reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import (
    Constant,
    Expr,
    Function,
    Module,
    Tuple,
    Var,
    external_reads,
)
from compiler.ir.nodes import substitute as ir_substitute
from compiler.ir.provenance import Provenance
from compiler.ops.lazy_params import SIDE_EFFECT_OPS
from compiler.passes.infra import rewrite
from compiler.passes.infra.calling import TRANSFORM_PARAMS_OF
from compiler.passes.infra.manager import Pass, PassContext, PassError, register_pass


def substitute(bindings: tuple[Expr, ...], mapping: dict[int, Expr]) -> tuple[Expr, ...]:
    """``compiler.ir.substitute``, telling the pass manager which binding is being rebuilt."""
    return ir_substitute(bindings, mapping, _working_on)


def _working_on(node: Expr) -> None:
    rewrite.progress.node = node


def _classify(fn: Function) -> tuple[set[int], set[int]]:
    """Ids of the bindings that depend on weights and read nothing but weights, constants and
    such bindings (lifted), and of those that read only constants (usable on both sides)."""
    weights = {id(p) for p in fn.params[fn.num_input :]}
    lifted: set[int] = set()
    const_only: set[int] = set()
    for node in fn.bindings:
        if getattr(node, "op", None) in SIDE_EFFECT_OPS:
            continue
        reads = [r for r in external_reads(node) if not isinstance(r, Constant)]
        if all(id(r) in const_only for r in reads):
            const_only.add(id(node))
        elif all(id(r) in weights or id(r) in lifted or id(r) in const_only for r in reads):
            lifted.add(id(node))
    return lifted, const_only


def _reach(roots: list[Expr], within: set[int]) -> set[int]:
    """Ids in ``within`` that ``roots`` depend on (through nodes in ``within`` only)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in within and id(node) not in seen:
            seen.add(id(node))
            stack.extend(external_reads(node))
    return seen


def _param_name(node: Expr, taken: set[str]) -> str:
    base = node.name or getattr(node, "op", None) or "lifted"
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def lift_function(fn: Function, name: str, pass_name: str) -> tuple[Function, Function] | None:
    """``(new fn, its transform_params function)``, or None when nothing can be lifted."""
    lifted, const_only = _classify(fn)
    if not lifted:
        return None
    weights = fn.params[fn.num_input :]
    # What stays in main, and the weights and lifted values it reads (the frontier).
    stays = [b for b in fn.bindings if id(b) not in lifted and id(b) not in const_only]
    reads = [r for b in stays for r in external_reads(b)] + [fn.output]
    used = {id(r) for r in reads}
    frontier = [w for w in weights if id(w) in used]
    frontier += [b for b in fn.bindings if id(b) in lifted and id(b) in used]
    needed = _reach(frontier, lifted | const_only)
    # Constant-only bindings stay in main unless only lifted bindings read them.
    for_lifted = _reach(
        [r for b in fn.bindings if id(b) in lifted for r in external_reads(b)], const_only
    )
    dropped = lifted | (for_lifted - _reach(reads, const_only))
    taken = {p.name for p in fn.params}
    mapping: dict[int, Expr] = {}
    for f in frontier:
        if not isinstance(f, Var):
            mapping[id(f)] = Var(_param_name(f, taken), f.ty, f.prov.with_pass(pass_name))
    params = fn.params[: fn.num_input] + tuple(mapping.get(id(f), f) for f in frontier)
    rewrite.progress.function = name
    bindings = substitute(tuple(b for b in fn.bindings if id(b) not in dropped), mapping)
    output = mapping.get(id(fn.output), fn.output)
    main = Function(params, bindings, output, fn.attrs, fn.prov)
    result = Tuple(frontier, prov=Provenance(pass_name=pass_name), name="transformed")
    transform = Function(
        weights,
        tuple(b for b in fn.bindings if id(b) in needed) + (result,),
        result,
        {"num_input": 0, TRANSFORM_PARAMS_OF: name},
        fn.prov,
    )
    return main, transform


@register_pass
@dataclass(frozen=True)
class LiftTransformParams(Pass):
    """Lift weight-only bindings of functions with num_input into <name>_transform_params."""

    name: ClassVar[str] = "lift-transform-params"
    changes_signature: ClassVar[bool] = True

    def transform(self, module: Module, ctx: PassContext) -> Module:
        functions: dict[str, Function] = {}
        for name, fn in module.functions.items():
            functions[name] = fn
            if (
                "num_input" not in fn.attrs
                or fn.num_input >= len(fn.params)
                or fn.is_private
                or TRANSFORM_PARAMS_OF in fn.attrs
            ):
                continue
            lifted = lift_function(fn, name, self.name)
            if lifted is None:
                continue
            tp_name = f"{name}_transform_params"
            if tp_name in module:
                raise PassError(f"cannot lift the weights of @{name}: @{tp_name} already exists")
            functions[name], functions[tp_name] = lifted
        return module.replace(functions=functions)
