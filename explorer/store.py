"""Save and load traces: ``save(trace, path)`` / ``load(path)``, a versioned format without pickle.

A ``.passlens`` file is a zip archive:

    manifest.json     format name and version, pipeline, frontend, example inputs, and one
                      record per step (kind, name, spec, depth, parent, children, seconds,
                      status, the module before / after it by id, error type / message /
                      traceback, the failed node by id, a source step's graph model)
    ir.json           tables of unique types (text), provenances (dicts), IR nodes, functions
                      and modules; nodes refer to earlier nodes by index, so the table is
                      topologically ordered and has no cycles
    arrays/<i>.npy    raw arrays (weights, example inputs), written with allow_pickle=False;
                      an array that is a transpose and/or cast of a stored one (what
                      fold-constant and convert-dtype make of a weight) is kept in ir.json
                      as a recipe ``{"from": i, "axes": [...], "cast": true}`` instead

Every IR object is written once however many steps share it, and read back as one object:
after ``load`` a node a pass did not touch is again the very same object in the steps before
and after the pass, so identity matching in diffs keeps working, and a weight is stored once
(arrays with equal content are stored once too). Types and attributes are stored in the IR
text format and decoded with its parser; nodes are rebuilt through their constructors, which
check them. Loading a file runs no code from it: JSON, ``.npy`` without pickles, and the IR
parser. A file that is not a trace, is damaged, or has an unknown format version raises a
:class:`TraceFileError` that says so.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import math
import os
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from compiler import LimitError, PasslensError
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
    Module,
    ParseError,
    Parser,
    Provenance,
    Tuple,
    TupleGetItem,
    Type,
    Var,
    format_attr,
    parse_type,
)
from compiler.passes import SkippedPass
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param, Signature
from explorer.trace import Step, Trace

FORMAT = "passlens-trace"
VERSION = 1
SUFFIX = ".passlens"
_PROV_FIELDS = tuple(f.name for f in dataclasses.fields(Provenance))


# Caps on what a trace file may make passlens read or allocate (a file is untrusted input):
# manifest.json and ir.json: a 10,000-node trace's ir.json is about 10 MB, its manifest 1 MB
MAX_JSON_BYTES = {"manifest.json": 64 << 20, "ir.json": 256 << 20}
MAX_ARRAY_BYTES = 8 << 30  # one array (a weight or an example input)
MAX_STEPS = 1_000_000


class TraceFileError(PasslensError, ValueError):
    """A file could not be read as a passlens trace; the message says which file and why."""


class RecordedError(Exception):
    """An exception of a saved trace whose type is not a Python builtin, as loaded.

    Loading creates a subclass named after the original type (``PassError``), so
    ``type(error).__name__`` reads as it did; ``type_module`` is the original type's module.
    """

    type_name = "RecordedError"
    type_module = ""

    def __repr__(self) -> str:
        return f"{self.type_name}({str(self)!r})"


# ===== save ===================================================================================


def save(trace: Trace, path: str | os.PathLike, include_source: bool = False) -> Path:
    """Write ``trace`` to ``path`` (a ``.passlens`` zip of JSON and ``.npy`` arrays).

    With ``include_source`` an ONNX source model is stored too (its bytes), so a loaded
    trace can still run onnxruntime as the reference; it roughly doubles the file.
    Returns the path written. The file is replaced atomically.
    """
    path = Path(path)
    writer = _Writer()
    manifest = writer.manifest(trace)
    ir = writer.ir_tables()
    source_bytes = _source_bytes(trace) if include_source else None
    if source_bytes is not None:
        manifest["source"] = {"kind": "onnx", "member": "source.onnx"}
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", allowZip64=True) as zf:
            _write_json(zf, "manifest.json", manifest)
            _write_json(zf, "ir.json", ir)
            for i, arr in enumerate(writer.arrays):
                if writer.derived[i] is not None:
                    continue
                big = arr.nbytes > (1 << 31) - (1 << 20)
                with zf.open(_array_member(i), "w", force_zip64=big) as f:
                    np.lib.format.write_array(f, _storable(arr), allow_pickle=False)
            if source_bytes is not None:
                zf.writestr("source.onnx", source_bytes)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _write_json(zf: zipfile.ZipFile, name: str, obj: Any) -> None:
    data = json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()
    zf.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)


def _storable(arr: np.ndarray) -> np.ndarray:
    """bfloat16 (an ml_dtypes type .npy cannot name) is written as its uint16 bits."""
    if _dtype_name(arr) == "bfloat16":
        return np.ascontiguousarray(arr).view(np.uint16)
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

    # ----- manifest -----------------------------------------------------------------------
    def manifest(self, trace: Trace) -> dict:
        steps = [self.step(s) for s in trace.steps]
        meta: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "created_by": f"passlens {_version()}",
            "pipeline": str(trace.pipeline or ""),
            "frontend": str(trace.frontend or ""),
            "steps": steps,
            "example_inputs": self.example_inputs(trace.example_inputs),
        }
        if trace.skipped or trace.interrupted:
            meta["skipped"] = [dataclasses.asdict(k) for k in trace.skipped]
            meta["interrupted"] = bool(trace.interrupted)
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
            "module": None if s.module is None else self.module(s.module),
            "before": None if s.before is None else self.module(s.before),
            "error": None,
            "traceback": s.traceback or "",
            "failed_node": None if s.failed_node is None else self.node(s.failed_node),
            "failed_function": s.failed_function,
            "source_graph": None if s.source_graph is None else _encode_graph(s.source_graph),
        }
        if s.error is not None:
            rec["error"] = _encode_error(s.error)
        if s.backend_stage is not None:  # kernels live in memory: keep what they showed
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
        return {
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

    def module(self, m: Module) -> int:
        key = id(m)
        if key not in self._module_ids:
            rec = {
                "functions": [[name, self.function(fn)] for name, fn in m.functions.items()],
                "attrs": _encode_attrs(m.attrs),
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
        """The index of ``root`` in the node table, adding it and what it reads first."""
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
            rec = {f: getattr(prov, f) for f in _PROV_FIELDS if getattr(prov, f) is not None}
            self.provs.append(rec)
        return self._prov_ids[prov]

    def array(self, arr: np.ndarray) -> int:
        """The index of ``arr`` in the array table; arrays with equal content share one."""
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
        """How ``arr`` is computed from an array already stored, when it is a permutation
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
    if isinstance(obj, (Call, FuncCall)):
        return obj.args
    if isinstance(obj, Tuple):
        return obj.fields
    if isinstance(obj, TupleGetItem):
        return (obj.tuple_value,)
    if isinstance(obj, If):
        return (obj.cond, obj.then_branch, obj.else_branch)
    if isinstance(obj, Block):
        return (*obj.bindings, obj.result)
    return ()


