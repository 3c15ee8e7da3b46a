"""Traces: steps of a conversion, indexing, summary, failed steps, lazy graph models."""

import copy

import pytest

import explorer
from compiler import models
from compiler.ir import parse

TEXT = """
weights {
  $a: f32[3] = [1.0, 2.0, 3.0]
}
def @main(%x: f32[n, 3]) -> f32[n, 3] {
  %e: f32[3] = exp($a)
  %dead: f32[n, 3] = relu(%x)
  %y: f32[n, 3] = add(%x, %e)
  return %y
}
"""


@pytest.fixture(scope="module")
def trace():
    return explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2, activation="gelu"))


def test_steps_are_import_then_every_pass_nested(trace):
    assert trace[0].kind == "import" and trace[0].name == "module"
    assert trace[1].name == "default" and trace[1].depth == 0
    inner = [trace[i].name for i in trace[1].children]
    assert inner[:3] == ["infer-types", "canonicalize-bindings", "dynamic-to-static"]
    assert all(trace[i].depth == 1 and trace[i].parent == 1 for i in trace[1].children)


def test_a_pass_step_reads_what_the_pass_did_from_its_snapshot(trace):
    imported, fold = trace.imported, trace["fold-constant"]
    assert imported.snapshot is None and imported.module is not None
    snap = fold.snapshot
    assert (snap.pass_name, snap.spec, snap.depth) == (fold.name, fold.spec, fold.depth)
    assert snap.module is fold.module and snap.before is fold.before
    # the trace numbers the steps: the snapshot numbers the pass applications of the run
    assert fold.index == snap.index + imported.index + 1
    assert fold.children == [c + imported.index + 1 for c in snap.children]
    # setting a field edits the step's own copy: the compiler's record (shared) stays as it was
    twin = copy.copy(fold)
    twin.name = "renamed"
    assert (twin.name, fold.name, snap.pass_name) == ("renamed", "fold-constant", "fold-constant")
    assert fold.snapshot is snap


def test_a_step_built_by_keyword_gets_a_snapshot_when_a_pass_ran():
    module = parse(TEXT)
    made = explorer.Step(1, "pass", "made", before=module, module=module, seconds=0.5)
    assert made.snapshot.pass_name == "made" and made.snapshot.options == {}
    assert (made.name, made.before, made.seconds, made.status) == ("made", module, 0.5, "unchanged")
    imported = explorer.Step(0, "import", "module", module=module)
    assert imported.snapshot is None and imported.before is None and imported.spec == ""
    with pytest.raises(AttributeError, match="ran no pass"):
        imported.spec = "fold-constant"


def test_steps_by_name_and_index(trace):
    assert trace["fold-constant"] is trace[[s.name for s in trace].index("fold-constant")]
    with pytest.raises(KeyError, match="no step named 'nope'"):
        trace["nope"]
    with pytest.raises(TypeError):
        trace[1.5]


def test_changed_flag_is_identity(trace):
    for s in trace:
        if s.kind == "pass" and s.module is s.before:
            assert s.status == "unchanged"
    assert trace["fold-constant"].status == "changed"


def test_previous_of_a_nested_pass_is_the_step_that_produced_its_input(trace):
    fold = trace["fold-constant"]
    assert fold.previous.module is fold.before


def test_graph_models_are_built_lazily_and_cached(trace):
    step = trace["dead-code-elimination"]
    assert step._graph is None
    g = step.graph
    assert step.graph is g and len(g.nodes) > 0


def test_summary_counts_nodes_params_and_deltas(trace):
    rows = trace.summary()
    assert len(rows) == len(trace)
    decompose = next(r for r in rows if r["pass"] == "decompose-ops")
    assert decompose["node_delta"] > 0 and decompose["status"] == "changed"
    assert all(r["param_bytes"] == rows[0]["param_bytes"] for r in rows)  # default never bloats
    text = repr(trace)
    assert "fold-constant" in text and "status" in text.splitlines()[0]
    assert "<table>" in trace._repr_html_()


def test_ir_text_source_and_failed_pass():
    t = explorer.explore(TEXT, pipeline="fold-constant,test-explode")
    fail = t.failure
    assert fail is not None and fail.name == "test-explode" and fail.status == "failed"
    assert fail.module is None and fail.shown_module is fail.before
    line = fail.failed_line
    assert line is not None and "add(" in fail.text.splitlines()[line]
    assert t.final is t["fold-constant"]


def test_module_source_keeps_the_object(trace):
    m = parse(TEXT)
    t = explorer.explore(m, pipeline="dce")
    assert t.imported.module is m
    assert "relu" not in t[-1].text


def test_unknown_source_type_is_a_clear_error():
    with pytest.raises(TypeError, match="explore\\(\\) takes a torch.nn.Module"):
        explorer.explore(42)


# registers test-explode
from tests.compiler.passes import test_manager  # noqa: E402,F401


def test_a_step_displays_its_graph_in_jupyter(trace):
    import json
    import re

    step = trace["fold-constant"]
    html = step._repr_html_()
    # the graph component draws it in place, from the step's payload against the previous step
    assert "PasslensGraph.create" in html and "PasslensLayout" in html
    assert f"#{step.index} fold-constant against #{step.previous.index}" in html
    blob = re.search(r'<script type="application/json" id="(plstep\d+)-data">(.*?)</script>', html)
    data = json.loads(blob.group(2))
    assert {n["t"] for n in data["after"]["nodes"]} >= {"matmul"}
    assert data["after"]["step"]["name"] == "fold-constant"
    assert data["before"]["step"]["index"] == step.previous.index
    assert f"getElementById('{blob.group(1)}')" in html  # each output draws into its own element
    assert blob.group(1) not in step._repr_html_()


def test_steps_showing_one_module_print_it_once(trace):
    # a pass that changed nothing shows the module of the step before it: its IR text is
    # that step's (printed once), with the same lines for a failed binding
    a = trace["infer-types"]
    b = trace["canonicalize-bindings"]
    assert b.shown_module is a.shown_module and b.status == "unchanged"
    assert a.text is b.text and a._lines is b._lines
    other = trace["decompose-ops"]
    assert other.shown_module is not a.shown_module and other.text != a.text


class _CountedEdges(list):
    """A list of edges that counts how often it is walked."""

    walks = 0

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


def test_a_source_graph_is_listed_reading_its_edges_once():
    from explorer.graph import GraphEdge, GraphModel, GraphNode
    from explorer.step import Step

    n = 200
    g = GraphModel()
    for k in range(n):
        g.nodes[f"v{k}"] = GraphNode(f"v{k}", "op", "relu", f"v{k}", "main", "f32[4]")
    edges = _CountedEdges(GraphEdge(f"v{k}", f"v{k + 1}", 0, "f32[4]") for k in range(n - 1))
    edges.append(GraphEdge("v0", "v2", 1, "f32[4]"))
    g.edges = edges
    step = Step(0, "source", "torch.export", source_graph=g)
    _CountedEdges.walks = 0
    lines = step.text.splitlines()
    assert _CountedEdges.walks == 1
    assert lines[0] == "v0: f32[4] = relu()"
    assert lines[1] == "v1: f32[4] = relu(v0)"
    assert lines[2] == "v2: f32[4] = relu(v1, v0)"  # the inputs in edge order
    assert len(lines) == n
