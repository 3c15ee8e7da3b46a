"""lazy-set-output: hand each result of a function to ``set_item(i, value)`` as soon as it is
computed (TVM Relax's LazySetOutput), so it can be saved and freed before the others exist.

Result ``i`` is field ``i`` of the returned tuple (a single returned tensor is result 0). When
the returned tuple is not built inline (a call of another function, or any tuple-valued
binding) each item is taken with ``t[i]`` and set on its own: TVM's pass instead hands the
whole tuple over at index 0 (docs/bugs.md bug 5). ``set_item`` returns its value, so the function
returns what it returned before. Applies to every public function, or to ``function``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Module
from compiler.passes.infra.manager import Pass, PassContext, PassError, register_pass
from compiler.passes.lazy_transform_params import lazy_module


@register_pass
@dataclass(frozen=True)
class LazySetOutput(Pass):
    """Emit every returned value through set_item right after it is computed."""

    name: ClassVar[str] = "lazy-set-output"
    changes_signature: ClassVar[bool] = True
    function: str = ""

    def transform(self, module: Module, ctx: PassContext) -> Module:
        if self.function and self.function not in module:
            raise PassError(f"{self.spec()}: the module has no function @{self.function}")
        names = [
            n
            for n, f in module.functions.items()
            if (n == self.function if self.function else not f.is_private)
        ]
        return lazy_module(module, names, self.name, load=False, store=True)
