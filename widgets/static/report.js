// passlens HTML report: steps the timeline, shows a step's graph, IR, IR diff and params.
// Data: #pl-data (JSON); heavy content in <template id="pl-t{k}"> elements, each stored once.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("pl-data").textContent);
  const $ = (id) => document.getElementById(id);
  const rows = Array.from(document.querySelectorAll(".pl-step-row"));
  const canvas = $("pl-canvas");
  let cur = -1, tab = "graph", view = { x: 0, y: 0, k: 1 }, selected = null;

  function fill(el, k) {
    el.textContent = "";
    if (k === null || k === undefined) { el.innerHTML = "<p class='pl-note'>Nothing to show for this step.</p>"; return; }
    el.appendChild(document.getElementById("pl-t" + k).content.cloneNode(true));
  }
  function visible(i) {
    return !($("pl-hide").checked && data.steps[i].status === "unchanged");
  }
  function show(i) {
    if (i < 0 || i >= data.steps.length) return;
    cur = i;
    const s = data.steps[i];
    rows.forEach((r) => r.classList.toggle("pl-current", +r.dataset.step === i));
    rows[i].scrollIntoView({ block: "nearest" });
    $("pl-title").textContent = "#" + i + " " + s.name;
    $("pl-headline").textContent = s.headline;
    $("pl-error").textContent = s.error || "";
    $("pl-error").style.display = s.error ? "" : "none";
    fill(canvas, s.svg);
    canvas.classList.toggle("pl-plain", !!s.plain);
    $("pl-note").textContent = s.plain ? "unchanged: the same graph as #" + s.owner : "";
    $("pl-note").style.display = s.plain ? "" : "none";
    fill($("pl-pane-ir"), s.text);
    fill($("pl-pane-diff"), s.diff);
    fill($("pl-pane-params"), s.params);
    if ($("pl-pane-numerics")) fill($("pl-pane-numerics"), s.numerics);
    fit();
    select(null);
    search($("pl-search").value);
    history.replaceState(null, "", "#step-" + i);
  }
  function step(dir) {
    for (let i = cur + dir; i >= 0 && i < data.steps.length; i += dir) if (visible(i)) return show(i);
  }
  function showTab(name) {
    tab = name;
    document.querySelectorAll("#pl-tabs button").forEach((b) => b.classList.toggle("pl-on", b.dataset.tab === name));
    document.querySelectorAll(".pl-pane").forEach((p) => p.classList.toggle("pl-on", p.id === "pl-pane-" + name));
    if (name === "graph") fit();
  }
  // ----- pan and zoom
  function apply() {
    const svg = canvas.querySelector("svg");
    if (svg) svg.style.transform = "translate(" + view.x + "px," + view.y + "px) scale(" + view.k + ")";
  }
  function fit() {
    const svg = canvas.querySelector("svg");
    if (!svg || !canvas.clientWidth) return;
    const w = svg.width.baseVal.value || 1, h = svg.height.baseVal.value || 1;
    view.k = Math.min(1, canvas.clientWidth / w);
    view.x = Math.max(0, (canvas.clientWidth - w * view.k) / 2);
    view.y = 30;
    apply();
  }
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
    const f = Math.exp(-e.deltaY * 0.0015), k = Math.min(8, Math.max(0.02, view.k * f));
    view.x = mx - (mx - view.x) * (k / view.k);
    view.y = my - (my - view.y) * (k / view.k);
    view.k = k;
    apply();
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX - view.x, y: e.clientY - view.y, moved: false }; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    drag.moved = true;
    view.x = e.clientX - drag.x; view.y = e.clientY - drag.y; apply();
  });
  window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); });
  // ----- details of a clicked node
  function details(id) {
    const s = data.steps[cur], owner = data.steps[s.owner];
    const entry = owner.nodes[id];
    if (!entry) return null;
    const info = Object.assign({}, data.objs[entry[0]]);
    if (!s.plain && entry[1]) info.status = entry[1];
    if (!s.plain && entry[2]) info.change = entry[2];
    return info;
  }
  function select(g) {
    canvas.querySelectorAll(".pl-selected").forEach((n) => n.classList.remove("pl-selected"));
    selected = g ? g.getAttribute("data-node-id") : null;
    const box = $("pl-details");
    box.textContent = "";
    if (!g) { box.innerHTML = "<p class='pl-note'>Click a node for its details.</p>"; return; }
    g.classList.add("pl-selected");
    const info = details(selected) || { id: selected };
    const table = document.createElement("table");
    for (const [k, v] of Object.entries(info)) {
      if (v === "" || v === null || (typeof v === "object" && Object.keys(v).length === 0)) continue;
      const tr = table.insertRow();
      tr.insertCell().textContent = k;
      tr.insertCell().textContent = typeof v === "object" ? (Array.isArray(v) ? v.join(", ") : Object.entries(v).map(([a, b]) => a + "=" + b).join("\n")) : String(v);
      tr.cells[1].style.whiteSpace = "pre-wrap";
    }
    box.appendChild(table);
  }
  canvas.addEventListener("click", (e) => {
    if (drag && drag.moved) return;
    select(e.target.closest("g[data-node-id]"));
  });
  // ----- search by name, id or op
  function search(q) {
    q = (q || "").trim().toLowerCase();
    let first = null;
    canvas.querySelectorAll("g[data-node-id]").forEach((g) => {
      const hit = q !== "" && (g.getAttribute("data-node-id").toLowerCase().includes(q) || g.textContent.toLowerCase().includes(q));
      g.classList.toggle("pl-hit", hit);
      if (hit && !first) first = g;
    });
    if (first) {
      const r = first.getBoundingClientRect(), c = canvas.getBoundingClientRect();
      view.x += c.left + c.width / 2 - (r.left + r.width / 2);
      view.y += c.top + c.height / 2 - (r.top + r.height / 2);
      apply();
    }
  }
  $("pl-search").addEventListener("input", (e) => search(e.target.value));
  $("pl-fit").addEventListener("click", fit);
  // ----- stepping
  rows.forEach((r) => r.addEventListener("click", () => show(+r.dataset.step)));
  $("pl-prev").addEventListener("click", () => step(-1));
  $("pl-next").addEventListener("click", () => step(1));
  $("pl-hide").addEventListener("change", (e) => {
    $("pl-timeline").classList.toggle("pl-hide-unchanged", e.target.checked);
  });
  document.querySelectorAll("#pl-tabs button").forEach((b) => b.addEventListener("click", () => showTab(b.dataset.tab)));
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT") return;
    if (e.key === "ArrowRight" || e.key === "ArrowDown" || e.key === "j") { e.preventDefault(); step(1); }
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp" || e.key === "k") { e.preventDefault(); step(-1); }
  });
  window.addEventListener("resize", fit);
  const m = /^#step-(\d+)$/.exec(location.hash);
  show(m ? Math.min(+m[1], data.steps.length - 1) : data.start);
})();
