"""The loop IR (printer, sharing), code generation semantics where they differ from numpy or
matter (integer division, casts, bfloat16 rounding, the fast f32 math functions), LLVM IR
and assembly text, and kernel argument checks."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import special

from compiler import passes
from compiler.backend import (
    KernelNotFound,
    assembly_text,
    llvm_text,
    lowered_text,
    module_kernels,
)
from compiler.backend import loops as L
from compiler.backend.runtime import KernelRunError
from compiler.interpret import run
from compiler.ir import Call, Function, Module, TensorType, Var, parse
from compiler.ir.types import DType


def lowered(op: str, *arrays: np.ndarray, **attrs) -> np.ndarray:
    """``op`` applied to ``arrays`` by its compiled kernel."""
    params = [Var(f"x{i}", TensorType(a.shape, DType.of(a.dtype))) for i, a in enumerate(arrays)]
    module = Module({"main": Function.from_output(params, Call(op, params, attrs))})
    module = passes.run(module, "legalize-ops", raise_on_failure=True).module
    return run(module, *arrays)[0]


FUSED = """
def @main(%x: f32[4, 8], %b: f32[8]) -> f32[4, 8] {
  %a: f32[4, 8] = add(%x, %b)
  %r: f32[4, 8] = relu(%a)
  return %r
}
"""

GOLDEN = """\
# called 1x: @main %r
# lowered from fused add, relu
kernel @fused_add_relu_{hash}(%lhs: f32[4, 8], %rhs: f32[8], out %out: f32[4, 8]) {{
  stage add, relu {{
    parallel for i0 in 0..4 {{
      parallel for i1 in 0..8 {{
        %out[i0, i1] = max(%lhs[i0, i1] + %rhs[i1], 0.0f)
      }}
    }}
  }}
}}
"""


def test_a_fused_kernel_prints_as_one_loop_nest():
    module = passes.run(parse(FUSED), "fuse-ops,legalize-ops", raise_on_failure=True).module
    (name,) = {b.attrs["kernel"] for b in module.main.bindings}
    assert lowered_text(module) == GOLDEN.format(hash=name.rsplit("_", 1)[1])
    assert module.attrs["backend"] == "loops"


def test_a_shared_subexpression_is_printed_once_as_a_let():
    x = Var("x", TensorType((16,), "float32"))
    module = Module({"main": Function.from_output([x], Call("silu", [Call("exp", [x])]))})
    module = passes.run(module, "fuse-ops,legalize-ops", raise_on_failure=True).module
    text = lowered_text(module)
    assert "let t0 = exp(%x[i0])" in text
    assert "%out[i0] = t0 * (1.0f / (1.0f + exp(-t0)))" in text


def test_equal_kernels_have_one_name_and_different_ones_differ():
    a = L.Buffer("a", (4,), DType.float32)
    out = L.Buffer("out", (4,), DType.float32, "out")
    i = L.Var("i0")

    def kernel(scale: float) -> L.Kernel:
        body = L.For(i, 4, L.Store(out, (i,), a[i] * L.Const(scale, DType.float32)), parallel=True)
        return L.Kernel("scale", (a, out), (), (), (L.Stage("multiply", body),))

    assert kernel(2.0).name == kernel(2.0).name
    assert kernel(2.0).name != kernel(3.0).name


def test_llvm_ir_and_assembly_of_a_compiled_module():
    module = passes.run(parse(FUSED), "fuse-ops,legalize-ops,codegen", raise_on_failure=True).module
    assert module.attrs["backend"].startswith("llvm O3 ")
    ir_text = llvm_text(module)
    assert re.search(r"define void @\"?fused_add_relu_\w+__s0\"?\(ptr", ir_text)
    assert "<8 x float>" in ir_text or "<4 x float>" in ir_text  # vectorised
    asm = assembly_text(module)
    assert re.search(r"^fused_add_relu_\w+__s0:", asm, re.M) and "\tretq" in asm


def test_integer_division_by_zero_gives_zero_and_min_by_minus_one_wraps():
    a = np.array([7, -7, 7, -7, 5, -(2**31)], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1], np.int32)
    assert lowered("divide", a, b).tolist() == [3, -3, -3, 3, 0, -(2**31)]
    assert lowered("floor_divide", a, b).tolist() == [3, -4, -4, 3, 0, -(2**31)]
    assert lowered("mod", a, b).tolist() == [1, 1, -1, -1, 0, 0]


def test_float_to_int_casts_truncate_and_give_int_min_out_of_range_like_x86():
    # the cast op's rule (tests/compiler/ops/test_float_to_int_casts.py: every dtype pair)
    x = np.array([2.7, -2.7, 1e10, -1e10, np.nan, 300.0], np.float32)
    assert lowered("cast", x, dtype="int32").tolist() == [2, -2] + [-(2**31)] * 3 + [300]
    assert lowered("cast", x, dtype="int8").tolist() == [2, -2, 0, 0, 0, 44]
    assert lowered("cast", x[:2], dtype="uint8").tolist() == [2, 254]


def test_bfloat16_rounds_to_nearest_even_like_ml_dtypes():
    import ml_dtypes

    bits = np.array([0x3F808000, 0x3F818000, 0x3F80C000, 0x7FC00001, 0x7F800000], np.uint32)
    x = bits.view(np.float32)
    got = lowered("cast", x, dtype="bfloat16")
    want = x.astype(ml_dtypes.bfloat16)
    assert got.view(np.uint16)[:4].tolist()[:3] == want.view(np.uint16)[:3].tolist()
    assert np.isnan(got[3].astype(np.float32)) and got[4].astype(np.float32) == np.inf


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "erf", "sigmoid", "gelu"])
def test_fast_f32_math_is_accurate_over_the_whole_range(op):
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            np.linspace(-12, 12, 4001),
            rng.standard_normal(2000) * 30,
            [0.0, -0.0, 1e-30, -1e-30, 88.7, 88.8, -87.5, -104.0, 1e-40, np.inf, -np.inf, np.nan],
        ]
    ).astype(np.float32)
    if op == "log":
        x = np.abs(x)
    reference = {
        "exp": np.exp,
        "log": np.log,
        "tanh": np.tanh,
        "erf": special.erf,
        "sigmoid": special.expit,
        "gelu": lambda v: 0.5 * v * (1 + special.erf(v / np.sqrt(2))),
    }[op]
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(np.float32).astype(np.float64)
    got = lowered(op, x).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    # absolute: exp's subnormal results; gelu's 1 + erf(x) cancels for x < -4 as in torch's
    # float kernel
    atol = {"exp": 1e-44, "gelu": 1e-6}.get(op, 1e-7)
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-6, atol=atol)


def test_a_kernel_checks_its_arguments():
    module = passes.run(parse(FUSED), "fuse-ops,legalize-ops", raise_on_failure=True).module
    (name,) = {b.attrs["kernel"] for b in module.main.bindings}
    kernel = module_kernels(module).compiled(name).runnable
    x, b = np.zeros((4, 8), np.float32), np.zeros(8, np.float32)
    assert kernel.run([x, b]).shape == (4, 8)
    with pytest.raises(KernelRunError, match=r"input %lhs must have shape \[4, 8\], got \(5, 8\)"):
        kernel.run([np.zeros((5, 8), np.float32), b])
    with pytest.raises(KernelRunError, match="must be float32, got float64"):
        kernel.run([x.astype(np.float64), b])
    with pytest.raises(KernelRunError, match="takes 2 inputs"):
        kernel.run([x])


def test_a_missing_kernel_says_how_to_get_it_back():
    module = passes.run(parse(FUSED), "fuse-ops,legalize-ops", raise_on_failure=True).module
    with pytest.raises(KernelNotFound, match="run legalize-ops"):
        module_kernels(module)["no_such_kernel_00000000"]
    # the module's text names its kernels but cannot hold them: parsed again, it has none
    parsed = parse(str(module))
    with pytest.raises(KernelNotFound, match="run legalize-ops"):
        lowered_text(parsed)
