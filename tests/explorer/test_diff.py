"""Diffs between steps: node matching, op counts, shapes, signatures, parameters, IR text."""

import importlib

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.ir import Call, Function, Module, Var, parse, tensor
from compiler.ir.nodes import Constant
from explorer.diff import diff, diff_params, diff_signatures
from explorer.graph import Param, Signature

params_module = importlib.import_module("explorer.params")  # where the content checks live

LINEAR_4D = """
weights {
  $linear.weight: f32[512, 128]
  $linear.bias: f32[512]
}
def @main(%x: f32[1, 56, 56, 128]) -> f32[1, 56, 56, 512] attrs {num_input = 1} {
  %y: f32[1, 56, 56, 512] = linear(%x, $linear.weight, $linear.bias)
  return %y
}
"""

LINEAR_3D = LINEAR_4D.replace("[1, 56, 56, 128]", "[8, 16, 128]").replace(
    "[1, 56, 56, 512]", "[8, 16, 512]"
)

SEEDS_LIFT = """
def @main(%A: f32[16, 16], %B: f32[16, 16]) -> f32[16, 16] attrs {num_input = 1} {
  %B1: f32[16, 16] = add(%B, const(f32[], 1.0))
  %C: f32[16, 16] = multiply(%A, %B1)
  return %C
}
"""

SMALL = """
weights {
  $a: f32[3] = [1.0, 2.0, 3.0]
}
def @main(%x: f32[n, 3]) -> f32[3, n] {
  %e: f32[3] = exp($a)
  %y: f32[n, 3] = add(%x, %e)
  %t: f32[3, n] = permute_dims(%y, axes=[1, 0])
  return %t
}
"""


def linear_module(text: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    return parse(
        text,
        params={
            "linear.weight": rng.standard_normal((512, 128), dtype=np.float32),
            "linear.bias": rng.standard_normal(512, dtype=np.float32),
        },
    )


def param(name: str, data: np.ndarray) -> Param:
    c = Constant(data, name=name)
    return Param(name, c.data.shape, c.ty.dtype.short, c.nbytes, f"${name}", c)


@pytest.fixture(scope="module")
def mlp_fold():
    return explorer.explore(
        models.mlp((32, 64, 16), batch=4, seed=2), pipeline="decompose-ops,fold-constant"
    )


# ----- what passes change -------------------------------------------------------------------


def test_fold_constant_removes_permute_dims_and_names_the_constant_after_its_source(mlp_fold):
    d = mlp_fold["fold-constant"].diff()
    assert sorted(n.op for n in d.removed if n.kind == "op") == ["permute_dims", "permute_dims"]
    assert {n.label for n in d.added} == {
        "layers.0.weight.permute_dims",
        "layers.2.weight.permute_dims",
    }
    assert all(n.kind == "weight" for n in d.added)
    assert d.op_count_changes == {"permute_dims": -2}
    assert {(c.name, c.source, c.axes) for c in d.params.permuted} == {
        ("layers.0.weight.permute_dims", "layers.0.weight", (1, 0)),
        ("layers.2.weight.permute_dims", "layers.2.weight", (1, 0)),
    }
    assert d.params.bytes_delta == 0 and d.params.growth == [] and d.params.broadcast == []
    # each matmul now reads the folded constant: a rewired node, matched through provenance
    rewired = {c.after.id: c for c in d.changed}
    assert set(rewired) == {"main/matmul", "main/matmul_1"}
    assert rewired["main/matmul"].how == "provenance"
    assert "$layers.0.weight.permute_dims" in rewired["main/matmul"].fields["inputs"][1]
    text = str(d)
    assert "-2 permute_dims" in text and "`layers.0.weight` transposed" in text


@pytest.mark.parametrize(
    "text, lead, copies",
    [(LINEAR_4D, (1, 56), 56), (LINEAR_3D, (8,), 8)],
    ids=["4d-input", "3d-input"],
)
def test_broadcast_replica_is_n_copies_of_the_weight(text, lead, copies):
    trace = explorer.explore(linear_module(text), pipeline="replica-linear-broadcast,fold-constant")
    d = trace["fold-constant"].diff()
    weight_bytes = 512 * 128 * 4
    [bc] = d.params.broadcast
    assert (bc.name, bc.source) == ("linear.weight.permute_dims.broadcast_to", "linear.weight")
    assert (bc.lead, bc.copies, bc.axes, bc.transposed) == (lead, copies, (1, 0), True)
    assert bc.nbytes == copies * weight_bytes and bc.source_nbytes == weight_bytes
    assert f"{copies} copies of `linear.weight`" in bc.message
    assert f"({copies} x 262.1 kB = " in bc.message
    if len(lead) > 1:
        assert "is 1 × 56 = 56 copies" in bc.message
    # the weight itself is gone: the net growth is (copies - 1) weights
    assert d.params.bytes_delta == (copies - 1) * weight_bytes
    assert [(g.name, g.nbytes, g.delta) for g in d.params.growth] == [
        (bc.name, copies * weight_bytes, (copies - 1) * weight_bytes)
    ]
    assert bc.message in str(d) and bc.message in d._repr_html_().replace("&#x27;", "'")


def test_convert_dtype_then_fold_reports_casts():
    trace = explorer.explore(
        models.mlp((32, 64, 16), batch=4, seed=2),
        pipeline="convert-dtype{dtype=float16},fold-constant",
    )
    d = trace["fold-constant"].diff()
    casts = {c.source: c for c in d.params.cast}
    assert set(casts) == {"layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"}
    w = casts["layers.0.weight"]
    assert (w.name, w.before, w.after, w.checked) == ("layers.0.weight.cast", "f32", "f16", "all")
    assert w.message.startswith("layers.0.weight cast f32 -> f16")
    assert d.params.bytes_after * 2 == d.params.bytes_before and d.params.growth == []
    # convert-dtype itself: the linear layers are rewritten in f16 (matched through provenance)
    d1 = trace["convert-dtype"].diff()
    lin = next(c for c in d1.changed if c.after.id == "main/linear")
    assert lin.how == "provenance" and lin.fields["dtype"] == ("f32", "f16")
    assert d1.op_count_changes == {"cast": 6} and d1.shape_changes == []


def test_a_cast_is_only_claimed_when_the_values_match():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 32), dtype=np.float32)
    good = diff_params({"w": param("w", w)}, {"w.cast": param("w.cast", w.astype(np.float16))})
    bad = diff_params({"w": param("w", w)}, {"w.cast": param("w.cast", (w + 1).astype(np.float16))})
    assert [c.message for c in good.cast] == ["w cast f32 -> f16 (now `w.cast`)"]
    assert (
        bad.cast == []
        and [p.name for p in bad.added] == ["w.cast"]
        and [p.name for p in bad.removed] == ["w"]
    )


