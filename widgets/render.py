"""Rendering as pure functions: a step (and optionally a baseline step) -> HTML,
shared by the Jupyter widgets, the Panel app and the static HTML report. Nothing holds widget
state. Each job has its module; this one renders the trace summary (the badges and the table
of steps) and gathers the public names of the others:

- `widgets.escape`: text from a model made safe (`esc`, `json_script`);
- `widgets.boxes`: the nodes a graph is drawn with and the remembered step diffs
  (`step_diff`);
- `widgets.stats`: a weight's statistics (`param_stats`);
- `widgets.findings`: a check report's findings about a step (`findings_of`,
  `problems_of`);
- `widgets.tables_html`: the parameter, shape and numerics tables and `TABLE_CSS`;
- `widgets.ir_text`: the IR text and the IR diff.

Every graph is drawn by the graph component (`static/graph.js`, fed by
`widgets.graph_data`): live in Jupyter and Panel, in the HTML report, and as a picture with
no kernel (`widgets.snapshot`: `GraphSnapshot`, `graph_page`).
"""

from __future__ import annotations

from explorer.fmt import format_bytes, signed_bytes
from explorer.summary import Column, html_table, name_column
from widgets.boxes import MAX_BOXES, step_diff
from widgets.escape import esc, json_script
from widgets.findings import findings_of, problems_of
from widgets.ir_text import ir_text_html, text_diff_html
from widgets.stats import param_stats
from widgets.tables_html import (
    numerics_table_html,
    param_rows,
    param_table_html,
    shape_table_html,
)

# ===== the trace summary ======================================================================


def step_badges(row: dict, findings: int = 0) -> list[tuple[str, str]]:
    """Badges of one summary row (`Trace.summary()`): `(css class, text)` for its status,
    node delta, parameter-bytes delta, time, and findings."""
    out = [(f"pl-b-{row['status']}", row["status"])]
    if row["node_delta"]:
        out.append(("pl-b-nodes", f"{row['node_delta']:+d} nodes"))
    if row["param_delta"]:
        cls = "pl-b-grow" if row["param_delta"] > 0 else "pl-b-shrink"
        out.append((cls, signed_bytes(row["param_delta"])))
    if row["kind"] == "pass":
        out.append(("pl-b-time", f"{row['ms']:.1f} ms"))
    if findings:
        out.append(("pl-b-finding", f"{findings} finding{'s' if findings > 1 else ''}"))
    return out


def badges_html(badges: list[tuple[str, str]]) -> str:
    """Badges as HTML spans."""
    return "".join(f"<span class='pl-badge {c}'>{esc(t)}</span>" for c, t in badges)


def summary_html(trace, report=None) -> str:
    """The trace's steps as a table with badges (one row per step, `data-step` its
    index; nested passes indented)."""
    steps = trace.steps
    columns = (
        Column("#", lambda r: str(r["step"]), attrs=lambda r: "class='num'"),
        name_column("step"),
        Column(
            "badges",
            lambda r: "",
            html=lambda r: badges_html(step_badges(r, len(problems_of(report, steps[r["step"]])))),
        ),
        Column(
            "nodes",
            lambda r: str(r["nodes"]),
            attrs=lambda r: f"class='num' data-v='{r['nodes']}'",
        ),
        Column(
            "params",
            lambda r: format_bytes(r["param_bytes"]),
            attrs=lambda r: f'class="num" data-v="{r["param_bytes"]}"',
        ),
        Column("ops", lambda r: r["ops"]),
    )
    return html_table(
        columns,
        trace.summary(),
        table_attrs="class='pl-table pl-summary'",
        row_attrs=lambda r: f"class='pl-step pl-st-{r['status']}' data-step='{r['step']}'",
    )


__all__ = [
    "MAX_BOXES",
    "badges_html",
    "esc",
    "findings_of",
    "ir_text_html",
    "json_script",
    "numerics_table_html",
    "param_rows",
    "param_stats",
    "param_table_html",
    "problems_of",
    "shape_table_html",
    "step_diff",
    "step_badges",
    "summary_html",
    "text_diff_html",
]
