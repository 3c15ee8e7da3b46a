"""Export one step of a trace for the viewers users already have.

`format="model-explorer"`: the graph JSON that Google's Model Explorer
(`pip install ai-edge-model-explorer`; `model-explorer FILE.json`) loads with its built-in
JSON adapter: a graph collection `{"label", "graphs": [Graph, ...]}` whose graphs, nodes,
incoming edges and metadata follow `model_explorer/graph_builder.py` (one graph per IR
function; a call's node links to its callee's graph). Namespaces are the nodes' provenance
(the torch module path `layer1.0.conv` becomes `layer1/0/conv`), every output carries
`tensor_shape` (what Model Explorer writes on edges), attributes, provenance and parameter
bytes are node attributes. Node data files next to it (the format of
`model_explorer/node_data_builder.py`, keyed by graph id) colour the nodes by parameter bytes
and, given a check report, by each node's max relative error against the reference; open them
with `model-explorer FILE.json --node_data_paths=A,B`.

`format="onnx"`: the step's module as an ONNX file for Netron, written by its compiler's
adapter (`Adapter.to_onnx`, the `onnx_export` capability: passlens's exporter for its IR);
a step that cannot be written says which node and op stop it.

Every name and string comes from the model: the JSON is written with `json.dumps`
(`ensure_ascii`, no NaN or infinity), so any name (quotes, newlines, unicode) stays data.

Errors that are not finite (a float16 overflow gives an infinite relative error; a NaN the
check judged beyond tolerance) are what this export exists to show, and JSON has no infinity:
Model Explorer's page reads node data with `JSON.parse` and colours a result by the gradient
only when its value is a number (`processNodeDataProviderDataForGraph`: the gradient's range
is the min and max of the numeric values, a result's own `bgColor` wins). So such a result
is the string `"inf"` or `"nan"` with its own colour, the top of the gradient: the finite
errors keep their scale, the node shows `inf`. Attribute values are strings anyway.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler import PasslensError

if TYPE_CHECKING:
    from explorer.graph import GraphModel, GraphNode
    from explorer.step import Step, TraceSteps

FORMATS = ("model-explorer", "onnx")
MAX_ATTR_CHARS = 2000  # an attribute's text is cut after this many characters
BEYOND_COLOR = "#d93025"  # border of a node whose error is beyond tolerance
WORST_FILL = "#f28b82"  # the top of the error gradient: a node whose error is inf or nan


class ExportError(PasslensError, ValueError):
    """A step cannot be exported: an unknown format, a step without a module, an op with no
    ONNX lowering (the message names the node and the op)."""


def export(trace: TraceSteps, step: Any, path, format: str = "model-explorer", report=None) -> list:
    """Write `step` (a Step, its index or its pass name) of `trace` to `path` as
    `format` (`model-explorer` or `onnx`); with a check `report` (model-explorer only)
    each node's max error goes in too. Returns the paths written: the graph first, then the
    node data files (model-explorer)."""
    if format not in FORMATS:
        raise ExportError(f"unknown export format {format!r}; use one of: {', '.join(FORMATS)}")
    s = _step_of(trace, step)
    path = Path(path)
    if format == "onnx":
        if report is not None:
            raise ExportError("a check report goes into the model-explorer format only")
        return [_write_onnx(s, path)]
    graph_json, node_data = model_explorer_json(s, report)
    _write_json(path, graph_json)
    written = [path]
    for kind, data in node_data.items():
        out = path.with_name(f"{path.stem}.{kind}{path.suffix or '.json'}")
        _write_json(out, data)
        written.append(out)
    return written


def _step_of(trace: TraceSteps, step: Any) -> Step:
    if hasattr(step, "index") and getattr(step, "trace", None) is trace:
        return step
    if isinstance(step, bool) or not isinstance(step, (int, str)):
        raise ExportError(f"give a step as a Step, an index or a pass name, not {step!r}")
    try:
        return trace[step]
    except IndexError:
        raise ExportError(f"no step {step}: the trace has steps 0 to {len(trace) - 1}") from None
    except KeyError as e:
        raise ExportError(str(e.args[0])) from None


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, indent=1)
    path.write_text(text + "\n", encoding="ascii")


# ===== ONNX ===================================================================================


def _write_onnx(step: Step, path: Path) -> Path:
    from explorer.adapters import Unsupported, get_adapter

    module = step.shown_module
    where = f"step {step.index} ({step.name})"
    if module is None:
        raise ExportError(
            f"{where} holds the {step.kind} graph, not an IR module: export the import step "
            "or a later one"
        )
    compiler = getattr(module, "compiler", None) or "passlens"  # passlens's IR names none
    try:
        model = get_adapter(compiler).to_onnx(module)  # the ONNX_EXPORT capability
    except Unsupported:
        raise ExportError(
            f"{where} holds a {compiler} module, which its adapter cannot write as ONNX (ONNX "
            "export writes passlens's own IR); use format='model-explorer' for its graph"
        ) from None
    except ExportError as e:
        raise ExportError(f"cannot write {where} as ONNX: {e}") from None
    path.write_bytes(model.SerializeToString())
    return path


# ===== Model Explorer =========================================================================


def model_explorer_json(step: Step, report=None) -> tuple[dict, dict[str, dict]]:
    """The graph collection of `step` and its node data (`{"param_bytes": ...,
    "max_error": ...}`, each keyed by graph id), as JSON-ready dicts."""
    g = step.graph
    errors = node_errors(step, report) if report is not None else {}
    notes = _finding_notes(step, report) if report is not None else {}
    by_function: dict[str, list[str]] = {}
    for nid, node in g.nodes.items():
        by_function.setdefault(node.function, []).append(nid)
    shared = by_function.pop("", [])  # weights: in every graph that uses them
    if not by_function:
        by_function = {"main": shared}
        shared = []
    graph_ids = {f: f or "main" for f in by_function}
    incoming: dict[str, list] = {}
    for e in g.edges:
        incoming.setdefault(e.dst, []).append(e)
    graphs, bytes_data, error_data = [], {}, {}
    for fname, ids in by_function.items():
        gid = graph_ids[fname]
        used = {e.src for nid in ids for e in incoming.get(nid, ())}
        members = [nid for nid in shared if nid in used] + ids
        nodes = [
            _node(g, g.nodes[nid], incoming.get(nid, ()), graph_ids, errors, notes)
            for nid in members
        ]
        graphs.append({"id": gid, "nodes": nodes})
        sizes = {nid: g.nodes[nid].nbytes for nid in members if g.nodes[nid].nbytes}
        if sizes:
            bytes_data[gid] = _node_data("parameter bytes", sizes)
        errs = {nid: errors[nid][0] for nid in members if nid in errors}
        if errs:
            error_data[gid] = _node_data("max rel error", errs)
    label = f"passlens step {step.index} {step.name}".strip()
    node_data = {}
    if bytes_data:
        node_data["param_bytes"] = bytes_data
    if error_data:
        node_data["max_error"] = error_data
    return {"label": label, "graphs": graphs}, node_data


def _node(
    g: GraphModel,
    node: GraphNode,
    edges,
    graph_ids: dict[str, str],
    errors: dict,
    notes: dict,
) -> dict:
    attrs = [("name", node.label), ("kind", node.kind), ("op", node.op), ("type", node.type)]
    attrs += [(k, v) for k, v in node.attrs.items()]
    attrs += [(f"provenance.{k}", v) for k, v in node.provenance.items() if v not in (None, "")]
    if node.nbytes:
        attrs.append(("parameter bytes", node.nbytes))
    style = None
    if node.id in errors:
        rel, beyond = errors[node.id]
        attrs.append(("max rel error", _error_text(rel)))
        if beyond:
            attrs.append(("beyond tolerance", "yes"))
            style = {"borderColor": BEYOND_COLOR, "hoveredBorderColor": BEYOND_COLOR}
    for text in notes.get(node.id, ()):
        attrs.append(("finding", text))
        style = {"borderColor": BEYOND_COLOR, "hoveredBorderColor": BEYOND_COLOR}
    callee = node.op[1:] if node.kind == "call" else None
    out = {
        "id": node.id,
        "label": _label(node),
        "namespace": namespace_of(node.group),
        "subgraphIds": [graph_ids[callee]] if callee in graph_ids else [],
        "attrs": [{"key": _text(k), "value": _text(v)} for k, v in attrs],
        "incomingEdges": [
            {
                "sourceNodeId": e.src,
                "sourceNodeOutputId": "0",
                "targetNodeInputId": str(e.index),
            }
            for e in sorted(edges, key=lambda e: e.index)
            if e.src in g.nodes
        ],
        "outputsMetadata": [
            {
                "id": "0",
                "attrs": [
                    {"key": "tensor_shape", "value": _text(tensor_shape(node))},
                    {"key": "__tensor_tag", "value": _text(node.label)},
                ],
            }
        ],
        "inputsMetadata": [],
    }
    if style is not None:
        out["style"] = style
    return out


def _label(node: GraphNode) -> str:
    """What Model Explorer writes on the node: the op, or the name of an input / weight."""
    if node.kind in ("op", "call", "tuple", "item", "if", "output"):
        return _text(node.op)
    return _text(node.label)


def namespace_of(group: str) -> str:
    """A provenance module path as a Model Explorer namespace: `a.b.0` -> `a/b/0`."""
    return "/".join(p for p in re.split(r"[./]", _text(group or "")) if p.strip())


def tensor_shape(node: GraphNode) -> str:
    """`f32[1,3,8,8]` when the shape is known, else the type's text."""
    if node.shape is not None and node.dtype:
        return f"{node.dtype}[{','.join(str(d) for d in node.shape)}]"
    return node.type


