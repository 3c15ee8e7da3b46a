"""trace.export: Model Explorer's graph JSON (namespaces, shapes, attributes, node data,
per-node errors of a check; valid JSON whatever the names) and ONNX for Netron."""

import json

import numpy as np
import onnx
import pytest

import explorer
from compiler import models
from compiler.ir.nodes import Call, Constant, Function, Module, Var
from compiler.ir.provenance import Provenance
from compiler.ir.types import TensorType
from explorer.interop import ExportError, model_explorer_json, namespace_of

# quotes, backslash, newline, JSON / HTML / JS hazards, a line separator, non-BMP unicode
EVIL = "<script>alert(1)</script> \"q\" 'a' & b\\ \n\u2028 ünïcödé \U0001f600 }]"


def evil_trace():
    """Names and module paths made of EVIL (the weight folds: a constant named after it)."""
    x = Var(EVIL, TensorType((2, 3), "float32"))
    w = Constant(np.arange(6, dtype=np.float32).reshape(2, 3), name=EVIL + ".w")
    prov = Provenance(module_path=EVIL + ".layer")
    y = Call("add", (x, Call("exp", (w,), {}, prov=prov)), {}, prov=prov)
    module = Module({"main": Function.from_output([x], y, {"num_input": 1})})
    return explorer.explore(module, pipeline="fold-constant")


@pytest.fixture(scope="module")
def mlp():
    return explorer.explore(models.mlp((8, 16, 4), batch=2, seed=1))


@pytest.fixture(scope="module")
def flipped():
    """A wrong pass (every add a subtract) and its check report."""
    from tests.explorer.check.test_check import _FlipAdd  # noqa: F401  (registers the wrong pass)

    spec = "decompose-ops{ops=[linear]},test-check-flip-add"
    trace = explorer.explore(models.mlp((8, 16, 4), batch=2, seed=1), pipeline=spec)
    return trace, trace.check()


REQUIRED = {"id", "label", "namespace", "subgraphIds", "attrs", "incomingEdges"}


def check_schema(doc: dict) -> None:
    """What Model Explorer's JSON adapter needs: a collection of graphs whose nodes have the
    fields of model_explorer.graph_builder.GraphNode, edges between nodes of the same graph,
    string attribute values."""
    assert isinstance(doc["label"], str) and doc["graphs"]
    graph_ids = {g["id"] for g in doc["graphs"]}
    assert len(graph_ids) == len(doc["graphs"])
    for g in doc["graphs"]:
        ids = [n["id"] for n in g["nodes"]]
        assert len(ids) == len(set(ids)) and ids
        for n in g["nodes"]:
            assert REQUIRED <= set(n), n
            assert all(isinstance(n[k], str) for k in ("id", "label", "namespace"))
            assert all(s in graph_ids for s in n["subgraphIds"])
            for kv in n["attrs"]:
                assert set(kv) == {"key", "value"}
                assert isinstance(kv["key"], str) and isinstance(kv["value"], str)
            for e in n["incomingEdges"]:
                assert e["sourceNodeId"] in ids
                assert isinstance(e["sourceNodeOutputId"], str)
                assert isinstance(e["targetNodeInputId"], str)
            for m in n["outputsMetadata"]:
                assert m["id"] == "0" and all(isinstance(a["value"], str) for a in m["attrs"])


def attrs(node: dict) -> dict:
    return {kv["key"]: kv["value"] for kv in node["attrs"]}


def nodes(doc: dict, graph: str = "main") -> dict:
    g = next(g for g in doc["graphs"] if g["id"] == graph)
    return {n["id"]: n for n in g["nodes"]}


