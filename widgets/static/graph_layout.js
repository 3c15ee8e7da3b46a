/* passlens graph layout: a layered (Sugiyama-style) layout of a directed graph, top to bottom,
 * for the graph viewer (one level of a hierarchical graph at a time).
 *
 *   PasslensLayout.layout({nodes: [{w, h}, ...], edges: [[s, t], ...],
 *                          rankSep: 40, nodeSep: 24, edgeSep: 12, margin: 0})
 *   -> {x, y, width, height, rank, edges: [{s, t, points: [[x, y], ...]}, ...]}
 *
 * x/y are box centres, with the top-left corner of the drawing at (0, 0). A node's id is its
 * index. Edges: one per distinct input edge (duplicates merged, self loops dropped), in input
 * order, each routed from the bottom of s to the top of t (from the top of s to the bottom of
 * t for an edge reversed to break a cycle), through one point per layer in between. An edge
 * naming a missing node throws a RangeError. More options: first / last, lists of node ids
 * kept on the top / bottom layer when they have no edge in / out (a group's ports, where edges
 * from outside enter and leave it); simplexLimit (default 3000), the largest auxiliary graph
 * whose x coordinates are solved exactly (phase 5).
 *
 * The phases:
 *  1. cycles broken by reversing the back edges of a depth-first search from the nodes in
 *     index order, following edges in input order;
 *  2. layers: longest path from the sources, then every node with at least as many outgoing as
 *     incoming edges is pulled down to just above its highest child (children first), so a
 *     weight feeding a deep node sits next to it. Each connected component starts at layer 0;
 *  3. a dummy node per layer crossed by a longer edge (its route point);
 *  4. order within the layers, per connected component: depth-first order (from the top and
 *     from the bottom), then sweeps of weighted-median ordering with transpositions of adjacent
 *     nodes; the ordering with the fewest crossings wins; ties keep the current order, so the
 *     input order in the end: deterministic;
 *  5. x, per component: vertices linked one to one (chains, long edges) form segments that
 *     keep one x (so chains are exactly vertical); the segments minimise the sum of weighted
 *     horizontal edge lengths under the separation constraints (nodeSep between boxes, edgeSep
 *     between route points), as Graphviz dot does: network simplex on an auxiliary graph, or
 *     for big graphs (auxiliary graph over simplexLimit nodes) an iterative least-squares
 *     approximation. Leaves (weights, constants) weigh little, long edges much, so the data
 *     flow runs straight and weights hang beside their consumer. Components side by side, in
 *     order of their lowest node index;
 *  6. y: each layer as tall as its tallest box, nodes centred on the layer's line;
 *  7. routes: each edge from the bottom of s to the top of t through its dummies' points.
 *
 * The engine is a few parts, each a factory installing its functions on one namespace `L`:
 * this file (options, phases 1-3, 6, 7 and `layout`, which runs them in turn),
 * graph_layout_order.js (phase 4), graph_layout_x.js (phase 5) and graph_layout_simplex.js
 * (network simplex, for phase 5). Phases pass the layered graph `g` (layered(): vertices,
 * neighbour lists, ranks, widths and scratch arrays). Every part is self-contained (no outer
 * names but the built-ins), so PasslensLayout.source() can give the engine's text to a Web
 * Worker (static/graph/worker.js) without another copy in the page.
 *
 * Plain scripts (no imports, no DOM, ES2019) declaring PasslensLayout and the parts' factories
 * (const passlensLayout*: global bindings, nothing put on the global object): inlined into pages and prepended to ES modules, in the order of
 * widgets/graph_view.py's LAYOUT_JS (this file last). Our own code, after the published algorithms: Gansner,
 * Koutsofios, North and Vo, "A technique for drawing directed graphs" (1993); Barth, Jünger
 * and Mutzel, "Simple and efficient bilayer cross counting" (2002); Brandes and Köpf, "Fast and
 * simple horizontal coordinate assignment" (2001) for the conflicts between segments.
 */
