"""The parameters of two steps compared by name and by content: added, removed, resized,
cast, values changed, renamed, duplicated (same content as another parameter), permuted, and
broadcast copies (N copies of another parameter, or of its transpose, along leading dims).
Content is compared through cheap fingerprints first (first and last element, a few sampled
elements); full comparisons are made only for candidates that pass them. `diff_params` is
what `explorer.diff` reports as a step's parameter changes."""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from compiler.ir import Constant
from explorer.fmt import format_bytes
from explorer.graph import Param

_SAMPLES = 32  # sampled elements per fingerprint
_WIDE_SAMPLES = 4096  # sampled elements checking a cast past the budget
CAST_CHECK_BUDGET = 1 << 23  # elements per diff whose casts and permutations are checked in full
_SHOWN = 12  # lines per section in the text summary

DTYPE_ALIASES = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "bool",
    "float8_e4m3fn": "f8e4m3fn",
    "float8_e4m3fnuz": "f8e4m3fnuz",
    "float8_e5m2": "f8e5m2",
    "float8_e5m2fnuz": "f8e5m2fnuz",
    "float8_e8m0fnu": "f8e8m0",
    "float4_e2m1fn": "f4e2m1",
    "int4": "i4",
    "uint4": "u4",
    "int2": "i2",
    "uint2": "u2",
}
"""Short names of dtypes, as the diff and the summaries write them."""


@dataclass
class ParamResize:
    """A parameter kept under its name with another shape."""

    name: str
    before: tuple
    after: tuple
    nbytes_before: int
    nbytes_after: int

    @property
    def message(self) -> str:
        """One line for people."""
        return (
            f"`{self.name}` resized {_shape(self.before)} -> {_shape(self.after)} "
            f"({format_bytes(self.nbytes_before)} -> {format_bytes(self.nbytes_after)})"
        )


@dataclass
class ParamCast:
    """A parameter whose values were cast to another dtype (same shape, values within the
    lower precision's tolerance); `source` is the parameter it was cast from (the same name
    when the cast kept it). `checked` says how the values were compared: `all` of them,
    a `sample` of them (past `CAST_CHECK_BUDGET` elements per diff) or `none` (no data,
    e.g. a weight passed as a parameter)."""

    name: str
    source: str
    before: str
    after: str
    checked: str = "all"

    @property
    def message(self) -> str:
        """One line for people: `fc.weight cast f32 -> f16`."""
        text = f"{self.source} cast {self.before} -> {self.after}"
        return text if self.name == self.source else f"{text} (now `{self.name}`)"


@dataclass
class ParamSame:
    """A parameter with the same content (dtype, shape, values) as `source`: a duplicate
    when both are present after, a rename when the source is gone."""

    name: str
    source: str
    nbytes: int

    @property
    def message(self) -> str:
        """One line for people."""
        return (
            f"`{self.name}` has the same content as `{self.source}` ({format_bytes(self.nbytes)})"
        )


@dataclass
class ParamCopy:
    """A parameter whose data is `copies` copies of `source` (or of `source` with its
    axes permuted by `axes`) along the leading dims `lead`; with one copy, a permuted or
    reshaped form of the source. `checked`: `all` values compared, or a `sample` (a
    single permuted copy past `CAST_CHECK_BUDGET` elements per diff)."""

    name: str
    source: str
    lead: tuple
    copies: int
    axes: tuple | None
    nbytes: int
    source_nbytes: int
    checked: str = "all"

    @property
    def transposed(self) -> bool:
        """Whether the copies are of a permutation of the source's axes."""
        return self.axes is not None and tuple(self.axes) != tuple(range(len(self.axes)))

    @property
    def message(self) -> str:
        """One line for people: `x is 1 × 56 = 56 copies of `linear.weight` (...)`."""
        how = (
            "transposed"
            if self.axes is not None and len(self.axes) == 2
            else f"axes {list(self.axes or ())}"
        )
        if self.copies == 1:
            form = how if self.transposed else "reshaped"
            return f"`{self.name}` is `{self.source}` {form} ({format_bytes(self.nbytes)})"
        count = " × ".join(str(d) for d in self.lead)
        if len(self.lead) > 1:
            count += f" = {self.copies}"
        extra = f", {how}" if self.transposed else ""
        sizes = f"{self.copies} x {format_bytes(self.source_nbytes)} = {format_bytes(self.nbytes)}"
        return f"`{self.name}` is {count} copies of `{self.source}` ({sizes}{extra})"


