"""Indices of tied values (explorer/check/ties.py): torch's default sort / topk order ties
arbitrarily beyond 16 elements, passlens's topk is stable, so both index sets are correct;
the check judges them by the values they select, says so in a note, and still catches
indices that select other values."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import explorer
from compiler.ir import Call, Constant, TupleGetItem
from compiler.ir.provenance import Provenance
from compiler.passes import Pass, register_pass
from compiler.passes.infra.rewrite import rewrite_module

torch = pytest.importorskip("torch")


class _Orders(torch.nn.Module):
    def forward(self, x):
        v, i = torch.sort(x, dim=-1)
        j = torch.argsort(x, dim=-1, descending=True)
        tv, ti = torch.topk(x, 20, dim=-1)
        return v, i, j, tv, ti


class _Argsort(torch.nn.Module):
    def forward(self, x):
        return torch.argsort(x, dim=-1)


class _Argmax(torch.nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=-1), torch.max(x, dim=-1)[1], torch.argmin(x)


def _tied_input():
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 4, (3, 64), generator=g).float()  # many ties along 64 elements


@register_pass
@dataclass(frozen=True)
class _WrongOrder(Pass):
    """A wrong pass: topk orders ``|x - 1.5|`` instead of ``x`` (other indices, same op), or
    (``zero``) ``x * 0``, where every value ties: any order selects equal values of that
    input, so only its comparison with the reference's input shows it wrong."""

    name: ClassVar[str] = "test-ties-wrong-order"
    zero: bool = False

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "topk":
                x = node.args[0]
                if self.zero:
                    moved = Call("multiply", [x, Constant(np.float32(0))])
                else:
                    moved = Call("abs", [Call("subtract", [x, Constant(np.float32(1.5))])])
                return Call("topk", [moved], dict(node.attrs))
            return None

        return rewrite_module(module, lambda name, fn: rule)


def _not_ok(report):
    return [(s.step.name, s.status) for s in report.steps if s.status not in ("ok", "reference")]


def test_sort_ties_are_not_a_divergence_and_a_note_says_so():
    x = _tied_input()
    model = _Orders()
    with torch.no_grad():
        _, i, j, _, ti = model(x)
    report = explorer.explore(model, (x,)).check((x,))
    ours = np.argsort(x.numpy(), axis=-1, kind="stable")
    # the premise: torch's indices are not the stable order, ours are
    assert not np.array_equal(i.numpy(), ours)
    assert report.findings == []
    assert _not_ok(report) == []
    notes = [n for n in report.notes if "indices of tied values differ" in n]
    assert [n.split(" at ")[1].split(":")[0] for n in notes] == ["sort", "argsort", "topk"]
    assert all("both orders are correct" in n for n in notes)
    del j, ti


@pytest.mark.parametrize("zero", [False, True])
def test_wrong_indices_are_still_caught(zero):
    x = _tied_input()
    trace = explorer.explore(_Argsort(), (x,), pipeline=[_WrongOrder(zero=zero)])
    report = trace.check((x,))
    assert [f.kind for f in report.findings] == ["diverged"]
    assert report.findings[0].step.name == "test-ties-wrong-order"
    statuses = {s.step.name: s.status for s in report.steps}
    assert statuses["from_torch"] == "ok"
    assert statuses["test-ties-wrong-order"] == "diverged"


