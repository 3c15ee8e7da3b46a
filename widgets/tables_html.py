"""The step's tables as HTML: parameters (`param_table_html`), shapes
(`shape_table_html`) and numerics (`numerics_table_html`), sortable by a click on a
column head; and `TABLE_CSS`, the style sheet of every HTML piece (tables, the IR diff,
badges). Shared by the Jupyter widgets (`widgets.tables`), the stepper, the Panel app and
the report.
"""

from __future__ import annotations

import html
import math
from typing import Any

from explorer.diff import diff_params
from explorer.fmt import format_bytes, num, signed_bytes
from widgets.boxes import Memo, step_diff
from widgets.escape import esc
from widgets.findings import finding_nodes, findings_of

# Sorts a table by the clicked column (numbers by data-v); inline so it also works where
# <script> tags are not run (ipywidgets.HTML).
SORT_JS = (
    "var t=this.closest('table'),b=t.tBodies[0],i=this.cellIndex,"
    "d=this.dataset.dir=this.dataset.dir==='a'?'d':'a';"
    "Array.from(b.rows).sort(function(x,y){"
    "var p=x.cells[i],q=y.cells[i],m=parseFloat(p.dataset.v),n=parseFloat(q.dataset.v),"
    "c=isNaN(m)||isNaN(n)?p.textContent.localeCompare(q.textContent):m-n;"
    "return d==='a'?c:-c}).forEach(function(r){b.appendChild(r)})"
)
"""The inline handler sorting a table by the clicked column (``SORT_ONCLICK`` is the
attribute running it)."""

TABLE_CSS = """
.pl-table{border-collapse:collapse;font:12px/1.4 system-ui,sans-serif}
.pl-table th,.pl-table td{padding:2px 8px;border-bottom:1px solid #eee;text-align:left;
vertical-align:top}
.pl-table th{cursor:pointer;background:#f5f5f5;position:sticky;top:0}
.pl-table td.num{text-align:right;font-variant-numeric:tabular-nums}
.pl-table tr.pl-s-new td,.pl-table tr.pl-s-added td{background:#e8f5e9}
.pl-table tr.pl-s-removed td{background:#f5f5f5;color:#888;text-decoration:line-through}
.pl-table tr.pl-s-bloat td{background:#ffebee}
.pl-table tr.pl-s-changed td{background:#fff8e1}
.pl-table tfoot td{font-weight:600;border-top:2px solid #ccc}
.pl-diff{border-collapse:collapse;font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;
width:100%;table-layout:fixed}
.pl-diff td{white-space:pre-wrap;word-break:break-all;padding:0 6px;vertical-align:top}
.pl-diff td.ln{width:3.5em;color:#999;text-align:right;user-select:none}
.pl-diff .pl-del{background:#ffebee}.pl-diff .pl-ins{background:#e8f5e9}
.pl-diff .pl-rep{background:#fff8e1}.pl-diff .pl-skip td{color:#999;background:#fafafa}
.pl-unified{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;
word-break:break-all;margin:0}
.pl-unified .pl-del{background:#ffebee;display:block}
.pl-unified .pl-ins{background:#e8f5e9;display:block}
.pl-unified .pl-hunk{color:#6a1b9a;display:block}
.pl-badge{display:inline-block;padding:0 5px;margin-left:4px;border-radius:8px;
font-size:11px;background:#eceff1;color:#37474f}
.pl-badge.pl-b-changed{background:#e3f2fd;color:#0d47a1}
.pl-badge.pl-b-unchanged{background:#f5f5f5;color:#9e9e9e}
.pl-badge.pl-b-failed{background:#ffcdd2;color:#b71c1c}
.pl-badge.pl-b-grow{background:#ffebee;color:#b71c1c}
.pl-badge.pl-b-shrink{background:#e8f5e9;color:#1b5e20}
.pl-badge.pl-b-finding{background:#fff3e0;color:#e65100}
"""


SORT_ONCLICK = f'onclick="{html.escape(SORT_JS)}"'


def _th(name: str) -> str:
    return f'<th {SORT_ONCLICK} title="sort">{esc(name)}</th>'


def _td(text: Any, v: Any = None, num: bool = False) -> str:
    attrs = (' class="num"' if num else "") + (f' data-v="{esc(v)}"' if v is not None else "")
    return f"<td{attrs}>{esc(text)}</td>"


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _elements(shape) -> int | str:
    """A shape's element count for sorting; a symbolic dim (text, `n`) counts as 1."""
    return math.prod(d for d in shape if isinstance(d, int)) if shape else 1


