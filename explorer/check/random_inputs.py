"""Random inputs for a check given none: their sizes, and the limit on all of them together."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from compiler import LimitError
from compiler.ir import ANY, SymExpr, TensorType
from explorer.check.report import CheckError

RANDOM_SYMBOL_VALUE = 2  # the size given to each symbolic dim of random inputs
MAX_RANDOM_INPUT_BYTES = 256 << 20
"""Random inputs (and weights) a check makes up when none are given: all of them together.
A signature asking for more (``%x: f32[100000, 100000]``, 40 GB from a 100-byte file) is a
LimitError naming the input, before anything is allocated: pass real inputs instead."""


def random_arrays(params: Sequence, env: dict[str, int], rng, made: int = 0) -> list[np.ndarray]:
    """Random values for parameters (standard normal floats, zeros otherwise), each symbolic
    dim set to 2 (`env` learns the sizes chosen); `made`: bytes of random values already
    made (all of them are within MAX_RANDOM_INPUT_BYTES, checked before allocating)."""
    out, planned = [], []
    for p in params:
        ty = p.ty
        dims = ty.shape if isinstance(ty, TensorType) else None
        if dims is None or any(d is ANY for d in dims):
            raise CheckError(
                f"%{p.name}: {ty} has no known shape to make a random value: pass inputs to "
                "check() or example_inputs to explore()"
            )
        shape = []
        for d in dims:
            if isinstance(d, SymExpr):
                for name in d.free_symbols:
                    env.setdefault(name, RANDOM_SYMBOL_VALUE)
                d = d.evaluate(env)
            shape.append(int(d))
        nbytes = math.prod(shape) * np.dtype(ty.dtype.numpy).itemsize
        made += nbytes
        if made > MAX_RANDOM_INPUT_BYTES:
            raise LimitError(
                f"%{p.name}: {ty} would need {nbytes:,} bytes of random values; a check makes "
                f"up random inputs only up to {MAX_RANDOM_INPUT_BYTES >> 20} MiB in all "
                "(explorer.check.random_inputs.MAX_RANDOM_INPUT_BYTES); pass real inputs: "
                "trace.check((x, ...)) or explore(model, (x, ...)); on the command line, a "
                ".py model file whose model() returns (model, inputs), or --input-shape"
            )
        planned.append((shape, ty.dtype.numpy))
    for shape, dt in planned:
        if np.issubdtype(dt, np.floating):
            out.append(rng.standard_normal(shape).astype(dt))
        else:
            out.append(np.zeros(shape, dt))
    return out
