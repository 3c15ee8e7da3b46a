"""Float -> integer casts of NaN, infinities and out-of-range values: where torch eager, numpy's
own cast and onnxruntime differ from the `cast` op's rule (compiler/ops/elementwise.py), for
every float dtype -> integer dtype, in arrays of 1, 7, 64 and 1000 elements (vectorised loops
and scalar tails differ).

    .venv/bin/python bench/cast_semantics.py

Prints one line per (source, target, library) with a difference: the sizes where it differs,
how many of the special values do, and the first few as (value, library's, rule's). No line:
the library gives the rule there (on this machine: re-run it on another CPU or torch).
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time
import warnings

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler.ops.elementwise import float_to_int  # noqa: E402

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SIZES = (1, 7, 64, 1000)


def _specials(src: np.dtype) -> np.ndarray:
    vals = [np.nan, np.inf, -np.inf, -1.0, -0.5, 1e30, -1e30, 0.7, -2.7, 300.0, -300.0]
    for k in range(7, 66):  # beyond each range, with low bits set where the dtype has them
        for j in (0, 1, 3, 257, 65537):
            vals += [2.0**k + j * 2.0 ** max(0, k - 52), -(2.0**k) - j * 2.0 ** max(0, k - 52)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.unique(np.array(vals).astype(src))


def _torch(x: np.ndarray, target: str):
    import torch

    t = torch.from_numpy(x.astype(np.float32) if x.dtype.kind == "V" else x)
    if x.dtype.kind == "V":
        t = t.to(torch.bfloat16)
    y = t.to(getattr(torch, target))
    if target == "uint64":
        return y.view(torch.int64).numpy().view(np.uint64)
    return y.to(torch.int64).numpy().astype(target)


def _numpy(x: np.ndarray, target: str):
    return np.trunc(x).astype(target)


def _onnxruntime():
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    codes = {n: getattr(TensorProto, n.upper()) for n in INTS + ["float16", "float", "double"]}
    sessions: dict = {}

    def run(x: np.ndarray, target: str):
        src = {"float16": "float16", "float32": "float", "float64": "double"}.get(x.dtype.name)
        if src is None:  # (bfloat16: not compared)
            return None
        key = (src, target)
        if key not in sessions:
            node = helper.make_node("Cast", ["x"], ["y"], to=codes[target])
            g = helper.make_graph(
                [node],
                "cast",
                [helper.make_tensor_value_info("x", codes[src], [None])],
                [helper.make_tensor_value_info("y", codes[target], [None])],
            )
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
            m.ir_version = 9
            sessions[key] = ort.InferenceSession(
                m.SerializeToString(), providers=["CPUExecutionProvider"]
            )
        return sessions[key].run(None, {"x": x})[0]

    return run


def main() -> int:
    import torch

    print("command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, torch {torch.__version__}, "
        f"numpy {np.__version__}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    libs = {"torch": _torch, "numpy": _numpy}
    ort_run = _onnxruntime()
    if ort_run is not None:
        libs["onnxruntime"] = ort_run
    differing = 0
    for fname in FLOATS:
        src = np.dtype(ml_dtypes.bfloat16 if fname == "bfloat16" else fname)
        vals = _specials(src)
        for target in INTS:
            for lib, fn in libs.items():
                sizes, bad = [], {}
                for n in SIZES:
                    for v in vals:
                        x = np.full(n, v, dtype=src)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            got = fn(x, target)
                        if got is None:
                            continue
                        want = float_to_int(x, np.dtype(target))
                        if not np.array_equal(got, want):
                            if n not in sizes:
                                sizes.append(n)
                            diff = int(np.argmax(got != want))
                            bad.setdefault(float(v), (int(got[diff]), int(want[diff])))
                if bad:
                    differing += 1
                    first = [(v, g, w) for v, (g, w) in list(bad.items())[:3]]
                    print(
                        f"{fname:>8} -> {target:<6} {lib:<11} differs at sizes {sizes}, "
                        f"{len(bad)}/{len(vals)} values: {first}"
                    )
    print(f"{differing} (source, target, library) combinations differ from the rule")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
