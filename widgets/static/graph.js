// passlens graph component: one step's graph (a payload from widgets/graph_data.py), laid out in
// the browser a module group at a time (PasslensLayout, static/graph_layout.js), drawn as SVG.
// Shared by the HTML report, the Jupyter GraphView (anywidget) and the Panel app. The component is
// assembled here from modules by concern, each installing its functions on one context `c`
// (the DOM, the state `st`, the options): graph_base.js (helpers, prepared payload),
// graph_state.js (what is shown), graph_place.js (layout of the groups), graph_draw.js (SVG),
// graph_viewport.js (pan / zoom / fit), graph_minimap.js, graph_details.js (selection, drawer),
// graph_search.js (search, changes), graph_interaction.js (expand / collapse, mouse, keys),
// graph_overview.js (the module tree beside the graph, `o`), graph_semantic.js (groups as
// labelled blocks below the zoom where box titles are drawn).
// widgets/graph_view.py (GRAPH_JS) lists them in their order.
//
//   const g = PasslensGraph.create(el, { onSelect(id), onCollapsed(ids), onMode(mode) });
//   g.setData(after, before, o)   // payloads; `before` (optional) is the previous step's, or
//                                 // o.loadBefore() gives a promise of it when first shown
//   g.select(id) / g.locate(id) / g.expand(id) / g.collapse(id) / g.expandAll() / g.collapseAll()
//   g.search(q) / g.nextHit(d) / g.nextChange(d) / g.fit() / g.setMode("after" | "before")
//   g.overview(open) / g.goGroup(id)   // the module tree shown or not; a group opened and fitted
//
// It opens readable (titles 14 px, shapes and attributes 12 px at zoom 1) and centred on the payload's focus (the first
// finding or change); n / p go through the changes, "/" searches (substring, or /regex/) over
// every node including those inside collapsed groups; a double-click expands or collapses a
// group. Text from the model is only ever set as textContent.
const PasslensGraph = (function (P) {
  "use strict";
  const { h, svg, fmtBytes, fmtNum } = P;

  // ----- the component -------------------------------------------------------------------
  function create(el, opts) {
    opts = opts || {};
    const me = "plg" + P.nextUid();
    el.classList.add("plg");
    el.tabIndex = 0;
    el.innerHTML = "";
    const bar = h("div", "plg-bar", el);
    const searchBox = h("input", "plg-search", bar);
    searchBox.type = "search"; searchBox.placeholder = "search names, ops, shapes… (/regex/)";
    searchBox.setAttribute("aria-label", "search the graph");
    searchBox.title = "search names, ops and shapes, or /regex/ (key /; Enter: next hit)";
    const hitInfo = h("span", "plg-hits", bar); // empty (and hidden) until a search
    hitInfo.setAttribute("aria-live", "polite");
    // the toolbar stays one row down to ~560 px (graph.css): short labels, each button's whole
    // meaning in its title (tooltip) and aria-label
    const btn = (label, title, cls, aria) => {
      const b = h("button", "plg-btn " + (cls || ""), bar, label);
      b.title = title; b.type = "button"; b.setAttribute("aria-label", aria || label); return b;
    };
    const prevHit = btn("‹", "previous hit (Shift+Enter)", "plg-prev-hit plg-icon", "previous hit");
    const nextHitB = btn("›", "next hit (Enter)", "plg-next-hit plg-icon", "next hit");
    h("span", "plg-sep", bar);
    const prevChange = btn("◀", "previous change (p)", "plg-prev-change plg-icon", "previous change");
    const changeInfo = h("span", "plg-change-info", bar);
    const nextChangeB = btn("▶", "next change (n)", "plg-next-change plg-icon", "next change");
    h("span", "plg-sep", bar);
    const expandAllB = btn("expand", "expand all: open every group", "plg-expand-all", "expand all groups");
    const collapseAllB = btn("collapse", "collapse all: close every group", "plg-collapse-all", "collapse all groups");
    const fitB = btn("fit", "show the whole graph (f)", "plg-fit", "fit the whole graph");
    const overviewB = btn("overview", "the module tree: nodes, bytes, changes and findings of each group; a click goes there (o)",
      "plg-overview-btn", "overview: the module tree");
    const modeBox = h("span", "plg-mode", bar);
    modeBox.setAttribute("role", "group"); modeBox.setAttribute("aria-label", "before or after this step");
    const beforeB = h("button", "plg-btn plg-before", modeBox, "before"); beforeB.type = "button";
    const afterB = h("button", "plg-btn plg-after plg-on", modeBox, "after"); afterB.type = "button";
    beforeB.title = afterB.title = "show the graph before / after this step (b)";
    beforeB.setAttribute("aria-label", "the graph before this step");
    afterB.setAttribute("aria-label", "the graph after this step");
    const errB = btn("errors", "colour nodes by their error against the reference", "plg-errors", "colour by error");
    const results = h("div", "plg-results", el);
    const body = h("div", "plg-body", el);
    const stage = h("div", "plg-stage", body);
    const root = svg("svg", { class: "plg-svg" }, stage);
    const defs = svg("defs", null, root);
    for (const [name, color] of [["a", "#607d8b"], ["r", "#9e9e9e"], ["s", "#e65100"]]) {
      const mk = svg("marker", { id: `${me}-${name}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
      svg("path", { d: "M0,0 L10,5 L0,10 z", fill: color }, mk);
    }
    const vp = svg("g", { class: "plg-vp" }, root);
    const note = h("div", "plg-note", stage);
    const crumb = h("div", "plg-crumb", stage); // the module of the node in focus
    const legend = h("div", "plg-legend", stage);
    const mini = h("canvas", "plg-mini", stage);
    mini.width = 200; mini.height = 130;
    const panel = h("aside", "plg-details", body);

    const st = { after: null, before: null, mode: "after", m: null, expanded: null, view: { x: 0, y: 0, k: 1 },
      sel: -1, plainAfter: false, hits: [], hit: -1, change: -1, err: false, boxes: null, draw: null, miniImg: null, query: "" };
    const expandedOf = new Map(); // model -> Set of expanded group indices
    const c = { el, opts, me, bar, searchBox, hitInfo, prevHit, nextHitB, prevChange, changeInfo, nextChangeB,
      expandAllB, collapseAllB, fitB, overviewB, modeBox, beforeB, afterB, errB, results, body, stage, root, vp, note, crumb,
      legend, mini, panel, st, expandedOf };
    for (const part of ["state", "place", "drawing", "viewport", "minimap", "details", "search", "interaction", "overview", "semantic"]) P[part](c);
    P.layoutRunner(); // the page's layout worker starts while the page reads the graph's data
    const { modelOf, syncExpansion, counterpart, beforeStatuses, defaultExpanded, boxRect, updateChangeInfo, draw, openView,
      ensureVisible, select, apply, centreOn, search, showDetails, renderLegend, fit, nextHit, nextChange, setCollapsed,
      setAll, onKey, locate, toggle, collapsedIds, unlisten } = c;

    // ---- data and mode -----------------------------------------------------------------------------
    // show one side; `then` runs once it is drawn
    function use(mode, keepView, then) {
      const p = mode === "before" ? st.before : st.after;
      st.mode = mode;
      st.afterUid = modelOf(st.after).uid;
      st.m = modelOf(p);
      if (mode === "before") st.beforeStatus = beforeStatuses(modelOf(st.after), st.m);
      let ex = expandedOf.get(st.m);
      if (!ex) { ex = defaultExpanded(st.m); expandedOf.set(st.m, ex); }
      st.expanded = ex;
      beforeB.classList.toggle("plg-on", mode === "before");
      afterB.classList.toggle("plg-on", mode === "after");
      el.dataset.mode = mode;
      st.change = -1;
      updateChangeInfo();
      draw(() => { if (!keepView) openView(); if (then) then(); });
    }
    function setMode(mode) {
      if (mode === "before" && !st.before && st.loadBefore) { // a live view's before side: asked for when first shown
        const after = st.after;
        st.loadBefore().then((b) => { if (st.after === after && !st.before) { st.before = b; setMode("before"); } });
        return;
      }
      if (mode === st.mode || (mode === "before" && !st.before)) return;
      const from = st.m, sel = st.sel, r = sel >= 0 ? boxRect(sel) : null;
      const screen = r ? { x: (r.x + r.w / 2) * st.view.k + st.view.x, y: (r.y + r.h / 2) * st.view.k + st.view.y } : null;
      const target = modelOf(mode === "before" ? st.before : st.after);
      syncExpansion(from, target);
      let j = sel >= 0 ? counterpart(sel, mode) : -1;
      // a node this step added has no counterpart before it: keep it to come back to
      const added = mode === "before" && sel >= 0 && j < 0 ? st.m.p.nodes[sel].t : "";
      if (mode === "before") st.keepAfter = j < 0 ? sel : -1;
      else if (sel < 0 && st.keepAfter >= 0) j = st.keepAfter;
      st.sel = -1; st.hits = []; st.hit = -1; // indices into the side left: drawing the other side must not read them
      use(mode, true, () => {
        if (st.m !== target) return; // the side shown changed meanwhile
        if (j >= 0) {
          ensureVisible(j, () => {
            if (st.m !== target) return;
            select(j);
            const r2 = boxRect(j);
            if (r2 && screen) { st.view.x = screen.x - (r2.x + r2.w / 2) * st.view.k; st.view.y = screen.y - (r2.y + r2.h / 2) * st.view.k; apply(); }
            else if (r2) centreOn(r2);
          });
        } else if (added) select(-1);
        else { select(-1); openView(); }
      });
      note.textContent = added ? "“" + added + "” is new in this step: the step before has no counterpart" : "";
      note.style.display = added ? "" : "none";
      search(st.query);
      if (opts.onMode) opts.onMode(mode);
    }
    function setData(after, before, o) {
      st.after = after; st.before = before || null;
      st.loadBefore = (!st.before && o && o.loadBefore) || null; // () => a promise of `before`
      st.plainAfter = !!(o && o.plain);
      st.sel = -1; st.keepAfter = -1;
      modeBox.style.display = st.before || st.loadBefore ? "" : "none";
      const m = modelOf(after);
      errB.style.display = m.hasErr ? "" : "none";
      if (!m.hasErr) st.err = false;
      errB.classList.toggle("plg-on", st.err);
      use("after", false);
      showDetails();
      search(st.query);
      note.textContent = (o && o.note) || "";
      note.style.display = note.textContent ? "" : "none";
    }

    Object.assign(c, { use, setMode, setData });
    renderLegend();
    overviewB.addEventListener("click", () => c.toggleOverview());

    return {
      el, setData, setMode, fit, search, nextHit, nextChange, setCollapsed, expandAll: () => setAll(true), collapseAll: () => setAll(false),
      key: onKey,
      overview(open) { c.setOverview(open === undefined ? !c.overviewState.open : open); },
      goGroup(id) { const m = st.m, g = m && m.groupIndex.get(id); if (g !== undefined) c.goGroup(g); },
      get blocks() { return c.semanticState.blocks.slice(); },
      select(id) { const m = st.m; if (!m) return; const i = id ? m.idIndex.get(id) : -1; select(i === undefined ? -1 : i, true); },
      locate(id) { const m = st.m; const i = m && m.idIndex.get(id); if (i !== undefined) locate(i); },
      has(id) { return !!st.m && st.m.idIndex.has(id); },
      addDetails(byId) { // more details of nodes (a weight's statistics, sent on selection)
        const m = st.m;
        if (!m) return;
        for (const [id, extra] of Object.entries(byId)) {
          const i = m.idIndex.get(id);
          if (i === undefined) continue;
          m.p.details[i] = Object.assign({}, m.p.details[i] || {}, extra);
          if (i === st.sel) showDetails();
        }
      },
      expand(id) { const m = st.m, g = m && m.groupIndex.get(id); if (g !== undefined && !st.expanded.has(g)) toggle(g); },
      collapse(id) { const m = st.m, g = m && m.groupIndex.get(id); if (g !== undefined && st.expanded.has(g)) toggle(g); },
      openView, get mode() { return st.mode; }, get view() { return Object.assign({}, st.view); },
      get selected() { return st.m && st.sel >= 0 ? st.m.p.nodes[st.sel].id : ""; },
      get collapsed() { return collapsedIds(); },
      get drawMs() { return st.drawMs; },
      destroy() { unlisten(); },
    };
  }
  return { create, fmtBytes, fmtNum };
})(PasslensGraphParts);
