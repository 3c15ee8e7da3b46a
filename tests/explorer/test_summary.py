"""One renderer for the per-step tables (issue #15): the trace summary, the check report's
numbers and the widgets' summary read the same columns in text and in HTML."""

from __future__ import annotations

import explorer
from compiler import models
from explorer.summary import Column, html_table, text_table, trace_html, trace_rows, trace_text

COLUMNS = (
    Column("#", lambda r: str(r["step"]), right=True, width=3),
    Column("name", lambda r: r["name"], width=8),
    Column("n", lambda r: str(r["n"]), right=True),
    Column("note", lambda r: r["note"]),
)
ROWS = [
    {"step": 0, "name": "a", "n": 5, "note": "first"},
    {"step": 12, "name": "<b>x</b>", "n": 1234, "note": ""},
]


def test_text_columns_are_aligned_and_the_last_is_not_padded():
    lines = text_table(COLUMNS, ROWS).splitlines()
    assert lines == [
        "  #  name        n  note",
        "  0  a           5  first",
        " 12  <b>x</b> 1234",
    ]


def test_html_has_the_same_cells_escaped_and_numbers_aligned_right():
    page = html_table(COLUMNS, ROWS, row_attrs=lambda r: f"data-step='{r['step']}'")
    assert "<th>#</th><th>name</th><th>n</th><th>note</th>" in page
    assert "<tr data-step='12'>" in page and "&lt;b&gt;x&lt;/b&gt;" in page and "<b>" not in page
    assert "<td style='text-align:right'>1234</td>" in page


def test_the_trace_summary_lists_skipped_passes_in_both_forms():
    trace = explorer.explore(models.mlp())
    trace.skipped = [
        type("Skipped", (), {"depth": 1, "spec": "fuse-ops", "reason": "interrupted"})()
    ]
    rows = trace_rows(trace)
    assert rows[-1]["status"] == "skipped" and rows[-1]["ops"] == "interrupted"
    lines = trace_text(trace).splitlines()
    head, last = lines[0], lines[-1]
    assert last.startswith("  -    fuse-ops") and last.endswith("  interrupted")
    # the reason stands in the ops column, as every other row's ops do
    assert last.index("interrupted") == head.index("ops")
    assert "shapes" in head and "<th>shapes</th>" in trace_html(trace)
    assert "<tr class='pl-unchanged'><td style='text-align:right'>-</td>" in trace_html(trace)
    assert repr(trace) == trace_text(trace)