const passlensLayoutMain = function (L) {
  "use strict";

  function option(value, fallback) {
    return typeof value === "number" && isFinite(value) && value >= 0 ? value : fallback;
  }

  function size(value) {
    return typeof value === "number" && isFinite(value) && value > 0 ? value : 0;
  }


  // ---- 1. distinct edges, cycle breaking ------------------------------------------------
  // the distinct edges (es[j] -> et[j]) in input order, without self loops
  function distinctEdges(edgesIn, n) {
    const es = [];
    const et = [];
    const seen = new Map();
    for (let i = 0; i < edgesIn.length; i++) {
      const e = edgesIn[i];
      const s = Array.isArray(e) ? e[0] : e && e.s;
      const t = Array.isArray(e) ? e[1] : e && e.t;
      if (!Number.isInteger(s) || !Number.isInteger(t) || s < 0 || t < 0 || s >= n || t >= n) {
        throw new RangeError("PasslensLayout: edge " + i + " (" + s + " -> " + t +
          ") does not join two of the " + n + " nodes");
      }
      if (s === t) continue;
      const key = s * n + t;
      if (seen.has(key)) continue;
      seen.set(key, es.length);
      es.push(s);
      et.push(t);
    }
    return { es, et };
  }

  // out-edges of each node (edge ids, input order), compressed rows; the back edges of a
  // depth-first search from the nodes in index order marked reversed
  function breakCycles(n, es, et) {
    const m = es.length;
    const outStart = new Int32Array(n + 1);
    for (let j = 0; j < m; j++) outStart[es[j] + 1]++;
    for (let v = 0; v < n; v++) outStart[v + 1] += outStart[v];
    const outEdge = new Int32Array(m);
    {
      const fill = outStart.slice(0, n);
      for (let j = 0; j < m; j++) outEdge[fill[es[j]]++] = j;
    }
    const reversed = new Uint8Array(m);
    {
      const state = new Uint8Array(n); // 0 unseen, 1 on the stack, 2 done
      const stackV = new Int32Array(n);
      const stackI = new Int32Array(n);
      for (let root = 0; root < n; root++) {
        if (state[root]) continue;
        let sp = 0;
        stackV[0] = root;
        stackI[0] = outStart[root];
        state[root] = 1;
        while (sp >= 0) {
          const v = stackV[sp];
          const i = stackI[sp];
          if (i < outStart[v + 1]) {
            stackI[sp] = i + 1;
            const j = outEdge[i];
            const w = et[j];
            if (state[w] === 1) reversed[j] = 1;
            else if (state[w] === 0) {
              state[w] = 1;
              sp++;
              stackV[sp] = w;
              stackI[sp] = outStart[w];
            }
          } else {
            state[v] = 2;
            sp--;
          }
        }
      }
    }
    return reversed;
  }

  // the acyclic graph actually laid out: reversed edges turned round, parallel edges merged
  // (internal edge k: iu[k] -> iv[k]; internalOf[j]: the internal edge of input edge j), its
  // out-lists (dagOutStart, dagOut) and in-degrees (dagInStart)
  function acyclic(n, es, et, reversed) {
    const m = es.length;
    const iu = [];
    const iv = [];
    const internalOf = new Int32Array(m);
    {
      const merged = new Map();
      for (let j = 0; j < m; j++) {
        const u = reversed[j] ? et[j] : es[j];
        const v = reversed[j] ? es[j] : et[j];
        const key = u * n + v;
        let k = merged.get(key);
        if (k === undefined) {
          k = iu.length;
          merged.set(key, k);
          iu.push(u);
          iv.push(v);
        }
        internalOf[j] = k;
      }
    }
    const mi = iu.length;
    const dagOutStart = new Int32Array(n + 1);
    const dagInStart = new Int32Array(n + 1); // in-degrees only
    for (let k = 0; k < mi; k++) {
      dagOutStart[iu[k] + 1]++;
      dagInStart[iv[k] + 1]++;
    }
    for (let v = 0; v < n; v++) {
      dagOutStart[v + 1] += dagOutStart[v];
      dagInStart[v + 1] += dagInStart[v];
    }
    const dagOut = new Int32Array(mi); // target nodes
    {
      const fo = dagOutStart.slice(0, n);
      for (let k = 0; k < mi; k++) dagOut[fo[iu[k]]++] = iv[k];
    }
    return { iu, iv, internalOf, mi, dagOutStart, dagInStart, dagOut };
  }

  // connected components, numbered in order of their lowest node index
  function components(n, dag) {
    const { iu, iv, mi } = dag;
    const comp = new Int32Array(n);
    let nComps = 0;
    {
      const parent = new Int32Array(n);
      for (let v = 0; v < n; v++) parent[v] = v;
      const find = (v) => {
        while (parent[v] !== v) {
          parent[v] = parent[parent[v]];
          v = parent[v];
        }
        return v;
      };
      for (let k = 0; k < mi; k++) {
        const a = find(iu[k]);
        const b = find(iv[k]);
        if (a !== b) {
          if (a < b) parent[b] = a;
          else parent[a] = b;
        }
      }
      const idOfRoot = new Int32Array(n).fill(-1);
      for (let v = 0; v < n; v++) {
        const r = find(v);
        if (idOfRoot[r] < 0) idOfRoot[r] = nComps++;
        comp[v] = idOfRoot[r];
      }
    }
    return { comp, nComps };
  }

  // ---- 2. layers -------------------------------------------------------------------------
  function ranks(n, dag, comps, first, last) {
    const { dagOutStart, dagInStart, dagOut } = dag;
    const { comp, nComps } = comps;
    const pinned = new Uint8Array(n); // 1: top layer, 2: bottom layer
    for (const v of first || []) if (v >= 0 && v < n) pinned[v] = 1;
    for (const v of last || []) if (v >= 0 && v < n) pinned[v] = 2;
    const rank = new Int32Array(n);
    const topo = new Int32Array(n);
    {
      const indeg = new Int32Array(n);
      for (let v = 0; v < n; v++) indeg[v] = dagInStart[v + 1] - dagInStart[v];
      let head = 0;
      let tail = 0;
      for (let v = 0; v < n; v++) if (indeg[v] === 0) topo[tail++] = v;
      while (head < tail) {
        const v = topo[head++];
        for (let i = dagOutStart[v]; i < dagOutStart[v + 1]; i++) {
          const w = dagOut[i];
          if (rank[v] + 1 > rank[w]) rank[w] = rank[v] + 1;
          if (--indeg[w] === 0) topo[tail++] = w;
        }
      }
      // pull down: children first, so a whole chain feeding a deep node follows it down
      for (let i = n - 1; i >= 0; i--) {
        const v = topo[i];
        const outs = dagOutStart[v + 1] - dagOutStart[v];
        const ins = dagInStart[v + 1] - dagInStart[v];
        if (outs === 0 || outs < ins || pinned[v] === 1) continue;
        let lowest = Infinity;
        for (let j = dagOutStart[v]; j < dagOutStart[v + 1]; j++) {
          if (rank[dagOut[j]] < lowest) lowest = rank[dagOut[j]];
        }
        if (lowest - 1 > rank[v]) rank[v] = lowest - 1;
      }
      // every component starts at layer 0
      const low = new Int32Array(nComps).fill(0x7fffffff);
      for (let v = 0; v < n; v++) if (rank[v] < low[comp[v]]) low[comp[v]] = rank[v];
      for (let v = 0; v < n; v++) rank[v] -= low[comp[v]];
    }
    let maxRank = -1;
    for (let v = 0; v < n; v++) if (rank[v] > maxRank) maxRank = rank[v];
    // opts.first / opts.last: nodes kept on the top / bottom layer (a group's ports: the
    // points where edges from outside enter it and leave it)
    for (let v = 0; v < n; v++) {
      if (pinned[v] === 1 && dagInStart[v + 1] === dagInStart[v]) rank[v] = 0;
      else if (pinned[v] === 2 && dagOutStart[v + 1] === dagOutStart[v]) rank[v] = maxRank;
    }
    return { rank, maxRank };
  }

  // ---- 3. dummy nodes: the layered graph ---------------------------------------------------
  // vertices: 0..n-1 the nodes, n..N-1 the dummies; chainStart[k] is the first dummy of
  // internal edge k (its dummies are consecutive, top to bottom), chainLen[k] their count.
  // With the scratch arrays shared by the components (they are disjoint) and the separations.
  function layered(n, nodesIn, dag, rank, comps, seps) {
    const { iu, iv, mi } = dag;
    const { comp, nComps } = comps;
    const chainStart = new Int32Array(mi);
    const chainLen = new Int32Array(mi);
    let N = n;
    for (let k = 0; k < mi; k++) {
      chainStart[k] = N;
      chainLen[k] = rank[iv[k]] - rank[iu[k]] - 1;
      N += chainLen[k];
    }
    const vrank = new Int32Array(N);
    const vwidth = new Float64Array(N);
    const up = new Array(N);
    const down = new Array(N);
    for (let v = 0; v < N; v++) {
      up[v] = [];
      down[v] = [];
    }
    for (let v = 0; v < n; v++) {
      vrank[v] = rank[v];
      const box = nodesIn[v] || {};
      vwidth[v] = size(box.w);
    }
    const compDummies = [];
    for (let c = 0; c < nComps; c++) compDummies.push([]);
    for (let k = 0; k < mi; k++) {
      let prev = iu[k];
      const c = comp[prev];
      for (let i = 0; i < chainLen[k]; i++) {
        const d = chainStart[k] + i;
        vrank[d] = rank[iu[k]] + 1 + i;
        compDummies[c].push(d);
        down[prev].push(d);
        up[d].push(prev);
        prev = d;
      }
      down[prev].push(iv[k]);
      up[iv[k]].push(prev);
    }
    return { n, N, vrank, vwidth, up, down, chainStart, chainLen, compDummies,
      pos: new Int32Array(N), key: new Float64Array(N), fixed: new Uint8Array(N),
      visited: new Uint8Array(N), x: new Float64Array(N), seg: new Int32Array(N), scratch: [],
      tree: new Int32Array(64), nodeSep: seps.nodeSep, edgeSep: seps.edgeSep,
      mixedSep: seps.mixedSep, simplexLimit: seps.simplexLimit };
  }

  // ---- 4. and 5. per component: order (graph_layout_order.js), x (graph_layout_x.js) --------
  // the components side by side, in order of their lowest node index; returns the width
  function placeComponents(g, comps, margin) {
    const { n, x, vwidth, vrank, compDummies, nodeSep } = g;
    const { comp, nComps } = comps;
    const compNodes = [];
    for (let c = 0; c < nComps; c++) compNodes.push([]);
    for (let v = 0; v < n; v++) compNodes[comp[v]].push(v);
    let offset = 0;
    for (let c = 0; c < nComps; c++) {
      const vertices = compNodes[c].concat(compDummies[c]);
      let lo = 0;
      let hi = 0;
      if (vertices.length === 1) {
        const v = vertices[0];
        x[v] = 0;
        lo = -vwidth[v] / 2;
        hi = vwidth[v] / 2;
      } else {
        let R = 0;
        for (const v of vertices) if (vrank[v] + 1 > R) R = vrank[v] + 1;
        const layers = L.order(g, vertices, R);
        L.coordinates(g, vertices, layers);
        lo = Infinity;
        hi = -Infinity;
        for (const v of vertices) {
          if (x[v] - vwidth[v] / 2 < lo) lo = x[v] - vwidth[v] / 2;
          if (x[v] + vwidth[v] / 2 > hi) hi = x[v] + vwidth[v] / 2;
        }
      }
      const shift = margin + offset - lo;
      for (const v of vertices) x[v] += shift;
      offset += hi - lo + nodeSep;
    }
    const width = (nComps ? offset - nodeSep : 0) + 2 * margin;
    return width;
  }

  // ---- 6. y ------------------------------------------------------------------------------
  // the y of each layer's line (layerY) and the drawing's height
  function layerLines(n, nodesIn, rank, maxRank, rankSep, margin) {
    const layerHeight = new Float64Array(maxRank + 1);
    for (let v = 0; v < n; v++) {
      const h = size((nodesIn[v] || {}).h);
      if (h > layerHeight[rank[v]]) layerHeight[rank[v]] = h;
    }
    const layerY = new Float64Array(maxRank + 1);
    let top = margin;
    for (let r = 0; r <= maxRank; r++) {
      layerY[r] = top + layerHeight[r] / 2;
      top += layerHeight[r] + (r < maxRank ? rankSep : 0);
    }
    const height = top + margin;
    return { layerY, height };
  }

  // ---- 7. routes and the result ---------------------------------------------------------
  function result(n, nodesIn, input, dag, g, rank, layerY, width, height) {
    const { es, et, reversed } = input;
    const { internalOf } = dag;
    const { x, vrank, chainStart, chainLen } = g;
    const m = es.length;
    const outX = new Array(n);
    const outY = new Array(n);
    const outRank = new Array(n);
    const halfH = new Float64Array(n);
    for (let v = 0; v < n; v++) {
      outX[v] = x[v];
      outY[v] = layerY[rank[v]];
      outRank[v] = rank[v];
      halfH[v] = size((nodesIn[v] || {}).h) / 2;
    }
    const edges = new Array(m);
    for (let j = 0; j < m; j++) {
      const s = es[j];
      const t = et[j];
      const k = internalOf[j];
      const points = [];
      if (!reversed[j]) {
        points.push([x[s], outY[s] + halfH[s]]);
        for (let i = 0; i < chainLen[k]; i++) {
          const d = chainStart[k] + i;
          points.push([x[d], layerY[vrank[d]]]);
        }
        points.push([x[t], outY[t] - halfH[t]]);
      } else {
        points.push([x[s], outY[s] - halfH[s]]);
        for (let i = chainLen[k] - 1; i >= 0; i--) {
          const d = chainStart[k] + i;
          points.push([x[d], layerY[vrank[d]]]);
        }
        points.push([x[t], outY[t] + halfH[t]]);
      }
      edges[j] = { s, t, points };
    }
    return { x: outX, y: outY, width, height, rank: outRank, edges };
  }

  function layout(options) {
    const opts = options || {};
    const nodesIn = opts.nodes || [];
    const edgesIn = opts.edges || [];
    const rankSep = option(opts.rankSep, 40);
    const nodeSep = option(opts.nodeSep, 24);
    const edgeSep = option(opts.edgeSep, 12);
    const margin = option(opts.margin, 0);
    const simplexLimit = option(opts.simplexLimit, 3000);
    const mixedSep = Math.max(edgeSep, (nodeSep + edgeSep) / 2);
    const n = nodesIn.length;

    const { es, et } = distinctEdges(edgesIn, n);
    const reversed = breakCycles(n, es, et);
    const dag = acyclic(n, es, et, reversed);
    const comps = components(n, dag);
    const { rank, maxRank } = ranks(n, dag, comps, opts.first, opts.last);
    const g = layered(n, nodesIn, dag, rank, comps, { nodeSep, edgeSep, mixedSep, simplexLimit });
    const width = placeComponents(g, comps, margin);
    const { layerY, height } = layerLines(n, nodesIn, rank, maxRank, rankSep, margin);
    return result(n, nodesIn, { es, et, reversed }, dag, g, rank, layerY, width, height);
  }

  L.layout = layout;
};

