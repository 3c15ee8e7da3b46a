"""The interpreter's two kernel sets (``kernels="torch"`` and ``"numpy"``) agree on every op
case within the rounding of the result's dtype, and each op with a torch kernel runs it (but
where the kernel leaves a case to numpy, listed here with why); arrays reach torch without a
copy; ``import compiler`` neither needs nor imports torch. (That linear rounds as its
decomposition with either set, and attention computed op by op too: test_all_ops.py; where
torch's fused attention means the op, torch's set runs it, as eager does: below.)"""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from compiler import torch_kernels
from compiler.interpret import InterpretError, evaluate, run
from compiler.ir import Function, Module, TensorType, Var, call
from tests.compiler.ops.opcase import OpCase, build_call
from tests.compiler.ops.test_all_ops import CASES

# Cases of ops with a torch kernel that numpy computes, and why (compiler/torch_kernels.py).
LEFT_TO_NUMPY = {
    "clip-i32": "integer bounds rounded inward",
    "cast-f32-i32-trunc": "float to int (NaN, out of range)",
    "cast-f64-i64-trunc": "float to int",
    "cast-f32-u8": "float to int",
    "cast-f32-bool": "float to bool",
    "cast-i32-bool": "to bool",
    "maximum-bool": "bool arithmetic",
    "divide-i32-trunc": "integer division",
    "divide-i64-broadcast": "integer division",
    "divide-i8": "integer division",
    "divide-u8": "integer division",
    "power-i32": "integer power",
    "power-i64": "integer power",
    "matmul-i32": "integer matmul",
    "matmul-transpose-b-i32": "integer matmul",
    "max_pool2d-asymmetric-pad": "torch pads both ends alike",
    "avg_pool2d-asymmetric-pad": "torch pads both ends alike",
    "avg_pool2d-asymmetric-exclude-pad": "torch pads both ends alike",
    "sdpa-f16": "half precision attention: float64, rounded once",
    "variance-one-sample-nan": "N <= correction",
    "std-one-sample-nan": "N <= correction",
    **{
        f"{op}-scalar{axis}": "rank 0: the input itself"
        for op in ("sum", "mean", "max", "min")
        for axis in ("", "-axis0")
    },
}
NEAREST_OR_CUBIC = "resize: nearest and cubic, asymmetric and half_pixel_symmetric linear"

EPS = {
    np.dtype(np.float32): float(np.finfo(np.float32).eps),
    np.dtype(np.float64): float(np.finfo(np.float64).eps),
}
ULPS = 16
"""How far two float32 (float64) kernels may be apart, in units of the dtype's epsilon times
the result's magnitude: a float32 sum of n terms in another order moves by about sqrt(n)
epsilons of its terms' size."""


def _flatten(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def assert_same_within_rounding(got: np.ndarray, want: np.ndarray, label: str) -> None:
    """``got`` (torch's kernels) against ``want`` (numpy's): the same shape and dtype;
    integers and bools equal; NaN and infinities where the other has them; float32 / float64
    within ``ULPS`` epsilons of the result's magnitude; float16 / bfloat16 (computed in
    float64 and rounded once by both) within one unit in the last place."""
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{label}: {got.dtype}{list(got.shape)}, numpy {want.dtype}{list(want.shape)}"
    )
    if got.dtype.kind not in "fV":
        np.testing.assert_array_equal(got, want, err_msg=label)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{label}: NaN")
    finite = np.isfinite(w)
    np.testing.assert_array_equal(np.isfinite(g), finite, err_msg=f"{label}: infinities")
    inf = np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{label}: infinities")
    if not finite.any():
        return
    g, w = g[finite], w[finite]
    if got.dtype in EPS:
        allowed = ULPS * EPS[got.dtype] * (np.abs(w) + np.abs(w).max())
    else:  # half precision: one ulp
        info = ml_dtypes.finfo(got.dtype)
        allowed = float(info.eps) * np.maximum(np.abs(w), np.abs(g)) + float(
            info.smallest_subnormal
        )
    worst = np.max(np.abs(g - w) - allowed)
    assert worst <= 0, f"{label}: torch and numpy differ beyond rounding ({np.max(np.abs(g - w))})"


