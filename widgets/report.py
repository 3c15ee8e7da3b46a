"""The self-contained HTML report: one file, no server, no network.

``write_html(trace, path)`` writes every step of a trace into one HTML file: a timeline with
badges (changed, node delta, parameter-bytes delta, time, failed), previous / next buttons and
arrow keys, and for the current step its graph (diff-coloured against its previous step, pan,
zoom, search, click a node for its details), its IR text, the IR diff and the parameter table.

Kept small enough to attach to a bug report: only changed steps get a graph of their own (an
unchanged step shows the graph of the step it was given, with the diff colours turned off),
and every heavy piece (SVG, IR text, diff, table) is stored once in a ``<template>`` however
many steps show it; node details are stored once per distinct content in a JSON blob.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from widgets import render, views

_STATIC = Path(__file__).parent / "static"


def _plain_css() -> str:
    """CSS that turns a diff-coloured SVG into the plain graph (for unchanged steps)."""
    rules = [".pl-plain .pl_removed{display:none}"]
    for kind, style in render._KIND_STYLE.items():
        rules.append(
            f".pl-plain .pl_k_{kind}:is(.pl_added,.pl_changed)>:is(polygon,path,ellipse)"
            f"{{fill:{style['fillcolor']}}}"
        )
    rules.append(f".pl-plain text[fill='{render.COLORS['marks']}']{{display:none}}")
    rules.append(".pl-plain .pl_shape>path{stroke:#607d8b}")
    rules.append(".pl-plain .pl_shape>polygon{fill:#607d8b;stroke:#607d8b}")
    rules.append(".pl-plain .pl_shape>text{fill:#000}")
    return "\n".join(rules)


class _Store:
    """Heavy HTML pieces, each stored once (keyed by content)."""

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}
        self.items: list[str] = []

    def add(self, content: str | None) -> int | None:
        if content is None:
            return None
        content = content.replace(render.SORT_ONCLICK, 'onclick="plSort(this)"')
        digest = hashlib.sha1(content.encode()).hexdigest()
        if digest not in self.keys:
            self.keys[digest] = len(self.items)
            self.items.append(content)
        return self.keys[digest]

    def html(self) -> str:
        return "".join(
            f'<template id="pl-t{i}">{content}</template>\n' for i, content in enumerate(self.items)
        )


_XMLNS = re.compile(r' xmlns(:xlink)?="[^"]*"')


def _inline_svg(svg: str) -> str:
    """An SVG from :func:`render.graph_svg` for inline HTML (no namespace URLs needed)."""
    return _XMLNS.sub("", svg, count=2)


def report_html(trace, report=None, max_boxes: int = render.MAX_BOXES, title: str = "") -> str:
    """The whole report as one HTML string (see the module docstring)."""
    store = _Store()
    objs: list[dict] = []
    obj_index: dict[str, int] = {}
    steps_data: list[dict[str, Any]] = []
    owners: dict[int, int] = {}  # step index -> index of the step whose graph it shows
    summary = trace.summary()
    rows_html = []

    def obj(info: dict) -> int:
        key = render.json_script(info)
        if key not in obj_index:
            obj_index[key] = len(objs)
            objs.append(info)
        return obj_index[key]

    for s, row in zip(trace.steps, summary, strict=True):
        prev = s.previous
        plain = s.status == "unchanged" and prev is not None and prev.index in owners
        entry: dict[str, Any] = {
            "name": s.name,
            "status": s.status,
            "depth": s.depth,
            "plain": plain,
            "error": "",
        }
        if plain:
            owner = owners[prev.index]
            owners[s.index] = owner
            entry["owner"] = owner
            entry["svg"] = steps_data[owner]["svg"]
        else:
            owners[s.index] = s.index
            entry["owner"] = s.index
            view = render.graph_view(s, prev, None, max_boxes)
            entry["svg"] = store.add(
                _inline_svg(render.graph_svg(s, prev, view.collapsed, max_boxes))
            )
            details = render.node_details(s, prev, view.collapsed, max_boxes)
            nodes = {}
            for key, info in details.items():
                info = dict(info)  # the details are cached: not ours to change
                status, change = info.pop("status", ""), info.pop("change", "")
                nodes[key] = [obj(info), status, change]
            entry["nodes"] = nodes
        entry["text"] = store.add(render.ir_text_html(s))
        d = render.step_diff(prev, s) if prev is not None else None
        entry["headline"] = d.headline() if d is not None else f"#{s.index} {s.name}"
        entry["diff"] = store.add(render.text_diff_html(d)) if d is not None else None
        entry["params"] = store.add(render.param_table_html(s, prev))
        if report is not None:
            entry["numerics"] = store.add(render.numerics_table_html(s, report))
        if s.failed:
            err = f"{type(s.error).__name__}: {s.error}".rstrip(": ")
            where = f" (in @{s.failed_function})" if s.failed_function else ""
            entry["error"] = f"{s.name} failed{where}: {err}\n{s.traceback}"
        steps_data.append(entry)
        rows_html.append(views.timeline_row_html(s, row, report))

    failure = trace.failure
    data = {
        "steps": steps_data,
        "objs": objs,
        "start": failure.index if failure is not None else 0,
    }
    css = (
        (_STATIC / "report.css").read_text()
        + (_STATIC / "timeline.css").read_text()
        + render.TABLE_CSS
        + _plain_css()
    )
    # the tables' sorting, shared by every table instead of inline in each header
    js = f"function plSort(th){{(function(){{{render._SORT_JS}}}).call(th)}}\n"
    js += (_STATIC / "report.js").read_text()
    name = title or f"passlens: {trace.pipeline or 'trace'}"
    meta = (
        f"{len(trace.steps)} steps · {trace.frontend or 'IR'} · pipeline "
        f"<code>{render.esc(trace.pipeline)}</code>"
    )
    if failure is not None:
        meta += f" · <b>failed at #{failure.index} {render.esc(failure.name)}</b>"
    numerics_tab = numerics_pane = ""
    if report is not None:
        numerics_tab = '<button data-tab="numerics">Numerics</button>'
        numerics_pane = '<div class="pl-pane" id="pl-pane-numerics"></div>'
        first = getattr(report, "first_failure", None)
        if first is not None:
            meta += f" · check: {render.esc(first)}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{render.esc(name)}</title>
<style>{css}</style></head>
<body>
<header><h1>{render.esc(name)}</h1><span class="meta">{meta}</span></header>
<div id="pl-app">
<nav id="pl-timeline"><label><input type="checkbox" id="pl-hide"> hide unchanged passes</label>
{"".join(rows_html)}
</nav>
<main id="pl-main">
<div id="pl-toolbar"><button id="pl-prev" title="previous step (←)">◀ prev</button>
<button id="pl-next" title="next step (→)">next ▶</button><span id="pl-title"></span></div>
<div id="pl-headline"></div><div id="pl-error"></div>
<div id="pl-tabs"><button data-tab="graph" class="pl-on">Graph</button>
<button data-tab="ir">IR</button><button data-tab="diff">IR diff</button>
<button data-tab="params">Params</button>{numerics_tab}</div>
<div class="pl-pane pl-on" id="pl-pane-graph"><div id="pl-stage"><div id="pl-canvas"></div>
<div id="pl-gtools"><input id="pl-search" placeholder="search name / op" type="search">
<button id="pl-fit">fit</button></div><div id="pl-note"></div></div>
<aside id="pl-details"></aside></div>
<div class="pl-pane" id="pl-pane-ir"></div>
<div class="pl-pane" id="pl-pane-diff"></div>
<div class="pl-pane" id="pl-pane-params"></div>{numerics_pane}
</main></div>
{store.html()}<script type="application/json" id="pl-data">{render.json_script(data)}</script>
<script>{js}</script>
</body></html>
"""


def write_html(trace, path, report=None, max_boxes: int = render.MAX_BOXES) -> int:
    """Write the report of ``trace`` (and of a check ``report``, if given) to ``path``;
    returns the file's size in bytes."""
    text = report_html(trace, report=report, max_boxes=max_boxes)
    data = text.encode("utf-8")
    Path(path).write_bytes(data)
    return len(data)


__all__ = ["report_html", "write_html"]
