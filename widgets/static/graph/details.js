// passlens graph component, part `details`: selection and the details drawer (a node's or a
// group's details, links to its inputs and users), and going somewhere: locating a node (its
// groups opened), going to a group (opened and fitted), a group opened or closed in place.
// Owns the selection (`sel`, a node index, -1: none; `selGroup`, the group whose details are
// shown, -1: none); the parts that follow it subscribe with onSelected(f).
(function () {
"use strict";
PasslensGraphParts.part({
  name: "details",
  needs: ["base", "dom", "host", "sides", "expansion", "shown", "drawing", "viewport"],
  state: { sel: -1, selGroup: -1 },
  make({ base, dom, host, expansion, shown, drawing, viewport }, st) {
    const { fmtBytes, signedBytes, fmtNum, h, modulePath } = base;
    const { el, vp, panel } = dom;
    const { opts } = host;
    const { notifyCollapsed } = expansion;
    const { ghost, inlined, plain, rep, statusOf } = shown;
    const { draw } = drawing;
    const { boxRect, centreOnNode, fitView, keepInView, setCrumb, setView, size, sizeNow } = viewport;
    const selected = [];
    function onSelected(f) { selected.push(f); }
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
      if (dx > 0) setView({ x: v.x - dx });
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
      // an op titled by its module (q_proj) says its op first: "linear · op"
      const sub = h("div", "plg-d-sub", panel, (n.mod ? n.s[0] + " · " : "") + n.k + (s ? " · " : ""));
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
      const b = h("button", "plg-btn", panel, expansion.isOpen(gi) ? "collapse" : "expand");
      b.type = "button";
      b.addEventListener("click", () => toggle(gi));
    }
    function select(i, quiet) {
      st.sel = i; st.selGroup = -1;
      if (i >= 0) vp.querySelectorAll(".plg-focus").forEach((g) => g.classList.remove("plg-focus"));
      if (i >= 0) setCrumb(i);
      markSelection();
      showDetails();
      keepInView(i); // the drawer narrows the stage
      for (const f of selected) f(); // the overview shows where the selection is
      if (!quiet && opts.onSelect) opts.onSelect(i >= 0 ? st.m.p.nodes[i].id : "");
    }
    // group gi's details shown (a click on its box or block): no node selected
    function selectGroup(gi) {
      st.sel = -1; st.selGroup = gi;
      markSelection();
      showGroupDetails(gi);
      for (const f of selected) f();
      if (opts.onSelect) opts.onSelect("group:" + st.m.p.groups[gi].id);
    }
    // the selection dropped without a word (its index is of the side left)
    function forget() { st.sel = -1; st.selGroup = -1; }
    // open the groups holding node i; `then` runs once it is drawn (also when the data just set is
    // still being laid out: a live view's node selected with its step, as a re-run's old side is)
    function ensureVisible(i, then) {
      const m = st.m;
      const n = m.p.nodes[i];
      const j = inlined(m, i) ? n.inl : i;
      const changed = expansion.openUp(m, m.p.nodes[j].g);
      if (changed || st.drawn !== m) draw(() => { notifyCollapsed(); if (then) then(); });
      else if (then) then();
    }
    function locate(i, k) {
      if (i < 0) return;
      const m = st.m;
      ensureVisible(i, () => {
        if (st.m !== m) return; // the side shown changed meanwhile
        select(i);
        centreOnNode(i, Math.max(st.view.k, k || 1));
      });
    }
    // group gi opened or closed, kept where it was on the screen
    function toggle(gi) {
      const m = st.m;
      const before = st.draw && st.draw.boxes.get(m.N + gi) || (st.draw && st.draw.frames.find((f) => f.b === m.N + gi));
      const anchor = before ? { x: before.x * st.view.k + st.view.x, y: before.y * st.view.k + st.view.y } : null;
      expansion.toggle(m, gi);
      draw(() => {
        // keep the group where it was on the screen
        const after = st.m === m && (st.draw.boxes.get(m.N + gi) || st.draw.frames.find((f) => f.b === m.N + gi));
        if (anchor && after) setView({ x: anchor.x - after.x * st.view.k, y: anchor.y - after.y * st.view.k });
        notifyCollapsed();
      });
    }
    // ---- going to a group --------------------------------------------------------------------
    // open group g (and the groups holding it), then fit the view to it (or to fitTo); drawn
    // once its layouts are made (in a Web Worker: part `place`), so the rest waits for the drawing
    function goGroup(g, fitTo) {
      const m = st.m;
      if (!m || g < 0 || g >= m.G) return;
      const changed = expansion.openUp(m, g);
      if (changed) draw(() => { notifyCollapsed(); if (st.m === m) wentTo(m, g, fitTo); });
      else if (st.drawn === m) wentTo(m, g, fitTo);
    }
    function wentTo(m, g, fitTo) {
      const D = st.draw, r = g === 0 ? { x: 0, y: 0, w: D.w, h: D.h } : D.frameOf.get(g) || D.boxes.get(m.N + g);
      if (!r) return;
      fitView(fitTo || r);
      const mark = vp.querySelector(`[data-gi="${g}"]`);
      vp.querySelectorAll(".plg-located").forEach((e) => e.classList.remove("plg-located"));
      if (mark) mark.classList.add("plg-located");
      el.dataset.located = m.p.groups[g].id;
      if (opts.onGroup) opts.onGroup(m.p.groups[g].id);
    }
    // more details of nodes (a weight's statistics, sent on selection), by node id
    function addDetails(byId) {
      const m = st.m;
      if (!m) return;
      for (const [id, extra] of Object.entries(byId)) {
        const i = m.idIndex.get(id);
        if (i === undefined) continue;
        m.p.details[i] = Object.assign({}, m.p.details[i] || {}, extra);
        if (i === st.sel) showDetails();
      }
    }
    drawing.onDrawn(markSelection);
    return { markSelection, showDetails, showGroupDetails, select, selectGroup, forget, ensureVisible, locate, toggle, goGroup, addDetails, onSelected };
  },
});
})();
