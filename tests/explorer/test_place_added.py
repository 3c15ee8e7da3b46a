"""Issue 43 item 4: ops a pass adds without provenance of their own take the place (module
path, source line) and, where theirs is unknown, the type of the node they replace
(explorer.graph.place_added, applied to every step's graph whatever its compiler). The
TVM, Inductor and ONNX Runtime cases are in tests/explorer/tvm/test_tvm_user_pass.py,
tests/explorer/inductor/test_inductor.py and tests/explorer/onnxruntime/test_record.py."""

import numpy as np

import explorer
from compiler import models
from compiler.ir import Call, Constant, Function, Module
from compiler.ir.nodes import substitute
from compiler.passes.infra.manager import Pass
from explorer.graph import GraphEdge, GraphModel, GraphNode, place_added


class GeluByHand(Pass):
    """gelu(x) -> x * sigmoid(1.702 x), built by hand: new Calls with no provenance (a
    RulePass's rewriter would give them the gelu's)."""

    name = "gelu-by-hand"

    def transform(self, module, ctx):
        fns = {}
        for name, fn in module.functions.items():
            while gelu := next((b for b in fn.bindings if getattr(b, "op", "") == "gelu"), None):
                x, k = gelu.args[0], Constant(np.array(1.702, np.float32))
                mapping = {
                    id(gelu): Call("multiply", (x, Call("sigmoid", (Call("multiply", (x, k)),))))
                }
                substitute(fn.bindings, mapping)  # one at a time: the next reads rebuilt nodes
                out = mapping.get(id(fn.output), fn.output)
                fn = Function.from_output(fn.params, out, fn.attrs, fn.prov)
            fns[name] = fn
        return Module(fns)


def test_ops_a_users_pass_builds_without_provenance_sit_where_the_gelu_was():
    model = models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)
    trace = explorer.explore(model, pipeline=[GeluByHand()])
    step = trace["gelu-by-hand"]
    gelus = [n for n in step.previous.graph.nodes.values() if n.op == "gelu"]
    added = [n for n in step.diff().added if n.kind == "op"]
    assert sorted(n.op for n in added) == sorted(["multiply", "multiply", "sigmoid"] * len(gelus))
    places = {g.group for g in gelus}
    assert places == {"features.1.0.block.4", "features.3.0.block.4"}
    assert {n.group for n in added} == places  # not block.3 they read, nor block.5
    for n in added:  # each says whose place it took: the gelu it replaced
        assert n.provenance["module"] == n.group
        assert n.provenance["from"] in {g.id for g in gelus}
    # the error map's layers come from these module paths: the new ops are in the gelu's
    assert not [n for n in step.graph.nodes.values() if n.kind == "op" and not n.group]


def _node(nid, op, group="", prov=None, ty="f32[4]"):
    return GraphNode(nid, "op", op, nid, "main", ty, None, None, {}, prov or {}, group)


def test_without_the_step_before_the_deeper_of_read_and_reader_wins():
    """A var a pass adds reads the residual stream of ``h.0`` and is read by ``h.0.ln_1``: it
    is in ``h.0.ln_1``; an op between two unrelated layers goes with the one it reads; an op
    of the model's own top-level code (a source line, no module) stays where it is."""
    g = GraphModel()
    for n in (
        _node("add", "add", "h.0", {"module": "h.0"}),
        _node("var", "var", ty="?"),
        _node("eps", "add", "h.0.ln_1", {"module": "h.0.ln_1"}),
        _node("neg", "neg"),
        _node("fc2", "linear", "fc2", {"module": "fc2"}),
        _node("top", "mean", "", {"file": "model.py:3"}),
    ):
        g.nodes[n.id] = n
    for s, d in (("add", "var"), ("var", "eps"), ("eps", "neg"), ("neg", "fc2"), ("fc2", "top")):
        g.edges.append(GraphEdge(s, d, 0, "f32[4]"))
    assert place_added(g) == 2
    assert g.nodes["var"].group == "h.0.ln_1" and g.nodes["var"].provenance["from"] == "eps"
    assert g.nodes["neg"].group == "h.0.ln_1"  # reads ln_1's add, read by the unrelated fc2
    assert g.nodes["top"].group == ""
    # with the step before: the node its reader read there is the one it replaces, and gives
    # it its type when its own is unknown
    before = GraphModel()
    for n in (
        _node("add", "add", "h.0", {"module": "h.0"}),
        _node("var_mean", "var_mean", "h.0.ln_1.inner", {"module": "h.0.ln_1.inner"}, "f32[1]"),
        _node("eps", "add", "h.0.ln_1", {"module": "h.0.ln_1"}),
    ):
        before.nodes[n.id] = n
    before.edges += [GraphEdge("add", "var_mean", 0, ""), GraphEdge("var_mean", "eps", 0, "")]
    g.nodes["var"] = _node("var", "var", ty="?")
    place_added(g, lambda: before)
    assert g.nodes["var"].group == "h.0.ln_1.inner" and g.nodes["var"].type == "f32[1]"
