// The Panel app's GraphPane's ES module (Panel's entry point, a named `render`): the graph
// component's widget adapter (static/graph_widget.js, written for anywidget's model API) under
// a shim of that API over a Panel JSComponent model (model.x, model.x = v, model.on("x", f)).
// The component's classic scripts and the adapter come before this in the module
// (GraphPane._esm, widgets.graph_view.graph_panel_esm).
export function render({ model, el }) {
  const local = {};
  const shim = {
    get: (k) => model[k],
    set: (k, v) => { model[k] = v; (local[k] || []).forEach((f) => f()); },
    on: (event, f) => {
      const k = event.replace(/^change:/, "");
      (local[k] = local[k] || []).push(f);
      model.on(k, f);
    },
    save_changes: () => {},
  };
  return PasslensWidget.render({ model: shim, el });
}
