"""Recording ``explore(..., compiler="onnxruntime")``: onnxscript's passes and rules, the
transformers optimizer's fusions and ORT's transformers as steps with their rewrites, the last
ORT step against ORT's one-go model, a user's wrong rule found at its step and node, an ONNX
file checked against itself unoptimized, and the sources and pipelines refused."""

from __future__ import annotations

import onnx
import pytest
import torch

import explorer
from compiler import PasslensError
from explorer.onnxruntime import ONNXSourceError, PipelineError


def stage(trace, name: str):
    """The stage step whose name starts with ``name`` and the steps inside it."""
    outer = next(s for s in trace.steps if s.depth == 0 and s.name.startswith(name))
    return outer, [trace.steps[c] for c in outer.children]


def ops(step, ids) -> list[str]:
    """The ops of the nodes ``ids`` of ``step``'s graph."""
    return [step.graph.nodes[i].op for i in ids]


# ----- onnxscript ----------------------------------------------------------------------------


def test_onnxscript_passes_and_rules_are_steps_that_changed_the_model(bert):
    _, steps = stage(bert, "onnxscript")
    names = [s.name for s in steps]
    assert {"FoldConstantsPass", "RemoveUnusedNodesPass", "TransposeTranspose"} <= set(names)
    for s in steps:
        assert s.module is not s.before and s.rewrites, s.name
    rule = bert["TransposeTranspose"]
    assert rule.snapshot.options["matches"] == len(rule.rewrites) == 1
    (r,) = rule.rewrites
    assert ops(rule.previous, r.matched) == ["Transpose", "Transpose"]
    assert ops(rule, r.produced) == ["Transpose"]
    folded = bert["FoldConstantsPass"]
    for r in folded.rewrites:  # each folding: a node (and what it read) to a weight, the
        # nodes that read it rewired (the same nodes, their input renamed)
        assert {"Transpose", "Concat"} & set(ops(folded.previous, r.matched))
        kinds = [folded.graph.nodes[p].kind for p in r.produced]
        assert kinds.count("weight") == 1
        rewired = [p for p in r.produced if folded.graph.nodes[p].kind == "op"]
        assert set(rewired) <= set(r.matched)


# ----- ORT -----------------------------------------------------------------------------------


def test_ort_transformers_are_steps_in_the_order_ort_applied_them(bert):
    outer, steps = stage(bert, "ort:all")
    names = [s.name for s in steps]
    assert names == ["MatMulAddFusion", "SkipLayerNormFusion", "MatMulScaleFusion"]
    positions = [s.snapshot.options["log_position"] for s in steps]
    assert positions == sorted(positions) and len(set(positions)) == 3
    assert outer.module is steps[-1].module


def test_a_fusion_rewrites_the_nodes_it_matched(bert):
    step = bert["SkipLayerNormFusion"]
    assert len(step.rewrites) == 2  # the two residual LayerNorms of the layer
    for r in step.rewrites:
        assert r.rule == "SkipLayerNormFusion"
        assert sorted(ops(step.previous, r.matched)) == ["Add", "LayerNormalization"]
        assert ops(step, r.produced) == ["com.microsoft::SkipLayerNormalization"]
    gemm = bert["MatMulAddFusion"]
    assert len(gemm.rewrites) == 6  # q, k, v, dense, intermediate, output
    for r in gemm.rewrites:
        assert sorted(ops(gemm.previous, r.matched)) == ["Add", "MatMul"]
        made = [o for o in ops(gemm, r.produced) if o != "weight"]
        assert sorted(made) == ["Gemm", "Reshape", "Reshape"]


def test_the_last_ort_step_is_the_model_ort_makes_in_one_go(bert, cnn):
    for trace in (bert, cnn):
        run = trace.onnxruntime
        assert run.equal and run.level == "all"
        one_go = onnx.ModelProto()
        one_go.ParseFromString(run.one_go)
        _, steps = stage(trace, "ort:all")
        last = steps[-1].module.proto()

        def nodes(m):
            return [(n.domain, n.op_type, tuple(n.input), tuple(n.output)) for n in m.graph.node]

        assert nodes(last) == nodes(one_go)
        assert any("equals the model ORT makes at level 'all'" in n for n in trace.record_notes)
        assert "equals the model ORT makes" in str(trace)


def test_the_cnn_is_fused_then_laid_out_in_nchwc(cnn):
    _, steps = stage(cnn, "ort:all")
    assert [s.name for s in steps] == ["ConvActivationFusion", "NchwcTransformer"]
    fused = [n for n in steps[0].graph.nodes.values() if n.op == "com.microsoft::FusedConv"]
    assert len(fused) == 2 and all(n.attrs["activation"] == "Relu" for n in fused)
    nchwc = [n for n in steps[1].graph.nodes.values() if n.op.startswith("com.microsoft.nchwc")]
    assert sorted(n.op for n in nchwc) == [
        "com.microsoft.nchwc::Conv",
        "com.microsoft.nchwc::Conv",
        "com.microsoft.nchwc::ReorderOutput",
    ]
    reordered = [n for n in steps[1].graph.nodes.values() if n.label.startswith("reorder")]
    assert reordered and all(n.kind == "weight" and n.nbytes > 0 for n in reordered)
    assert cnn["FuseBatchNormIntoConv"].rewrites  # onnxscript's rule, before ORT


