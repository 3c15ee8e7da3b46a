"""Running a TVM Relax module of a trace on numpy values: what a check of a TVM trace needs.

A step's module is built with `relax.build` (which completes the lowering the step has not
done yet) and run in the Relax VM. Builds are shared between structurally equal modules.

What `main` takes changes along a pipeline, as for passlens's own passes:

- as imported: the runtime inputs, then the weights (`num_input` counts the inputs);
- after `LiftTransformParams`: `main_transform_params` turns the weights (one tuple) into
  what `main` now takes after its inputs, so a call is `main(*inputs,
  *main_transform_params(weights))`;
- after the lazy passes (`LazyTransformParams`, `LazyGetInput` / `LazySetOutput`): the
  transform function reads its inputs through a `get` callback and hands each result to a
  `set_output(index, value)` callback; the runner serves the inputs by index and collects
  what is set by index. What a caller receives is exactly what was set: a whole tuple handed
  to index 0 is one value at index 0 (TVM 0.27's LazySetOutput does that), which the call of
  `main` then cannot use, and the check says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class TVMRunError(RuntimeError):
    """A module could not be built or run as the step's calling convention says."""


def to_numpy(value: Any) -> Any:
    """A VM result as numpy arrays (tuples stay tuples)."""
    if hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    if isinstance(value, (list, tuple)) or type(value).__name__ in ("Array", "List"):
        return tuple(to_numpy(v) for v in value)
    if isinstance(value, (int, float, bool, np.generic)):
        return np.asarray(value)
    return value


def to_tvm(value: Any) -> Any:
    """numpy arrays (and tuples of them) as TVM runtime values."""
    import tvm

    if isinstance(value, (list, tuple)):
        import tvm_ffi

        return tvm_ffi.convert([to_tvm(v) for v in value])
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    return tvm.runtime.tensor(np.ascontiguousarray(arr).reshape(arr.shape))  # a 0-d stays 0-d