def test_cast_check_past_the_budget_is_sampled(monkeypatch):
    monkeypatch.setattr(params_module, "CAST_CHECK_BUDGET", 100)
    w = np.random.default_rng(1).standard_normal((64, 32), dtype=np.float32)
    d = diff_params({"w": param("w", w)}, {"w": param("w", w.astype(np.float16))})
    assert [(c.name, c.checked) for c in d.cast] == [("w", "sample")]


def test_lift_transform_params_changes_main_and_adds_the_transform_function():
    trace = explorer.explore(SEEDS_LIFT, pipeline="lift-transform-params")
    d = trace["lift-transform-params"].diff()
    assert [s.name for s in d.functions_added] == [
        "main_transform_params"
    ] and d.functions_removed == []
    [main] = d.signature_changes
    assert main.name == "main"
    assert main.changes == [
        "params (%A: f32[16, 16], %B: f32[16, 16]) -> (%A: f32[16, 16], %B1: f32[16, 16])"
    ]
    # the lifted binding is the same object, now in the new function: moved, not changed
    moved = {c.after.id: c for c in d.moved if c.how == "identity"}
    assert "main_transform_params/B1" not in {c.after.id for c in d.changed}
    assert moved["main_transform_params/B1"].fields == {
        "function": ("main", "main_transform_params")
    }
    assert [(s.source, s.name) for s in d.params.renamed] == [
        ("@main/B", "@main_transform_params/B")
    ]
    # @main's new weight parameter is computed by the transform, not stored: no new bytes
    assert d.params.added == [] and d.params.bytes_delta == 0
    assert "+ @main_transform_params(%B: f32[16, 16]) -> (f32[16, 16],)" in str(d)


def test_signature_num_input_and_result_changes():
    before = {
        "main": Signature("main", [("x", "f32[4]"), ("w", "f32[4]")], "f32[4]", 1, {"num_input": 1})
    }
    after = {
        "main": Signature("main", [("x", "f32[4]"), ("w", "f32[4]")], "f16[4]", 2, {"num_input": 2})
    }
    added, removed, [change] = diff_signatures(before, after)
    assert added == [] and removed == []
    assert change.changes == ["num_input 1 -> 2", "result f32[4] -> f16[4]"]