// The engine: its parts installed on one namespace. source() is the text of the parts and of
// this factory: what a Web Worker runs to lay out off the page's thread (static/graph/worker.js).
const passlensLayoutEngine = function () {
  "use strict";
  const parts = { passlensLayoutSimplex, passlensLayoutOrder, passlensLayoutX, passlensLayoutMain };
  const L = {};
  for (const name in parts) parts[name](L);
  // Layouts of a batch of graphs (each job: the options of layout()), in order. A node of a
  // job may be sized after the result of an earlier job k, {job: k, minW, minH, padW, padH}:
  // w = max(width, minW) + padW, h = max(height, minH) + padH (a group holding a laid out
  // group). Returns the results in the jobs' order.
  function layoutBatch(jobs) {
    const results = [];
    for (const job of jobs) {
      const nodes = job.nodes.map((s) => {
        if (!s || s.job === undefined) return s;
        const r = results[s.job];
        return { w: Math.max(r.width, s.minW || 0) + s.padW, h: Math.max(r.height, s.minH || 0) + s.padH };
      });
      results.push(L.layout(Object.assign({}, job, { nodes })));
    }
    return results;
  }
  const source = () => Object.entries(Object.assign({}, parts, { passlensLayoutEngine }))
    .map(([name, f]) => "const " + name + " = " + String(f) + ";\n").join("") +
    "const PasslensLayout = passlensLayoutEngine();\n";
  return { layout: L.layout, layoutBatch, source };
};
const PasslensLayout = passlensLayoutEngine();