def test_model_explorer_json_of_an_imported_step(mlp, tmp_path):
    paths = mlp.export(0, tmp_path / "mlp.json")
    assert paths == [tmp_path / "mlp.json", tmp_path / "mlp.param_bytes.json"]
    doc = json.loads(paths[0].read_text())
    check_schema(doc)
    assert doc["label"] == "passlens step 0 module"
    ns = nodes(doc)
    matmul = next(n for n in ns.values() if n["label"] == "linear")
    assert matmul["namespace"] == "layers/0"  # the torch-like module path layers.0
    a = attrs(matmul)
    assert a["op"] == "linear" and a["type"] == "f32[2, 16]"
    assert a["provenance.module"] == "layers.0"
    shape = {kv["key"]: kv["value"] for kv in matmul["outputsMetadata"][0]["attrs"]}
    assert shape["tensor_shape"] == "f32[2,16]"  # what Model Explorer writes on the edge
    weight = ns["$layers.0.weight"]
    assert weight["label"] == "layers.0.weight" and attrs(weight)["parameter bytes"] == "512"
    assert any(e["sourceNodeId"] == "$layers.0.weight" for e in matmul["incomingEdges"])
    data = json.loads(paths[1].read_text())
    assert data["main"]["name"] == "parameter bytes"
    assert data["main"]["results"]["$layers.0.weight"] == {"value": 512}


def test_fused_functions_are_graphs_of_their_own(mlp):
    doc, node_data = model_explorer_json(mlp.final)
    check_schema(doc)
    ids = [g["id"] for g in doc["graphs"]]
    assert ids[0] == "main" and len(ids) == 3
    calls = [n for n in nodes(doc).values() if n["subgraphIds"]]
    assert sorted(c["subgraphIds"][0] for c in calls) == sorted(ids[1:])
    # a weight used in a fused function sits in that function's graph
    fused = nodes(doc, ids[1])
    assert any(i.startswith("$") for i in fused)
    assert set(node_data) == {"param_bytes"}


def test_a_check_report_gives_each_node_its_error(flipped, tmp_path):
    trace, report = flipped
    assert not report.ok
    step = trace["test-check-flip-add"]
    graph, param_bytes, errors = trace.export(step, tmp_path / "s.json", report=report)
    assert errors.name == "s.max_error.json"
    doc = json.loads(graph.read_text())
    check_schema(doc)
    data = json.loads(errors.read_text())["main"]
    assert data["name"] == "max rel error" and data["results"]
    ns = nodes(doc)
    assert set(data["results"]) <= set(ns)
    worst = max(data["results"], key=lambda k: data["results"][k]["value"])
    a = attrs(ns[worst])
    assert float(a["max rel error"]) == pytest.approx(data["results"][worst]["value"])
    assert a["beyond tolerance"] == "yes" and ns[worst]["style"]["borderColor"]
    assert attrs(ns["main/return"])["beyond tolerance"] == "yes"  # the step's outputs
    # the import step is fine: errors, none beyond tolerance
    doc0, nd0 = model_explorer_json(trace[0], report)
    assert all("beyond tolerance" not in attrs(n) for n in nodes(doc0).values())
    assert "max_error" in nd0


def test_any_name_gives_valid_json(tmp_path):
    trace = evil_trace()
    for step in trace:
        graph, *rest = trace.export(step, tmp_path / f"evil{step.index}.json")
        raw = graph.read_bytes()
        assert raw.isascii()  # every non-ASCII character escaped
        doc = json.loads(raw)
        check_schema(doc)
        labels = {n["label"] for g in doc["graphs"] for n in g["nodes"]}
        assert EVIL in labels  # the input's name, exactly
        modules = {attrs(n).get("provenance.module") for n in nodes(doc).values()}
        assert EVIL + ".layer" in modules
        assert any(n["namespace"].endswith("/layer") for n in nodes(doc).values())
        for p in rest:
            json.loads(p.read_bytes())


def test_namespaces():
    assert namespace_of("") == ""
    assert namespace_of("encoder.layer.0.attn") == "encoder/layer/0/attn"
    assert namespace_of("/encoder/conv") == "encoder/conv"


def test_onnx_export_opens_in_onnx(mlp, tmp_path):
    for step in (mlp[0], mlp.final):
        (path,) = mlp.export(step, tmp_path / f"s{step.index}.onnx", format="onnx")
        model = onnx.load(str(path))
        onnx.checker.check_model(model)
        assert model.producer_name == "passlens"


