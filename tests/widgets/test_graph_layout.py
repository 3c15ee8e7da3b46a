"""The layered layout engine of the graph viewer (widgets/static/graph_layout*.js, joined by
widgets.graph_view.layout_js), run under node: every case is laid out in one node process (the
`layouts` fixture), then checked here.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from itertools import combinations
from pathlib import Path

import pytest

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the layout is JS")


@pytest.fixture(scope="module")
def layout_file(tmp_path_factory) -> Path:
    """The engine's scripts joined, as the pages inline them."""
    from widgets.graph_view import layout_js

    path = tmp_path_factory.mktemp("layout") / "layout.js"
    path.write_text(layout_js())
    return path


# Lays out every case of the JSON list on stdin ({name, graph, repeat}) and prints
# {name: result}; a case with repeat > 1 is laid out again and must come out the same.
RUNNER = r"""
const fs = require("fs");
const Layout = new Function(fs.readFileSync(process.argv[1], "utf8") + "\nreturn PasslensLayout;")();
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const out = {};
for (const c of cases) {
  try {
    const t0 = process.hrtime.bigint();
    const res = Layout.layout(c.graph);
    res.ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (c.repeat) {
      const first = JSON.stringify(Object.assign({}, res, { ms: 0 }));
      res.same = [];
      for (let i = 1; i < c.repeat; i++) {
        const again = Object.assign({}, Layout.layout(JSON.parse(JSON.stringify(c.graph))), { ms: 0 });
        res.same.push(JSON.stringify(again) === first);
      }
    }
    out[c.name] = res;
  } catch (e) {
    out[c.name] = { error: e.name + ": " + e.message };
  }
}
process.stdout.write(JSON.stringify(out));
"""


