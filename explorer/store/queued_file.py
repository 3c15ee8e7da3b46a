"""`QueuedFile`: a binary file whose writes and seeks are done, in order, by a thread of its
own. `save` hands one to `zipfile`, which computes each member's CRC-32 in the thread that
writes: with the file's own thread copying the previous chunk into the file meanwhile, the
CRC-32 of a model's weights (about 0.3 s per GB) overlaps their write instead of adding to
it. Both zlib's `crc32` and a file's `write` release the GIL on large buffers."""

from __future__ import annotations

import queue
import threading
from typing import Any, BinaryIO

_STOP = ("stop", None)


class QueuedFile:
    """A write-only, seekable view of `raw` (an open binary file) for `zipfile.ZipFile`:
    `write` and `seek` are queued and return at once (at most `depth` wait), `tell` answers
    from the position they lead to, and `flush` and `close` wait until all are done. A
    failed write (a full disk) is raised by the next call, and by `close`; what was queued
    after it is not written.

    A buffer is held until it is written, so a writable one (a `bytearray`, an array's
    memory) is copied first; a read-only one (`bytes`, `memoryview.toreadonly()`) is not."""

    def __init__(self, raw: BinaryIO, depth: int = 8) -> None:
        self._raw = raw
        self._pos = raw.tell()
        self._error: BaseException | None = None
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._run, name="passlens-save", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            op, arg = self._queue.get()
            try:
                if op == "stop":
                    return
                if self._error is None:
                    if op == "write":
                        self._raw.write(arg)
                    else:
                        self._raw.seek(arg)
            except BaseException as e:  # raised again in the caller's thread
                self._error = e
            finally:
                self._queue.task_done()

    def _put(self, op: str, arg: Any) -> None:
        self._raise()
        if not self._thread.is_alive():
            raise ValueError("write to a closed QueuedFile")
        self._queue.put((op, arg))

    def _raise(self) -> None:
        if self._error is not None:
            raise OSError(f"writing failed: {self._error}") from self._error

    def write(self, data: Any) -> int:
        """Queue `data` (any bytes-like object) at the current position; returns its size."""
        view = memoryview(data)
        if not view.readonly:
            data = view.tobytes()
        n = view.nbytes
        self._put("write", data)
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        """Move to `offset` (from the start; from the current position with `whence` 1);
        from the end (`whence` 2) waits for the queue first."""
        if whence == 2:
            self.flush()
            self._pos = self._raw.seek(offset, 2)
            return self._pos
        pos = offset + (self._pos if whence == 1 else 0)
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._put("seek", pos)
        self._pos = pos
        return pos

    def tell(self) -> int:
        """The position the queued writes and seeks lead to."""
        return self._pos

    def seekable(self) -> bool:
        """True: `zipfile` then writes each member's header after its data, as for a file."""
        return True

    def flush(self) -> None:
        """Wait until everything queued is written, then flush `raw`."""
        self._queue.join()
        self._raise()
        self._raw.flush()

    def close(self) -> None:
        """Write what is queued and stop the thread (`raw` stays open: it is the caller's)."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        self._raise()
        self._raw.flush()

    def __enter__(self) -> QueuedFile:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self.close()
        else:  # the body's error is the one to see; stop the thread without raising
            if self._thread.is_alive():
                self._queue.put(_STOP)
                self._thread.join()
