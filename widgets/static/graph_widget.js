// The graph component (PasslensGraph) over a widget model with the anywidget API
// (get / set / on("change:x") / save_changes / send): PasslensWidget.render, what the Jupyter
// GraphView's ES module exports (static/graph_anywidget.js) and, under a shim of that API over
// a Panel model, the Panel app's GraphPane's (static/graph_panel.js). Synced: data ({after,
// before, baseline, plain, note}), baseline_data, selected, collapsed, query, mode, and stats
// (the selected weight's statistics, sent by Python on selection). `data` and `baseline_data`
// come from the kernel as one binary buffer of JSON each (a DataView), or as objects (the
// Panel app). A classic script, as the component's: the entries follow it.
const PasslensWidget = (function () {
"use strict";
function render({ model, el }) {
  el.classList.add("plg-host");
  const box = document.createElement("div"); // sized here: ipywidgets restyles `el` itself
  el.appendChild(box);
  let quiet = false;
  const send = (k, v) => { if (!quiet) { model.set(k, v); model.save_changes(); } };
  const g = PasslensGraph.create(box, {
    onSelect: (id) => send("selected", id),
    onCollapsed: (ids) => send("collapsed", ids),
    onMode: (m) => send("mode", m),
    onSearch: (q) => send("query", q),
  });
  const height = () => { box.style.height = model.get("height") || "640px"; };
  const parsed = (v) => (v instanceof DataView ? JSON.parse(new TextDecoder().decode(v)) : v);
  // the before side of a live view (data.baseline without data.before): the baseline's
  // payload, asked for when the before side is first shown, arrives as `baseline_data`
  let pending = null, listening = false;
  const arrived = () => { const b = parsed(model.get("baseline_data")); return b && b.nodes ? b : null; };
  function baseline() {
    const have = arrived();
    if (have) return Promise.resolve(have);
    if (!listening) {
      listening = true;
      model.on("change:baseline_data", () => { const b = arrived(); if (b && pending) { const r = pending; pending = null; r(b); } });
    }
    return new Promise((resolve) => { pending = resolve; model.send({ want: "baseline" }); });
  }
  function load() {
    const d = parsed(model.get("data")) || {};
    if (!d.after) return;
    pending = null; // a request for an earlier step's baseline: its answer is not this one's
    quiet = true;
    try {
      const lazy = !d.before && d.baseline ? baseline : null;
      g.setData(d.after, d.before || null, { plain: !!d.plain, note: d.note || "", loadBefore: lazy });
      const c = model.get("collapsed");
      if (Array.isArray(c)) g.setCollapsed(c);
      if (model.get("query")) g.search(model.get("query"));
      if (model.get("selected")) g.locate(model.get("selected"));
    } finally { quiet = false; }
  }
  const guarded = (f) => () => { if (quiet) return; quiet = true; try { f(); } finally { quiet = false; } };
  model.on("change:data", load);
  model.on("change:collapsed", guarded(() => g.setCollapsed(model.get("collapsed") || [])));
  model.on("change:query", guarded(() => g.search(model.get("query") || "")));
  model.on("change:selected", guarded(() => { const id = model.get("selected"); if (id && id !== g.selected) g.locate(id); else if (!id) g.select(""); }));
  model.on("change:mode", guarded(() => g.setMode(model.get("mode") || "after")));
  model.on("change:height", height);
  model.on("change:stats", () => g.addDetails(model.get("stats") || {}));
  height();
  load();
  return () => g.destroy();
}
return { render };
})();
