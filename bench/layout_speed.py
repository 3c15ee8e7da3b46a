"""How fast the JavaScript layered layout (widgets/static/graph_layout*.js) runs under node, on
seeded random layered DAGs (node indices shuffled, so input order says nothing about layers)
and on a chain:

    .venv/bin/python bench/layout_speed.py [--processes 5] [--runs 10]

For each graph, in several fresh node processes: the first call (cold: the code is not
compiled yet), the second, and the steady state (after a second of calls); plus the layout's
size and edge crossings. The machine's load average is printed: other work slows every figure.
Goals: 150 nodes / 200 edges < 20 ms, 2,000 nodes / 3,000 edges < 500 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "widgets" / "static"
# the engine's scripts in the order the pages inline them (widgets.graph_view.LAYOUT_JS, read
# here without importing the widgets)
LAYOUT_JS = (
    "graph_layout_simplex.js",
    "graph_layout_order.js",
    "graph_layout_x.js",
    "graph_layout.js",
)
LAYOUT_FILES = ",".join(str(STATIC / f) for f in LAYOUT_JS)


def random_layered_dag(n_nodes: int, n_edges: int, seed: int) -> dict:
    """n_nodes boxes in about sqrt(2 n) layers: each node below layer 0 has a parent in the
    layer above, each node of layer 0 a child, the other edges mostly join adjacent layers,
    some skip 1 to 4 layers."""
    rng = random.Random(seed)
    n_layers = max(2, int((2 * n_nodes) ** 0.5))
    layer_of = sorted(rng.randrange(n_layers) for _ in range(n_nodes))
    layers: list[list[int]] = [[] for _ in range(n_layers)]
    for v, layer in enumerate(layer_of):
        layers[layer].append(v)
    layers = [layer for layer in layers if layer]
    edges = set()
    for li in range(1, len(layers)):
        for v in layers[li]:
            edges.add((rng.choice(layers[li - 1]), v))
    for v in layers[0]:  # no isolated nodes
        edges.add((v, rng.choice(layers[1])))
    while len(edges) < n_edges:
        li = rng.randrange(len(layers) - 1)
        span = 1 if rng.random() < 0.7 else rng.randint(2, 5)
        lj = min(len(layers) - 1, li + span)
        edges.add((rng.choice(layers[li]), rng.choice(layers[lj])))
    perm = list(range(n_nodes))
    rng.shuffle(perm)
    nodes = [None] * n_nodes
    for v in range(n_nodes):
        nodes[perm[v]] = {"w": rng.randint(40, 160), "h": rng.choice([24, 32, 40])}
    edge_list = [[perm[s], perm[t]] for s, t in sorted(edges)]
    rng.shuffle(edge_list)
    return {"nodes": nodes, "edges": edge_list}


def transformer(blocks: int) -> dict:
    """A transformer's IR at op level: attention and MLP blocks with residual adds, every
    weight and bias a box of its own (the kind of graph the viewer shows)."""
    nodes: list[dict] = []
    edges: list[list[int]] = []

    def op(name: str, *inputs: int, weights: int = 0) -> int:
        nodes.append({"w": 16 + 8 * len(name), "h": 44})
        v = len(nodes) - 1
        edges.extend([i, v] for i in inputs)
        for _ in range(weights):
            nodes.append({"w": 120, "h": 30})
            edges.append([len(nodes) - 1, v])
        return v

    x = op("input")
    for _ in range(blocks):
        h = op("layer_norm", x, weights=2)
        q, k, v = (op("permute", op("reshape", op("linear", h, weights=2))) for _ in range(3))
        s = op("softmax", op("divide", op("matmul", q, op("transpose", k)), weights=1))
        a = op("linear", op("reshape", op("permute", op("matmul", s, v))), weights=2)
        x = op("add", x, a)
        h = op("gelu", op("linear", op("layer_norm", x, weights=2), weights=2))
        x = op("add", x, op("linear", h, weights=2))
    op("output", x)
    return {"nodes": nodes, "edges": edges}


def chain(n_nodes: int) -> dict:
    return {
        "nodes": [{"w": 60 + (i % 5) * 20, "h": 30} for i in range(n_nodes)],
        "edges": [[i, i + 1] for i in range(n_nodes - 1)],
    }


RUNNER = r"""
const fs = require("fs");
const src = process.argv[1].split(",").map((f) => fs.readFileSync(f, "utf8")).join("\n");
const Layout = new Function(src + "\nreturn PasslensLayout;")();
const graph = JSON.parse(fs.readFileSync(0, "utf8"));
const runs = Number(process.argv[2]);
function crossings(res) {
  // segments between consecutive layers, as [x above, x below], grouped by the upper layer
  const groups = new Map();
  for (const e of res.edges) {
    const step = res.rank[e.t] > res.rank[e.s] ? 1 : -1;
    for (let i = 0; i + 1 < e.points.length; i++) {
      const r = res.rank[e.s] + step * i;
      const a = e.points[i][0], b = e.points[i + 1][0];
      const key = step > 0 ? r : r - 1;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(step > 0 ? [a, b] : [b, a]);
    }
  }
  let count = 0;
  for (const segs of groups.values())
    for (let i = 0; i < segs.length; i++)
      for (let j = i + 1; j < segs.length; j++)
        if ((segs[i][0] - segs[j][0]) * (segs[i][1] - segs[j][1]) < 0) count++;
  return count;
}
// warm-up: as many calls as fit in about a second (at least `runs`), then `runs` timed calls
const times = [];
let res = null;
const start = Date.now();
while (times.length < 1 + runs || (Date.now() - start < 1000 && times.length < 200)) {
  const t0 = process.hrtime.bigint();
  res = Layout.layout(graph);
  times.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
const warmups = times.length;
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  Layout.layout(graph);
  times.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
const steady = times.slice(warmups).sort((a, b) => a - b);
let dummies = 0;
for (const e of res.edges) dummies += e.points.length - 2;
console.log(JSON.stringify({ first: times[0], second: times[1], steady: steady[steady.length >> 1],
  width: res.width, height: res.height, layers: Math.max(-1, ...res.rank) + 1, dummies,
  crossings: crossings(res) }));
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=5, help="fresh node processes per graph")
    parser.add_argument("--runs", type=int, default=10, help="timed calls once warm")
    parser.add_argument("--node-option", action="append", default=[],
                        help="passed to node, e.g. --node-option=--maglev")
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        print("node is not installed")
        return 1
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    flags = " ".join(args.node_option)
    print(f"node {version} {flags}".rstrip() + f", {platform.machine()}, {os.cpu_count()} CPUs, load {load:.2f}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    print(f"first: the first call in a fresh node process (code not yet compiled); second: the "
          f"call after; steady: median of {args.runs} calls after a second of calls (JIT warm). "
          f"Each: best / median of {args.processes} processes, in ms.")
    cases = [
        ("random 150 nodes / 200 edges", random_layered_dag(150, 200, 1)),
        ("random 500 nodes / 800 edges", random_layered_dag(500, 800, 2)),
        ("random 2000 nodes / 3000 edges", random_layered_dag(2000, 3000, 3)),
        ("chain of 200 nodes", chain(200)),
        ("transformer, 4 blocks: 166 / 181", transformer(4)),
    ]
    print(f"{'graph':34} {'first':>13} {'second':>13} {'steady':>13} {'layers':>6} "
          f"{'dummies':>7} {'crossings':>9} {'size px':>12}")
    for name, graph in cases:
        results = []
        for _ in range(args.processes):
            proc = subprocess.run(
                [node, *args.node_option, "-e", RUNNER, LAYOUT_FILES, str(args.runs)],
                input=json.dumps(graph), capture_output=True, text=True, check=True,
            )
            results.append(json.loads(proc.stdout))

        def cell(key: str) -> str:
            values = sorted(r[key] for r in results)
            return f"{values[0]:.1f} / {statistics.median(values):.1f}"

        r = results[0]
        size = f"{r['width']:.0f}x{r['height']:.0f}"
        print(f"{name:34} {cell('first'):>13} {cell('second'):>13} {cell('steady'):>13} "
              f"{r['layers']:6d} {r['dummies']:7d} {r['crossings']:9d} {size:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
