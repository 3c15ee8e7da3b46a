"""The overview's data in the graph payload (widgets/graph_data.py, widgets/graph_groups.py):
every group of the module tree carries its live-node count, parameter bytes, and where its
findings and changes are, so that the overview and the zoomed-out blocks can show them and
go there. Computed in Python and checked against the payload's own nodes."""

import pytest

import explorer
from compiler import models
from tests.widgets.test_scale_models import sm
from widgets.graph_data import graph_payload
from widgets.graph_groups import group_marks


@pytest.fixture(scope="module")
def bloat():
    """The fold-constant step of a small ConvNeXt through the linear-broadcast replica, with
    a check: findings (copies of weights) inside the blocks' module groups."""
    model = models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)
    trace = explorer.explore(model, pipeline="replica-linear-broadcast,fold-constant")
    step = trace["fold-constant"]
    return graph_payload(step, step.previous, trace.check())


def _chain(p, i):
    """The groups holding node ``i``, innermost first, the root last."""
    out, g = [], p["nodes"][i]["g"]
    while g >= 0:
        out.append(g)
        g = p["groups"][g]["p"]
    return out


def _inside(p, g):
    """The nodes inside group ``g`` (at any depth), in graph order."""
    return [i for i in range(len(p["nodes"])) if g in _chain(p, i)]


def _is_finding(n):
    return bool(n.get("bad") or n.get("mark"))


def test_every_group_counts_its_findings_and_links_the_first(bloat):
    p = bloat
    nodes, groups = p["nodes"], p["groups"]
    findings = [i for i, n in enumerate(nodes) if _is_finding(n)]
    assert len(findings) >= 2
    assert groups[0]["f"] == len(findings)
    # the root links the first finding in graph order; the view opens on the one the header
    # names first (the copy that grew most), a finding too
    assert groups[0]["fi"] == ([i for i in p["changes"] if i in findings] or findings)[0]
    assert p["focus"] in findings
    with_findings = 0
    for g, grp in enumerate(groups):
        inside = [i for i in findings if g in _chain(p, i)]
        assert grp.get("f", 0) == len(inside), grp["id"]
        if not inside:
            assert "fi" not in grp and "fm" not in grp, grp["id"]
            continue
        with_findings += 1
        # the first finding inside in graph order (findings are ordered like the changes)
        order = [i for i in p["changes"] if i in inside] or inside
        assert grp["fi"] == order[0], grp["id"]
        assert grp["fm"] == next(nodes[i]["mark"] for i in order if nodes[i].get("mark"))
    assert with_findings > 1  # the blocks' groups, not only the root
    assert any(grp.get("fm", "").startswith("×8 copies of") for grp in groups[1:])


def test_every_group_links_its_first_change(bloat):
    p = bloat
    changes = p["changes"]
    assert changes
    for g, grp in enumerate(p["groups"]):
        mine = [i for i in changes if g in _chain(p, i)]
        if mine:
            assert grp["ci"] == mine[0], grp["id"]
            assert grp.get("ch"), grp["id"]  # the change counts agree
        else:
            assert "ci" not in grp, grp["id"]


def test_counts_and_bytes_add_up_the_tree():
    """The overview's numbers: a group's live-node count is the sum over the nodes directly
    in it and its child groups; the root's is every live node drawn as a box; parameter
    bytes of a module include its submodules'."""
    trace = sm.decoder(layers=3)
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    nodes, groups = p["nodes"], p["groups"]
    live = [i for i, n in enumerate(nodes) if n.get("st") != "removed" and "inl" not in n]
    assert groups[0]["n"] == len(live)
    direct = [0] * len(groups)
    for i in live:
        direct[nodes[i]["g"]] += 1
    total = direct[:]
    for g in range(len(groups) - 1, 0, -1):  # children come after their parents
        total[groups[g]["p"]] += total[g]
    assert [grp["n"] for grp in groups] == total
    for g, grp in enumerate(groups[1:], 1):
        kids = [c for c in groups if c["p"] == g and c["k"] == "module"]
        assert grp.get("b", 0) >= sum(c.get("b", 0) for c in kids), grp["id"]
    layer = next(grp for grp in groups if grp["id"] == "model.layers.0")  # folds layer 1
    assert layer["b"] > 0 and "ci" not in layer and "f" not in layer
    # the change is in the layer the model folds, and only there
    focus_group = trace.scale_focus.group
    changed = [grp["id"] for grp in groups if "ci" in grp and grp["k"] == "module"]
    assert changed and all(focus_group.startswith(gid) for gid in changed)


def test_a_chain_marks_the_segment_that_holds_the_change():
    trace = sm.flat_chain(2000)
    step = trace["fold-constant"]
    p = graph_payload(step, step.previous)
    groups = p["groups"]
    segments = [g for g, grp in enumerate(groups) if grp["k"] == "segment"]
    marked = [g for g in segments if "ci" in groups[g]]
    assert marked and len(marked) < len(segments)
    for g in marked:
        assert g in _chain(p, groups[g]["ci"])
        assert p["nodes"][groups[g]["ci"]].get("st")


def test_group_marks_on_a_hand_made_tree():
    """Two modules under the root, the second with a submodule: findings and changes are
    counted up the tree, the first (in the order given) linked."""
    groups = [
        {"id": "", "p": -1},
        {"id": "a", "p": 0},
        {"id": "b", "p": 0},
        {"id": "b.c", "p": 2},
    ]
    of = [1, 3, 3, 2, 0]
    group_marks(groups, of, findings=[2, 1], marks={1: "×2 copies"}, changes=[3, 1, 2])
    assert [g.get("f", 0) for g in groups] == [2, 0, 2, 2]
    assert [g.get("fi") for g in groups] == [2, None, 2, 2]
    assert [g.get("fm") for g in groups] == ["×2 copies", None, "×2 copies", "×2 copies"]
    assert [g.get("ci") for g in groups] == [3, None, 3, 1]