def param_rows(step, baseline=None) -> list[dict]:
    """One row per parameter of `step` (and per parameter of `baseline` it no longer
    has): name, shape, dtype, bytes, status, and `bloat` when it made the total grow.
    Status against `baseline`: new, removed, resized, cast, new values, renamed from X,
    duplicate of X, N copies of X, X transposed; without a baseline, only duplicates and
    copies within the step."""
    params = step.graph.params
    if baseline is not None:
        pd = step_diff(baseline, step).params if baseline is not step else None
    else:
        pd = diff_params({}, params)
    status: dict[str, str] = {}
    bloat: set[str] = set()
    if pd is not None:
        if baseline is not None:
            for p in pd.added:
                status[p.name] = "new"
            for r in pd.resized:
                status[r.name] = f"resized {_shape_text(r.before)} -> {_shape_text(r.after)}"
            for n in pd.values_changed:
                status[n] = "new values"
            for s in pd.renamed:
                status[s.name] = f"renamed from {s.source}"
            for c in pd.cast:
                status[c.name] = f"cast {c.before} -> {c.after}" + (
                    "" if c.name == c.source else f" from {c.source}"
                )
            for c in pd.permuted:
                status[c.name] = f"{c.source} {'transposed' if c.transposed else 'reshaped'}"
            bloat = {g.name for g in pd.growth}
        order = {k: i for i, k in enumerate(params)}
        for s in pd.duplicated:
            # within one step both of a pair look like duplicates: the later one is the copy
            if baseline is not None or order.get(s.source, -1) < order.get(s.name, -1):
                status[s.name] = f"duplicate of {s.source}"
        for c in pd.broadcast:
            status[c.name] = f"{c.copies} copies of {c.source}" + (
                " (transposed)" if c.transposed else ""
            )
    rows = []
    for key, p in params.items():
        rows.append(
            {
                "name": key,
                "shape": tuple(p.shape),
                "dtype": p.dtype,
                "nbytes": p.nbytes,
                "status": status.get(key, ""),
                "bloat": key in bloat,
            }
        )
    if baseline is not None and pd is not None:
        for p in pd.removed:
            rows.append(
                {
                    "name": p.name,
                    "shape": tuple(p.shape),
                    "dtype": p.dtype,
                    "nbytes": p.nbytes,
                    "status": "removed",
                    "bloat": False,
                }
            )
    order = {"": 2, "removed": 3}
    rows.sort(
        key=lambda r: (not r["bloat"], order.get(r["status"], 1), -r["nbytes"] if r["bloat"] else 0)
    )
    return rows


def param_table_html(step, baseline=None) -> str:
    """The parameter table (sortable): name, shape, dtype, bytes, status; totals, and the
    delta against `baseline`."""
    rows = param_rows(step, baseline)
    body = []
    for r in rows:
        st = r["status"]
        cls = (
            "bloat"
            if r["bloat"]
            else {"new": "new", "removed": "removed", "": ""}.get(st, "changed")
        )
        body.append(
            f"<tr class='pl-s-{cls}'>"
            + _td(r["name"])
            + _td(_shape_text(r["shape"]), v=_elements(r["shape"]), num=True)
            + _td(r["dtype"])
            + _td(format_bytes(r["nbytes"]), v=r["nbytes"], num=True)
            + _td(st)
            + "</tr>"
        )
    after = step.graph.param_bytes
    n = sum(1 for r in rows if r["status"] != "removed")
    foot = f"{n} params · {format_bytes(after)}"
    if baseline is not None:
        before = baseline.graph.param_bytes
        foot += f" (was {format_bytes(before)}, {signed_bytes(after - before)})"
    changed = sum(1 for r in rows if r["status"])
    if changed:
        foot += f" · {changed} with a status"
    head = "".join(_th(h) for h in ("name", "shape", "dtype", "bytes", "status"))
    return (
        f"<table class='pl-table pl-params'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody>"
        f"<tfoot><tr><td colspan='5'>{esc(foot)}</td></tr></tfoot></table>"
    )


_SHAPE_TABLES = Memo(8)


def shape_table_html(step, report=None) -> str:
    """Every value's annotated type (sortable), shape changes against the previous step and
    the report's shape mismatches first (annotated vs computed, when a check ran). Made once
    for the steps that show the same graph against the same previous graph with the same
    mismatches (the passes that changed nothing, in the report)."""
    g = step.graph
    prev = step.previous if getattr(step, "trace", None) is not None else None
    mismatch: dict[str, str] = {}
    for f in findings_of(report, step, ("shape-mismatch",)):
        for nid in finding_nodes(f, g) or [""]:
            mismatch[nid] = str(getattr(f, "message", ""))
    graphs = (g,) if prev is None else (g, prev.graph)
    extra = (tuple(mismatch.items()), report is not None)
    return _SHAPE_TABLES.get(graphs, extra, lambda: _shape_table(step, prev, mismatch, report))