def test_the_transformers_optimizer_fusions_are_steps(bert_fused):
    _, steps = stage(bert_fused, "transformers:bert")
    names = [s.name for s in steps]
    assert names[:2] == ["fuse_skip_layer_norm", "fuse_attention"]
    attention = bert_fused["fuse_attention"]
    (r,) = attention.rewrites
    assert ops(attention, r.produced)[0] == "com.microsoft::Attention"
    assert {"MatMul", "Softmax", "Transpose"} <= set(ops(attention.previous, r.matched))
    node = attention.graph.nodes[r.produced[0]]
    assert node.attrs["num_heads"] == "4" and node.type == "f32[2, 8, 32]"


# ----- a user's rule -------------------------------------------------------------------------


def test_a_wrong_user_rule_is_found_at_its_own_step_and_node(bert_wrong):
    step = bert_wrong["add_to_sub"]
    assert step.snapshot.options == {"matches": 8, "user_rule": True}
    assert len(step.rewrites) == 8
    for r in step.rewrites:
        assert ops(step.previous, r.matched) == ["Add"] and ops(step, r.produced) == ["Sub"]
    report = bert_wrong.check()
    first = report.first_failure
    assert first.kind == "diverged" and first.step is step
    node = step.graph.node_of(first.nodes[0])
    assert node.op == "Sub" and node.group == "encoder.layer.0.attention.self.query"
    assert "encoder.layer.0.attention.self.query" in first.message
    before = [c for c in report.steps if c.step.index < step.parent]  # the rules' stage
    assert before and all(c.status == "ok" for c in before)


def test_rewrite_rules_must_be_onnxscript_rules():
    with pytest.raises(TypeError, match="RewriteRule"):
        explorer.explore(
            torch.nn.ReLU(), (torch.ones(2),), compiler="onnxruntime", rewrite_rules=["Add -> Sub"]
        )


# ----- an ONNX file --------------------------------------------------------------------------


def test_an_onnx_file_is_checked_against_itself_unoptimized(file_trace, onnx_file):
    path, inputs = onnx_file
    assert file_trace.steps[0].name == path.name and file_trace.frontend == "onnx"
    _, steps = stage(file_trace, "ort:extended")
    assert [s.name for s in steps] == ["ConvActivationFusion"]
    report = file_trace.check(inputs)
    assert "the ONNX file in onnxruntime with its optimizations off" in report.reference
    assert report.findings == [] and all(c.status == "ok" for c in report.steps)
    fused = [n for n in steps[0].graph.nodes.values() if n.op == "com.microsoft::FusedConv"]
    assert len(fused) == 1 and fused[0].type == "f32[1, 4, 8, 8]"


def test_an_onnx_file_with_external_data_is_refused(tmp_path):
    from tests.explorer.onnxruntime.models import conv_relu_onnx

    model, _ = conv_relu_onnx()
    path = tmp_path / "external.onnx"
    onnx.save(
        model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0
    )
    assert (tmp_path / "weights.bin").exists()
    with pytest.raises(ONNXSourceError, match="external file") as e:
        explorer.explore(str(path), compiler="onnxruntime")
    assert isinstance(e.value, PasslensError) and "save_as_external_data=False" in str(e.value)


# ----- pipelines -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pipeline", "says"),
    [
        ("ort:fast", "basic, extended or all, not 'fast'"),
        ("transformers:nope", "got 'nope'"),
        ("ort,onnxscript", "ort runs last"),
        ("onnxscript,onnxscript", "names onnxscript twice"),
        ("tvm", "not 'tvm'"),
    ],
)
def test_a_bad_pipeline_is_one_clear_error(pipeline, says):
    with pytest.raises(PipelineError) as e:
        explorer.explore(
            torch.nn.ReLU(), (torch.ones(2),), compiler="onnxruntime", pipeline=pipeline
        )
    assert isinstance(e.value, PasslensError) and says in str(e.value)
    assert e.value.__cause__ is None and e.value.__context__ is None


def test_every_op_of_every_step_has_a_place_and_a_type(bert_fused):
    """Issue 43 item 4 for ONNX Runtime: the nodes its fusions and transformers write take the
    exporter's metadata of the nodes they replace (explorer/onnxruntime/rewrites.py), and
    what no rewrite names takes the place of what it replaces (explorer.graph.place_added):
    no op of any step is without a module or source line, nor of unknown type."""
    for step in bert_fused.steps:
        ops = [n for n in step.graph.nodes.values() if n.kind == "op"]
        assert ops, step.name
        homeless = [n.id for n in ops if not n.group and not n.provenance.get("file")]
        unknown = [n.id for n in ops if n.type in ("", "?")]
        assert homeless == [] and unknown == [], (step.index, step.name, homeless, unknown)
