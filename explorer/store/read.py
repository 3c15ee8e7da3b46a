"""``load(path)``: a trace back from a ``.passlens`` file, the one place that builds Steps and
Traces from a file. The file is untrusted input: every reference must point to an earlier
table entry, arrays are read only once their ``.npy`` header agrees with what ir.json declares,
sizes are capped (see :mod:`explorer.store.fileformat`): one array, and everything a load
materialises together (``MAX_LOAD_BYTES``: an array named by several entries is read once and
shared, a derived array is counted when it is made, the ONNX source member is read in chunks
up to its cap), each checked before anything is allocated; anything a damaged or crafted file
causes is raised as a TraceFileError (or a LimitError for a cap)."""

from __future__ import annotations

import json
import math
import os
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from compiler import LimitError
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
    ParseError,
    Parser,
    Provenance,
    Tuple,
    TupleGetItem,
    Var,
    parse_type,
)
from compiler.passes import SkippedPass
from explorer.store.checks import MEMBER as REPORT_MEMBER
from explorer.store.checks import ReportReader
from explorer.store.errors import _decode_error
from explorer.store.fileformat import (
    FORMAT,
    MAX_ARRAY_BYTES,
    MAX_JSON_BYTES,
    MAX_LOAD_BYTES,
    MAX_SOURCE_BYTES,
    MAX_STEPS,
    PROV_FIELDS,
    READ_VERSION,
    TraceFileError,
)
from explorer.store.graphs import decode_graph, foreign_module, graph_ref
from explorer.trace import Step, Trace


