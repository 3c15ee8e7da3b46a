"""Float -> integer `cast` of NaN, infinities and out-of-range values: the interpreter (both
kernel sets), compiled code and the rule the op's doc states agree bit for bit, for every
float dtype and integer dtype, in arrays of 1, 7, 64 and 1000 elements (compiled loops are
vectorised and have scalar tails); the interpreter gives what torch eager gives on x86-64.

torch (like numpy and onnxruntime) gives the rule for uint32 only in its scalar loop: its
vectorised float32 / float64 / bfloat16 loop gives 2**31 for NaN and -inf (blocks of 4
elements, the last `n % 4` scalar). So uint32 is compared with torch on single elements; the
torch frontend has no uint32 to import, so the check never compares one with torch."""

from __future__ import annotations

import math
import platform
import warnings

import ml_dtypes
import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import Call, Function, Module, TensorType, Var, parse
from compiler.ir.types import DType

FLOATS = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)]
FLOATS += [np.dtype(np.float64)]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SIZES = (1, 7, 64, 1000)
X86 = platform.machine().lower() in ("x86_64", "amd64")


def rule(x: float, target: str) -> int:
    """The value `cast` gives float `x` as integer type `target`, as the op's doc states it."""
    info = np.iinfo(target)

    def through(bits: int) -> int:  # trunc(x) where it fits in `bits` signed, else INT_MIN
        lo = -(2 ** (bits - 1))
        if math.isnan(x) or math.isinf(x):
            return lo
        t = math.trunc(x)
        return t if lo <= t < -lo else lo

    if target == "uint64":
        if not math.isnan(x) and x >= 2.0**63:
            return math.trunc(x) if x < 2.0**64 else 0
        return through(64) % 2**64
    r = through(64 if target in ("int64", "uint8", "uint32") else 32) % 2**info.bits
    return r - 2**info.bits if r > info.max else r


