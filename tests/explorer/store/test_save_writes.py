"""How `save` writes its file (issue 44: `save` within 1.2x `torch.save` at 1B): through the
descriptor it created (never truncated by a second open, which makes ext4 flush the whole file
to the disk on close), by a thread of its own (`QueuedFile`: the CRC-32 of a chunk overlaps the
write of the one before), its errors raised in the caller's thread; its tables built with the
garbage collector paused. The speed itself is measured in bench/render_speed.py
(`--reports 1b`), not here."""

import builtins
import errno
import gc
import io
import threading
import zipfile

import numpy as np
import pytest

import explorer
from compiler import models
from explorer.store import load, save
from explorer.store import write as store_write
from explorer.store.queued_file import QueuedFile


@pytest.fixture(scope="module")
def mlp_trace():
    return explorer.explore(models.mlp((32, 64, 16), batch=4, seed=1, activation="gelu"))


def test_save_never_opens_its_file_again(mlp_trace, tmp_path, monkeypatch):
    # the temporary file is written through mkstemp's descriptor: no open() of a name for
    # writing ("w" truncates: ext4's auto_da_alloc then writes the file out on close)
    opened: list = []
    real_open = builtins.open

    def recording_open(file, mode="r", *args, **kwargs):
        if not isinstance(file, int):  # (os.fdopen opens the descriptor itself: allowed)
            opened.append((str(file), mode))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    monkeypatch.setattr(io, "open", recording_open)  # (zipfile opens a name with io.open)
    path = save(mlp_trace, tmp_path / "x.passlens")
    writes = [(f, m) for f, m in opened if set(m) & set("wax+")]
    assert writes == []
    assert load(path) is not None and [p.name for p in tmp_path.iterdir()] == ["x.passlens"]


def test_the_file_is_written_by_another_thread_than_the_crc(mlp_trace, tmp_path, monkeypatch):
    # zipfile computes each chunk's CRC-32 in the caller's thread; the bytes reach the file
    # in QueuedFile's, so the two overlap
    crc_threads, write_threads = set(), set()
    real_crc = zipfile.crc32

    def crc32(data, value=0):
        crc_threads.add(threading.get_ident())
        return real_crc(data, value)

    class Raw(io.FileIO):
        def write(self, b):
            write_threads.add(threading.get_ident())
            return super().write(b)

    monkeypatch.setattr(zipfile, "crc32", crc32)
    monkeypatch.setattr(store_write.os, "fdopen", lambda fd, mode: Raw(fd, "w"))
    path = save(mlp_trace, tmp_path / "x.passlens")
    assert crc_threads == {threading.get_ident()}
    assert write_threads and threading.get_ident() not in write_threads
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None  # every member's CRC-32 matches its bytes
    assert load(path) is not None


def test_a_failed_write_is_raised_and_the_old_file_kept(mlp_trace, tmp_path, monkeypatch):
    path = tmp_path / "x.passlens"
    path.write_text("old")

    class Full(io.FileIO):
        written = 0

        def write(self, b):
            Full.written += memoryview(b).nbytes
            if Full.written > 2_000:
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(b)

    monkeypatch.setattr(store_write.os, "fdopen", lambda fd, mode: Full(fd, "w"))
    with pytest.raises(OSError, match="No space left"):
        save(mlp_trace, path)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.passlens"]


