"""The error map and the parameter map as heat maps (widgets/error_map.py): the cells carry
their step and node, the first failing step and layer are marked, names are escaped, and the
stepper, the Panel app and the report show them, a picked cell opening its step and node."""

import html
import re

import explorer
from compiler import models
from tests.widgets.conftest import EVIL
from widgets.app import PassApp
from widgets.error_map import error_map_html, param_map_html
from widgets.report import report_html
from widgets.stepper import PassStepper
from widgets.views import views_for

CELL = re.compile(
    r"<td class='pl-map-cell ([eb]\d)([^']*)' data-step='(\d+)' data-node='([^']*)' "
    r"title='([^']*)'></td>"
)


def cells(text: str) -> list[tuple[str, int, str, str]]:
    """(extra classes, step, node id, tooltip) of every coloured cell, row by row."""
    return [
        (c.strip(), int(s), html.unescape(n), html.unescape(t))
        for _colour, c, s, n, t in CELL.findall(text)
    ]


def test_the_error_map_cells_carry_their_step_and_node(checked_trace):
    trace, report = checked_trace
    m = report.error_map()
    text = error_map_html(m, report.reference)
    found = cells(text)
    assert len(found) == 15  # 5 steps x 3 layers, none blank
    assert [(s, n) for _, s, n, _ in found] == [
        (m.steps[i], m.nodes[i][j]) for i in range(5) for j in range(3)
    ]
    # the first failing step and layer: the cell outlined, its row and column head marked
    first = [c for c in found if c[0] == "pl-map-first-cell"]
    assert [(s, n) for _, s, n, _ in first] == [(2, "main/subtract")]
    assert first[0][3].startswith("layers.0 at #2: rel error 143, ")
    assert first[0][3].endswith("x the tolerance: beyond it")
    assert "<tr data-row='2' class='pl-map-first-row'>" in text
    assert "<th class='pl-map-col pl-map-first-col' title='layers.0'>" in text
    assert "First failing step: #2 test-check-flip-add" in text and "the imported step" in text
    assert found[0][3] == "layers.0 at #0: rel error 0, 0 of the tolerance"
    assert "<td class='pl-map-cell e0' data-step='0'" in text  # exactly 0: the lightest
    assert "<td class='pl-map-cell e9 pl-map-first-cell' data-step='2'" in text  # the darkest
    # a row's name opens its step (no node)
    assert "<th class='pl-map-row' data-step='3' data-node=''" in text
    assert "Within:" in text and "Beyond:" in text and "blank: no value" in text


def test_blank_cells_and_an_empty_map(mlp_trace):
    report = mlp_trace.check()
    m = report.error_map()
    text = error_map_html(m)
    blanks = text.count("<td class='pl-map-blank'></td>")
    assert blanks == int(sum(n == "" for row in m.nodes for n in row)) > 0
    assert "No step diverged" in text and "pl-map-first" not in text.split("</style>")[-1]
    empty = report.error_map()
    empty.layers, empty.nodes = [], [[] for _ in empty.steps]
    assert "No error map" in error_map_html(empty)


def test_the_param_map_marks_where_bloat_starts(broadcast_trace):
    text = param_map_html(broadcast_trace.param_map())
    assert "No parameter map" in text  # the weights and the linear have no provenance


def test_the_param_map_of_the_replica_on_convnext():
    trace = explorer.explore(
        models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10),
        pipeline="replica-linear-broadcast,fold-constant",
    )
    m = trace.param_map()
    text = param_map_html(m)
    found = cells(text)
    grew = [c for c in found if "grew" in c[0] or "first" in c[0]]
    assert len(grew) == int(m.grew.sum()) > 0 and {c[1] for c in grew} == {2}
    first = [c for c in found if c[0] == "pl-map-first-cell"]
    i, j = m.row(m.first_step), m.column(m.first_layer)
    assert [(c[1], c[2]) for c in first] == [(2, m.nodes[i][j])]
    assert m.nodes[i][j].startswith("$") and "broadcast_to" in m.nodes[i][j]
    assert "a pass grew them here" in first[0][3] and "x the first" in first[0][3]
    assert f"Weights first grew at #2 fold-constant, in {m.first_layer}" in text


def test_names_from_the_model_are_escaped(evil_trace):
    report = evil_trace.check()
    documents = [error_map_html(report.error_map(), EVIL), param_map_html(evil_trace.param_map())]
    for text in documents:
        assert EVIL not in text and "<script" not in text
        assert html.escape(EVIL + ".layer", quote=True) in text
    assert cells(documents[0])[0][3].startswith(f"{EVIL}.layer at #0: ")


def test_the_stepper_and_the_app_open_a_picked_cell(checked_trace):
    trace, report = checked_trace
    m = report.error_map()
    node = m.nodes[m.row(3)][m.column("layers.2")]
    for front in (PassStepper(trace, report), PassApp(trace, report)):
        assert front.tab_names[-2:] == ("error map", "param map")
        view = front.map_views["error map"]
        assert view.html == ""  # built when shown
        front.index = 0
        front.tab = "error map"
        assert "pl-map-first-cell" in view.html and view.current == 0
        view.pick = {"step": 3, "node": node, "n": 1.5}
        assert front.index == 3 and front.tab == "graph" and front.graph.selected == node
        assert front.graph.step is trace[3]
        front.tab = "error map"
        assert view.current == 3  # the row of the step shown is marked
        view.pick = {"step": 99, "node": node, "n": 2}  # no such step: nothing happens
        assert front.index == 3 and front.tab == "error map"
        front.map_views["param map"].pick = {"step": 1, "node": "", "n": 3}  # a row's name
        assert front.index == 1 and front.tab == "graph" and front.graph.selected == ""


def test_without_a_report_only_the_param_map(mlp_trace):
    stepper, app = PassStepper(mlp_trace), PassApp(mlp_trace)
    assert stepper.tab_names[-1] == app.tab_names[-1] == "param map"
    assert "error map" not in stepper.tab_names and "error map" not in app.tab_names
    assert [v.title for v in views_for(mlp_trace) if v.scope == "trace"] == ["param map"]
    text = report_html(mlp_trace)
    assert 'data-tab="param-map"' in text and 'data-tab="error-map"' not in text


def test_the_report_has_both_maps(checked_trace):
    trace, report = checked_trace
    text = report_html(trace, report)
    assert '<button data-tab="error-map">Error map</button>' in text
    assert '<button data-tab="param-map">Param map</button>' in text
    pane = re.search(
        r'<div class="pl-pane pl-map-pane" id="pl-pane-error-map">(.*?)</div>'
        r'<div class="pl-pane pl-map-pane"',
        text,
        re.S,
    ).group(1)
    assert len(cells(pane)) == 15


def test_a_check_without_numbers_says_so():
    text = """
    def @main(%x: f32[*]) -> f32[*] {
      %y: f32[*] = relu(%x) loc(module="act")
      return %y
    }
    """
    trace = explorer.explore(text, pipeline="dce")
    report = trace.check()
    assert not report.numbers_checked
    html_ = error_map_html(report.error_map())
    assert "No layer was compared with the reference" in html_ and "pl-map-cell" not in html_