def test_decompose_ops_op_counts():
    trace = explorer.explore(models.mlp((32, 16), batch=4), pipeline="decompose-ops")
    d = trace["decompose-ops"].diff()
    assert d.op_count_changes == {"add": 1, "matmul": 1, "permute_dims": 1, "linear": -1}
    assert d.op_count_text() == "+1 add, +1 matmul, +1 permute_dims, -1 linear"
    assert trace.summary()[-1]["ops"] == d.op_count_text()


# ----- cost and matching ------------------------------------------------------------------


def test_unchanged_pass_is_an_empty_diff_that_builds_nothing():
    trace = explorer.explore(models.mlp((32, 16), batch=4), pipeline="lift-transform-params")
    step = trace["lift-transform-params"]
    assert step.status == "unchanged"
    d = step.diff()
    assert d.identical and d.is_empty and not d
    assert d.added == d.removed == d.changed == d.shape_changes == [] and d.op_count_text() == ""
    assert d.text_diff == ""
    assert step._graph is None and step.previous._graph is None and step._text is None
    assert "no change (same module)" in str(d)


def test_nodes_untouched_by_a_pass_are_never_reported():
    module = models.convnext(dims=(8, 16), depths=(1, 1), image=16, num_classes=10)
    trace = explorer.explore(module, pipeline="default")
    checked = 0
    for step in trace:
        if step.kind != "pass" or not step.changed or step.failed:
            continue
        d = step.diff()
        ga, gb = step.previous.graph, step.graph
        kept_a = {id(n.obj) for n in ga.nodes.values() if n.obj is not None}
        added_ids = {n.id for n in d.added}
        removed_ids = {n.id for n in d.removed}
        for n in gb.nodes.values():
            if n.obj is not None and id(n.obj) in kept_a:
                checked += 1
                assert n.id not in added_ids and d.matches[n.id][1] == "identity"
        kept_b = {id(n.obj) for n in gb.nodes.values() if n.obj is not None}
        assert not any(
            n.obj is not None and id(n.obj) in kept_b
            for n in ga.nodes.values()
            if n.id in removed_ids
        )
        for c in d.changed:
            if c.how == "identity":
                assert set(c.fields) <= {"function", "kind"}
    assert checked > 100


def test_steps_of_different_traces_match_by_structure_and_name():
    a = explorer.explore(SMALL, pipeline="dce")
    b = explorer.explore(SMALL, pipeline="dce")
    same = diff(a.imported, b.imported)
    assert not same.identical and same.is_empty
    assert {how for _, how in same.matches.values()} <= {"name", "structure"}
    other = explorer.explore(
        SMALL.replace("[n, 3]", "[4, 3]")
        .replace("[3, n]", "[3, 4]")
        .replace("axes=[1, 0]", "axes=[-1, 0]")
    )
    d = diff(a.imported, other.imported)
    assert d.added == d.removed == []
    assert ("main/x", "f32[n, 3]", "f32[4, 3]") in d.shape_changes
    assert ("main/y", "f32[n, 3]", "f32[4, 3]") in d.shape_changes
    t = next(c for c in d.changed if c.after.id == "main/t")
    assert t.how == "name" and t.fields["attrs"] == {"axes": ("[1, 0]", "[-1, 0]")}
    # two builds of one model (no shared objects): matched through provenance
    m1, m2 = (explorer.explore(models.mlp((8, 4), seed=s), pipeline="dce") for s in (0, 1))
    d = diff(m1.imported, m2.imported)
    assert d.matches["main/linear"] == ("main/linear", "provenance")
    assert d.added == d.removed == d.changed == []
    assert sorted(d.params.values_changed) == ["layers.0.bias", "layers.0.weight"]


