"""`load(path)`: a trace back from a `.passlens` file, the one place that builds Steps and
Traces from a file. The file is untrusted input: every reference must point to an earlier
table entry, arrays are read only once their `.npy` header agrees with what ir.json declares,
sizes are capped (see `explorer.store.fileformat`): one array, and everything a load
materialises together (`MAX_LOAD_BYTES`: an array named by several entries is read once and
shared, a derived array is counted when it is made, the ONNX source member is read in chunks
up to its cap), each checked before anything is allocated; anything a damaged or crafted file
causes is raised as a TraceFileError (or a LimitError for a cap)."""

from __future__ import annotations

import json
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
from explorer.adapters import get_adapter, is_adapter_name
from explorer.store.checks import MEMBER as REPORT_MEMBER
from explorer.store.checks import ReportReader
from explorer.store.errors import decode_error
from explorer.store.fileformat import (
    FORMAT,
    MAX_JSON_BYTES,
    MAX_STEPS,
    PROV_FIELDS,
    READ_VERSION,
    TraceFileError,
)
from explorer.store.graphs import decode_graph, foreign_module, graph_ref
from explorer.store.read_arrays import ArrayReading
from explorer.store.rewrites import decode_rewrites
from explorer.store.zipread import check_archive, read_member
from explorer.trace import Step, Trace


def load(path: str | os.PathLike, trust_ops=None, passes=None) -> Trace:
    """Read a trace written by `save`. Raises FileNotFoundError for a missing file and
    TraceFileError for a file that is not a readable trace (damaged, or an unknown version).

    Loading runs none of the trace's ops. `trust_ops`: opaque ops the loaded trace may run
    (its `trusted_ops`) although passlens does not know them to be pure computations
    (`["mylib.scale"]`), for a file you trust; what a trace trusted when saved (a live
    model's own ops) is never in the file (see explorer.trust).

    `passes`: pass classes or instances for the passes the file can only name (a user's
    own, such as a notebook's: the file keeps their spec, class and module, and loading never
    imports a module a file names); what runs the pipeline again (`trace.rerun`,
    `report.reduce`) needs them, and says which are missing without them. Viewing and
    checking a loaded trace need no pass (its modules are in the file)."""
    from compiler.opaque import trust_names

    trusted = trust_names(trust_ops)  # a bad name fails before the file is read
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
            adapter = get_adapter(trace.compiler)
            adapter.load_trace_record(trace, manifest.get("compiler_record"))  # older: none
            adapter.after_load(trace)  # passlens: its kernels again
            trace.trusted_ops = trusted
        except (TraceFileError, LimitError):
            raise
        except Exception as e:  # anything else a damaged or crafted file causes
            what = e.args[0] if isinstance(e, KeyError) and e.args else e
            raise TraceFileError(
                f"{path}: damaged passlens trace file ({type(e).__name__}: {str(what)[:300]})"
            ) from None
    if passes is not None:  # after the file: a wrong passes= is the caller's error
        get_adapter(trace.compiler).supply_passes(trace, passes)
    return trace


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
    check_archive(zf, path, TraceFileError, LimitError)  # sizes, ratios: no member is a bomb
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
        info = zf.getinfo(name)
        if info.file_size > cap:
            raise LimitError(
                f"{path}: {name} is larger than {cap >> 20} MiB, the limit for it; not read"
            )
        # counted as it inflates, within the size declared and its ratio cap
        data = read_member(zf, info, path, TraceFileError, limit_error=LimitError)
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


class _Reader(ArrayReading):
    """Rebuilds the tables in order; every reference must point to an earlier entry (the
    arrays and the source model through `ArrayReading`, within the load budget)."""

    def __init__(self, zf: zipfile.ZipFile, path: Path, manifest: dict):
        self.zf, self.path, self.manifest = zf, path, manifest
        ir = _read_json(zf, "ir.json", path)
        if not isinstance(ir, dict):
            raise TraceFileError(f"{path}: damaged passlens trace file (ir.json is not a table)")
        self.ir = ir
        self.types = [_parse(parse_type, t) for t in _list(ir, "types")]
        self.provs = [_provenance(p) for p in _list(ir, "provenances")]
        self.array_specs = _list(ir, "arrays")
        self.init_arrays()
        self._attr_cache: dict[str, Any] = {}
        self.nodes: list[Any] = []
        self.nesting: list[int] = []  # how deep each node nests tuples and If branches
        for rec in _list(ir, "nodes"):
            self.nodes.append(self.decode(rec))
            self.nest(rec)
        self.functions = [self.function(rec) for rec in _list(ir, "functions")]
        self.modules = [self.module(rec) for rec in _list(ir, "modules")]
        # another compiler's modules (explorer.adapters): their graphs' objects, then the modules
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

    def nest(self, rec: dict) -> None:
        """Record how deep the node just decoded nests values (a tuple of tuples, an If in a
        branch of an If): every walk of a module recurses over that nesting (its type's text,
        the printer), so a file may nest no deeper than the IR text can
        (`MAX_NODE_NESTING`, the parser's limit)."""
        kind, n = rec["kind"], self.nesting
        if kind == "tuple":
            depth = 1 + max((n[a] for a in rec["args"]), default=0)
        elif kind == "if":
            depth = 1 + max(n[rec["then"]], n[rec["else"]], n[rec["cond"]])
        elif kind == "block":
            depth = max(n[rec["result"]], max((n[b] for b in rec["bindings"]), default=0))
        elif kind == "get_item":
            depth = n[rec["tuple"]]
        else:
            depth = 0
        if depth > MAX_NODE_NESTING:
            raise LimitError(
                f"{self.path}: node {len(n)} nests tuples or If branches {depth} levels deep, "
                f"over the limit of {MAX_NODE_NESTING} (the IR text's)"
            )
        n.append(depth)

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
            error=None if rec.get("error") is None else decode_error(rec["error"]),
            traceback=str(rec.get("traceback") or ""),
            failed_node=None if failed is None else self.expr(failed),
            failed_function=rec.get("failed_function"),
            source_graph=None if graph is None else decode_graph(graph),
            children=children,
        )
        where = f"{self.path}, step {position}"
        step.rewrites = decode_rewrites(rec.get("rewrites"), where)
        if rec.get("pass") is not None:
            step.saved_pass = _pass_record(rec["pass"], where)
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
        if not is_adapter_name(value):  # a registered compiler (explorer.adapters)
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


MAX_PASS_FIELD = 1000  # characters of one field of a step's saved pass


def _pass_record(rec: Any, where: str) -> dict:
    """A step's saved pass (a user's: see `Adapter.pass_record`), checked: text fields of
    at most MAX_PASS_FIELD printable characters (no terminal escapes reach an error message)
    and a bool `registered`. It is only words: loading
    imports nothing it names."""
    if not isinstance(rec, dict):
        raise TraceFileError(f"{where}: damaged passlens trace file (a pass record)")
    out: dict[str, Any] = {}
    for key in ("name", "spec", "class", "module", "defined"):
        value = rec.get(key, "")
        if not isinstance(value, str) or len(value) > MAX_PASS_FIELD or not value.isprintable():
            raise TraceFileError(f"{where}: damaged passlens trace file (its pass's {key})")
        out[key] = value
    registered = rec.get("registered", False)
    if not isinstance(registered, bool):
        raise TraceFileError(f"{where}: damaged passlens trace file (its pass's registered)")
    out["registered"] = registered
    return out


MAX_NODE_NESTING = 64  # tuples and If branches nested in a node (compiler.ir.parser.MAX_NESTING)


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