def specials(src: np.dtype) -> np.ndarray:
    """NaN (a signalling one too), infinities, -1.0, -0.5, 1e30, and, for every integer
    range, its bounds and the first values of `src` beyond them (whose truncation is out of
    range); a few others."""
    vals = [math.nan, math.inf, -math.inf, -1.0, -0.5, 1e30, -1e30, 0.0, 0.7, -2.7, 300.0]
    # beyond int32 with low bits set: through int32 or int64 differ (as uint8, int16, uint16)
    vals += [2.0**31 + 257, -(2.0**31) - 257, 2.0**33 + 2**20 + 3, -(2.0**40) - 2**17 - 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (beyond float16's range: inf)
        for name in INTS:
            info = np.iinfo(name)
            for bound, step in ((info.max, 1), (info.min, -1)):
                beyond = np.array(float(bound + step)).astype(src)  # the first value out
                out = float(beyond) >= bound + 1 if step > 0 else float(beyond) <= bound - 1
                if not out:  # rounded back in (compared exactly: a float against an int)
                    beyond = np.nextafter(beyond, np.array(step * math.inf, src))
                vals += [float(np.array(float(bound)).astype(src)), float(beyond)]
        quiet = np.array(vals).astype(src)
    bits = {2: 0x7C01 if src == np.float16 else 0x7F81, 4: 0x7F800001, 8: 0x7FF0000000000001}
    signalling = np.array(bits[src.itemsize], f"u{src.itemsize}").view(src)  # a signalling NaN
    return np.append(quiet, signalling)


def expected(x: np.ndarray, target: str) -> np.ndarray:
    return np.array([rule(float(v), target) for v in x.astype(np.float64)], dtype=target)


def cast_module(src: np.dtype, target: str, n: int) -> Module:
    x = Var("x", TensorType((n,), DType.of(src)))
    return Module({"main": Function.from_output([x], Call("cast", [x], {"dtype": target}))})


def arrays(src: np.dtype, n: int):
    """Each special value filling an array of `n`, then all of them side by side."""
    vals = specials(src)
    for v in vals:
        yield np.full(n, v, dtype=src)
    yield np.resize(vals, n)


def test_the_rule_is_as_stated():
    assert [rule(v, "int32") for v in (math.nan, math.inf, -1e30, 2.0**31, -2.7)] == [
        -(2**31),
        -(2**31),
        -(2**31),
        -(2**31),
        -2,
    ]
    assert [rule(v, "int8") for v in (math.nan, 300.0, 128.0, -129.0, 5e9)] == [0, 44, -128, 127, 0]
    assert [rule(v, "uint8") for v in (-1.0, -0.5, 256.0, math.inf)] == [255, 0, 0, 0]
    assert [rule(v, t) for v in (-(2.0**31) - 1, 2.0**32 - 1) for t in ("uint8", "int8")] == [
        255,
        0,
        255,
        0,
    ]  # uint8 through int64, int8 through int32
    assert [rule(v, "uint32") for v in (math.nan, -1.0, 5e9, 1e30)] == [0, 2**32 - 1, 705032704, 0]
    assert [rule(v, "uint64") for v in (math.nan, -1.0, 2.0**63, 2.0**64, math.inf)] == [
        2**63,
        2**64 - 1,
        2**63,
        0,
        0,
    ]


@pytest.mark.parametrize("target", INTS)
@pytest.mark.parametrize("src", FLOATS, ids=str)
def test_interpreter_and_compiled_code_follow_the_rule(src, target):
    for n in SIZES:
        module = cast_module(src, target, n)
        compiled = passes.run(module, "legalize-ops", raise_on_failure=True).module
        for x in arrays(src, n):
            want = expected(x, target)
            with warnings.catch_warnings():
                # numpy warns when it casts NaN or a value out of range: none is left to it
                warnings.simplefilter("error", RuntimeWarning)
                results = [
                    (run(module, x, kernels="numpy")[0], "numpy kernels"),
                    (run(module, x, kernels="torch")[0], "torch kernels"),
                    (run(compiled, x)[0], "compiled code"),
                ]
            for got, by in results:
                assert got.dtype == want.dtype, by
                np.testing.assert_array_equal(got, want, err_msg=f"{by}, {src} -> {target}, {n}")


@pytest.mark.skipif(not X86, reason="torch gives the rule on x86-64")
@pytest.mark.parametrize("target", INTS)
@pytest.mark.parametrize("src", FLOATS, ids=str)
def test_the_interpreter_gives_what_torch_eager_gives(src, target):
    import torch

    for n in SIZES if target != "uint32" else (1,):  # (uint32: see the module's doc)
        module = cast_module(src, target, n)
        for x in arrays(src, n):
            t = torch.from_numpy(x.astype(np.float32) if x.dtype.kind == "V" else x)
            if x.dtype.kind == "V":
                t = t.to(torch.bfloat16)  # exact
            eager = t.to(getattr(torch, target))
            if target == "uint64":  # (no uint64 numpy() in torch: its bits)
                eager_np = eager.view(torch.int64).numpy().view(np.uint64)
            else:
                eager_np = eager.to(torch.int64).numpy().astype(target)
            got = run(module, x)[0]
            np.testing.assert_array_equal(got, eager_np, err_msg=f"{src} -> {target}, {n}")


CHAIN = """
def @main(%x: f32[16], %w: f32[16]) -> f32[16] {
  %a: f32[16] = add(%x, %w)
  %i: i32[16] = cast(%a, dtype=i32)
  %r: f32[16] = cast(%i, dtype=f32)
  return %r
}
"""


def test_a_nan_weight_through_an_int_cast_gives_the_same_interpreted_and_compiled():
    """The randomized preserve-results run that found it: `add(%p, $w=nan)`, cast to i32 and
    back gave -2147483648 interpreted and 0 compiled."""
    module = parse(CHAIN)
    compiled = passes.run(module, "legalize-ops", raise_on_failure=True).module
    x = np.arange(16, dtype=np.float32)
    w = np.full(16, np.nan, np.float32)
    w[:4] = [0.5, 1e30, -np.inf, 3e9]
    want = run(module, x, w)[0]
    assert want[4:].tolist() == [-(2.0**31)] * 12 and want[:2].tolist() == [0.0, -(2.0**31)]
    np.testing.assert_array_equal(run(compiled, x, w)[0], want)