_MIN_DERIVED = 64  # smaller arrays are stored as they are


def _probe_index(arr: np.ndarray) -> tuple:
    """A few positions of ``arr`` (first, last and spread between) to compare cheaply."""
    if arr.ndim == 0 or arr.size == 0:
        return (Ellipsis,)
    flat = np.unique(np.linspace(0, arr.size - 1, num=min(arr.size, 24)).astype(np.int64))
    return np.unravel_index(flat, arr.shape)


def _permutations_to(shape: tuple, target: tuple):
    """Axis orders ``axes`` with ``transpose(x of shape, axes).shape == target``."""
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
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(_bits(a), _bits(b)))


def _dtype_name(arr: np.ndarray) -> str:
    try:
        return DType.of(arr.dtype).name
    except TypeError as e:
        raise TypeError(f"cannot save an array of dtype {arr.dtype}: {e}") from None


def _encode_attrs(attrs) -> dict:
    return {k: format_attr(v) for k, v in attrs.items()}


def _encode_error(error: BaseException) -> dict:
    rec: dict[str, Any] = {
        "type": getattr(error, "type_name", None) or type(error).__name__,
        "module": getattr(error, "type_module", None) or type(error).__module__,
        "message": str(error),
    }
    if all(isinstance(a, (str, int, float, bool)) or a is None for a in error.args):
        try:
            json.dumps(list(error.args), allow_nan=False)
            rec["args"] = list(error.args)
        except ValueError:
            pass
    return rec


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if np.isfinite(f) else str(f)
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def _encode_graph(g: GraphModel) -> dict:
    """A source step's graph model (nodes, edges, params, signatures) as JSON."""
    return {
        "nodes": [
            {
                "id": n.id,
                "kind": n.kind,
                "op": n.op,
                "label": n.label,
                "function": n.function,
                "type": n.type,
                "shape": _jsonable(n.shape),
                "dtype": n.dtype,
                "attrs": _jsonable(n.attrs),
                "provenance": _jsonable(n.provenance),
                "group": n.group,
                "nbytes": int(n.nbytes),
            }
            for n in g.nodes.values()
        ],
        "edges": [[e.src, e.dst, e.index, e.type] for e in g.edges],
        "params": [
            {
                "key": key,
                "name": p.name,
                "shape": _jsonable(p.shape),
                "dtype": p.dtype,
                "nbytes": int(p.nbytes),
                "node_id": p.node_id,
            }
            for key, p in g.params.items()
        ],
        "signatures": [
            {
                "name": s.name,
                "params": _jsonable(s.params),
                "result": s.result,
                "num_input": s.num_input,
                "attrs": _jsonable(s.attrs),
            }
            for s in g.signatures.values()
        ],
    }


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("passlens")
    except Exception:  # not installed: running from a checkout
        return "dev"