def _both(case: OpCase):
    node, params, values = build_call(case)
    module = Module({"main": Function.from_output(params, node)})
    try:
        want = evaluate(module, values, kernels="numpy")
    except InterpretError as e:
        with pytest.raises(InterpretError) as raised:
            evaluate(module, values, kernels="torch")
        assert type(raised.value.__cause__) is type(e.__cause__)
        return None, None
    return want, evaluate(module, values, kernels="torch")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's overflow / invalid in cases
@pytest.mark.parametrize("case", CASES, ids=[c.label() for c in CASES])
def test_torch_kernels_agree_with_numpy(case):
    want, got = _both(case)
    if want is None:
        return  # both refused the case alike
    assert got.kernels == "torch" and want.kernels == "numpy"
    assert set(want.by_kernel) <= {"numpy"}  # (match_shape is no kernel's)
    ran_torch = "torch" in got.by_kernel
    if case.op in torch_kernels.OPS:
        expected = case.label() not in LEFT_TO_NUMPY and not (
            case.op == "resize" and not _linear_resize(case)
        )
        assert ran_torch == expected, f"{case.label()}: torch kernel ran: {ran_torch}"
    else:
        assert not ran_torch
    outs = _flatten(got.outputs)
    assert len(outs) == len(_flatten(want.outputs))
    for g, w in zip(outs, _flatten(want.outputs), strict=True):
        assert_same_within_rounding(g, w, case.label())


def _linear_resize(case: OpCase) -> bool:
    return case.attrs.get("mode") == "linear" and case.attrs.get(
        "coordinate_transformation_mode", "half_pixel"
    ) in ("half_pixel", "pytorch_half_pixel", "align_corners")


def test_every_listed_fallback_is_a_case():
    labels = {c.label() for c in CASES}
    assert set(LEFT_TO_NUMPY) <= labels


# ----- edge cases the op tables do not hold ---------------------------------------------------

_rng = np.random.default_rng(1)
BF16 = np.dtype(ml_dtypes.bfloat16)


