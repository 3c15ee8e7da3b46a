// The Panel app's timeline (a Panel JSComponent): rows of steps with badges (from Python),
// `index` the current step (a click or the arrow keys set it), `hidden` the steps not listed,
// `key_scope` "global" or "focus" (arrow keys anywhere, or only in the timeline).
export function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "pl-timeline";
  box.tabIndex = 0;
  el.appendChild(box);
  const rows = () => Array.from(box.querySelectorAll(".pl-step-row"));
  const listed = () => rows().filter((r) => r.style.display !== "none");
  function mark() {
    const hidden = new Set(model.hidden);
    rows().forEach((r) => {
      const i = +r.dataset.step;
      r.style.display = hidden.has(i) ? "none" : "";
      r.classList.toggle("pl-current", i === model.index);
      if (i === model.index) r.scrollIntoView({ block: "nearest" });
    });
  }
  function draw() { box.innerHTML = model.rows; mark(); }
  function step(d) {
    const shown = listed().map((r) => +r.dataset.step);
    const next = d > 0 ? shown.find((i) => i > model.index) : shown.reverse().find((i) => i < model.index);
    if (next !== undefined) model.index = next;
  }
  box.addEventListener("click", (e) => {
    const r = e.target.closest(".pl-step-row");
    if (r) { model.index = +r.dataset.step; box.focus(); }
  });
  // in the Panel app the arrow keys step wherever the focus is; in Jupyter only when the
  // timeline has it (the notebook needs its arrow keys)
  (model.key_scope === "focus" ? box : document).addEventListener("keydown", (e) => {
    const target = e.composedPath()[0];
    if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
    if (e.key === "ArrowRight" || e.key === "ArrowDown" || e.key === "j") { e.preventDefault(); step(1); }
    else if (e.key === "ArrowLeft" || e.key === "ArrowUp" || e.key === "k") { e.preventDefault(); step(-1); }
  });
  model.on("rows", draw);
  model.on("index", mark);
  model.on("hidden", mark);
  draw();
}