# ===== load ===================================================================================


def load(path: str | os.PathLike) -> Trace:
    """Read a trace written by :func:`save`. Raises FileNotFoundError for a missing file and
    TraceFileError for a file that is not a readable trace (damaged, or an unknown version)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such trace file: {path}")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise TraceFileError(
            f"{path}: not a passlens trace file (not a readable zip archive: {e})"
        ) from None
    with zf:
        try:
            manifest = _read_manifest(zf, path)
            trace = _Reader(zf, path, manifest).trace()
            _relower(trace)
            return trace
        except (TraceFileError, LimitError):
            raise
        except Exception as e:  # anything else a damaged or crafted file causes
            what = e.args[0] if isinstance(e, KeyError) and e.args else e
            raise TraceFileError(
                f"{path}: damaged passlens trace file ({type(e).__name__}: {str(what)[:300]})"
            ) from None


def _relower(trace: Trace) -> None:
    """Kernels live in the process that lowered them: make those a loaded trace calls again, by
    running its legalize-ops steps on the modules they were given (lowering is deterministic
    and kernels are named by content, so the same names come back). Compiled code is then
    made when a kernel first runs. A kernel that does not come back stays missing: running it
    says so. Only legalize-ops itself runs, whatever spec the file records (its options change
    whether it fails, not the kernels), so a file cannot make loading run other passes."""
    lowering = [
        s
        for s in trace.steps
        if s.kind == "pass"
        and s.name == "legalize-ops"
        and not s.failed
        and s.before is not None
        and s.module is not None
    ]
    if not lowering:
        return
    from compiler import passes
    from compiler.backend import is_registered, kernel_calls

    for s in lowering:
        missing = [n for n in kernel_calls(s.module) if not is_registered(n)]
        if missing:  # the pass by its name only: nothing else the file says is run
            passes.run(s.before, "legalize-ops", record=False)


def read_manifest(path: str | os.PathLike) -> dict:
    """Just the manifest of a trace file (format, version, pipeline, steps), checked."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such trace file: {path}")
    try:
        with zipfile.ZipFile(path) as zf:
            return _read_manifest(zf, path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        if isinstance(e, TraceFileError):
            raise
        raise TraceFileError(f"{path}: not a passlens trace file ({e})") from None


def _read_manifest(zf: zipfile.ZipFile, path: Path) -> dict:
    names = zf.namelist()
    if "manifest.json" not in names:
        raise TraceFileError(f"{path}: not a passlens trace file (no manifest.json)")
    if len(set(names)) != len(names):  # which copy is read would depend on the reader
        raise TraceFileError(f"{path}: damaged passlens trace file (a member appears twice)")
    manifest = _read_json(zf, "manifest.json", path)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise TraceFileError(f"{path}: not a passlens trace file (manifest is not a {FORMAT})")
    version = manifest.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise TraceFileError(f"{path}: unknown passlens trace format version {version!r}")
    if version > VERSION:
        raise TraceFileError(
            f"{path}: written by a newer passlens (trace format version {version}; this "
            f"passlens reads version {VERSION} and older); upgrade passlens to open it"
        )
    return manifest


def _read_json(zf: zipfile.ZipFile, name: str, path: Path) -> Any:
    try:
        cap = MAX_JSON_BYTES[name]
        with zf.open(name) as f:
            data = f.read(cap + 1)  # not the size the zip declares: that is the file's word
        if len(data) > cap:
            raise LimitError(
                f"{path}: {name} is larger than {cap >> 20} MiB, the limit for it; not read"
            )
        obj = json.loads(data.decode("utf-8"))
        try:  # JSON may spell a lone surrogate (\ud800), which no text output can hold
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise TraceFileError(
                f"{path}: damaged passlens trace file ({name} holds text that is not valid "
                "Unicode: a lone surrogate)"
            ) from None
        return obj
    except KeyError:
        raise TraceFileError(f"{path}: damaged passlens trace file (no {name})") from None
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        UnicodeDecodeError,
        RecursionError,
        json.JSONDecodeError,
    ) as e:
        raise TraceFileError(f"{path}: damaged passlens trace file ({name}: {e})") from None


