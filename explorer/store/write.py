"""`save(trace, path)`: a trace as a `.passlens` file (the format is described in
`explorer.store`). It reads the trace through its attributes only, so it does not import
explorer.trace (which calls it from `Trace.save`)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from compiler.ir import (
    NO_PROVENANCE,
    Block,
    Call,
    Constant,
    DType,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Provenance,
    Tuple,
    TupleGetItem,
    Type,
    Var,
    format_attr,
    operands,
)
from explorer.adapters import get_adapter
from explorer.store.checks import MEMBER as REPORT_MEMBER
from explorer.store.checks import ReportWriter
from explorer.store.errors import encode_error
from explorer.store.fileformat import FOREIGN_VERSION, FORMAT, PROV_FIELDS, VERSION
from explorer.store.graphs import encode_foreign, encode_graph, encode_ref
from explorer.store.queued_file import QueuedFile
from explorer.store.rewrites import encode_rewrites

if TYPE_CHECKING:
    from explorer.trace import Step, Trace


def new_file_mode() -> int:
    """The mode an ordinary new file gets (0666 less the umask: 0644 usually), for a file
    written through `tempfile.mkstemp` (0600) and renamed: what is saved is as readable as
    every other output."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def save(
    trace: Trace, path: str | os.PathLike, include_source: bool = False, inputs: bool = False
) -> Path:
    """Write `trace` to `path` (a `.passlens` zip of JSON and `.npy` arrays), with its
    last check report (`trace.report`), if any: findings, each step's numbers, per-node and
    per-layer errors.

    With `inputs` the values that check ran on are stored too (`trace.report.inputs`,
    up to 256 MiB; more is left out with a warning), so the loaded trace can be checked
    again on them: `trace.check(trace.report.inputs)`. The example inputs are always
    stored (an input that is one of them is stored once). With `include_source` an ONNX
    source model is stored too (its bytes), so a loaded trace can still run onnxruntime as
    the reference; it roughly doubles the file. Returns the path written. The file is
    replaced atomically.
    """
    path = Path(path)
    with _collector_paused():
        writer = _Writer()
        manifest = writer.manifest(trace)
        report = getattr(trace, "report", None)
        report_json = None
        if report is not None:  # before the tables: it adds the nodes and arrays it names
            report_json = ReportWriter(writer, trace).report(report, inputs)
            manifest["report"] = True
        ir = writer.ir_tables()
    source_bytes = _source_bytes(trace) if include_source else None
    if source_bytes is not None:
        manifest["source"] = {"kind": "onnx", "member": "source.onnx"}
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=directory)
    os.fchmod(fd, new_file_mode())  # mkstemp's 0600, as an ordinary new file instead
    try:
        # written through mkstemp's descriptor: opening the name again ("w" truncates) makes
        # ext4 (auto_da_alloc) push the whole file to the disk when it is closed, so `save`
        # would wait for the disk where `torch.save` of a new file returns once its bytes
        # are in the page cache; and by a thread of its own, so the CRC-32 zipfile computes
        # of each chunk overlaps the write of the previous one
        with (
            os.fdopen(fd, "wb") as fp,
            QueuedFile(fp, depth=2) as out,
            zipfile.ZipFile(out, "w", allowZip64=True) as zf,
        ):
            _write_json(zf, "manifest.json", manifest)
            _write_json(zf, "ir.json", ir)
            if report_json is not None:
                _write_json(zf, REPORT_MEMBER, report_json)
            for i, arr in enumerate(writer.arrays):
                if writer.derived[i] is not None:
                    continue
                big = arr.nbytes > (1 << 31) - (1 << 20)
                with zf.open(_array_member(i), "w", force_zip64=big) as f:
                    write_npy(f, _storable(arr))
            if source_bytes is not None:
                zf.writestr("source.onnx", source_bytes)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


