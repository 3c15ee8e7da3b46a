"""Float -> integer `cast`: the interpreter's explicit rule (compiler/ops/elementwise.py
`float_to_int`) beside numpy's own cast that it replaced (`np.trunc(x).astype(t)`), on finite
in-range values (the common case: two reductions more) and with one NaN (the masked path);
and the compiled kernel on the same arrays.

    .venv/bin/python bench/cast_speed.py [--n N] [--reps R]
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler import passes  # noqa: E402
from compiler.interpret import run  # noqa: E402
from compiler.ir import Call, Function, Module, TensorType, Var  # noqa: E402
from compiler.ir.types import DType  # noqa: E402
from compiler.ops.elementwise import float_to_int  # noqa: E402


def _median_ms(fns: dict, reps: int) -> dict:
    times: dict = {k: [] for k in fns}
    for _ in range(reps):  # interleaved
        for k, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return {k: 1e3 * statistics.median(v) for k, v in times.items()}


def _compiled(x: np.ndarray, target: str):
    p = Var("x", TensorType(x.shape, DType.of(x.dtype)))
    m = Module({"main": Function.from_output([p], Call("cast", [p], {"dtype": target}))})
    m = passes.run(m, "legalize-ops", raise_on_failure=True).module
    run(m, x)  # compiled once
    return lambda: run(m, x)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    print("command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.2f}"
    )
    rng = np.random.default_rng(0)
    for src, target in [("float32", "int32"), ("float32", "int8"), ("float64", "int64")]:
        for case in ("in range", "one NaN"):
            x = rng.uniform(-100, 100, args.n).astype(src)
            if case == "one NaN":
                x[args.n // 2] = np.nan
            t = np.dtype(target)

            def numpy_cast(x=x, t=t):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return np.trunc(x).astype(t)

            ms = _median_ms(
                {
                    "numpy's cast (before)": numpy_cast,
                    "the rule (after)": lambda x=x, t=t: float_to_int(x, t),
                    "compiled": _compiled(x, target),
                },
                args.reps,
            )
            before, after = ms["numpy's cast (before)"], ms["the rule (after)"]
            print(
                f"{src} -> {target}, {args.n} elements, {case}: numpy's cast {before:.2f} ms, "
                f"the rule {after:.2f} ms ({after / before:.2f}x), "
                f"compiled {ms['compiled']:.2f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
