// passlens HTML report: steps the timeline; the tabs are the views of widgets/views.py's
// registry (data.tabs, their keys; the tab bar's logic is plTabs of static/frame.js). A step's
// graph is the shared graph component (PasslensGraph, static/graph.js) fed the step's payload
// (<script id="pl-g{k}">, parsed when first shown) and the previous step's as "before"; the
// pane of every other view of a step (data.panes) comes from a <template id="pl-t{k}">
// (steps[i].panes[key] = k), each stored once; a view of the whole trace (the error and
// parameter maps, .pl-map-pane) is in its pane, a cell opening its step and node.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("pl-data").textContent);
  const $ = (id) => document.getElementById(id);
  const rows = Array.from(document.querySelectorAll(".pl-step-row"));
  const payloads = new Map();
  const payload = (k) => {
    if (k === null || k === undefined) return null;
    if (!payloads.has(k)) payloads.set(k, JSON.parse($("pl-g" + k).textContent));
    return payloads.get(k);
  };
  const graph = PasslensGraph.create($("pl-graph"), {});
  window.passlensGraph = graph;
  let cur = -1, tab = "graph";

  function fill(el, k) {
    el.textContent = "";
    if (k === null || k === undefined) { el.innerHTML = "<p class='pl-note'>Nothing to show for this step.</p>"; return; }
    el.appendChild(document.getElementById("pl-t" + k).content.cloneNode(true));
  }
  function visible(i) {
    return !($("pl-hide").checked && data.steps[i].status === "unchanged");
  }
  function showGraph() {
    const s = data.steps[cur];
    const prev = s.prev === null ? null : data.steps[s.prev];
    const before = prev ? payload(prev.graph) : null;
    if (s.plain) graph.setData(payload(s.graph), null, { plain: true, note: "unchanged: the same graph as #" + s.owner });
    else graph.setData(payload(s.graph), before);
    graph.shown = cur;
  }
  function show(i) {
    if (i < 0 || i >= data.steps.length) return;
    cur = i;
    const s = data.steps[i];
    rows.forEach((r) => r.classList.toggle("pl-current", +r.dataset.step === i));
    rows[i].scrollIntoView({ block: "nearest" });
    // the header of every front end (widgets/views.py header_html, escaped there)
    $("pl-head").innerHTML = s.header;
    const title = $("pl-head").querySelector(".pl-step-title");
    if (title) title.id = "pl-title";
    const line = $("pl-head").querySelector(".pl-headline");
    if (line) line.title = line.textContent;
    $("pl-error").textContent = s.error || "";
    $("pl-error").style.display = s.error ? "" : "none";
    const f = $("pl-finding");
    f.textContent = "";
    f.style.display = s.finding ? "" : "none";
    if (s.finding) {
      // the summary, wrapped (never cut); the whole finding under it on a click
      const whole = (s.summary || s.finding) !== s.finding;
      const box = document.createElement(whole ? "details" : "div");
      const line = document.createElement(whole ? "summary" : "span");
      line.className = "pl-finding-summary";
      line.textContent = "⚠ " + (s.summary || s.finding);
      box.appendChild(line);
      if (has("numerics")) {
        const a = document.createElement("a");
        a.href = "#"; a.textContent = "numerics ›"; a.title = "the step's numbers and findings";
        a.addEventListener("click", (e) => { e.preventDefault(); showTab("numerics"); });
        line.appendChild(document.createTextNode(" "));
        line.appendChild(a);
      }
      if (whole) {
        const full = document.createElement("div");
        full.className = "pl-finding-full";
        full.textContent = s.finding;
        box.appendChild(full);
      }
      f.appendChild(box);
    }
    data.panes.forEach((key) => fill($("pl-pane-" + key), s.panes[key]));
    if (tab === "graph") showGraph(); else graph.shown = -1;
    document.querySelectorAll(".pl-map-pane tr[data-row]").forEach((r) => r.classList.toggle("pl-map-current", +r.dataset.row === i));
    history.replaceState(null, "", "#step-" + i);
  }
  function step(dir) {
    for (let i = cur + dir; i >= 0 && i < data.steps.length; i += dir) if (visible(i)) return show(i);
  }
  const has = (key) => data.tabs.includes(key);
  const markTab = plTabs($("pl-tabs"), (key) => showTab(key));
  function showTab(name) {
    if (!has(name)) return;
    tab = name;
    markTab(name);
    document.querySelectorAll(".pl-pane").forEach((p) => p.classList.toggle("pl-on", p.id === "pl-pane-" + name));
    if (name === "graph" && graph.shown !== cur) showGraph();
  }
  rows.forEach((r) => r.addEventListener("click", () => show(+r.dataset.step)));
  $("pl-prev").addEventListener("click", () => step(-1));
  $("pl-next").addEventListener("click", () => step(1));
  $("pl-hide").addEventListener("change", (e) => {
    $("pl-timeline").classList.toggle("pl-hide-unchanged", e.target.checked);
  });
  const banner = $("pl-banner");
  if (banner && banner.dataset.step !== undefined) banner.addEventListener("click", (e) => { e.preventDefault(); show(+banner.dataset.step); showTab("numerics"); });
  // one selection: a row of a step's table (params, shapes, numerics, ...) shows its node
  // on the graph (a weight's row names it without its "$")
  function showNode(e) {
    const tr = e.target.closest("table.pl-table tbody tr");
    if (!tr || e.target.closest("th") || !has("graph")) return;
    const first = tr.cells[0] ? tr.cells[0].textContent : "";
    if (!first) return;
    showTab("graph");
    for (const id of [first, "$" + first, "removed:$" + first]) if (graph.has(id)) { graph.locate(id); return; }
    graph.search(first);
  }
  document.querySelectorAll(".pl-step-pane").forEach((p) => p.addEventListener("click", showNode));
  // the error / parameter map: a cell opens its step with its node selected, a row's name the step
  document.querySelectorAll(".pl-map-pane").forEach((p) => p.addEventListener("click", (e) => {
    const c = e.target.closest("[data-step]");
    if (!c) return;
    show(+c.dataset.step);
    showTab("graph");
    if (c.dataset.node && graph.has(c.dataset.node)) graph.locate(c.dataset.node);
  }));
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (t && /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return;
    if (e.key === "ArrowRight" || e.key === "ArrowDown" || e.key === "j") { e.preventDefault(); step(1); }
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp" || e.key === "k") { e.preventDefault(); step(-1); }
    else if (tab === "graph" && !$("pl-graph").contains(t)) graph.key(e);
  });
  const m = /^#step-(\d+)$/.exec(location.hash);
  show(m ? Math.min(+m[1], data.steps.length - 1) : data.start);
})();
