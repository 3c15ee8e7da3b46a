// The tab bar as a component (a Panel JSComponent in the app, an anywidget in the Jupyter
// stepper through the shim of widgets/stepper.py), after plTabs of static/frame.js: `html` its
// buttons (widgets/frame.py), `active` the key of the tab shown (a click sets it).
export function render({ model, el }) {
  const bar = document.createElement("div");
  bar.className = "pl-tabs";
  el.appendChild(bar);
  const mark = plTabs(bar, (key) => { model.active = key; });
  function draw() { bar.innerHTML = model.html; mark(model.active); }
  model.on("html", draw);
  model.on("active", () => mark(model.active));
  draw();
}
