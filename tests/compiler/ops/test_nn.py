"""nn ops: symbolic type inference (checked against computed values), error messages, float16."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import compiler.ops.nn  # noqa: F401  (registers the nn ops)
from compiler.interpret import evaluate
from compiler.ir import ANY, Call, Function, IRError, TensorType, Var, sym, tensor
from compiler.ir.symbolic import floordiv
from compiler.ir.types import DType

b, n, s, t, h, w, c, k, m = (sym(name) for name in ("b", "n", "s", "t", "h", "w", "c", "k", "m"))
_rng = np.random.default_rng(1)


def infer(op: str, *types, **attrs):
    """The inferred type of ``op`` applied to Vars of ``types``."""
    args = [Var(f"in{i}", ty) for i, ty in enumerate(types)]
    return Call(op, args, attrs).ty


def run_checked(op: str, types, values, **attrs):
    """Evaluate ``op`` on Vars of (possibly symbolic) ``types``; returns (outputs, mismatches)."""
    params = [Var(f"in{i}", ty) for i, ty in enumerate(types)]
    ev = evaluate(Function.from_output(params, Call(op, params, attrs)), values, check_types=True)
    return ev.outputs, ev.mismatches


def randn(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


# ----- symbolic inference -----------------------------------------------------------------


def test_matmul_symbolic_batch():
    assert infer("matmul", tensor([b, n, 64]), tensor([64, 128])) == tensor([b, n, 128])


@pytest.mark.parametrize(
    "lhs, rhs, expected",
    [
        ([k], [k], []),
        ([k], [k, m], [m]),
        ([n, k], [k], [n]),
        ([b, n, k], [k], [b, n]),
        ([k], [b, k, m], [b, m]),
        ([b, 1, n, k], [4, k, m], [b, 4, n, m]),
        ([1, n, k], [b, k, m], [b, n, m]),
        ([n, 2 * k], [2 * k, m], [n, m]),
        ([n, k], [m, 5], [n, 5]),  # k vs m cannot be proven different: accepted, as in Relax
        ([ANY, n, 8], [8, 3], [ANY, n, 3]),
    ],
)
def test_matmul_symbolic_shapes(lhs, rhs, expected):
    assert infer("matmul", tensor(lhs), tensor(rhs)) == tensor(expected)


def test_matmul_unknown_rank_and_out_dtype():
    assert infer("matmul", TensorType(None, "f16"), tensor([4, 5], "f16")) == TensorType(
        None, "f16"
    )
    got = infer("matmul", tensor([n, 8], "f16"), tensor([8, 4], "f16"), out_dtype="float32")
    assert got == tensor([n, 4], "f32")


def test_linear_symbolic():
    got = infer("linear", tensor([b, s, 768]), tensor([3072, 768]), tensor([3072]))
    assert got == tensor([b, s, 3072])
    assert infer("linear", tensor([768]), tensor([10, 768])) == tensor([10])


def test_conv2d_symbolic_same_padding():
    got = infer("conv2d", tensor([n, 3, h, w]), tensor([16, 3, 3, 3]), padding=[1, 1, 1, 1])
    assert got == tensor([n, 16, h, w])


def test_conv2d_symbolic_stride_and_dilation():
    got = infer(
        "conv2d",
        tensor([n, 3, h, w]),
        tensor([16, 3, 3, 3]),
        strides=[2, 1],
        padding=[1, 0, 1, 0],
        dilation=[1, 2],
    )
    assert got == tensor([n, 16, floordiv(h - 1, 2) + 1, w - 4])


def test_conv2d_symbolic_channels_and_layout():
    got = infer(
        "conv2d",
        tensor([n, h, w, c]),
        tensor([3, 3, c, 32]),
        data_layout="NHWC",
        kernel_layout="HWIO",
        strides=[4, 4],
    )
    assert got == tensor([n, floordiv(h - 3, 4) + 1, floordiv(w - 3, 4) + 1, 32])
    assert infer("conv2d", tensor([n, 3, ANY, w]), tensor([8, 3, 3, 3])) == tensor(
        [n, 8, ANY, w - 2]
    )


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("conv2d", {"strides": [2, 3], "padding": [1, 0, 2, 1], "dilation": [2, 1]}),
        ("max_pool2d", {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]}),
        ("max_pool2d", {"pool_size": [3, 2], "strides": [2, 2], "ceil_mode": True}),
        ("avg_pool2d", {"pool_size": [2, 2], "padding": [1, 1, 1, 1], "ceil_mode": True}),
        ("max_pool2d", {"pool_size": [3, 3], "strides": [1, 1], "padding": [1, 1, 1, 1]}),
    ],
)
def test_symbolic_windows_match_computed_shapes(op, attrs):
    """The symbolic output size is right for every concrete size, odd and even."""
    data = tensor([n, 2, h, w])
    types = [data] + ([tensor([3, 2, 3, 3])] if op == "conv2d" else [])
    for size_h, size_w in [(7, 7), (8, 9), (10, 6), (13, 12)]:
        values = [randn(1, 2, size_h, size_w)] + ([randn(3, 2, 3, 3)] if op == "conv2d" else [])
        (out,), mismatches = run_checked(op, types, values, **attrs)
        assert not mismatches, [str(x) for x in mismatches]
        assert out.shape[:2] == (1, 3 if op == "conv2d" else 2)


def test_pool_ceil_mode_symbolic():
    got = infer(
        "max_pool2d",
        tensor([n, c, h, w]),
        pool_size=[3, 3],
        strides=[2, 2],
        padding=[1, 1, 1, 1],
        ceil_mode=True,
    )
    assert got == tensor([n, c, floordiv(h, 2) + 1, floordiv(w, 2) + 1])
    # a stride longer than the kernel: whether the last window is dropped depends on h
    got = infer(
        "max_pool2d", tensor([n, c, h, 8]), pool_size=[1, 1], strides=[2, 2], ceil_mode=True
    )
    assert got == tensor([n, c, ANY, 4])


def test_pool_static_and_layout():
    assert infer("avg_pool2d", tensor([2, 56, 56, c]), pool_size=[2, 2], layout="NHWC") == tensor(
        [2, 28, 28, c]
    )
    assert infer("adaptive_avg_pool2d", tensor([n, c, h, w]), output_size=[1, 1]) == tensor(
        [n, c, 1, 1]
    )
    assert infer("adaptive_avg_pool2d", tensor([n, h, w, c]), layout="NHWC") == tensor([n, h, w, c])


def test_norms_symbolic():
    assert infer("layer_norm", tensor([b, s, 768]), tensor([768]), tensor([768])) == tensor(
        [b, s, 768]
    )
    assert infer("layer_norm", tensor([b, s, c]), tensor([c])) == tensor([b, s, c])
    bn = [tensor([c])] * 4
    assert infer("batch_norm", tensor([n, c, h, w]), *bn) == tensor([n, c, h, w])
    assert infer("group_norm", tensor([n, c, h, w]), num_groups=8) == tensor([n, c, h, w])
    assert infer("softmax", TensorType(None, "f32")) == TensorType(None, "f32")


def test_attention_symbolic():
    q, kv = tensor([b, 12, s, 64]), tensor([b, 12, t, 64])
    assert infer("scaled_dot_product_attention", q, kv, kv) == tensor([b, 12, s, 64])
    mask = tensor([s, t], "bool")
    got = infer("scaled_dot_product_attention", q, kv, tensor([b, 12, t, 32]), mask)
    assert got == tensor([b, 12, s, 32])


def test_attention_symbolic_runs():
    q, kv = tensor([b, 2, s, 8]), tensor([b, 2, t, 8])
    values = [randn(3, 2, 4, 8), randn(3, 2, 6, 8), randn(3, 2, 6, 8)]
    (out,), mismatches = run_checked(
        "scaled_dot_product_attention", [q, kv, kv], values, is_causal=True
    )
    assert not mismatches and out.shape == (3, 2, 4, 8)


# ----- errors -----------------------------------------------------------------------------


def error(op: str, *types, **attrs) -> str:
    with pytest.raises(IRError) as info:
        infer(op, *types, **attrs)
    return str(info.value)


def test_conv2d_channel_mismatch():
    msg = error("conv2d", tensor([1, 3, 8, 8]), tensor([8, 4, 3, 3]))
    assert msg.startswith("conv2d(f32[1, 3, 8, 8], f32[8, 4, 3, 3]):")
    assert "data has 3 channels but weight expects 4 (groups=1)" in msg
    msg = error("conv2d", tensor([1, 6, 8, 8]), tensor([8, 2, 3, 3]), groups=2)
    assert "data has 6 channels but weight expects 4 (groups=2)" in msg


@pytest.mark.parametrize(
    "types, attrs, expected",
    [
        (([1, 4, 8, 8], [6, 1, 3, 3]), {"groups": 4}, "6 output channels, which groups=4"),
        (([1, 3, 8], [8, 3, 3, 3]), {}, "data must have rank 4 (layout NCHW), got f32[1, 3, 8]"),
        (([1, 3, 8, 8], [8, 3, 3]), {}, "weight must have rank 4 (layout OIHW)"),
        (([1, 3, 8, 8], [8, 3, 3, 3]), {"padding": [1, 1]}, "padding must have 4 values"),
        (([1, 3, 8, 8], [8, 3, 3, 3]), {"strides": [0, 1]}, "strides must be >= 1"),
        (([1, 3, 8, 8], [8, 3, 3, 3]), {"groups": 0}, "groups must be >= 1"),
        (([1, 3, 8, 8], [8, 3, 3, 3]), {"data_layout": "NCHV"}, "permutation of the letters"),
        (([1, 3, 2, 8], [8, 3, 3, 3]), {}, "input height of size 2"),
        (([1, 3, 8, 8], [8, 3, 3, 5]), {"dilation": [1, 2]}, "smaller than the kernel 5"),
    ],
)
def test_conv2d_errors(types, attrs, expected):
    assert expected in error("conv2d", *(tensor(s) for s in types), **attrs)


def test_conv2d_dtype_and_bias_errors():
    msg = error("conv2d", tensor([1, 3, 8, 8]), tensor([8, 3, 3, 3], "f16"))
    assert "one dtype, got f32, f16" in msg
    msg = error("conv2d", tensor([1, 3, 8, 8], "i32"), tensor([8, 3, 3, 3], "i32"))
    assert "data must be floating-point" in msg
    msg = error("conv2d", tensor([1, 3, 8, 8]), tensor([8, 3, 3, 3]), tensor([4]))
    assert "bias must have shape [8] (one per output channel), got f32[4]" in msg


@pytest.mark.parametrize(
    "lhs, rhs, expected",
    [
        ([2, 3], [4, 5], "contraction dims differ: lhs f32[2, 3] has 3 columns but rhs"),
        ([3], [4], "has 3 columns but rhs f32[4] has 4 rows"),
        ([2, 3, 4], [5, 4, 6], "batch dims [2] of lhs and [5] of rhs do not broadcast"),
        ([], [4], "lhs must have rank >= 1"),
    ],
)
def test_matmul_errors(lhs, rhs, expected):
    assert expected in error("matmul", tensor(lhs), tensor(rhs))


def test_matmul_transpose_b_types_and_errors():
    """transpose_b contracts lhs's last dim with rhs's last dim (rhs is (..., out, in))."""
    got = infer("matmul", tensor([b, n, 64]), tensor([128, 64]), transpose_b=True)
    assert got == tensor([b, n, 128])
    got = infer("matmul", tensor([64]), tensor([b, 128, 64]), transpose_b=True)
    assert got == tensor([b, 128])
    msg = error("matmul", tensor([2, 3]), tensor([3, 4]), transpose_b=True)
    assert "lhs f32[2, 3] has 3 columns but rhs f32[3, 4] read transposed has 4 rows" in msg
    assert "transpose_b needs an rhs of rank >= 2" in error(
        "matmul", tensor([4]), tensor([4]), transpose_b=True
    )


def test_matmul_and_linear_dtype_errors():
    assert "one dtype" in error("matmul", tensor([2, 3]), tensor([3, 4], "f16"))
    assert "must be numeric" in error("matmul", tensor([2, 3], "bool"), tensor([3, 4], "bool"))
    msg = error("linear", tensor([n, 16]), tensor([8, 32]))
    assert "x has 16 features but weight f32[8, 32] expects 32" in msg
    assert "weight must have rank 2" in error("linear", tensor([n, 16]), tensor([16]))
    assert "bias must have shape [8]" in error(
        "linear", tensor([n, 16]), tensor([8, 16]), tensor([16])
    )


def test_pool_errors():
    assert "pool_size must have 2 values" in error(
        "max_pool2d", tensor([1, 3, 8, 8]), pool_size=[2]
    )
    assert "strides must be >= 1" in error(
        "avg_pool2d", tensor([1, 3, 8, 8]), pool_size=[2, 2], strides=[0, 2]
    )
    assert "needs attribute pool_size" in error("max_pool2d", tensor([1, 3, 8, 8]))
    assert "avg_pool2d has no attribute(s) dilation" in error(
        "avg_pool2d", tensor([1, 3, 8, 8]), pool_size=[2, 2], dilation=[2, 2]
    )
    assert "input width of size 2" in error("max_pool2d", tensor([1, 3, 8, 2]), pool_size=[3, 3])
    assert "data must have rank 4" in error("adaptive_avg_pool2d", tensor([3, 8, 8]))


def test_norm_errors():
    p3 = tensor([3])
    msg = error("batch_norm", tensor([2, 4, 5, 5]), p3, p3, p3, p3)
    assert "gamma must have shape [4] (one per channel of axis 1), got f32[3]" in msg
    msg = error("layer_norm", tensor([b, s, 768]), tensor([512]))
    assert "gamma must have shape [768]" in msg
    msg = error("layer_norm", tensor([2, 3, 4]), tensor([3, 4]), axes=[-1])
    assert "gamma must have shape [4]" in msg
    assert "axes 2 is out of range for rank 2" in error("layer_norm", tensor([2, 3]), axes=[2, 3])
    msg = error("group_norm", tensor([2, 6, 4, 4]), num_groups=4)
    assert "6 channels are not divisible by num_groups=4" in msg
    msg = error("group_norm", tensor([2, 6, 4, 4]), tensor([6], "f16"), num_groups=3)
    assert "data, gamma and beta must have one dtype, got f32, f16" in msg


def test_softmax_errors():
    assert "axis 2 is out of range for rank 2" in error("softmax", tensor([2, 3]), axis=2)
    assert "data must be floating-point, got i64[2, 3]" in error(
        "log_softmax", tensor([2, 3], "i64")
    )


def test_attention_errors():
    q, kv = tensor([2, 5, 8]), tensor([2, 7, 8])
    sdpa = "scaled_dot_product_attention"
    assert "query f32[2, 5, 8] has 8 features but key f32[2, 7, 4] has 4" in error(
        sdpa, q, tensor([2, 7, 4]), kv
    )
    assert "key f32[2, 7, 8] has 7 positions but value f32[2, 6, 8] has 6" in error(
        sdpa, q, kv, tensor([2, 6, 8])
    )
    assert "attn_mask must be bool (True = attend) or f32" in error(
        sdpa, q, kv, kv, tensor([5, 7], "i32")
    )
    assert "attn_mask f32[5, 5] does not broadcast to the attention scores [2, 5, 7]" in error(
        sdpa, q, kv, kv, tensor([5, 5])
    )
    assert "query must have rank >= 2" in error(sdpa, tensor([8]), kv, kv)
    assert "one dtype" in error(sdpa, q, kv, tensor([2, 7, 8], "f16"))


# ----- float16 and bfloat16 ---------------------------------------------------------------


def test_float16_results_are_correctly_rounded():
    """Computing in float64 and rounding once gives the nearest float16 of the exact result."""
    x = randn(4, 33, dtype=np.float16)
    (got,), _ = run_checked("softmax", [tensor([4, 33], "f16")], [x])
    exact = torch.softmax(torch.from_numpy(x).double(), -1).half().numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, exact)
    a, wt = randn(3, 64, dtype=np.float16), randn(5, 64, dtype=np.float16)
    (got,), _ = run_checked("linear", [tensor([3, 64], "f16"), tensor([5, 64], "f16")], [a, wt])
    np.testing.assert_array_equal(
        got, (a.astype(np.float64) @ wt.T.astype(np.float64)).astype(np.float16)
    )


def test_float16_matches_torch_half():
    x, wt = randn(1, 4, 9, 9, dtype=np.float16), randn(8, 4, 3, 3, dtype=np.float16)
    types = [tensor([1, 4, 9, 9], "f16"), tensor([8, 4, 3, 3], "f16")]
    (got,), _ = run_checked("conv2d", types, [x, wt], strides=[2, 2], padding=[1, 1, 1, 1])
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(wt), stride=2, padding=1).numpy()
    assert got.dtype == np.float16
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2
    )


def test_bfloat16_conv_and_attention():
    bf16 = DType.bfloat16.numpy
    x, wt = randn(1, 4, 6, 6).astype(bf16), randn(8, 4, 3, 3).astype(bf16)
    types = [tensor([1, 4, 6, 6], "bf16"), tensor([8, 4, 3, 3], "bf16")]
    (got,), mismatches = run_checked("conv2d", types, [x, wt])
    assert not mismatches and got.dtype == bf16
    want = F.conv2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(wt.astype(np.float64)))
    np.testing.assert_allclose(got.astype(np.float64), want.numpy(), rtol=1e-2, atol=2e-2)
    q = randn(2, 3, 8).astype(bf16)
    (got,), mismatches = run_checked(
        "scaled_dot_product_attention", [tensor([2, 3, 8], "bf16")] * 3, [q, q, q]
    )
    assert not mismatches and got.dtype == bf16 and got.shape == (2, 3, 8)