class TVMRunner:
    """Builds modules once per structure and calls their functions."""

    def __init__(self, target: str = "llvm"):
        self.target = target
        self._vms: dict[Any, Any] = {}
        self.builds = 0

    def vm(self, mod):
        import tvm
        import tvm_ffi
        from tvm import relax

        key = tvm_ffi.structural_hash(mod)
        for known, vm in self._vms.get(key, ()):
            if known is mod or tvm_ffi.structural_equal(known, mod):
                return vm
        try:
            exe = relax.build(mod, target=self.target)
        except Exception as e:
            raise TVMRunError(f"relax.build failed: {type(e).__name__}: {_first_line(e)}") from e
        self.builds += 1
        vm = relax.VirtualMachine(exe, tvm.cpu())
        self._vms.setdefault(key, []).append((mod, vm))
        return vm

    def call(self, mod, function: str, args: Sequence[Any]) -> Any:
        vm = self.vm(mod)
        try:
            out = vm[function](*args)
        except Exception as e:
            raise TVMRunError(f"@{function} failed: {type(e).__name__}: {_first_line(e)}") from e
        return out

    def run(self, mod, inputs: Sequence[Any], weights: Sequence[Any] = (), function="main"):
        """`function`'s outputs (a tuple of numpy arrays) for runtime `inputs` and the
        model's `weights` (in the order the imported `main` takes them), whatever the
        calling convention of `mod` (see the module docstring)."""
        main, inputs, given, source = self._given(mod, inputs, weights, function)
        plain = [p for p in main.params if not _is_callable(p)]
        if len(plain) == len(main.params):  # no callbacks: inputs, then what main takes after
            args = self._plain_args(function, main, inputs, given, source)
            out = to_numpy(self.call(mod, function, args))
        else:
            if len(plain) != len(inputs):
                raise TVMRunError(
                    f"@{function} takes {len(plain)} input(s) besides its callbacks, "
                    f"{len(inputs)} given"
                )
            out = self._with_callbacks(mod, function, main, inputs, given, source)
            out = to_numpy(out[0] if len(out) == 1 else tuple(out))
        return out if isinstance(out, tuple) else (out,)

    def arguments(self, mod, inputs: Sequence[Any], weights: Sequence[Any] = (), function="main"):
        """What `run` calls `function` with (TVM values, one per parameter), when it
        takes no callbacks; a `TVMRunError` when it does."""
        main, inputs, given, source = self._given(mod, inputs, weights, function)
        if any(_is_callable(p) for p in main.params):
            raise TVMRunError(f"@{function} takes callbacks, not values")
        return self._plain_args(function, main, inputs, given, source)

    def _given(self, mod, inputs, weights, function):
        """`(function, inputs, what it takes after them, where that came from)`."""
        if function not in [_gv_name(gv) for gv in mod.get_global_vars()]:
            raise TVMRunError(f"the module has no @{function}")
        main = mod[function]
        inputs = [to_tvm(x) for x in inputs]
        transform = f"{function}_transform_params"
        if transform in [_gv_name(gv) for gv in mod.get_global_vars()]:
            return main, inputs, self.transformed(mod, transform, weights), f"@{transform}"
        return main, inputs, [to_tvm(w) for w in weights], "the weights"

    @staticmethod
    def _plain_args(function, main, inputs, given, source) -> list:
        num_input = _num_input(main)
        takes_weights = num_input is not None and num_input < len(main.params)
        args = [*inputs, *given] if takes_weights or given and source != "the weights" else inputs
        if len(args) != len(main.params):
            raise TVMRunError(_arity(function, main, args, inputs, source))
        return args

    def transformed(self, mod, name: str, weights: Sequence[Any]) -> list:
        """What the transform function gives for `weights`, as `main` would take it."""
        fn = mod[name]
        plain = [p for p in fn.params if not _is_callable(p)]
        if len(plain) == len(fn.params):  # takes the weights: one tuple, or one by one
            if len(fn.params) == 1 and _is_tuple(fn.params[0]):
                args = [to_tvm(tuple(weights))]
            else:
                args = [to_tvm(w) for w in weights]
            if len(args) != len(fn.params):
                raise TVMRunError(
                    f"@{name} takes {len(fn.params)} argument(s), the model has "
                    f"{len(weights)} weight(s)"
                )
            out = self.call(mod, name, args)
            return list(out) if _is_sequence(out) else [out]
        # inputs fetched by index: the weight tuple as one input (LazyGetInput on a function
        # taking the tuple), else each weight by its own index (LazyTransformParams)
        served = [to_tvm(tuple(weights))] if _reads_a_tuple(fn) else [to_tvm(w) for w in weights]
        return self._with_callbacks(mod, name, fn, [], served, "the weights")

    def _with_callbacks(self, mod, name: str, fn, plain: list, served: list, source: str):
        """Call `name` with its plain parameters and callbacks: `get(i)` serves
        `served[i]`; `set_output(i, v)` collects. Returns what was set by index (or what
        the function returned when it sets nothing)."""
        import tvm_ffi

        outputs: dict[int, Any] = {}
        failures: list[TVMRunError] = []  # raised in a callback: TVM's VM wraps it, we unwrap

        def fail(message: str):
            failures.append(TVMRunError(message))
            raise failures[-1]

        def get(index, *rest):
            i = int(index)
            if not 0 <= i < len(served):
                whole = [k for k, v in enumerate(served) if _is_sequence(v)]
                why = (
                    f": {source} handed over {len(served)} value(s), "
                    + ", ".join(f"value {k} a whole tuple of {len(served[k])}" for k in whole)
                    if whole
                    else f" ({source} gave {len(served)})"
                )
                fail(f"@{name} asks for value {i}, which it cannot get{why}")
            return served[i]

        def set_output(index, value, *rest):
            i = int(index)
            if i in outputs:
                fail(f"@{name} sets output {i} twice")
            outputs[i] = value

        args, plain_left, sets = [], list(plain), False
        for p in fn.params:
            label = str(getattr(p, "name", None) or getattr(p, "name_hint", ""))
            if not _is_callable(p):
                args.append(plain_left.pop(0))
                continue
            sets = sets or "set" in label
            args.append(tvm_ffi.convert(set_output if "set" in label else get))
        try:
            returned = self.call(mod, name, args)
        except TVMRunError:
            if failures:
                raise failures[0] from None
            raise
        if not sets:  # inputs fetched lazily, results returned as before
            return list(returned) if _is_sequence(returned) else [returned]
        if not outputs:
            raise TVMRunError(f"@{name} set no output")
        missing = [i for i in range(max(outputs) + 1) if i not in outputs]
        if missing:
            raise TVMRunError(f"@{name} never set output(s) {missing}")
        return [outputs[i] for i in range(len(outputs))]


def _is_sequence(value) -> bool:
    return isinstance(value, (list, tuple)) or type(value).__name__ in ("Array", "List")


def _arity(function, main, args, inputs, source) -> str:
    tuples = [
        f"value {i} is a whole tuple of {len(v)}"
        for i, v in enumerate(args[len(inputs) :])
        if _is_sequence(v)
    ]
    return (
        f"@{function} takes {len(main.params)} argument(s); the calling convention of this "
        f"step gives {len(args)} ({len(inputs)} input(s) and {len(args) - len(inputs)} from "
        f"{source}" + (f": its {', '.join(tuples)}, handed over whole" if tuples else "") + ")"
    )


def _num_input(fn) -> int | None:
    attrs = fn.attrs
    if attrs is None or "num_input" not in attrs:
        return None
    return int(attrs["num_input"])


def _is_callable(param) -> bool:
    from tvm import relax

    return isinstance(param.ty, relax.FuncType)


def _is_tuple(param) -> bool:
    from tvm import relax

    return isinstance(param.ty, relax.TupleType)


def _reads_a_tuple(fn) -> bool:
    """Whether a lazy transform function reads one input that it casts to a tuple (LazyGetInput
    on a function taking the weight tuple)."""
    from tvm import relax

    found = []

    def visit(expr):
        if isinstance(expr, relax.MatchCast) and isinstance(
            getattr(expr, "ty", None) or getattr(expr.var, "ty", None), relax.TupleType
        ):
            found.append(expr)

    for block in getattr(fn.body, "blocks", ()):
        for binding in block.bindings:
            visit(binding)
    return bool(found)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[-1][:300] if text else type(e).__name__


__all__ = ["TVMRunError", "TVMRunner", "to_numpy", "to_tvm"]


def _gv_name(gv) -> str:
    return str(getattr(gv, "name_hint", None) or getattr(gv, "name", gv))