def run_layouts(cases: list[dict], layout_file: Path) -> dict:
    proc = subprocess.run(
        [NODE, "-e", RUNNER, str(layout_file)],
        input=json.dumps(cases), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# ---- graphs ------------------------------------------------------------------------------


def boxes(count: int, seed: int = 0, w=(40, 140), h=(20, 44)) -> list[dict]:
    rng = random.Random(seed)
    return [{"w": rng.randint(*w), "h": rng.randint(*h)} for _ in range(count)]


def chain(count: int) -> dict:
    return {"nodes": boxes(count, 1), "edges": [[i, i + 1] for i in range(count - 1)]}


def binary_tree(depth: int, seed: int) -> dict:
    """A complete binary tree, node indices shuffled and the edges listed in random order."""
    rng = random.Random(seed)
    count = 2 ** (depth + 1) - 1
    label = list(range(count))
    rng.shuffle(label)
    edges = [[label[(i - 1) // 2], label[i]] for i in range(1, count)]
    rng.shuffle(edges)
    return {"nodes": [{"w": 40, "h": 24}] * count, "edges": edges}


def ladder() -> dict:
    """Two parallel chains a and b with rungs a[i] -> b[i + 1], fed by inputs given in the
    crossed order (b's input first) and a weight per chain pulled down next to its node."""
    nodes = [{"w": 60, "h": 24} for _ in range(16)]
    # 0: input of b, 1: input of a, 2..7: a0..a5, 8..13: b0..b5, 14: weight of a4, 15: of b3
    a = list(range(2, 8))
    b = list(range(8, 14))
    edges = [[0, b[0]], [1, a[0]]]
    edges += [[a[i], a[i + 1]] for i in range(5)] + [[b[i], b[i + 1]] for i in range(5)]
    edges += [[a[i], b[i + 1]] for i in (0, 2, 4)]
    edges += [[14, a[4]], [15, b[3]]]
    return {"nodes": nodes, "edges": edges}


def layered_dag(n_layers: int, width: int, extra: int, seed: int) -> tuple[dict, list[list[int]]]:
    """Random DAG with edges between adjacent layers only; every node below the top has a
    parent and every node above the bottom a child, so its layers are the layout's ranks.
    Node indices are shuffled: the input order is a random order within each layer."""
    rng = random.Random(seed)
    count = n_layers * width
    label = list(range(count))
    rng.shuffle(label)
    layers = [[label[li * width + j] for j in range(width)] for li in range(n_layers)]
    edges = set()
    for li in range(1, n_layers):
        for v in layers[li]:
            edges.add((rng.choice(layers[li - 1]), v))
        for u in layers[li - 1]:
            edges.add((u, rng.choice(layers[li])))
    while len(edges) < count - width + extra:
        li = rng.randrange(n_layers - 1)
        edges.add((rng.choice(layers[li]), rng.choice(layers[li + 1])))
    edge_list = sorted(edges)
    rng.shuffle(edge_list)
    return {"nodes": boxes(count, seed), "edges": [list(e) for e in edge_list]}, layers


def random_dag(count: int, n_edges: int, seed: int) -> dict:
    """Random DAG in about sqrt(2 count) layers, edges mostly to the next layer; every node
    has an edge."""
    rng = random.Random(seed)
    n_layers = max(2, int((2 * count) ** 0.5))
    layer_of = sorted(rng.randrange(n_layers) for _ in range(count))
    layers: dict[int, list[int]] = {}
    for v, li in enumerate(layer_of):
        layers.setdefault(li, []).append(v)
    order = sorted(layers)
    edges = set()
    for k in range(1, len(order)):
        for v in layers[order[k]]:
            edges.add((rng.choice(layers[order[k - 1]]), v))
    for v in layers[order[0]]:
        edges.add((v, rng.choice(layers[order[1]])))
    while len(edges) < n_edges:
        k = rng.randrange(len(order) - 1)
        k2 = min(len(order) - 1, k + (1 if rng.random() < 0.7 else rng.randint(2, 5)))
        edges.add((rng.choice(layers[order[k]]), rng.choice(layers[order[k2]])))
    perm = list(range(count))
    rng.shuffle(perm)
    edge_list = [[perm[s], perm[t]] for s, t in sorted(edges)]
    rng.shuffle(edge_list)
    return {"nodes": boxes(count, seed), "edges": edge_list}


def transformer_block() -> tuple[dict, list[int]]:
    """Attention and MLP with residual adds; every op has its weights as separate inputs.
    Also returns the residual stream: the input, the two adds and the output."""
    nodes: list[dict] = []
    edges: list[list[int]] = []

    def op(*inputs, weights=0):
        nodes.append({"w": 90, "h": 28})
        v = len(nodes) - 1
        edges.extend([i, v] for i in inputs)
        for _ in range(weights):
            nodes.append({"w": 70, "h": 28})
            edges.append([len(nodes) - 1, v])
        return v

    x = op()
    stream = [x]
    h = op(x, weights=2)
    q, k, v = (op(op(h, weights=2)) for _ in range(3))
    a = op(op(op(q, k), weights=1), v)
    x = op(x, op(a, weights=2))
    stream.append(x)
    x = op(x, op(op(op(x, weights=2)), weights=2))
    stream += [x, op(x)]
    return {"nodes": nodes, "edges": edges}, stream


TRANSFORMER, STREAM = transformer_block()
WIDE = {"w": 100, "h": 30}
CASES: dict[str, dict] = {
    "chain": chain(10),
    "diamond": {"nodes": [WIDE] * 4, "edges": [[0, 1], [0, 2], [1, 3], [2, 3]]},
    "cycle": {"nodes": [WIDE] * 3, "edges": [[0, 1], [1, 2], [2, 0]]},
    "two_cycle": {"nodes": [WIDE] * 3, "edges": [[0, 1], [1, 0], [1, 2]]},
    "long_edge": {"nodes": boxes(5, 2), "edges": [[0, 1], [1, 2], [2, 3], [3, 4], [0, 4]]},
    # components {0, 3, 4}, {1, 2}, {5}: left to right in that order
    "components": {"nodes": boxes(6, 3), "edges": [[0, 3], [3, 4], [2, 1]]},
    "duplicates": {"nodes": [WIDE] * 3, "edges": [[0, 1], [1, 1], [0, 1], [1, 2], [0, 1]]},
    # node 0 is a weight feeding the last node of a chain 1..6
    "weight": {"nodes": boxes(7, 4), "edges": [[i, i + 1] for i in range(1, 6)] + [[0, 6]]},
    # ports of a group: IN (0) feeds 1 -> 2 -> 3 -> 4; OUT (5) takes 2's result, pinned to the
    # bottom; 6 is a weight of 3; 7 asks to be first but has an edge in (from 4): not pinned
    "ports": {
        "nodes": [{"w": 2, "h": 2}, *boxes(4, 5), {"w": 2, "h": 2}, *boxes(2, 6)],
        "edges": [[0, 1], [1, 2], [2, 3], [3, 4], [2, 5], [6, 3], [4, 7]],
        "first": [0, 7],
        "last": [5],
    },
    "tree": binary_tree(5, 7),
    "ladder": ladder(),
    "transformer": TRANSFORMER,
    "margin": dict(chain(3), margin=15, rankSep=30),
    "gaps": dict(random_dag(40, 60, 5), nodeSep=31, edgeSep=17),
    "empty": {"nodes": [], "edges": []},
    "isolated": {"nodes": boxes(3, 6), "edges": []},
    "random60": random_dag(60, 90, 8),
    "random150": random_dag(150, 200, 9),
}
LAYERED = {f"layered{seed}": layered_dag(8, 7, 12, seed) for seed in (11, 12, 13)}
CASES.update({name: graph for name, (graph, _) in LAYERED.items()})
# the iterative x placement used for big graphs, forced on small ones
for _name in ("chain", "diamond", "long_edge", "tree", "ladder", "random150", "gaps"):
    CASES[_name + "_iter"] = dict(CASES[_name], simplexLimit=0)
ACYCLIC = [name for name in CASES if not name.startswith(("cycle", "two_cycle"))]
BIG = random_dag(2000, 3000, 10)


@pytest.fixture(scope="module")
def layouts(layout_file) -> dict:
    cases = [{"name": name, "graph": graph, "repeat": 3} for name, graph in CASES.items()]
    cases.append({"name": "big", "graph": BIG})
    cases.append({"name": "bad_edge", "graph": {"nodes": [WIDE] * 2, "edges": [[0, 5]]}})
    results = run_layouts(cases, layout_file)
    for name, res in results.items():
        if name != "bad_edge":
            assert "error" not in res, (name, res)
    return results


# ---- helpers -----------------------------------------------------------------------------


def rect(graph: dict, res: dict, v: int) -> tuple[float, float, float, float]:
    w, h = graph["nodes"][v]["w"], graph["nodes"][v]["h"]
    return res["x"][v] - w / 2, res["y"][v] - h / 2, res["x"][v] + w / 2, res["y"][v] + h / 2


def crossings(res: dict) -> int:
    """Pairs of edge segments between the same two layers whose ends are in opposite order."""
    by_gap: dict[int, list[tuple[float, float]]] = {}
    for e in res["edges"]:
        rs, rt = res["rank"][e["s"]], res["rank"][e["t"]]
        step = 1 if rt > rs else -1
        pts = e["points"]
        for i in range(len(pts) - 1):
            a, b = pts[i][0], pts[i + 1][0]
            upper = rs + step * i if step > 0 else rs + step * (i + 1)
            by_gap.setdefault(upper, []).append((a, b) if step > 0 else (b, a))
    return sum(
        1
        for segs in by_gap.values()
        for (a0, a1), (b0, b1) in combinations(segs, 2)
        if (a0 - b0) * (a1 - b1) < 0
    )


def distinct_edges(graph: dict) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, t in graph["edges"]:
        if s != t and (s, t) not in out:
            out.append((s, t))
    return out


# ---- tests -------------------------------------------------------------------------------


def test_files_are_plain_scripts_with_one_global(layout_file):
    src = layout_file.read_text()
    assert not re.search(r"^\s*(import|export)\b", src, re.M)
    assert "require(" not in src
    assert "?." not in src.replace("? .", "") and "??" not in src  # ES2019: no ?. or ??
    # run in a fresh context: nothing put on the global object (the parts are `const`s), and
    # the engine's own text (what the Web Worker runs) is a script that lays out alike
    probe = r"""
const vm = require("vm"), fs = require("fs");
const ctx = vm.createContext({});
const before = Object.getOwnPropertyNames(ctx);
vm.runInContext(fs.readFileSync(process.argv[1], "utf8"), ctx);
const added = Object.getOwnPropertyNames(ctx).filter((k) => !before.includes(k));
const other = vm.createContext({});
vm.runInContext(vm.runInContext("PasslensLayout.source()", ctx), other);
const g = "({nodes: [{w: 30, h: 10}, {w: 20, h: 10}, {w: 9, h: 9}], " +
  "edges: [[0, 1], [2, 1], [1, 0]]})";
const same = JSON.stringify(vm.runInContext("PasslensLayout.layout(" + g + ")", ctx)) ===
  JSON.stringify(vm.runInContext("PasslensLayout.layout(" + g + ")", other));
console.log(JSON.stringify({added, type: vm.runInContext("typeof PasslensLayout.layout", ctx),
  keys: vm.runInContext("Object.keys(PasslensLayout)", ctx), same}));
"""
    out = subprocess.run([NODE, "-e", probe, str(layout_file)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "added": [], "type": "function", "keys": ["layout", "layoutBatch", "source"], "same": True
    }
    # prepended to an ES module (strict, module scope)
    module = src + "\nexport default PasslensLayout;\nconsole.log(PasslensLayout.layout(" \
        '{nodes: [{w: 10, h: 10}, {w: 10, h: 10}], edges: [[0, 1]]}).rank.join(","));\n'
    out = subprocess.run([NODE, "--input-type=module", "-e", module], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0,1"


def test_a_batch_sizes_a_node_after_an_earlier_job(layout_file):
    """layoutBatch (what the component sends to the Web Worker): a node given as {job: k, ...}
    is as big as job k's drawing (at least minW x minH) plus the padding."""
    probe = r"""
const fs = require("fs");
const src = fs.readFileSync(process.argv[1], "utf8");
const Layout = new Function(src + "\nreturn PasslensLayout;")();
const inner = { nodes: [{ w: 100, h: 20 }, { w: 40, h: 20 }], edges: [[0, 1]], rankSep: 10 };
const tiny = { nodes: [{ w: 4, h: 4 }], edges: [] };
const outer = { nodes: [{ w: 10, h: 10 }, { job: 0, minW: 60, minH: 30, padW: 32, padH: 40 },
  { job: 1, minW: 60, minH: 30, padW: 2, padH: 4 }], edges: [[0, 1], [1, 2]] };
const [a, b, c] = Layout.layoutBatch([inner, tiny, outer]);
const alone = Layout.layout({ nodes: [{ w: 10, h: 10 }, { w: 132, h: 90 }, { w: 62, h: 34 }],
  edges: [[0, 1], [1, 2]] });
const same = JSON.stringify(c) === JSON.stringify(alone);
console.log(JSON.stringify({ a: [a.width, a.height], b: [b.width, b.height], same }));
"""
    out = subprocess.run([NODE, "-e", probe, str(layout_file)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"a": [100, 50], "b": [4, 4], "same": True}


@pytest.mark.parametrize("name", list(CASES))
def test_boxes_do_not_overlap_and_stay_inside(layouts, name):
    graph, res = CASES[name], layouts[name]
    n = len(graph["nodes"])
    node_sep = graph.get("nodeSep", 24)
    margin = graph.get("margin", 0)
    assert len(res["x"]) == len(res["y"]) == len(res["rank"]) == n
    for v in range(n):
        x0, y0, x1, y1 = rect(graph, res, v)
        assert margin - 1e-6 <= x0 and x1 <= res["width"] - margin + 1e-6, (name, v)
        assert margin - 1e-6 <= y0 and y1 <= res["height"] - margin + 1e-6, (name, v)
    for u, v in combinations(range(n), 2):
        a, b = rect(graph, res, u), rect(graph, res, v)
        # disjoint even when each box is grown by the gap
        apart_x = a[2] + node_sep <= b[0] + 1e-6 or b[2] + node_sep <= a[0] + 1e-6
        apart_y = a[3] <= b[1] or b[3] <= a[1]
        assert apart_x or apart_y, (name, u, v)
    if n:
        # the drawing is as small as its boxes and routes allow
        route_x = [p[0] for e in res["edges"] for p in e["points"]]
        xs0 = min([rect(graph, res, v)[0] for v in range(n)] + route_x)
        xs1 = max([rect(graph, res, v)[2] for v in range(n)] + route_x)
        ys0 = min(rect(graph, res, v)[1] for v in range(n))
        ys1 = max(rect(graph, res, v)[3] for v in range(n))
        assert xs0 == pytest.approx(margin) and ys0 == pytest.approx(margin)
        assert res["width"] == pytest.approx(xs1 + margin)
        assert res["height"] == pytest.approx(ys1 + margin)


@pytest.mark.parametrize("name", list(CASES))
def test_layers_share_a_centre_line_and_respect_gaps(layouts, name):
    graph, res = CASES[name], layouts[name]
    rank_sep = graph.get("rankSep", 40)
    layers: dict[int, list[int]] = {}
    for v, r in enumerate(res["rank"]):
        layers.setdefault(r, []).append(v)
    tops = []
    for r in sorted(layers):
        ys = {res["y"][v] for v in layers[r]}
        assert len(ys) == 1, (name, r)
        tallest = max(graph["nodes"][v]["h"] for v in layers[r])
        tops.append((ys.pop() - tallest / 2, tallest))
    assert sorted(layers) == list(range(len(layers)))
    for (top0, h0), (top1, _) in zip(tops, tops[1:]):
        assert top1 == pytest.approx(top0 + h0 + rank_sep)


@pytest.mark.parametrize("name", ACYCLIC)
def test_edges_point_down_with_one_point_per_layer(layouts, name):
    graph, res = CASES[name], layouts[name]
    reported = [(e["s"], e["t"]) for e in res["edges"]]
    assert reported == distinct_edges(graph)
    for e in res["edges"]:
        s, t, pts = e["s"], e["t"], e["points"]
        assert res["rank"][t] > res["rank"][s] and res["y"][t] > res["y"][s]
        assert len(pts) == res["rank"][t] - res["rank"][s] + 1
        hs, ht = graph["nodes"][s]["h"], graph["nodes"][t]["h"]
        assert pts[0] == pytest.approx([res["x"][s], res["y"][s] + hs / 2])
        assert pts[-1] == pytest.approx([res["x"][t], res["y"][t] - ht / 2])
        assert all(p[1] < q[1] for p, q in zip(pts, pts[1:]))


@pytest.mark.parametrize("name", list(CASES))
def test_route_points_keep_clear_of_boxes_and_each_other(layouts, name):
    graph, res = CASES[name], layouts[name]
    node_sep, edge_sep = graph.get("nodeSep", 24), graph.get("edgeSep", 12)
    bends = [tuple(p) for e in res["edges"] for p in e["points"][1:-1]]
    for px, py in bends:
        for v in range(len(graph["nodes"])):
            x0, y0, x1, y1 = rect(graph, res, v)
            if y0 <= py <= y1:  # same layer: outside the box, with room
                assert px <= x0 - min(node_sep, edge_sep) + 1e-6 or px >= x1 + min(node_sep, edge_sep) - 1e-6
    for (ax, ay), (bx, by) in combinations(set(bends), 2):
        if ay == by:
            assert abs(ax - bx) >= edge_sep - 1e-6


@pytest.mark.parametrize("suffix", ["", "_iter"])
def test_chain_is_one_vertical_line(layouts, suffix):
    res = layouts["chain" + suffix]
    assert res["rank"] == list(range(10))
    assert len(set(res["x"])) == 1
    assert res["width"] == max(b["w"] for b in CASES["chain"]["nodes"])


@pytest.mark.parametrize("suffix", ["", "_iter"])
def test_diamond(layouts, suffix):
    res = layouts["diamond" + suffix]
    x, rank = res["x"], res["rank"]
    assert rank == [0, 1, 1, 2]
    left, right = sorted((x[1], x[2]))
    assert right - left == pytest.approx(100 + 24)  # side by side, one gap apart
    assert x[0] == pytest.approx((left + right) / 2, abs=0.5)  # a over b and c, d under both
    assert x[3] == pytest.approx((left + right) / 2, abs=0.5)


@pytest.mark.parametrize("name", ["cycle", "two_cycle"])
def test_cycles_are_broken_but_edges_keep_their_direction(layouts, name):
    graph, res = CASES[name], layouts[name]
    assert [(e["s"], e["t"]) for e in res["edges"]] == distinct_edges(graph)
    for e in res["edges"]:
        s, t, pts = e["s"], e["t"], e["points"]
        hs, ht = graph["nodes"][s]["h"], graph["nodes"][t]["h"]
        assert res["rank"][s] != res["rank"][t]
        assert len(pts) == abs(res["rank"][t] - res["rank"][s]) + 1
        if res["rank"][t] > res["rank"][s]:  # drawn down: bottom of s to top of t
            assert pts[0] == pytest.approx([res["x"][s], res["y"][s] + hs / 2])
            assert pts[-1] == pytest.approx([res["x"][t], res["y"][t] - ht / 2])
        else:  # reversed: top of s up to the bottom of t
            assert pts[0] == pytest.approx([res["x"][s], res["y"][s] - hs / 2])
            assert pts[-1] == pytest.approx([res["x"][t], res["y"][t] + ht / 2])
    up = [e for e in res["edges"] if res["rank"][e["t"]] < res["rank"][e["s"]]]
    assert len(up) == 1  # one edge reversed: the DFS back edge
    assert (up[0]["s"], up[0]["t"]) == ((2, 0) if name == "cycle" else (1, 0))


@pytest.mark.parametrize("suffix", ["", "_iter"])
def test_long_edge_has_a_point_per_crossed_layer(layouts, suffix):
    res = layouts["long_edge" + suffix]
    assert res["rank"] == [0, 1, 2, 3, 4]
    (long,) = [e for e in res["edges"] if (e["s"], e["t"]) == (0, 4)]
    assert len(long["points"]) == 5  # 3 intermediate points, outside the boxes (see above)
    assert [p[1] for p in long["points"][1:-1]] == [res["y"][v] for v in (1, 2, 3)]
    # the chain in between and the long edge beside it are both straight
    assert len({res["x"][v] for v in (1, 2, 3)}) == 1
    assert len({p[0] for p in long["points"][1:-1]}) == 1


def test_components_side_by_side_in_order_of_lowest_index(layouts):
    graph, res = CASES["components"], layouts["components"]

    def extent(vs):
        rs = [rect(graph, res, v) for v in vs]
        return min(r[0] for r in rs), max(r[2] for r in rs)

    first, second, third = extent([0, 3, 4]), extent([1, 2]), extent([5])
    assert first[1] + 24 <= second[0] + 1e-6 and second[1] + 24 <= third[0] + 1e-6
    assert res["rank"] == [0, 1, 0, 1, 2, 0]  # every component starts at the top


def test_isolated_nodes_in_a_row(layouts):
    graph, res = CASES["isolated"], layouts["isolated"]
    assert res["rank"] == [0, 0, 0] and res["edges"] == []
    rights = [rect(graph, res, v)[2] for v in range(3)]
    lefts = [rect(graph, res, v)[0] for v in range(3)]
    assert lefts[0] == 0 and lefts[1] == rights[0] + 24 and lefts[2] == rights[1] + 24


def test_empty_graph(layouts):
    res = layouts["empty"]
    assert res["x"] == res["y"] == res["rank"] == res["edges"] == []
    assert res["width"] == res["height"] == 0


def test_duplicates_and_self_loops(layouts):
    res = layouts["duplicates"]
    assert [(e["s"], e["t"]) for e in res["edges"]] == [(0, 1), (1, 2)]
    assert res["rank"] == [0, 1, 2]


def test_margin(layouts):
    graph, res = CASES["margin"], layouts["margin"]
    widest = max(b["w"] for b in graph["nodes"])
    assert res["width"] == widest + 30
    assert res["height"] == sum(b["h"] for b in graph["nodes"]) + 2 * 30 + 30
    assert res["x"] == [15 + widest / 2] * 3


def test_ports_first_and_last(layouts):
    res = layouts["ports"]
    assert res["rank"] == [0, 1, 2, 3, 4, 5, 2, 5]  # OUT on the bottom layer, with 7


def test_a_weight_sits_next_to_its_deep_consumer(layouts):
    res = layouts["weight"]
    assert res["rank"][1:] == list(range(6))
    assert res["rank"][0] == 4  # just above node 6 (rank 5), not at the top
    assert len({res["x"][v] for v in range(1, 7)}) == 1  # the chain stays straight


def test_transformer_residual_stream_is_straight(layouts):
    res = layouts["transformer"]
    assert crossings(res) <= 2
    # the input, the adds and the output on one vertical line, as Graphviz dot draws them
    assert len({res["x"][v] for v in STREAM}) == 1


@pytest.mark.parametrize("name", ["tree", "ladder", "tree_iter", "ladder_iter"])
def test_planar_graphs_are_drawn_without_crossings(layouts, name):
    assert crossings(layouts[name]) == 0


@pytest.mark.parametrize("name", list(LAYERED))
def test_fewer_crossings_than_the_input_order(layouts, name):
    graph, layers = LAYERED[name]
    res = layouts[name]
    layer_of = {v: li for li, layer in enumerate(layers) for v in layer}
    assert res["rank"] == [layer_of[v] for v in range(len(graph["nodes"]))]
    by_gap: dict[int, list[tuple[int, int]]] = {}
    for s, t in graph["edges"]:
        by_gap.setdefault(layer_of[s], []).append((s, t))  # input order: the node index
    given = sum(1 for es in by_gap.values() for (a, b), (c, d) in combinations(es, 2)
                if (a - c) * (b - d) < 0)
    got = crossings(res)
    assert got < given * 0.6, (got, given)


@pytest.mark.parametrize("name", list(CASES))
def test_deterministic(layouts, name):
    assert layouts[name]["same"] == [True, True]


def test_bad_edge_is_an_error(layouts):
    assert layouts["bad_edge"]["error"].startswith("RangeError: PasslensLayout: edge 0")


@pytest.mark.parametrize(
    "name, ratio",
    [("transformer", 1.3), ("random60", 2), ("random150", 2.5), ("random150_iter", 2.5)],
)
def test_drawings_are_compact(layouts, name, ratio):
    """No huge gaps: the drawing is not much wider than its widest layer packed (random
    graphs spread more: their descendants wander from side to side)."""
    graph, res = CASES[name], layouts[name]
    packed: dict[int, float] = {}
    for v, r in enumerate(res["rank"]):
        packed[r] = packed.get(r, -24) + graph["nodes"][v]["w"] + 24
    for e in res["edges"]:
        for i in range(1, len(e["points"]) - 1):
            packed[min(res["rank"][e["s"]], res["rank"][e["t"]]) + i] += 12 + 6
    assert res["width"] <= ratio * max(packed.values())


def test_big_random_dag(layouts):
    res = layouts["big"]
    assert len(res["x"]) == 2000 and len(res["edges"]) == 3000
    for e in res["edges"]:
        assert res["rank"][e["t"]] > res["rank"][e["s"]]
    print(f"\n2,000 nodes / 3,000 edges: {res['ms']:.0f} ms (first call in the process), "
          f"{crossings(res)} crossings, {res['width']:.0f} x {res['height']:.0f} px")
    print(f"150 nodes / 200 edges: {layouts['random150']['ms']:.1f} ms")


def test_the_bench_lays_out_with_the_same_scripts():
    """bench/layout_speed.py names the engine's scripts itself (it does not import the widgets):
    the same list, in the same order, as the pages inline."""
    from bench.layout_speed import LAYOUT_JS as BENCH
    from widgets.graph_view import LAYOUT_JS

    assert BENCH == LAYOUT_JS
