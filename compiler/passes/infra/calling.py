"""How a module is called: which function takes the inputs, whether its weights go through a
transform function first (lift-transform-params), and which functions fetch their weights with
`get_item` or hand their results to `set_item` (the lazy passes).

The calling convention belongs to the compiler: the passes that change it say so
(`Pass.changes_signature`), every other pass leaves `calling_convention` as it was
(tests/compiler/passes/test_calling.py), and a tool that runs a module asks it how, instead of
knowing each pass's attributes and names. A caller serves `get_item` and collects
`set_item` with `lazy_callbacks` (the ops of `SIDE_EFFECT_OPS`, never pure).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.ir.nodes import Call, Function, Module, Var
from compiler.ops.lazy_params import SIDE_EFFECT_OPS, lazy_callbacks

__all__ = [
    "SIDE_EFFECT_OPS",
    "TRANSFORM_PARAMS_OF",
    "CallingConvention",
    "calling_convention",
    "lazy_callbacks",
    "lazy_ops",
    "transform_function",
    "weight_params",
]

# The attribute lift-transform-params puts on the transform function it makes: the name of the
# function whose weights it transforms.
TRANSFORM_PARAMS_OF = "transform_params_of"


@dataclass(frozen=True)
class CallingConvention:
    """How `entry` of a module is called: through its transform function or not, how many
    weights each takes as parameters, and which fetch / hand over values lazily. Equal
    conventions mean a caller that worked before still works."""

    entry: str
    transform: str | None  # the function to run on the weights first, if any
    transform_params: int  # how many weights it takes as parameters (0: fetched or none)
    transform_get: bool  # it fetches the weights with get_item
    transform_set: bool  # it hands its results to set_item
    entry_weights: int  # how many weights ``entry`` takes after its runtime inputs
    entry_get: bool  # ``entry`` fetches its weights with get_item
    entry_set: bool  # ``entry`` hands its results to set_item

    def describe(self) -> str:
        """How to call `entry`, in words."""
        parts = []
        if self.transform:
            lazy = [("get_item", self.transform_get), ("set_item", self.transform_set)]
            how = f"@{self.transform} on the weights"
            if any(on for _, on in lazy):
                how += " (through " + " and ".join(n for n, on in lazy if on) + ")"
            parts.append(how + f", then @{self.entry} on the inputs and its results")
        elif self.entry_weights:
            parts.append(f"@{self.entry} on the inputs and the weights")
        else:
            parts.append(f"@{self.entry} on the inputs")
        if self.entry_get:
            parts.append(f"@{self.entry}'s weights served by get_item")
        if self.entry_set:
            parts.append(f"@{self.entry}'s results collected from set_item")
        return "; ".join(parts)


def lazy_ops(fn: Function) -> tuple[bool, bool]:
    """Whether `fn` itself calls get_item, and set_item (If branches included, the functions
    it calls not): a caller must then serve its weights, and collect its results."""
    ops = {n.op for n in fn.iter_nodes() if isinstance(n, Call)}
    return "get_item" in ops, "set_item" in ops


def transform_function(module: Module, entry: str = "main") -> str | None:
    """The name of the function that transforms the weights of `entry` (made by
    lift-transform-params, or named `<entry>_transform_params`), or None."""
    for name, fn in module.functions.items():
        if fn.attrs.get(TRANSFORM_PARAMS_OF) == entry:
            return name
    default = f"{entry}_transform_params"
    return default if default in module else None


def calling_convention(module: Module, entry: str = "main") -> CallingConvention:
    """How `entry` of `module` is called (see `CallingConvention`)."""
    fn = module[entry]
    tp = transform_function(module, entry)
    t_get = t_set = False
    t_params = 0
    if tp is not None:
        t_get, t_set = lazy_ops(module[tp])
        t_params = len(module[tp].params)
    e_get, e_set = lazy_ops(fn)
    weights = len(fn.params) - fn.num_input
    return CallingConvention(entry, tp, t_params, t_get, t_set, weights, e_get, e_set)


def weight_params(module: Module, entry: str = "main") -> tuple[Var, ...]:
    """The parameters the weights of `entry` are given to: those of its transform function
    when it has one, else its own after the runtime inputs (`num_input`)."""
    tp = transform_function(module, entry)
    if tp is not None:
        return module[tp].params
    fn = module[entry]
    return fn.params[fn.num_input :]
