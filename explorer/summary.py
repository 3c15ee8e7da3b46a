"""One renderer for the per-step tables: the trace summary (`repr(trace)`, a trace in a
notebook cell), the check report's numbers, and the widgets' summary with badges.

A table is a list of `Column` s over rows (dicts): each column says how its cell reads
as text and as HTML, and how it is aligned. `text_table` and `html_table` render
the same columns, so the text and the HTML form of a table cannot drift apart. Every string
from a row is escaped in HTML (names come from models: untrusted)."""

from __future__ import annotations

import html
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from explorer.fmt import format_bytes, signed, signed_bytes

if TYPE_CHECKING:
    from explorer.step import TraceSteps

Row = dict[str, Any]

NAME_WIDTH = 34  # the pass column of text tables, nesting included
OPS_SHOWN = 4  # op-count changes shown in the ops column before "... and N more"

# Jupyter's and nbconvert's stylesheets right-align every table cell: each cell says how it is
# aligned, as a style (Jupyter) and as an ``align`` attribute (kept by code hosts that strip
# styles), so names stay left and numbers right wherever the table is read
_LEFT = "style='text-align:left' align='left'"
_RIGHT = "style='text-align:right' align='right'"
_NAME = "style='text-align:left;white-space:nowrap' align='left' nowrap"


@dataclass(frozen=True)
class Column:
    """A column: its `title`, its cell as text (`text(row)`), its alignment, its width in
    text tables (None: as wide as its widest cell; the last column is never padded) and, for
    HTML, the cell's markup when it is more than the escaped text (`html(row)`) and the
    cell's attributes (`attrs(row)`, e.g. `class='num'`)."""

    title: str
    text: Callable[[Row], str]
    right: bool = False
    width: int | None = None
    html: Callable[[Row], str] | None = None
    attrs: Callable[[Row], str] | None = None


def indented_name(row: Row) -> str:
    """A step's name indented by its nesting depth (text)."""
    return ("  " * row["depth"] + row["pass"])[:NAME_WIDTH]


def indented_name_html(row: Row) -> str:
    """A step's name indented by its nesting depth (HTML: non-breaking spaces, which survive
    sanitisers and whitespace collapsing, so the passes nested under `default` read as
    nested in Jupyter, on a code host and in a converted notebook alike)."""
    return "&nbsp;" * 4 * row["depth"] + html.escape(row["pass"])


def ops_text(row: Row, shown: int = OPS_SHOWN) -> str:
    """A summary row's ops cell: its first `shown` op-count changes (the biggest growth
    first, then the biggest shrinkage, as `Diff.op_count_changes` orders them), then
    `... and N more` (N at least 2: one more is shown), then its note (the artifact's
    size); a row without op changes (a skipped pass: its reason) reads its `ops` as
    they are."""
    changes = row.get("op_changes")
    if changes is None:
        return row.get("ops", "")
    items = [f"{v:+d} {k}" for k, v in changes.items()]
    if len(items) <= shown + 1:  # "... and 1 more" would take the room of the one it hides
        text = ", ".join(items)
    else:
        text = ", ".join(items[:shown]) + f" ... and {len(items) - shown} more"
    note = row.get("note", "")
    return f"{text}; {note}" if text and note else text or note


def ops_title(row: Row) -> str:
    """The `title` attribute of a capped ops cell: every op-count change (none when the cell
    shows them all)."""
    changes = row.get("op_changes") or {}
    if len(changes) <= OPS_SHOWN + 1:
        return ""
    full = ", ".join(f"{v:+d} {k}" for k, v in changes.items())
    return f"{_LEFT} title='{html.escape(full, quote=True)}'"


def ops_column(title: str = "ops") -> Column:
    """The ops column of a summary row: capped at `OPS_SHOWN` changes (all of them in
    the HTML cell's tooltip)."""
    return Column(title, ops_text, attrs=ops_title)


def step_column(title: str = "#") -> Column:
    """The step index, right-aligned."""
    return Column(title, lambda r: str(r["step"]), right=True, width=3)


def name_column(title: str = "pass") -> Column:
    """The step's name, indented by depth (in HTML on one line: a wrapped name would break
    the indentation)."""
    return Column(
        title, indented_name, width=NAME_WIDTH, html=indented_name_html, attrs=lambda r: _NAME
    )


