"""Testing a pass the way the compiler's own passes are tested: a Before and an Expected module
(TVM's `tvm.ir.assert_structural_equal` tests, MLIR's FileCheck tests), for your own pass too.

    from compiler.passes import verify_pass

    verify_pass(BEFORE, EXPECTED, FastGelu())        # a Pass, its class, or a spec string

`verify_pass` runs the pass on `before` (IR text or a Module) with the verifier after
every pass, and checks that the result is `expected` structurally (names of values aside),
that it prints and parses back to itself, and (`numbers=True`, the default) that it computes
what `before` computes, judged as float32 rounds. Each failure is one `AssertionError`
saying which of these broke, with the IR diff or the worst element.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from compiler.ir import Module, assert_structural_equal, parse
from compiler.ir.types import TensorType

#: relative tolerance of the numbers check: a few float32 roundings of a short computation
RTOL = 1e-5


def verify_pass(
    before: str | Module,
    expected: str | Module,
    spec: Any,
    *,
    numbers: bool = True,
    inputs: Sequence[np.ndarray] | None = None,
    provenance: bool = False,
    roundtrip: bool = True,
    verify_each: bool = True,
    rtol: float = RTOL,
) -> Module:
    """Run `spec` (a Pass, a Pass class taking no options, a spec string or a list of them)
    on `before` and check the result; returns the module the pass made.

    - structure: the result equals `expected` (`provenance=True` compares provenance too);
    - `roundtrip`: the result prints and parses back to an equal module;
    - `numbers`: on `inputs` (default: values spread over [-1, 1] for every float
      parameter of `@main`, 0..n-1 for integers) the result's outputs equal `before`'s
      within `rtol` of each output's largest magnitude, NaN where NaN is;
    - `verify_each=False` skips the verifier (for a module that breaks the IR's invariants
      on purpose, such as a replica of a bug).
    """
    from compiler.passes.infra.runner import run

    module = _module(before, "before", verify_each)
    want = _module(expected, "expected", verify_each)
    spec = spec() if isinstance(spec, type) else spec
    result = run(module, spec, verify_each=verify_each)
    if not result.ok:
        failure = result.failure
        if failure is None:  # interrupted
            raise AssertionError("the pass run was interrupted")
        raise AssertionError(f"{failure.spec} failed: {failure.error}\n{failure.traceback}")
    after = result.module
    assert_structural_equal(after, want, provenance=provenance)
    if roundtrip:
        try:
            again = parse(str(after), verify=verify_each)
        except Exception as e:
            raise AssertionError(f"the result does not parse back from its text: {e}") from None
        assert_structural_equal(again, after)
    if numbers:
        _same_numbers(module, after, inputs, rtol)
    return after


def _module(value: str | Module, what: str, verify: bool) -> Module:
    if isinstance(value, Module):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{what} is IR text or a Module, not {type(value).__name__}")
    try:
        return parse(value, verify=verify)
    except Exception as e:
        raise AssertionError(f"the {what} module does not parse: {e}") from None


def default_inputs(module: Module) -> list[np.ndarray]:
    """Inputs for `@main` of `module`: float parameters spread over [-1, 1], integer ones
    0..n-1, booleans alternating; a parameter without a static shape cannot be made up."""
    args = []
    for p in module.main.params:
        ty = p.ty
        if (
            not isinstance(ty, TensorType)
            or ty.shape is None
            or not all(isinstance(d, int) for d in ty.shape)
        ):
            raise AssertionError(
                f"parameter %{p.name} has type {ty}: give verify_pass(..., inputs=[...]) for a "
                "module whose inputs are not tensors of static shape"
            )
        n = int(np.prod(ty.shape, dtype=np.int64))
        dtype = np.dtype(ty.dtype.numpy)
        if dtype.kind == "f":
            values = np.linspace(-1, 1, n)
        elif dtype.kind == "b":
            values = np.arange(n) % 2 == 0
        else:
            values = np.arange(n)
        args.append(values.reshape(ty.shape).astype(dtype))
    return args


def _same_numbers(before: Module, after: Module, inputs, rtol: float) -> None:
    from compiler.interpret import run as interpret

    args = list(inputs) if inputs is not None else default_inputs(before)
    want = interpret(before, *args)
    got = interpret(after, *args)
    if len(want) != len(got):
        raise AssertionError(f"the pass changed the number of outputs: {len(want)} -> {len(got)}")
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        w, g = np.asarray(w), np.asarray(g)
        if w.shape != g.shape or w.dtype != g.dtype:
            raise AssertionError(
                f"output {i}: the pass changed {w.dtype}{list(w.shape)} into "
                f"{g.dtype}{list(g.shape)}"
            )
        if w.dtype.kind not in "fc":
            if not np.array_equal(w, g):
                bad = int(np.count_nonzero(w != g))
                raise AssertionError(f"output {i}: {bad} of {w.size} elements differ")
            continue
        nan_w, nan_g = np.isnan(w), np.isnan(g)
        if not np.array_equal(nan_w, nan_g):
            raise AssertionError(
                f"output {i}: NaN at {int(np.count_nonzero(nan_w ^ nan_g))} elements where the "
                "other side has a number"
            )
        finite = ~nan_w
        wf, gf = w[finite].astype(np.float64), g[finite].astype(np.float64)
        inf_w, inf_g = np.isinf(wf), np.isinf(gf)
        if not np.array_equal(inf_w, inf_g) or not np.array_equal(wf[inf_w], gf[inf_g]):
            raise AssertionError(f"output {i}: the infinities differ")
        wf, gf = wf[~inf_w], gf[~inf_w]
        if wf.size == 0:
            continue
        scale = float(np.max(np.abs(wf)))
        err = np.abs(wf - gf)
        worst = int(np.argmax(err))
        limit = rtol * max(scale, np.finfo(w.dtype).tiny)
        if err[worst] > limit:
            raise AssertionError(
                f"output {i}: the pass changed the numbers: max abs error {err[worst]:.3g} "
                f"(expected {wf[worst]:.6g}, got {gf[worst]:.6g}) over {rtol:g} of the output's "
                f"largest magnitude {scale:.3g}"
            )


__all__ = ["RTOL", "default_inputs", "verify_pass"]