def test_no_garbage_collection_runs_while_the_tables_are_built(mlp_trace, tmp_path, monkeypatch):
    collections: list = []

    def callback(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    real_ir_tables = store_write._Writer.ir_tables

    def ir_tables(self):
        gc.callbacks.append(callback)  # (from the last table on: the tables' own allocations
        try:  # are few for this small trace, so the collector is also made eager)
            gc.set_threshold(1)
            return real_ir_tables(self)
        finally:
            gc.set_threshold(*thresholds)
            gc.callbacks.remove(callback)

    thresholds = gc.get_threshold()
    monkeypatch.setattr(store_write._Writer, "ir_tables", ir_tables)
    save(mlp_trace, tmp_path / "x.passlens")
    assert collections == [] and gc.isenabled()
    # and a save that fails gives the collector back too
    monkeypatch.setattr(store_write._Writer, "ir_tables", lambda self: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        save(mlp_trace, tmp_path / "y.passlens")
    assert gc.isenabled() and list(tmp_path.iterdir()) == [tmp_path / "x.passlens"]


def _count_compares(monkeypatch) -> list:
    """The shapes of the arrays `np.array_equal` compares from now on (a list filled as it goes)."""
    compared: list = []
    real_equal = np.array_equal

    def array_equal(a, b, *args, **kwargs):
        compared.append(a.shape)
        return real_equal(a, b, *args, **kwargs)

    monkeypatch.setattr(np, "array_equal", array_equal)
    return compared


def test_a_view_of_a_stored_arrays_memory_is_derived_without_reading_it(monkeypatch):
    # a transposed weight that is a view of the weight's own memory (torch.export's `W.T`):
    # the same recipe as before, found without comparing the two arrays element by element
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((96, 80)).astype(np.float32)
    copy = np.ascontiguousarray(weight.T)
    compared = _count_compares(monkeypatch)
    w = store_write._Writer()
    assert w.array(weight) == 0 and w.array(weight.T) == 1
    assert w.derived == [None, {"from": 0, "axes": [1, 0]}] and compared == []
    assert w.array(copy) == 1 and compared == [(80, 96)]  # equal bits elsewhere: compared
    # the same first byte and shape, read in another order: compared, and not equal
    other = weight.reshape(80, 96)
    assert other.ctypes.data == weight.T.ctypes.data
    assert not store_write._bits_equal(weight.T, other) and compared[-1] == (80, 96)


def _zip_bytes(out) -> None:
    """A small zip with members written whole, by chunks and from memory views."""
    arr = np.arange(50_000, dtype=np.float32)
    with zipfile.ZipFile(out, "w", allowZip64=True) as zf:
        zf.writestr(zipfile.ZipInfo("a.json", (1980, 1, 1, 0, 0, 0)), b"{}" * 500, 8)
        with zf.open(zipfile.ZipInfo("b.npy", (1980, 1, 1, 0, 0, 0)), "w") as f:
            store_write.write_npy(f, arr)
        with zf.open(zipfile.ZipInfo("c.bin", (1980, 1, 1, 0, 0, 0)), "w") as f:
            for k in range(0, 9000, 1000):
                f.write(bytes(range(256)) * 4 + k.to_bytes(4, "little"))


def test_a_zip_through_a_queued_file_has_the_same_bytes(monkeypatch):
    monkeypatch.setattr(store_write, "_NPY_CHUNK", 4096)  # many chunks per member
    want = io.BytesIO()
    _zip_bytes(want)
    got = io.BytesIO()
    with QueuedFile(got, depth=2) as out:
        _zip_bytes(out)
    assert got.getvalue() == want.getvalue()


def test_a_queued_file_tells_seeks_and_copies_what_may_change():
    raw = io.BytesIO()
    buf = bytearray(b"abcd")
    with QueuedFile(raw) as f:
        assert f.write(buf) == 4 and f.tell() == 4
        buf[:] = b"ZZZZ"  # changed after write returned: the copy was written
        view = memoryview(np.frombuffer(b"0123456789", np.uint8)).toreadonly()
        assert f.write(view) == 10 and f.tell() == 14
        assert f.seek(2) == 2 and f.tell() == 2
        f.write(b"xy")
        assert f.seek(0, 2) == 14 and f.tell() == 14
        assert f.seek(-4, 1) == 10
        f.write(b"!")
        f.flush()
        assert raw.getvalue() == b"abxy012345!789"
    with pytest.raises(ValueError, match="closed"):
        f.write(b"more")


def test_a_queued_files_write_error_is_raised_by_the_next_call_and_close():
    class Broken(io.BytesIO):
        def write(self, b):
            raise OSError(errno.EIO, "Input/output error")

    f = QueuedFile(Broken())
    f.write(b"x")  # queued: the error comes later
    with pytest.raises(OSError, match="Input/output error"):
        f.flush()
    with pytest.raises(OSError, match="Input/output error"):
        f.write(b"y")
    with pytest.raises(OSError, match="Input/output error"):
        f.close()


@pytest.mark.parametrize("shape", [(2048, 2048), (24, 24), (89, 89), (5, 5), (7,), (1,), (3, 1, 3)])
def test_a_square_matrix_and_its_transpose_differ_at_the_probe(shape):
    # evenly spaced positions of a 2048 x 2048 matrix were all on its diagonal: the probe
    # then matched the weight's transpose, which was compared whole
    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    probe = store_write._probe_index(arr)
    flat = np.ravel_multi_index(probe, shape)
    assert flat[0] == 0 and flat[-1] == arr.size - 1 and len(flat) >= min(arr.size, 20)
    assert len(set(flat)) == len(flat) and (arr.size > 24 or len(flat) == arr.size)
    if arr.ndim == 2:
        assert not np.array_equal(arr[probe], arr.T[probe])


def test_a_square_weight_is_told_from_its_transposed_copy_without_reading_it(monkeypatch):
    # one whole compare: the copy's derivation from the weight (it is the weight's transpose)
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((2048, 2048)).astype(np.float32)
    copy = np.ascontiguousarray(weight.T)
    compared = _count_compares(monkeypatch)
    w = store_write._Writer()
    assert [w.array(weight), w.array(copy)] == [0, 1]
    assert w.derived == [None, {"from": 0, "axes": [1, 0]}] and compared == [(2048, 2048)]