def text_table(columns: Sequence[Column], rows: Sequence[Row]) -> str:
    """The rows as a plain-text table under a header line (columns two spaces apart after
    the first, one elsewhere, as `repr(trace)` has always read)."""
    cells = [[c.text(r) for c in columns] for r in rows]
    widths = []
    for k, c in enumerate(columns):
        if c.width is not None:
            widths.append(c.width)
        else:
            widths.append(max([len(c.title), *(len(line[k]) for line in cells)]))
    last = len(columns) - 1

    def line(values: Sequence[str]) -> str:
        parts = []
        for k, (c, v) in enumerate(zip(columns, values, strict=True)):
            if k == last and not c.right:
                parts.append(v)
            else:
                parts.append(v.rjust(widths[k]) if c.right else v.ljust(widths[k]))
        out = parts[0]
        for k in range(1, len(parts)):
            out += ("  " if k in (1, last) else " ") + parts[k]
        return out.rstrip()

    return "\n".join([line([c.title for c in columns]), *(line(v) for v in cells)])


def html_table(
    columns: Sequence[Column],
    rows: Sequence[Row],
    table_attrs: str = "",
    row_attrs: Callable[[Row], str] | None = None,
) -> str:
    """The rows as an HTML table (escaped cells; every cell and heading aligned as its column
    says, right or left, unless its `attrs` say otherwise; `row_attrs(row)` adds
    attributes to a row's `<tr>`)."""
    head = "".join(
        f"<th {_RIGHT if c.right else _LEFT}>{html.escape(c.title)}</th>" for c in columns
    )
    body = []
    for r in rows:
        tds = []
        for c in columns:
            inner = c.html(r) if c.html is not None else html.escape(c.text(r))
            attrs = c.attrs(r) if c.attrs is not None else ""
            if not attrs:
                attrs = _RIGHT if c.right else _LEFT
            tds.append(f"<td{' ' + attrs if attrs else ''}>{inner}</td>")
        tr = row_attrs(r) if row_attrs is not None else ""
        body.append(f"<tr{' ' + tr if tr else ''}>{''.join(tds)}</tr>")
    table = f"<table {table_attrs}>" if table_attrs else "<table>"
    return f"{table}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


# ===== the trace summary ======================================================================


def _blank_if_skipped(text: Callable[[Row], str]) -> Callable[[Row], str]:
    return lambda r: "" if r["status"] == "skipped" else text(r)


TRACE_COLUMNS = (
    step_column(),
    name_column(),
    Column("status", lambda r: r["status"], width=9),
    Column("nodes", _blank_if_skipped(lambda r: str(r["nodes"])), right=True, width=6),
    Column("Δ", _blank_if_skipped(lambda r: signed(r["node_delta"])), right=True, width=5),
    Column(
        "params", _blank_if_skipped(lambda r: format_bytes(r["param_bytes"])), right=True, width=12
    ),
    Column(
        "Δ params",
        _blank_if_skipped(lambda r: signed_bytes(r["param_delta"], zero="")),
        right=True,
        width=11,
    ),
    Column("shapes", lambda r: str(r["shapes"] or ""), right=True, width=6),
    Column("ms", _blank_if_skipped(lambda r: f"{r['ms']:.1f}"), right=True, width=8),
    ops_column(),
)


def trace_rows(trace: TraceSteps) -> list[Row]:
    """`trace.summary()` and, after it, a row for each pass skipped (status `skipped`,
    step `-`, the reason in the ops column)."""
    rows = list(trace.summary())
    for k in trace.skipped:
        rows.append(
            {"step": "-", "depth": k.depth, "pass": k.spec, "status": "skipped", "shapes": 0}
            | {"ops": k.reason}
        )
    return rows


FIRST_CALL_NOTE_MS = 1000.0
"""An import step slower than this gets a note under the table: it is mostly one-time cost."""


def trace_text(trace: TraceSteps) -> str:
    """The trace summary as a plain-text table (`repr(trace)`), the opaque ops if any, and a
    note when the import was slow (mostly a first call's one-time cost)."""
    text = text_table(TRACE_COLUMNS, trace_rows(trace))
    extra = [t for t in (source_warning(trace), opaque_text(trace), first_call_note(trace)) if t]
    extra += [str(n) for n in getattr(trace, "record_notes", ()) or ()]
    return "\n".join([text, *extra])


_REFUSALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # trace -> its warning


