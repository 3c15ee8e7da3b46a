// The graph component (PasslensGraph) over a widget model with the anywidget API
// (get / set / on("change:x") / save_changes): the Jupyter GraphView and, through a shim, the
// Panel app's GraphPane. Synced: data ({after, before, plain, note}), selected, collapsed,
// query, mode, and stats (the selected weight's statistics, sent by Python on selection).
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
  function load() {
    const d = model.get("data") || {};
    if (!d.after) return;
    quiet = true;
    try {
      g.setData(d.after, d.before || null, { plain: !!d.plain, note: d.note || "" });
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