@dataclass
class ParamGrowth:
    """A parameter that made the total grow: its bytes and the net bytes it added (after
    subtracting the parameter it replaced, if any), and why."""

    name: str
    nbytes: int
    delta: int
    reason: str


@dataclass
class ParamDiff:
    """How the parameters changed between two graph models."""

    added: list[Param] = field(default_factory=list)
    removed: list[Param] = field(default_factory=list)
    resized: list[ParamResize] = field(default_factory=list)
    cast: list[ParamCast] = field(default_factory=list)
    values_changed: list[str] = field(default_factory=list)
    renamed: list[ParamSame] = field(default_factory=list)
    duplicated: list[ParamSame] = field(default_factory=list)
    broadcast: list[ParamCopy] = field(default_factory=list)
    permuted: list[ParamCopy] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    growth: list[ParamGrowth] = field(default_factory=list)

    @property
    def bytes_delta(self) -> int:
        """Bytes after minus bytes before."""
        return self.bytes_after - self.bytes_before

    @property
    def count(self) -> int:
        """How many parameters (by name, before or after) were added, removed, resized, cast,
        renamed or given new values."""
        names = {p.name for p in (*self.added, *self.removed)}
        names.update(x.name for x in (*self.resized, *self.cast, *self.renamed))
        names.update(x.source for x in (*self.cast, *self.renamed))
        return len(names | set(self.values_changed))

    @property
    def is_empty(self) -> bool:
        """Whether no parameter changed."""
        return self.count == 0

    def messages(self) -> list[str]:
        """One line per finding, the broadcast copies (bloat) first."""
        out = [c.message for c in self.broadcast]
        out += [f"{s.message}: a duplicate" for s in self.duplicated]
        out += [r.message for r in self.resized]
        out += [c.message for c in self.cast]
        out += [f"`{s.source}` is now `{s.name}`" for s in self.renamed]
        out += [c.message for c in self.permuted]
        out += [f"`{n}` has new values" for n in self.values_changed]
        explained = {
            x.name
            for x in (*self.broadcast, *self.duplicated, *self.cast, *self.renamed, *self.permuted)
        }
        sources = {x.source for x in (*self.cast, *self.renamed, *self.permuted, *self.broadcast)}
        out += [
            f"+ `{p.name}` {_shape(p.shape)} {p.dtype} ({format_bytes(p.nbytes)})"
            for p in self.added
            if p.name not in explained
        ]
        out += [
            f"- `{p.name}` {_shape(p.shape)} {p.dtype} ({format_bytes(p.nbytes)})"
            for p in self.removed
            if p.name not in sources
        ]
        return out


def diff_params(pa: dict[str, Param], pb: dict[str, Param]) -> ParamDiff:
    """How the parameters changed from `pa` to `pb` (graph-model params, keyed by name:
    a weight's name, or `@function/name` for a weight passed as a parameter)."""
    pa, pb = _keyed(pa), _keyed(pb)
    out = ParamDiff(
        bytes_before=sum(p.nbytes for p in pa.values()),
        bytes_after=sum(p.nbytes for p in pb.values()),
    )
    # the same weight object under another key (a weight parameter moved to another function)
    a_by_obj = {id(p.obj): n for n, p in pa.items() if p.obj is not None}
    moved = {}
    for n, p in pb.items():
        src = a_by_obj.get(id(p.obj)) if p.obj is not None and n not in pa else None
        if src is not None and src not in pb:
            moved[n] = src
            out.renamed.append(ParamSame(n, src, p.nbytes))
    out.added = [p for n, p in pb.items() if n not in pa and n not in moved]
    out.removed = [p for n, p in pa.items() if n not in pb and n not in moved.values()]
    budget = [CAST_CHECK_BUDGET]  # elements left to check casts in full
    fresh: list[Param] = list(out.added)  # parameters whose content is new after
    replaced: dict[str, int] = {}  # name after -> bytes of what it replaced
    for name in pa.keys() & pb.keys():
        a, b = pa[name], pb[name]
        if a.obj is not None and a.obj is b.obj:
            continue
        if tuple(a.shape) != tuple(b.shape):
            out.resized.append(
                ParamResize(name, tuple(a.shape), tuple(b.shape), a.nbytes, b.nbytes)
            )
            fresh.append(b)
            replaced[name] = a.nbytes
        elif a.dtype != b.dtype:
            da, db = _data(a), _data(b)
            checked = "none" if da is None or db is None else _cast_equal(da, db, budget)
            if checked:
                out.cast.append(ParamCast(name, name, a.dtype, b.dtype, checked))
            else:
                out.values_changed.append(name)
        else:
            da, db = _data(a), _data(b)
            if da is not None and db is not None and not _same_content(da, db):
                out.values_changed.append(name)
                fresh.append(b)
                replaced[name] = a.nbytes
    out.resized.sort(key=lambda r: list(pb).index(r.name))
    _explain_fresh(out, pa, pb, fresh, replaced, budget)
    out.broadcast.sort(key=lambda c: -c.nbytes)  # the biggest bloat first
    growth = []
    for p in fresh if out.bytes_delta > 0 else ():
        delta = p.nbytes - replaced.get(p.name, 0)
        if delta > 0:
            growth.append(ParamGrowth(p.name, p.nbytes, delta, _reason(out, p.name)))
    out.growth = sorted(growth, key=lambda g: (-g.delta, g.name))
    return out