class _Reader:
    """Rebuilds the tables in order; every reference must point to an earlier entry."""

    def __init__(self, zf: zipfile.ZipFile, path: Path, manifest: dict):
        self.zf, self.path, self.manifest = zf, path, manifest
        ir = _read_json(zf, "ir.json", path)
        if not isinstance(ir, dict):
            raise TraceFileError(f"{path}: damaged passlens trace file (ir.json is not a table)")
        self.ir = ir
        self.types = [_parse(parse_type, t) for t in _list(ir, "types")]
        self.provs = [_provenance(p) for p in _list(ir, "provenances")]
        self.array_specs = _list(ir, "arrays")
        self.arrays: dict[int, np.ndarray] = {}
        self._attr_cache: dict[str, Any] = {}
        self.nodes: list[Any] = []
        for rec in _list(ir, "nodes"):
            self.nodes.append(self.decode(rec))
        self.functions = [self.function(rec) for rec in _list(ir, "functions")]
        self.modules = [self.module(rec) for rec in _list(ir, "modules")]

    # ----- tables -------------------------------------------------------------------------
    def ref(self, table: list, i: Any, what: str) -> Any:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(table):
            raise TraceFileError(f"{self.path}: damaged passlens trace file (bad {what} {i!r})")
        return table[i]

    def expr(self, i: Any) -> Expr:
        node = self.ref(self.nodes, i, "node reference")
        if not isinstance(node, Expr):
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file (node {i} is not a value)"
            )
        return node

    def array(self, i: Any) -> np.ndarray:
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
            if arr.size != math.prod(shape):
                raise TraceFileError(
                    f"{self.path}: damaged passlens trace file (array {i} of shape "
                    f"{list(shape)} derived from array {source} of shape {list(arr.shape)})"
                )
            if recipe.get("axes") is not None:
                axes = [int(a) for a in recipe["axes"]]
                if sorted(axes) != list(range(arr.ndim)):
                    raise TraceFileError(
                        f"{self.path}: damaged passlens trace file (array {i}: axes {axes} "
                        f"are not a permutation of {arr.ndim} axes)"
                    )
                arr = arr.transpose(axes)
            if recipe.get("cast"):
                arr = arr.astype(dtype.numpy)
            arr = np.ascontiguousarray(arr)
            what = f"array {i}"
        else:
            arr = self.stored_array(spec["member"], dtype, shape)
            what = spec["member"]
        if dtype is DType.bfloat16 and arr.dtype.itemsize == 2 and arr.dtype.kind in "uV":
            arr = arr.view(dtype.numpy)
        if arr.dtype != dtype.numpy or arr.shape != shape:
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file ({what} holds "
                f"{arr.dtype}{list(arr.shape)}, expected {dtype.name}{list(shape)})"
            )
        if arr.flags.writeable:
            arr.flags.writeable = False
        self.arrays[i] = arr
        return arr

    def stored_array(self, member: Any, dtype: DType, shape: tuple) -> np.ndarray:
        """An ``.npy`` member, read only once its header agrees with the declared dtype and
        shape and the member holds exactly that many bytes (no header can make it allocate
        more than the file holds)."""
        info = self.zf.getinfo(str(member))
        with self.zf.open(info) as f:
            fmt = np.lib.format
            version = fmt.read_magic(f)
            readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
            if version not in readers:
                raise TraceFileError(f"{self.path}: {member} has npy format version {version}")
            stored_shape, fortran, stored = readers[version](f, max_header_size=10_000)
            want = np.dtype(dtype.numpy)
            if dtype is DType.bfloat16 and stored.itemsize == 2 and stored.kind in "uV":
                want = stored  # bfloat16 is stored as its bits
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
            data = f.read(nbytes)
        if len(data) != nbytes:
            raise TraceFileError(f"{self.path}: damaged passlens trace file ({member} is short)")
        arr = np.frombuffer(data, dtype=stored).reshape(shape, order="F" if fortran else "C")
        return np.ascontiguousarray(arr) if fortran else arr.copy()

    def attrs(self, rec: Any) -> dict:
        if not isinstance(rec, dict):
            raise TypeError("attributes must be a mapping")
        out = {}
        for k, text in rec.items():
            if text not in self._attr_cache:
                self._attr_cache[text] = _parse_attr(text)
            out[k] = self._attr_cache[text]
        return out

    def prov(self, rec: dict) -> Provenance:
        return self.ref(self.provs, rec.get("prov", 0), "provenance reference")

    def decode(self, rec: dict) -> Any:
        kind = rec["kind"]
        name = rec.get("name")
        if kind == "var":
            return Var(name, self.ref(self.types, rec["type"], "type"), self.prov(rec))
        if kind == "const":
            return Constant(self.array(rec["array"]), name, self.prov(rec))
        if kind == "call":
            args = [self.expr(a) for a in rec["args"]]
            ty = self.ref(self.types, rec["type"], "type")
            return Call(rec["op"], args, self.attrs(rec["attrs"]), ty, self.prov(rec), name)
        if kind == "func_call":
            args = [self.expr(a) for a in rec["args"]]
            ty = self.ref(self.types, rec["type"], "type")
            return FuncCall(rec["func"], args, ty, self.prov(rec), name)
        if kind == "tuple":
            return Tuple([self.expr(a) for a in rec["args"]], self.prov(rec), name)
        if kind == "get_item":
            return TupleGetItem(self.expr(rec["tuple"]), rec["index"], self.prov(rec), name)
        if kind == "block":
            return Block([self.expr(b) for b in rec["bindings"]], self.expr(rec["result"]))
        if kind == "if":
            then = self.ref(self.nodes, rec["then"], "node reference")
            other = self.ref(self.nodes, rec["else"], "node reference")
            ty = self.ref(self.types, rec["type"], "type")
            return If(self.expr(rec["cond"]), then, other, ty, self.prov(rec), name)
        raise TraceFileError(f"{self.path}: damaged passlens trace file (node kind {kind!r})")

    def function(self, rec: dict) -> Function:
        return Function(
            [self.expr(p) for p in rec["params"]],
            [self.expr(b) for b in rec["bindings"]],
            self.expr(rec["output"]),
            self.attrs(rec["attrs"]),
            self.ref(self.provs, rec.get("prov", 0), "provenance reference"),
        )

    def module(self, rec: dict) -> Module:
        funcs = {}
        for name, fid in rec["functions"]:
            funcs[name] = self.ref(self.functions, fid, "function reference")
        return Module(funcs, self.attrs(rec["attrs"]))

    # ----- steps and trace ----------------------------------------------------------------
    def step(self, position: int, rec: dict) -> Step:
        if rec["index"] != position:
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file (step {position} "
                f"is numbered {rec['index']!r})"
            )
        module = rec.get("module")
        before = rec.get("before")
        failed = rec.get("failed_node")
        graph = rec.get("source_graph")
        depth = int(rec.get("depth") or 0)
        parent = None if rec.get("parent") is None else int(rec["parent"])
        children = [int(c) for c in rec.get("children") or []]
        if not 0 <= depth <= position or (parent is not None and not 0 <= parent < position):
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file (step {position} has depth "
                f"{depth} and parent {parent})"
            )
        if any(not position < c < self.n_steps for c in children):
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file (step {position} lists children "
                "that are not later steps)"
            )
        step = Step(
            index=position,
            kind=str(rec["kind"]),
            name=str(rec["name"]),
            spec=str(rec.get("spec") or ""),
            depth=depth,
            parent=parent,
            module=None if module is None else self.ref(self.modules, module, "module reference"),
            before=None if before is None else self.ref(self.modules, before, "module reference"),
            seconds=float(rec.get("seconds") or 0.0),
            error=None if rec.get("error") is None else _decode_error(rec["error"]),
            traceback=str(rec.get("traceback") or ""),
            failed_node=None if failed is None else self.expr(failed),
            failed_function=rec.get("failed_function"),
            source_graph=None if graph is None else _decode_graph(graph),
            children=children,
        )
        if "artifact_bytes" in rec:
            step._artifact_bytes = int(rec["artifact_bytes"])
        texts = rec.get("texts")
        if isinstance(texts, dict):
            step._texts = {str(k): str(v) for k, v in texts.items()}
        return step

    def trace(self) -> Trace:
        m = self.manifest
        records = _list(m, "steps")
        if len(records) > MAX_STEPS:
            raise LimitError(f"{self.path}: {len(records)} steps, over the limit of {MAX_STEPS}")
        self.n_steps = len(records)
        steps = [self.step(i, rec) for i, rec in enumerate(records)]
        skipped = [
            SkippedPass(str(k["pass_name"]), str(k["spec"]), int(k["depth"]), str(k["reason"]))
            for k in m.get("skipped") or []
        ]
        if any(not 0 <= k.depth <= len(steps) for k in skipped):
            raise TraceFileError(f"{self.path}: damaged passlens trace file (a skipped depth)")
        return Trace(
            steps,
            source=self.source(m.get("source")),
            example_inputs=self.example_inputs(m.get("example_inputs")),
            pipeline=str(m.get("pipeline") or ""),
            frontend=str(m.get("frontend") or ""),
            skipped=skipped,
            interrupted=bool(m.get("interrupted")),
        )

    def source(self, rec: Any) -> Any:
        if not isinstance(rec, dict):
            return None
        if rec.get("kind") == "text":
            return str(rec["text"])
        if rec.get("kind") == "onnx":
            try:
                import onnx
            except ImportError:
                return None
            with self.zf.open(rec["member"]) as f:
                data = f.read()
            try:
                return {"model": onnx.load_from_string(data)}
            except Exception as e:  # protobuf's DecodeError
                raise TraceFileError(f"{self.path}: damaged ONNX source model ({e})") from None
        return None

    def example_inputs(self, recs: Any) -> tuple | None:
        if recs is None:
            return None
        out = []
        for rec in recs:
            kind = rec["kind"]
            if kind == "numpy":
                out.append(self.array(rec["array"]))
            elif kind == "torch":
                arr = self.array(rec["array"])
                try:
                    import torch

                    out.append(torch.from_numpy(np.array(arr)))
                except ImportError:
                    out.append(arr)
            elif kind == "json":
                out.append(rec["value"])
            elif kind == "float":
                out.append(float(rec["value"]))
            else:
                return None  # an input that could not be saved: the inputs are incomplete
        return tuple(out)


