// passlens graph component, part `models`: a payload made ready to draw (base.prepare), once
// per payload; how the two sides' nodes correspond (a node's counterpart, the previous step's
// nodes this step removed or changed); the groups a payload opens with; a group's layout
// made stale (bump). Pure functions of the payloads: owns no state.
(function () {
"use strict";
PasslensGraphParts.part({
  name: "models",
  needs: ["base"],
  make({ base }) {
    const models = new WeakMap();
    function modelOf(p) { let m = models.get(p); if (!m) { m = base.prepare(p); models.set(p, m); } return m; }
    function bump(m, g) { for (; g >= 0; g = g > 0 ? m.p.groups[g].p : -1) m.version[g]++; }
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
        if (!n.st || n.st === "added" || n.st === "moved") continue; // moved: not a change
        const id = n.st === "removed" ? n.id.slice(8) : (A.pairOf.get(i) || n.id);
        const j = before.idIndex.get(id);
        if (j !== undefined) out.set(j, n.st === "failed" ? "changed" : n.st);
      }
      return out;
    }
    // node i's counterpart on side `toMode` (A: the after side's model, B: the before side's)
    function counterpart(A, B, i, toMode) {
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
    return { modelOf, bump, defaultExpanded, beforeStatuses, counterpart };
  },
});
})();
