// passlens graph component: its state read as what is shown. Which boxes are drawn (ghosts,
// inlined weights, collapsed groups), their sizes, each node's status on the side shown, the
// list of changes and the focus, the prepared models of both sides and their expanded groups.
(function (P) {
  "use strict";
  const { TITLE, LINE, PADX, PADY, TITLE_H, LINE_H, MAXLABEL, cut, fmtBytes, signedBytes, h, textWidth, prepare } = P;
  P.state = function (c) {
    const { st, expandedOf } = c;
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
    function statusOf(m, i) {
      if (st.mode === "before") return st.beforeStatus.get(i) || "";
      return st.plainAfter ? "" : m.p.nodes[i].st || "";
    }
    function collapsedIds() {
      const m = st.m;
      if (!m) return [];
      const out = [];
      for (let g = 1; g < m.G; g++) if (!st.expanded.has(g)) out.push(m.p.groups[g].id);
      return out;
    }
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
    Object.assign(c, { ghost, inlined, plain, shownNode, groupShown, rep, parentOf, bump, nodeLines, groupLines, boxSize, statusOf, collapsedIds, changes, focusIndex, modelOf, defaultExpanded, beforeStatuses, counterpart, syncExpansion });
  };
})(PasslensGraphParts);
