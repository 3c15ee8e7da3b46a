// passlens graph component, part `shown`: the state read as what is shown. Which boxes are
// drawn (ghosts, inlined weights, collapsed groups), their sizes, each node's status on the side
// shown, the list of changes and the focus. Owns no state.
(function () {
"use strict";
PasslensGraphParts.part({
  name: "shown",
  needs: ["base", "sides", "expansion"],
  make({ base, expansion }, st) {
    const { TITLE, LINE, PADX, PADY, TITLE_H, LINE_H, MAXLABEL, cut, fmtBytes, signedBytes, textWidth } = base;
    const { isOpen } = expansion;
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
      for (let g = m.p.nodes[i].g; g > 0; g = m.p.groups[g].p) if (!isOpen(g)) box = m.N + g;
      return box;
    }
    const parentOf = (m, box) => box < m.N ? m.p.nodes[box].g : m.p.groups[box - m.N].p;

    // ---- sizes ----------------------------------------------------------------------------
    function nodeLines(m, i) {
      const n = m.p.nodes[i];
      const lines = (n.s || []).map((t) => cut(t, MAXLABEL));
      const w = (n.w || []).filter((t, k) => !n.wi || k >= n.wi.length || inlined(m, n.wi[k])).map((t) => "▪ " + cut(t, MAXLABEL));
      return { title: cut(n.t, MAXLABEL), lines, w };
    }
    function groupLines(m, g) {
      const c = m.p.groups[g], lines = [];
      // "live": a run whose nodes were all removed holds 0 of them, and its ghosts
      lines.push(c.ops ? cut(c.ops, MAXLABEL) : (c.n || 0) + (!plain() && c.ch && c.ch.removed ? " live nodes" : " nodes"));
      if (c.b || c.db) lines.push("params " + fmtBytes(c.b || 0) + (c.db ? " (" + signedBytes(c.db) + ")" : ""));
      let marks = "";
      if (!plain() && c.ch) marks = [["added", "+"], ["changed", "~"], ["moved", "→"], ["removed", "−"], ["failed", "!"]].filter(([k]) => c.ch[k]).map(([k, s]) => s + c.ch[k] + " " + k).join("  ");
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
    return { ghost, inlined, plain, shownNode, groupShown, rep, parentOf, nodeLines, groupLines, boxSize, statusOf, changes, focusIndex };
  },
});
})();
