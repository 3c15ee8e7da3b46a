"""The steps of an ONNX Runtime trace in passlens's views: contrib and fused ops with their
attributes, every value's type (onnx's inference, ORT's, a run for ORT's own layout ops),
weights with their bytes, module paths back to torch, the text, the rewrites tab and its rule
docs, save and load, and every name from a file escaped."""

from __future__ import annotations

import html
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import explorer
from explorer.adapters import get_adapter
from explorer.check.report import CheckError
from explorer.onnxruntime.convert import MAX_LINE_CHARS, MAX_WEIGHT_LINES, entries, module_path
from explorer.onnxruntime.module import ONNXState
from explorer.onnxruntime.rewrites import changes
from explorer.onnxruntime.shapes import value_types
from tests.explorer.onnxruntime.models import conv_relu_onnx


def op_nodes(step, op: str) -> list:
    return [n for n in step.graph.nodes.values() if n.op == op]


# ----- ops, attributes, types, weights -------------------------------------------------------


def test_contrib_and_fused_ops_show_with_their_attributes(bert, cnn):
    (skip, skip2) = op_nodes(bert["SkipLayerNormFusion"], "com.microsoft::SkipLayerNormalization")
    assert skip.attrs == {"epsilon": "1e-05"} == skip2.attrs  # float32, as ORT reads it
    (fused,) = op_nodes(bert["MatMulScaleFusion"], "com.microsoft::FusedMatMul")
    assert fused.attrs["alpha"] == str(np.float32(8**-0.5))  # 1 / sqrt(head size), folded in
    convs = op_nodes(cnn["NchwcTransformer"], "com.microsoft.nchwc::Conv")
    assert len(convs) == 2
    for conv in convs:
        assert conv.attrs["activation"] == "Relu" and conv.attrs["kernel_shape"] == "[3, 3]"


def test_every_value_ort_knows_has_its_type(bert, bert_fused, cnn):
    for trace in (bert, bert_fused, cnn):
        for step in trace.steps:
            untyped = [n.id for n in step.graph.nodes.values() if "?" in n.type]
            assert untyped == [], (step.name, untyped)
            assert all("?" not in e.type for e in step.graph.edges), step.name
    (skip, _) = op_nodes(bert["SkipLayerNormFusion"], "com.microsoft::SkipLayerNormalization")
    assert skip.type == "f32[2, 8, 32]"
    for conv in op_nodes(cnn["NchwcTransformer"], "com.microsoft.nchwc::Conv"):
        assert conv.type == "f32[1, 16, 16, 16]"  # ORT's blocked layout, known from a run


def _layout_model():
    """x -> ORT's NCHWc ReorderInput -> ReorderOutput: ops neither onnx's nor ORT's shape
    inference knows, no value_info for what is between them."""
    nodes = [
        helper.make_node("ReorderInput", ["x"], ["blocked"], domain="com.microsoft.nchwc"),
        helper.make_node(
            "ReorderOutput", ["blocked"], ["y"], domain="com.microsoft.nchwc", channels=8
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "layout",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 4])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft.nchwc", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def test_a_type_no_inference_knows_comes_from_a_run():
    model = _layout_model()
    assert value_types(model, {}, run=False).get("blocked", ("?",))[0] == "?"
    _, shape, dtype = value_types(model, {})["blocked"]
    # ORT's block: the 8 channels padded to the CPU's vector width (8 or 16 floats)
    assert dtype == "f32" and shape[0] == 1 and shape[2:] == (4, 4)
    assert shape[1] in (8, 16)


def test_ort_s_shape_inference_types_a_contrib_op_onnx_does_not_know():
    rng = np.random.default_rng(0)
    weights = {
        n: numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), n)
        for n in ("gamma", "beta")
    }
    node = helper.make_node(
        "SkipLayerNormalization", ["x", "s", "gamma", "beta"], ["y"], domain="com.microsoft"
    )
    relu = helper.make_node("Relu", ["y"], ["z"])
    graph = helper.make_graph(
        [node, relu],
        "skip",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3, 8]) for n in ("x", "s")],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        list(weights.values()),
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    arrays = {n: numpy_helper.to_array(t) for n, t in weights.items()}
    types = value_types(model, arrays, run=False)  # no run: inference alone
    assert types["y"][0] == "f32[2, 3, 8]" and types["z"][0] == "f32[2, 3, 8]"


def test_weights_show_with_their_bytes(bert, cnn):
    for step in (bert.steps[0], bert["MatMulAddFusion"], cnn["NchwcTransformer"]):
        assert step.graph.params
        for p in step.graph.params.values():
            want = (
                int(np.prod(p.shape, dtype=np.int64))
                * np.dtype({"f32": np.float32, "i64": np.int64}[p.dtype]).itemsize
            )
            assert p.nbytes == want > 0, p.name
            assert step.graph.nodes[p.node_id].nbytes == p.nbytes


# ----- provenance ----------------------------------------------------------------------------


