/* passlens graph layout, phase 5: x coordinates, one connected component at a time
 * (graph_layout.js has the overview). Segments (runs of vertices linked one to one) get one x
 * each, least weighted horizontal edge length under the separation constraints: network
 * simplex (graph_layout_simplex.js) up to opts.simplexLimit, an iterative least-squares
 * approximation above. Each function takes the layered graph `g` (graph_layout.js, layered()).
 * Self-contained, as every part of the engine (it also runs in the layout's Web Worker).
 */
const passlensLayoutX = function (L) {
  "use strict";

  // the least distance between the centres of neighbours a, b of one layer
  function separation(g, a, b) {
    const { n, vwidth, nodeSep, edgeSep, mixedSep } = g;
    const gap = a < n && b < n ? nodeSep : a >= n && b >= n ? edgeSep : mixedSep;
    return (vwidth[a] + vwidth[b]) / 2 + gap;
  }

  // a leaf (a weight, a constant, an unused result) follows its one neighbour: its edge
  // weighs little, so it does not pull the data flow sideways
  const isLeaf = (g, v) => v < g.n && g.up[v].length + g.down[v].length === 1;
  const edgeWeight = (g, a, b) =>
    isLeaf(g, a) || isLeaf(g, b) ? 1 : a >= g.n && b >= g.n ? 32 : a >= g.n || b >= g.n ? 8 : 4;

  // Links that cross a link between two dummies (Brandes and Köpf's type 1 conflicts): they
  // must not join segments, so long edges stay straight rather than the short ones.
  function markConflicts(g, layers) {
    const { n, N, up, pos } = g;
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

  // Segments: maximal runs of vertices linked one to one (each the only child of the one
  // above and the only parent of the one below: chains of nodes, long edges). A segment has
  // one x, so chains come out exactly vertical. Links are taken left to right in each layer
  // and one that would cross a link already taken is left out (so segments do not cross).
  // Without conflicts (the fallback) every vertex is a segment. Returns the count.
  function makeSegments(g, layers, conflicts) {
    const { N, up, down, pos, seg } = g;
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
  function constraints(g, layers, nSeg) {
    const seg = g.seg;
    const cl = [];
    const cr = [];
    const cg = [];
    for (const layer of layers) {
      for (let j = 1; j < layer.length; j++) {
        cl.push(seg[layer[j - 1]]);
        cr.push(seg[layer[j]]);
        cg.push(Math.ceil(separation(g, layer[j - 1], layer[j]) * 2) / 2); // half pixels
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

  // segments of one component and their separation constraints (every vertex a segment of its
  // own when the segments' constraints would form a cycle)
  function segments(g, layers) {
    let nSeg = makeSegments(g, layers, markConflicts(g, layers));
    let cons = constraints(g, layers, nSeg);
    if (cons === null) {
      nSeg = makeSegments(g, layers, null);
      cons = constraints(g, layers, nSeg);
    }
    cons.nSeg = nSeg;
    return cons;
  }

  // a first x per segment: halfway between its places packed to the left and to the right
  function packedStart(cons) {
    const { cl, cr, cg, nSeg, inStart, outStart, inC, outC, topo } = cons;
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
    return X;
  }

  // the weighted links between segments, one entry per pair: {pa, pb, pw}
  function segmentLinks(g, vertices, nSeg) {
    const { down, seg } = g;
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
          pw.push(edgeWeight(g, v, u));
        } else pw[k] += edgeWeight(g, v, u);
      }
    }
    return { pa, pb, pw };
  }

  // The sum of weighted squared lengths, roughly least: damped Jacobi steps toward the
  // weighted mean of the neighbours, each followed by a projection onto the constraints
  // (the mean of pushing left to right and right to left: feasible, since the constraints
  // are linear). The placement for big graphs; a start for network simplex.
  function leastSquares(X, cons, links, iterations) {
    const { cl, cr, cg, nSeg, inStart, outStart, inC, outC, topo } = cons;
    const { pa, pb, pw } = links;
    const XR = new Float64Array(nSeg);
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

  // The sum of weighted horizontal edge lengths, least (as Graphviz dot does): network
  // simplex on the auxiliary graph with a node per linked pair of segments, below both.
  // The start on the half-pixel grid, pushed right where rounding broke a gap.
  function exactPlacement(X, cons, links) {
    const { cl, cr, cg, nc, nSeg, inStart, inC, topo } = cons;
    const { pa, pb, pw } = links;
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
    L.networkSimplex(nn, from, to, minlen, weight, r, 4 * nn, true);
    for (let s = 0; s < nSeg; s++) X[s] = r[s];
  }

  // The x of every vertex of one component (its vertices, its ordered layers) into g.x.
  function coordinates(g, vertices, layers) {
    const cons = segments(g, layers);
    const X = packedStart(cons);
    const links = segmentLinks(g, vertices, cons.nSeg);
    const exact = cons.nSeg + links.pa.length <= g.simplexLimit;
    const iterations = exact ? 5 : Math.max(10, Math.min(100, Math.floor(2e7 / (cons.nSeg + cons.nc))));
    if (iterations > 0) leastSquares(X, cons, links, iterations);
    if (exact) exactPlacement(X, cons, links);
    const { x, seg } = g;
    for (const v of vertices) x[v] = X[seg[v]];
  }

  L.coordinates = coordinates;
};
