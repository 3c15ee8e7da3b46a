"""lazy-get-input: fetch the weights of a function with ``get_item(i)`` instead of taking them
as parameters (TVM Relax's LazyGetInput).

The runtime inputs (the first ``num_input`` parameters) stay parameters; weight ``i`` (the
``i``-th parameter after them) is fetched once, just before its first use, by
``get_item(index=i)``, whose value comes from the ``get_item`` callback given at run time
(``compiler.ops.lazy_params.lazy_callbacks``). Unlike TVM, which passes the callback as an
extra parameter and calls it at every use, the callback is global and each weight is fetched
once. Applies to every public function with a ``num_input`` attribute, or to ``function``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Module
from compiler.passes.infra.manager import Pass, PassContext, PassError, register_pass
from compiler.passes.lazy_transform_params import lazy_module


@register_pass
@dataclass(frozen=True)
class LazyGetInput(Pass):
    """Replace weight parameters (after num_input) by get_item calls at their first use."""

    name: ClassVar[str] = "lazy-get-input"
    changes_signature: ClassVar[bool] = True
    function: str = ""

    def transform(self, module: Module, ctx: PassContext) -> Module:
        if self.function and self.function not in module:
            raise PassError(f"{self.spec()}: the module has no function @{self.function}")
        names = [
            n
            for n, f in module.functions.items()
            if (n == self.function if self.function else not f.is_private)
            and "num_input" in f.attrs
        ]
        return lazy_module(module, names, self.name, load=True, store=False)
