"""Every registered op: inferred types match computed values, and values match torch."""

import importlib
import pkgutil

import pytest

import compiler.ops
from compiler.ops import all_ops
from tests.compiler.ops import opcase


def _all_cases():
    cases = []
    pkg = importlib.import_module("tests.compiler.ops")
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("cases_"):
            cases.extend(importlib.import_module(f"tests.compiler.ops.{info.name}").CASES)
    return cases


CASES = _all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label() for c in CASES])
def test_op_case(case):
    opcase.check_case(case)


def test_every_op_has_a_case():
    covered = {c.op for c in CASES}
    from compiler.ops.lazy_params import SIDE_EFFECT_OPS  # tested in test_lazy_params.py

    # call_lowered runs a compiled kernel: tested in tests/compiler/backend/ against the ops
    # it was lowered from
    backend_ops = {"call_lowered"}
    # opaque runs torch / onnxruntime ops by name: tested in tests/compiler/opaque/test_opaque.py
    framework_ops = {"opaque"}
    missing = sorted(set(all_ops()) - covered - set(SIDE_EFFECT_OPS) - backend_ops - framework_ops)
    assert not missing, f"ops without an OpCase: {missing}"


def test_every_op_is_documented():
    assert compiler.ops  # imported for registration
    undocumented = sorted(name for name, op in all_ops().items() if not op.doc)
    assert not undocumented


KERNELS = ["torch", "numpy"]  # both of the interpreter's kernel sets (compiler/torch_kernels.py)


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])  # LINEAR_ROUNDS_AS_DECOMPOSED
@pytest.mark.parametrize("x_shape", [(5, 16), (2, 7, 16), (1, 3, 3, 16)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_rounds_exactly_like_its_decomposition(kernels, dtype, x_shape, bias):
    """The check relies on it (explorer/passlens/memo.py computes linear as its decomposition)."""
    import numpy as np

    from compiler.interpret import run
    from compiler.ir import Function, TensorType, Var, call
    from compiler.passes.decompose_ops import DECOMPOSITIONS

    rng = np.random.default_rng(0)
    x = Var("x", TensorType(x_shape, dtype))
    w = Var("w", TensorType((24, 16), dtype))
    args = [x, w]
    values = [
        rng.standard_normal(x_shape).astype(dtype),
        rng.standard_normal((24, 16)).astype(dtype),
    ]
    if bias:
        args.append(Var("b", TensorType((24,), dtype)))
        values.append(rng.standard_normal(24).astype(dtype))
    node = call("linear", *args)
    whole = run(Function.from_output(args, node), *values, kernels=kernels)[0]
    parts = run(
        Function.from_output(args, DECOMPOSITIONS["linear"](node)), *values, kernels=kernels
    )[0]
    assert whole.dtype == parts.dtype
    assert whole.tobytes() == parts.tobytes()


@pytest.mark.filterwarnings("ignore:invalid value")  # the decomposition's NaN rows
@pytest.mark.parametrize("dtype", ["float32", "float64"])  # SDPA_ROUNDS_AS_DECOMPOSED
@pytest.mark.parametrize("mask", [None, "bool", "float"])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("kernels", KERNELS)
def test_attention_rounds_exactly_like_its_decomposition(dtype, mask, causal, kernels):
    """The check relies on it (explorer/passlens/memo.py computes attention as its decomposition
    and keeps the value when it has no NaN): equal bit for bit, but where a query row has no
    key left (the op: zeros, the decomposition: NaN). kv heads broadcast here, so torch's set
    computes op by op too (where torch's fused kernel means the op, torch's set runs it and the
    memo takes its value when it agrees to rounding: test_torch_kernels.py, test_check_memo.py)."""
    import numpy as np

    from compiler.interpret import run
    from compiler.ir import Function, TensorType, Var, call
    from compiler.passes.decompose_ops import DECOMPOSITIONS

    rng = np.random.default_rng(0)
    shapes = {"q": (1, 4, 6, 8), "k": (1, 1, 7, 8), "v": (1, 1, 7, 5)}  # kv heads broadcast
    args = [Var(n, TensorType(s, dtype)) for n, s in shapes.items()]
    values = [rng.standard_normal(s).astype(dtype) for s in shapes.values()]
    if mask is not None:
        keep = rng.random((6, 7)) < 0.7
        keep[2] = False  # query 2 has no key left
        args.append(Var("m", TensorType((6, 7), "bool" if mask == "bool" else dtype)))
        values.append(keep if mask == "bool" else np.where(keep, 0.0, -np.inf).astype(dtype))
    node = call("scaled_dot_product_attention", *args, is_causal=causal)
    whole = run(Function.from_output(args, node), *values, kernels=kernels)[0]
    parts = run(
        Function.from_output(args, DECOMPOSITIONS["scaled_dot_product_attention"](node)),
        *values,
        kernels=kernels,
    )[0]
    assert whole.dtype == parts.dtype and whole.shape == parts.shape == (1, 4, 6, 5)
    nan = np.isnan(parts)
    assert nan.any() == (mask is not None)
    assert not np.isnan(whole).any() and np.all(whole[nan] == 0)
    assert whole[~nan].tobytes() == parts[~nan].tobytes()