def _nbytes(shape: tuple, dtype: DType) -> int:
    return math.prod(shape) * np.dtype(dtype.numpy).itemsize


def _list(table: dict, key: str) -> list:
    value = table[key]
    if not isinstance(value, list):
        raise TypeError(f"{key} must be a list")
    return value


def _parse(fn, text: Any) -> Any:
    if not isinstance(text, str):
        raise TypeError(f"expected text, got {type(text).__name__}")
    try:
        return fn(text)
    except ParseError as e:
        raise ValueError(f"cannot read {text!r}: {e.message}") from None


def _parse_attr(text: Any) -> Any:
    def read(t: str) -> Any:
        p = Parser(t)
        value = p.guarded(p.parse_attr_value)
        p.expect("eof", what="end of the attribute value")
        return value

    return _parse(read, text)


def _provenance(rec: Any) -> Provenance:
    if not isinstance(rec, dict) or not set(rec) <= set(_PROV_FIELDS):
        raise ValueError(f"bad provenance record {rec!r}")
    if not all(isinstance(v, str) for v in rec.values()):
        raise ValueError(f"bad provenance record {rec!r}")
    return Provenance(**rec) if rec else NO_PROVENANCE


_ERROR_CLASSES: dict[tuple[str, str], type] = {}


def _decode_error(rec: dict) -> BaseException:
    """The saved exception: a builtin type is rebuilt as itself, any other type as a
    RecordedError subclass of the same name (no code of the file's choosing runs)."""
    name, module, message = str(rec["type"]), str(rec.get("module") or ""), str(rec["message"])
    args = rec.get("args")
    if not isinstance(args, list):
        args = [message] if message else []
    cls = getattr(builtins, name, None) if module == "builtins" else None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            error = cls(*args)
            if str(error) == message:
                return error
        except Exception:
            pass
    key = (module, name)
    if key not in _ERROR_CLASSES:
        safe = name if name.isidentifier() else "RecordedError"
        _ERROR_CLASSES[key] = type(
            safe,
            (RecordedError,),
            {"type_name": name, "type_module": module, "__module__": module or __name__},
        )
    return _ERROR_CLASSES[key](message)


