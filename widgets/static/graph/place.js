// passlens graph component, part `place`: where the boxes go. The layout of each open group
// (the engine, static/graph_layout.js) cached by the version of its subtree, and the whole
// drawing's placement: boxes, frames of open groups, and each merged edge's route through the
// groups. The layouts a drawing lacks are made in a batch off the page's thread (ready(),
// through part `worker`) before it is drawn. Owns no state.
(function () {
"use strict";
PasslensGraphParts.part({
  name: "place",
  needs: ["base", "dom", "engine", "sides", "expansion", "shown", "worker"],
  make({ base, dom, engine, expansion, shown, worker }, st) {
    const { GPAD, GHEAD } = base;
    const { el } = dom;
    const { isOpen } = expansion;
    const { boxSize, groupShown, inlined, parentOf, plain, rep, shownNode } = shown;
    // ---- layout: a group at a time, cached by the version of its subtree -------------------
    function levelEdges(m) {
      const byLevel = new Map(), chain = (box) => { const out = []; for (let g = parentOf(m, box); g >= 0; g = g > 0 ? m.p.groups[g].p : -1) out.push(g); return out; };
      const merged = new Map();
      for (let k = 0; k < m.p.edges.length; k++) {
        const e = m.p.edges[k];
        if (inlined(m, e[0])) continue;
        if (plain() && (e[3] & 1)) continue;
        if (!shownNode(m, e[0]) || !shownNode(m, e[1])) continue;
        const a = rep(m, e[0]), b = rep(m, e[1]);
        if (a === b) continue;
        const key = a + ">" + b;
        let rec = merged.get(key);
        if (!rec) {
          const ca = chain(a), cb = chain(b), setB = new Set(cb);
          const lca = ca.find((g) => setB.has(g));
          const below = (box, c) => { const i = c.indexOf(lca); return i <= 0 ? box : m.N + c[i - 1]; };
          rec = { a, b, lca, ca: below(a, ca), cb: below(b, cb), edges: [], exits: [], entries: [] };
          merged.set(key, rec);
          const at = (g) => { let l = byLevel.get(g); if (!l) { l = { pairs: [], exits: [], entries: [] }; byLevel.set(g, l); } return l; };
          at(lca).pairs.push(rec);
          // an edge leaving an open group goes through its OUT port, one entering through IN,
          // so that inside each group the layout routes it around the boxes
          for (let k = 0; k < ca.length && ca[k] !== lca; k++) { rec.exits.push(ca[k]); at(ca[k]).exits.push(k === 0 ? a : m.N + ca[k - 1]); }
          for (let k = 0; k < cb.length && cb[k] !== lca; k++) { rec.entries.push(cb[k]); at(cb[k]).entries.push(k === 0 ? b : m.N + cb[k - 1]); }
          rec.entries.reverse();
        }
        rec.edges.push(k);
      }
      return { byLevel, merged };
    }
    // the key of group g's layout in the cache: the version of its subtree and the side shown
    const layoutKey = (m, g) => g + ":" + m.epoch + ":" + m.version[g] + ":" + (st.mode === "before" ? "b" + st.afterUid : plain() ? "p" : "d");
    // the edges of the drawing of m as it is now, computed once for the check and the drawing
    let levMemo = null;
    function levelsOf(m) {
      const key = m.uid + "|" + layoutKey(m, 0);
      if (!levMemo || levMemo.key !== key) levMemo = { key, lev: levelEdges(m) };
      return levMemo.lev;
    }
    const framed = (L) => ({ w: L.w + 2 * GPAD, h: L.h + GPAD + GHEAD }); // an open group's box
    // what the layout of group g is given: its children's boxes (an open child sized by
    // sizeOf(child group)), the edges between them and the group's IN / OUT ports
    function groupInput(m, g, lev, sizeOf) {
      const children = [];
      for (const i of m.direct[g]) if (shownNode(m, i) && !inlined(m, i)) children.push(i);
      for (const c of m.kids[g]) if (groupShown(m, c)) children.push(m.N + c);
      const index = new Map(children.map((b, k) => [b, k]));
      const sizes = children.map((b) => (b >= m.N && isOpen(b - m.N) ? sizeOf(b - m.N) : boxSize(m, b)));
      const pairs = [], pairKeys = new Set();
      const level = lev.byLevel.get(g) || { pairs: [], exits: [], entries: [] };
      const add = (s, t) => { if (s === undefined || t === undefined || s === t) return; const pk = s + ">" + t; if (!pairKeys.has(pk)) { pairKeys.add(pk); pairs.push([s, t]); } };
      for (const rec of level.pairs) add(index.get(rec.ca), index.get(rec.cb));
      const first = [], last = [];
      let IN = -1, OUT = -1;
      if (level.entries.length) { IN = sizes.length; sizes.push({ w: 2, h: 2 }); first.push(IN); }
      if (level.exits.length) { OUT = sizes.length; sizes.push({ w: 2, h: 2 }); last.push(OUT); }
      for (const c of level.entries) add(IN, index.get(c));
      for (const c of level.exits) add(index.get(c), OUT);
      return { children, IN, OUT, job: { nodes: sizes, edges: pairs, rankSep: 46, nodeSep: 28, edgeSep: 14, margin: 0, first, last } };
    }
    // a group's layout from the engine's result `out` (sizes: its boxes' sizes)
    function groupLayout(input, sizes, out) {
      const { children, IN, OUT } = input;
      const pos = new Map();
      children.forEach((b, k) => pos.set(b, { x: out.x[k] - sizes[k].w / 2, y: out.y[k] - sizes[k].h / 2, w: sizes[k].w, h: sizes[k].h }));
      const routes = new Map(), name = (k) => (k === IN ? "IN" : k === OUT ? "OUT" : children[k]);
      for (const r of out.edges) routes.set(name(r.s) + ">" + name(r.t), r.points);
      const port = (k) => (k < 0 ? null : [out.x[k], out.y[k]]);
      return { w: Math.max(out.width, 60), h: Math.max(out.height, 30), pos, routes, IN: port(IN), OUT: port(OUT) };
    }
    // group g's layout: from the cache, else laid out here with its open children first (a
    // stack of its own, children before parents: no recursion over the groups' nesting)
    function layoutGroup(m, g, lev) {
      const hit = m.cache.get(layoutKey(m, g));
      if (hit) return hit;
      const order = [], stack = [g], made = new Map();
      while (stack.length) { // the open groups under g whose layouts are missing, parents first
        const k = stack.pop();
        order.push(k);
        for (const c of m.kids[k]) {
          if (!isOpen(c) || !groupShown(m, c)) continue;
          const L = m.cache.get(layoutKey(m, c));
          if (L) made.set(c, L); else stack.push(c); // (kept here: the cache may be cleared)
        }
      }
      for (let j = order.length - 1; j >= 0; j--) { // children before their parents
        const k = order[j];
        const sizeOf = (c) => framed(made.get(c));
        const input = groupInput(m, k, lev, sizeOf);
        const L = groupLayout(input, input.job.nodes, engine.layout(input.job));
        made.set(k, L);
        if (m.cache.size > 4000) m.cache.clear();
        m.cache.set(layoutKey(m, k), L);
      }
      return made.get(g);
    }
    // The layouts the drawing of m needs and the cache lacks, children first, as a batch for
    // the engine (an open child not in the cache is sized after its own job's result).
    function missing(m, lev) {
      const jobs = [], inputs = [], jobOf = new Map();
      const ref = (k) => ({ job: jobOf.get(k), minW: 60, minH: 30, padW: 2 * GPAD, padH: GPAD + GHEAD });
      // the open groups children first (post-order), with a stack of its own (no recursion)
      const order = [], stack = [0];
      while (stack.length) {
        const g = stack.pop();
        order.push(g);
        const kids = m.kids[g];
        for (let j = kids.length - 1; j >= 0; j--) if (isOpen(kids[j]) && groupShown(m, kids[j])) stack.push(kids[j]);
      }
      for (let j = order.length - 1; j >= 0; j--) {
        const g = order[j], key = layoutKey(m, g);
        if (m.cache.has(key)) continue;
        const input = groupInput(m, g, lev, (k) => { const L = m.cache.get(layoutKey(m, k)); return L ? framed(L) : ref(k); });
        jobOf.set(g, jobs.length);
        jobs.push(input.job);
        inputs.push({ key, input });
      }
      return { jobs, inputs };
    }
    // Whether the drawing of m can be made now (`drawn`: it is kept drawn, or every layout it
    // needs is in the cache). Else its layouts are asked of the engine (in a Web Worker where
    // one could be made, part `worker`) and `proceed` is called once they are in the
    // cache, unless another drawing was asked for in the meantime. el.dataset.layout is
    // "pending" while the engine works (and a big drawing's chunks are drawn), "placed" after.
    let pending = null;
    function ready(m, drawn, proceed) {
      const batch = drawn ? null : missing(m, levelsOf(m));
      const settle = () => { pending = null; }; // (el.dataset.layout "placed": once drawn, part `drawing`)
      if (!batch || !batch.jobs.length) { settle(); return true; }
      const token = pending = {};
      let waiting = false, now = false;
      worker.client.run(batch.jobs, (results, where) => {
        el.dataset.layoutIn = where; // (for the tests: "worker", or "page" where none could be made)
        const done = [];
        if (m.cache.size + results.length > 4000) m.cache.clear();
        batch.inputs.forEach(({ key, input }, k) => {
          const sizes = input.job.nodes.map((s) => (s.job === undefined ? s : framed(done[s.job])));
          done.push(groupLayout(input, sizes, results[k]));
          m.cache.set(key, done[k]);
        });
        if (!waiting) { now = true; return; } // laid out on this thread, at once
        if (pending !== token) return;
        settle();
        proceed();
      }, (message) => { // over the time limit: the drawing shown stays, the note says why
        if (pending !== token) return;
        settle();
        el.dataset.layout = "timeout";
        dom.say(message);
      }, (done, total) => { el.dataset.layoutDone = done + "/" + total; });
      if (now) { settle(); return true; }
      waiting = true;
      el.dataset.layout = "pending";
      return false;
    }
    function layoutAll(m) {
      const lev = levelsOf(m);
      const top = layoutGroup(m, 0, lev);
      const boxes = new Map(), frames = [];
      const todo = [[0, 0, 0]]; // [group, x, y] to place: a stack, not recursion
      while (todo.length) {
        const [g, ox, oy] = todo.pop();
        const L = layoutGroup(m, g, lev);
        const inner = [];
        for (const [b, r] of L.pos) {
          const a = { x: ox + r.x, y: oy + r.y, w: r.w, h: r.h, g: g };
          if (b >= m.N && isOpen(b - m.N)) { frames.push({ b, ...a }); inner.push([b - m.N, a.x + GPAD, a.y + GHEAD]); }
          else boxes.set(b, a);
        }
        for (let j = inner.length - 1; j >= 0; j--) todo.push(inner[j]);
      }
      const origin = new Map([[0, { x: 0, y: 0 }]]), frameOf = new Map();
      for (const f of frames) { origin.set(f.b - m.N, { x: f.x + GPAD, y: f.y + GHEAD }); frameOf.set(f.b - m.N, f); }
      return { w: top.w, h: top.h, boxes, frames, frameOf, lev, origin, layouts: (g) => layoutGroup(m, g, lev) };
    }
    // the layout asked last no longer wanted (the component is destroyed)
    function stop() { pending = null; worker.client.close(); }
    return { levelEdges, layoutGroup, layoutAll, ready, stop };
  },
});
})();
