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
 *  6. y: each layer as tall as its tallest box, nodes centred on the layer's line.
 *
 * A plain script defining one global (no imports, no DOM, ES2019): it is inlined into pages
 * and prepended to ES modules. Our own code, after the published algorithms: Gansner,
 * Koutsofios, North and Vo, "A technique for drawing directed graphs" (1993); Barth, Jünger
 * and Mutzel, "Simple and efficient bilayer cross counting" (2002); Brandes and Köpf, "Fast and
 * simple horizontal coordinate assignment" (2001) for the conflicts between segments.
 */
const PasslensLayout = (function () {
  "use strict";

  function option(value, fallback) {
    return typeof value === "number" && isFinite(value) && value >= 0 ? value : fallback;
  }

  function size(value) {
    return typeof value === "number" && isFinite(value) && value > 0 ? value : 0;
  }

  // Insertion sort of a small array of numbers (neighbour positions), in place.
  function sortSmall(a, len) {
    for (let i = 1; i < len; i++) {
      const v = a[i];
      let j = i - 1;
      while (j >= 0 && a[j] > v) {
        a[j + 1] = a[j];
        j--;
      }
      a[j + 1] = v;
    }
  }

  // Network simplex (Gansner, Koutsofios, North and Vo, "A technique for drawing directed
  // graphs", 1993; the incremental updates of Graphviz): values r of nn nodes minimising
  // sum weight[e] * (r[to[e]] - r[from[e]]) subject to r[to[e]] - r[from[e]] >= minlen[e].
  // The graph must be connected and r (changed in place) feasible on entry; minlen and r are
  // multiples of 1/2 here so every sum is exact. Stops after maxPivots pivots (each leaves r
  // feasible). With balance, subtrees that can move at no cost then move to the middle of
  // their room. Returns the number of pivots.
  function networkSimplex(nn, from, to, minlen, weight, r, maxPivots, balance) {
    const m = from.length;
    if (nn < 2) return 0;
    const slack = (e) => r[to[e]] - r[from[e]] - minlen[e];
    const incStart = new Int32Array(nn + 1);
    for (let e = 0; e < m; e++) {
      incStart[from[e] + 1]++;
      incStart[to[e] + 1]++;
    }
    for (let v = 0; v < nn; v++) incStart[v + 1] += incStart[v];
    const inc = new Int32Array(2 * m);
    {
      const fill = incStart.slice(0, nn);
      for (let e = 0; e < m; e++) {
        inc[fill[from[e]]++] = e;
        inc[fill[to[e]]++] = e;
      }
    }
    const inTree = new Uint8Array(m);
    const treeEdges = [];

    // -- a feasible spanning tree of tight edges: the tight forest, then its trees merged,
    // smallest first, each shifted along its least slack edge to another tree
    {
      const treeOf = new Int32Array(nn).fill(-1);
      const members = [];
      const stack = [];
      for (let s = 0; s < nn; s++) {
        if (treeOf[s] >= 0) continue;
        const id = members.length;
        const list = [s];
        treeOf[s] = id;
        stack.push(s);
        while (stack.length) {
          const v = stack.pop();
          for (let i = incStart[v]; i < incStart[v + 1]; i++) {
            const e = inc[i];
            const w = from[e] === v ? to[e] : from[e];
            if (treeOf[w] < 0 && slack(e) === 0) {
              treeOf[w] = id;
              inTree[e] = 1;
              treeEdges.push(e);
              list.push(w);
              stack.push(w);
            }
          }
        }
        members.push(list);
      }
      const uf = new Int32Array(members.length);
      for (let i = 0; i < uf.length; i++) uf[i] = i;
      const find = (a) => {
        while (uf[a] !== a) {
          uf[a] = uf[uf[a]];
          a = uf[a];
        }
        return a;
      };
      // a binary heap of size * 2^21 + id: the smallest tree, then the lowest id, first
      const SHIFT = 2097152;
      const heap = [];
      const push = (id) => {
        heap.push(members[id].length * SHIFT + id);
        let i = heap.length - 1;
        while (i > 0) {
          const p = (i - 1) >> 1;
          if (heap[i] >= heap[p]) break;
          const t = heap[i];
          heap[i] = heap[p];
          heap[p] = t;
          i = p;
        }
      };
      const pop = () => {
        const top = heap[0];
        const last = heap.pop();
        if (heap.length) {
          heap[0] = last;
          let i = 0;
          for (;;) {
            const a = 2 * i + 1;
            let s = i;
            if (a < heap.length && heap[a] < heap[s]) s = a;
            if (a + 1 < heap.length && heap[a + 1] < heap[s]) s = a + 1;
            if (s === i) break;
            const t = heap[i];
            heap[i] = heap[s];
            heap[s] = t;
            i = s;
          }
        }
        return top;
      };
      let trees = members.length;
      for (let id = 0; id < members.length; id++) push(id);
      while (trees > 1) {
        const entry = pop();
        const id = entry % SHIFT;
        if (members[id] === null || members[id].length !== (entry - id) / SHIFT) continue;
        let best = -1;
        let bestSlack = Infinity;
        for (const v of members[id]) {
          for (let i = incStart[v]; i < incStart[v + 1]; i++) {
            const e = inc[i];
            const w = from[e] === v ? to[e] : from[e];
            if (find(treeOf[w]) === id) continue;
            const sl = slack(e);
            if (sl < bestSlack) {
              bestSlack = sl;
              best = e;
            }
          }
        }
        if (best < 0) throw new Error("PasslensLayout: network simplex on a disconnected graph");
        const tailInside = find(treeOf[from[best]]) === id;
        const delta = tailInside ? bestSlack : -bestSlack;
        if (delta !== 0) for (const v of members[id]) r[v] += delta;
        inTree[best] = 1;
        treeEdges.push(best);
        const other = find(treeOf[tailInside ? to[best] : from[best]]);
        const big = members[id].length > members[other].length ? id : other;
        const small = big === id ? other : id;
        for (const v of members[small]) members[big].push(v);
        members[small] = null;
        uf[small] = big;
        trees--;
        push(big);
      }
    }

    // -- the tree: incident tree edges, parent edge, postorder numbers low..lim of subtrees
    const treeInc = new Array(nn);
    for (let v = 0; v < nn; v++) treeInc[v] = [];
    for (const e of treeEdges) {
      treeInc[from[e]].push(e);
      treeInc[to[e]].push(e);
    }
    const par = new Int32Array(nn);
    const low = new Int32Array(nn);
    const lim = new Int32Array(nn);
    const cut = new Float64Array(m);
    const stackV = new Int32Array(nn);
    const stackI = new Int32Array(nn);
    const other = (e, v) => (from[e] === v ? to[e] : from[e]);
    // Number the subtree of v (entered by edge parEdge) in postorder from lowNumber; with
    // visit, call it on each node in postorder. With prune, a subtree whose root is not
    // marked changed (dirty[w] === stamp), still hangs from the same edge and starts at the
    // same number keeps its numbers (its inside did not change).
    const dirty = new Int32Array(nn);
    let stamp = 0;
    const dfsRange = (v, parEdge, lowNumber, visit, prune) => {
      let sp = 0;
      let count = lowNumber - 1;
      stackV[0] = v;
      stackI[0] = 0;
      par[v] = parEdge;
      low[v] = lowNumber;
      while (sp >= 0) {
        const u = stackV[sp];
        const list = treeInc[u];
        if (stackI[sp] < list.length) {
          const e = list[stackI[sp]++];
          if (e === par[u]) continue;
          const w = other(e, u);
          if (prune && dirty[w] !== stamp && par[w] === e && low[w] === count + 1) {
            count = lim[w];
            continue;
          }
          par[w] = e;
          low[w] = count + 1;
          sp++;
          stackV[sp] = w;
          stackI[sp] = 0;
        } else {
          lim[u] = ++count;
          if (visit) visit(u);
          sp--;
        }
      }
    };
    const inSubtree = (v, top) => low[top] <= lim[v] && lim[v] <= lim[top];
    // the nodes of the subtree under v (v first) into sub[0..count), count returned
    const sub = new Int32Array(nn);
    const collect = (v) => {
      let count = 1;
      sub[0] = v;
      for (let h = 0; h < count; h++) {
        const u = sub[h];
        const list = treeInc[u];
        for (let i = 0; i < list.length; i++) {
          const e = list[i];
          if (e !== par[u]) sub[count++] = from[e] === u ? to[e] : from[e];
        }
      }
      return count;
    };
    // cut values, children first
    dfsRange(0, -1, 1, (child) => {
      const pe = par[child];
      if (pe < 0) return;
      const childIsTail = from[pe] === child;
      let value = weight[pe];
      for (let i = incStart[child]; i < incStart[child + 1]; i++) {
        const e = inc[i];
        if (e === pe) continue;
        const pointsToHead = (from[e] === child) === childIsTail;
        value += pointsToHead ? weight[e] : -weight[e];
        if (inTree[e]) value += pointsToHead ? -cut[e] : cut[e];
      }
      cut[pe] = value;
    });

    // the entering edge for tree edge e: the least slack non-tree edge across the cut made by
    // removing e, in the direction opposite to e (found by walking the cut-off subtree)
    const enter = (e) => {
      const down = lim[from[e]] < lim[to[e]] ? from[e] : to[e];
      const wantIn = down === from[e]; // edges into the subtree (else out of it)
      const lo = low[down];
      const hi = lim[down];
      let best = -1;
      let bestSlack = Infinity;
      const count = collect(down);
      for (let h = 0; h < count; h++) {
        const u = sub[h];
        for (let i = incStart[u]; i < incStart[u + 1]; i++) {
          const f = inc[i];
          if (inTree[f]) continue;
          let w;
          if (wantIn) {
            if (to[f] !== u) continue;
            w = from[f];
          } else {
            if (from[f] !== u) continue;
            w = to[f];
          }
          if (lo <= lim[w] && lim[w] <= hi) continue;
          const sl = r[to[f]] - r[from[f]] - minlen[f];
          if (sl < bestSlack || (sl === bestSlack && f < best)) {
            bestSlack = sl;
            best = f;
          }
        }
      }
      return best;
    };
    const shiftSubtree = (v, delta) => {
      const count = collect(v);
      for (let h = 0; h < count; h++) r[sub[h]] += delta;
    };
    // update cut values on the tree path from v up to the common ancestor with w (marking
    // the nodes on the way changed)
    const treeUpdate = (v, w, value, dir) => {
      while (!inSubtree(w, v)) {
        dirty[v] = stamp;
        const e = par[v];
        const d = v === from[e] ? dir : !dir;
        if (d) cut[e] += value;
        else cut[e] -= value;
        v = lim[from[e]] > lim[to[e]] ? from[e] : to[e];
      }
      return v;
    };

    let pivots = 0;
    let searchFrom = 0;
    const nt = treeEdges.length;
    while (pivots < maxPivots) {
      // leaving edge: the most negative cut value among the next few negative ones
      let leave = -1;
      let leaveSlot = -1;
      let found = 0;
      for (let k = 0; k < nt && found < 5; k++) {
        const slot = (searchFrom + k) % nt;
        const e = treeEdges[slot];
        if (cut[e] < 0) {
          found++;
          if (leave < 0 || cut[e] < cut[leave]) {
            leave = e;
            leaveSlot = slot;
          }
        }
      }
      if (leave < 0) break;
      searchFrom = leaveSlot;
      const f = enter(leave);
      if (f < 0) break; // cannot happen on a connected graph
      // move the cut-off subtree so that f becomes tight
      const delta = slack(f);
      if (delta !== 0) {
        const downTail = lim[from[leave]] < lim[to[leave]];
        if (downTail) shiftSubtree(from[leave], -delta);
        else shiftSubtree(to[leave], delta);
      }
      const value = cut[leave];
      stamp++;
      const lca = treeUpdate(from[f], to[f], value, true);
      treeUpdate(to[f], from[f], value, false);
      cut[f] = -value;
      cut[leave] = 0;
      inTree[leave] = 0;
      inTree[f] = 1;
      treeEdges[leaveSlot] = f;
      treeInc[from[leave]].splice(treeInc[from[leave]].indexOf(leave), 1);
      treeInc[to[leave]].splice(treeInc[to[leave]].indexOf(leave), 1);
      treeInc[from[f]].push(f);
      treeInc[to[f]].push(f);
      dfsRange(lca, par[lca], low[lca], null, true);
      pivots++;
    }

    if (balance) {
      for (let k = 0; k < nt; k++) {
        const e = treeEdges[k];
        if (cut[e] !== 0) continue;
        const f = enter(e);
        if (f < 0) continue;
        const delta = slack(f);
        if (delta <= 1) continue;
        if (lim[from[e]] < lim[to[e]]) shiftSubtree(from[e], -delta / 2);
        else shiftSubtree(to[e], delta / 2);
      }
    }
    return pivots;
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

    // ---- 1. distinct edges, cycle breaking ------------------------------------------------
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
    const m = es.length;

    // out-edges of each node (edge ids, input order), compressed rows
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

    // the acyclic graph actually laid out: reversed edges turned round, parallel edges merged
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

    // connected components, numbered in order of their lowest node index
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

    // ---- 2. layers -------------------------------------------------------------------------
    const pinned = new Uint8Array(n); // 1: top layer, 2: bottom layer
    for (const v of opts.first || []) if (v >= 0 && v < n) pinned[v] = 1;
    for (const v of opts.last || []) if (v >= 0 && v < n) pinned[v] = 2;
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

    // ---- 3. dummy nodes --------------------------------------------------------------------
    // vertices: 0..n-1 the nodes, n..N-1 the dummies; chainStart[k] is the first dummy of
    // internal edge k (its dummies are consecutive, top to bottom), chainLen[k] their count
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

    // shared scratch, indexed by vertex (components are disjoint, so they can share it)
    const pos = new Int32Array(N);
    const key = new Float64Array(N);
    const fixed = new Uint8Array(N);
    const visited = new Uint8Array(N);
    const x = new Float64Array(N);
    const scratch = [];

    // ---- 4. ordering -----------------------------------------------------------------------
    function neighbourPositions(list) {
      const len = list.length;
      for (let i = 0; i < len; i++) scratch[i] = pos[list[i]];
      sortSmall(scratch, len);
      return len;
    }

    function median(len) {
      if (len === 0) return -1;
      const mid = len >> 1;
      if (len % 2 === 1) return scratch[mid];
      if (len === 2) return (scratch[0] + scratch[1]) / 2;
      const left = scratch[mid - 1] - scratch[0];
      const right = scratch[len - 1] - scratch[mid];
      if (left + right === 0) return (scratch[mid - 1] + scratch[mid]) / 2;
      return (scratch[mid - 1] * right + scratch[mid] * left) / (left + right);
    }

    // Crossings between one layer and the next (accumulator tree of Barth, Jünger and Mutzel).
    let tree = new Int32Array(64);
    function crossingsBelow(upper, lower) {
      const q = lower.length;
      if (q < 2 || upper.length === 0) return 0;
      let first = 1;
      while (first < q) first <<= 1;
      const treeSize = 2 * first - 1;
      if (tree.length < treeSize) tree = new Int32Array(treeSize * 2);
      tree.fill(0, 0, treeSize);
      let crossings = 0;
      for (let a = 0; a < upper.length; a++) {
        const len = neighbourPositions(down[upper[a]]);
        for (let b = 0; b < len; b++) {
          let index = scratch[b] + first - 1;
          tree[index]++;
          while (index > 0) {
            if (index % 2) crossings += tree[index + 1];
            index = (index - 1) >> 1;
            tree[index]++;
          }
        }
      }
      return crossings;
    }

    function crossings(layers) {
      let total = 0;
      for (let r = 0; r + 1 < layers.length; r++) total += crossingsBelow(layers[r], layers[r + 1]);
      return total;
    }

    // Crossings between the edges of two neighbours a, b of one layer to one neighbouring
    // layer (as, bs: their neighbours there), added to asIs (a left of b) and swapped (b left
    // of a).
    let asIs = 0;
    let swapped = 0;
    function pairCrossings(as, bs) {
      for (let i = 0; i < as.length; i++) {
        const p = pos[as[i]];
        for (let j = 0; j < bs.length; j++) {
          const q = pos[bs[j]];
          if (p > q) asIs++;
          else if (p < q) swapped++;
        }
      }
    }

    function reorder(layer, fixedSide) {
      const len = layer.length;
      const movable = [];
      for (let i = 0; i < len; i++) {
        const v = layer[i];
        const k = neighbourPositions(fixedSide[v]);
        if (k === 0) fixed[v] = 1;
        else {
          fixed[v] = 0;
          key[v] = median(k);
          movable.push(v);
        }
      }
      if (movable.length < 2) return;
      movable.sort((a, b) => key[a] - key[b] || pos[a] - pos[b]);
      const old = layer.slice();
      let j = 0;
      for (let i = 0; i < len; i++) {
        if (!fixed[old[i]]) layer[i] = movable[j++];
      }
      for (let i = 0; i < len; i++) pos[layer[i]] = i;
    }

    function transpose(layers, equalSwaps, maxPasses) {
      const R = layers.length;
      let candidate = new Uint8Array(R).fill(1);
      for (let pass = 0; pass < maxPasses; pass++) {
        let improved = 0;
        const next = new Uint8Array(R);
        for (let r = 0; r < R; r++) {
          if (!candidate[r]) continue;
          const layer = layers[r];
          for (let i = 0; i + 1 < layer.length; i++) {
            const v = layer[i];
            const w = layer[i + 1];
            asIs = 0;
            swapped = 0;
            pairCrossings(up[v], up[w]);
            pairCrossings(down[v], down[w]);
            const c0 = asIs;
            const c1 = swapped;
            if (c0 === 0) continue;
            if (c1 < c0 || (equalSwaps && c1 === c0)) {
              layer[i] = w;
              layer[i + 1] = v;
              pos[w] = i;
              pos[v] = i + 1;
              improved += c0 - c1;
              next[r] = 1;
              if (r > 0) next[r - 1] = 1;
              if (r + 1 < R) next[r + 1] = 1;
            }
          }
        }
        candidate = next;
        if (improved === 0) break;
      }
    }

    function initialOrder(vertices, R, fromTop) {
      const layers = [];
      for (let r = 0; r < R; r++) layers.push([]);
      const starts = vertices.filter((v) => v < n);
      if (fromTop) starts.sort((a, b) => vrank[a] - vrank[b] || a - b);
      else starts.sort((a, b) => vrank[b] - vrank[a] || a - b);
      const next = fromTop ? down : up;
      for (const v of vertices) visited[v] = 0;
      const stack = [];
      const index = [];
      for (const s of starts) {
        if (visited[s]) continue;
        visited[s] = 1;
        layers[vrank[s]].push(s);
        stack.push(s);
        index.push(0);
        while (stack.length) {
          const top = stack.length - 1;
          const v = stack[top];
          const list = next[v];
          if (index[top] < list.length) {
            const w = list[index[top]++];
            if (!visited[w]) {
              visited[w] = 1;
              layers[vrank[w]].push(w);
              stack.push(w);
              index.push(0);
            }
          } else {
            stack.pop();
            index.pop();
          }
        }
      }
      for (const layer of layers) for (let i = 0; i < layer.length; i++) pos[layer[i]] = i;
      return layers;
    }

    function order(vertices, R) {
      // The work of a sweep: its vertices and edges, and for transposition the products of
      // the degrees of neighbours. Big graphs get fewer sweeps, so the time stays bounded.
      let work = 0;
      for (const v of vertices) {
        const a = up[v].length;
        const b = down[v].length;
        work += 2 + b + a * a + b * b;
      }
      const maxSweeps = Math.max(2, Math.min(24, Math.floor(1e6 / work)));
      const maxPasses = work > 100000 ? 2 : work > 30000 ? 4 : 8;
      const trials = work > 10000 ? [true] : [true, false];
      let best = null;
      let bestCross = Infinity;
      for (const fromTop of trials) {
        const layers = initialOrder(vertices, R, fromTop);
        let cur = crossings(layers);
        if (cur < bestCross) {
          bestCross = cur;
          best = layers.map((l) => l.slice());
        }
        let stall = 0;
        for (let it = 0; it < maxSweeps && bestCross > 0 && stall < 4; it++) {
          if (it % 2 === 0) for (let r = 1; r < R; r++) reorder(layers[r], up);
          else for (let r = R - 2; r >= 0; r--) reorder(layers[r], down);
          transpose(layers, it % 4 >= 2, maxPasses);
          cur = crossings(layers);
          if (cur < bestCross) {
            bestCross = cur;
            best = layers.map((l) => l.slice());
            stall = 0;
          } else stall++;
        }
        if (bestCross === 0) break;
      }
      for (const layer of best) for (let i = 0; i < layer.length; i++) pos[layer[i]] = i;
      return best;
    }

    // ---- 5. x ----------------------------------------------------------------------------------
    function separation(a, b) {
      const gap = a < n && b < n ? nodeSep : a >= n && b >= n ? edgeSep : mixedSep;
      return (vwidth[a] + vwidth[b]) / 2 + gap;
    }

    // a leaf (a weight, a constant, an unused result) follows its one neighbour: its edge
    // weighs little, so it does not pull the data flow sideways
    const isLeaf = (v) => v < n && up[v].length + down[v].length === 1;
    const edgeWeight = (a, b) =>
      isLeaf(a) || isLeaf(b) ? 1 : a >= n && b >= n ? 32 : a >= n || b >= n ? 8 : 4;

    // Links that cross a link between two dummies (Brandes and Köpf's type 1 conflicts): they
    // must not join segments, so long edges stay straight rather than the short ones.
    function markConflicts(layers) {
      const conflicts = new Set();
      for (let i = 0; i + 1 < layers.length; i++) {
        const upper = layers[i];
        const lower = layers[i + 1];
        let k0 = 0;
        let l = 0;
        for (let l1 = 0; l1 < lower.length; l1++) {
          const v = lower[l1];
          const inner = v >= n && up[v][0] >= n ? up[v][0] : -1;
          if (l1 === lower.length - 1 || inner >= 0) {
            const k1 = inner >= 0 ? pos[inner] : upper.length - 1;
            for (; l <= l1; l++) {
              const w = lower[l];
              for (const u of up[w]) {
                const k = pos[u];
                if ((k < k0 || k > k1) && !(u >= n && w >= n)) conflicts.add(u * N + w);
              }
            }
            k0 = k1;
          }
        }
      }
      return conflicts;
    }

    const seg = new Int32Array(N);

    // Segments: maximal runs of vertices linked one to one (each the only child of the one
    // above and the only parent of the one below: chains of nodes, long edges). A segment has
    // one x, so chains come out exactly vertical. Links are taken left to right in each layer
    // and one that would cross a link already taken is left out (so segments do not cross).
    // Without conflicts (the fallback) every vertex is a segment. Returns the count.
    function makeSegments(layers, conflicts) {
      let count = 0;
      for (let i = 0; i < layers.length; i++) {
        let r = -1;
        const layer = layers[i];
        for (let j = 0; j < layer.length; j++) {
          const v = layer[j];
          if (conflicts && up[v].length === 1) {
            const u = up[v][0];
            if (down[u].length === 1 && pos[u] > r && !conflicts.has(u * N + v)) {
              seg[v] = seg[u];
              r = pos[u];
              continue;
            }
          }
          seg[v] = count++;
        }
      }
      return count;
    }

    // The separation constraints between the segments (left, right, gap), with compressed
    // rows both ways and a topological order; null if they form a cycle.
    function constraints(layers, nSeg) {
      const cl = [];
      const cr = [];
      const cg = [];
      for (const layer of layers) {
        for (let j = 1; j < layer.length; j++) {
          cl.push(seg[layer[j - 1]]);
          cr.push(seg[layer[j]]);
          cg.push(Math.ceil(separation(layer[j - 1], layer[j]) * 2) / 2); // half pixels
        }
      }
      const nc = cl.length;
      const inStart = new Int32Array(nSeg + 1);
      const outStart = new Int32Array(nSeg + 1);
      for (let c = 0; c < nc; c++) {
        inStart[cr[c] + 1]++;
        outStart[cl[c] + 1]++;
      }
      for (let s = 0; s < nSeg; s++) {
        inStart[s + 1] += inStart[s];
        outStart[s + 1] += outStart[s];
      }
      const inC = new Int32Array(nc);
      const outC = new Int32Array(nc);
      const fi = inStart.slice(0, nSeg);
      const fo = outStart.slice(0, nSeg);
      for (let c = 0; c < nc; c++) {
        inC[fi[cr[c]]++] = c;
        outC[fo[cl[c]]++] = c;
      }
      const topo = new Int32Array(nSeg);
      const indeg = new Int32Array(nSeg);
      for (let s = 0; s < nSeg; s++) indeg[s] = inStart[s + 1] - inStart[s];
      let tail = 0;
      for (let s = 0; s < nSeg; s++) if (indeg[s] === 0) topo[tail++] = s;
      for (let h = 0; h < tail; h++) {
        const s = topo[h];
        for (let i = outStart[s]; i < outStart[s + 1]; i++) {
          if (--indeg[cr[outC[i]]] === 0) topo[tail++] = cr[outC[i]];
        }
      }
      if (tail < nSeg) return null;
      return { cl, cr, cg, nc, inStart, outStart, inC, outC, topo };
    }

    function coordinates(vertices, layers) {
      let nSeg = makeSegments(layers, markConflicts(layers));
      let cons = constraints(layers, nSeg);
      if (cons === null) {
        nSeg = makeSegments(layers, null);
        cons = constraints(layers, nSeg);
      }
      const { cl, cr, cg, nc, inStart, outStart, inC, outC, topo } = cons;
      // a start: each segment halfway between its places packed to the left and to the right
      const X = new Float64Array(nSeg);
      const XR = new Float64Array(nSeg);
      let total = 0;
      for (let h = 0; h < nSeg; h++) {
        const s = topo[h];
        let v = 0;
        for (let i = inStart[s]; i < inStart[s + 1]; i++) {
          const c = inC[i];
          if (X[cl[c]] + cg[c] > v) v = X[cl[c]] + cg[c];
        }
        X[s] = v;
        if (v > total) total = v;
      }
      for (let h = nSeg - 1; h >= 0; h--) {
        const s = topo[h];
        let v = total;
        for (let i = outStart[s]; i < outStart[s + 1]; i++) {
          const c = outC[i];
          if (XR[cr[c]] - cg[c] < v) v = XR[cr[c]] - cg[c];
        }
        XR[s] = v;
      }
      // (on the half-pixel grid: pushed right where rounding broke a gap)
      for (let s = 0; s < nSeg; s++) XR[s] = Math.round(X[s] + XR[s]) / 2;
      for (let h = 0; h < nSeg; h++) {
        const s = topo[h];
        let v = XR[s];
        for (let i = inStart[s]; i < inStart[s + 1]; i++) {
          const c = inC[i];
          if (X[cl[c]] + cg[c] > v) v = X[cl[c]] + cg[c];
        }
        X[s] = v;
      }
      // the weighted links between segments, one entry per pair
      const pairOf = new Map();
      const pa = [];
      const pb = [];
      const pw = [];
      for (const v of vertices) {
        for (const u of down[v]) {
          let a = seg[v];
          let b = seg[u];
          if (a === b) continue;
          if (a > b) {
            const t = a;
            a = b;
            b = t;
          }
          const key = a * nSeg + b;
          const k = pairOf.get(key);
          if (k === undefined) {
            pairOf.set(key, pa.length);
            pa.push(a);
            pb.push(b);
            pw.push(edgeWeight(v, u));
          } else pw[k] += edgeWeight(v, u);
        }
      }
      // The sum of weighted squared lengths, roughly least: damped Jacobi steps toward the
      // weighted mean of the neighbours, each followed by a projection onto the constraints
      // (the mean of pushing left to right and right to left: feasible, since the constraints
      // are linear). The placement for big graphs; a start for network simplex.
      const exact = nSeg + pa.length <= simplexLimit;
      const iterations = exact ? 5 : Math.max(10, Math.min(100, Math.floor(2e7 / (nSeg + nc))));
      if (iterations > 0) {
        const nbStart = new Int32Array(nSeg + 1);
        for (let k = 0; k < pa.length; k++) {
          nbStart[pa[k] + 1]++;
          nbStart[pb[k] + 1]++;
        }
        for (let s = 0; s < nSeg; s++) nbStart[s + 1] += nbStart[s];
        const nb = new Int32Array(nbStart[nSeg]);
        const nbW = new Float64Array(nbStart[nSeg]);
        const weightSum = new Float64Array(nSeg);
        const fill = nbStart.slice(0, nSeg);
        for (let k = 0; k < pa.length; k++) {
          nb[fill[pa[k]]] = pb[k];
          nbW[fill[pa[k]]++] = pw[k];
          nb[fill[pb[k]]] = pa[k];
          nbW[fill[pb[k]]++] = pw[k];
          weightSum[pa[k]] += pw[k];
          weightSum[pb[k]] += pw[k];
        }
        const D = new Float64Array(nSeg);
        const XL = new Float64Array(nSeg);
        for (let it = 0; it < iterations; it++) {
          for (let s = 0; s < nSeg; s++) {
            let sum = 0;
            for (let i = nbStart[s]; i < nbStart[s + 1]; i++) sum += nbW[i] * X[nb[i]];
            D[s] = weightSum[s] ? (X[s] + sum / weightSum[s]) / 2 : X[s];
          }
          for (let h = 0; h < nSeg; h++) {
            const s = topo[h];
            let v = D[s];
            for (let i = inStart[s]; i < inStart[s + 1]; i++) {
              const c = inC[i];
              if (XL[cl[c]] + cg[c] > v) v = XL[cl[c]] + cg[c];
            }
            XL[s] = v;
          }
          for (let h = nSeg - 1; h >= 0; h--) {
            const s = topo[h];
            let v = D[s];
            for (let i = outStart[s]; i < outStart[s + 1]; i++) {
              const c = outC[i];
              if (XR[cr[c]] - cg[c] < v) v = XR[cr[c]] - cg[c];
            }
            XR[s] = v;
          }
          let moved = 0;
          for (let s = 0; s < nSeg; s++) {
            const v = (XL[s] + XR[s]) / 2;
            if (Math.abs(v - X[s]) > moved) moved = Math.abs(v - X[s]);
            X[s] = v;
          }
          if (moved < 0.05) break;
        }
      }
      if (exact) {
        // The sum of weighted horizontal edge lengths, least (as Graphviz dot does): network
        // simplex on the auxiliary graph with a node per linked pair of segments, below both.
        // The start on the half-pixel grid, pushed right where rounding broke a gap.
        for (let h = 0; h < nSeg; h++) {
          const s = topo[h];
          let v = Math.round(X[s] * 2) / 2;
          for (let i = inStart[s]; i < inStart[s + 1]; i++) {
            const c = inC[i];
            if (X[cl[c]] + cg[c] > v) v = X[cl[c]] + cg[c];
          }
          X[s] = v;
        }
        const from = [];
        const to = [];
        const minlen = [];
        const weight = [];
        const sepOf = new Map();
        for (let c = 0; c < nc; c++) {
          const key = cl[c] * nSeg + cr[c];
          const k = sepOf.get(key);
          if (k === undefined) {
            sepOf.set(key, from.length);
            from.push(cl[c]);
            to.push(cr[c]);
            minlen.push(cg[c]);
            weight.push(0);
          } else if (cg[c] > minlen[k]) minlen[k] = cg[c];
        }
        const nn = nSeg + pa.length;
        const r = new Float64Array(nn);
        r.set(X);
        for (let k = 0; k < pa.length; k++) {
          from.push(nSeg + k, nSeg + k);
          to.push(pa[k], pb[k]);
          minlen.push(0, 0);
          weight.push(pw[k], pw[k]);
          r[nSeg + k] = Math.min(X[pa[k]], X[pb[k]]);
        }
        networkSimplex(nn, from, to, minlen, weight, r, 4 * nn, true);
        for (let s = 0; s < nSeg; s++) X[s] = r[s];
      }
      for (const v of vertices) x[v] = X[seg[v]];
    }

    // ---- per component ------------------------------------------------------------------
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
        const layers = order(vertices, R);
        coordinates(vertices, layers);
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

    // ---- 6. y ------------------------------------------------------------------------------
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

    // ---- result ------------------------------------------------------------------------------
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

  return { layout };
})();
