// passlens graph component: the view. Pan and zoom applied to the drawing, level of detail,
// fitting, centring on a box, the first view (readable, centred on the focus).
(function (P) {
  "use strict";
  const { TITLE, EDGE, READABLE, h } = P;
  P.viewport = function (c) {
    const { stage, root, vp, st } = c;
    // from the other modules, looked up when called
    const drawMiniView = P.late(c, "drawMiniView"), focusIndex = P.late(c, "focusIndex"),
      rep = P.late(c, "rep"), setCrumb = P.late(c, "setCrumb");
    // ---- view: pan, zoom, level of detail, minimap --------------------------------------------
    function apply() {
      const v = st.view;
      vp.setAttribute("transform", `translate(${v.x},${v.y}) scale(${v.k})`);
      root.classList.toggle("plg-lod", v.k * TITLE < READABLE);
      root.classList.toggle("plg-lod-edges", v.k * EDGE < READABLE);
      drawMiniView();
      c.semanticSchedule(); // the zoomed-out blocks
      c.overviewViewMoved(); // the overview's rows in view
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
      // readable first: zoom 1 (14 px titles, 12 px shapes and attributes), centred on the focus; the whole graph when it fits
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
    function keepInView(i) {
      const r = i >= 0 ? boxRect(i) : null;
      if (!r) return;
      const { w, h } = sizeNow(), v = st.view; // the drawer may just have narrowed the stage
      const x0 = r.x * v.k + v.x, x1 = (r.x + r.w) * v.k + v.x, y0 = r.y * v.k + v.y, y1 = (r.y + r.h) * v.k + v.y;
      if (x0 < 0 || x1 > w || y0 < 0 || y1 > h) centreOn(r);
    }
    Object.assign(c, { apply, sizeNow, size, fit, centreOn, openView, boxRect, keepInView });
  };
})(PasslensGraphParts);
