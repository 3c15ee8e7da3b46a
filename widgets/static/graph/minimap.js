// passlens graph component, part `minimap`: the minimap (a canvas of the whole drawing with the view's frame;
// a click or drag there moves the view). Large enough to read and to aim at: at the foot of the
// overview when that is open (up to 280 x 200 px, covering nothing), else in the stage's corner
// (up to 200 x 140 px); a graph much taller than wide (a chain, a decoder) stretched across,
// its top groups labelled (the cut of the semantic zoom, part `semantic`, in its coordinates).
(function () {
"use strict";
const LABEL = 11;
const SIZES = { pane: [280, 200, 200, 110], stage: [200, 140, 120, 90] }; // max w, max h, min w, min h
PasslensGraphParts.part({
  name: "minimap",
  needs: ["base", "dom", "sides", "shown", "drawing", "viewport", "semantic"],
  state: { mini: null, miniImg: null },
  make({ base, dom, shown, drawing, viewport, semantic }, st) {
    const { FONT } = base;
    const { mini } = dom;
    const { plain, statusOf } = shown;
    const { centreOn, size } = viewport;
    const dpr = () => Math.min(2, (typeof window !== "undefined" && window.devicePixelRatio) || 1);
    function renderMini(hit) {
      const D = st.draw, m = st.m;
      const ctx = mini.getContext && mini.getContext("2d");
      if (!ctx || !D) return;
      const inPane = !!(mini.parentElement && mini.parentElement.classList.contains("plg-overview"));
      const [MAXW, MAXH, MINW, MINH] = inPane ? SIZES.pane : SIZES.stage;
      const s = Math.min(MAXW / Math.max(D.w, 1), MAXH / Math.max(D.h, 1));
      const w = Math.round(Math.max(MINW, D.w * s)), hh = Math.round(Math.max(MINH, D.h * s));
      const sx = w / Math.max(D.w, 1), sy = hh / Math.max(D.h, 1), r2 = dpr();
      if (mini.width !== Math.round(w * r2) || mini.height !== Math.round(hh * r2)) {
        mini.width = Math.round(w * r2); mini.height = Math.round(hh * r2);
        mini.style.width = w + "px"; mini.style.height = hh + "px";
        if (hit) hit.mini = null;
      }
      st.mini = { sx, sy, w, h: hh, r: r2 };
      mini.dataset.size = w + "x" + hh;
      if (hit && hit.mini) { st.miniImg = hit.mini; drawMiniView(); return; }
      const off = document.createElement("canvas");
      off.width = mini.width; off.height = mini.height;
      const o = off.getContext("2d");
      o.scale(r2, r2);
      o.fillStyle = "#fff"; o.fillRect(0, 0, w, hh);
      o.strokeStyle = "#cfd8dc";
      for (const f of D.frames) o.strokeRect(f.x * sx, f.y * sy, f.w * sx, f.h * sy);
      const colors = { added: "#66bb6a", changed: "#ffb300", moved: "#90caf9", removed: "#bdbdbd", failed: "#e53935" };
      for (const [b, r] of D.boxes) {
        let col = "#90a4ae";
        if (b < m.N) { const s2 = statusOf(m, b); if (colors[s2]) col = colors[s2]; if (m.p.nodes[b].bad && !plain()) col = "#d32f2f"; }
        else { const g = m.p.groups[b - m.N]; if (!plain() && g.ch) col = Object.keys(g.ch).some((k) => k !== "moved") ? "#ffb300" : colors.moved; if (!plain() && g.bad) col = "#d32f2f"; }
        o.fillStyle = col;
        o.fillRect(r.x * sx, r.y * sy, Math.max(1.5, r.w * sx), Math.max(1.5, r.h * sy));
      }
      labels(o, sx, sy, w, hh);
      st.miniImg = off;
      if (hit) hit.mini = off;
      drawMiniView();
    }
    function labels(o, sx, sy, w, hh) { // the top groups' names where a line fits
      const blocks = semantic.blocksIn({ kx: sx, ky: sy, x: 0, y: 0 }, w, hh, LABEL + 3);
      o.font = LABEL + "px " + FONT;
      o.textBaseline = "middle";
      o.lineJoin = "round";
      const taken = [], names = [];
      let n = 0;
      for (const b of blocks) {
        if (b.s.h < LABEL) continue;
        const text = b.d.name, tw = Math.min(o.measureText(text).width, w - 4);
        const x = Math.max(2, Math.min(b.s.x + 3, w - tw - 2)), y = b.s.y + Math.min(b.s.h / 2, LABEL);
        const box = { x, y: y - LABEL / 2, w: tw, h: LABEL };
        if (taken.some((t) => box.x < t.x + t.w && t.x < box.x + box.w && box.y < t.y + t.h && t.y < box.y + box.h)) continue;
        taken.push(box);
        o.strokeStyle = "rgba(255,255,255,.9)"; o.lineWidth = 3;
        o.strokeText(text, x, y, w - 4);
        o.fillStyle = b.d.bad ? "#b71c1c" : b.d.changed ? "#8d5300" : "#263238";
        o.fillText(text, x, y, w - 4);
        n++; names.push(text);
      }
      mini.dataset.labels = String(n);
      mini.setAttribute("aria-label", "minimap" + (names.length ? ": " + names.join(", ") : "")); // (what it labels, for a screen reader)
    }
    function drawMiniView() {
      const ctx = mini.getContext && mini.getContext("2d");
      if (!ctx || !st.miniImg || !st.mini) return;
      const M = st.mini;
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, mini.width, mini.height);
      ctx.drawImage(st.miniImg, 0, 0);
      ctx.setTransform(M.r, 0, 0, M.r, 0, 0);
      const { w, h } = size(), v = st.view;
      ctx.strokeStyle = "#1565c0"; ctx.lineWidth = 1.5;
      ctx.fillStyle = "rgba(21,101,192,.08)";
      const x = (-v.x / v.k) * M.sx, y = (-v.y / v.k) * M.sy, ww = (w / v.k) * M.sx, hh = (h / v.k) * M.sy;
      ctx.fillRect(x, y, ww, hh);
      ctx.strokeRect(x, y, Math.max(ww, 2), Math.max(hh, 2));
    }
    function miniJump(e) {
      if (!st.mini) return;
      const r = mini.getBoundingClientRect(), M = st.mini;
      const x = (e.clientX - r.left) / M.sx, y = (e.clientY - r.top) / M.sy;
      centreOn({ x, y, w: 0, h: 0 });
    }
    drawing.onDrawn(renderMini);
    viewport.onMove(drawMiniView); // the view's frame
    return { renderMini, drawMiniView, miniJump };
  },
});
})();