def source_warning(trace: TraceSteps) -> str:
    """A warning when the trace's source is an ONNX model onnxruntime refuses ("" otherwise):
    a check would then compare the steps with the import, so nothing confirms what the file
    computes. Found by making one InferenceSession of the model with every graph optimization
    off (nothing runs), the first time a summary asks, and kept for the trace."""
    if getattr(trace, "frontend", "") != "onnx" or not isinstance(trace.source, dict):
        return ""
    try:
        return _REFUSALS[trace]
    except (KeyError, TypeError):
        pass
    reason = onnxruntime_refusal(trace.source.get("model"))
    warning = ""
    if reason:
        imported = next((s for s in trace.steps if s.kind == "import"), None)
        where = f" (#{imported.index} {imported.name})" if imported is not None else ""
        warning = (
            f"warning: onnxruntime refuses this model: {reason}; a check compares the steps "
            f"with the import{where} instead, so nothing confirms what the file computes"
        )
    try:
        _REFUSALS[trace] = warning
    except TypeError:  # a trace-like object that takes no weak reference: not kept
        pass
    return warning


def onnxruntime_refusal(model) -> str | None:
    """Why onnxruntime cannot make an InferenceSession of the ONNX `model` (optimizations
    off, CPUExecutionProvider; the reason escaped and cut, as the check's child process
    says it), or None when it can (or onnxruntime is not installed, or the session ran out
    of memory: no refusal of the model)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    from compiler.opaque import escape

    if model is None or not hasattr(model, "SerializeToString"):
        return None
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except MemoryError:
        return None
    except Exception as e:  # what onnxruntime says of the file
        if "failed to allocate" in str(e).lower():
            return None
        return escape(f"{type(e).__name__}: {e}", 600)
    return None


MAX_OPAQUE_PLACES = 3


def opaque_ops(trace: TraceSteps) -> list[dict]:
    """The opaque ops of the imported module (ops without a converter, run by their own
    framework), one row per op: `target`, `runner` (torch / onnxruntime), `count` and
    `places` (the module paths, or node names, where it is used, first use first)."""
    from compiler.ir import Call, Module
    from compiler.opaque import RUNNERS

    step = next((s for s in trace.steps if s.kind == "import"), None)
    module = getattr(step, "module", None) if step is not None else None
    if not isinstance(module, Module):
        return []
    rows: dict[str, dict] = {}
    for fn in module.functions.values():
        for node in fn.iter_nodes():
            if not (isinstance(node, Call) and node.op == "opaque"):
                continue
            target = str(node.attrs["target"])
            row = rows.setdefault(
                target,
                {
                    "target": target,
                    "runner": RUNNERS.get(node.attrs["framework"], "?"),
                    "count": 0,
                    "places": [],
                },
            )
            row["count"] += 1
            place = node.prov.module_path or node.prov.source_node or node.name or "<model>"
            if place not in row["places"]:
                row["places"].append(place)
    return list(rows.values())


def opaque_text(trace: TraceSteps) -> str:
    """Lines naming the opaque ops of the trace ("" when there are none)."""
    rows = opaque_ops(trace)
    if not rows:
        return ""
    lines = [
        f"{len(rows)} opaque op(s): no converter, so passes leave them as they are and "
        "their own framework computes their values (compiled code calls it on the host)"
    ]
    for r in rows:
        places = r["places"]
        shown = ", ".join(places[:MAX_OPAQUE_PLACES])
        if len(places) > MAX_OPAQUE_PLACES:
            shown += f" and {len(places) - MAX_OPAQUE_PLACES} more"
        lines.append(f"  {r['target']} x{r['count']} (run by {r['runner']})  at {shown}")
    untrusted = _untrusted(trace)
    if untrusted:
        lines.append(
            f"  not known to be pure computations, so run only when trusted: "
            f"{', '.join(untrusted)} (trust_ops=[...] / --trust-op NAME; see explorer.trust)"
        )
    return "\n".join(lines)


def _untrusted(trace: TraceSteps) -> list[str]:
    """The opaque targets of the imported step a check would refuse with the trace's own
    trust (explorer.trust)."""
    from compiler.opaque import refused as refused_opaque_ops

    step = next((s for s in trace.steps if s.kind == "import"), None)
    module = getattr(step, "module", None) if step is not None else None
    trust = frozenset(getattr(trace, "trusted_ops", ()) or ())
    return list(refused_opaque_ops(module, trust)) if module is not None else []


def first_call_note(trace: TraceSteps) -> str:
    """What a slow import's `ms` means (empty when the import was quick)."""
    slow = [s for s in trace.steps if s.kind == "import" and s.seconds * 1000 >= FIRST_CALL_NOTE_MS]
    if not slow:
        return ""
    s = slow[0]
    return (
        f"ms: wall time of each step. #{s.index} {s.name} took {s.seconds * 1000:,.0f} ms, mostly "
        "what the first import in a process pays once (loading the exporter and the op tables); "
        "importing again in the same process is much faster."
    )