def _tuple_shape(value: Any) -> tuple | None:
    return None if value is None else tuple(value)


def _decode_graph(rec: dict) -> GraphModel:
    g = GraphModel()
    for n in rec["nodes"]:
        node = GraphNode(
            id=str(n["id"]),
            kind=str(n["kind"]),
            op=str(n["op"]),
            label=str(n["label"]),
            function=str(n["function"]),
            type=str(n["type"]),
            shape=_tuple_shape(n.get("shape")),
            dtype=n.get("dtype"),
            attrs=dict(n.get("attrs") or {}),
            provenance=dict(n.get("provenance") or {}),
            group=str(n.get("group") or ""),
            nbytes=int(n.get("nbytes") or 0),
        )
        g.nodes[node.id] = node
    for src, dst, index, ty in rec["edges"]:
        g.edges.append(GraphEdge(str(src), str(dst), int(index), str(ty)))
    for p in rec["params"]:
        g.params[str(p["key"])] = Param(
            str(p["name"]),
            tuple(p["shape"] or ()),
            str(p["dtype"]),
            int(p["nbytes"]),
            str(p["node_id"]),
        )
    for s in rec.get("signatures") or []:
        g.signatures[str(s["name"])] = Signature(
            str(s["name"]),
            [tuple(x) for x in s["params"]],
            str(s["result"]),
            s.get("num_input"),
            dict(s.get("attrs") or {}),
        )
    return g


__all__ = ["FORMAT", "VERSION", "RecordedError", "TraceFileError", "load", "read_manifest", "save"]
