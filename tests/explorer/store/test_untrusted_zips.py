"""Untrusted inputs, round three (issue #39, item 5): every zip member passlens reads is read as
a stream, its inflated bytes counted, within the size its header declares, its own cap and a
ratio to its compressed size (``explorer.store.zipread``). A 1.5 MB trace whose ONNX source
member inflates to 1.5 GB cost 3.1 GB to load; it is now refused before it is read."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

import explorer
from compiler.errors import LimitError, PasslensError
from explorer.store import TraceFileError, load, save, zipread
from tests.explorer.store.test_store import tiny_onnx

ROOT = Path(__file__).resolve().parents[3]


class _Repeat:
    """A deflate compressor for a stream of equal chunks: each is compressed once and ended
    with a full flush (which empties the window), so the same bytes follow every time: 1.5 GB
    of zeros are written in about a second."""

    def __init__(self):
        self.c = zlib.compressobj(6, zlib.DEFLATED, -15)
        self.seen: dict = {}

    def compress(self, data):
        key = (len(data), hash(data))
        if key not in self.seen:
            self.seen[key] = self.c.compress(data) + self.c.flush(zlib.Z_FULL_FLUSH)
        return self.seen[key]

    def flush(self, *args):
        return self.c.flush()


def write_zeros_member(zf: zipfile.ZipFile, name: str, nbytes: int, chunk: int = 16 << 20):
    """Add ``name``: ``nbytes`` zeros, deflated (about 1,000-fold), streamed in chunks."""
    with zf.open(name, "w", force_zip64=True) as f:
        f._compressor = _Repeat()
        zeros = bytes(chunk)
        for _ in range(nbytes // chunk):
            f.write(zeros)
        f.write(bytes(nbytes % chunk))


def with_bomb(path: Path, out: Path, name: str, nbytes: int) -> Path:
    """``path``'s members, with ``name`` replaced by a bomb of ``nbytes`` zeros."""
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for k, v in members.items():
            if k != name:
                zf.writestr(k, v)
        write_zeros_member(zf, name, nbytes)
    return out


@pytest.fixture
def onnx_file(tmp_path):
    pytest.importorskip("compiler.frontend.onnx_frontend")
    _, proto = tiny_onnx()
    return save(explorer.explore(proto), tmp_path / "onnx.passlens", include_source=True)


_PEAK = """
import resource, sys
sys.path.insert(0, {root!r})
from explorer.store import load
import onnx  # imported before the baseline: it is what a real load of the source imports
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load({path!r})
    print("LOADED")
except Exception as e:
    print(type(e).__name__ + ": " + str(e))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("PEAK_KB", after - before)
"""


def test_a_source_member_inflating_to_1_5_gb_is_refused_at_small_peak_memory(onnx_file, tmp_path):
    """The tester's file: a 1.5 MB trace whose source.onnx inflates to 1.5 GB. Refused from
    its header (1,000 times its compressed size) before a byte of it is inflated; the load's
    peak memory over the imports stays far below the member's size (measured in a child, as
    ru_maxrss: a generous bound, not a timing)."""
    assert load(onnx_file).source is not None
    bomb = with_bomb(onnx_file, tmp_path / "bomb.passlens", "source.onnx", 1536 << 20)
    assert bomb.stat().st_size < 2 << 20
    with pytest.raises(LimitError, match=r"source\.onnx declares 1\.5 GiB .* 100 times"):
        load(bomb)
    code = _PEAK.format(root=str(ROOT), path=str(bomb))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    ).stdout
    assert "LimitError" in out and "source.onnx" in out, out
    peak_kb = int(out.rsplit("PEAK_KB", 1)[1])
    assert peak_kb < 300 << 10, f"{peak_kb} KB over the imports"


def test_a_header_declaring_less_than_the_member_holds_gets_no_more(onnx_file, tmp_path):
    """A header that lies (declares 1 MiB of a member that inflates to 200 MiB) is not
    trusted: no more than it declared is read, and the load is one clear error."""
    bomb = with_bomb(onnx_file, tmp_path / "liar.passlens", "source.onnx", 200 << 20)
    data = bytearray(bomb.read_bytes())
    with zipfile.ZipFile(bomb) as zf:
        info = zf.getinfo("source.onnx")
    # the uncompressed size, wherever written (8 bytes in zip64 extra fields, else 4)
    assert info.file_size == 200 << 20
    for width in (8, 4):
        true, lie = ((n << 20).to_bytes(width, "little") for n in (200, 1))
        data = data.replace(true, lie)
    bomb.write_bytes(bytes(data))
    with zipfile.ZipFile(bomb) as zf:
        assert zf.getinfo("source.onnx").file_size == 1 << 20
    with pytest.raises(PasslensError, match="source.onnx|damaged"):
        load(bomb)


def test_a_bounded_member_counts_what_it_inflates(tmp_path):
    """The reader itself: a member whose ZipInfo is edited to declare less than it holds
    gives only that much; one past the caller's cap or the ratio is an error naming it."""
    path = tmp_path / "z.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        write_zeros_member(zf, "zeros", 8 << 20, chunk=1 << 20)
        zf.writestr("text", b"hello" * 1000)
    with zipfile.ZipFile(path) as zf:
        assert len(zipread.read_member(zf, "text", path, TraceFileError)) == 5000
        with pytest.raises(TraceFileError, match="member text is larger than 100 bytes"):
            zipread.read_member(zf, "text", path, TraceFileError, cap=100)
        with pytest.raises(TraceFileError, match="zeros declares 8.0 MiB .* 100 times"):
            old = zipread.RATIO_FLOOR
            zipread.RATIO_FLOOR = 1 << 20
            try:
                zipread.read_member(zf, "zeros", path, TraceFileError)
            finally:
                zipread.RATIO_FLOOR = old
        info = zf.getinfo("zeros")
        info.file_size = 1 << 20  # a lying header: what it declares is all that is read
        with pytest.raises((TraceFileError, zipfile.BadZipFile)):
            zipread.read_member(zf, info, path, TraceFileError)


def test_an_archive_with_a_member_twice_or_too_many_members_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "z.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for k in range(5):
            zf.writestr(f"m{k}", b"x")
    monkeypatch.setattr(zipread, "MAX_MEMBERS", 4)
    with zipfile.ZipFile(path) as zf, pytest.raises(TraceFileError, match="5 members"):
        zipread.check_archive(zf, path, TraceFileError)
    with pytest.warns(UserWarning, match="Duplicate name"):
        with zipfile.ZipFile(path, "a") as zf:
            zf.writestr("m0", b"y")
    monkeypatch.setattr(zipread, "MAX_MEMBERS", 100)
    with zipfile.ZipFile(path) as zf, pytest.raises(TraceFileError, match="appears twice"):
        zipread.check_archive(zf, path, TraceFileError)


def test_a_trace_whose_json_member_is_a_bomb_is_refused_from_its_header(tmp_path):
    trace = explorer.explore("def @main(%x: f32[2]) -> f32[2] {\n  return %x\n}")
    path = save(trace, tmp_path / "t.passlens")
    bomb = with_bomb(path, tmp_path / "b.passlens", "ir.json", 200 << 20)
    with pytest.raises(LimitError, match=r"ir\.json declares 200\.0 MiB"):
        load(bomb)
    # an ordinary trace's members are well within the ratio
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            assert info.file_size <= zipread.ratio_cap(info)
            json.loads(zf.read("manifest.json"))
