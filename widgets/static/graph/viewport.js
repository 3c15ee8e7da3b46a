// passlens graph component, part `viewport`: the view. Pan and zoom applied to the drawing,
// level of detail, fitting (the whole drawing, or a rectangle), centring on a box, the first
// view (readable, centred on the focus in the part of the stage no legend, minimap or
// breadcrumb covers: `clearArea`) and the breadcrumb of the node in focus. Owns the view
// (`view`: {x, y, k}, frozen: changed through setView); the parts that follow it (minimap,
// semantic zoom, overview) subscribe with onMove(f).
(function () {
"use strict";
PasslensGraphParts.part({
  name: "viewport",
  needs: ["base", "dom", "sides", "shown", "drawing"],
  state: { view: Object.freeze({ x: 0, y: 0, k: 1 }) },
  make({ base, dom, shown, drawing }, st) {
    const { TITLE, EDGE, READABLE, modulePath } = base;
    const { stage, root, vp, crumb, legend, mini } = dom;
    const { focusIndex, rep, parentOf } = shown;
    const moved = [];
    function onMove(f) { moved.push(f); }
    // the view moved to v ({x, y, k}; what it omits stays) and applied
    function setView(v) {
      st.view = Object.freeze({ x: v.x === undefined ? st.view.x : v.x, y: v.y === undefined ? st.view.y : v.y, k: v.k === undefined ? st.view.k : v.k });
      apply();
    }
    function apply() {
      const v = st.view;
      vp.setAttribute("transform", `translate(${v.x},${v.y}) scale(${v.k})`);
      root.classList.toggle("plg-lod", v.k * TITLE < READABLE);
      root.classList.toggle("plg-lod-edges", v.k * EDGE < READABLE);
      for (const f of moved) f(); // the minimap's frame, the zoomed-out blocks, the overview's rows in view
    }
    // the stage's size, read again only when it changes (reading it mid-draw costs a layout)
    let stageSize = null;
    const sizeNow = () => (stageSize = { w: stage.clientWidth || 800, h: stage.clientHeight || 500 });
    const size = () => stageSize || sizeNow();
    function fit() {
      if (!st.draw) return;
      const { w, h } = size(), D = st.draw, pad = 20;
      // the legend sits over the stage's bottom: the drawing fits above it
      const low = legend && legend.offsetHeight ? legend.offsetHeight + pad : pad;
      const k = Math.min(1, (w - 2 * pad) / Math.max(D.w, 1), (h - pad - low) / Math.max(D.h, 1));
      setView({ k, x: (w - D.w * k) / 2, y: Math.max(pad, pad + (h - pad - low - D.h * k) / 2) });
    }
    // the part of the stage nothing covers (x0, y0, x1, y1 in stage pixels), where a target is
    // centred or fitted: under the breadcrumb, above the legend, and beside or above the minimap
    // when it sits in the stage (the overview and the drawer are beside the stage, not on it)
    function clearArea(w, h) {
      const S = stage.getBoundingClientRect(), gap = 6;
      const box = (e) => {
        if (!e || e.parentElement !== stage || getComputedStyle(e).display === "none") return null;
        const r = e.getBoundingClientRect();
        return r.width && r.height ? { x0: r.left - S.left, y0: r.top - S.top, x1: r.right - S.left, y1: r.bottom - S.top } : null;
      };
      const c = box(crumb), l = box(legend), m = box(mini);
      const y0 = c ? Math.min(c.y1 + gap, h / 3) : 0;
      const above = (o) => (o && o.y0 > h / 2 ? Math.max(y0 + 40, o.y0 - gap) : h);
      const byLegend = above(l);
      // above both the legend and the minimap, or above the legend and left of the minimap
      const over = { x0: 0, y0, x1: w, y1: Math.min(byLegend, above(m)) };
      if (!m || m.y0 <= h / 2) return over;
      const left = { x0: 0, y0, x1: Math.max(40, m.x0 - gap), y1: byLegend };
      const area = (a) => (a.x1 - a.x0) * (a.y1 - a.y0);
      return area(left) > area(over) ? left : over;
    }
    // the view at zoom k with the rectangle r (layout coordinates) in the middle of the clear
    // area; a side of r longer than the area's starts at its top / left edge
    function placed(r, k, A) {
      const pad = 12, W = A.x1 - A.x0, H = A.y1 - A.y0;
      const x = r.w * k > W - 2 * pad ? A.x0 + pad - r.x * k : A.x0 + W / 2 - (r.x + r.w / 2) * k;
      const y = r.h * k > H - 2 * pad ? A.y0 + pad - r.y * k : A.y0 + H / 2 - (r.y + r.h / 2) * k;
      return { k, x, y };
    }
    // placed(r, k, A), moved (each way it fits in A) so that all of the rectangle c around r is
    // in A too: the open group holding a node in focus is drawn whole beside it, not cut by an edge
    function placedWithin(r, k, A, c) {
      const v = placed(r, k, A), pad = 12;
      if (!c) return v;
      const fits = (lo, hi, a0, a1) => (hi - lo) * k <= a1 - a0 - 2 * pad;
      const clamp = (t, lo, hi, a0, a1) => Math.min(Math.max(t, a0 + pad - lo * k), a1 - pad - hi * k);
      const x = fits(c.x, c.x + c.w, A.x0, A.x1) ? clamp(v.x, c.x, c.x + c.w, A.x0, A.x1) : v.x;
      const y = fits(c.y, c.y + c.h, A.y0, A.y1) ? clamp(v.y, c.y, c.y + c.h, A.y0, A.y1) : v.y;
      return { k, x, y };
    }
    function centreOn(r, k, around) {
      const { w, h } = size();
      k = k || st.view.k;
      setView(placedWithin(r, k, clearArea(w, h), around));
    }
    // the frame of the open group that holds the box of node i (none at the top level)
    function frameAround(i) {
      const m = st.m, D = st.draw;
      if (!m || !D || i < 0) return null;
      const g = parentOf(m, rep(m, i));
      return g > 0 ? D.frameOf.get(g) || null : null;
    }
    // node i's box centred at zoom k, its open group drawn whole beside it where it fits (the
    // first view, n / p, a locate)
    function centreOnNode(i, k) {
      const r = boxRect(i);
      if (r) centreOn(r, k, frameAround(i));
      return !!r;
    }
    function openView() {
      // readable first: zoom 1 (14 px titles, 12 px shapes and attributes), centred on the focus; the whole graph when it fits
      const { w, h } = size(), D = st.draw;
      if (!D) return;
      setCrumb(focusIndex());
      const A = clearArea(w, h);
      if (D.w <= A.x1 - A.x0 - 40 && D.h <= A.y1 - A.y0 - 40) { setView(placed({ x: 0, y: 0, w: D.w, h: D.h }, 1, A)); return; }
      if (D.w <= w - 40 && D.h <= h - 40) { setView({ k: 1, x: (w - D.w) / 2, y: Math.max(20, (h - D.h) / 2) }); return; }
      const f = focusIndex();
      const r = f >= 0 ? boxRect(f) : null;
      vp.querySelectorAll(".plg-focus").forEach((g) => g.classList.remove("plg-focus"));
      const fg = f >= 0 && st.boxes && st.boxes.get(rep(st.m, f));
      if (fg) fg.classList.add("plg-focus"); // where the view opened, until something is selected
      if (r) centreOn(r, 1, frameAround(f));
      else setView({ k: 1, x: Math.max(20, (w - D.w) / 2), y: 20 });
    }
    function boxRect(i) { const m = st.m; return st.draw && st.draw.boxes.get(rep(m, i)); }
    function keepInView(i) {
      const r = i >= 0 ? boxRect(i) : null;
      if (!r) return;
      const { w, h } = sizeNow(), v = st.view; // the drawer may just have narrowed the stage
      const A = clearArea(w, h);
      const x0 = r.x * v.k + v.x, x1 = (r.x + r.w) * v.k + v.x, y0 = r.y * v.k + v.y, y1 = (r.y + r.h) * v.k + v.y;
      if (x0 < A.x0 || x1 > A.x1 || y0 < A.y0 || y1 > A.y1) setView(placed(r, v.k, A));
    }
    function fitView(r) { // the rectangle r (layout coordinates) in the middle of the clear area, at most zoom 1
      const { w, h } = sizeNow(), A = clearArea(w, h), pad = 30;
      const W = A.x1 - A.x0, H = A.y1 - A.y0;
      const k = Math.max(0.002, Math.min(1, (W - 2 * pad) / Math.max(r.w, 1), (H - 2 * pad) / Math.max(r.h, 1)));
      setView(placed(r, k, A));
    }
    function setCrumb(i) {
      const m = st.m;
      const path = m && i >= 0 ? modulePath(m, m.p.nodes[i].g) : "";
      crumb.textContent = path ? "in " + path : "";
      crumb.style.display = path ? "" : "none";
    }
    drawing.onDrawn(apply, true);
    return { apply, setView, onMove, sizeNow, size, fit, fitView, centreOn, centreOnNode, openView, boxRect, keepInView, setCrumb, clearArea };
  },
});
})();
