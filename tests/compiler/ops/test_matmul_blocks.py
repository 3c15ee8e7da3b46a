"""The interpreter's matmul: float32 in float32 (sgemm, a transposed weight read by few rows
multiplied as (w @ a.T).T), other floats in float64 with a big weight upcast a block at a
time: the same float64 products as upcasting it whole, for every layout and rank."""

import numpy as np
import pytest

from compiler import blas_threads
from compiler.ir import nn_compute


@pytest.mark.parametrize(
    ("a_shape", "transposed"),
    [((7, 33), True), ((7, 33), False), ((33,), True), ((2, 3, 5, 33), True), ((4, 33), False)],
)
def test_blocked_matmul_equals_the_whole_upcast(monkeypatch, a_shape, transposed):
    monkeypatch.setattr(nn_compute, "MATMUL_BLOCK_BYTES", 8 * 33 * 5)  # blocks of 5 columns
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(np.float32)
    w = rng.standard_normal((1031, 33) if transposed else (33, 1031)).astype(np.float32)
    b = w.T if transposed else w  # a linear's weight is read transposed
    assert b.size * 8 > nn_compute.MATMUL_BLOCK_BYTES  # the blocked path
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    got = nn_compute.matmul_f64(a, b)
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("a_shape", [(7, 33), (33,), (2, 3, 5, 33), (300, 33)])
@pytest.mark.parametrize("transposed", [True, False])
def test_float32_matmul_is_float32_sgemm(a_shape, transposed):
    """float32 operands give a float32 result within float32 rounding of the float64 product,
    by either orientation (300 rows: more than FEW_ROWS, the plain product)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(a_shape).astype(np.float32)
    w = rng.standard_normal((1031, 33) if transposed else (33, 1031)).astype(np.float32)
    b = w.T if transposed else w
    got = nn_compute.matmul(a, b)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.array_equal(got, np.matmul(a, np.ascontiguousarray(b))) or transposed
    # a float16 result is still accumulated in float64, correctly rounded
    half = nn_compute.matmul(a, b, np.float16).astype(np.float16)
    assert np.array_equal(half, want.astype(np.float16))


def test_parallel_chunks_runs_every_chunk_and_raises():
    seen = []
    blas_threads.parallel_chunks(9, seen.append)
    assert sorted(seen) == list(range(9))

    def bad(k):
        if k == 5:
            raise ValueError("chunk 5")

    with pytest.raises(ValueError, match="chunk 5"):
        blas_threads.parallel_chunks(9, bad)


def test_one_blas_thread_restores_the_thread_count():
    libs = blas_threads._openblas()
    before = [get() for _, get in libs]
    with blas_threads.one_blas_thread():
        assert all(get() == 1 for _, get in libs)
    assert [get() for _, get in libs] == before


def test_float32_matmul_in_blocks_among_threads(monkeypatch):
    """A transposed weight split in blocks of rows among threads: within float32 rounding of
    the float64 product, and the same bits on every call (the blocks depend on shapes only)."""
    monkeypatch.setattr(nn_compute, "PARALLEL_MIN_MACS", 0)
    monkeypatch.setattr(nn_compute, "MATMUL_CHUNK_BYTES", 33 * 4 * 100)  # ~100 rows a block
    rng = np.random.default_rng(2)
    a = rng.standard_normal((1, 16, 33)).astype(np.float32)
    w = rng.standard_normal((1031, 33)).astype(np.float32)
    got = nn_compute.matmul(a, w.T)
    want = np.matmul(a.astype(np.float64), w.T.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == (1, 16, 1031) and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for _ in range(3):
        assert nn_compute.matmul(a, w.T).tobytes() == got.tobytes()


def test_float32_matmul_in_blocks_of_rows(monkeypatch):
    """A big product by a row-major 2-D weight, in blocks of rows of ``a`` among threads."""
    monkeypatch.setattr(nn_compute, "PARALLEL_MIN_MACS", 0)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 300, 33)).astype(np.float32)
    b = rng.standard_normal((33, 41)).astype(np.float32)
    got = nn_compute.matmul(a, b)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == (2, 300, 41)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert nn_compute.matmul(a, b).tobytes() == got.tobytes()