def _node_data(name: str, values: dict[str, float]) -> dict:
    return {
        "name": name,
        "results": {nid: _result(v) for nid, v in values.items()},
        "gradient": [
            {"stop": 0, "bgColor": "#ffffff"},
            {"stop": 1, "bgColor": WORST_FILL},
        ],
    }


def _result(value: float) -> dict:
    """A node data result: a finite number, or `"inf"` / `"nan"` with its own colour (JSON
    has no infinity; Model Explorer leaves non-numeric values out of the gradient's range)."""
    value = float(value)
    if math.isfinite(value):
        return {"value": value}
    return {"value": _error_text(value), "bgColor": WORST_FILL}


def _error_text(value: float) -> str:
    """An error as an attribute's text: `0.25`, `inf`, `nan`."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return str(value)


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if len(text) > MAX_ATTR_CHARS:
        text = text[:MAX_ATTR_CHARS] + "..."
    return text


# ===== what a check report says about the nodes ================================================


def node_errors(step: Step, report) -> dict[str, tuple[float, bool]]:
    """Node id -> (max relative error, beyond tolerance) of the nodes a check `report`
    compared with the reference at `step`: a diverged finding's node errors, every source
    layer's output and, on the output node, the step's outputs (the numbers of the step whose
    module this step shows, if any)."""
    g = step.graph
    out: dict[str, tuple[float, bool]] = {}

    def put(expr, rel, beyond: bool) -> None:
        node = g.node_of(expr)
        if node is None or rel is None:
            return
        rel = float(rel)
        if math.isnan(rel) and not beyond:  # not judged: nothing to show
            return
        old = out.get(node.id, (0.0, False))
        out[node.id] = (_worse(old[0], rel), old[1] or beyond)

    wanted = {step.index}
    checks = list(getattr(report, "steps", None) or [])
    for sc in checks:
        if _is_step(getattr(sc, "step", None), step) and getattr(sc, "same_as", None) is not None:
            wanted.add(sc.same_as)
    outputs = [n for n in g.nodes.values() if n.kind == "output"]
    output = next((n for n in outputs if n.function == "main"), outputs[0] if outputs else None)
    for sc in checks:
        if getattr(getattr(sc, "step", None), "index", None) in wanted:
            for layer in (getattr(sc, "layers", None) or {}).values():
                put(layer.node, layer.max_rel, bool(getattr(layer, "beyond", False)))
            rel = getattr(sc, "max_rel", None)
            beyond = getattr(sc, "status", "") == "diverged"
            if output is not None and rel is not None and (beyond or not math.isnan(rel)):
                # the step's outputs against the reference: on the output node
                old = out.get(output.id, (0.0, False))
                out[output.id] = (_worse(old[0], float(rel)), old[1] or beyond)
    for f in getattr(report, "findings", None) or []:
        if getattr(getattr(f, "step", None), "index", getattr(f, "step", None)) in wanted:
            for e in (getattr(f, "details", None) or {}).get("node_errors", []):
                put(getattr(e, "node", None), getattr(e, "max_rel", None), True)
    return out


def _worse(a: float, b: float) -> float:
    """The worse of two errors: inf, then nan (not comparable, judged beyond), then larger."""
    for x in (a, b):
        if math.isinf(x):
            return x
    for x in (a, b):
        if math.isnan(x):
            return x
    return max(a, b)


def _finding_notes(step: Step, report) -> dict[str, list[str]]:
    """Node id -> the messages of the report's findings that point at that node."""
    g = step.graph
    notes: dict[str, list[str]] = {}
    for f in getattr(report, "findings", None) or []:
        if not _is_step(getattr(f, "step", None), step):
            continue
        for expr in getattr(f, "nodes", None) or []:
            node = g.node_of(expr)
            if node is not None:
                text = f"[{getattr(f, 'kind', '')}] {getattr(f, 'message', '')}"
                notes.setdefault(node.id, []).append(text)
    return notes


def _is_step(candidate, step: Step) -> bool:
    if candidate is step:
        return True
    if isinstance(candidate, int):
        return candidate == step.index
    return getattr(candidate, "index", None) == step.index and (
        getattr(candidate, "trace", None) is step.trace
    )


__all__ = ["FORMATS", "ExportError", "export", "model_explorer_json", "node_errors"]
