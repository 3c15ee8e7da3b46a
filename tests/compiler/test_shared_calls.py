"""Shared torch calls (compiler/shared_calls.py): a call is found again only when everything it
reads is the same, and what is found has the bits the call would compute."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from compiler import SharedCalls, sharing_calls  # noqa: E402
from compiler.ir.op_registry import get_op  # noqa: E402
from compiler.shared_calls import shared_call  # noqa: E402
from compiler.torch_kernels import compute  # noqa: E402

aten = torch.ops.aten


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_the_same_call_on_the_same_tensors_is_found_again():
    calls = SharedCalls()
    x, w = _rand(2, 3, 8, 8), _rand(4, 3, 3, 3, seed=1)
    first = calls.call(aten.conv2d.default, (x, w, None, [1, 1], [1, 1]))
    # the same call written with every default, through other tensor objects on the same memory
    again = calls.call(
        aten.conv2d.default,
        (torch.from_numpy(x.numpy()), w.view(4, 3, 3, 3), None, (1, 1), [1, 1], [1, 1], 1),
    )
    assert again is first and calls.hits == 1


@pytest.mark.parametrize(
    "other",
    [
        lambda x, w: (x, w, None, [2, 2], [1, 1]),  # another stride
        lambda x, w: (x.clone(), w, None, [1, 1], [1, 1]),  # equal values, other memory
        lambda x, w: (x, w.clone(), None, [1, 1], [1, 1]),
        lambda x, w: (x[:1], w, None, [1, 1], [1, 1]),  # a part of the same memory
        lambda x, w: (x.transpose(2, 3), w, None, [1, 1], [1, 1]),  # other strides
    ],
)
def test_a_call_reading_anything_else_is_made_again(other):
    calls = SharedCalls()
    x, w = _rand(2, 3, 8, 8), _rand(4, 3, 3, 3, seed=1)
    first = calls.call(aten.conv2d.default, (x, w, None, [1, 1], [1, 1]))
    args = other(x, w)
    out = calls.call(aten.conv2d.default, args)
    assert out is not first and calls.hits == 0
    assert torch.equal(out, aten.conv2d.default(*args))


def test_scalars_are_keyed_by_type_and_value():
    calls = SharedCalls()
    x = _rand(4, 5)
    a = calls.call(aten.layer_norm.default, (x, [5], None, None, 1e-5))
    assert calls.call(aten.layer_norm.default, (x, [5], None, None, 1e-6)) is not a
    i = torch.arange(6)
    two = calls.call(aten.pow.Tensor_Scalar, (i, 2))
    assert calls.call(aten.pow.Tensor_Scalar, (i, 2.0)) is not two  # int vs float: other dtype
    assert calls.call(aten.pow.Tensor_Scalar, (i, 2)) is two
    # NaN is never equal to itself: a call reading one is never found
    assert calls.key(aten.add.Tensor, (x, float("nan")), None, []) is None


def test_dims_are_taken_modulo_the_rank_and_a_missing_attention_scale_is_torchs():
    calls = SharedCalls()
    x = _rand(2, 3, 4)
    m = calls.call(aten.mean.dim, (x, [2], True))
    assert calls.call(aten.mean.dim, (x, [-1], True)) is m
    assert calls.call(aten.mean.dim, (x, [-1], False)) is not m
    q, k, v = _rand(1, 2, 5, 8), _rand(1, 2, 5, 8, seed=1), _rand(1, 2, 5, 8, seed=2)
    sdpa = aten.scaled_dot_product_attention.default
    explicit = calls.call(sdpa, (q, k, v), {"scale": 1 / np.sqrt(8)})
    found = calls.call(sdpa, (q, k, v))
    assert found is explicit
    assert torch.equal(found, sdpa(q, k, v))  # torch's own default scale: the same bits


@pytest.mark.parametrize("shape", [(16, 256, 1024), (7, 512, 300), (1, 16, 2048, 8192)])
def test_linear_without_bias_is_found_as_the_matmul_torch_computes_it_as(shape):
    """at::linear(x, w) without a bias is at::matmul(x, w.t()): the same bits, so the
    interpreter's matmul of a linear's parts is what torch's reference's linear takes."""
    *lead, k, n = shape
    x, w = _rand(*lead, k), _rand(n, k, seed=1)
    calls = SharedCalls()
    mm = calls.call(aten.matmul.default, (x, w.t()))
    found = calls.call(aten.linear.default, (x, w))
    assert found is mm
    assert torch.equal(found, torch.nn.functional.linear(x, w))


def test_linear_with_a_bias_is_never_shared():
    # torch fuses the bias into the product (addmm): not the bits of a matmul then an add
    calls = SharedCalls()
    x, w, b = _rand(16, 512), _rand(64, 512, seed=1), _rand(64, seed=2)
    calls.call(aten.matmul.default, (x, w.t()))
    out = calls.call(aten.linear.default, (x, w, b))
    assert calls.hits == 0 and torch.equal(out, torch.nn.functional.linear(x, w, b))
    assert calls.key(aten.linear.default, (x, w, b), None, []) is None


@pytest.mark.parametrize(
    "op, args",
    [
        (aten.add_.Tensor, lambda x: (x, x)),  # writes its input
        (aten.dropout.default, lambda x: (x, 0.5, True)),  # random
        (aten.rand_like.default, lambda x: (x,)),
        (aten.transpose.int, lambda x: (x, 0, 1)),  # a view
        (aten.cat.default, lambda x: ([x, x],)),  # not in the list
    ],
)
def test_ops_that_are_not_pure_computations_are_not_shared(op, args):
    calls = SharedCalls()
    assert calls.key(op, args(_rand(3, 3)), None, []) is None


def test_another_thread_count_shares_nothing():
    calls = SharedCalls()
    x = _rand(64, 64)
    threads = torch.get_num_threads()
    calls.call(aten.matmul.default, (x, x))
    try:
        torch.set_num_threads(threads + 1)
        assert calls.key(aten.matmul.default, (x, x), None, []) is None
    finally:
        torch.set_num_threads(threads)
    calls.call(aten.matmul.default, (x, x))
    assert calls.hits == 1


def test_an_entry_keeps_the_tensors_its_call_read_alive():
    # (so no tensor made later can take their memory and be mistaken for them)
    calls = SharedCalls()
    x = _rand(32, 32)
    ref = weakref.ref(x)
    calls.call(aten.exp.default, (x,))
    del x
    gc.collect()
    assert ref() is not None
    calls.entries.clear()
    gc.collect()
    assert ref() is None


def test_outside_a_sharing_block_a_call_is_just_made():
    x = _rand(4, 4)
    assert torch.equal(shared_call(aten.exp.default, x), torch.exp(x))
    calls = SharedCalls()
    with sharing_calls(calls):
        a = shared_call(aten.exp.default, x)
        assert shared_call(aten.exp.default, x) is a
    assert shared_call(aten.exp.default, x) is not a and len(calls) == 1


def test_a_kernel_never_writes_a_value_it_shares():
    """linear with a bias adds it in place outside sharing; inside, the matmul's value is
    shared and must keep its bits (torch's reference may take it), and the add is shared too."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    w = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    attrs = get_op("linear").normalize_attrs({})
    calls = SharedCalls()
    with sharing_calls(calls):
        y = compute("linear", [x, w, b], attrs)
    product = (torch.from_numpy(x) @ torch.from_numpy(w).T).numpy()
    kept, added = [v for v, _ in calls.entries.values()]  # the product, then the bias added
    assert np.array_equal(kept.numpy(), product)  # not the product plus the bias
    assert np.array_equal(y, product + b) and np.array_equal(added.numpy(), y)