def _shape_table(step, prev, mismatch: dict[str, str], report) -> str:
    g = step.graph
    changes = {}
    if prev is not None:
        d = step_diff(prev, step)
        changes = {s.node: f"was {s.before}" for s in d.shape_changes}
    rows = []
    for nid, n in g.nodes.items():
        if n.kind in ("output",) or not n.type:
            continue
        note = mismatch.get(nid) or changes.get(nid, "")
        rank = 0 if nid in mismatch else (1 if nid in changes else 2)
        rows.append((rank, nid, n, note))
    rows.sort(key=lambda r: r[0])
    body = []
    seen: dict[str, str] = {}  # ops, types and modules repeat: each escaped once

    def cell(text: str) -> str:
        out = seen.get(text)
        if out is None:
            out = seen[text] = _td(text)
        return out

    classes = {
        0: "<tr class='pl-s-bloat'>",
        1: "<tr class='pl-s-changed'>",
        2: "<tr class='pl-s-'>",
    }
    for rank, nid, n, note in rows:
        body.append(
            f"{classes[rank]}{_td(nid)}{cell(n.op)}{cell(n.type)}{cell(n.group)}{cell(note)}</tr>"
        )
    head = "".join(_th(h) for h in ("node", "op", "type", "module", "note"))
    foot = f"{len(rows)} values · {len(changes)} shape changes"
    if report is not None:
        foot += f" · {len(mismatch)} mismatches against computed shapes"
    return (
        f"<table class='pl-table pl-shapes'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody><tfoot><tr><td colspan='5'>{esc(foot)}</td></tr>"
        "</tfoot></table>"
    )


def _step_check(report, step):
    """The report's numbers for `step` (an entry of `report.steps` whose `step` is it)."""
    for c in getattr(report, "steps", None) or []:
        if getattr(c, "step", None) is step:
            return c
    return None


def numerics_table_html(step, report=None) -> str:
    """What a check `report` says about `step`: its status and error against the
    reference, its findings, and the per-node errors of a divergence (earliest first, each
    node with where it came from in the source)."""
    if report is None:
        return "<p class='pl-note'>No numerics yet: run <code>trace.check(inputs)</code>.</p>"
    parts = []
    c = _step_check(report, step)
    if c is not None:
        line = f"status {c.status}"
        if getattr(c, "rule", "tolerance") == "float64":
            line += (
                " (beyond the tolerance, judged against a float64 run of the source: "
                "further from float64 than the reference is, by over 3x, is wrong)"
            )
        if getattr(c, "max_abs", None) is not None:
            line += f" · max abs error {num(c.max_abs)} · max rel {num(c.max_rel)}"
        same = getattr(c, "same_module", None)
        if same:
            line += f" · {same}, its results reused"
        parts.append(f"<p class='pl-step-check'>{esc(line)}</p>")
    findings = findings_of(report, step)
    if findings:
        items = "".join(
            f"<li><b>{esc(getattr(f, 'kind', ''))}</b>: {esc(getattr(f, 'message', ''))}</li>"
            for f in findings
        )
        parts.append(f"<ul class='pl-findings'>{items}</ul>")
    rows = []
    for f in findings:
        for e in (getattr(f, "details", None) or {}).get("node_errors", []):
            node = step.graph.node_of(getattr(e, "node", None))
            rows.append(
                "<tr>"
                + _td(node.id if node is not None else "")
                + _td(node.op if node is not None else "")
                + _td(getattr(e, "where", ""))
                + _td(num(e.max_abs), v=e.max_abs if math.isfinite(e.max_abs) else None, num=True)
                + _td(num(e.max_rel), v=e.max_rel if math.isfinite(e.max_rel) else None, num=True)
                + _td(_shape_text(getattr(e, "shape", ())))
                + "</tr>"
            )
    if rows:
        head = "".join(_th(h) for h in ("node", "op", "source", "max abs", "max rel", "shape"))
        parts.append(
            f"<table class='pl-table pl-numerics'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
    if not parts:
        parts.append("<p class='pl-note'>The report has nothing about this step.</p>")
    return "".join(parts)


__all__ = [
    "SORT_JS",
    "SORT_ONCLICK",
    "TABLE_CSS",
    "numerics_table_html",
    "param_rows",
    "param_table_html",
    "shape_table_html",
]
