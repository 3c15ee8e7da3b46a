// passlens graph component, part `dom`: the component's elements in its host element `el`:
// the toolbar (search box, hit and change counters, buttons), the results list, the stage
// (the SVG with its arrow markers and viewport group, the note, the breadcrumb, the legend, the
// minimap's canvas) and the details drawer; `say` sets the note over the stage. Owns no state.
(function () {
"use strict";
PasslensGraphParts.part({
  name: "dom",
  needs: ["base", "host"],
  make({ base, host }) {
    const { h, svg } = base;
    const { el } = host;
    const me = "plg" + base.nextUid();
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
    // the note over the stage (empty: hidden)
    function say(text) {
      note.textContent = text || "";
      note.style.display = note.textContent ? "" : "none";
    }
    return {
      el, me, bar, searchBox, hitInfo, prevHit, nextHitB, prevChange, changeInfo, nextChangeB,
      expandAllB, collapseAllB, fitB, overviewB, modeBox, beforeB, afterB, errB, results, body, stage, root, vp, note, crumb,
      legend, mini, panel, say,
    };
  },
});
})();
