"""What the check says when a pass changes how a module is called (the compiler's
``calling_convention``: lift-transform-params, the lazy passes, bind-params)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.ir import Expr, Module
from compiler.passes import CallingConvention
from explorer.check.report import Finding

if TYPE_CHECKING:  # a Step / Trace is given; the trace module imports this one
    from explorer.trace import Step


def _function_of(module: Module, node: Expr, default: str) -> str:
    """The name of the function of ``module`` that binds ``node``."""
    for name, fn in module.functions.items():
        if any(n is node for n in fn.iter_nodes()):
            return name
    return default


def _signature_changed(
    step: Step, before: CallingConvention, after: CallingConvention, get_calls: int, set_calls: int
) -> Finding:
    """The finding of a pass that changed how @main is called (the check called it the new
    way; ``get_calls`` / ``set_calls``: how often the module after it called get_item /
    set_item)."""
    return Finding(
        "signature-changed",
        step,
        [],
        _signature_message(step, before, after),
        {
            "before": before.describe(),
            "after": after.describe(),
            "get_item_calls": get_calls,
            "set_item_calls": set_calls,
        },
    )


def _signature_message(step: Step, before: CallingConvention, after: CallingConvention) -> str:
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
    if after.entry_get and not before.entry_get:
        what.append(
            "@main fetches its weights with get_item: the check served the "
            + ("transformed weights" if after.transform else "weights")
        )
    if after.entry_set and not before.entry_set:
        what.append("@main hands its results to set_item: the check compared what it was handed")
    if not what:
        what.append(
            f"@main is called another way (before: {before.describe()}): the check ran "
            f"{after.describe()}"
        )
    return f"after {step.name}, " + "; ".join(what)