def _keyed(params: dict[str, Param]) -> dict[str, Param]:
    """Params named by their key, dtypes in the IR's short names (`float32` -> `f32`)."""
    out = {}
    for k, p in params.items():
        dtype = DTYPE_ALIASES.get(p.dtype, p.dtype)
        out[k] = (
            p if p.name == k and p.dtype == dtype else dataclasses.replace(p, name=k, dtype=dtype)
        )
    return out


def _reason(out: ParamDiff, name: str) -> str:
    for x in (
        *out.broadcast,
        *out.duplicated,
        *out.resized,
        *out.cast,
        *out.renamed,
        *out.permuted,
    ):
        if x.name == name:
            return x.message
    return "new"


def _data(p: Param) -> np.ndarray | None:
    return p.obj.data if isinstance(p.obj, Constant) else None


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_CHUNK = 1 << 24  # elements compared at a time (bounds the temporary boolean array)


def _bits(x: np.ndarray) -> np.ndarray:
    """The array's bits as unsigned integers: bitwise comparison is the fastest, and treats
    two NaNs with the same bits as equal."""
    u = _UINT.get(x.dtype.itemsize)
    return x.view(u) if u is not None and x.dtype.kind != "O" else x


def _at(x: np.ndarray, flat_index: np.ndarray) -> np.ndarray:
    """Elements at C-order flat positions, without copying a non-contiguous array."""
    if x.flags.c_contiguous or x.ndim <= 1:
        return x.reshape(-1)[flat_index]
    return x[np.unravel_index(flat_index, x.shape)]


def _sample_index(n: int, k: int = _SAMPLES) -> np.ndarray:
    """`k` fixed, spread-out positions in `range(n)` (first and last included)."""
    if n <= k:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, k).astype(np.int64))


def _same_view(x: np.ndarray, y: np.ndarray) -> bool:
    """The same memory seen the same way (a folded view of a weight): equal without looking."""
    return (
        x.shape == y.shape
        and x.strides == y.strides
        and x.dtype == y.dtype
        and x.__array_interface__["data"][0] == y.__array_interface__["data"][0]
    )


