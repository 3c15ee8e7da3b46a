// passlens graph component: one step's graph (a payload from widgets/graph_data.py), laid out in
// the browser a module group at a time (PasslensLayout, static/graph_layout.js), drawn as SVG.
// Shared by the HTML report, the Jupyter GraphView (anywidget) and the Panel app.
//
//   const g = PasslensGraph.create(el, { onSelect(id), onCollapsed(ids), onMode(mode) });
//   g.setData(after, before, o)   // payloads; `before` (optional) is the previous step's, or
//                                 // o.loadBefore() gives a promise of it when first shown
//   g.select(id) / g.locate(id) / g.expand(id) / g.collapse(id) / g.expandAll() / g.collapseAll()
//   g.search(q) / g.nextHit(d) / g.nextChange(d) / g.fit() / g.setMode("after" | "before")
//
// It opens readable (labels 13 px at zoom 1) and centred on the payload's focus (the first
// finding or change); n / p go through the changes, "/" searches (substring, or /regex/) over
// every node including those inside collapsed groups; a double-click expands or collapses a
// group. Text from the model is only ever set as textContent.
const PasslensGraph = (function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const FONT = 'system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif';
  const TITLE = 13, LINE = 11, EDGE = 10;      // font sizes at zoom 1
  const PADX = 10, PADY = 6, TITLE_H = 17, LINE_H = 14;
  const GPAD = 16, GHEAD = 24;                   // an expanded group's frame
  const READABLE = 8;                            // px: smaller text is not drawn
  const MAXLABEL = 44;
  let uid = 0;

  // ----- small helpers ---------------------------------------------------------------------
  const cut = (s, n) => { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; };
  function fmtBytes(n) {
    n = Number(n); const a = Math.abs(n);
    for (const [u, s] of [["GB", 1e9], ["MB", 1e6], ["kB", 1e3]]) if (a >= s) return (n / s).toFixed(1) + " " + u; // as format_bytes in Python
    return n + " B";
  }
  const signedBytes = (n) => (n > 0 ? "+" : "-") + fmtBytes(Math.abs(n)); // as fmt.signed_bytes
  function fmtNum(v) {
    if (typeof v !== "number") return String(v);
    if (v === 0 || !isFinite(v)) return String(v);
    const a = Math.abs(v);
    if (a >= 1e-4 && a < 1e6) return String(Number(v.toPrecision(5)));
    return v.toExponential(3);
  }
  function svg(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function h(tag, cls, parent, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  let ctx = null;
  const widths = new Map();
  function textWidth(s, px, bold) {
    const key = (bold ? "b" : "") + px + "|" + s;
    let w = widths.get(key);
    if (w !== undefined) return w;
    if (ctx === null) { try { ctx = document.createElement("canvas").getContext("2d"); } catch (e) { ctx = false; } }
    if (ctx) { ctx.font = (bold ? "600 " : "") + px + "px " + FONT; w = ctx.measureText(s).width; }
    else w = s.length * px * 0.6;
    if (widths.size > 50000) widths.clear();
    widths.set(key, w);
    return w;
  }

  // ----- a payload made ready to draw (computed once per payload) --------------------------
  function prepare(p) {
    const N = p.nodes.length, G = p.groups.length;
    const m = { p, N, G, uid: ++uid, epoch: 0, kids: [], direct: [], ins: [], outs: [], idIndex: new Map(), groupIndex: new Map(),
      depth: new Int32Array(G), cache: new Map(), version: new Int32Array(G), search: null };
    for (let g = 0; g < G; g++) { m.kids.push([]); m.direct.push([]); }
    for (let g = 1; g < G; g++) { m.kids[p.groups[g].p].push(g); m.depth[g] = m.depth[p.groups[g].p] + 1; }
    p.groups.forEach((g, i) => m.groupIndex.set(g.id, i));
    p.nodes.forEach((n, i) => {
      m.idIndex.set(n.id, i);
      m.ins.push([]); m.outs.push([]);
      m.direct[n.g].push(i); // inline weights too: drawn as a box when the before side marks them
    });
    p.edges.forEach((e, k) => { m.outs[e[0]].push(k); m.ins[e[1]].push(k); });
    m.pairOf = new Map((p.pairs || []).map(([i, id]) => [i, id]));
    m.errMax = new Float64Array(G);
    p.nodes.forEach((n) => { if (n.err !== undefined) for (let g = n.g; g >= 0; g = p.groups[g].p) m.errMax[g] = Math.max(m.errMax[g], n.err); });
    m.hasErr = p.nodes.some((n) => n.err !== undefined);
    return m;
  }
  function modulePath(m, g) {
    while (g > 0 && m.p.groups[g].k === "segment") g = m.p.groups[g].p;
    return g > 0 ? m.p.groups[g].id : "";
  }
  function searchText(m, i) {
    if (!m.search) m.search = [];
    let s = m.search[i];
    if (s === undefined) {
      const n = m.p.nodes[i], d = (m.p.details || [])[i] || {};
      const prov = d.provenance ? Object.values(d.provenance).join(" ") : "";
      s = [n.id, n.t, (n.s || []).join(" "), (n.w || []).join(" "), modulePath(m, n.g), d.name || "", prov, m.p.types[n.ty] || ""].join("\n").toLowerCase();
      m.search[i] = s;
    }
    return s;
  }

  // ----- the component -------------------------------------------------------------------
  function create(el, opts) {
    opts = opts || {};
    const me = "plg" + (++uid);
    el.classList.add("plg");
    el.tabIndex = 0;
    el.innerHTML = "";
    const bar = h("div", "plg-bar", el);
    const searchBox = h("input", "plg-search", bar);
    searchBox.type = "search"; searchBox.placeholder = "search names, ops, shapes… (/regex/)";
    searchBox.setAttribute("aria-label", "search the graph");
    const hitInfo = h("span", "plg-hits", bar);
    const btn = (label, title, cls) => { const b = h("button", "plg-btn " + (cls || ""), bar, label); b.title = title; b.type = "button"; return b; };
    const prevHit = btn("‹", "previous hit (Shift+Enter)", "plg-prev-hit"), nextHitB = btn("›", "next hit (Enter)", "plg-next-hit");
    h("span", "plg-sep", bar);
    const prevChange = btn("◀ change", "previous change (p)", "plg-prev-change");
    const changeInfo = h("span", "plg-change-info", bar);
    const nextChangeB = btn("change ▶", "next change (n)", "plg-next-change");
    h("span", "plg-sep", bar);
    const expandAllB = btn("expand all", "open every group", "plg-expand-all");
    const collapseAllB = btn("collapse all", "close every group", "plg-collapse-all");
    const fitB = btn("fit", "show the whole graph (f)", "plg-fit");
    const modeBox = h("span", "plg-mode", bar);
    const beforeB = h("button", "plg-btn plg-before", modeBox, "before"); beforeB.type = "button";
    const afterB = h("button", "plg-btn plg-after plg-on", modeBox, "after"); afterB.type = "button";
    beforeB.title = afterB.title = "show the graph before / after this step (b)";
    const errB = btn("errors", "colour nodes by their error against the reference", "plg-errors");
    const results = h("div", "plg-results", el);
    const body = h("div", "plg-body", el);
    const stage = h("div", "plg-stage", body);
    const root = svg("svg", { class: "plg-svg" }, stage);
    const defs = svg("defs", null, root);
    for (const [name, color] of [["a", "#607d8b"], ["r", "#9e9e9e"], ["s", "#e65100"]]) {
      const mk = svg("marker", { id: `${me}-${name}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
      svg("path", { d: "M0,0 L10,5 L0,10 z", fill: color }, mk);
    }
    const vp = svg("g", { class: "plg-vp" }, root);
    const note = h("div", "plg-note", stage);
    const crumb = h("div", "plg-crumb", stage); // the module of the node in focus
    const legend = h("div", "plg-legend", stage);
    const mini = h("canvas", "plg-mini", stage);
    mini.width = 200; mini.height = 130;
    const panel = h("aside", "plg-details", body);

    const st = { after: null, before: null, mode: "after", m: null, expanded: null, view: { x: 0, y: 0, k: 1 },
      sel: -1, plainAfter: false, hits: [], hit: -1, change: -1, err: false, boxes: null, draw: null, miniImg: null, query: "" };
    const expandedOf = new Map(); // model -> Set of expanded group indices

    // ---- which boxes are shown ------------------------------------------------------------
    const ghost = (m, i) => m.p.nodes[i].st === "removed";
    // a weight drawn as a line of its reader, unless the before side marks it (removed, changed)
    const inlined = (m, i) => m.p.nodes[i].inl !== undefined && !(st.mode === "before" && st.beforeStatus.has(i));
    const plain = () => st.mode === "before" || st.plainAfter;
    function shownNode(m, i) { return !(plain() && ghost(m, i)); }
    function groupShown(m, g) {
      if (!plain()) return true;
      const c = m.p.groups[g];
      return (c.n || 0) > 0;
    }
    function rep(m, i) { // the box showing node i: itself, or its highest collapsed group
      if (inlined(m, i)) i = m.p.nodes[i].inl;
      let box = i;
      for (let g = m.p.nodes[i].g; g > 0; g = m.p.groups[g].p) if (!st.expanded.has(g)) box = m.N + g;
      return box;
    }
    const parentOf = (m, box) => box < m.N ? m.p.nodes[box].g : m.p.groups[box - m.N].p;
    function bump(m, g) { for (; g >= 0; g = g > 0 ? m.p.groups[g].p : -1) m.version[g]++; }

    // ---- sizes ----------------------------------------------------------------------------
    function nodeLines(m, i) {
      const n = m.p.nodes[i];
      const lines = (n.s || []).map((t) => cut(t, MAXLABEL));
      const w = (n.w || []).filter((t, k) => !n.wi || k >= n.wi.length || inlined(m, n.wi[k])).map((t) => "▪ " + cut(t, MAXLABEL));
      return { title: cut(n.t, MAXLABEL), lines, w };
    }
    function groupLines(m, g) {
      const c = m.p.groups[g], lines = [];
      lines.push(c.ops ? cut(c.ops, MAXLABEL) : (c.n || 0) + " nodes");
      if (c.b || c.db) lines.push("params " + fmtBytes(c.b || 0) + (c.db ? " (" + signedBytes(c.db) + ")" : ""));
      let marks = "";
      if (!plain() && c.ch) marks = [["added", "+"], ["changed", "~"], ["removed", "−"], ["failed", "!"]].filter(([k]) => c.ch[k]).map(([k, s]) => s + c.ch[k] + " " + k).join("  ");
      return { title: cut(c.label || c.id || "(graph)", MAXLABEL), lines, marks };
    }
    function boxSize(m, box) {
      let t;
      if (box < m.N) {
        t = nodeLines(m, box);
        let w = textWidth(t.title, TITLE, true);
        for (const l of t.lines) w = Math.max(w, textWidth(l, LINE));
        for (const l of t.w) w = Math.max(w, textWidth(l, LINE));
        const n = m.p.nodes[box];
        if (n.mark) w = Math.max(w, Math.min(textWidth(cut(n.mark, 34), LINE, true) + 10, 260));
        const rows = t.lines.length + t.w.length;
        const extra = n.mark ? LINE_H + 4 : 0;
        const cyl = n.k === "weight" || n.k === "param" ? 8 : 0;
        return { w: Math.max(56, Math.ceil(w) + 2 * PADX), h: 2 * PADY + TITLE_H + rows * LINE_H + extra + cyl };
      }
      t = groupLines(m, box - m.N);
      let w = textWidth(t.title, TITLE, true) + 18;
      for (const l of t.lines) w = Math.max(w, textWidth(l, LINE));
      if (t.marks) w = Math.max(w, textWidth(t.marks, LINE));
      const rows = t.lines.length + (t.marks ? 1 : 0);
      return { w: Math.max(90, Math.ceil(w) + 2 * PADX), h: 2 * PADY + TITLE_H + rows * LINE_H + 6 };
    }

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
    function layoutGroup(m, g, lev) {
      const key = g + ":" + m.epoch + ":" + m.version[g] + ":" + (st.mode === "before" ? "b" + st.afterUid : plain() ? "p" : "d");
      let L = m.cache.get(key);
      if (L) return L;
      const children = [];
      for (const i of m.direct[g]) if (shownNode(m, i) && !inlined(m, i)) children.push(i);
      for (const c of m.kids[g]) if (groupShown(m, c)) children.push(m.N + c);
      const index = new Map(children.map((b, k) => [b, k]));
      const sizes = children.map((b) => {
        if (b >= m.N && st.expanded.has(b - m.N)) { const sub = layoutGroup(m, b - m.N, lev); return { w: sub.w + 2 * GPAD, h: sub.h + GPAD + GHEAD }; }
        return boxSize(m, b);
      });
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
      const out = PasslensLayout.layout({ nodes: sizes, edges: pairs, rankSep: 46, nodeSep: 28, edgeSep: 14, margin: 0, first, last });
      const pos = new Map();
      children.forEach((b, k) => pos.set(b, { x: out.x[k] - sizes[k].w / 2, y: out.y[k] - sizes[k].h / 2, w: sizes[k].w, h: sizes[k].h }));
      const routes = new Map(), name = (k) => (k === IN ? "IN" : k === OUT ? "OUT" : children[k]);
      for (const r of out.edges) routes.set(name(r.s) + ">" + name(r.t), r.points);
      const port = (k) => (k < 0 ? null : [out.x[k], out.y[k]]);
      L = { w: Math.max(out.width, 60), h: Math.max(out.height, 30), pos, routes, IN: port(IN), OUT: port(OUT) };
      m.cache.set(key, L);
      if (m.cache.size > 4000) m.cache.clear();
      return L;
    }
    function layoutAll(m) {
      const lev = levelEdges(m);
      const top = layoutGroup(m, 0, lev);
      const boxes = new Map(), frames = [];
      const place = (g, ox, oy) => {
        const L = layoutGroup(m, g, lev);
        for (const [b, r] of L.pos) {
          const a = { x: ox + r.x, y: oy + r.y, w: r.w, h: r.h, g: g };
          if (b >= m.N && st.expanded.has(b - m.N)) { frames.push({ b, ...a }); place(b - m.N, a.x + GPAD, a.y + GHEAD); }
          else boxes.set(b, a);
        }
      };
      place(0, 0, 0);
      const origin = new Map([[0, { x: 0, y: 0 }]]), frameOf = new Map();
      for (const f of frames) { origin.set(f.b - m.N, { x: f.x + GPAD, y: f.y + GHEAD }); frameOf.set(f.b - m.N, f); }
      return { w: top.w, h: top.h, boxes, frames, frameOf, lev, origin, layouts: (g) => layoutGroup(m, g, lev) };
    }

    // ---- drawing ----------------------------------------------------------------------------
    function statusOf(m, i) {
      if (st.mode === "before") return st.beforeStatus.get(i) || "";
      return st.plainAfter ? "" : m.p.nodes[i].st || "";
    }
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
      if (!plain() && c.ch) cls.push(c.ch.failed ? "plg-s-failed" : "plg-s-changed");
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
    function drawEdges(m, D, edgeLayer) {
      const labelLayer = svg("g", { class: "plg-elabels" }, edgeLayer);
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
          const t = drawText(labelLayer, pts[0][0] + 5, pts[0][1] + 14, cut(label, 40), "plg-elabel" + (shape ? " plg-e-shape" : "") + (isGhost && !plain() ? " plg-e-ghost" : ""));
          t.setAttribute("text-anchor", "start");
        }
      }
    }
    // a drawn state (its SVG group, layout, boxes and minimap) is kept for a revisit
    let layer = vp;
    const drawnStates = new Map();
    function stateKey(m) {
      return m.uid + ":" + m.epoch + ":" + m.version[0] + ":" + (st.mode === "before" ? "b" + st.afterUid : plain() ? "p" : "d") + ":" + (st.err ? 1 : 0);
    }
    function draw() {
      const m = st.m;
      if (!m) return;
      const t0 = performance.now();
      const key = stateKey(m);
      let hit = drawnStates.get(key);
      if (hit) drawnStates.delete(key); // most recent last
      else {
        const D = layoutAll(m);
        layer = svg("g", { class: "plg-drawing" });
        st.draw = D;
        for (const f of D.frames) drawFrame(m, f);
        drawEdges(m, D, svg("g", { class: "plg-edges" }, layer));
        const boxes = new Map();
        for (const [b, r] of D.boxes) boxes.set(b, b < m.N ? drawNode(m, b, r) : drawGroupBox(m, b - m.N, r));
        hit = { g: layer, D, boxes, mini: null };
        layer = vp;
      }
      drawnStates.set(key, hit);
      if (drawnStates.size > 12) drawnStates.delete(drawnStates.keys().next().value);
      vp.textContent = "";
      vp.appendChild(hit.g);
      st.draw = hit.D; st.boxes = hit.boxes;
      st.drawMs = performance.now() - t0;
      el.dataset.drawMs = st.drawMs.toFixed(1);
      el.dataset.boxes = hit.D.boxes.size;
      renderMini(hit);
      markSelection();
      markHits();
      apply();
    }

    // ---- view: pan, zoom, level of detail, minimap --------------------------------------------
    function apply() {
      const v = st.view;
      vp.setAttribute("transform", `translate(${v.x},${v.y}) scale(${v.k})`);
      root.classList.toggle("plg-lod", v.k * TITLE < READABLE);
      root.classList.toggle("plg-lod-edges", v.k * EDGE < READABLE);
      drawMiniView();
    }
    // the stage's size, read again only when it changes (reading it mid-draw costs a layout)
    let stageSize = null;
    const sizeNow = () => (stageSize = { w: stage.clientWidth || 800, h: stage.clientHeight || 500 });
    const size = () => stageSize || sizeNow();
    function fit() {
      if (!st.draw) return;
      const { w, h } = size(), D = st.draw, pad = 20;
      const k = Math.min(1, (w - 2 * pad) / Math.max(D.w, 1), (h - 2 * pad) / Math.max(D.h, 1));
      st.view = { k, x: (w - D.w * k) / 2, y: Math.max(pad, (h - D.h * k) / 2) };
      apply();
    }
    function centreOn(r, k) {
      const { w, h } = size();
      k = k || st.view.k;
      st.view = { k, x: w / 2 - (r.x + r.w / 2) * k, y: h / 2 - (r.y + r.h / 2) * k };
      apply();
    }
    function openView() {
      // readable first: zoom 1 (13 px titles), centred on the focus; the whole graph when it fits
      const { w, h } = size(), D = st.draw;
      if (!D) return;
      setCrumb(focusIndex());
      if (D.w <= w - 40 && D.h <= h - 40) { st.view = { k: 1, x: (w - D.w) / 2, y: Math.max(20, (h - D.h) / 2) }; apply(); return; }
      const f = focusIndex();
      const r = f >= 0 ? boxRect(f) : null;
      vp.querySelectorAll(".plg-focus").forEach((g) => g.classList.remove("plg-focus"));
      const fg = f >= 0 && st.boxes && st.boxes.get(rep(st.m, f));
      if (fg) fg.classList.add("plg-focus"); // where the view opened, until something is selected
      if (r) centreOn(r, 1);
      else { st.view = { k: 1, x: Math.max(20, (w - D.w) / 2), y: 20 }; apply(); }
    }
    function boxRect(i) { const m = st.m; return st.draw && st.draw.boxes.get(rep(m, i)); }
    function renderMini(hit) {
      const D = st.draw, m = st.m;
      const c = mini.getContext && mini.getContext("2d");
      if (!c || !D) return;
      const want = Math.round(Math.max(48, Math.min(200, (130 * D.w) / Math.max(D.h, 1))));
      if (mini.width !== want) { mini.width = want; if (hit) hit.mini = null; }
      const s = Math.min(mini.width / Math.max(D.w, 1), mini.height / Math.max(D.h, 1));
      st.mini = { s, ox: (mini.width - D.w * s) / 2, oy: (mini.height - D.h * s) / 2 };
      if (hit && hit.mini) { st.miniImg = hit.mini; drawMiniView(); return; }
      const off = document.createElement("canvas");
      off.width = mini.width; off.height = mini.height;
      const o = off.getContext("2d");
      o.fillStyle = "#fff"; o.fillRect(0, 0, off.width, off.height);
      o.strokeStyle = "#cfd8dc";
      for (const f of D.frames) o.strokeRect(st.mini.ox + f.x * s, st.mini.oy + f.y * s, f.w * s, f.h * s);
      const colors = { added: "#66bb6a", changed: "#ffb300", removed: "#bdbdbd", failed: "#e53935" };
      for (const [b, r] of D.boxes) {
        let col = "#90a4ae";
        if (b < m.N) { const s2 = statusOf(m, b); if (colors[s2]) col = colors[s2]; if (m.p.nodes[b].bad && !plain()) col = "#d32f2f"; }
        else { const g = m.p.groups[b - m.N]; if (!plain() && g.ch) col = "#ffb300"; if (!plain() && g.bad) col = "#d32f2f"; }
        o.fillStyle = col;
        o.fillRect(st.mini.ox + r.x * s, st.mini.oy + r.y * s, Math.max(1.5, r.w * s), Math.max(1.5, r.h * s));
      }
      st.miniImg = off;
      if (hit) hit.mini = off;
      drawMiniView();
    }
    function drawMiniView() {
      const c = mini.getContext && mini.getContext("2d");
      if (!c || !st.miniImg || !st.mini) return;
      c.clearRect(0, 0, mini.width, mini.height);
      c.drawImage(st.miniImg, 0, 0);
      const { w, h } = size(), v = st.view, M = st.mini;
      c.strokeStyle = "#1565c0"; c.lineWidth = 1.5;
      c.strokeRect(M.ox + (-v.x / v.k) * M.s, M.oy + (-v.y / v.k) * M.s, (w / v.k) * M.s, (h / v.k) * M.s);
    }
    function miniJump(e) {
      if (!st.mini) return;
      const r = mini.getBoundingClientRect(), M = st.mini;
      const x = (e.clientX - r.left - M.ox) / M.s, y = (e.clientY - r.top - M.oy) / M.s;
      centreOn({ x, y, w: 0, h: 0 });
    }

    // ---- selection and details ------------------------------------------------------------------
    function markSelection() {
      vp.querySelectorAll(".plg-sel,.plg-nb").forEach((g) => g.classList.remove("plg-sel", "plg-nb"));
      vp.querySelectorAll(".plg-e-sel").forEach((g) => g.classList.remove("plg-e-sel"));
      const m = st.m;
      if (!m || st.sel < 0) return;
      const b = rep(m, st.sel), g = st.boxes && st.boxes.get(b);
      if (g) g.classList.add("plg-sel");
      vp.querySelectorAll(".plg-e").forEach((p) => { if (+p.dataset.a === b || +p.dataset.b === b) p.classList.add("plg-e-sel"); });
    }
    function row(table, k, v) {
      if (v === undefined || v === null || v === "") return null;
      const tr = table.insertRow();
      h("th", "", tr, k);
      const td = tr.insertCell();
      if (v instanceof Node) td.appendChild(v); else td.textContent = String(v);
      return tr;
    }
    function link(i, text) {
      const a = h("a", "plg-link", null, text);
      a.href = "#"; a.dataset.i = i;
      a.addEventListener("click", (e) => { e.preventDefault(); locate(i); });
      return a;
    }
    function nodeList(m, list) {
      const box = document.createElement("div");
      for (const k of list.slice(0, 40)) {
        const n = m.p.nodes[k];
        const line = h("div", "plg-linkrow", box);
        line.appendChild(link(k, n.t));
        h("span", "plg-dim", line, " " + (m.p.types[n.ty] || ""));
      }
      if (list.length > 40) h("div", "plg-dim", box, "+" + (list.length - 40) + " more");
      return box;
    }
    function showDetails() {
      const m = st.m;
      panel.textContent = "";
      const close = h("button", "plg-close", panel, "×"); close.type = "button"; close.title = "close the details";
      close.addEventListener("click", () => { select(-1); });
      if (!m || st.sel < 0) { panel.classList.remove("plg-open"); return; }
      panel.classList.add("plg-open");
      const i = st.sel, n = m.p.nodes[i], d = (m.p.details || [])[i] || {};
      h("div", "plg-d-title", panel, n.t);
      const s = statusOf(m, i);
      const sub = h("div", "plg-d-sub", panel, n.k + (s ? " · " : ""));
      if (s) h("span", "plg-pill plg-s-" + s, sub, s);
      if (n.mark && !plain()) h("div", "plg-d-mark", panel, n.mark);
      if (n.opq) h("div", "plg-d-opaque", panel, "opaque: run by " + n.opq + ", no converter");
      if (n.chg && !plain()) h("div", "plg-d-chg", panel, n.chg);
      const t = h("table", "plg-d-table", panel);
      row(t, "id", n.id.startsWith("removed:") ? n.id.slice(8) + " (removed by this step)" : n.id);
      row(t, "type", m.p.types[n.ty]);
      if (n.b) row(t, "bytes", fmtBytes(n.b));
      row(t, "module", modulePath(m, n.g));
      row(t, "function", d.function);
      if (d.name && d.name !== n.t) row(t, "name", d.name);
      for (const [k, v] of Object.entries(d.attrs || {})) row(t, k, v);
      if (n.err !== undefined) row(t, "error (rel)", fmtNum(n.err));
      if (d.provenance) {
        const p = d.provenance, lines = [];
        for (const k of ["module", "op", "node", "file", "pass", "framework"]) if (p[k]) lines.push(k + " " + p[k]);
        for (const [k, v] of Object.entries(p)) if (!["module", "op", "node", "file", "pass", "framework"].includes(k)) lines.push(k + " " + v);
        row(t, "source", lines.join("\n"));
      }
      if (d.preview) row(t, "values", d.preview.map(fmtNum).join(", ") + (n.b ? " …" : ""));
      for (const k of ["min", "max", "mean", "std"]) if (d[k] !== undefined) row(t, k, fmtNum(d[k]));
      const ins = m.ins[i].map((k) => m.p.edges[k]).filter((e) => !(e[3] & 1) || ghost(m, i)).map((e) => e[0]);
      const outs = m.outs[i].map((k) => m.p.edges[k]).filter((e) => !(e[3] & 1) || ghost(m, i)).map((e) => e[1]);
      if (ins.length) row(t, "inputs", nodeList(m, ins));
      if (outs.length) row(t, "users", nodeList(m, outs));
      if (inlined(m, i)) row(t, "drawn on", nodeList(m, [n.inl]));
    }
    function showGroupDetails(gi) {
      const m = st.m, c = m.p.groups[gi];
      panel.textContent = "";
      panel.classList.add("plg-open");
      const close = h("button", "plg-close", panel, "×"); close.type = "button";
      close.addEventListener("click", () => panel.classList.remove("plg-open"));
      h("div", "plg-d-title", panel, c.label || c.id);
      h("div", "plg-d-sub", panel, c.k === "segment" ? "a run of nodes" : c.k === "function" ? "function" : "module");
      const t = h("table", "plg-d-table", panel);
      row(t, "path", c.id);
      row(t, "nodes", c.n);
      row(t, "ops", c.ops);
      if (c.b) row(t, "params", fmtBytes(c.b) + (c.db ? " (" + signedBytes(c.db) + " against the previous step)" : ""));
      if (c.ch && !plain()) row(t, "changes", Object.entries(c.ch).map(([k, v]) => v + " " + k).join(", "));
      const b = h("button", "plg-btn", panel, st.expanded.has(gi) ? "collapse" : "expand");
      b.type = "button";
      b.addEventListener("click", () => toggle(gi));
    }
    function setCrumb(i) {
      const m = st.m;
      const path = m && i >= 0 ? modulePath(m, m.p.nodes[i].g) : "";
      crumb.textContent = path ? "in " + path : "";
      crumb.style.display = path ? "" : "none";
    }
    function select(i, quiet) {
      st.sel = i;
      if (i >= 0) vp.querySelectorAll(".plg-focus").forEach((g) => g.classList.remove("plg-focus"));
      if (i >= 0) setCrumb(i);
      markSelection();
      showDetails();
      keepInView(i); // the drawer narrows the stage
      if (!quiet && opts.onSelect) opts.onSelect(i >= 0 ? st.m.p.nodes[i].id : "");
    }
    function keepInView(i) {
      const r = i >= 0 ? boxRect(i) : null;
      if (!r) return;
      const { w, h } = sizeNow(), v = st.view; // the drawer may just have narrowed the stage
      const x0 = r.x * v.k + v.x, x1 = (r.x + r.w) * v.k + v.x, y0 = r.y * v.k + v.y, y1 = (r.y + r.h) * v.k + v.y;
      if (x0 < 0 || x1 > w || y0 < 0 || y1 > h) centreOn(r);
    }
    function ensureVisible(i) {
      const m = st.m;
      const n = m.p.nodes[i];
      const j = inlined(m, i) ? n.inl : i;
      let changed = false;
      for (let g = m.p.nodes[j].g; g > 0; g = m.p.groups[g].p) if (!st.expanded.has(g)) { st.expanded.add(g); bump(m, g); changed = true; }
      if (changed) { draw(); notifyCollapsed(); }
    }
    function locate(i, k) {
      if (i < 0) return;
      ensureVisible(i);
      select(i);
      const r = boxRect(i);
      if (r) centreOn(r, Math.max(st.view.k, k || 1));
    }

    // ---- expand / collapse -------------------------------------------------------------------
    function notifyCollapsed() {
      if (opts.onCollapsed) opts.onCollapsed(collapsedIds());
    }
    function collapsedIds() {
      const m = st.m;
      if (!m) return [];
      const out = [];
      for (let g = 1; g < m.G; g++) if (!st.expanded.has(g)) out.push(m.p.groups[g].id);
      return out;
    }
    function toggle(gi) {
      const m = st.m;
      const before = st.draw && st.draw.boxes.get(m.N + gi) || (st.draw && st.draw.frames.find((f) => f.b === m.N + gi));
      const anchor = before ? { x: before.x * st.view.k + st.view.x, y: before.y * st.view.k + st.view.y } : null;
      if (st.expanded.has(gi)) st.expanded.delete(gi); else st.expanded.add(gi);
      bump(m, gi);
      draw();
      // keep the group where it was on the screen
      const after = st.draw.boxes.get(m.N + gi) || st.draw.frames.find((f) => f.b === m.N + gi);
      if (anchor && after) { st.view.x = anchor.x - after.x * st.view.k; st.view.y = anchor.y - after.y * st.view.k; apply(); }
      notifyCollapsed();
    }
    function setAll(open) {
      const m = st.m;
      if (!m) return;
      st.expanded = new Set([0]);
      if (open) for (let g = 1; g < m.G; g++) st.expanded.add(g);
      expandedOf.set(m, st.expanded);
      m.epoch++; m.cache.clear();
      draw(); fit(); notifyCollapsed();
    }
    function setCollapsed(ids) {
      const m = st.m;
      if (!m) return;
      const closed = new Set(ids);
      const next = new Set([0]);
      for (let g = 1; g < m.G; g++) if (!closed.has(m.p.groups[g].id)) next.add(g);
      let same = next.size === st.expanded.size;
      if (same) for (const g of next) if (!st.expanded.has(g)) { same = false; break; }
      if (same) return;
      for (let g = 1; g < m.G; g++) if (next.has(g) !== st.expanded.has(g)) bump(m, g);
      st.expanded = next; expandedOf.set(m, next);
      draw();
    }

    // ---- search --------------------------------------------------------------------------------
    function matcher(q) {
      q = q.trim();
      if (!q) return null;
      const re = /^\/(.+)\/([a-z]*)$/.exec(q);
      if (re) { try { const r = new RegExp(re[1], re[2].includes("i") ? re[2] : re[2] + "i"); return (s) => r.test(s); } catch (e) { return "bad"; } }
      const low = q.toLowerCase();
      return (s) => s.includes(low);
    }
    function search(q, fromUser) {
      st.query = q;
      if (fromUser && opts.onSearch) opts.onSearch(q);
      if (searchBox.value !== q) searchBox.value = q;
      const m = st.m, f = m ? matcher(q) : null;
      st.hits = []; st.hit = -1;
      if (f === "bad") { hitInfo.textContent = "bad regex"; results.textContent = ""; results.classList.remove("plg-open"); markHits(); return; }
      if (f) for (let i = 0; i < m.N; i++) if (shownNode(m, i) && f(searchText(m, i))) st.hits.push(i);
      hitInfo.textContent = f ? st.hits.length + " found" : "";
      renderResults();
      markHits();
    }
    function renderResults() {
      results.textContent = "";
      const m = st.m;
      if (!st.query.trim() || !m) { results.classList.remove("plg-open"); return; }
      results.classList.add("plg-open");
      const head = h("div", "plg-r-head", results, st.hits.length ? (st.hit >= 0 ? (st.hit + 1) + " of " + st.hits.length : st.hits.length + (st.hits.length === 1 ? " hit" : " hits")) + " · Enter: next · Esc: close" : "no node matches");
      head.dataset.count = st.hits.length;
      const byModule = new Map();
      for (const i of st.hits.slice(0, 300)) {
        const key = modulePath(m, m.p.nodes[i].g) || "(top level)";
        if (!byModule.has(key)) byModule.set(key, []);
        byModule.get(key).push(i);
      }
      for (const [mod, list] of byModule) {
        h("div", "plg-r-mod", results, mod + " (" + list.length + ")");
        for (const i of list) {
          const n = m.p.nodes[i];
          const item = h("div", "plg-r-item" + (st.hits[st.hit] === i ? " plg-on" : ""), results);
          item.dataset.i = i;
          const d = (m.p.details || [])[i] || {};
          h("span", "plg-r-op", item, n.k === "op" || n.k === "call" ? n.t : n.k);
          h("span", "plg-r-name", item, " " + (n.k === "op" || n.k === "call" ? n.id.split("/").pop() : d.name || n.t));
          if (n.st === "removed" && !plain()) h("span", "plg-r-gone", item, " (removed)");
          item.title = d.name || n.id;
          item.addEventListener("click", () => { st.hit = st.hits.indexOf(i); locate(i); renderResults(); });
        }
      }
      if (st.hits.length > 300) h("div", "plg-dim", results, "first 300 shown");
    }
    function markHits() {
      vp.querySelectorAll(".plg-hit").forEach((g) => g.classList.remove("plg-hit"));
      const m = st.m;
      if (!m || !st.boxes) return;
      for (const i of st.hits) { const g = st.boxes.get(rep(m, i)); if (g) g.classList.add("plg-hit"); }
    }
    function nextHit(d) {
      if (!st.hits.length) return;
      st.hit = (st.hit + (d || 1) + st.hits.length) % st.hits.length;
      locate(st.hits[st.hit]);
      markHits();
      renderResults();
      hitInfo.textContent = (st.hit + 1) + " of " + st.hits.length;
    }

    // ---- changes ---------------------------------------------------------------------------------
    function changes() {
      const m = st.m;
      if (!m) return [];
      if (st.mode === "before") return [...st.beforeStatus.keys()].sort((a, b) => a - b);
      return st.plainAfter ? [] : m.p.changes || [];
    }
    function focusIndex() {
      const m = st.m;
      if (st.mode === "before" || st.plainAfter) { const c = changes(); return c.length ? c[0] : -1; }
      return m.p.focus === null || m.p.focus === undefined ? -1 : m.p.focus;
    }
    function nextChange(d) {
      const list = changes();
      if (!list.length) return;
      st.change = st.change < 0 ? (d > 0 ? 0 : list.length - 1) : (st.change + d + list.length) % list.length;
      locate(list[st.change]);
      changeInfo.textContent = (st.change + 1) + "/" + list.length;
    }
    function updateChangeInfo() {
      const list = changes();
      const what = st.mode === "before" ? " removed or changed" : list.length === 1 ? " change" : " changes";
      changeInfo.textContent = list.length ? list.length + what : "no changes";
      prevChange.disabled = nextChangeB.disabled = !list.length;
    }

    // ---- data and mode -----------------------------------------------------------------------------
    const models = new WeakMap();
    function modelOf(p) { let m = models.get(p); if (!m) { m = prepare(p); models.set(p, m); } return m; }
    function defaultExpanded(m) {
      const closed = new Set(m.p.collapsed || []);
      const s = new Set([0]);
      for (let g = 1; g < m.G; g++) if (!closed.has(m.p.groups[g].id)) s.add(g);
      return s;
    }
    function beforeStatuses(after, before) {
      // the previous step's nodes that this step removed or changed
      const out = new Map(), A = after;
      for (let i = 0; i < A.N; i++) {
        const n = A.p.nodes[i];
        if (!n.st || n.st === "added") continue;
        const id = n.st === "removed" ? n.id.slice(8) : (A.pairOf.get(i) || n.id);
        const j = before.idIndex.get(id);
        if (j !== undefined) out.set(j, n.st === "failed" ? "changed" : n.st);
      }
      return out;
    }
    function counterpart(i, toMode) {
      const A = modelOf(st.after), B = st.before ? modelOf(st.before) : null;
      if (!B || i < 0) return -1;
      if (toMode === "before") {
        const n = A.p.nodes[i];
        const id = n.st === "removed" ? n.id.slice(8) : (A.pairOf.get(i) || n.id);
        const j = B.idIndex.get(id);
        return j === undefined ? -1 : j;
      }
      const id = B.p.nodes[i].id;
      for (const [k, v] of A.pairOf) if (v === id) return k;
      const g = A.idIndex.get("removed:" + id);
      if (g !== undefined) return g;
      const j = A.idIndex.get(id);
      return j === undefined || A.pairOf.has(j) ? -1 : j; // a node paired with another is not it
    }
    function use(mode, keepView) {
      const p = mode === "before" ? st.before : st.after;
      st.mode = mode;
      st.afterUid = modelOf(st.after).uid;
      st.m = modelOf(p);
      if (mode === "before") st.beforeStatus = beforeStatuses(modelOf(st.after), st.m);
      let ex = expandedOf.get(st.m);
      if (!ex) { ex = defaultExpanded(st.m); expandedOf.set(st.m, ex); }
      st.expanded = ex;
      beforeB.classList.toggle("plg-on", mode === "before");
      afterB.classList.toggle("plg-on", mode === "after");
      el.dataset.mode = mode;
      st.change = -1;
      updateChangeInfo();
      draw();
      if (!keepView) openView();
    }
    function syncExpansion(fromM, toM) {
      // groups with the same id are opened / closed alike on both sides
      const from = expandedOf.get(fromM), to = expandedOf.get(toM) || defaultExpanded(toM);
      if (!from) return;
      for (let g = 1; g < toM.G; g++) {
        const j = fromM.groupIndex.get(toM.p.groups[g].id);
        if (j === undefined) continue;
        const open = from.has(j);
        if (open !== to.has(g)) { if (open) to.add(g); else to.delete(g); bump(toM, g); }
      }
      expandedOf.set(toM, to);
    }
    function setMode(mode) {
      if (mode === "before" && !st.before && st.loadBefore) { // a live view's before side: asked for when first shown
        const after = st.after;
        st.loadBefore().then((b) => { if (st.after === after && !st.before) { st.before = b; setMode("before"); } });
        return;
      }
      if (mode === st.mode || (mode === "before" && !st.before)) return;
      const from = st.m, sel = st.sel, r = sel >= 0 ? boxRect(sel) : null;
      const screen = r ? { x: (r.x + r.w / 2) * st.view.k + st.view.x, y: (r.y + r.h / 2) * st.view.k + st.view.y } : null;
      const target = modelOf(mode === "before" ? st.before : st.after);
      syncExpansion(from, target);
      let j = sel >= 0 ? counterpart(sel, mode) : -1;
      // a node this step added has no counterpart before it: keep it to come back to
      const added = mode === "before" && sel >= 0 && j < 0 ? st.m.p.nodes[sel].t : "";
      if (mode === "before") st.keepAfter = j < 0 ? sel : -1;
      else if (sel < 0 && st.keepAfter >= 0) j = st.keepAfter;
      st.sel = -1; // an index into the side left: drawing the other side must not read it
      use(mode, true);
      note.textContent = added ? "“" + added + "” is new in this step: the step before has no counterpart" : "";
      note.style.display = added ? "" : "none";
      if (j >= 0) {
        ensureVisible(j);
        select(j);
        const r2 = boxRect(j);
        if (r2 && screen) { st.view.x = screen.x - (r2.x + r2.w / 2) * st.view.k; st.view.y = screen.y - (r2.y + r2.h / 2) * st.view.k; apply(); }
        else if (r2) centreOn(r2);
      } else if (added) select(-1);
      else { select(-1); openView(); }
      search(st.query);
      if (opts.onMode) opts.onMode(mode);
    }
    function setData(after, before, o) {
      st.after = after; st.before = before || null;
      st.loadBefore = (!st.before && o && o.loadBefore) || null; // () => a promise of `before`
      st.plainAfter = !!(o && o.plain);
      st.sel = -1; st.keepAfter = -1;
      modeBox.style.display = st.before || st.loadBefore ? "" : "none";
      const m = modelOf(after);
      errB.style.display = m.hasErr ? "" : "none";
      if (!m.hasErr) st.err = false;
      errB.classList.toggle("plg-on", st.err);
      use("after", false);
      showDetails();
      search(st.query);
      note.textContent = (o && o.note) || "";
      note.style.display = note.textContent ? "" : "none";
    }

    // ---- legend ----------------------------------------------------------------------------------
    function renderLegend() {
      legend.textContent = "";
      const items = [["plg-s-added", "added"], ["plg-s-changed", "changed"], ["plg-s-removed", "removed (ghost)"], ["plg-s-failed", "failed"], ["plg-bad", "finding"], ["plg-k-weight", "weight"], ["plg-opaque", "opaque (no converter)"], ["plg-group", "group"]];
      for (const [cls, text] of items) {
        const it = h("span", "plg-lg-item", legend);
        h("span", "plg-lg-sw " + cls, it);
        h("span", "", it, text);
      }
      h("div", "plg-lg-keys", legend, "n / p change · / search · f fit · b before/after · drag to pan, wheel to zoom");
      if (st.err) { // the error overlay's scale
        const row = h("div", "plg-lg-err", legend);
        h("span", "", row, "error (max rel) ");
        for (const e of [1e-7, 1e-5, 1e-3, 1e-1]) { const sw = h("span", "plg-lg-sw", row); sw.style.background = errColor(e); h("span", "", row, " " + e.toExponential(0) + " "); }
        const none = h("span", "plg-lg-sw", row); none.style.background = "#f5f5f5"; h("span", "", row, " no error reported (within tolerance, or not compared)");
      }
    }
    renderLegend();

    // ---- events ----------------------------------------------------------------------------------
    let drag = null;
    stage.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = stage.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top, v = st.view;
      const k = Math.min(3, Math.max(0.02, v.k * Math.exp(-e.deltaY * 0.0015)));
      v.x = mx - (mx - v.x) * (k / v.k); v.y = my - (my - v.y) * (k / v.k); v.k = k;
      apply();
    }, { passive: false });
    stage.addEventListener("mousedown", (e) => { if (e.target === mini) return; drag = { x: e.clientX - st.view.x, y: e.clientY - st.view.y, moved: false }; });
    const onMove = (e) => { if (!drag) return; if (Math.abs(e.clientX - drag.x - st.view.x) + Math.abs(e.clientY - drag.y - st.view.y) > 2) drag.moved = true; st.view.x = e.clientX - drag.x; st.view.y = e.clientY - drag.y; apply(); };
    const onUp = () => setTimeout(() => { drag = null; }, 0);
    window.addEventListener("mousemove", onMove);
    window.addEventListener("mouseup", onUp);
    mini.addEventListener("mousedown", (e) => { e.stopPropagation(); miniJump(e); const mv = (ev) => miniJump(ev); const up = () => { window.removeEventListener("mousemove", mv); window.removeEventListener("mouseup", up); }; window.addEventListener("mousemove", mv); window.addEventListener("mouseup", up); });
    root.addEventListener("click", (e) => {
      if (drag && drag.moved) return;
      el.focus({ preventScroll: true });
      results.classList.remove("plg-open");
      const g = e.target.closest("[data-i],[data-gi]");
      if (!g) { select(-1); return; }
      if (g.dataset.i !== undefined) select(+g.dataset.i);
      else { st.sel = -1; markSelection(); showGroupDetails(+g.dataset.gi); if (opts.onSelect) opts.onSelect("group:" + st.m.p.groups[+g.dataset.gi].id); }
    });
    root.addEventListener("dblclick", (e) => {
      const g = e.target.closest("[data-gi]");
      if (g) { e.preventDefault(); toggle(+g.dataset.gi); }
    });
    searchBox.addEventListener("input", () => search(searchBox.value, true));
    searchBox.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); nextHit(e.shiftKey ? -1 : 1); }
      else if (e.key === "Escape") { results.classList.remove("plg-open"); el.focus(); }
      e.stopPropagation();
    });
    searchBox.addEventListener("focus", () => { if (st.query.trim()) results.classList.add("plg-open"); });
    prevHit.addEventListener("click", () => nextHit(-1));
    nextHitB.addEventListener("click", () => nextHit(1));
    prevChange.addEventListener("click", () => nextChange(-1));
    nextChangeB.addEventListener("click", () => nextChange(1));
    expandAllB.addEventListener("click", () => setAll(true));
    collapseAllB.addEventListener("click", () => setAll(false));
    fitB.addEventListener("click", fit);
    beforeB.addEventListener("click", () => setMode("before"));
    afterB.addEventListener("click", () => setMode("after"));
    errB.addEventListener("click", () => { st.err = !st.err; errB.classList.toggle("plg-on", st.err); renderLegend(); draw(); });
    function onKey(e) {
      if (e.ctrlKey || e.metaKey || e.altKey) return false;
      const t = e.target;
      if (t && t !== el && /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return false;
      if (e.key === "n") nextChange(1);
      else if (e.key === "p") nextChange(-1);
      else if (e.key === "f") fit();
      else if (e.key === "b") setMode(st.mode === "after" ? "before" : "after");
      else if (e.key === "/") { searchBox.focus(); searchBox.select(); }
      else if (e.key === "Escape") { results.classList.remove("plg-open"); select(-1); }
      else return false;
      e.preventDefault(); e.stopPropagation();
      return true;
    }
    el.addEventListener("keydown", onKey);
    let resizeObs = null;
    if (typeof ResizeObserver !== "undefined") {
      let last = "";
      resizeObs = new ResizeObserver(() => { const s = sizeNow(), key = s.w + "x" + s.h; if (key !== last) { const first = last === ""; last = key; if (first && st.draw) openView(); else drawMiniView(); } });
      resizeObs.observe(stage);
    }

    return {
      el, setData, setMode, fit, search, nextHit, nextChange, setCollapsed, expandAll: () => setAll(true), collapseAll: () => setAll(false),
      key: onKey,
      select(id) { const m = st.m; if (!m) return; const i = id ? m.idIndex.get(id) : -1; select(i === undefined ? -1 : i, true); },
      locate(id) { const m = st.m; const i = m && m.idIndex.get(id); if (i !== undefined) locate(i); },
      has(id) { return !!st.m && st.m.idIndex.has(id); },
      addDetails(byId) { // more details of nodes (a weight's statistics, sent on selection)
        const m = st.m;
        if (!m) return;
        for (const [id, extra] of Object.entries(byId)) {
          const i = m.idIndex.get(id);
          if (i === undefined) continue;
          m.p.details[i] = Object.assign({}, m.p.details[i] || {}, extra);
          if (i === st.sel) showDetails();
        }
      },
      expand(id) { const m = st.m, g = m && m.groupIndex.get(id); if (g !== undefined && !st.expanded.has(g)) toggle(g); },
      collapse(id) { const m = st.m, g = m && m.groupIndex.get(id); if (g !== undefined && st.expanded.has(g)) toggle(g); },
      openView, get mode() { return st.mode; }, get view() { return Object.assign({}, st.view); },
      get selected() { return st.m && st.sel >= 0 ? st.m.p.nodes[st.sel].id : ""; },
      get collapsed() { return collapsedIds(); },
      get drawMs() { return st.drawMs; },
      destroy() { window.removeEventListener("mousemove", onMove); window.removeEventListener("mouseup", onUp); if (resizeObs) resizeObs.disconnect(); },
    };
  }
  return { create, fmtBytes, fmtNum };
})();
