"""The table widgets on their own: ParamTable, ShapeTable, NumericsTable, TextDiff."""

import numpy as np
import pytest
import torch

import explorer
import widgets
from widgets.tables import NumericsTable, ParamTable, ShapeTable, TextDiff


@pytest.fixture(scope="module")
def bloat_trace():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32)).eval()
    x = torch.randn(1, 4, 4, 16)
    trace = explorer.explore(model, (x,), pipeline="replica-linear-broadcast,fold-constant")
    return trace, trace.check((x,))


def test_param_table_names_the_copies_and_follows_the_step(bloat_trace):
    trace, _ = bloat_trace
    table = ParamTable(trace["fold-constant"])
    assert "4 copies of" in table.html.value and "0.weight" in table.html.value
    table.show(trace.imported)
    assert "copies" not in table.html.value
    assert widgets.ParamTable is ParamTable


def test_shape_and_numerics_tables_use_the_report(bloat_trace):
    trace, report = bloat_trace
    step = trace["fold-constant"]
    assert "trace.check" in NumericsTable(step).html.value  # no report: says how to get one
    numerics = NumericsTable(step, report)
    assert "param-bloat" in numerics.html.value
    shapes = ShapeTable(step, report)
    assert "f32[1, 4, 4, 32]" in shapes.html.value


def test_text_diff_toggles_between_side_by_side_and_unified(bloat_trace):
    trace, _ = bloat_trace
    view = TextDiff(trace["replica-linear-broadcast"])
    side = view.html.value
    assert view.mode == "side-by-side" and "broadcast_to" in side
    view.mode_toggle.value = "unified"
    assert view.html.value != side and "broadcast_to" in view.html.value
    first = TextDiff(trace[0])  # nothing before it: its text
    assert first.html.value
    with pytest.raises(ValueError, match="mode must be one of"):
        TextDiff(trace[1], mode="sideways")


def test_names_from_the_model_are_escaped():
    text = """
weights {
  $"<script>w": f32[3] = [1.0, 2.0, 3.0]
}
def @main(%x: f32[3]) -> f32[3] {
  %y: f32[3] = add(%x, $"<script>w")
  return %y
}
"""
    trace = explorer.explore(text, pipeline="fold-constant")
    html = ParamTable(trace.final).html.value + TextDiff(trace.final).html.value
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert np.isfinite(trace.final.param_bytes)
