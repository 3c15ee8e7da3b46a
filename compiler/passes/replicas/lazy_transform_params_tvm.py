"""REPLICA OF A REAL BUG — do not use to compile. ``replica-lazy-transform-params``.

docs/bugs.md bug 5, "LazyTransformParams and tuples returned by a nested function": TVM Relax's
LazyTransformParams (``python/tvm/relax/transform/lazy_transform_params.py``) first walks the
bindings of each ``*transform_params`` function to find the fields of the returned tuple
(``ForwardCollector.visit_var_binding_``); on the binding of the returned variable it does
``assert isinstance(binding.value, relax.Tuple)``. When the tuple comes from a call of another
function rather than being built inline, the pass dies with a bare ``AssertionError`` — no
message, no name of the function or the binding.

This pass is lazy-transform-params except for that walk: it visits the bindings the same way
(with the rewriter, so a failure is recorded on the binding being visited) and asserts the
same thing. Workarounds shown in the notebooks: mark the called function private and run
inline-private-functions first, or use lazy-get-input + lazy-set-output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Expr, Function, Tuple
from compiler.passes.infra.manager import register_pass
from compiler.passes.infra.rewrite import rewrite_function
from compiler.passes.lazy_transform_params import LazyTransformParams


@register_pass
@dataclass(frozen=True)
class ReplicaLazyTransformParams(LazyTransformParams):
    """lazy-transform-params with TVM's bare assert on a returned tuple that is not inline."""

    name: ClassVar[str] = "replica-lazy-transform-params"

    def check(self, fn: Function, fname: str) -> None:
        def forward_collector(node: Expr) -> Expr | None:
            if node is fn.output:
                assert isinstance(node, Tuple)
            return None

        rewrite_function(fn, forward_collector, self.name, fname)
