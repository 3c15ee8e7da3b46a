// passlens graph component, part `expansion`: which groups are open, per model (each side keeps
// its own; groups with the same id are opened and closed alike on both sides when the side
// changes), and telling the host the collapsed groups (opts.onCollapsed). Every change of the
// open groups goes through here; isOpen(g) answers for the side shown.
(function () {
"use strict";
PasslensGraphParts.part({
  name: "expansion",
  needs: ["host", "models", "sides"],
  make({ host, models, sides }, st) {
    const { bump, defaultExpanded } = models;
    const expandedOf = new Map(); // model -> Set of expanded group indices
    let curM = null, cur = null;
    function of(m) {
      let ex = expandedOf.get(m);
      if (!ex) { ex = defaultExpanded(m); expandedOf.set(m, ex); }
      return ex;
    }
    // the open groups of the side shown
    function current() {
      if (st.m !== curM) { curM = st.m; cur = curM ? of(curM) : null; }
      return cur;
    }
    const isOpen = (g) => current().has(g);
    function set(m, s) { expandedOf.set(m, s); if (m === curM) cur = s; }
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
      set(toM, to);
    }
    // group g and the groups holding it opened; whether any was closed
    function openUp(m, g) {
      const ex = of(m);
      let changed = false;
      for (; g > 0; g = m.p.groups[g].p) if (!ex.has(g)) { ex.add(g); bump(m, g); changed = true; }
      return changed;
    }
    function toggle(m, g) {
      const ex = of(m);
      if (ex.has(g)) ex.delete(g); else ex.add(g);
      bump(m, g);
    }
    // every group open (or closed): the layouts start again
    function setAll(m, open) {
      const ex = new Set([0]);
      if (open) for (let g = 1; g < m.G; g++) ex.add(g);
      set(m, ex);
      m.epoch++; m.cache.clear();
    }
    // the groups of `ids` closed, every other open; whether that changed anything
    function setCollapsed(m, ids) {
      const ex = of(m), closed = new Set(ids);
      const next = new Set([0]);
      for (let g = 1; g < m.G; g++) if (!closed.has(m.p.groups[g].id)) next.add(g);
      let same = next.size === ex.size;
      if (same) for (const g of next) if (!ex.has(g)) { same = false; break; }
      if (same) return false;
      for (let g = 1; g < m.G; g++) if (next.has(g) !== ex.has(g)) bump(m, g);
      set(m, next);
      return true;
    }
    function collapsedIds() {
      const m = st.m;
      if (!m) return [];
      const ex = current(), out = [];
      for (let g = 1; g < m.G; g++) if (!ex.has(g)) out.push(m.p.groups[g].id);
      return out;
    }
    function notifyCollapsed() {
      if (host.opts.onCollapsed) host.opts.onCollapsed(collapsedIds());
    }
    return { isOpen, syncExpansion, openUp, toggle, setAll, setCollapsed, collapsedIds, notifyCollapsed };
  },
});
})();
