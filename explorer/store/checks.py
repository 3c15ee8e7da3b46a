"""A trace's last check report in a trace file (format version 2): `report.json`.

The report is written with the trace's tables: the IR nodes its findings, per-node errors and
layer errors name are references into ir.json's node table (so after `load` they are the
very nodes of the loaded steps, and the views find them in the steps' graphs), a type is a
reference into its type table, and the inputs the check ran on (only with
`save(..., inputs=True)`) are arrays of its array table (an input equal to an example
input or a weight is stored once).

`report.json` holds::

    reference, rtol, atol, computed, cache_hits, memo_hits, seconds, notes
    steps       one record per step checked: step (index), status, max_abs, max_rel,
                same_as, computed, reused, seconds, layers ([name, max_rel, tolerance, node
                (or {"ref": i}, another compiler's node), and the float64 share when that rule
                judged the layer]), rule ("tolerance" or "float64": what judged the status)
    findings    kind, step (index), nodes, message, details
    inputs      (optional) array references, in the order `check` takes them

A number that may be infinite or NaN (an error) is a JSON number or `"inf"` / `"-inf"` /
`"nan"`. A finding's `details` are kind-specific values, written as JSON where JSON can
say them and otherwise as a tagged object `{"$": tag, ...}`: `float` (not finite),
`tuple`, `dict` (every dict, so a key cannot pose as a tag), `node`, `type`,
`step`, `error` (an exception, as a step's error is written), `node_error` (a
`explorer.check.NodeError`) and `text` (any other object, as its text).

On load every field is checked (types, ranges, references, finite tolerances, sizes); what the
views read from the details of the built-in kinds (a divergence's `node_errors`, parameter
bloat's `growth`) must have its shape. A report section that is not right is a
TraceFileError, as any other damage to the file.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from compiler import LimitError
from compiler.ir import DType, Expr, Type
from explorer.store.fileformat import MAX_REPORT_DEPTH, MAX_REPORT_INPUT_BYTES, TraceFileError

if TYPE_CHECKING:
    from explorer.check import Report
    from explorer.trace import Trace

MEMBER = "report.json"
MAX_FINDINGS = 100_000
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_TEXT_CHARS = 10_000  # an object the format has no tag for is kept as this much of its text


class Tables(Protocol):
    """The tables a report is written with (the trace writer, `write._Writer`, is them; it
    imports this module, so the annotation here names this protocol): the index of an IR node,
    a type, an array and another compiler's node stand-in in the trace file's tables."""

    def node(self, root: Expr) -> int: ...

    def ref(self, obj: Any) -> int: ...

    def type(self, ty: Type) -> int: ...

    def array(self, arr: np.ndarray) -> int: ...


class ReadTables(Protocol):
    """The tables a report is read with (the trace reader, `read._Reader`, is them; it
    imports this module, so the annotation here names this protocol): the file's path, its
    nodes, types, array records and node stand-ins, and a checked look-up in one of them."""

    path: Any
    nodes: list
    types: list
    array_specs: list
    refs: list

    def ref(self, table: list, i: Any, what: str) -> Any: ...

    def array(self, i: Any) -> np.ndarray: ...


# ===== writing ==================================================================================


def _number(x: Any) -> float | str | None:
    if x is None:
        return None
    f = float(x)
    if math.isfinite(f):
        return f
    return "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")


class ReportWriter:
    """Encodes a report of `trace` with the tables of `writer` (nodes, types, arrays)."""

    def __init__(self, writer: Tables, trace: Trace):
        self.writer = writer
        self.trace = trace
        self.index = {id(s): s.index for s in trace.steps}

    def step(self, step: Any) -> int:
        i = self.index.get(id(step))
        if i is None:
            raise ValueError(f"the check report names a step that is not of this trace: {step!r}")
        return i

    def report(self, report: Report, inputs: bool) -> dict:
        if report.trace is not self.trace:
            raise ValueError("trace.report is the check report of another trace")
        rec: dict[str, Any] = {
            "reference": str(report.reference or ""),
            "rtol": float(report.rtol),
            "atol": float(report.atol),
            "computed": int(report.computed),
            "cache_hits": int(report.cache_hits),
            "memo_hits": int(report.memo_hits),
            "seconds": float(report.seconds),
            "notes": [str(n) for n in report.notes],
            "steps": [self.step_check(c) for c in report.steps],
            "findings": [self.finding(f) for f in report.findings],
        }
        if inputs and getattr(report, "inputs", None) is not None:
            refs = self.inputs(report.inputs)
            if refs is not None:
                rec["inputs"] = refs
        return rec

    def step_check(self, c: Any) -> dict:
        return {
            "step": self.step(c.step),
            "status": str(c.status),
            "max_abs": _number(c.max_abs),
            "max_rel": _number(c.max_rel),
            "same_as": None if c.same_as is None else int(c.same_as),
            "computed": int(c.computed),
            "reused": int(c.reused),
            "seconds": float(c.seconds),
            "layers": [
                [str(name), _number(e.max_rel), _number(e.tolerance), self._layer_node(e.node)]
                + ([_number(e.float64)] if e.float64 is not None else [])
                for name, e in c.layers.items()
            ],
            "rule": str(getattr(c, "rule", "tolerance")),
        }

    def _layer_node(self, node: Any) -> Any:
        """A layer's node: an IR node's index, or `{"ref": i}` for another compiler's node
        stand-in (a torch.compile trace's FX node)."""
        return self.writer.node(node) if isinstance(node, Expr) else {"ref": self.writer.ref(node)}

    def finding(self, f: Any) -> dict:
        return {
            "kind": str(f.kind),
            "step": self.step(f.step),
            "nodes": [self.value(n, 1) for n in f.nodes],
            "message": str(f.message),
            "details": self.value(dict(f.details), 0),
        }

    def value(self, v: Any, depth: int) -> Any:
        """A detail value as JSON (see the module docstring for the tags)."""
        from explorer.check import NodeError
        from explorer.graph import GraphNode
        from explorer.store.errors import encode_error

        if depth > MAX_REPORT_DEPTH:
            return {"$": "text", "v": str(v)[:_TEXT_CHARS]}
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            f = _number(v)
            return f if isinstance(f, float) else {"$": "float", "v": f}
        if isinstance(v, tuple):
            return {"$": "tuple", "v": [self.value(x, depth + 1) for x in v]}
        if isinstance(v, list):
            return [self.value(x, depth + 1) for x in v]
        if isinstance(v, dict):
            return {"$": "dict", "v": [[str(k), self.value(x, depth + 1)] for k, x in v.items()]}
        if isinstance(v, NodeError):
            return {
                "$": "node_error",
                "node": self.writer.node(v.node)
                if isinstance(v.node, Expr)
                else {"ref": self.writer.ref(v.node)},  # a stand-in of another compiler's node
                "where": str(v.where),
                "max_abs": _number(v.max_abs),
                "max_rel": _number(v.max_rel),
                "shape": [self.value(d, depth + 1) for d in v.shape],
            }
        if isinstance(v, Expr):
            return {"$": "node", "v": self.writer.node(v)}
        if isinstance(v, Type):
            return {"$": "type", "v": self.writer.type(v)}
        if isinstance(v, BaseException):
            return {"$": "error", **encode_error(v)}
        if isinstance(v, GraphNode):
            return v.id
        if hasattr(v, "prov") and id(v) in getattr(self.writer, "_ref_ids", {}):
            return {"$": "ref", "v": self.writer.ref(v)}  # another compiler's node stand-in
        if id(v) in self.index:
            return {"$": "step", "v": self.index[id(v)]}
        return {"$": "text", "v": str(v)[:_TEXT_CHARS]}

    def inputs(self, values: Any) -> list[int] | None:
        """The inputs' array references, or None (with a warning) when they cannot be kept:
        over the size limit, or of a type a trace file cannot hold."""
        try:
            arrays = [np.asarray(x) for x in values]
            total = sum(a.nbytes for a in arrays)
            if total > MAX_REPORT_INPUT_BYTES:
                raise ValueError(
                    f"{total / 2**20:.0f} MiB, over the {MAX_REPORT_INPUT_BYTES >> 20} MiB "
                    "limit for them"
                )
            for a in arrays:
                DType.of(a.dtype)
        except (TypeError, ValueError) as e:
            warnings.warn(f"the check's inputs are not saved with its report: {e}", stacklevel=4)
            return None
        return [self.writer.array(a) for a in arrays]


# ===== reading ==================================================================================


class ReportReader:
    """Builds the Report of `report.json` on the loaded `trace`, checking every field."""

    def __init__(self, reader: ReadTables, trace: Trace):
        self.reader, self.trace, self.path = reader, trace, reader.path

    def bad(self, what: str) -> TraceFileError:
        return TraceFileError(f"{self.path}: damaged passlens trace file (check report: {what})")

    # ----- fields ---------------------------------------------------------------------------
    def field(self, rec: dict, key: str, types: type | tuple, what: str = "") -> Any:
        if key not in rec:
            raise self.bad(f"no {what or key}")
        v = rec[key]
        if isinstance(v, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
            raise self.bad(f"{what or key} is {v!r}")
        if not isinstance(v, types):
            raise self.bad(f"{what or key} is a {type(v).__name__}")
        return v

    def count(self, rec: dict, key: str, what: str = "") -> int:
        """A count of values computed or reused: an int (the check's bookkeeping can make a
        step's count negative: taken as it was written)."""
        return self.field(rec, key, int, what)

    def finite(self, rec: dict, key: str, what: str = "") -> float:
        v = float(self.field(rec, key, (int, float), what))
        if not math.isfinite(v) or v < 0:
            raise self.bad(f"{what or key} is {v!r}, not a finite number >= 0")
        return v

    def error(self, v: Any, what: str, optional: bool = True) -> float | None:
        """An error value: a number >= 0, infinite or NaN (None if `optional`)."""
        if v is None and optional:
            return None
        if isinstance(v, str) and v in _NONFINITE:
            v = _NONFINITE[v]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise self.bad(f"{what} is {v!r}, not an error (a number >= 0, inf or nan)")
        return float(v)

    def text(self, v: Any, what: str) -> str:
        if not isinstance(v, str):
            raise self.bad(f"{what} is not text")
        return v

    def step(self, v: Any, what: str):
        steps = self.trace.steps
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(steps):
            raise self.bad(f"{what} names step {v!r}; the trace has {len(steps)}")
        return steps[v]

    def stand_in(self, v: Any, what: str) -> Any:
        """Another compiler's node stand-in, from the trace's ref table."""
        return self.reader.ref(self.reader.refs, v, f"{what}'s node stand-in")

    def node(self, v: Any, what: str) -> Expr:
        nodes = self.reader.nodes
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(nodes):
            raise self.bad(f"{what} names node {v!r}")
        if not isinstance(nodes[v], Expr):
            raise self.bad(f"{what} names node {v}, which is not a value")
        return nodes[v]

    # ----- the report -------------------------------------------------------------------------
    def report(self, rec: Any) -> Report:
        from explorer.check import Report

        if not isinstance(rec, dict):
            raise self.bad("report.json is not a record")
        notes = self.field(rec, "notes", list)
        checks = [self.step_check(c, k) for k, c in enumerate(self.field(rec, "steps", list))]
        if len({c.step.index for c in checks}) != len(checks):
            raise self.bad("a step is checked twice")
        findings = self.field(rec, "findings", list)
        if len(findings) > MAX_FINDINGS:
            raise LimitError(
                f"{self.path}: the check report has {len(findings)} findings, over the limit "
                f"of {MAX_FINDINGS}"
            )
        report = Report(
            self.trace,
            [self.finding(f, k) for k, f in enumerate(findings)],
            checks,
            self.field(rec, "reference", str),
            self.finite(rec, "rtol"),
            self.finite(rec, "atol"),
            self.count(rec, "computed"),
            self.count(rec, "cache_hits"),
            self.count(rec, "memo_hits"),
            self.finite(rec, "seconds"),
            [self.text(n, "a note") for n in notes],
            inputs=self.inputs(rec.get("inputs")),
        )
        return report

    def step_check(self, rec: Any, k: int):
        from explorer.check import LayerError, StepCheck

        what = f"step check {k}"
        if not isinstance(rec, dict):
            raise self.bad(f"{what} is not a record")
        same_as = rec.get("same_as")
        layers: dict[str, LayerError] = {}
        for entry in self.field(rec, "layers", list, f"{what}'s layers"):
            if not isinstance(entry, list) or len(entry) not in (4, 5):
                raise self.bad(
                    f"{what} has a layer that is not [name, max_rel, tolerance, node(, float64)]"
                )
            name = self.text(entry[0], f"a layer name of {what}")
            layers[name] = LayerError(
                self.error(entry[1], f"{what}'s max_rel of {name!r}", optional=False),
                self.error(entry[2], f"{what}'s tolerance of {name!r}", optional=False),
                self.stand_in(entry[3].get("ref"), f"{what}'s layer {name!r}")
                if isinstance(entry[3], dict)
                else self.node(entry[3], f"{what}'s layer {name!r}"),
                self.error(entry[4], f"{what}'s float64 share of {name!r}", optional=False)
                if len(entry) == 5
                else None,
            )
        rule = rec.get("rule", "tolerance")
        if rule not in ("tolerance", "float64"):
            raise self.bad(f"{what}'s rule is not 'tolerance' or 'float64'")
        return StepCheck(
            self.step(rec.get("step"), what),
            self.field(rec, "status", str, f"{what}'s status"),
            self.error(rec.get("max_abs"), f"{what}'s max_abs"),
            self.error(rec.get("max_rel"), f"{what}'s max_rel"),
            None if same_as is None else self.step(same_as, f"{what}'s same_as").index,
            self.count(rec, "computed", f"{what}'s computed"),
            self.count(rec, "reused", f"{what}'s reused"),
            self.finite(rec, "seconds", f"{what}'s seconds"),
            layers,
            rule,
        )

    def finding(self, rec: Any, k: int):
        from explorer.check import Finding

        what = f"finding {k}"
        if not isinstance(rec, dict):
            raise self.bad(f"{what} is not a record")
        kind = self.field(rec, "kind", str, f"{what}'s kind")
        if not kind:
            raise self.bad(f"{what} has no kind")
        nodes = [
            self.value(n, f"{what}'s nodes", 1)
            for n in self.field(rec, "nodes", list, f"{what}'s nodes")
        ]
        stand_ins = {id(r) for r in self.reader.refs}
        if any(not isinstance(n, (Expr, str)) and id(n) not in stand_ins for n in nodes):
            raise self.bad(f"{what} names something that is neither a node nor a node id")
        details = self.value(self.field(rec, "details", dict, f"{what}'s details"), what, 0)
        if not isinstance(details, dict):
            raise self.bad(f"{what}'s details are not a mapping")
        self.known_details(details, what)
        return Finding(
            kind,
            self.step(rec.get("step"), what),
            nodes,
            self.field(rec, "message", str, f"{what}'s message"),
            details,
        )

    def known_details(self, details: dict, what: str) -> None:
        """The details the views read must have the shape the check gives them."""
        from explorer.check import NodeError

        errors = details.get("node_errors", [])
        if not isinstance(errors, list) or not all(isinstance(e, NodeError) for e in errors):
            raise self.bad(f"{what}'s node_errors are not a list of node errors")
        growth = details.get("growth", [])
        kinds = (str, int, int, str)
        if not isinstance(growth, list) or not all(
            isinstance(g, tuple)
            and len(g) == 4
            and all(
                isinstance(x, t) and not isinstance(x, bool) for x, t in zip(g, kinds, strict=True)
            )
            for g in growth
        ):
            raise self.bad(f"{what}'s growth is not a list of (name, bytes, delta, reason)")

    def value(self, v: Any, what: str, depth: int) -> Any:
        """A detail value back from JSON (see the module docstring for the tags)."""
        from explorer.check import NodeError
        from explorer.store.errors import decode_error

        if depth > MAX_REPORT_DEPTH + 1:
            raise self.bad(f"{what} nests deeper than {MAX_REPORT_DEPTH}")
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return v  # (an error may be NaN or infinite: JSON as Python reads it can say so)
        if isinstance(v, list):
            return [self.value(x, what, depth + 1) for x in v]
        if not isinstance(v, dict):
            raise self.bad(f"{what} holds a {type(v).__name__}")
        tag = v.get("$")
        body = v.get("v")
        if tag == "float" and body in _NONFINITE:
            return _NONFINITE[body]
        if tag == "tuple" and isinstance(body, list):
            return tuple(self.value(x, what, depth + 1) for x in body)
        if tag == "dict" and isinstance(body, list):
            out = {}
            for item in body:
                if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
                    raise self.bad(f"{what} has a mapping entry that is not [key, value]")
                out[item[0]] = self.value(item[1], what, depth + 1)
            return out
        if tag == "node":
            return self.node(body, what)
        if tag == "type":
            types = self.reader.types
            if isinstance(body, bool) or not isinstance(body, int) or not 0 <= body < len(types):
                raise self.bad(f"{what} names type {body!r}")
            return types[body]
        if tag == "step":
            return self.step(body, what)
        if tag == "error":
            if not isinstance(v.get("type"), str) or not isinstance(v.get("message"), str):
                raise self.bad(f"{what} holds an error without a type name and a message")
            return decode_error(v)
        if tag == "node_error":
            shape = v.get("shape")
            if not isinstance(shape, list) or not all(
                isinstance(d, (int, str)) and not isinstance(d, bool) for d in shape
            ):
                raise self.bad(f"{what} holds a node error whose shape is not a list of sizes")
            node = v.get("node")
            return NodeError(
                self.stand_in(node.get("ref"), what)
                if isinstance(node, dict)
                else self.node(node, what),
                self.text(v.get("where"), f"{what}'s node error source"),
                self.error(v.get("max_abs"), f"{what}'s node error max_abs", optional=False),
                self.error(v.get("max_rel"), f"{what}'s node error max_rel", optional=False),
                tuple(shape),
            )
        if tag == "text" and isinstance(body, str):
            return body
        if tag == "ref":
            return self.stand_in(body, what)
        raise self.bad(f"{what} holds a value tagged {str(tag)[:40]!r} that is not understood")

    def inputs(self, refs: Any) -> tuple | None:
        if refs is None:
            return None
        if not isinstance(refs, list):
            raise self.bad("inputs is not a list of arrays")
        reader, total = self.reader, 0
        for i in refs:
            spec = reader.ref(reader.array_specs, i, "array reference")
            try:
                shape = [int(d) for d in spec["shape"]]
                nbytes = math.prod(shape) * DType.of(spec["dtype"]).itemsize
            except (KeyError, TypeError, ValueError):
                raise self.bad(f"input array {i} has no dtype and shape") from None
            total += max(nbytes, 0)
            if total > MAX_REPORT_INPUT_BYTES:
                raise LimitError(
                    f"{self.path}: the check report's inputs are over the "
                    f"{MAX_REPORT_INPUT_BYTES >> 20} MiB limit for them; not read"
                )
        return tuple(reader.array(i) for i in refs)


__all__ = ["MEMBER", "ReportReader", "ReportWriter"]