def test_values_routed_by_tied_indices_are_computed_with_torchs_order():
    """Values that depend on which tied index comes first (positions, an MoE's experts chosen
    from tied scores) are computed again with torch's order: no false divergence."""

    class Positions(torch.nn.Module):
        def forward(self, x):
            return torch.argsort(x, dim=-1).float() * 0.5

    class Gathered(torch.nn.Module):
        def forward(self, x):
            return torch.gather(x * 2 + 1, -1, torch.argsort(x, dim=-1))

    class Route(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.experts = torch.nn.Parameter(torch.randn(32, 8))

        def forward(self, scores):
            w, idx = torch.topk(scores, 20, dim=-1)
            return (self.experts[idx] * w[..., None]).sum(1)

    x = _tied_input()
    torch.manual_seed(0)
    scores = torch.randint(0, 3, (6, 32)).float()
    for model, inp in ((Positions(), x), (Gathered(), x), (Route(), scores)):
        report = explorer.explore(model, (inp,)).check((inp,))
        assert report.findings == []
        assert _not_ok(report) == []
        assert any("values after it computed with torch eager's order" in n for n in report.notes)


def test_wrong_indices_read_downstream_are_caught():
    class Positions(torch.nn.Module):
        def forward(self, x):
            return torch.argsort(x, dim=-1).float() * 0.5

    x = _tied_input()
    trace = explorer.explore(Positions(), (x,), pipeline=[_WrongOrder()])
    (finding,) = trace.check((x,)).findings
    assert finding.step.name == "test-ties-wrong-order"
    assert finding.details["tied_indices"] == []


def test_argmax_ties():
    x = _tied_input()
    report = explorer.explore(_Argmax(), (x,)).check((x,))
    assert report.findings == []
    assert _not_ok(report) == []


def test_onnx_topk_ties_agree_with_onnxruntime():
    """onnxruntime's TopK puts the lower index first on ties, as the ONNX spec says and as
    passlens's topk does: no note, no finding, largest or smallest."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    x = _tied_input().numpy()
    for largest in (1, 0):
        node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=largest)
        graph = helper.make_graph(
            [node],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 64])],
            [
                helper.make_tensor_value_info("v", TensorProto.FLOAT, [3, 40]),
                helper.make_tensor_value_info("i", TensorProto.INT64, [3, 40]),
            ],
            initializer=[helper.make_tensor("k", TensorProto.INT64, [1], [40])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        _, idx = session.run(None, {"x": x})
        stable = np.argsort(-x if largest else x, axis=-1, kind="stable")[:, :40]
        assert np.array_equal(idx, stable)
        report = explorer.explore(model, (x,)).check((x,))
        assert report.findings == []
        assert _not_ok(report) == []
        assert not [n for n in report.notes if "tied values" in n]
    del onnx


@register_pass
@dataclass(frozen=True)
class _Unmatched(Pass):
    """A correct pass that rebuilds each topk index output with a provenance naming no FX
    node: the run cannot be computed again with torch's order of ties (no reference value to
    put in its place), so the tie is judged at the outputs, by the values they select."""

    name: ClassVar[str] = "test-ties-unmatched"

    def transform(self, module, ctx):
        prov = Provenance(pass_name=self.name)

        def rule(node):
            t = node.tuple_value if isinstance(node, TupleGetItem) else None
            if isinstance(t, Call) and t.op == "topk" and node.prov.source_node is not None:
                top = Call("topk", list(t.args), dict(t.attrs)).replace(prov=prov)
                return TupleGetItem(top, node.index).replace(prov=prov)
            return None

        return rewrite_module(module, lambda name, fn: rule)


@register_pass
@dataclass(frozen=True)
class _Same(Pass):
    """Changes nothing: its step shows the module of the step before."""

    name: ClassVar[str] = "test-ties-same"

    def transform(self, module, ctx):
        return module


def test_a_step_showing_an_earlier_steps_module_is_judged_with_its_ties():
    """A step whose module an earlier step ran reuses that run: its verdict is the earlier
    step's, tied indices judged by what they select, not a divergence."""
    x = _tied_input()
    trace = explorer.explore(_Argsort(), (x,), pipeline=[_Unmatched(), _Same()])
    same = trace["test-ties-same"]
    assert same.module is trace["test-ties-unmatched"].module
    report = trace.check((x,))
    assert any("output 0 (%argsort)" in n and "judged by the values" in n for n in report.notes)
    assert report.findings == []
    assert _not_ok(report) == []
    checks = {c.step.name: c for c in report.steps}
    assert checks["test-ties-same"].same_as == trace["test-ties-unmatched"].index
    assert checks["test-ties-same"].status == checks["test-ties-unmatched"].status == "ok"


def test_the_order_selecting_fx_nodes_are_found_once_per_graph():
    """The reference run records the inputs of sort / topk / argmax nodes (references.
    order_nodes): those nodes are found once per graph, again when the graph changes."""
    from explorer.check.references import order_nodes

    ep = torch.export.export(_Orders(), (_tied_input(),))
    graph = ep.graph_module.graph
    found = order_nodes(graph)
    targets = sorted(str(n.target) for n in found)
    assert len(found) == 3 and all(("sort" in t or "topk" in t) for t in targets), targets
    assert all(n.op == "call_function" for n in found)
    assert order_nodes(graph) is found  # kept, not found again
    plain = torch.export.export(torch.nn.ReLU(), (_tied_input(),))
    assert order_nodes(plain.graph_module.graph) == frozenset()
    x = next(n for n in graph.nodes if n.op == "placeholder")
    with graph.inserting_after(x):
        extra = graph.call_function(torch.ops.aten.argmax.default, (x,))
    assert order_nodes(graph) == found | {extra}  # the graph changed: found again
    graph.erase_node(extra)
