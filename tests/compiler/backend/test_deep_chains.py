"""Model size is never limited by Python's recursion (issue #14): long fused chains, values
read twice in a chain and deep expressions lower, print and compile, with correct results."""

from __future__ import annotations

import numpy as np

from compiler.backend import build, kernel_calls, module_kernels
from compiler.backend.lowering import MAX_LAZY_CHAIN
from compiler.interpret import run
from compiler.ir import parse


def _chain(n: int, shape: str, step) -> str:
    lines = [f"def @main(%x: f32{shape}) -> f32{shape} {{"]
    prev = "x"
    for i in range(n):
        lines.append(f"  %v{i}: f32{shape} = {step(i, prev)}")
        prev = f"v{i}"
    return "\n".join([*lines, f"  return %{prev}", "}"])


def _kernel(exe):
    """The one kernel of a build (the whole chain fused into one group)."""
    legalized = next(s.module for s in exe.result.snapshots if s.pass_name == "legalize-ops")
    (name,) = kernel_calls(legalized)
    return module_kernels(legalized)[name]


def test_a_fused_chain_of_2000_elementwise_ops_compiles_and_matches():
    def step(i, prev):
        if i % 50 == 0:
            return f"tanh(%{prev})"
        if i % 2:
            return f"add(%{prev}, %x)"
        return f"multiply(%{prev}, const(f32[], 0.5))"

    module = parse(_chain(2000, "[3, 4]", step))
    exe = build(module)  # once: RecursionError in legalize-ops beyond ~300 ops
    kernel = _kernel(exe)
    # the chain is cut into stages of at most MAX_LAZY_CHAIN ops, through workspaces
    assert len(kernel.body) >= 2000 // MAX_LAZY_CHAIN and kernel.workspaces
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(exe(x)[0], run(module, x)[0], rtol=1e-5, atol=1e-5)


def test_an_op_reading_a_value_twice_does_not_build_it_twice():
    # add(v, v) 60 times over: building each read anew would take 2**60 steps
    module = parse(_chain(60, "[1, 4]", lambda i, prev: f"add(%{prev}, %{prev})"))
    exe = build(module)
    assert "let " in _kernel(exe).text  # each doubled value is computed once
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    np.testing.assert_array_equal(exe(x)[0], x * np.float32(2.0**60))


def test_an_expression_1200_deep_prints_and_compiles():
    # a concat reads its inputs through a chain of selects, one per input
    args = ", ".join(["%x"] * 1200)
    module = parse(
        f"def @main(%x: f32[2]) -> f32[2400] {{\n"
        f"  %c: f32[2400] = concat({args}, axis=0)\n  return %c\n}}"
    )
    exe = build(module, pipeline="legalize-ops,codegen")
    assert _kernel(exe).text.count("select(") == 1199
    x = np.array([1.5, -2.0], dtype=np.float32)
    np.testing.assert_array_equal(exe(x)[0], np.tile(x, 1200))
