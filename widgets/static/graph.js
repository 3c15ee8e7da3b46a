// passlens graph component: one step's graph (a payload from widgets/graph_data.py), laid out in
// the browser a module group at a time (PasslensLayout, static/graph_layout.js), drawn as SVG.
// Shared by the HTML report, the Jupyter GraphView (anywidget) and the Panel app.
//
//   const g = PasslensGraph.create(el, { onSelect(id), onCollapsed(ids), onMode(mode) });
//   g.setData(after, before, o)   // payloads; `before` (optional) is the previous step's, or
//                                 // o.loadBefore() gives a promise of it when first shown
//   g.select(id) / g.locate(id) / g.expand(id) / g.collapse(id) / g.expandAll() / g.collapseAll()
//   g.search(q) / g.nextHit(d) / g.nextChange(d) / g.fit() / g.setMode("after" | "before")
//   g.overview(open) / g.goGroup(id)   // the module tree shown or not; a group opened and fitted
//   g.destroy()                        // listeners removed, its layout in the worker cancelled
//
// It opens readable (titles 14 px, shapes and attributes 12 px at zoom 1) and centred on the
// payload's focus (the first finding or change); n / p go through the changes, "/" searches
// (substring, or /regex/) over every node including those inside collapsed groups; a
// double-click expands or collapses a group. Text from the model is only ever set as textContent.
//
// The component is its parts (static/graph/*.js, one part per file: static/graph_parts.js says
// how a part is declared), wired here. WIRING is the diagram: each part after the parts it
// needs, with what it needs; PasslensGraphParts.wire checks it against the parts' own
// declarations (and that each state field has one owner) every time a component is made.
const PasslensGraph = (function (P) {
  "use strict";
  // given to the parts: the host element and options (`host`), the layout engine (`engine`)
  const WIRING = [
    // part          needs                                                          what it is
    ["base",        []],                                                           // constants, helpers, prepared payload
    ["dom",         ["base", "host"]],                                             // the toolbar, stage, drawer elements
    ["models",      ["base"]],                                                     // prepared payloads, the sides' correspondence
    ["sides",       ["models"]],                                                   // the payloads, the side shown (st.m, st.mode)
    ["expansion",   ["host", "models", "sides"]],                                  // the open groups of each side
    ["shown",       ["base", "sides", "expansion"]],                               // what is drawn, sizes, statuses
    ["worker",      ["engine"]],                                                   // layouts in a Web Worker
    ["place",       ["base", "dom", "engine", "sides", "expansion", "shown", "worker"]], // where the boxes go
    ["drawing",     ["base", "dom", "sides", "shown", "place"]],                   // SVG of the placed graph (st.draw)
    ["viewport",    ["base", "dom", "sides", "shown", "drawing"]],                 // pan, zoom, fit (st.view)
    ["details",     ["base", "dom", "host", "sides", "expansion", "shown", "drawing", "viewport"]], // selection, drawer, going to
    ["search",      ["base", "dom", "host", "sides", "shown", "drawing", "details"]], // search, changes (st.hits)
    ["semantic",    ["base", "dom", "sides", "shown", "drawing", "viewport", "details"]], // labelled blocks when zoomed out
    ["minimap",     ["base", "dom", "sides", "shown", "drawing", "viewport", "semantic"]], // the whole drawing, small
    ["overview",    ["base", "dom", "sides", "shown", "drawing", "viewport", "minimap", "details"]], // the module tree
    ["modes",       ["dom", "host", "models", "sides", "expansion", "drawing", "viewport", "details", "search"]], // setData, setMode
    ["interaction", ["dom", "host", "sides", "expansion", "drawing", "viewport", "minimap", "details", "search", "overview", "modes"]], // mouse, keys, buttons
  ];
  const { fmtBytes, fmtNum } = P.defs.get("base").make({});

  function create(el, opts) {
    opts = opts || {};
    const { parts, state: st } = P.wire(WIRING, { host: { el, opts }, engine: PasslensLayout });
    const { details, drawing, expansion, interaction, modes, overview, place, search, viewport } = parts;
    drawing.renderLegend();
    const groupOf = (id) => (st.m ? st.m.groupIndex.get(id) : undefined);
    return {
      el, setData: modes.setData, setMode: modes.setMode, fit: viewport.fit, search: search.search,
      nextHit: search.nextHit, nextChange: search.nextChange, setCollapsed: interaction.setCollapsed,
      expandAll: () => interaction.setAll(true), collapseAll: () => interaction.setAll(false),
      key: interaction.onKey, openView: viewport.openView, addDetails: details.addDetails,
      overview(open) { overview.setOverview(open === undefined ? !st.overviewOpen : open); },
      goGroup(id) { const g = groupOf(id); if (g !== undefined) details.goGroup(g); },
      get blocks() { return st.blocks.slice(); },
      select(id) { const m = st.m; if (!m) return; const i = id ? m.idIndex.get(id) : -1; details.select(i === undefined ? -1 : i, true); },
      locate(id) { const m = st.m; const i = m && m.idIndex.get(id); if (i !== undefined) details.locate(i); },
      has(id) { return !!st.m && st.m.idIndex.has(id); },
      expand(id) { const g = groupOf(id); if (g !== undefined && !expansion.isOpen(g)) details.toggle(g); },
      collapse(id) { const g = groupOf(id); if (g !== undefined && expansion.isOpen(g)) details.toggle(g); },
      get mode() { return st.mode; }, get view() { return Object.assign({}, st.view); },
      get selected() { return st.m && st.sel >= 0 ? st.m.p.nodes[st.sel].id : ""; },
      get collapsed() { return expansion.collapsedIds(); },
      get drawMs() { return st.drawMs; },
      destroy() { interaction.unlisten(); drawing.stop(); place.stop(); },
    };
  }
  return { create, fmtBytes, fmtNum, WIRING };
})(PasslensGraphParts);
