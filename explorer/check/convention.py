"""How a module is called: which function, with the weights how (after
lift-transform-params, lazy parameters), and what a change of it tells the user."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from compiler.ir.nodes import (
    Call,
    Expr,
    Function,
    Module,
)
from compiler.passes.lift_transform_params import TRANSFORM_PARAMS_OF

if TYPE_CHECKING:  # a Step / Trace is given; the trace module imports this one
    from explorer.trace import Step

# ===== how a module is called ===================================================================


@dataclass(frozen=True)
class _Convention:
    """How ``@main`` of a module is called: through its transform-params function or not,
    how many weights each takes as parameters, and which fetch / hand over values lazily."""

    transform: str | None
    transform_params: int
    transform_get: bool
    transform_set: bool
    main_weights: int
    main_get: bool
    main_set: bool

    def describe(self) -> str:
        """How the check calls @main, in words."""
        parts = []
        if self.transform:
            lazy = [("get_item", self.transform_get), ("set_item", self.transform_set)]
            how = f"@{self.transform} on the weights"
            if any(on for _, on in lazy):
                how += " (through " + " and ".join(n for n, on in lazy if on) + ")"
            parts.append(how + ", then @main on the inputs and its results")
        elif self.main_weights:
            parts.append("@main on the inputs and the weights")
        else:
            parts.append("@main on the inputs")
        if self.main_get:
            parts.append("@main's weights served by get_item")
        if self.main_set:
            parts.append("@main's results collected from set_item")
        return "; ".join(parts)


def _lazy_ops(fn: Function) -> tuple[bool, bool]:
    """Whether ``fn`` calls get_item, and set_item."""
    ops = {n.op for n in fn.iter_nodes() if isinstance(n, Call)}
    return "get_item" in ops, "set_item" in ops


def _function_of(module: Module, node: Expr, default: str) -> str:
    """The name of the function of ``module`` that binds ``node``."""
    for name, fn in module.functions.items():
        if any(n is node for n in fn.iter_nodes()):
            return name
    return default


def _transform_of(module: Module) -> str | None:
    for name, fn in module.functions.items():
        if fn.attrs.get(TRANSFORM_PARAMS_OF) == "main":
            return name
    return "main_transform_params" if "main_transform_params" in module else None


def _convention(module: Module) -> _Convention:
    main = module["main"]
    tp = _transform_of(module)
    t_get = t_set = False
    t_params = 0
    if tp is not None:
        t_get, t_set = _lazy_ops(module[tp])
        t_params = len(module[tp].params)
    m_get, m_set = _lazy_ops(main)
    return _Convention(tp, t_params, t_get, t_set, len(main.params) - main.num_input, m_get, m_set)


def _signature_message(step: Step, before: _Convention, after: _Convention) -> str:
    tp = after.transform or before.transform
    what = []
    if after.transform and not before.transform:
        what.append(
            f"@main now takes the weights as transformed by @{tp}: the check ran @{tp} on the "
            "weights, then @main on the inputs and its results (calling @main with the "
            "original weights would give wrong numbers)"
        )
    elif before.transform and not after.transform:
        what.append(f"@{before.transform} is gone: the check ran {after.describe()}")
    if after.transform_get and not before.transform_get:
        what.append(f"@{tp} fetches its weights with get_item: the check served the weights")
    if after.transform_set and not before.transform_set:
        what.append(f"@{tp} hands its results to set_item: the check collected them for @main")
    if after.main_get and not before.main_get:
        what.append(
            "@main fetches its weights with get_item: the check served the "
            + ("transformed weights" if after.transform else "weights")
        )
    if after.main_set and not before.main_set:
        what.append("@main hands its results to set_item: the check compared what it was handed")
    if not what:
        what.append(
            f"@main is called another way (before: {before.describe()}): the check ran "
            f"{after.describe()}"
        )
    return f"after {step.name}, " + "; ".join(what)
