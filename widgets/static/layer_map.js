// The error map / parameter map (HTML from widgets/error_map.py) as a component: a Panel
// JSComponent in the app, an anywidget in the Jupyter stepper (through the shim of
// widgets/stepper.py). `html` the map, `current` the step shown (its row is marked), `pick`
// set to {step, node, n} when a cell or a row's name is clicked (n: a fresh number, so a
// second click on the same cell is news too).
export function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "pl-map-host";
  el.appendChild(box);
  function mark() {
    box.querySelectorAll("tr[data-row]").forEach((r) => r.classList.toggle("pl-map-current", +r.dataset.row === model.current));
  }
  function draw() { box.innerHTML = model.html; mark(); }
  box.addEventListener("click", (e) => {
    const c = e.target.closest("[data-step]");
    if (!c || !box.contains(c)) return;
    model.pick = { step: +c.dataset.step, node: c.dataset.node || "", n: Date.now() + Math.random() };
  });
  model.on("html", draw);
  model.on("current", mark);
  draw();
}
