"""bind-params: turn parameters of a function into named constants with given values (TVM
Relax's BindParams), e.g. weights passed as inputs (``keep_params_as_input``) back into the
module so fold-constant can work on them.

The values are arrays, which a pipeline spec cannot carry: build the pass in Python,
``BindParams({"fc.weight": w})``, or call ``bind_params(module, {"fc.weight": w})``. Its spec
(``bind-params{names=[fc.weight]}``) records which parameters were bound, but does not parse
back; ``bind-params`` from a spec string, without values, fails saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from compiler.ir.nodes import Constant, Function, Module
from compiler.passes.infra import rewrite
from compiler.passes.infra.manager import Pass, PassContext, PassError, register_pass
from compiler.passes.lift_transform_params import substitute


def _constants(params: Mapping[str, Any]) -> tuple[tuple[str, Constant], ...]:
    out = []
    for name, value in dict(params).items():
        if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
            value = value.detach().cpu().numpy()
        out.append((name, value if isinstance(value, Constant) else Constant(np.asarray(value))))
    return tuple(out)


def bind_function(
    fn: Function,
    fname: str,
    values: dict[str, Constant],
    pass_name: str,
    constants: Mapping[str, Constant] | None = None,
) -> Function:
    """``fn`` with the parameters named in ``values`` replaced by named constants
    (``constants``: the module's weights by name, which a new name must not clash with)."""
    by_name = {p.name: p for p in fn.params}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise PassError(
            f"@{fname} has no parameter(s) {', '.join(unknown)} "
            f"(parameters: {', '.join(p.name for p in fn.params)})"
        )
    constants = constants or {}
    mapping = {}
    for name, given in values.items():
        param = by_name[name]
        if param.ty != given.ty:  # symbolic dims too: the types downstream were inferred
            raise PassError(f"cannot bind %{name}: it is {param.ty}, the value is {given.ty}")
        clash = constants.get(name)
        if clash is not None and clash is not given and not np.array_equal(clash.data, given.data):
            raise PassError(f"cannot bind %{name}: the module has another weight ${name}")
        prov = param.prov.with_pass(pass_name) if not param.prov.is_empty else given.prov
        mapping[id(param)] = Constant(given.data, name=name, prov=prov)
    rewrite.progress.function = fname
    kept = tuple(p for p in fn.params if id(p) not in mapping)
    bindings = substitute(fn.bindings, mapping)
    output = mapping.get(id(fn.output), fn.output)
    attrs = fn.attrs
    if "num_input" in attrs:  # inputs bound by name no longer count as inputs
        inputs = {id(p) for p in fn.params[: fn.num_input]}
        attrs = attrs.with_(num_input=sum(1 for p in kept if id(p) in inputs))
    return fn.replace(params=kept, bindings=bindings, output=output, attrs=attrs)


@register_pass
@dataclass(frozen=True)
class BindParams(Pass):
    """Replace parameters of one function by named constants (values given in Python)."""

    name: ClassVar[str] = "bind-params"
    changes_signature: ClassVar[bool] = True
    params: tuple = field(default=(), repr=False)
    function: str = "main"

    def __post_init__(self):
        # Arrays become frozen Constants now, so a later change by the caller cannot leak in
        # and the pass stays hashable.
        if not _is_bound(self.params):
            object.__setattr__(self, "params", _constants(dict(self.params)))

    def spec(self) -> str:
        names = ",".join(name for name, _ in self.params)
        suffix = "" if self.function == "main" else f",function={self.function}"
        return f"{self.name}{{names=[{names}]{suffix}}}"

    @property
    def options(self) -> dict[str, Any]:
        return {"names": tuple(name for name, _ in self.params), "function": self.function}

    def transform(self, module: Module, ctx: PassContext) -> Module:
        if not self.params:
            raise PassError(
                "bind-params needs the values to bind: build it in Python, "
                "BindParams({name: array}), or call bind_params(module, {name: array})"
            )
        fn = module[self.function]
        new = bind_function(fn, self.function, dict(self.params), self.name, module.constants())
        return module.with_function(self.function, new)


def _is_bound(params: Any) -> bool:
    return isinstance(params, tuple) and all(
        isinstance(p, tuple) and isinstance(p[1], Constant) for p in params
    )


def bind_params(module: Module, params: Mapping[str, Any], function: str = "main") -> Module:
    """``module`` with the parameters of ``function`` named in ``params`` bound to those
    values as named constants (run through the pass manager, so it is recorded)."""
    return BindParams(params, function)(module)
