"""A step's graph as an inline SVG: the DOT of :mod:`widgets.dot` laid out by Graphviz ``dot``
(:func:`graph_svg`, at most :data:`MAX_SVG_BOXES` boxes), with data attributes and readable
titles added.

The only state is the layout cache :data:`LAYOUTS`: an LRU keyed by the step, the baseline and
the view state, backed by a cache keyed by the DOT text itself so two views that draw the same
graph share one layout.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict

import graphviz

from widgets.boxes import MAX_BOXES, graph_view
from widgets.dot import _FONT, _build_dot, _Dot
from widgets.escape import esc

MAX_SVG_BOXES = 2000  # boxes graph_svg lays out with Graphviz at most


class LayoutCache:
    """An LRU of rendered SVGs keyed by (step, baseline, view state), over a second LRU keyed
    by the DOT text (two views drawing the same graph share one layout)."""

    def __init__(self, maxsize: int = 64):
        self.maxsize = maxsize
        self.views: OrderedDict = OrderedDict()
        self.layouts: OrderedDict = OrderedDict()
        self.hits = 0  # views found
        self.misses = 0  # views rendered
        self.layout_runs = 0  # times ``dot`` ran

    def clear(self) -> None:
        """Forget every layout and reset the counters."""
        self.views.clear()
        self.layouts.clear()
        self.hits = self.misses = self.layout_runs = 0

    def _get(self, table: OrderedDict, key):
        value = table.get(key)
        if value is not None:
            table.move_to_end(key)
        return value

    def _put(self, table: OrderedDict, key, value) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.maxsize:
            table.popitem(last=False)


LAYOUTS = LayoutCache()

_G_OPEN = re.compile(r'<g id="(pl_[nce]\d+)" class="([^"]*)">\n<title>[^<]*</title>')


def _svg_of(dot: _Dot) -> str:
    digest = hashlib.sha1(dot.source.encode()).hexdigest()
    raw = LAYOUTS._get(LAYOUTS.layouts, digest)
    if raw is None:
        LAYOUTS.layout_runs += 1
        raw = graphviz.Source(dot.source).pipe(format="svg", encoding="utf-8")
        LAYOUTS._put(LAYOUTS.layouts, digest, raw)
    return _finish_svg(raw, dot)


def _finish_svg(raw: str, dot: _Dot) -> str:
    """Drop the XML prolog and comments; add data attributes and readable titles."""
    start = raw.find("<svg")
    svg = re.sub(r"<!--.*?-->\n?", "", raw[start:], flags=re.S)

    def sub(m: re.Match) -> str:
        sid, cls = m.group(1), m.group(2)
        extra = "".join(f' {k}="{esc(v)}"' for k, v in dot.data.get(sid, {}).items())
        title = dot.titles.get(sid)
        tail = f"\n<title>{esc(title)}</title>" if title else ""
        return f'<g id="{sid}" class="{cls}"{extra}>{tail}'

    svg = _G_OPEN.sub(sub, svg).replace(f' font-family="{_FONT}"', "")
    return svg.replace(
        '<svg width="', f'<svg class="pl_graph" style="font-family:{_FONT}" width="', 1
    )


def graph_svg(step, baseline=None, collapsed=None, max_boxes: int = MAX_BOXES) -> str:
    """The graph of ``step`` as an inline SVG (laid out by Graphviz ``dot``); node groups
    carry ``data-node-id`` (and ``data-group`` for collapsed groups and clusters). Cached per
    (step, baseline, view state) in :data:`LAYOUTS`."""
    state = None if collapsed is None else frozenset(collapsed)
    key = (id(step), id(baseline), state, max_boxes)
    hit = LAYOUTS._get(LAYOUTS.views, key)
    if hit is not None and hit[0] is step and hit[1] is baseline:
        LAYOUTS.hits += 1
        return hit[2]
    LAYOUTS.misses += 1
    view = graph_view(step, baseline, collapsed, max_boxes)
    if view.box_count > MAX_SVG_BOXES:  # Graphviz's time and memory grow fast past this
        raise ValueError(
            f"#{step.index} {step.name}: {view.box_count} boxes to draw, more than the "
            f"{MAX_SVG_BOXES} a static SVG is laid out for; collapse groups, or use the "
            "interactive view (GraphView, trace.stepper(), trace.to_html()), which lays out "
            "a group at a time"
        )
    svg = _svg_of(_build_dot(view))
    LAYOUTS._put(LAYOUTS.views, key, (step, baseline, svg))
    return svg


__all__ = ["LAYOUTS", "MAX_SVG_BOXES", "LayoutCache", "graph_svg"]
