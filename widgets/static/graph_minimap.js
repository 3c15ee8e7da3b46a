// passlens graph component: the minimap (a canvas of the whole drawing with the view's frame;
// a click or drag there moves the view).
(function (P) {
  "use strict";
  const { h } = P;
  P.minimap = function (c) {
    const { mini, st } = c;
    // from the other modules, looked up when called
    const centreOn = P.late(c, "centreOn"), plain = P.late(c, "plain"), size = P.late(c, "size"),
      statusOf = P.late(c, "statusOf");
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
    Object.assign(c, { renderMini, drawMiniView, miniJump });
  };
})(PasslensGraphParts);
