"""Every op the backend lowers, on every OpCase of tests/compiler/ops: legalize-ops makes a
kernel, the JIT compiles it, and its result matches the numpy interpreter's."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

from compiler import passes
from compiler.backend import KernelSet, supported_ops
from compiler.backend.lowering import lower_group
from compiler.interpret import run
from compiler.ir import Call, Function, Module
from tests.compiler.ops.opcase import build_call

# lowered through a graph-level expansion (topk: its indices kernel, then gather_elements)
EXPANDED = {"split", "scaled_dot_product_attention", "topk"}


def _cases():
    pkg = importlib.import_module("tests.compiler.ops")
    cases = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("cases_"):
            cases += importlib.import_module(f"tests.compiler.ops.{info.name}").CASES
    return cases


ALL_CASES = _cases()
CASES = [c for c in ALL_CASES if c.op in supported_ops() | EXPANDED]

# dtype -> (rtol, atol): kernels compute f32 in f32 where the reference uses f64
TOLERANCE = {
    np.dtype(np.float64): (1e-9, 1e-12),
    np.dtype(np.float32): (2e-5, 2e-6),
    np.dtype(np.float16): (2e-3, 2e-3),
}


def _flat(value):
    return [x for v in value for x in _flat(v)] if isinstance(value, tuple) else [value]


def assert_close(got, want, label):
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{label}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"
    )
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=label)
        return
    rtol, atol = TOLERANCE.get(got.dtype, (1e-2, 1e-2))  # bfloat16
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, err_msg=label
    )


@pytest.mark.parametrize("case", CASES, ids=[c.label() for c in CASES])
def test_lowered_op_matches_interpreter(case):
    node, params, values = build_call(case)
    module = Module({"main": Function.from_output(params, node)})
    want = _flat(run(module, *values))
    if node.args:
        lowered = passes.run(module, "legalize-ops", raise_on_failure=True).module
        ops = {b.op for b in lowered.main.iter_nodes() if isinstance(b, Call)}
        assert ops <= {"call_lowered", "reshape", "flatten", "squeeze", "unsqueeze"}, ops
        got = _flat(run(lowered, *values))
    else:  # a fill without inputs stays a host op in the graph; check its kernel directly
        kernel, args = lower_group(node.op, [node], node)
        assert args == []
        got = [KernelSet([kernel]).compiled(kernel.name).runnable.run([])]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=False):
        assert_close(g, w, case.label())


# Ops the host runs in a compiled module instead of a kernel (legalize_ops.RUNTIME_OPS):
# nonzero, whose result length only the data gives, and match_shape, which names that length
# (tests/compiler/backend/test_data_dependent.py compiles and runs them).
DATA_DEPENDENT = {"nonzero", "bincount", "match_shape"}


# Ops whose results are of a low-precision type (float8, int4, ...): the backend has no values
# of those types; they run in the interpreter only and legalize-ops says so, naming the type.
STORAGE_ONLY = {"to_float8e8m0"}


def test_lowering_covers_the_op_set():
    """Every op with an OpCase lowers, but those the host runs (a data-dependent result size)
    or with a low-precision result type."""
    from compiler.passes.legalize_ops import RUNTIME_OPS

    # and opaque ops, run by their framework (tests/compiler/opaque/test_opaque.py)
    assert set(RUNTIME_OPS) == DATA_DEPENDENT | {"opaque"}
    ops = {c.op for c in ALL_CASES}
    missing = sorted(ops - supported_ops() - EXPANDED - DATA_DEPENDENT - STORAGE_ONLY)
    assert missing == []


def test_a_low_precision_op_is_refused_naming_its_type():
    from compiler.backend.lowering import LoweringError

    case = next(c for c in ALL_CASES if c.op in STORAGE_ONLY)
    node, _, _ = build_call(case)
    with pytest.raises(LoweringError, match=r"does not compile float8e8m0 \(f8e8m0\)"):
        lower_group(node.op, [node], node)


def test_a_size_a_kernel_would_compute_is_left_to_the_interpreter_with_the_reason():
    """A pad by pads known only at run time: its result's size is a '?' the kernel itself
    would have to compute (nonzero's are named by match_shape: tests/compiler/backend/
    test_data_dependent.py)."""
    from compiler.backend import build
    from compiler.ir import parse
    from compiler.passes import PassFailed

    module = parse(
        """
def @main(%x: f32[4], %p: i64[2]) -> f32[?] {
  %y: f32[?] = pad(%x, %p)
  return %y
}
"""
    )
    with pytest.raises(PassFailed, match="pad was not lowered by legalize-ops: .*'\\?' dim"):
        build(module, pipeline="legalize-ops,codegen")
