"""passlens widgets: Jupyter widgets for viewing compiler IR.

    from widgets import PassStepper, GraphView, write_html
    PassStepper(trace)                  # step through the passes (or trace.stepper())
    GraphView(step, baseline)           # one step's graph: pan, zoom, search, click a node
    GraphSnapshot(step, baseline)       # the same graph with no kernel (a notebook's picture)
    write_html(trace, "run.html")       # one self-contained report (or trace.to_html())
    build_app(trace); serve(trace)      # the Panel app (or `passlens serve`, passlens.serve())
    ParamTable(step), ShapeTable(step, report), NumericsTable(step, report), TextDiff(step)

Rendering is pure functions (step -> HTML) in modules with one job each, listed in
`widgets.render`, shared by the widgets, the Panel app and the report; `widgets.views`
is the registry of views (the tabs of all three, in one order) and `widgets.frame` the
frame they share (timeline, header, tab bar, panes). Names are imported on first use, so
`import widgets` stays cheap.
"""

_LAZY = {
    "PassStepper": "widgets.stepper",
    "GraphView": "widgets.graph_view",
    "GraphSnapshot": "widgets.snapshot",
    "write_html": "widgets.report",
    "report_html": "widgets.report",
    "build_app": "widgets.app",
    "serve": "widgets.app",
    "ParamTable": "widgets.tables",
    "ShapeTable": "widgets.tables",
    "NumericsTable": "widgets.tables",
    "TextDiff": "widgets.tables",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'widgets' has no attribute {name!r}")


__all__ = list(_LAZY)
