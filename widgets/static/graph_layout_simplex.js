/* passlens graph layout, phase 5 helper: network simplex (graph_layout.js has the overview).
 * Part of the layout engine: a factory that installs its functions on the engine's namespace
 * `L`; self-contained (no outer names but the built-ins), since its text is also what the
 * layout's Web Worker runs (PasslensLayout.source()).
 */
const passlensLayoutSimplex = function (L) {
  "use strict";

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

  L.networkSimplex = networkSimplex;
};