def load(path: str | os.PathLike) -> Trace:
    """Read a trace written by :func:`save`. Raises FileNotFoundError for a missing file and
    TraceFileError for a file that is not a readable trace (damaged, or an unknown version)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such trace file: {path}")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as e:
        raise TraceFileError(
            f"{path}: not a passlens trace file (not a readable zip archive: {e})"
        ) from None
    with zf:
        try:
            manifest = _read_manifest(zf, path)
            reader = _Reader(zf, path, manifest)
            trace = reader.trace()
            trace.report = reader.report(trace)
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
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as e:
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
    if version > READ_VERSION:
        raise TraceFileError(
            f"{path}: written by a newer passlens (trace format version {version}; this "
            f"passlens reads version {READ_VERSION} and older); upgrade passlens to open it"
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
        self.members: dict[str, np.ndarray] = {}  # each .npy member read once, then shared
        # what each array is: (its root member, its axes in the root's, the casts on the way,
        # its dtype); arrays with the same values (a transpose of a transpose, a derivation
        # named twice) are made once and shared
        self.keys: dict[int, tuple] = {}
        self.made: dict[tuple, np.ndarray] = {}
        self.loaded = 0  # bytes materialised so far (the load budget, MAX_LOAD_BYTES)
        self._attr_cache: dict[str, Any] = {}
        self.nodes: list[Any] = []
        for rec in _list(ir, "nodes"):
            self.nodes.append(self.decode(rec))
        self.functions = [self.function(rec) for rec in _list(ir, "functions")]
        self.modules = [self.module(rec) for rec in _list(ir, "modules")]
        # another compiler's modules (explorer.tvm): their graphs' objects, then the modules
        self.refs = [graph_ref(self, rec) for rec in _list(ir, "refs")] if "refs" in ir else []
        foreign = _list(ir, "foreign_modules") if "foreign_modules" in ir else []
        self.foreign_modules = [foreign_module(self, rec) for rec in foreign]

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

    def spend(self, nbytes: int, what: str) -> None:
        """Count ``nbytes`` about to be materialised for ``what`` against the load budget,
        before allocating them: a LimitError naming what and how much past the budget."""
        if self.loaded + nbytes > MAX_LOAD_BYTES:
            raise LimitError(
                f"{self.path}: {what} ({_size(nbytes)}) would bring what loading this trace "
                f"materialises to {_size(self.loaded + nbytes)}, over the "
                f"{_size(MAX_LOAD_BYTES)} budget for one trace; not read"
            )
        self.loaded += nbytes

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
        if kind == "loop":
            args = [self.expr(a) for a in rec["args"]]
            ty = self.ref(self.types, rec["type"], "type")
            return Loop(rec["func"], args, ty, rec["carried"], self.prov(rec), name)
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

    def module_or_foreign(self, rec: dict, key: str) -> Any:
        foreign = rec.get(f"foreign_{key}")
        if foreign is not None:
            return self.ref(self.foreign_modules, foreign, "foreign module reference")
        value = rec.get(key)
        return None if value is None else self.ref(self.modules, value, "module reference")

    # ----- steps and trace ----------------------------------------------------------------
    def step(self, position: int, rec: dict) -> Step:
        if rec["index"] != position:
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file (step {position} "
                f"is numbered {rec['index']!r})"
            )
        module = self.module_or_foreign(rec, "module")
        before = self.module_or_foreign(rec, "before")
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
            module=module,
            before=before,
            seconds=float(rec.get("seconds") or 0.0),
            error=None if rec.get("error") is None else _decode_error(rec["error"]),
            traceback=str(rec.get("traceback") or ""),
            failed_node=None if failed is None else self.expr(failed),
            failed_function=rec.get("failed_function"),
            source_graph=None if graph is None else decode_graph(graph),
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
        for s in steps:  # a tree: each step is the child of its own parent only
            for c in s.children:
                if steps[c].parent != s.index:
                    raise TraceFileError(
                        f"{self.path}: damaged passlens trace file (step {s.index} lists step "
                        f"{c} as a child, whose parent is {steps[c].parent})"
                    )
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
            compiler=self.compiler(m.get("compiler")),
        )

    def compiler(self, value: Any) -> str:
        if value is None:
            return "passlens"
        if value not in ("passlens", "tvm"):
            raise TraceFileError(f"{self.path}: unknown compiler {value!r} in the manifest")
        return str(value)

    def report(self, trace: Trace) -> Any:
        """The check report saved with the trace (format version 2), or None."""
        flag = self.manifest.get("report", False)
        if flag is False or flag is None:
            return None
        if flag is not True:
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file (the manifest's report is "
                f"{str(flag)[:40]!r}, not true)"
            )
        if REPORT_MEMBER not in self.zf.namelist():
            raise TraceFileError(
                f"{self.path}: damaged passlens trace file (the manifest says it holds a "
                f"check report, and there is no {REPORT_MEMBER})"
            )
        return ReportReader(self, trace).report(_read_json(self.zf, REPORT_MEMBER, self.path))

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
            data = self.source_bytes(rec["member"])
            try:
                return {"model": onnx.load_from_string(data)}
            except Exception as e:  # protobuf's DecodeError
                raise TraceFileError(f"{self.path}: damaged ONNX source model ({e})") from None
        return None

    def source_bytes(self, member: Any) -> bytes:
        """The ONNX source member, read in chunks up to its cap and the load budget: refused
        at once when the size the zip declares is over them, else when what it holds is (the
        declared size is the file's word)."""
        name, chunks, total = str(member), [], 0
        cap = min(MAX_SOURCE_BYTES, MAX_LOAD_BYTES - self.loaded)
        declared = self.zf.getinfo(name).file_size
        if declared > cap:  # refused at once when the zip says so; else counted as read
            self.spend(declared, f"the ONNX source model {name}")
            raise LimitError(
                f"{self.path}: the ONNX source model {name} is {_size(declared)}, over "
                f"{_size(MAX_SOURCE_BYTES)}, the limit for it; not read"
            )
        with self.zf.open(name) as f:
            while chunk := f.read(min(_CHUNK, cap + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > cap:
                    self.spend(total, f"the ONNX source model {name}")  # over the budget
                    raise LimitError(
                        f"{self.path}: the ONNX source model {name} is larger than "
                        f"{_size(MAX_SOURCE_BYTES)}, the limit for it; not read"
                    )
        self.spend(total, f"the ONNX source model {name}")
        return b"".join(chunks)

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

                    self.spend(arr.nbytes, f"a copy of array {rec['array']} as a torch tensor")
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


def _as_bits(dtype: DType, stored: np.dtype) -> bool:
    """Whether values of ``dtype`` (an ml_dtypes type) are stored as ``stored``, their bits."""
    bits = dtype is DType.bfloat16 or dtype.is_storage_only
    return bits and stored.itemsize == dtype.itemsize and stored.kind in "uV"


_CHUNK = 16 << 20  # bytes read from a member at a time


def _size(nbytes: int) -> str:
    """``1.5 GiB``, ``300.0 MiB``, ``2.0 KiB``, ``12 bytes``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes:,} bytes"


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
    if not isinstance(rec, dict) or not set(rec) <= set(PROV_FIELDS):
        raise ValueError(f"bad provenance record {rec!r}")
    if not all(isinstance(v, str) for v in rec.values()):
        raise ValueError(f"bad provenance record {rec!r}")
    return Provenance(**rec) if rec else NO_PROVENANCE
