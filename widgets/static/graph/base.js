// passlens graph component, part `base`: the drawing constants, small helpers (text widths,
// number formats, element makers) and a payload made ready to draw (prepare). Needs nothing,
// owns no state; the other parts that use it declare it.
PasslensGraphParts.part((function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const FONT = 'system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif';
  const TITLE = 14, LINE = 12, EDGE = 12;      // font sizes at zoom 1 (secondary text at least 12 px)
  const PADX = 10, PADY = 6, TITLE_H = 18, LINE_H = 15;
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
  const nextUid = () => ++uid;
  const exports = {
    NS, FONT, TITLE, LINE, EDGE, PADX, PADY, TITLE_H, LINE_H, GPAD, GHEAD, READABLE, MAXLABEL, cut, fmtBytes, signedBytes, fmtNum, svg, h, textWidth, prepare, modulePath, searchText,
    nextUid,
  };
  return { name: "base", needs: [], make: () => exports };
})());