def _squeezed(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays without their leading 1-dims (views)."""
    while x.ndim > 1 and x.shape[0] == 1:
        x, y = x[0], y[0]
    return x, y


def _full_equal(x: np.ndarray, y: np.ndarray) -> bool:
    """Bitwise comparison of two arrays of one shape, in chunks (the only full pass over
    data, made only for candidates that passed the sampled fingerprints)."""
    x, y = _squeezed(x, y)  # so chunks are rows
    if _same_view(x, y):
        return True
    rows = x.shape[0] if x.ndim else 1
    step = max(1, _CHUNK // max(1, x.size // max(rows, 1)))
    if x.ndim == 0 or step >= rows:
        return bool(np.array_equal(_bits(x), _bits(y)))
    return all(
        np.array_equal(_bits(x[i : i + step]), _bits(y[i : i + step])) for i in range(0, rows, step)
    )


def _same_content(x: np.ndarray, y: np.ndarray) -> bool:
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    idx = _sample_index(x.size)
    if not np.array_equal(_bits(_at(x, idx)), _bits(_at(y, idx))):
        return False
    return _full_equal(x, y)


def _cast_close(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether `x` and `y` (same shape, different dtypes) hold the same values up to the
    lower precision: the wider one cast to the narrower one's dtype, then compared bitwise, or
    within a couple of units in the last place (another rounding)."""
    lo, hi = (x, y) if x.dtype.itemsize <= y.dtype.itemsize else (y, x)
    if lo.dtype.kind == "b" or hi.dtype.kind == "b":
        return bool(np.array_equal(lo.astype(bool), hi.astype(bool)))
    narrowed = hi.astype(lo.dtype)
    if np.array_equal(_bits(narrowed), _bits(lo)):
        return True
    if not _has_nan(lo.dtype):
        return False
    eps = float(np.finfo(lo.dtype).eps) if lo.dtype.kind == "f" else 2.0**-7
    return bool(
        np.allclose(
            narrowed.astype(np.float32), lo.astype(np.float32), rtol=2 * eps, atol=0, equal_nan=True
        )
    )


def _has_nan(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def _cast_equal(x: np.ndarray, y: np.ndarray, budget: list[int]) -> str:
    """How `y` was found to be `x` cast (`all` values compared, or a `sample` of them
    once `budget[0]` elements have been spent), or "" if it is not."""
    if x.shape != y.shape:
        return ""
    idx = _sample_index(x.size)
    if not _cast_close(_at(x, idx), _at(y, idx)):
        return ""
    if x.size > budget[0]:
        wide = _sample_index(x.size, _WIDE_SAMPLES)
        return "sample" if _cast_close(_at(x, wide), _at(y, wide)) else ""
    budget[0] -= x.size
    return "all" if _full_cast_close(x, y) else ""


def _full_cast_close(x: np.ndarray, y: np.ndarray) -> bool:
    """`_cast_close` over whole arrays, in chunks of rows."""
    while x.ndim > 1 and x.shape[0] == 1:
        x, y = x[0], y[0]
    rows = x.shape[0] if x.ndim else 1
    step = max(1, _CHUNK // max(1, x.size // max(rows, 1)))
    if x.ndim == 0 or step >= rows:
        return _cast_close(x, y)
    return all(_cast_close(x[i : i + step], y[i : i + step]) for i in range(0, rows, step))


def _explain_fresh(
    out: ParamDiff, pa, pb, fresh: list[Param], replaced: dict[str, int], budget: list[int]
) -> None:
    """Say where each new parameter's content came from: a duplicate or rename of another,
    a cast of a removed one, a permutation, or broadcast copies of one."""
    if not fresh:
        return
    removed = {p.name: p for p in out.removed}
    # every parameter with data that a fresh one could come from, by (dtype, first, last)
    pool: dict[tuple, list[tuple[str, Param, bool]]] = {}
    for name, p in pb.items():
        d = _data(p)
        if d is not None and d.size:
            pool.setdefault(_ends_key(d), []).append((name, p, True))
    for name, p in pa.items():
        d = _data(p)
        if d is not None and d.size and (name not in pb or pb[name].obj is not p.obj):
            pool.setdefault(_ends_key(d), []).append((name, p, False))
    by_shape: dict[tuple, list[Param]] = {}
    for p in out.removed:
        by_shape.setdefault(tuple(p.shape), []).append(p)
    consumed: set[str] = set()

    def take(p: Param, source: str) -> None:
        """`p` replaces `source` when that is gone (for the net growth)."""
        if source in removed and source not in consumed and p.name not in replaced:
            consumed.add(source)
            replaced[p.name] = removed[source].nbytes

    for p in fresh:
        data = _data(p)
        if data is None or data.size == 0:
            # no data (a weight passed as a parameter): a cast is all that can be said
            src, _ = _cast_candidate(p, by_shape, consumed, None)
            if src is not None and p.name not in pa:
                out.cast.append(ParamCast(p.name, src.name, src.dtype, p.dtype, "none"))
                take(p, src.name)
            continue
        cands = [c for c in pool.get(_ends_key(data), []) if not (c[0] == p.name and c[2])]
        # a source named in the new name first, then one still there after, then the biggest
        cands.sort(key=lambda c: (not p.name.startswith(c[0] + "."), not c[2], -c[1].nbytes))
        found = False
        for name, q, after in cands:
            qd = _data(q)
            if qd.size < 2 or data.size % qd.size:
                continue
            if qd.size == data.size and qd.shape == data.shape and _same_content(qd, data):
                same = ParamSame(p.name, name, p.nbytes)
                (out.duplicated if after else out.renamed).append(same)
                take(p, name)
                found = True
                break
            copy = _copies_of(data, qd, budget)
            if copy is not None:
                lead, axes, checked = copy
                pc = ParamCopy(
                    p.name, name, lead, data.size // qd.size, axes, p.nbytes, q.nbytes, checked
                )
                (out.permuted if pc.copies == 1 else out.broadcast).append(pc)
                take(p, name)
                found = True
                break
        if not found and p.name not in pa:
            src, checked = _cast_candidate(p, by_shape, consumed, budget)
            if src is not None:
                out.cast.append(ParamCast(p.name, src.name, src.dtype, p.dtype, checked))
                take(p, src.name)


def _ends_key(d: np.ndarray) -> tuple:
    """The cheapest fingerprint: dtype, first and last element. Copies of an array along
    leading dims, and any permutation of its axes, start and end with the same elements."""
    return (d.dtype.str, d.flat[0].tobytes(), d.flat[d.size - 1].tobytes())


def _cast_candidate(
    p: Param, by_shape, consumed: set[str], budget: list | None
) -> tuple[Param | None, str]:
    """A removed parameter of the same shape and another dtype whose values `p` holds."""
    cands = [
        q for q in by_shape.get(tuple(p.shape), []) if q.dtype != p.dtype and q.name not in consumed
    ]
    cands.sort(key=lambda q: not (p.name.startswith(q.name + ".") or p.name == q.name))
    for q in cands:
        if budget is None:  # no data to compare: only a name or a single candidate says it
            if p.name.startswith(q.name + ".") or len(cands) == 1:
                return q, "none"
            continue
        qd, pd = _data(q), _data(p)
        checked = _cast_equal(qd, pd, budget) if qd is not None and pd is not None else ""
        if checked:
            return q, checked
    return None, ""


def _copies_of(
    data: np.ndarray, src: np.ndarray, budget: list[int]
) -> tuple[tuple, tuple | None, str] | None:
    """`(lead dims, axes, checked)` when `data` is copies of `src` (its axes permuted
    by `axes`; None: the same elements in C order) along its leading dims; else None.
    Several copies (bloat) are always compared in full; a single permuted copy in full while
    `budget` lasts (or when it is a view of the same memory), else on a wide sample."""
    n, q = data.size // src.size, src.size
    # the trailing dims of ``data`` holding one copy (leading 1s count as copies' dims)
    split = next((j for j in range(data.ndim, -1, -1) if math.prod(data.shape[j:]) == q), None)
    if split is None:
        return None
    lead, row_shape = tuple(data.shape[:split]), tuple(data.shape[split:])
    transforms: list[tuple | None] = []
    if len(row_shape) == src.ndim:
        perms = (
            itertools.permutations(range(src.ndim)) if src.ndim <= 5 else [tuple(range(src.ndim))]
        )
        transforms += [ax for ax in perms if tuple(src.shape[i] for i in ax) == row_shape]
    transforms.append(None)
    idx = _sample_index(q)
    got = [_bits(_at(data, r * q + idx)) for r in sorted({0, n // 2, n - 1})]
    for axes in transforms:
        if n == 1 and row_shape == src.shape and (axes is None or axes == tuple(range(src.ndim))):
            continue  # the same array: a duplicate, which the caller checks
        view = src.transpose(axes) if axes is not None else src
        want = _bits(_at(view, idx))
        if not all(np.array_equal(g, want) for g in got):
            continue
        target = view.reshape(row_shape)
        if n == 1 and not _same_view(*_squeezed(data, np.broadcast_to(target, data.shape))):
            if data.size > budget[0]:
                wide = _sample_index(q, _WIDE_SAMPLES)
                if np.array_equal(_bits(_at(data, wide)), _bits(_at(view, wide))):
                    return ((), axes, "sample")
                continue
            budget[0] -= data.size
        if n > 1 and not target.flags.c_contiguous:
            target = np.asarray(target, order="C")  # once, so each copy compares contiguously
        if _full_equal(data, np.broadcast_to(target, data.shape)):
            return (lead if n > 1 else (), axes, "all")
    return None


def _shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


__all__ = [
    "CAST_CHECK_BUDGET",
    "DTYPE_ALIASES",
    "ParamCast",
    "ParamCopy",
    "ParamDiff",
    "ParamGrowth",
    "ParamResize",
    "ParamSame",
    "diff_params",
]