@contextlib.contextmanager
def _collector_paused():
    """The cyclic garbage collector paused while the tables are built: they are many small
    objects, all alive until the file is written, and a full collection meanwhile walks all
    of the trace's objects too (up to 0.25 s more, on a 16-layer decoder whose tables take
    0.12 s)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# bytes handed to the zip member at a time: zipfile's CRC-32 of one overlaps the write of the
# one before (`QueuedFile`, two chunks queued at most: the one written was read by the CRC-32
# just before, so it is still in the CPU's cache), and a member of a few chunks overlaps most
# of its CRC-32
_NPY_CHUNK = 1 << 22  # (4 MiB)


def write_npy(f, arr: np.ndarray) -> None:
    """`np.lib.format.write_array(f, arr)`, the same bytes: an array laid out whole in
    memory (C or Fortran order, a plain dtype) is written from its memory a slice at a time
    (numpy copies a file object's array into a new 16 MiB buffer per chunk first: half the
    speed of the disk at 1B); any other through numpy."""
    raw = None
    whole = arr.flags.c_contiguous or arr.flags.f_contiguous
    if whole and arr.size and arr.dtype.kind in "biuf?" and arr.dtype.isnative:
        try:
            # a read-only view: no copy, and none in `QueuedFile` either
            raw = memoryview(arr.reshape(-1, order="A")).cast("B").toreadonly()
        except (TypeError, ValueError, BufferError):
            raw = None
    if raw is None:
        np.lib.format.write_array(f, arr, allow_pickle=False)
        return
    np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(arr))
    for k in range(0, len(raw), _NPY_CHUNK):
        f.write(raw[k : k + _NPY_CHUNK])


def _write_json(zf: zipfile.ZipFile, name: str, obj: Any) -> None:
    data = json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()
    zf.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)


def _storable(arr: np.ndarray) -> np.ndarray:
    """bfloat16 and the low-precision types (ml_dtypes types .npy cannot name) are written
    as their bits: uint16 for bfloat16, uint8 for float8 / float4 / int4 / int2."""
    if _dtype_name(arr) == "bfloat16":
        return np.asarray(arr, order="C").view(np.uint16)
    if DType.of(arr.dtype).is_storage_only:
        return np.asarray(arr, order="C").view(np.uint8)
    return arr


def _array_member(i: int) -> str:
    return f"arrays/{i}.npy"


def _source_bytes(trace: Trace) -> bytes | None:
    if trace.frontend != "onnx" or not isinstance(trace.source, dict):
        return None
    proto = trace.source.get("model")
    return proto.SerializeToString() if hasattr(proto, "SerializeToString") else None


class _Writer:
    """Collects the tables: every object once, keyed by identity."""

    def __init__(self) -> None:
        self.types: list[str] = []
        self._type_ids: dict[Type, int] = {}
        self.provs: list[dict] = [{}]
        self._prov_ids: dict[Provenance, int] = {NO_PROVENANCE: 0}
        self.nodes: list[dict] = []
        self._node_ids: dict[int, int] = {}
        self.functions: list[dict] = []
        self._function_ids: dict[int, int] = {}
        self.modules: list[dict] = []
        self._module_ids: dict[int, int] = {}
        self.arrays: list[np.ndarray] = []
        self._array_ids: dict[int, int] = {}
        self._by_fingerprint: dict[tuple, list[int]] = {}  # dtype, shape, sampled bits
        self._alive: list[Any] = []  # keeps every object whose id() is a key alive
        self.derived: list[dict | None] = []  # per array: None (stored) or its recipe
        self._by_size: dict[int, list[int]] = {}  # stored (not derived) arrays by size
        self.foreign_modules: list[dict] = []  # another compiler's modules (explorer.adapters)
        self._foreign_ids: dict[int, int] = {}
        self.refs: list[dict] = []  # the objects of their graph nodes, shared across steps
        self._ref_ids: dict[int, int] = {}

    # ----- manifest -----------------------------------------------------------------------
    def manifest(self, trace: Trace) -> dict:
        adapter = get_adapter(getattr(trace, "compiler", "passlens") or "passlens")
        steps = [self.step(s) for s in trace.steps]
        for rec, s in zip(steps, trace.steps, strict=True):
            if s.kind == "pass":
                saved = adapter.pass_record(s)  # a user's pass: its class, module, ...
                if saved is not None:
                    rec["pass"] = saved
        meta: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "created_by": f"passlens {_version()}",
            "pipeline": str(trace.pipeline or ""),
            "frontend": str(trace.frontend or ""),
            "steps": steps,
            "example_inputs": self.example_inputs(trace.example_inputs),
        }
        compiler = str(getattr(trace, "compiler", "passlens") or "passlens")
        if compiler != "passlens":
            meta["compiler"] = compiler
            meta["version"] = FOREIGN_VERSION
        if trace.skipped or trace.interrupted:
            meta["skipped"] = [dataclasses.asdict(k) for k in trace.skipped]
            meta["interrupted"] = bool(trace.interrupted)
        record = adapter.trace_record(trace)  # the compiler's own (torch.compile's guards, ...)
        if record:
            meta["compiler_record"] = record
        if isinstance(trace.source, str):  # IR text: small, and it is the whole source
            meta["source"] = {"kind": "text", "text": trace.source}
        return meta

    def step(self, s: Step) -> dict:
        rec: dict[str, Any] = {
            "index": s.index,
            "kind": s.kind,
            "name": s.name,
            "spec": s.spec,
            "depth": s.depth,
            "parent": s.parent,
            "children": list(s.children),
            "seconds": float(s.seconds),
            "status": s.status,
            "module": self.module_ref(s.module),
            "before": self.module_ref(s.before),
            "error": None,
            "traceback": s.traceback or "",
            "failed_node": None if s.failed_node is None else self.node(s.failed_node),
            "failed_function": s.failed_function,
            "source_graph": None if s.source_graph is None else encode_graph(s.source_graph),
        }
        if s.error is not None:
            rec["error"] = encode_error(s.error)
        if getattr(s, "rewrites", ()):
            rec["rewrites"] = encode_rewrites(s.rewrites)
        for key in ("module", "before"):  # another compiler's module: its graph and text
            m = getattr(s, key)
            if m is not None and not isinstance(m, Module):
                rec[f"foreign_{key}"] = self.foreign(m)
        # kernels live in memory: keep what they showed (another compiler's module keeps its own)
        if s.backend_stage is not None and isinstance(s.shown_module, Module):
            rec["texts"] = {k: v for k, v in s.texts.items() if k != "IR"}
            artifact = s.artifact_bytes
            if artifact is not None:
                rec["artifact_bytes"] = int(artifact)
        return rec

    def example_inputs(self, inputs: Any) -> list | None:
        if inputs is None:
            return None
        out = []
        for x in inputs if isinstance(inputs, (tuple, list)) else (inputs,):
            if isinstance(x, np.ndarray):
                out.append({"kind": "numpy", "array": self.array(x)})
            elif type(x).__module__.startswith("torch") and hasattr(x, "detach"):
                arr = x.detach().cpu().contiguous().numpy()
                out.append({"kind": "torch", "array": self.array(arr)})
            elif isinstance(x, float) and not np.isfinite(x):
                out.append({"kind": "float", "value": repr(x)})
            elif isinstance(x, (bool, int, float, str)) or x is None:
                out.append({"kind": "json", "value": x})
            elif isinstance(x, np.generic):
                out.append({"kind": "numpy", "array": self.array(np.asarray(x))})
            else:
                out.append({"kind": "unsupported", "type": type(x).__name__})
        return out

    # ----- IR tables ----------------------------------------------------------------------
    def ir_tables(self) -> dict:
        tables: dict[str, Any] = {}
        if self.foreign_modules:
            tables = {"refs": self.refs, "foreign_modules": self.foreign_modules}
        return tables | {
            "types": self.types,
            "provenances": self.provs,
            "nodes": self.nodes,
            "functions": self.functions,
            "modules": self.modules,
            "arrays": [self.array_spec(i) for i in range(len(self.arrays))],
        }

    def array_spec(self, i: int) -> dict:
        a = self.arrays[i]
        spec: dict[str, Any] = {"dtype": _dtype_name(a), "shape": list(a.shape)}
        if self.derived[i] is None:
            spec["member"] = _array_member(i)
        else:
            spec["derived"] = self.derived[i]
        return spec

    def module_ref(self, m: Any) -> int | None:
        """The index of a passlens module in the module table (None for none, or for another
        compiler's module: that is `foreign`'s)."""
        return self.module(m) if isinstance(m, Module) else None

    def foreign(self, m: Any) -> int:
        """The index of another compiler's module (see `graphs.encode_foreign`)."""
        key = id(m)
        if key not in self._foreign_ids:
            self._alive.append(m)
            self._foreign_ids[key] = len(self.foreign_modules)
            save = get_adapter(str(m.compiler)).save_module  # that compiler's way, if its own
            self.foreign_modules.append(save(m, self) if save else encode_foreign(m, self))
        return self._foreign_ids[key]

    def ref(self, obj: Any) -> int:
        """The index of a graph node's object in the ref table (see `graphs.encode_ref`):
        one entry per object, so identity across steps survives saving."""
        key = id(obj)
        if key not in self._ref_ids:
            self._alive.append(obj)
            self._ref_ids[key] = len(self.refs)
            self.refs.append(encode_ref(obj, self))
        return self._ref_ids[key]

    def module(self, m: Module) -> int:
        key = id(m)
        if key not in self._module_ids:
            rec = {
                "functions": [[name, self.function(fn)] for name, fn in m.functions.items()],
                # not the kernels a lowered module holds (compiler.backend.kernels): loading
                # lowers them again (explorer.store.read._relower)
                "attrs": _encode_attrs({k: v for k, v in m.attrs.items() if k != "kernels"}),
            }
            self._alive.append(m)
            self._module_ids[key] = len(self.modules)
            self.modules.append(rec)
        return self._module_ids[key]

    def function(self, fn: Function) -> int:
        key = id(fn)
        if key not in self._function_ids:
            rec = {
                "params": [self.node(p) for p in fn.params],
                "bindings": [self.node(b) for b in fn.bindings],
                "output": self.node(fn.output),
                "attrs": _encode_attrs(fn.attrs),
                "prov": self.prov(fn.prov),
            }
            self._alive.append(fn)
            self._function_ids[key] = len(self.functions)
            self.functions.append(rec)
        return self._function_ids[key]

    def node(self, root: Expr | Block) -> int:
        """The index of `root` in the node table, adding it and what it reads first."""
        ids = self._node_ids
        if id(root) in ids:
            return ids[id(root)]
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:  # iterative post-order: deep graphs do not overflow the Python stack
            obj, expanded = stack.pop()
            if id(obj) in ids:
                continue
            if not expanded:
                stack.append((obj, True))
                stack.extend((c, False) for c in reversed(_parts(obj)) if id(c) not in ids)
                continue
            rec = self.encode(obj)
            self._alive.append(obj)
            ids[id(obj)] = len(self.nodes)
            self.nodes.append(rec)
        return ids[id(root)]

    def encode(self, obj: Any) -> dict:
        ids = self._node_ids
        if isinstance(obj, Block):
            return {
                "kind": "block",
                "bindings": [ids[id(b)] for b in obj.bindings],
                "result": ids[id(obj.result)],
            }
        rec: dict[str, Any]
        if isinstance(obj, Var):
            rec = {"kind": "var", "type": self.type(obj.ty)}
        elif isinstance(obj, Constant):
            rec = {"kind": "const", "array": self.array(obj.data)}
        elif isinstance(obj, Call):
            try:
                attrs = {k: format_attr(v) for k, v in obj.attrs.items()}
            except TypeError as e:
                raise TypeError(f"cannot save a {obj.op} call: {e}") from None
            rec = {
                "kind": "call",
                "op": obj.op,
                "args": [ids[id(a)] for a in obj.args],
                "attrs": attrs,
                "type": self.type(obj.ty),
            }
        elif isinstance(obj, Loop):
            rec = {
                "kind": "loop",
                "func": obj.func,
                "args": [ids[id(a)] for a in obj.args],
                "type": self.type(obj.ty),
                "carried": obj.num_carried,
            }
        elif isinstance(obj, FuncCall):
            rec = {
                "kind": "func_call",
                "func": obj.func,
                "args": [ids[id(a)] for a in obj.args],
                "type": self.type(obj.ty),
            }
        elif isinstance(obj, Tuple):
            rec = {"kind": "tuple", "args": [ids[id(f)] for f in obj.fields]}
        elif isinstance(obj, TupleGetItem):
            rec = {"kind": "get_item", "tuple": ids[id(obj.tuple_value)], "index": obj.index}
        elif isinstance(obj, If):
            rec = {
                "kind": "if",
                "cond": ids[id(obj.cond)],
                "then": ids[id(obj.then_branch)],
                "else": ids[id(obj.else_branch)],
                "type": self.type(obj.ty),
            }
        else:
            raise TypeError(f"cannot save IR object {obj!r}")
        if obj.name is not None:
            rec["name"] = obj.name
        if obj.prov is not NO_PROVENANCE and not obj.prov.is_empty:
            rec["prov"] = self.prov(obj.prov)
        return rec

    def type(self, ty: Type) -> int:
        if ty not in self._type_ids:
            self._type_ids[ty] = len(self.types)
            self.types.append(str(ty))
        return self._type_ids[ty]

    def prov(self, prov: Provenance) -> int:
        if prov.is_empty:
            return 0
        if prov not in self._prov_ids:
            self._prov_ids[prov] = len(self.provs)
            rec = {f: getattr(prov, f) for f in PROV_FIELDS if getattr(prov, f) is not None}
            self.provs.append(rec)
        return self._prov_ids[prov]

    def array(self, arr: np.ndarray) -> int:
        """The index of `arr` in the array table; arrays with equal content share one."""
        key = id(arr)
        if key in self._array_ids:
            return self._array_ids[key]
        self._alive.append(arr)
        probe = _probe_index(arr)
        fingerprint = (_dtype_name(arr), arr.shape, _bits(arr[probe]).tobytes())
        same = self._by_fingerprint.setdefault(fingerprint, [])
        for j in same:  # equal sampled elements: compare everything
            if _bits_equal(self.arrays[j], arr):
                self._array_ids[key] = j
                return j
        index = len(self.arrays)
        self.arrays.append(arr)
        same.append(index)
        self._array_ids[key] = index
        self.derived.append(self._derivation(arr, probe))
        if self.derived[index] is None:
            self._by_size.setdefault(arr.size, []).append(index)
        return index

    def _derivation(self, arr: np.ndarray, probe: tuple) -> dict | None:
        """How `arr` is computed from an array already stored, when it is a permutation
        and/or a cast of one (fold-constant transposing a weight, convert-dtype casting it):
        then only the recipe is stored, and the file stays near the size of the weights."""
        if arr.size < _MIN_DERIVED or arr.ndim > 6:
            return None
        want = _bits(arr[probe]).tobytes()
        identity = tuple(range(arr.ndim))
        for j in self._by_size.get(arr.size, ()):
            src = self.arrays[j]
            if src.ndim != arr.ndim or sorted(src.shape) != sorted(arr.shape):
                continue
            same_dtype = src.dtype == arr.dtype
            for axes in _permutations_to(src.shape, arr.shape):
                if same_dtype and axes == identity:
                    continue  # equal content was found already
                view = src.transpose(axes)
                got = view[probe] if same_dtype else view[probe].astype(arr.dtype)
                if _bits(got).tobytes() != want:
                    continue
                if _bits_equal(view if same_dtype else view.astype(arr.dtype), arr):
                    rec: dict[str, Any] = {"from": j}
                    if axes != identity:
                        rec["axes"] = list(axes)
                    if not same_dtype:
                        rec["cast"] = True
                    return rec
        return None