def test_module_paths_come_from_the_exporters_scopes():
    assert module_path(["", "layer.0", "layer.0.attention", "layer.0.attention.q", "linear"]) == (
        "layer.0.attention.q"
    )
    assert module_path(["", "layer", "0", "attention", "linear"]) == "layer.0.attention"
    assert module_path(["", "add"]) == ""


def test_a_fused_node_is_in_the_module_the_nodes_it_replaced_share(cnn):
    # onnxscript gives the Conv it folds the BatchNorm into the BatchNorm's metadata alone
    step = cnn["FuseBatchNormIntoConv"]
    (rewrite,) = [r for r in step.rewrites if "Conv" in ops_of(step, r.produced)]
    (conv,) = [step.graph.nodes[p] for p in rewrite.produced if step.graph.nodes[p].op == "Conv"]
    assert conv.group == "" and "node_conv2d" in conv.provenance["from"]
    assert "batch_norm" in conv.provenance["from"]
    later = [s for s in cnn.steps if s.index > step.index and s.depth == 1]
    assert [s.name for s in later] == ["RemoveUnusedNodesPass", "ConvActivationFusion"] + [
        "NchwcTransformer"
    ]
    for s in later[:2]:  # and keeps it after (ORT's FusedConv of the same name too)
        (same,) = [n for n in s.graph.nodes.values() if n.id == conv.id]
        assert same.group == "" and same.provenance["from"] == conv.provenance["from"]
    nchwc = cnn["NchwcTransformer"]
    groups = sorted(n.group for n in op_nodes(nchwc, "com.microsoft.nchwc::Conv"))
    assert groups == ["", "conv2"]  # each blocked Conv from the Conv it replaced


def ops_of(step, ids) -> list[str]:
    return [step.graph.nodes[i].op for i in ids]


def test_nodes_point_back_to_their_torch_modules(bert):
    export = bert.steps[0]
    groups = {n.group for n in export.graph.nodes.values() if n.kind == "op"}
    assert {
        "encoder.layer.0.attention.self.query",
        "encoder.layer.0.attention.self",
        "encoder.layer.0.attention.norm",
        "encoder.layer.0.intermediate",
    } <= groups
    assert not any("encoder.layer.0.encoder" in g for g in groups)  # scopes are full paths
    (norm,) = [n for n in export.graph.nodes.values() if n.op == "LayerNormalization"][:1]
    assert norm.provenance["class"] == "torch.nn.modules.normalization.LayerNorm"
    assert norm.provenance["file"].split("/")[-1].startswith("ort_models.py:")  # its definition
    # ORT writes no metadata: the recorder gives it back, by name or from what was fused
    ort = bert["MatMulScaleFusion"]
    (softmax,) = op_nodes(ort, "Softmax")
    assert softmax.group == "encoder.layer.0.attention.self" and "from" not in softmax.provenance
    (skip, skip2) = op_nodes(ort, "com.microsoft::SkipLayerNormalization")
    assert {skip.group, skip2.group} == {"encoder.layer.0.attention", "encoder.layer.0"}
    assert "node_add" in skip.provenance["from"] and "layer_norm" in skip.provenance["from"]
    gemms = op_nodes(bert["MatMulAddFusion"], "Gemm")
    assert "encoder.layer.0.attention.self.query" in {g.group for g in gemms}


# ----- the text ------------------------------------------------------------------------------


def test_the_text_lists_weights_by_name_then_the_nodes_with_their_types(bert):
    text = bert.steps[0].text
    lines = text.splitlines()
    assert all(len(line) <= MAX_LINE_CHARS + 40 for line in lines)
    assert "= {}" not in text  # no initializer printed as data
    (q,) = [ln for ln in lines if "encoder.layer.0.attention.self.query.weight" in ln][:1]
    assert q.startswith("#   ") and "f32[32, 32]" in q and q.endswith("4.1 kB")
    nodes = [ln for ln in lines if not ln.startswith("#")]
    assert len(nodes) == sum(1 for n in bert.steps[0].graph.nodes.values() if n.kind == "op")
    assert all("    # " in ln for ln in nodes)  # each node with the type it makes
    fused = bert["SkipLayerNormFusion"].text
    assert "com.microsoft.SkipLayerNormalization <epsilon: float = 1e-05>" in fused


def test_the_text_cuts_a_long_list_of_weights():
    weights = [
        numpy_helper.from_array(np.full(2, k, dtype=np.float32), f"w{k}") for k in range(300)
    ]
    node = helper.make_node("Sum", [w.name for w in weights], ["y"], name="sum")
    graph = helper.make_graph(
        [node], "many", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], weights
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    text = ONNXState().wrap(model).text()
    assert f"#   +{300 - MAX_WEIGHT_LINES} more weights" in text
    assert "# 300 weights, 2.4 kB" in text and re.search(r"\n#   w0 +f32\[2\] +8 B\n", text)


# ----- rewrites ------------------------------------------------------------------------------


