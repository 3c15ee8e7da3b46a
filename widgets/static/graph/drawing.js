// passlens graph component, part `drawing`: drawing the placed graph as SVG (nodes, group
// boxes, frames of open groups, edges with their labels), a drawn state kept for a revisit, and
// the legend. Owns what is drawn: its placement (`draw`), the SVG group of each box (`boxes`),
// the model drawn (`drawn`) and the time it took (`drawMs`). The parts above it that act on a
// new drawing (marks, minimap, overview, view) subscribe with onDrawn(f) (`last`: after the
// others, as the view's transform).
(function () {
"use strict";
PasslensGraphParts.part({
  name: "drawing",
  needs: ["base", "dom", "sides", "shown", "place"],
  state: { draw: null, boxes: null, drawn: null, drawMs: 0 },
  make({ base, dom, shown, place }, st) {
    const { TITLE, LINE, EDGE, PADX, PADY, LINE_H, cut, svg, h, textWidth } = base;
    const { el, me, vp, legend } = dom;
    const { groupLines, nodeLines, plain, statusOf } = shown;
    const { layoutAll, ready } = place;
    const listeners = [], lastListeners = [];
    function onDrawn(f, last) { (last ? lastListeners : listeners).push(f); }
    function errColor(e) {
      const t = Math.max(0, Math.min(1, (Math.log10(Math.max(e, 1e-9)) + 7) / 6)); // 1e-7 -> 0, 1e-1 -> 1
      return `hsl(${(480 - 180 * t) % 360},75%,${74 - 22 * t}%)`; // green, yellow, orange, magenta
    }
    function drawText(parent, x, y, text, cls) { const t = svg("text", { x, y, class: cls }, parent); t.textContent = text; return t; }
    function drawNode(m, i, r) {
      const n = m.p.nodes[i], s = statusOf(m, i);
      const cls = ["plg-n", "plg-k-" + n.k];
      if (s) cls.push("plg-s-" + s);
      if (n.bad && !plain()) cls.push("plg-bad");
      if (n.opq) cls.push("plg-opaque");
      const g = svg("g", { class: cls.join(" "), "data-node-id": n.id, "data-i": i, transform: `translate(${r.x},${r.y})` }, layer);
      const fill = st.err ? (n.err !== undefined ? errColor(n.err) : "#f5f5f5") : null;
      let shape;
      if (n.k === "weight" || n.k === "param") {
        const e = 5, w = r.w, hh = r.h;
        shape = svg("path", { class: "plg-shape", d: `M0,${e} A${w / 2},${e} 0 0 1 ${w},${e} L${w},${hh - e} A${w / 2},${e} 0 0 1 0,${hh - e} Z M0,${e} A${w / 2},${e} 0 0 0 ${w},${e}` }, g);
      } else if (n.k === "input" || n.k === "output") {
        shape = svg("rect", { class: "plg-shape", width: r.w, height: r.h, rx: Math.min(r.h / 2, 16) }, g);
      } else {
        shape = svg("rect", { class: "plg-shape", width: r.w, height: r.h, rx: 4 }, g);
      }
      if (fill) shape.style.fill = fill;
      const t = nodeLines(m, i);
      let y = PADY + TITLE - 1 + (n.k === "weight" || n.k === "param" ? 6 : 0);
      drawText(g, r.w / 2, y, t.title, "plg-title");
      for (const l of t.lines) { y += LINE_H; drawText(g, r.w / 2, y, l, "plg-sub"); }
      for (const l of t.w) { y += LINE_H; drawText(g, r.w / 2, y, l, "plg-sub plg-wline"); }
      if (n.mark && !plain()) {
        y += LINE_H + 2;
        const text = cut(n.mark, 34), tw = Math.min(textWidth(text, LINE, true) + 10, r.w - 4);
        svg("rect", { class: "plg-mark", x: r.w / 2 - tw / 2, y: y - LINE + 1, width: tw, height: LINE_H + 1, rx: 7 }, g);
        drawText(g, r.w / 2, y + 1, text, "plg-mark-text");
      }
      const title = svg("title", null, g); title.textContent = n.opq ? n.id + "\nopaque: run by " + n.opq + ", no converter" : n.id;
      return g;
    }
    function drawGroupBox(m, gi, r) {
      const c = m.p.groups[gi], t = groupLines(m, gi);
      const cls = ["plg-n", "plg-group"];
      if (!plain() && c.ch) { // a group whose nodes only moved (fuse-ops) is not a change
        const real = Object.keys(c.ch).some((k) => k !== "moved");
        cls.push(c.ch.failed ? "plg-s-failed" : real ? "plg-s-changed" : "plg-s-moved");
      }
      if (!plain() && c.bad) cls.push("plg-bad");
      const g = svg("g", { class: cls.join(" "), "data-node-id": "group:" + c.id, "data-group": c.id, "data-gi": gi, transform: `translate(${r.x},${r.y})` }, layer);
      svg("rect", { class: "plg-shape plg-stack", x: 4, y: 4, width: r.w, height: r.h, rx: 5 }, g);
      const shape = svg("rect", { class: "plg-shape", width: r.w, height: r.h, rx: 5 }, g);
      if (st.err && m.hasErr) shape.style.fill = m.errMax[gi] > 0 ? errColor(m.errMax[gi]) : "#f5f5f5";
      let y = PADY + TITLE - 1;
      drawText(g, PADX, y, "⊞ " + t.title, "plg-title plg-left");
      for (const l of t.lines) { y += LINE_H; drawText(g, PADX, y, l, "plg-sub plg-left"); }
      if (t.marks) { y += LINE_H; drawText(g, PADX, y, t.marks, "plg-sub plg-left plg-marks"); }
      const title = svg("title", null, g); title.textContent = (c.id || "") + " — double-click to expand";
      return g;
    }
    function drawFrame(m, f) {
      const gi = f.b - m.N, c = m.p.groups[gi];
      const g = svg("g", { class: "plg-frame" + (c.k === "function" ? " plg-fn" : ""), "data-group": c.id, "data-gi": gi }, layer);
      svg("rect", { x: f.x, y: f.y, width: f.w, height: f.h, rx: 6 }, g);
      const label = drawText(g, f.x + 8, f.y + 16, "⊟ " + cut(c.label || c.id, 60), "plg-frame-label");
      label.setAttribute("data-group", c.id);
      const title = svg("title", null, g); title.textContent = (c.id || "") + " — double-click to collapse";
    }
    function curve(pts) {
      let d = `M${pts[0][0]},${pts[0][1]}`;
      for (let k = 1; k < pts.length; k++) {
        const [x0, y0] = pts[k - 1], [x1, y1] = pts[k], dy = (y1 - y0) / 2;
        d += ` C${x0},${y0 + dy} ${x1},${y1 - dy} ${x1},${y1}`;
      }
      return d;
    }
    function* drawEdges(m, D, edgeLayer) { // (yields after each edge: drawn in chunks, draw())
      const labelLayer = svg("g", { class: "plg-elabels" }, edgeLayer);
      // edge labels kept apart: a grid of the rectangles taken (a label that would cover
      // another goes left of its edge, then a line lower; one already drawn there is not repeated)
      const grid = new Map(), CW = 120, CH = 20;
      const cells = (r, f) => { for (let i = Math.floor(r.x / CW); i <= Math.floor((r.x + r.w) / CW); i++) for (let j = Math.floor(r.y / CH); j <= Math.floor((r.y + r.h) / CH); j++) f(i + ":" + j); };
      const taken = (r) => { let hit = null; cells(r, (k) => { for (const o of grid.get(k) || []) if (r.x < o.x + o.w && o.x < r.x + r.w && r.y < o.y + o.h && o.y < r.y + r.h) hit = hit || o; }); return hit; };
      const take = (r) => cells(r, (k) => { let l = grid.get(k); if (!l) grid.set(k, (l = [])); l.push(r); });
      function placeLabel(x, y, text) {
        const w = textWidth(text, EDGE) + 2, h = EDGE + 2;
        for (const dy of [0, LINE_H]) {
          for (const left of [false, true]) {
            const r = { x: left ? x - 5 - w : x + 5, y: y + dy - EDGE, w, h, text };
            const o = taken(r);
            if (o && o.text === text && Math.abs(o.x - r.x) < 1 && Math.abs(o.y - r.y) < 1) return null; // the same label
            if (!o) { take(r); return { x: left ? x - 5 : x + 5, y: y + dy, anchor: left ? "end" : "start" }; }
          }
        }
        return { x: x + 5, y, anchor: "start" };
      }
      for (const rec of D.lev.merged.values()) {
        const A = D.boxes.get(rec.a), B = D.boxes.get(rec.b);
        if (!A || !B) continue;
        const pts = [[A.x + A.w / 2, A.y + A.h]];
        const via = (g, key) => { // the interior points of a route inside group g
          const route = D.layouts(g).routes.get(key), o = D.origin.get(g) || { x: 0, y: 0 };
          if (route) for (const p of route.slice(1, -1)) pts.push([o.x + p[0], o.y + p[1]]);
        };
        let from = rec.a;
        for (const X of rec.exits) { // out of each open group through its OUT port
          const L = D.layouts(X), o = D.origin.get(X), f = D.frameOf.get(X);
          via(X, from + ">OUT");
          if (L.OUT && o && f) { pts.push([o.x + L.OUT[0], o.y + L.OUT[1]]); pts.push([o.x + L.OUT[0], f.y + f.h]); }
          from = m.N + X;
        }
        const into = rec.entries.length ? m.N + rec.entries[0] : rec.b;
        via(rec.lca, from + ">" + into);
        rec.entries.forEach((Y, k) => { // into each open group through its IN port
          const L = D.layouts(Y), o = D.origin.get(Y), f = D.frameOf.get(Y);
          if (L.IN && o && f) { pts.push([o.x + L.IN[0], f.y]); pts.push([o.x + L.IN[0], o.y + L.IN[1]]); }
          via(Y, "IN>" + (k + 1 < rec.entries.length ? m.N + rec.entries[k + 1] : rec.b));
        });
        pts.push([B.x + B.w / 2, B.y]);
        if (pts.length === 2 && B.y < A.y + A.h) { pts[0] = [A.x + A.w / 2, A.y]; pts[1] = [B.x + B.w / 2, B.y + B.h]; } // upward
        const es = rec.edges.map((k) => m.p.edges[k]);
        const isGhost = es.every((e) => e[3] & 1), shape = !plain() && es.some((e) => e[3] & 2);
        const cls = "plg-e" + (isGhost && !plain() ? " plg-e-ghost" : "") + (shape ? " plg-e-shape" : "");
        const mk = isGhost && !plain() ? "r" : shape ? "s" : "a";
        const path = svg("path", { class: cls, d: curve(pts), "marker-end": `url(#${me}-${mk})`, "data-src": m.p.nodes[es[0][0]].id, "data-dst": m.p.nodes[es[0][1]].id }, edgeLayer);
        path.dataset.a = rec.a; path.dataset.b = rec.b;
        const srcs = new Set(es.map((e) => e[0]));
        const label = srcs.size === 1 ? m.p.types[es[0][2]] : srcs.size + " values";
        if (label) {
          const text = cut(label, 40), at = placeLabel(pts[0][0], pts[0][1] + 15, text);
          if (at) {
            const t = drawText(labelLayer, at.x, at.y, text, "plg-elabel" + (shape ? " plg-e-shape" : "") + (isGhost && !plain() ? " plg-e-ghost" : ""));
            t.setAttribute("text-anchor", at.anchor);
          }
        }
        yield;
      }
    }
    // a drawn state (its SVG group, layout, boxes and minimap) is kept for a revisit
    let layer = vp;
    const drawnStates = new Map();
    function stateKey(m) {
      return m.uid + ":" + m.epoch + ":" + m.version[0] + ":" + (st.mode === "before" ? "b" + st.afterUid : plain() ? "p" : "d") + ":" + (st.err ? 1 : 0);
    }
    // the SVG of a drawing, an element at a time (frames, edges, boxes; yields after each)
    function* build(m, D, boxes) {
      for (const f of D.frames) { drawFrame(m, f); yield; }
      yield* drawEdges(m, D, svg("g", { class: "plg-edges" }, layer));
      for (const [b, r] of D.boxes) { boxes.set(b, b < m.N ? drawNode(m, b, r) : drawGroupBox(m, b - m.N, r)); yield; }
    }
    // a kept drawing's elements moved into dst (a group of many children re-made empty and
    // filled in turn, so that the browser styles a chunk at a time; yields after each move)
    function* reattach(src, dst) {
      for (const n of Array.from(src.childNodes)) {
        if (n.childNodes.length > 64) { const copy = n.cloneNode(false); dst.appendChild(copy); yield* reattach(n, copy); }
        else { dst.appendChild(n); yield; }
      }
    }
    // A drawing of more than CHUNK elements is built (or a kept one put back) in chunks of
    // CHUNK elements or BUDGET ms, a task apiece, so that the page answers meanwhile: into a
    // group hidden by a clip (not by visibility: showing that would restyle every element)
    // beside the drawing shown, which stays shown (and st.draw / st.boxes with it) until the
    // last chunk. el.dataset.drawing is "chunks" meanwhile, and el.dataset.layout "pending".
    const CHUNK = 1500, BUDGET = 30;
    let job = null;
    function stopJob() {
      if (!job) return;
      job.g.remove();
      job = null;
      delete el.dataset.drawing;
    }
    function runChunk(j) {
      if (job !== j) return; // another drawing was asked for meanwhile
      const t0 = performance.now();
      layer = j.g;
      let done = false;
      try {
        for (let k = 0; k < CHUNK; k++) {
          if (j.it.next().done) { done = true; break; }
          if ((k & 63) === 63 && performance.now() - t0 > BUDGET) break;
        }
      } finally { layer = vp; }
      j.ms += performance.now() - t0;
      j.chunks++;
      if (!done) { setTimeout(() => runChunk(j), 0); return; }
      job = null;
      j.g.style.clipPath = "";
      show(j.m, j.key, { g: j.g, D: j.D, boxes: j.boxes, mini: j.mini }, j.ms, j.chunks);
    }
    // draw the state shown; `then` runs once it is drawn: at once, or when the layouts it
    // needs are made (off the page's thread: part `place`, ready) and, for a big drawing,
    // once its last chunk is drawn
    const thens = [];
    function draw(then) {
      if (then) thens.push(then);
      const m = st.m;
      if (!m) { stopJob(); return; }
      const t0 = performance.now();
      const key = stateKey(m);
      if (job && job.key === key) return; // being drawn: `then` runs after its last chunk
      stopJob();
      if (!ready(m, drawnStates.has(key), () => draw())) return;
      const hit = drawnStates.get(key), big = (D) => D.frames.length + D.lev.merged.size + D.boxes.size > CHUNK;
      if (hit) drawnStates.delete(key); // (most recent last)
      if (hit && (!big(hit.D) || hit.g.parentNode === vp)) { show(m, key, hit, performance.now() - t0, 0); return; } // (small, or shown now)
      const D = hit ? hit.D : layoutAll(m), boxes = hit ? hit.boxes : new Map();
      const g = hit ? hit.g.cloneNode(false) : svg("g", { class: "plg-drawing" });
      const it = hit ? reattach(hit.g, g) : build(m, D, boxes);
      if (big(D)) {
        job = { m, key, D, g, boxes, it, mini: hit ? hit.mini : null, ms: performance.now() - t0, chunks: 0 };
        g.style.clipPath = "inset(50%)"; // (laid out by the browser a chunk at a time, shown at the end)
        vp.appendChild(g);
        el.dataset.layout = "pending";
        el.dataset.drawing = "chunks";
        runChunk(job);
        return;
      }
      layer = g;
      try { while (!it.next().done); } finally { layer = vp; }
      show(m, key, { g, D, boxes, mini: null }, performance.now() - t0, 0);
    }
    // the drawing `hit` of state `key` shown (ms: the time it took to draw)
    function show(m, key, hit, ms, chunks) {
      drawnStates.set(key, hit);
      if (drawnStates.size > 12) drawnStates.delete(drawnStates.keys().next().value);
      if (hit.g.parentNode === vp) { // drawn in chunks beside the drawing shown: kept in place (not restyled)
        for (const n of Array.from(vp.childNodes)) if (n !== hit.g) n.remove();
      } else {
        vp.textContent = "";
        vp.appendChild(hit.g);
      }
      st.draw = hit.D; st.boxes = hit.boxes; st.drawn = m;
      st.drawMs = ms;
      el.dataset.drawMs = st.drawMs.toFixed(1);
      el.dataset.drawChunks = chunks;
      el.dataset.boxes = hit.D.boxes.size;
      delete el.dataset.drawing;
      if (el.dataset.layout === "pending") el.dataset.layout = "placed";
      for (const f of listeners) f(hit);
      for (const f of lastListeners) f(hit);
      for (const f of thens.splice(0)) f();
    }
    // ---- legend ----------------------------------------------------------------------------------
    // the legend names what the side shown has (no "moved" or "opaque" where there is none)
    const LEGEND = [["plg-s-added", "added"], ["plg-s-changed", "changed"], ["plg-s-moved", "moved (same values)"], ["plg-s-removed", "removed (ghost)"], ["plg-s-failed", "failed"], ["plg-bad", "finding"], ["plg-k-weight", "weight"], ["plg-opaque", "opaque (no converter)"], ["plg-group", "group"]];
    let legendFor = null;
    function kindsOf(m) {
      const have = new Set();
      if (!m) return new Set(LEGEND.map(([cls]) => cls));
      for (let i = 0; i < m.N; i++) {
        const n = m.p.nodes[i], s = statusOf(m, i);
        if (s) have.add("plg-s-" + s);
        if (n.bad && !plain()) have.add("plg-bad");
        if (n.k === "weight") have.add("plg-k-weight");
        if (n.opq) have.add("plg-opaque");
      }
      for (let g = 1; g < m.G; g++) {
        const c = m.p.groups[g];
        have.add("plg-group");
        if (c.ch && !plain()) { if (c.ch.moved) have.add("plg-s-moved"); if (c.ch.failed) have.add("plg-s-failed"); }
        if (c.bad && !plain()) have.add("plg-bad");
      }
      return have;
    }
    function legendNow() { // after a drawing: again when the side shown or its colours changed
      const key = st.m ? [st.m, st.mode, plain()] : null;
      if (legendFor && key && legendFor.every((x, k) => x === key[k])) return;
      legendFor = key;
      renderLegend();
    }
    function renderLegend() {
      legend.textContent = "";
      const have = kindsOf(st.drawn === st.m ? st.m : null);
      for (const [cls, label] of LEGEND) {
        if (!have.has(cls)) continue;
        // the step before: what this step removes is drawn where it is, not as a ghost
        const text = cls === "plg-s-removed" && st.mode === "before" ? "removed by the step" : label;
        const it = h("span", "plg-lg-item", legend);
        h("span", "plg-lg-sw " + cls, it);
        h("span", "", it, text);
      }
      h("div", "plg-lg-keys", legend, "n / p change · / search · f fit · o overview · b before/after · drag to pan, wheel to zoom");
      if (st.err) { // the error overlay's scale
        const row = h("div", "plg-lg-err", legend);
        h("span", "", row, "error (max rel) ");
        for (const e of [1e-7, 1e-5, 1e-3, 1e-1]) { const sw = h("span", "plg-lg-sw", row); sw.style.background = errColor(e); h("span", "", row, " " + e.toExponential(0) + " "); }
        const none = h("span", "plg-lg-sw", row); none.style.background = "#f5f5f5"; h("span", "", row, " no error reported (within tolerance, or not compared)");
      }
    }
    onDrawn(legendNow);
    return { errColor, drawText, draw, renderLegend, curve, onDrawn, stop: stopJob };
  },
});
})();
