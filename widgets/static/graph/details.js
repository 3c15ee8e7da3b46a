// passlens graph component: selection and the details drawer (a node's or a group's details,
// links to its inputs and users), the breadcrumb, and locating a node (opening its groups).
(function (P) {
  "use strict";
  const { fmtBytes, signedBytes, fmtNum, h, modulePath } = P;
  P.details = function (c) {
    const { opts, vp, crumb, panel, st } = c;
    // from the other modules, looked up when called
    const boxRect = P.late(c, "boxRect"), bump = P.late(c, "bump"), centreOn = P.late(c, "centreOn"),
      draw = P.late(c, "draw"), ghost = P.late(c, "ghost"), inlined = P.late(c, "inlined"),
      keepInView = P.late(c, "keepInView"), notifyCollapsed = P.late(c, "notifyCollapsed"),
      plain = P.late(c, "plain"), rep = P.late(c, "rep"), statusOf = P.late(c, "statusOf"),
      toggle = P.late(c, "toggle"), apply = P.late(c, "apply"), size = P.late(c, "size"),
      sizeNow = P.late(c, "sizeNow");
    // ---- the drawer covers nothing important ---------------------------------------------------
    // The drawer narrows the stage from the right. When it opens, the view moves left just
    // enough that the selected box and the findings that were in view stay in view (as far as
    // the leftmost of them allows; the selection first, keepInView), so that nothing the user
    // was looking at, or about to click, goes under the drawer.
    function openDrawer(box) { // box: the drawn box to keep (a group's), else the selection's
      const before = size(), was = panel.classList.contains("plg-open");
      panel.classList.add("plg-open");
      if (was || !st.draw || !st.m || st.drawn !== st.m) return;
      const { w, h } = sizeNow();
      if (w >= before.w - 1) return;
      const m = st.m, D = st.draw, v = st.view, pad = 12;
      const scr = (r) => ({ x0: r.x * v.k + v.x, x1: (r.x + r.w) * v.k + v.x, y0: r.y * v.k + v.y, y1: (r.y + r.h) * v.k + v.y });
      const keep = [];
      const sel = box !== undefined ? D.boxes.get(box) : st.sel >= 0 ? boxRect(st.sel) : null;
      if (sel) keep.push(scr(sel));
      if (!plain()) for (const [b, r] of D.boxes) {
        const it = b < m.N ? m.p.nodes[b] : m.p.groups[b - m.N];
        if (!(it.bad || it.mark || it.f)) continue;
        const s = scr(r);
        if (s.x1 > 0 && s.x0 < before.w && s.y1 > 0 && s.y0 < h) keep.push(s);
      }
      if (!keep.length) return;
      const right = Math.max(...keep.map((s) => s.x1)), left = Math.min(...keep.map((s) => s.x0));
      if (right <= w - pad) return;
      const dx = Math.min(right - (w - pad), Math.max(0, left - pad));
      if (dx > 0) { v.x -= dx; apply(); }
    }
    function closeDrawer() {
      if (!panel.classList.contains("plg-open")) return;
      panel.classList.remove("plg-open");
      sizeNow(); // the stage is wider again: the next opening measures from here
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
      if (!m || st.sel < 0) { closeDrawer(); return; }
      openDrawer();
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
      if (d.why) row(t, "why", d.why); // the rule and the step that made it (explorer.rewrites)
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
      openDrawer(m.N + gi); // the group's box stays clear of the drawer
      const close = h("button", "plg-close", panel, "×"); close.type = "button";
      close.addEventListener("click", closeDrawer);
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
      c.overviewViewMoved(); // the overview shows where the selection is
      if (!quiet && opts.onSelect) opts.onSelect(i >= 0 ? st.m.p.nodes[i].id : "");
    }
    // open the groups holding node i; `then` runs once it is drawn
    function ensureVisible(i, then) {
      const m = st.m;
      const n = m.p.nodes[i];
      const j = inlined(m, i) ? n.inl : i;
      let changed = false;
      for (let g = m.p.nodes[j].g; g > 0; g = m.p.groups[g].p) if (!st.expanded.has(g)) { st.expanded.add(g); bump(m, g); changed = true; }
      if (changed) draw(() => { notifyCollapsed(); if (then) then(); });
      else if (then) then();
    }
    function locate(i, k) {
      if (i < 0) return;
      const m = st.m;
      ensureVisible(i, () => {
        if (st.m !== m) return; // the side shown changed meanwhile
        select(i);
        const r = boxRect(i);
        if (r) centreOn(r, Math.max(st.view.k, k || 1));
      });
    }
    Object.assign(c, { markSelection, showDetails, showGroupDetails, setCrumb, select, ensureVisible, locate });
  };
})(PasslensGraphParts);
