"""One renderer for the per-step tables (issue #15): the trace summary, the check report's
numbers and the widgets' summary read the same columns in text and in HTML."""

from __future__ import annotations

import explorer
from compiler import models
from explorer.summary import (
    OPS_SHOWN,
    Column,
    html_table,
    ops_text,
    text_table,
    trace_html,
    trace_rows,
    trace_text,
)

LEFT = "style='text-align:left' align='left'"
RIGHT = "style='text-align:right' align='right'"

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


def test_html_has_the_same_cells_escaped_and_every_cell_aligned_as_its_column():
    page = html_table(COLUMNS, ROWS, row_attrs=lambda r: f"data-step='{r['step']}'")
    # Jupyter right-aligns every cell: names and their headings say "left", numbers "right",
    # as a style and as an attribute (code hosts strip styles)
    assert f"<th {RIGHT}>#</th><th {LEFT}>name</th><th {RIGHT}>n</th><th {LEFT}>note</th>" in page
    assert "<tr data-step='12'>" in page and "&lt;b&gt;x&lt;/b&gt;" in page and "<b>" not in page
    assert f"<td {RIGHT}>1234</td>" in page and f"<td {LEFT}>&lt;b&gt;x&lt;/b&gt;</td>" in page
    # a column's own attributes win
    own = html_table(
        [Column("n", lambda r: str(r["n"]), right=True, attrs=lambda r: "class='x'")], ROWS
    )
    assert "<td class='x'>5</td>" in own


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
    assert "shapes" in head and f"<th {RIGHT}>shapes</th>" in trace_html(trace)
    assert f"<tr class='pl-unchanged'><td {RIGHT}>-</td>" in trace_html(trace)
    assert repr(trace) == trace_text(trace)


def _default_trace():
    return explorer.explore(models.convnext(dims=(8,), depths=(1,), image=16), pipeline="default")


def test_passes_nested_under_default_are_indented_and_left_aligned_in_both_forms():
    trace = _default_trace()
    rows = trace_rows(trace)
    assert [r["depth"] for r in rows[:3]] == [0, 0, 1] and rows[1]["pass"] == "default"
    lines = trace_text(trace).splitlines()
    name_at = lines[0].index("pass")
    for row, line in zip(rows, lines[1:], strict=True):
        # the name starts where the heading does, two spaces further per level
        assert line[name_at:].startswith("  " * row["depth"] + row["pass"] + " "), line
    page = trace_html(trace)
    nested = next(r for r in rows if r["depth"] == 1)
    name = "style='text-align:left;white-space:nowrap' align='left' nowrap"  # never wrapped
    assert f"<td {name}>&nbsp;&nbsp;&nbsp;&nbsp;{nested['pass']}</td>" in page
    assert f"<td {name}>default</td>" in page
    assert "text-align:right" not in page.split("<td")[2]  # the first row's name cell


def test_the_ops_column_is_capped_with_the_rest_counted_and_in_the_tooltip():
    trace = _default_trace()
    rows = trace_rows(trace)
    long = [r for r in rows if len(r.get("op_changes", {})) > OPS_SHOWN + 1]
    assert long, "the default pipeline on a ConvNeXt changes more op kinds than are shown"
    row = long[0]
    items = [f"{v:+d} {k}" for k, v in row["op_changes"].items()]
    assert row["ops"] == ", ".join(items)  # the row keeps them all
    capped = f"{', '.join(items[:OPS_SHOWN])} ... and {len(items) - OPS_SHOWN} more"
    assert ops_text(row) == capped
    line = next(x for x in trace_text(trace).splitlines() if x.endswith(capped))
    assert items[OPS_SHOWN] not in line
    page = trace_html(trace)
    assert f"title='{row['ops']}'>{capped}</td>" in page
    # a row with few changes shows them all, with no "more"
    short = next(r for r in rows if 0 < len(r.get("op_changes", {})) <= OPS_SHOWN)
    assert ops_text(short) == short["ops"] and "more" not in ops_text(short)
    assert "title=" not in page.split(f">{short['ops']}</td>")[0].rsplit("<td", 1)[1]


def test_ops_text_keeps_the_note_and_reads_rows_without_changes_as_they_are():
    changes = {f"op{k}": k + 1 for k in range(OPS_SHOWN + 2)}
    row = {"ops": "ignored", "op_changes": changes, "note": "artifact 1 kB"}
    assert ops_text(row).endswith(" ... and 2 more; artifact 1 kB")
    # one more than shown: shown too, rather than "... and 1 more"
    one_more = dict(list(changes.items())[: OPS_SHOWN + 1])
    assert ops_text({"op_changes": one_more}) == ", ".join(
        f"{v:+d} {k}" for k, v in one_more.items()
    )
    assert ops_text({"ops": "interrupted"}) == "interrupted"  # a skipped pass: its reason
    assert ops_text({"ops": "artifact 1 kB", "op_changes": {}, "note": "artifact 1 kB"}) == (
        "artifact 1 kB"
    )
    assert ops_text(row, shown=len(changes)) == (
        ", ".join(f"{v:+d} {k}" for k, v in changes.items()) + "; artifact 1 kB"
    )


def test_the_check_table_spells_out_a_reused_module():
    trace = _default_trace()
    report = trace.check()
    text = str(report)
    assert "(= #" not in text and "(= #" not in report._repr_html_()
    unchanged = next(c for c in report.steps if c.same_as is not None)
    line = next(x for x in text.splitlines() if f"  {unchanged.step.name}  " in x)
    assert f"{unchanged.status}, {unchanged.same_module}" in line


def test_a_slow_import_gets_a_note_on_what_its_ms_mean(monkeypatch):
    import explorer
    from compiler.ir import parse
    from explorer import summary

    FIRST_CALL_NOTE_MS = 1000.0  # the default (tests/conftest.py sets it out of reach)
    monkeypatch.setattr(summary, "FIRST_CALL_NOTE_MS", FIRST_CALL_NOTE_MS)
    trace = explorer.explore(
        parse("def @main(%x: f32[2]) -> f32[2] {\n  %y: f32[2] = relu(%x)\n  return %y\n}\n"),
        pipeline="fold-constant",
    )
    imported = trace.imported
    imported.seconds = FIRST_CALL_NOTE_MS / 1000 / 2
    assert "first import" not in trace.summary_text()
    imported.seconds = FIRST_CALL_NOTE_MS / 1000 * 3
    text = trace.summary_text()
    assert f"#{imported.index} {imported.name} took 3,000 ms" in text
    assert "the first import in a process pays once" in text


def test_a_composite_row_names_its_last_pass_as_the_module_it_shows():
    # a pipeline's row shows the module its last sub-pass made: a later step, said as such
    trace = _default_trace()
    report = trace.check()
    composite = next(c for c in report.steps if c.step.children)
    last = max(i for i in composite.step.children)
    assert composite.same_as is not None and composite.same_as > composite.step.index
    assert composite.same_as <= last or trace[composite.same_as].parent is not None
    text = str(report)
    line = next(x for x in text.splitlines() if f"  {composite.step.name}  " in x)
    assert f"same module as its last pass #{composite.same_as}" in line  # #9 fuse-ops: the last
    # a step that changed nothing shows an earlier step's module, said as before
    for c in report.steps:
        if c.same_as is not None and not c.step.children:
            assert c.same_as < c.step.index and c.same_module == f"same module as #{c.same_as}"
    assert "same module as its last pass" not in "".join(
        str(c.same_module) for c in report.steps if not c.step.children
    )