_STATUS_CLASS = {"failed": "pl-failed", "unchanged": "pl-unchanged", "skipped": "pl-unchanged"}


def trace_html(trace: TraceSteps) -> str:
    """The trace summary as an HTML table (a trace in a notebook cell)."""
    table = html_table(
        TRACE_COLUMNS,
        trace_rows(trace),
        row_attrs=lambda r: (
            f"class='{_STATUS_CLASS[r['status']]}'" if r["status"] in _STATUS_CLASS else ""
        ),
    )
    style = "<style>.pl-failed{background:#fdd}.pl-unchanged{color:#888}</style>"
    warning = source_warning(trace)
    if warning:
        table += f"<div class='pl-warning'>{html.escape(warning)}</div>"
    rows = opaque_ops(trace)
    if not rows:
        return style + table
    items = "".join(
        f"<li><code>{html.escape(r['target'])}</code> &times;{r['count']} (run by "
        f"{html.escape(r['runner'])}) at {html.escape(', '.join(r['places'][:MAX_OPAQUE_PLACES]))}"
        + (
            f" and {len(r['places']) - MAX_OPAQUE_PLACES} more"
            if len(r["places"]) > MAX_OPAQUE_PLACES
            else ""
        )
        + "</li>"
        for r in rows
    )
    note = (
        f"<div class='pl-opaque'>{len(rows)} opaque op(s): no converter, so passes leave them "
        "as they are and their own framework computes their values<ul>"
        f"{items}</ul></div>"
    )
    return style + table + note


__all__ = [
    "TRACE_COLUMNS",
    "Column",
    "html_table",
    "name_column",
    "ops_column",
    "ops_text",
    "step_column",
    "summary_row",
    "summary_rows",
    "text_table",
    "trace_html",
    "trace_rows",
    "first_call_note",
    "opaque_ops",
    "opaque_text",
    "onnxruntime_refusal",
    "source_warning",
    "trace_text",
]


def summary_rows(trace) -> list[dict]:
    """One row per step: index, pass, status, node delta, op-count changes, param bytes and
    delta, changed shapes, time. `ops` is every op-count change in one line (and, on the
    compiled step, the artifact's size); a step a pass changed also has `op_changes` (op
    -> change in its count) and `note` (the artifact's size or ""), which the summary
    table reads to cap its ops column."""
    return [summary_row(s, trace=trace) for s in trace.steps]


def summary_row(s, ops: bool = True, trace=None) -> dict:
    """The summary row of step `s` (see `summary_rows`). Without `ops`, only what
    a timeline's badges read (index, pass, kind, status, nodes and their delta, param bytes
    and their delta, time): no diff, no artifact, so no graph model is made (the node and
    byte counts come from `Step.size`). `trace`: the step's own by default."""
    prev = s.previous
    d = None
    if ops and prev is not None and s.kind == "pass" and s.changed and not s.failed:
        d = s.diff(prev)  # first: it makes the graph models the counts then read
    nodes = s.node_count
    row = {
        "step": s.index,
        "depth": s.depth,
        "pass": s.name,
        "kind": s.kind,
        "status": s.status,
        "nodes": nodes,
        "node_delta": nodes - prev.node_count if prev is not None else 0,
        "param_bytes": s.param_bytes,
        "param_delta": s.param_bytes - prev.param_bytes if prev is not None else 0,
        "ms": s.seconds * 1000,
        "ops": "",
        "shapes": 0,
    }
    if not ops:
        return row
    if d is not None:
        row["ops"] = d.op_count_text()
        row["op_changes"] = dict(d.op_count_changes)
        row["note"] = ""
        row["shapes"] = len(d.shape_changes)
    trace = trace if trace is not None else s.trace
    if s.backend_stage == "compiled" and not s.failed and trace is not None and s is trace.final:
        art = s.artifact_bytes
        row["artifact_bytes"] = art
        if art is not None:
            ratio = f" = {art / s.param_bytes:.2f}x the weights" if s.param_bytes else ""
            note = f"artifact {format_bytes(art)}{ratio}"
            row["ops"] = f"{row['ops']}; {note}" if row["ops"] else note
            if "op_changes" in row:
                row["note"] = note
    return row
