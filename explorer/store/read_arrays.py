"""Reading a trace file's arrays and its ONNX source model within the load budget (the part of
`explorer.store.read` that allocates): an `.npy` member is read only once its header agrees
with what ir.json declares, in chunks into one buffer; a member named by several entries is
read once and shared; arrays with the same values (a transpose of a transpose) are made once;
everything made is counted against `MAX_LOAD_BYTES` before it is allocated, and an overrun is
a LimitError naming what and how much."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from compiler import LimitError
from compiler.ir import DType
from explorer.store.fileformat import (
    MAX_ARRAY_BYTES,
    MAX_LOAD_BYTES,
    MAX_SOURCE_BYTES,
    TraceFileError,
)
from explorer.store.zipread import BoundedMember, read_member


class ArrayReading:
    """The arrays and source model of a trace file, for `read._Reader` (which holds `zf`,
    `path`, `array_specs` and `ref`)."""

    zf: Any
    path: Any
    array_specs: list

    def init_arrays(self) -> None:
        """Empty tables, nothing loaded yet."""
        self.arrays: dict[int, np.ndarray] = {}
        self.members: dict[str, np.ndarray] = {}  # each .npy member read once, then shared
        # what each array is: (its root member, its axes in the root's, the casts on the way,
        # its dtype); arrays with the same values (a transpose of a transpose, a derivation
        # named twice) are made once and shared
        self.keys: dict[int, tuple] = {}
        self.made: dict[tuple, np.ndarray] = {}
        self.loaded = 0  # bytes materialised so far (the load budget, MAX_LOAD_BYTES)

    def ref(self, table: list, i: Any, what: str) -> Any:  # pragma: no cover - the reader's
        raise NotImplementedError

    def spend(self, nbytes: int, what: str) -> None:
        """Count `nbytes` about to be materialised for `what` against the load budget,
        before allocating them: a LimitError naming what and how much past the budget."""
        if self.loaded + nbytes > MAX_LOAD_BYTES:
            raise LimitError(
                f"{self.path}: {what} ({_size(nbytes)}) would bring what loading this trace "
                f"materialises to {_size(self.loaded + nbytes)}, over the "
                f"{_size(MAX_LOAD_BYTES)} budget for one trace; not read"
            )
        self.loaded += nbytes

    def array(self, i: Any) -> np.ndarray:
        """Array `i` of the table (read-only), read or derived the first time it is asked
        for, within MAX_ARRAY_BYTES and the load budget. A chain of derived arrays (each
        from an earlier one) is made from its oldest link up, in a loop: a file's chain may be
        as long as its table, and nothing here recurses over it."""
        if i in self.arrays:
            return self.arrays[i]
        chain = [i]
        while True:
            spec = self.ref(self.array_specs, chain[-1], "array reference")
            recipe = spec.get("derived") if isinstance(spec, dict) else None
            source = recipe.get("from") if isinstance(recipe, dict) else None
            if (
                isinstance(source, bool)
                or not isinstance(source, int)
                or not 0 <= source < chain[-1]
                or source in self.arrays
            ):
                break  # a stored array, a made one, or a bad link that _array reports
            chain.append(source)
        for j in reversed(chain[1:]):
            self._array(j)
        return self._array(i)

    def _array(self, i: Any) -> np.ndarray:
        """Array `i`, whose source (if derived) is made already or is reported bad."""
        if i in self.arrays:
            return self.arrays[i]
        spec = self.ref(self.array_specs, i, "array reference")
        dtype = DType.of(spec["dtype"])
        shape = tuple(int(d) for d in spec["shape"])
        if any(d < 0 for d in shape) or _nbytes(shape, dtype) > MAX_ARRAY_BYTES:
            raise LimitError(
                f"{self.path}: array {i} declares shape {list(shape)} ({dtype.name}), over "
                f"the {MAX_ARRAY_BYTES >> 30} GiB limit for one array; not read"
            )
        recipe = spec.get("derived")
        if recipe is not None:
            source = recipe["from"]
            if isinstance(source, bool) or not isinstance(source, int) or not 0 <= source < i:
                raise TraceFileError(
                    f"{self.path}: damaged passlens trace file (array {i} "
                    f"derived from array {source!r})"
                )
            arr = self.array(source)
            root, order, casts, _ = self.keys[source]
            if arr.size != math.prod(shape):
                raise TraceFileError(
                    f"{self.path}: damaged passlens trace file (array {i} of shape "
                    f"{list(shape)} derived from array {source} of shape {list(arr.shape)})"
                )
            axes = None
            if recipe.get("axes") is not None:
                axes = [int(a) for a in recipe["axes"]]
                if sorted(axes) != list(range(arr.ndim)):
                    raise TraceFileError(
                        f"{self.path}: damaged passlens trace file (array {i}: axes {axes} "
                        f"are not a permutation of {arr.ndim} axes)"
                    )
                order = tuple(order[a] for a in axes)  # this array's axes, in the root's
            if recipe.get("cast"):
                casts = (*casts, dtype.name)
            key = (root, order, casts, dtype.name)
            made = self.made.get(key)
            if made is not None and made.shape == shape:  # the same values made before
                arr = made
            else:
                if axes is not None or recipe.get("cast"):  # a new buffer
                    self.spend(_nbytes(shape, dtype), f"array {i} (derived from array {source})")
                if axes is not None:
                    arr = arr.transpose(axes)
                if recipe.get("cast"):
                    arr = arr.astype(dtype.numpy)
                arr = np.asarray(arr, order="C")
            what = f"array {i}"
        else:
            what = str(spec["member"])
            arr = self.members.get(what)
            if arr is None:
                self.spend(_nbytes(shape, dtype), f"array {i} ({what})")
                arr = self.members[what] = self.stored_array(what, dtype, shape)
            key = (what, tuple(range(len(shape))), (), dtype.name)
        if _as_bits(dtype, arr.dtype):
            arr = arr.view(dtype.numpy)
        if arr.dtype != dtype.numpy or arr.shape != shape:
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file ({what} holds "
                f"{arr.dtype}{list(arr.shape)}, expected {dtype.name}{list(shape)})"
            )
        if arr.flags.writeable:
            arr.flags.writeable = False
        self.arrays[i] = arr
        self.keys[i] = key
        self.made.setdefault(key, arr)
        return arr

    def stored_array(self, member: Any, dtype: DType, shape: tuple) -> np.ndarray:
        """An `.npy` member, read only once its header agrees with the declared dtype and
        shape and the member holds exactly that many bytes (no header can make it allocate
        more than the file holds)."""
        info = self.zf.getinfo(str(member))
        with BoundedMember(self.zf, info, self.path, TraceFileError) as f:
            fmt = np.lib.format
            version = fmt.read_magic(f)
            readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
            if version not in readers:
                raise TraceFileError(f"{self.path}: {member} has npy format version {version}")
            stored_shape, fortran, stored = readers[version](f, max_header_size=10_000)
            want = np.dtype(dtype.numpy)
            if _as_bits(dtype, stored):
                want = stored  # bfloat16, float8, int4, ... are stored as their bits
            if tuple(stored_shape) != shape or stored != want or stored.hasobject:
                raise TraceFileError(
                    f"{self.path}: damaged passlens trace file ({member} holds "
                    f"{stored}{list(stored_shape)}, expected {dtype.name}{list(shape)})"
                )
            nbytes = _nbytes(shape, dtype)
            if info.file_size - f.tell() != nbytes:
                raise TraceFileError(
                    f"{self.path}: damaged passlens trace file ({member} holds "
                    f"{info.file_size - f.tell()} bytes of data, its header says {nbytes})"
                )
            buffer = np.empty(nbytes, np.uint8)  # read in chunks: no second copy of the data
            view, done = memoryview(buffer), 0
            while done < nbytes:
                chunk = f.read(min(_CHUNK, nbytes - done))
                if not chunk:
                    break
                view[done : done + len(chunk)] = chunk
                done += len(chunk)
        if done != nbytes:
            raise TraceFileError(f"{self.path}: damaged passlens trace file ({member} is short)")
        arr = buffer.view(stored).reshape(shape, order="F" if fortran else "C")
        return np.asarray(arr, order="C")

    def source_bytes(self, member: Any) -> bytes:
        """The ONNX source member, read in chunks up to its cap and the load budget: refused
        at once when the size the zip declares is over them or over its ratio cap (a zip
        bomb), and never read past the size declared (see `explorer.store.zipread`)."""
        name = str(member)
        cap = min(MAX_SOURCE_BYTES, MAX_LOAD_BYTES - self.loaded)
        info = self.zf.getinfo(name)
        declared = info.file_size
        if declared > cap:  # refused at once when the zip says so; else counted as read
            self.spend(declared, f"the ONNX source model {name}")
            raise LimitError(
                f"{self.path}: the ONNX source model {name} is {_size(declared)}, over "
                f"{_size(MAX_SOURCE_BYTES)}, the limit for it; not read"
            )
        self.spend(declared, f"the ONNX source model {name}")
        return read_member(
            self.zf,
            info,
            self.path,
            TraceFileError,
            cap,
            f"the ONNX source model {name}",
            _CHUNK,
            limit_error=LimitError,
        )


def _as_bits(dtype: DType, stored: np.dtype) -> bool:
    """Whether values of `dtype` (an ml_dtypes type) are stored as `stored`, their bits."""
    bits = dtype is DType.bfloat16 or dtype.is_storage_only
    return bits and stored.itemsize == dtype.itemsize and stored.kind in "uV"


_CHUNK = 16 << 20  # bytes read from a member at a time


def _size(nbytes: int) -> str:
    """`1.5 GiB`, `300.0 MiB`, `2.0 KiB`, `12 bytes`."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes:,} bytes"


def _nbytes(shape: tuple, dtype: DType) -> int:
    return math.prod(shape) * np.dtype(dtype.numpy).itemsize
