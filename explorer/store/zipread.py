"""Reading the members of a zip archive that is untrusted input (a `.passlens` trace; a
`.pt2` program is checked with the same rules before torch reads it): a member is read as a
stream with its decompressed bytes counted as they come, never past the least of the size its
header declares, the caller's cap and `MAX_RATIO` times its compressed size (past a floor of
`RATIO_FLOOR`). A header that declares more than those is refused before anything is read;
one that declares less than the member holds gets no more than it declared (the CRC check then
fails). Every refusal is one error naming the archive and the member.

Why a ratio: deflate inflates zeros about 1,000-fold, so a 1.5 MB member can declare 1.5 GB.
passlens writes arrays and the ONNX source member uncompressed (ratio 1) and JSON deflated
(about 10-fold), so a ratio past 100 on a large member is a crafted file, not a trace."""

from __future__ import annotations

import os
import zipfile
from typing import Any

MAX_RATIO = 100  # decompressed bytes per compressed byte a member may hold (past the floor)
RATIO_FLOOR = 64 << 20  # a member that inflates to no more than this is not held to the ratio
MAX_MEMBERS = 100_000  # a trace of a 10,000-node model has a few thousand
MAX_NAME_CHARS = 4096  # one member's name


def _size(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes:,} bytes"


def ratio_cap(info: zipfile.ZipInfo) -> int:
    """The most a member may inflate to: `MAX_RATIO` times its compressed size, or the
    floor, whichever is larger."""
    return max(RATIO_FLOOR, MAX_RATIO * max(0, info.compress_size))


def check_archive(
    zf: zipfile.ZipFile,
    where: Any,
    error: type[Exception],
    limit_error: type[Exception] | None = None,
) -> None:
    """The archive's member table: not too many members, no name twice (which copy a reader
    takes would depend on the reader), no overlong name, no member whose compressed size is
    larger than the archive or whose declared size is past its ratio cap (`limit_error`,
    default `error`, for a size past a limit; `error` for damage)."""
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise error(f"{where}: {len(infos):,} members, more than {MAX_MEMBERS:,}; not read")
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        raise error(f"{where}: damaged archive (a member appears twice)")
    total = _archive_size(zf)
    for info in infos:
        if len(info.filename) > MAX_NAME_CHARS:
            raise error(f"{where}: a member's name is over {MAX_NAME_CHARS:,} characters")
        check_member(info, where, error, total, limit_error)


def check_member(
    info: zipfile.ZipInfo,
    where: Any,
    error: type[Exception],
    archive_size: int | None = None,
    limit_error: type[Exception] | None = None,
) -> None:
    """Refuse a member whose header declares more than its ratio cap allows (a zip bomb), or
    a compressed size larger than the archive holds."""
    name = info.filename[:200]
    if archive_size is not None and info.compress_size > archive_size:
        raise error(
            f"{where}: damaged archive (member {name} declares {_size(info.compress_size)} "
            f"compressed, more than the archive's {_size(archive_size)})"
        )
    if info.file_size > ratio_cap(info):
        raise (limit_error or error)(
            f"{where}: member {name} declares {_size(info.file_size)} from "
            f"{_size(info.compress_size)} compressed, more than {MAX_RATIO} times its size "
            "(a zip bomb?); not read"
        )


def _archive_size(zf: zipfile.ZipFile) -> int | None:
    """The archive's size in bytes (None when its file cannot say)."""
    fp = getattr(zf, "fp", None)
    try:
        return os.fstat(fp.fileno()).st_size
    except Exception:  # not a real file (a buffer): its end
        try:
            pos = fp.tell()
            end = fp.seek(0, os.SEEK_END)
            fp.seek(pos)
            return end
        except Exception:
            return None


class BoundedMember:
    """A member opened for reading, counting the bytes it gives: past `limit` (the least of
    its declared size, the caller's cap and its ratio cap) reading raises `error` naming it.
    `tell()` is the count so far."""

    def __init__(
        self,
        zf: zipfile.ZipFile,
        info: zipfile.ZipInfo,
        where: Any,
        error: type[Exception],
        cap: int | None = None,
        what: str | None = None,
        limit_error: type[Exception] | None = None,
    ):
        check_member(info, where, error, None, limit_error)
        self.info, self.where, self.error = info, where, error
        self.limit_error = limit_error or error
        self.what = what or f"member {info.filename[:200]}"
        self.cap = cap
        limits = (info.file_size, ratio_cap(info)) + (() if cap is None else (cap,))
        self.limit = min(limits)
        self.count = 0
        self._f = zf.open(info)

    def read(self, n: int = -1) -> bytes:
        room = self.limit + 1 - self.count  # one byte past the limit tells it was passed
        data = self._f.read(room if n is None or n < 0 else min(n, room))
        self.count += len(data)
        if self.count > self.limit:
            self._over()
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _over(self):
        if self.cap is not None and self.count > self.cap:
            raise self.limit_error(
                f"{self.where}: {self.what} is larger than {_size(self.cap)}, the limit for it; "
                "not read"
            )
        if self.count > ratio_cap(self.info):
            raise self.limit_error(
                f"{self.where}: {self.what} inflates to more than {MAX_RATIO} times its "
                f"compressed size (a zip bomb?); not read"
            )
        raise self.error(
            f"{self.where}: damaged archive ({self.what} holds more than the "
            f"{_size(self.info.file_size)} its header declares)"
        )

    def tell(self) -> int:
        return self.count

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> BoundedMember:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_member(
    zf: zipfile.ZipFile,
    name: str | zipfile.ZipInfo,
    where: Any,
    error: type[Exception],
    cap: int | None = None,
    what: str | None = None,
    chunk: int = 16 << 20,
    limit_error: type[Exception] | None = None,
) -> bytes:
    """A whole member, read in chunks into one buffer within its limits (see
    `BoundedMember`)."""
    info = name if isinstance(name, zipfile.ZipInfo) else zf.getinfo(name)
    with BoundedMember(zf, info, where, error, cap, what, limit_error) as f:
        buffer = bytearray(min(f.limit, info.file_size))
        view, done = memoryview(buffer), 0
        while done < len(buffer):
            data = f.read(min(chunk, len(buffer) - done))
            if not data:
                break
            view[done : done + len(data)] = data
            done += len(data)
        f.read(1)  # one byte more than declared raises (zipfile gives none: defence in depth)
        del view
    if done != len(buffer):
        raise error(f"{where}: damaged archive ({f.what} is shorter than its header declares)")
    return bytes(buffer)
