"""GraphView: one step's graph as an anywidget, the same graph component as the HTML report and
the Panel app (`static/graph.js`).

The Python side sends the step's payload (`widgets.graph_data.graph_payload`: nodes,
edges, the module tree, changes, findings, details) as one binary buffer of JSON, and the
previous step's graph for the before / after toggle when the browser first shows the before
side (it asks for it); the browser lays it out a group at a time, pans, zooms, searches,
expands and collapses groups, and reports back the selected node (`selected`), the collapsed
groups (`collapsed`), the search (`query`) and the side shown (`mode`). Setting any of
them from Python moves the view.
"""

from __future__ import annotations

import json

import anywidget
import traitlets

from widgets.boxes import MAX_BOXES
from widgets.graph_assets import (  # noqa: F401  (the component's files, named here too)
    HOST_CSS,
    LAYOUT_JS,
    PARTS,
    STATIC,
    graph_css,
    graph_js,
    layout_js,
    part_files,
)
from widgets.graph_data import graph_payload, weight_stats


def _module(entry: str) -> str:
    """An ES module of the component: its plain scripts, the widget adapter
    (static/graph_widget.js: `PasslensWidget`) and the entry file `entry` (its exports)."""
    return "\n".join(
        (graph_js(), (STATIC / "graph_widget.js").read_text(), (STATIC / entry).read_text())
    )


def graph_esm() -> str:
    """The Jupyter GraphView's ES module (what anywidget loads): the component, its widget
    adapter and the entry static/graph_anywidget.js (`export default { render }`)."""
    return _module("graph_anywidget.js")


def graph_panel_esm() -> str:
    """The Panel GraphPane's ES module: the component, its widget adapter and the entry
    static/graph_panel.js (`export function render`, the adapter under a shim of
    anywidget's model API over Panel's)."""
    return _module("graph_panel.js")


def graph_data(
    step, baseline=None, report=None, max_boxes: int = MAX_BOXES, stats: bool = True
) -> dict:
    """What the component is given for `step` against `baseline`: its payload, and the
    baseline's own graph for the before / after toggle. Without `stats` the weights'
    statistics are left out (a live view sends them when a weight is selected)."""
    return {
        "after": graph_payload(step, baseline, report, max_boxes, stats),
        "before": None
        if baseline is None
        else graph_payload(baseline, None, None, max_boxes, stats),
    }


def selected_stats(view) -> dict:
    """`{id: statistics}` of the weight selected in a live view (a GraphView or the Panel
    app's GraphPane: `selected`, `mode`, `step`, `baseline`), else `{}`."""
    if not view.selected or view.step is None:
        return {}
    step = view.baseline if view.mode == "before" and view.baseline is not None else view.step
    stats = weight_stats(step, view.selected)
    return {view.selected: stats} if stats else {}


def node_details(payload: dict) -> dict[str, dict]:
    """The details of every node of a payload keyed by node id (what the details panel
    shows): kind, op or name, type, status, what changed, bytes, finding mark, and the rest."""
    out = {}
    types = payload["types"]
    for n, d in zip(payload["nodes"], payload["details"], strict=True):
        info = {
            "id": n["id"],
            "kind": n["k"],
            "title": n["t"],
            "type": types[n["ty"]],
            "status": n.get("st", ""),
            "change": n.get("chg", ""),
            "nbytes": n.get("b", 0),
        }
        for key in ("mark", "err"):
            if key in n:
                info[key] = n[key]
        info.update(d)
        out[n["id"]] = info
    return out


class GraphState:
    """What a live graph view (`GraphView`, the Panel app's `GraphPane`) answers from
    its synced state (`data`, `selected`, `stats`, `collapsed`): the payload drawn,
    node details, and expanding / collapsing a group. `show` resets `_details`."""

    _details: dict | None = None

    @property
    def payload(self) -> dict:
        """The payload drawn (the after side)."""
        return self.data.get("after") or {}

    @property
    def details(self) -> dict[str, dict]:
        """Details of every node of the step (and ghosts of removed ones), by node id."""
        if self._details is None:
            self._details = node_details(self.payload) if self.payload else {}
        return self._details

    @property
    def selected_details(self) -> dict:
        """The details of the selected node (empty when nothing is selected), a weight's
        statistics included."""
        info = self.details.get(self.selected, {})
        return {**info, **self.stats.get(self.selected, {})} if info else {}

    def expand(self, group: str) -> None:
        """Show the nodes of a collapsed group (a module path, or `@function`)."""
        self.collapsed = [g for g in self.collapsed if g != group]

    def collapse(self, group: str) -> None:
        """Draw a group (a module path, or `@function`) as one box."""
        if group not in self.collapsed:
            self.collapsed = sorted([*self.collapsed, group])