def test_two_matches_sharing_a_constant_stay_two_rewrites():
    """x + c and y + c made x - c and y - c, the constant c read by both dropped for d."""

    def model(op: str, const: str):
        c = numpy_helper.from_array(np.ones(2, dtype=np.float32), const)
        nodes = [
            helper.make_node(op, ["x", const], ["a"], name="first"),
            helper.make_node(op, ["y", const], ["b"], name="second"),
        ]
        vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "xyab"]
        return helper.make_model(helper.make_graph(nodes, "g", vi[:2], vi[2:], [c]))

    state = ONNXState()
    before, after = state.wrap(model("Add", "c")), state.wrap(model("Sub", "d"))
    groups = changes(before.entries(), after.entries())
    assert len(groups) == 2
    named = [
        (sorted(e.label for e in removed), sorted(e.label for e in added))
        for removed, added in groups
    ]
    assert named == [(["c", "first"], ["d", "first"]), (["second"], ["second"])]
    kinds = [(e.nid, e.kind) for e in entries(before.proto(), before.weight_keys)]
    assert kinds == [
        ("input x", "input"),
        ("input y", "input"),
        ("weight c", "weight"),
        ("first", "op"),
        ("second", "op"),
        ("return", "output"),
    ]


def test_the_rewrites_tab_names_each_fusion_and_what_it_does(bert):
    from widgets.rewrites_html import rewrites_html

    page = rewrites_html(bert["SkipLayerNormFusion"])
    assert "applied 2 rewrites by 1 rule" in page
    assert "com.microsoft::SkipLayerNormalization" in html.unescape(page)
    assert "node_add" in page and "node_layer_norm" in page


def test_every_step_of_these_traces_has_words_for_what_it_does(bert, bert_fused, cnn):
    adapter = get_adapter("onnxruntime")
    for trace in (bert, bert_fused, cnn):
        for step in trace.steps:
            if step.kind == "pass" and step.depth == 1:
                doc = adapter.rule_doc(step.name)
                assert doc and len(doc) < 200 and "\n" not in doc, step.name
    assert adapter.rule_doc("NoSuchTransformer") == "" and adapter.rule_doc(None) == ""
    assert adapter.rule_doc("mul_by_1_rule") == "Mul(x, 1) -> x"


# ----- save and load -------------------------------------------------------------------------


def test_a_saved_trace_comes_back_with_its_graphs_and_texts(cnn, tmp_path):
    path = tmp_path / "cnn.passlens"
    cnn.save(path)
    loaded = explorer.load(path)
    assert [s.name for s in loaded.steps] == [s.name for s in cnn.steps]
    for a, b in zip(cnn.steps, loaded.steps, strict=True):
        ga, gb = a.graph, b.graph
        assert list(ga.nodes) == list(gb.nodes), a.name
        assert [(n.op, n.type, n.attrs, n.group) for n in ga.nodes.values()] == [
            (n.op, n.type, n.attrs, n.group) for n in gb.nodes.values()
        ]
        assert a.text == b.text and a.rewrites == b.rewrites
    assert loaded.compiler == "onnxruntime"
    with pytest.raises(CheckError, match="loaded from a file"):
        loaded.check()


def test_check_options_reach_the_ort_check(cnn, check_options_reach):
    check_options_reach(cnn, cnn.example_inputs)


# ----- names from a file ---------------------------------------------------------------------

PAYLOAD = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """A Conv + Relu file whose node names and value name are markup: ORT fuses them."""
    model, inputs = conv_relu_onnx(conv=PAYLOAD, relu=PAYLOAD + "relu", value=PAYLOAD + "v")
    path = tmp_path_factory.mktemp("crafted") / "crafted.onnx"
    onnx.save(model, str(path))
    trace = explorer.explore(str(path), inputs, compiler="onnxruntime", pipeline="ort:extended")
    return trace, trace.check()


def test_a_crafted_node_name_is_escaped_in_the_report(crafted, tmp_path):
    trace, report = crafted
    step = trace["ConvActivationFusion"]
    assert PAYLOAD in step.graph.nodes and step.rewrites
    assert PAYLOAD in trace.steps[0].text
    out = tmp_path / "report.html"
    trace.to_html(out, report=report)
    page = out.read_text()
    assert "<img" not in page and "onerror=alert(1)>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page or "\\u003cimg src=x" in page


def test_a_crafted_node_name_is_escaped_in_the_stepper(crafted):
    from widgets.stepper import PassStepper

    trace, report = crafted
    stepper = PassStepper(trace, report)
    documents = {}
    for step in trace.steps:
        stepper.index = step.index
        documents[f"#{step.index} header"] = stepper.header.value
        for view in stepper.views:
            if view.scope == "step":
                stepper.tab = view.title
                documents[f"#{step.index} {view.title}"] = stepper.panes[view.title].value
    documents["timeline"] = stepper.timeline.rows
    assert [k for k, d in documents.items() if "<img" in d] == []
    shown = "".join(documents.values())
    assert "&lt;img src=x onerror=alert(1)&gt;" in shown  # the name is there, as text