def _r(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


EDGE = [
    # empty tensors
    OpCase("add", [_r(0, 3), _r(1, 3)], id="add-empty"),
    OpCase("exp", [_r(2, 0)], id="exp-empty"),
    OpCase("matmul", [_r(0, 4), _r(4, 5)], id="matmul-empty-rows"),
    OpCase("softmax", [_r(0, 5)], id="softmax-empty"),
    OpCase("layer_norm", [_r(0, 6), _r(6), _r(6)], id="layer_norm-empty"),
    OpCase("sum", [_r(3, 0)], {"axes": [1]}, id="sum-empty"),
    OpCase("mean", [_r(3, 0)], {"axes": [1]}, id="mean-empty-nan"),
    OpCase("conv2d", [_r(0, 2, 5, 5), _r(3, 2, 3, 3)], id="conv2d-empty-batch"),
    # 0-d
    OpCase("multiply", [_r(), _r()], id="multiply-0d"),
    OpCase("tanh", [_r()], id="tanh-0d"),
    OpCase("power", [_r(4).__abs__(), np.asarray(0.5, np.float32)], id="power-sqrt"),
    OpCase("power", [_r(4), np.asarray(3.0, np.float32)], id="power-cube"),
    # integers wrap alike
    OpCase("add", [np.array([127, -128, 5], np.int8), np.array([1, -1, 7], np.int8)], id="add-i8"),
    OpCase(
        "multiply",
        [np.array([2**31 - 1, -(2**31)], np.int32), np.array([2, -1], np.int32)],
        id="multiply-i32-wrap",
    ),
    OpCase("sum", [np.array([100, 100, 100], np.int8)], {"axes": [0]}, id="sum-i8-wrap"),
    OpCase("neg", [np.array([-(2**63), 1], np.int64)], id="neg-i64-min"),
    OpCase(
        "cast", [np.array([300, -1, 2**31 - 1], np.int32)], {"dtype": "uint8"}, id="cast-i32-u8"
    ),
    OpCase("cast", [np.array([2**24 + 1, -7], np.int64)], {"dtype": "float32"}, id="cast-i64-f32"),
    # NaN and infinities
    OpCase(
        "maximum",
        [np.array([np.nan, 1, -np.inf], np.float32), np.array([0, np.nan, 2], np.float32)],
        id="maximum-nan",
    ),
    OpCase("relu", [np.array([np.nan, -1, np.inf], np.float32)], id="relu-nan"),
    OpCase("softmax", [np.array([[0, -np.inf, 1], [-np.inf] * 3], np.float32)], id="softmax-inf"),
    OpCase("max", [np.array([[1, np.nan], [2, 3]], np.float32)], {"axes": [1]}, id="max-nan"),
    # half precision
    OpCase("add", [_r(3, 4, dtype=BF16), _r(3, 4, dtype=BF16)], id="add-bf16"),
    OpCase("exp", [_r(3, 4, dtype=BF16)], id="exp-bf16"),
    OpCase("matmul", [_r(3, 8, dtype=BF16), _r(8, 2, dtype=BF16)], id="matmul-bf16"),
    OpCase("layer_norm", [_r(2, 8, dtype=BF16)], id="layer_norm-bf16"),
    OpCase("cast", [_r(5)], {"dtype": "bfloat16"}, id="cast-f32-bf16"),
    OpCase("cast", [_r(5, dtype=BF16)], {"dtype": "float32"}, id="cast-bf16-f32"),
    OpCase("mean", [_r(4, 9, dtype=np.float16)], {"axes": [1]}, id="mean-f16"),
    OpCase("softmax", [_r(4, 9, dtype=np.float16)], id="softmax-f16"),
    OpCase(
        "conv2d",
        [_r(1, 2, 5, 5, dtype=np.float16), _r(3, 2, 3, 3, dtype=np.float16)],
        id="conv2d-f16",
    ),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case", EDGE, ids=[c.label() for c in EDGE])
def test_edge_cases_agree(case):
    want, got = _both(case)
    assert want is not None
    assert "torch" in got.by_kernel, f"{case.label()}: {got.by_kernel}"
    for g, w in zip(_flatten(got.outputs), _flatten(want.outputs), strict=True):
        assert_same_within_rounding(g, w, case.label())


def test_strided_inputs():
    """Transposed, broadcast and sliced views reach torch as they are; a reversed one (negative
    strides, which torch has none of) is computed by numpy, not copied."""
    a = _r(6, 8)
    x = Var("x", TensorType((8, 6), "float32"))
    fn = Function.from_output([x], call("exp", x))
    for view in (a.T, np.broadcast_to(_r(1, 6), (8, 6)), _r(8, 12)[:, ::2]):
        got = evaluate(fn, [view], kernels="torch")
        assert got.by_kernel == {"torch": {"exp": 1}}
        assert_same_within_rounding(got.outputs[0], run(fn, view, kernels="numpy")[0], "view")
    flipped = a.T[::-1]
    got = evaluate(fn, [flipped], kernels="torch")
    assert got.by_kernel == {"numpy": {"exp": 1}}
    np.testing.assert_array_equal(got.outputs[0], run(fn, flipped, kernels="numpy")[0])


def test_arrays_reach_torch_without_a_copy():
    torch_kernels.warm_up()
    w = _r(16, 8)
    w.flags.writeable = False  # as a Constant's data
    for a in (w, w.T, w[::2], w.astype(BF16)):
        t = torch_kernels.tensor(a)
        back = torch_kernels.array(t)
        assert np.shares_memory(back, a) and back.dtype == a.dtype and back.shape == a.shape
    with pytest.raises(torch_kernels.Unsupported):
        torch_kernels.tensor(w[::-1])


def test_kernels_is_checked(monkeypatch):
    fn = Function.from_output([x := Var("x", TensorType((2,), "float32"))], call("exp", x))
    with pytest.raises(InterpretError, match="kernels must be 'torch' or 'numpy'"):
        run(fn, _r(2), kernels="cuda")
    import compiler.interpret as interpret

    monkeypatch.setattr(interpret, "default_kernels", lambda: "numpy")
    with pytest.raises(InterpretError, match="needs torch"):
        run(fn, _r(2), kernels="torch")
    assert evaluate(fn, [_r(2)]).by_kernel == {"numpy": {"exp": 1}}


def test_compiler_neither_needs_nor_imports_torch():
    """Without torch the interpreter runs on numpy; with it, torch loads at the first kernel."""
    script = """
import sys
block = sys.argv[1] == "block"
if block:
    sys.modules["torch"] = None  # torch cannot be imported
import numpy as np
import compiler
from compiler.interpret import default_kernels, evaluate
from compiler.ir import Function, TensorType, Var, call
assert "torch" not in sys.modules or block
x = Var("x", TensorType((2,), "float32"))
ev = evaluate(Function.from_output([x], call("exp", x)), [np.ones(2, np.float32)])
print(default_kernels(), sorted(ev.by_kernel), sys.modules.get("torch") is not None)
"""
    for mode, want in (("block", "numpy ['numpy'] False"), ("allow", "torch ['torch'] True")):
        done = subprocess.run(
            [sys.executable, "-c", script, mode], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == want


def test_warm_up_kernels_loads_torch_apart_and_once():
    """``compiler.warm_up_kernels`` imports torch and runs its kernels once, so the first op
    of a run does not wait for it; numpy's set needs nothing; a wrong name is refused."""
    script = """
import sys
import compiler
assert "torch" not in sys.modules
print(compiler.warm_up_kernels("numpy"), "torch" in sys.modules)
print(compiler.warm_up_kernels(), "torch" in sys.modules)
print(compiler.warm_up_kernels("torch"))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["numpy", "False", "torch", "True", "torch"]
    from compiler import warm_up_kernels

    with pytest.raises(InterpretError, match="kernels must be 'torch' or 'numpy'"):
        warm_up_kernels("cuda")


@pytest.mark.parametrize("mask", [None, "bool", "float"])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_attention_is_torchs_fused_kernel_where_it_means_the_op(mask, causal, dtype):
    """torch's set computes attention as eager does, by F.scaled_dot_product_attention (an
    imported model's attention has eager's bits); within rounding of numpy's, which is op by
    op. A query row with no key left (zeros by the op) and kv heads that broadcast are
    computed op by op."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    shapes = {"q": (2, 4, 6, 8), "k": (2, 4, 7, 8), "v": (2, 4, 7, 5)}
    args = [Var(n, TensorType(s, dtype)) for n, s in shapes.items()]
    values = [rng.standard_normal(s).astype(dtype) for s in shapes.values()]
    keep = rng.random((6, 7)) < 0.7
    keep[:, 0] = True  # every query has a key left
    if mask is not None:
        args.append(Var("m", TensorType((6, 7), "bool" if mask == "bool" else dtype)))
        values.append(keep if mask == "bool" else np.where(keep, 0.0, -np.inf).astype(dtype))
    fn = Function.from_output(args, call("scaled_dot_product_attention", *args, is_causal=causal))
    got = evaluate(fn, values, kernels="torch")
    assert got.by_kernel == {"torch": {"scaled_dot_product_attention": 1}}
    q, k, v = (torch.from_numpy(a) for a in values[:3])
    m = torch.from_numpy(values[3]) if mask is not None else None
    if causal and m is not None:  # the op's causal part and its mask, as one mask
        tril = torch.ones(6, 7, dtype=torch.bool).tril()
        m = m & tril if mask == "bool" else m.masked_fill(~tril, -np.inf)
    eager = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=m, is_causal=causal and m is None
    )
    assert got.outputs[0].tobytes() == eager.numpy().tobytes()
    reference = run(fn, *values, kernels="numpy")[0]
    np.testing.assert_allclose(got.outputs[0], reference, rtol=1e-5, atol=1e-6)
    if mask is not None:  # query 2 loses its keys: zeros, op by op
        dead = [a.copy() for a in values]
        dead[3][2] = False if mask == "bool" else -np.inf
        out = run(fn, *dead, kernels="torch")[0]
        assert np.all(out[:, :, 2] == 0) and np.isfinite(out).all()
        np.testing.assert_allclose(out, run(fn, *dead, kernels="numpy")[0], rtol=1e-5, atol=1e-6)
    heads = [values[0], values[1][:, :1], values[2][:, :1], *values[3:]]  # kv heads broadcast
    bargs = [args[0], *(Var(a.name, TensorType((2, 1, *a.ty.shape[2:]), dtype)) for a in args[1:3])]
    bfn = Function.from_output(
        [*bargs, *args[3:]],
        call("scaled_dot_product_attention", *bargs, *args[3:], is_causal=causal),
    )
    np.testing.assert_allclose(
        run(bfn, *heads, kernels="torch")[0],
        run(bfn, *heads, kernels="numpy")[0],
        rtol=1e-5,
        atol=1e-6,
    )
