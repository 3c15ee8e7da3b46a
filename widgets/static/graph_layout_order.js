/* passlens graph layout, phase 4: the order of the vertices within their layers (crossing
 * reduction), one connected component at a time (graph_layout.js has the overview). Each
 * function takes the layered graph `g` (graph_layout.js, layered()): n real nodes, up / down
 * neighbour lists per vertex, vrank, and the scratch arrays pos, key, fixed, visited, scratch
 * shared by the components. Self-contained, as every part of the engine (it also runs in the
 * layout's Web Worker).
 */
const passlensLayoutOrder = function (L) {
  "use strict";

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

  // the positions of the vertices of `list` into g.scratch, sorted; returns their count
  function neighbourPositions(g, list) {
    const { pos, scratch } = g;
    const len = list.length;
    for (let i = 0; i < len; i++) scratch[i] = pos[list[i]];
    sortSmall(scratch, len);
    return len;
  }

  // the weighted median of the first len positions of g.scratch (-1 if none)
  function median(g, len) {
    const scratch = g.scratch;
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
  function crossingsBelow(g, upper, lower) {
    const { down, scratch } = g;
    const q = lower.length;
    if (q < 2 || upper.length === 0) return 0;
    let first = 1;
    while (first < q) first <<= 1;
    const treeSize = 2 * first - 1;
    if (g.tree.length < treeSize) g.tree = new Int32Array(treeSize * 2);
    const tree = g.tree;
    tree.fill(0, 0, treeSize);
    let crossings = 0;
    for (let a = 0; a < upper.length; a++) {
      const len = neighbourPositions(g, down[upper[a]]);
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

  function crossings(g, layers) {
    let total = 0;
    for (let r = 0; r + 1 < layers.length; r++) total += crossingsBelow(g, layers[r], layers[r + 1]);
    return total;
  }

  // Crossings between the edges of two neighbours a, b of one layer to one neighbouring
  // layer (as, bs: their neighbours there), added to acc[0] (a left of b) and acc[1] (b left
  // of a).
  function pairCrossings(pos, as, bs, acc) {
    let asIs = acc[0];
    let swapped = acc[1];
    for (let i = 0; i < as.length; i++) {
      const p = pos[as[i]];
      for (let j = 0; j < bs.length; j++) {
        const q = pos[bs[j]];
        if (p > q) asIs++;
        else if (p < q) swapped++;
      }
    }
    acc[0] = asIs;
    acc[1] = swapped;
  }

  // one layer ordered by the median positions of its neighbours on the fixed side (up or
  // down); a vertex without neighbours there keeps its place
  function reorder(g, layer, fixedSide) {
    const { pos, key, fixed } = g;
    const len = layer.length;
    const movable = [];
    for (let i = 0; i < len; i++) {
      const v = layer[i];
      const k = neighbourPositions(g, fixedSide[v]);
      if (k === 0) fixed[v] = 1;
      else {
        fixed[v] = 0;
        key[v] = median(g, k);
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

  // passes of swaps of adjacent vertices that lower the crossings (with equalSwaps, also those
  // that keep them), in the layers next to a layer changed in the pass before
  function transpose(g, layers, equalSwaps, maxPasses) {
    const { pos, up, down } = g;
    const acc = [0, 0];
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
          acc[0] = 0;
          acc[1] = 0;
          pairCrossings(pos, up[v], up[w], acc);
          pairCrossings(pos, down[v], down[w], acc);
          const c0 = acc[0];
          const c1 = acc[1];
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

  // a first order: depth-first from the real nodes, from the top (or the bottom) layer down
  function initialOrder(g, vertices, R, fromTop) {
    const { n, vrank, up, down, pos, visited } = g;
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

  // The layers of one component (its vertices, R layers), ordered: the fewest crossings found
  // by sweeps of median ordering and transpositions from the two first orders.
  function order(g, vertices, R) {
    const { up, down, pos } = g;
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
      const layers = initialOrder(g, vertices, R, fromTop);
      let cur = crossings(g, layers);
      if (cur < bestCross) {
        bestCross = cur;
        best = layers.map((l) => l.slice());
      }
      let stall = 0;
      for (let it = 0; it < maxSweeps && bestCross > 0 && stall < 4; it++) {
        if (it % 2 === 0) for (let r = 1; r < R; r++) reorder(g, layers[r], up);
        else for (let r = R - 2; r >= 0; r--) reorder(g, layers[r], down);
        transpose(g, layers, it % 4 >= 2, maxPasses);
        cur = crossings(g, layers);
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

  L.order = order;
  L.crossings = crossings;
};