def json_buffer(value, widget=None):
    """A payload as ipywidgets sends it: one binary buffer of JSON (UTF-8), which the widget
    parses with one `JSON.parse` (`static/graph_widget.js`), instead of a state of some
    100,000 objects that ipywidgets walks for buffers and the kernel writes as JSON. A value
    JSON cannot hold as it is (a NaN, a set, a lone surrogate) is sent as it is, as before:
    the kernel's packer cleans it."""
    if not value:
        return value
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return memoryview(text.encode("utf-8", errors="surrogateescape"))
    except (TypeError, ValueError):  # (UnicodeEncodeError is a ValueError)
        return value


class GraphView(GraphState, anywidget.AnyWidget):
    """The graph of `step` (diff-coloured against `baseline`, findings of a check
    `report` drawn on it); `selected` is the selected node's id, `collapsed` the
    collapsed groups (module paths, `@function`), `query` the search, `mode` the side
    shown (`after` or `before`).

    `data` holds the step's payload (`after`) and whether it has a `baseline`; the
    baseline's own payload (the before side) is made and sent as `baseline_data` when
    the browser first shows the before side (`send_baseline`): most views never show
    it, and it would double what the first view costs. Both are sent as one binary buffer
    each (`json_buffer`)."""

    _esm = graph_esm()
    _css = graph_css()

    data = traitlets.Dict().tag(sync=True, to_json=json_buffer)
    baseline_data = traitlets.Dict().tag(sync=True, to_json=json_buffer)
    selected = traitlets.Unicode("").tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    collapsed = traitlets.List(traitlets.Unicode()).tag(sync=True)
    mode = traitlets.Unicode("after").tag(sync=True)
    height = traitlets.Unicode("640px").tag(sync=True)
    stats = traitlets.Dict().tag(sync=True)  # the selected weight's statistics, by id

    def __init__(
        self,
        step=None,
        baseline=None,
        report=None,
        collapsed=None,
        max_boxes: int = MAX_BOXES,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.max_boxes = max_boxes
        self.step = self.baseline = self.report = None
        self.on_msg(self._on_msg)
        if step is not None:
            self.show(step, baseline, report, collapsed)

    def show(self, step, baseline=None, report=None, collapsed=None) -> None:
        """Draw `step` against `baseline` (in its default view state unless
        `collapsed` is given)."""
        self.step, self.baseline, self.report = step, baseline, report
        after = graph_payload(step, baseline, report, self.max_boxes, stats=False)
        self._details = None
        chosen = after["collapsed"] if collapsed is None else sorted(collapsed)
        with self.hold_sync():
            if self.layout.display == "none":
                self.layout.display = None
            self.selected = ""
            self.mode = "after"
            self.collapsed = list(chosen)
            self.baseline_data = {}
            self.data = {"after": after, "before": None, "baseline": baseline is not None}

    def clear(self) -> None:
        """Show nothing (a step whose graph is over its budget: the frame says why); the next
        `show` draws again."""
        self.step = self.baseline = None
        self._details = None
        with self.hold_sync():
            self.selected = ""
            self.baseline_data = {}
            self.data = {}
            self.layout.display = "none"  # the browser keeps the last drawing otherwise

    def baseline_payload(self) -> dict | None:
        """The payload of the before side (the baseline's own graph: what `graph_data`
        gives as `before`), None without a baseline."""
        if self.baseline is None:
            return None
        return graph_payload(self.baseline, None, None, self.max_boxes, stats=False)

    def send_baseline(self) -> None:
        """Send the before side's payload (`baseline_data`): what the browser asks for when
        it first shows the before side."""
        payload = self.baseline_payload()
        if payload is not None:
            self.baseline_data = payload

    def _on_msg(self, _widget, content, _buffers) -> None:
        if isinstance(content, dict) and content.get("want") == "baseline":
            self.send_baseline()

    @traitlets.observe("selected", "mode")
    def _send_stats(self, change) -> None:
        self.stats = selected_stats(self)

    def __repr__(self) -> str:
        if self.step is None:
            return "<GraphView (empty)>"
        n = len(self.payload["nodes"])
        return f"<GraphView #{self.step.index} {self.step.name}: {n} nodes>"


__all__ = [
    "GraphState",
    "GraphView",
    "graph_css",
    "graph_data",
    "graph_esm",
    "graph_js",
    "graph_panel_esm",
    "layout_js",
    "json_buffer",
    "node_details",
    "selected_stats",
]