def test_source_step_matches_ir_through_provenance():
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32), "fc.weight"
    )
    b = numpy_helper.from_array(np.zeros(4, np.float32), "fc.bias")
    graph = helper.make_graph(
        [
            helper.make_node(
                "Gemm", ["x", "fc.weight", "fc.bias"], ["h"], name="/fc/Gemm", transB=1
            ),
            helper.make_node("Relu", ["h"], ["y"], name="/act/Relu"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    trace = explorer.explore(model.SerializeToString(), pipeline="decompose-ops")
    d = trace.imported.diff()  # the ONNX graph -> the imported module
    assert d.matches["main/h"] == ("/fc/Gemm", "source-node")
    assert d.matches["main/y"] == ("/act/Relu", "source-node")
    assert d.matches["$fc.weight"][0] == "$fc.weight" and d.added == d.removed == []
    assert d.params.is_empty  # float32 and f32 are the same dtype
    assert d.op_count_changes == {"linear": 1, "relu": 1, "Gemm": -1, "Relu": -1}
    # a later step against the source: the Gemm now lands on the decomposed add
    later = diff(trace[0], trace["decompose-ops"])
    assert later.matches["main/h"] == ("/fc/Gemm", "source-node")
    assert diff(trace[0], trace[0]).identical


# ----- parameters by content ------------------------------------------------------------------


def test_fingerprints_avoid_full_comparisons_when_nothing_is_duplicated(monkeypatch):
    calls = []
    real = params_module._full_equal
    monkeypatch.setattr(
        params_module, "_full_equal", lambda x, y: calls.append(x.size) or real(x, y)
    )
    rng = np.random.default_rng(0)
    pa = {
        f"w{i}": param(f"w{i}", rng.standard_normal((64, 32), dtype=np.float32)) for i in range(50)
    }
    pb = dict(pa)
    pb.update(
        {
            f"new{i}": param(f"new{i}", rng.standard_normal((8, 64, 32), dtype=np.float32))
            for i in range(20)
        }
    )
    pb["w3"] = param("w3", rng.standard_normal((64, 32), dtype=np.float32))  # new values
    d = diff_params(pa, pb)
    assert calls == []
    assert d.values_changed == ["w3"] and len(d.added) == 20 and d.broadcast == d.duplicated == []
    # a true duplicate and a true broadcast are compared in full, once each
    pb["dup"] = param("dup", pa["w7"].obj.data.copy())
    pb["wide"] = param("wide", np.broadcast_to(pa["w9"].obj.data, (3, 64, 32)).copy())
    d = diff_params(pa, pb)
    assert [(s.name, s.source) for s in d.duplicated] == [("dup", "w7")]
    assert [(c.name, c.source, c.copies, c.axes) for c in d.broadcast] == [
        ("wide", "w9", 3, (0, 1))
    ]
    assert sorted(calls) == [64 * 32, 3 * 64 * 32]


def test_a_copy_that_differs_where_samples_do_not_look_is_not_claimed():
    w = np.random.default_rng(0).standard_normal((64, 32), dtype=np.float32)
    wide = np.broadcast_to(w.T, (5, 32, 64)).copy()
    wide[1, 3, 5] += 1.0  # row 1 is not among the sampled copies (0, 2, 4)
    d = diff_params({"w": param("w", w)}, {"w": param("w", w), "wide": param("wide", wide)})
    assert d.broadcast == [] and [p.name for p in d.added] == ["wide"]
    wide[1, 3, 5] -= 1.0
    d = diff_params({"w": param("w", w)}, {"w": param("w", w), "wide": param("wide", wide)})
    assert [(c.copies, c.axes, c.lead) for c in d.broadcast] == [(5, (1, 0), (5,))]


def test_resized_and_duplicated_params_are_named():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 8), dtype=np.float32)
    d = diff_params(
        {"fc.weight": param("fc.weight", a)},
        {
            "fc.weight": param("fc.weight", rng.standard_normal((4, 16), dtype=np.float32)),
            "copy": param("copy", a),
        },
    )
    [r] = d.resized
    assert (r.name, r.before, r.after) == ("fc.weight", (4, 8), (4, 16))
    assert [(s.name, s.source) for s in d.renamed] == [
        ("copy", "fc.weight")
    ]  # the old content moved
    assert [(g.name, g.nbytes, g.delta) for g in d.growth] == [
        ("copy", 128, 128),
        ("fc.weight", 256, 128),
    ]


# ----- text -------------------------------------------------------------------------------------


def test_text_diff_and_side_by_side(mlp_fold):
    step = mlp_fold["fold-constant"]
    d = step.diff()
    lines = d.text_diff.splitlines()
    assert lines[0].startswith("--- #") and lines[1].startswith("+++ #")
    assert any(x.startswith("-") and "permute_dims(" in x for x in lines)
    assert any(x.startswith("+") and "$layers.0.weight.permute_dims" in x for x in lines)
    rows = d.side_by_side()
    assert {tag for *_, tag in rows} <= {"equal", "replace", "delete", "insert"}
    assert [left for left, _, _ in rows if left is not None] == step.previous.text.splitlines()
    assert [right for _, right, _ in rows if right is not None] == step.text.splitlines()
    short = d.side_by_side(context=1)
    assert len(short) < len(rows) and any(tag == "skip" for *_, tag in short)
    html = d._repr_html_()
    assert "<details" in html and "permute_dims" in html


def test_the_html_summary_escapes_names_from_the_model():
    """A weight name is text from the model: every section of the HTML summary escapes it."""
    x = Var("x", tensor([2, 4]))
    w = Constant(np.ones((3, 4), np.float32), name="<i>w&</i>")
    module = Module({"main": Function.from_output([x], Call("linear", [x, w]))})
    trace = explorer.explore(module, pipeline="decompose-ops,fold-constant")
    d = explorer.diff(trace.imported, trace.final)
    assert "$<i>w&</i>: f32[3, 4]" in str(d)  # the text form is plain
    page = d._repr_html_()
    assert "<i>" not in page and "&lt;i&gt;w&amp;&lt;/i&gt;" in page
    assert page.count("&lt;i&gt;") >= 3  # removed, added and params sections


def test_two_same_op_nodes_of_one_layer_match_by_the_inputs_they_read():
    """Behaviour protected: the provenance tie-break in node matching. Two relu nodes from
    one layer read different inputs; two builds (no shared objects) bind them in opposite
    orders. Each must match the one reading the same input, so the diff is empty. Matched
    crosswise, the diff would show three changed nodes (both relus, and the subtract reading
    them) where nothing changed."""
    from compiler.ir.provenance import Provenance

    def build(swap: bool) -> Module:
        f32 = tensor((2, 3), "float32")
        x, y = Var("x", f32), Var("y", f32)
        prov = Provenance(framework="torch", module_path="act", source_op="aten.relu.default")
        rx = Call("relu", (x,), {}, prov=prov, name="rx")
        ry = Call("relu", (y,), {}, prov=prov, name="ry")
        out = Call("subtract", (rx, ry), {}, name="out")
        bindings = [ry, rx, out] if swap else [rx, ry, out]
        return Module({"main": Function([x, y], bindings, out, {"num_input": 2})})

    a = explorer.explore(build(swap=False), pipeline="dce")
    b = explorer.explore(build(swap=True), pipeline="dce")
    d = diff(a.imported, b.imported)
    ga, gb = a.imported.graph, b.imported.graph

    def reads(g, nid):
        return [g.nodes[e.src].label for e in g.edges if e.dst == nid]

    relus = [bid for bid in d.matches if gb.nodes[bid].op == "relu"]
    assert len(relus) == 2 and {d.matches[b][1] for b in relus} == {"provenance"}
    for bid in relus:
        assert reads(ga, d.matches[bid][0]) == reads(gb, bid)  # x with x, y with y
    assert d.changed == [] and d.is_empty


CHAIN = """
def @main(%x: f32[4, 8]) -> f32[4, 8] attrs {num_input = 1} {
  %a: f32[4, 8] = tanh(%x)
  %b: f32[4, 8] = sigmoid(%a)
  %c: f32[4, 8] = neg(%b)
  %d: f32[4, 8] = exp(%c)
  return %d
}
"""


def test_nodes_fuse_ops_moves_into_a_function_are_moved_not_changed():
    """Issue 43 item 3: fuse-ops outlines the chain into a function; its ops keep their values
    (same op, attributes, type, and inputs seen through the call), so they are moved, and
    "changed" counts none of them; the call, the function's parameter and return are added."""
    trace = explorer.explore(parse(CHAIN), pipeline="fuse-ops")
    step = trace["fuse-ops"]
    d = step.diff()
    assert d.changed == []
    assert sorted(c.after.op for c in d.moved) == ["exp", "neg", "sigmoid", "tanh"]
    fused = next(iter(d.functions_added)).name
    assert all(c.fields == {"function": ("main", fused)} for c in d.moved)
    assert sorted(n.kind for n in d.added) == ["call", "input", "output"]
    assert "0 changed nodes, 4 moved (same values)" in d.headline()
    assert ("moved", [f"{c.after.id} ({c.after.op}): @main -> @{fused}" for c in d.moved]) in (
        d.sections()
    )
    # the other way (an inliner's view): the same four move back out, nothing changed
    back = explorer.diff(step, step.previous)
    assert back.changed == [] and len(back.moved) == 4
