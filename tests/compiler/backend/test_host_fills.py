"""A scalar constant broadcast to a symbolic size reads no buffer, so no kernel can make it:
the host computes it, as it computes a fill (found on a mixture-of-experts decoder, where
fold-constant leaves ``broadcast_to(1.0, [2*batch*seq])`` as the routing's scatter source)."""

from __future__ import annotations

import numpy as np

import compiler
from compiler import passes
from compiler.ir import parse

IR = """def @main(%x: f32[n]) -> f32[2*n] {
  %y: f32[2*n] = concat(%x, %x, axis=0)
  %b: f32[2*n] = broadcast_to(const(f32[], 1.5), shape=[2*n])
  %z: f32[2*n] = add(%y, %b)
  return %z
}"""


def test_a_broadcast_scalar_of_a_symbolic_size_is_computed_by_the_host_and_compiles():
    from compiler.passes.legalize_ops import is_host_call

    result = passes.run(parse(IR), "legalize-ops,codegen")
    main = result.module["main"]
    (b,) = [n for n in main.bindings if n.name == "b"]
    assert b.op == "broadcast_to" and is_host_call(b)  # no kernel: it reads no buffer
    kernels = [n.attrs["kernel"] for n in main.bindings if n.op == "call_lowered"]
    assert len(kernels) == 2 and not any("broadcast" in k for k in kernels)
    (got,) = compiler.build(result.module)(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(got, [1.5, 2.5, 3.5, 1.5, 2.5, 3.5])
