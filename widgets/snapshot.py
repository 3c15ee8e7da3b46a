"""A step's graph without a kernel: the graph component itself (`static/graph.js`) and the
step's payload in one self-contained HTML page, for pictures in notebooks and documents.

- `graph_page`: the page (the component's script and style, the payload as JSON in a
  `<script type="application/json">` element, nothing loaded from the network);
- `GraphSnapshot`: that page in an `<iframe srcdoc>`, for a notebook cell: it is drawn
  where the cell's output is shown, in JupyterLab and in the published HTML of a notebook (no
  widget manager, no kernel: it can be panned, zoomed, searched and expanded, but nothing goes
  back to Python). Several side by side: `side_by_side`.

There is one renderer: the same component, fed the same payload (`widgets.graph_view.
graph_data`) as the Jupyter widget, the Panel app and the HTML report. Weights' statistics are
in the payload's details (no kernel is there to send them when a weight is selected).
"""

from __future__ import annotations

from widgets.boxes import MAX_BOXES
from widgets.escape import esc, json_script
from widgets.graph_view import graph_css, graph_data, graph_js

DEFAULT_HEIGHT = 480  # px of a snapshot in a notebook
_MAX_HEIGHT = 4000

_START = """(function () {
  "use strict";
  const d = JSON.parse(document.getElementById("pl-snapshot").textContent);
  const el = document.getElementById("pl-graph");
  const g = PasslensGraph.create(el, {});
  if (d.fit) { // once the first view is drawn and opened (the component opens it again when
    // it first learns its size, in the frame after the draw): two frames after the draw
    const fitted = new MutationObserver(() => {
      if (!el.dataset.drawMs) return;
      fitted.disconnect();
      requestAnimationFrame(() => requestAnimationFrame(() => g.fit()));
    });
    fitted.observe(el, { attributes: true, subtree: true, attributeFilter: ["data-draw-ms"] });
  }
  g.setData(d.after, d.before || null);
  window.passlensGraph = g;
})();"""


def _height(height: int) -> int:
    if not isinstance(height, int) or isinstance(height, bool) or not 100 <= height <= _MAX_HEIGHT:
        raise ValueError(f"height must be a whole number of pixels from 100 to {_MAX_HEIGHT}")
    return height


def graph_page(
    step,
    baseline=None,
    report=None,
    max_boxes: int = MAX_BOXES,
    height: int = DEFAULT_HEIGHT,
    title: str = "",
    fit: bool = False,
) -> str:
    """The graph of `step` (diff-coloured against `baseline`, the findings of a check
    `report` on it) as one self-contained HTML page drawn by the graph component; the graph
    is `height` pixels tall, `title` the page's title (by default the step's). It opens
    as the component opens it (readable, on the first change or finding), or with `fit`
    the whole graph in view (for a small graph)."""
    data = {**graph_data(step, baseline, report, max_boxes, stats=True), "fit": bool(fit)}
    title = title or f"#{step.index} {step.name}"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{esc(title, 200)}</title>"
        f"<style>html,body{{margin:0}}{graph_css()}</style></head><body>"
        f"<div id='pl-graph' style='height:{_height(height)}px'></div>"
        f"<script type='application/json' id='pl-snapshot'>{json_script(data)}</script>"
        f"<script>{graph_js()}</script><script>{_START}</script>"
        "</body></html>"
    )


class GraphSnapshot:
    """A step's graph drawn by the component in a notebook cell's output, with no widget and
    no kernel (see the module docstring). `GraphSnapshot(step, baseline, report)`; the
    other arguments as for `graph_page`."""

    def __init__(
        self,
        step,
        baseline=None,
        report=None,
        max_boxes: int = MAX_BOXES,
        height: int = DEFAULT_HEIGHT,
        title: str = "",
        fit: bool = False,
    ):
        self.step, self.baseline = step, baseline
        self.height = _height(height)
        self.page = graph_page(step, baseline, report, max_boxes, height, title, fit)

    def iframe_html(self) -> str:
        """The page in an `<iframe srcdoc>` (the page escaped as an attribute value)."""
        label = f"graph of #{self.step.index} {self.step.name}"
        return (
            f'<iframe srcdoc="{esc(self.page, None)}" title="{esc(label, 200)}" '
            f"style='width:100%;height:{self.height + 4}px;border:1px solid #ddd;"
            "border-radius:4px' loading='lazy'></iframe>"
        )

    def _repr_html_(self) -> str:
        return self.iframe_html()

    def __repr__(self) -> str:
        return f"<GraphSnapshot #{self.step.index} {self.step.name}>"


class SideBySide:
    """Several snapshots in one row (`side_by_side`)."""

    def __init__(self, snapshots: list[GraphSnapshot]):
        self.snapshots = snapshots

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<div style='flex:1;min-width:0'>{s.iframe_html()}</div>" for s in self.snapshots
        )
        return f"<div style='display:flex;gap:12px'>{cells}</div>"

    def __repr__(self) -> str:
        return f"<SideBySide of {len(self.snapshots)} graphs>"


def side_by_side(*snapshots: GraphSnapshot) -> SideBySide:
    """Snapshots in one row, each taking an equal share of the width."""
    if not snapshots or not all(isinstance(s, GraphSnapshot) for s in snapshots):
        raise TypeError("side_by_side takes GraphSnapshot objects")
    return SideBySide(list(snapshots))


__all__ = ["DEFAULT_HEIGHT", "GraphSnapshot", "SideBySide", "graph_page", "side_by_side"]