def test_onnx_errors_name_the_op(mlp, tmp_path, monkeypatch):
    from compiler.export import onnx as onnx_export

    monkeypatch.delitem(onnx_export.EXPORTERS, "linear")
    with pytest.raises(ExportError, match=r"step 0 \(module\) as ONNX: .*linear"):
        mlp.export(0, tmp_path / "x.onnx", format="onnx")


def test_export_errors(mlp, tmp_path):
    with pytest.raises(ExportError, match="unknown export format 'svg'; use one of"):
        mlp.export(0, tmp_path / "x", format="svg")
    with pytest.raises(ExportError, match="no step 99: the trace has steps 0 to"):
        mlp.export(99, tmp_path / "x.json")
    with pytest.raises(ExportError, match="no step named 'nope'"):
        mlp.export("nope", tmp_path / "x.json")
    with pytest.raises(ExportError, match="model-explorer format only"):
        mlp.export(0, tmp_path / "x.onnx", format="onnx", report=object())


def test_a_source_graph_exports_to_model_explorer_but_not_onnx(tmp_path):
    torch = pytest.importorskip("torch")

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x):
            return torch.relu(self.fc(x))

    trace = explorer.explore(M().eval(), (torch.randn(1, 3),), pipeline="fold-constant")
    assert trace[0].kind == "source"
    graph, *_ = trace.export(0, tmp_path / "src.json")
    check_schema(json.loads(graph.read_text()))
    with pytest.raises(ExportError, match="holds the source graph, not an IR module"):
        trace.export(0, tmp_path / "src.onnx", format="onnx")
    (onnx_path,) = trace.export(1, tmp_path / "imp.onnx", format="onnx")
    doc = json.loads(trace.export(1, tmp_path / "imp.json")[0].read_text())
    assert any(n["namespace"] == "fc" for n in nodes(doc).values())
    assert onnx_path.stat().st_size > 0


F16_OVERFLOW = """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %a: f32[2, 3] = multiply(%x, const(f32[], 1000.0))
  %b: f32[2, 3] = multiply(%a, %a)
  %c: f32[2, 3] = sqrt(%b)
  return %c
}
"""


def f16_overflow():
    """x * 1000 squared overflows float16 (1e10 > 65504): an infinite relative error."""
    x = np.full((2, 3), 100.0, np.float32)
    with np.errstate(over="ignore"):
        trace = explorer.explore(F16_OVERFLOW, (x,), pipeline="convert-dtype{dtype=float16}")
        report = trace.check(progress=False)
    return trace, report


def strict_json(raw: str):
    """JSON as a browser's JSON.parse reads it: Infinity and NaN are not JSON."""

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(raw, parse_constant=refuse)


def test_an_infinite_error_exports_as_model_explorer_reads_it(tmp_path):
    """The float16 overflow this tool exists to show: the export works, the node data holds
    "inf" as a string with its own colour (Model Explorer leaves non-numbers out of the
    gradient's range and a result's bgColor wins), the attribute says inf."""
    trace, report = f16_overflow()
    assert report.first_failure.kind == "diverged"
    step = trace["convert-dtype"]
    graph, *node_data = trace.export(step, tmp_path / "f16.json", report=report)
    doc = strict_json(graph.read_text())
    check_schema(doc)
    errors = next(p for p in node_data if p.name == "f16.max_error.json")
    data = strict_json(errors.read_text())["main"]
    result = data["results"]["main/return"]
    assert result == {"value": "inf", "bgColor": data["gradient"][-1]["bgColor"]}
    a = attrs(nodes(doc)["main/return"])
    assert a["max rel error"] == "inf" and a["beyond tolerance"] == "yes"
    # finite errors stay numbers
    _, nd0 = model_explorer_json(trace[0], report)
    assert all(isinstance(r["value"], float) for r in nd0["max_error"]["main"]["results"].values())


def test_a_nan_error_judged_beyond_tolerance_is_shown_as_nan():
    from explorer.interop import _result, _worse

    assert _result(float("nan")) == {"value": "nan", "bgColor": "#f28b82"}
    assert _result(0.5) == {"value": 0.5}
    assert _worse(float("nan"), 3.0) != _worse(float("nan"), 3.0)  # nan wins over a number
    assert _worse(float("nan"), float("inf")) == float("inf")