def _parts(obj: Any) -> tuple:
    """What an IR object refers to (written before it)."""
    if isinstance(obj, If):
        return (obj.cond, obj.then_branch, obj.else_branch)
    if isinstance(obj, Block):
        return (*obj.bindings, obj.result)
    return operands(obj) if isinstance(obj, Expr) else ()


_MIN_DERIVED = 64  # smaller arrays are stored as they are


def _probe_index(arr: np.ndarray) -> tuple:
    """A few positions of `arr` (first, last and spread between by the golden ratio: evenly
    spaced ones of a 2048 x 2048 matrix are all on its diagonal, where its transpose agrees,
    so each square weight and its transposed copy were compared whole: 0.86 s at 1B)."""
    if arr.ndim == 0 or arr.size == 0:
        return (Ellipsis,)
    if arr.size <= _PROBES:
        return np.unravel_index(np.arange(arr.size), arr.shape)
    spread = (np.arange(1, _PROBES - 1) * _GOLDEN % 1.0 * arr.size).astype(np.int64)
    return np.unravel_index(np.unique([0, arr.size - 1, *spread]), arr.shape)


_PROBES, _GOLDEN = 24, (5**0.5 - 1) / 2  # positions sampled per array; their spread


def _permutations_to(shape: tuple, target: tuple):
    """Axis orders `axes` with `transpose(x of shape, axes).shape == target`."""
    import itertools

    for axes in itertools.permutations(range(len(shape))):
        if tuple(shape[a] for a in axes) == tuple(target):
            yield axes


def _bits(arr: np.ndarray) -> np.ndarray:
    """The array's elements as unsigned integers of the same width (so NaN == NaN, and
    -0.0 != 0.0: equal bits, not equal values)."""
    if arr.dtype.kind == "b":
        return arr.view(np.uint8)
    return arr.view(np.dtype(f"u{arr.dtype.itemsize}"))


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    from explorer.check.numbers import same_memory  # (explorer.check imports the store)

    if same_memory(a, b):
        return True  # the same memory read the same way (a transposed weight and its view)
    return bool(np.array_equal(_bits(a), _bits(b)))


def _dtype_name(arr: np.ndarray) -> str:
    try:
        return DType.of(arr.dtype).name
    except TypeError as e:
        raise TypeError(f"cannot save an array of dtype {arr.dtype}: {e}") from None


def _encode_attrs(attrs) -> dict:
    return {k: format_attr(v) for k, v in attrs.items()}


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("passlens")
    except Exception:  # not installed: running from a checkout
        return "dev"
