// The Jupyter GraphView's ES module (anywidget's entry point): the graph component's classic
// scripts (widgets.graph_view.graph_js) and its widget adapter (static/graph_widget.js) come
// before this in the module anywidget loads (GraphView._esm, widgets.graph_view.graph_esm).
export default { render: PasslensWidget.render };
