// GraphView front end: pan / zoom the SVG, search, click a node -> `selected`, details panel,
// double-click a collapsed group -> remove it from `collapsed` (Python redraws).
function render({ model, el }) {
  el.classList.add("pl-gv");
  el.innerHTML =
    '<div class="pl-gv-bar"><input type="search" placeholder="search name / op">' +
    '<button>fit</button><span class="pl-gv-hint"></span></div>' +
    '<div class="pl-gv-body"><div class="pl-gv-canvas"></div><div class="pl-gv-details"></div></div>';
  const input = el.querySelector("input"), canvas = el.querySelector(".pl-gv-canvas");
  const panel = el.querySelector(".pl-gv-details"), hint = el.querySelector(".pl-gv-hint");
  let view = { x: 0, y: 0, k: 1 }, drag = null;

  const svg = () => canvas.querySelector("svg");
  const apply = () => { if (svg()) svg().style.transform = `translate(${view.x}px,${view.y}px) scale(${view.k})`; };
  function fit() {
    const s = svg();
    if (!s || !canvas.clientWidth) return;
    view.k = Math.min(1, canvas.clientWidth / (s.width.baseVal.value || 1));
    view.x = 0; view.y = 0; apply();
  }
  function draw() {
    canvas.innerHTML = model.get("svg");
    fit(); mark(); search();
  }
  function mark() {
    const id = model.get("selected");
    canvas.querySelectorAll("g[data-node-id]").forEach((g) =>
      g.classList.toggle("pl-selected", g.getAttribute("data-node-id") === id));
    panel.textContent = "";
    const info = model.get("details")[id];
    if (!info) { panel.textContent = "Click a node for its details."; return; }
    const table = document.createElement("table");
    for (const [k, v] of Object.entries(info)) {
      if (v === "" || v === null || (typeof v === "object" && Object.keys(v).length === 0)) continue;
      const row = table.insertRow();
      row.insertCell().textContent = k;
      row.insertCell().textContent = typeof v !== "object" ? String(v)
        : Array.isArray(v) ? v.join(", ") : Object.entries(v).map(([a, b]) => a + "=" + b).join("\n");
    }
    panel.appendChild(table);
    if (info.kind === "group") panel.insertAdjacentText("beforeend", "Double-click the box to expand it.");
  }
  function search() {
    const q = model.get("query").trim().toLowerCase();
    let n = 0, first = null;
    canvas.querySelectorAll("g[data-node-id]").forEach((g) => {
      const hit = q !== "" && (g.getAttribute("data-node-id").toLowerCase().includes(q) || g.textContent.toLowerCase().includes(q));
      g.classList.toggle("pl-hit", hit);
      if (hit) { n += 1; first = first || g; }
    });
    hint.textContent = q ? n + " found" : "";
    if (first) {
      const r = first.getBoundingClientRect(), c = canvas.getBoundingClientRect();
      view.x += c.left + c.width / 2 - (r.left + r.width / 2);
      view.y += c.top + c.height / 2 - (r.top + r.height / 2);
      apply();
    }
  }
  const onWheel = (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
    const k = Math.min(8, Math.max(0.02, view.k * Math.exp(-e.deltaY * 0.0015)));
    view.x = mx - (mx - view.x) * (k / view.k); view.y = my - (my - view.y) * (k / view.k); view.k = k;
    apply();
  };
  const onDown = (e) => { drag = { x: e.clientX - view.x, y: e.clientY - view.y, moved: false }; };
  const onMove = (e) => { if (drag) { drag.moved = true; view.x = e.clientX - drag.x; view.y = e.clientY - drag.y; apply(); } };
  const onUp = () => setTimeout(() => { drag = null; }, 0);
  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("mousedown", onDown);
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  canvas.addEventListener("click", (e) => {
    if (drag && drag.moved) return;
    const g = e.target.closest("g[data-node-id]");
    model.set("selected", g ? g.getAttribute("data-node-id") : "");
    model.save_changes();
  });
  canvas.addEventListener("dblclick", (e) => {
    const g = e.target.closest("g[data-group]");
    if (!g || !g.classList.contains("pl_node")) return;
    model.set("collapsed", model.get("collapsed").filter((p) => p !== g.getAttribute("data-group")));
    model.save_changes();
  });
  input.addEventListener("input", () => { model.set("query", input.value); model.save_changes(); });
  el.querySelector("button").addEventListener("click", fit);
  model.on("change:svg", draw);
  model.on("change:selected", mark);
  model.on("change:details", mark);
  model.on("change:query", search);
  input.value = model.get("query");
  draw();
  return () => {
    window.removeEventListener("mousemove", onMove);
    window.removeEventListener("mouseup", onUp);
  };
}
export default { render };
