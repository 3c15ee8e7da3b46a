"""The self-contained HTML report: one file, no server, no network.

`write_html(trace, path)` writes every step of a trace into one HTML file, in the frame every
front end shares (`widgets.frame`): a timeline with badges (changed, node delta,
parameter-bytes delta, time, failed, findings), previous / next buttons and arrow keys, the
check's line in the top bar (`widgets.banner`), and a tab per view of `widgets.views`'
registry, in its order: for the current step its graph (the graph component of
`static/graph.js`, diff-coloured against its previous step, with the before / after toggle),
its IR text, the IR diff, the parameters, the shapes and the numerics (with a check report);
for the whole trace the error map (with a check report) and the parameter map
(`widgets.error_map`), whose cells open their step with their node selected. A view
registered later is a tab here with no change to this file.

Kept small enough to attach to a bug report: only changed steps get a graph payload of their
own (`<script type="application/json" id="pl-g{k}">`, parsed when first shown; an unchanged
step shows the graph of the step it was given, drawn plain), and every other pane of a step
(IR text, diff, table, ...) is stored once in a `<template>` however many steps show it.
Steps whose payloads are the same but for their header (`step`, `baseline`: an equal
module of a pass's own against an equal module) share one script: `steps[i].graph` is its
`k`, and its header names the first step that has it (the page reads neither).

Written at scale (bench/render_speed.py --reports): what a pane or payload needs is made once
per module or pair of modules (IR text, shape table, diffs), the timeline's badges make no
diff, and a report imports no Jupyter widget library.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from explorer.graph import collector_paused
from explorer.summary import summary_row
from widgets import views
from widgets.banner import TOPBAR_CSS, banner_html, finding_line
from widgets.bounds import MAX_REPORT_BYTES, check_budget, clip
from widgets.boxes import MAX_BOXES
from widgets.error_map import MAP_CSS
from widgets.escape import esc, json_script
from widgets.frame import FRAME_CSS, frame_js, tab_bar_html
from widgets.ir_text import MAX_TRACEBACK_CHARS, traceback_text
from widgets.tables_html import SORT_JS, SORT_ONCLICK, TABLE_CSS

_STATIC = Path(__file__).parent / "static"


class _Store:
    """Heavy HTML pieces, each stored once (keyed by content)."""

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}
        self.items: list[str] = []
        self.size = 0  # characters of the items

    def add(self, content: str | None) -> int | None:
        if content is None:
            return None
        content = content.replace(SORT_ONCLICK, 'onclick="plSort(this)"')
        digest = hashlib.sha1(content.encode()).hexdigest()
        if digest not in self.keys:
            self.keys[digest] = len(self.items)
            self.items.append(content)
            self.size += len(content)
        return self.keys[digest]

    def html(self) -> str:
        return "".join(
            f'<template id="pl-t{i}">{content}</template>\n' for i, content in enumerate(self.items)
        )


_HEAD = ("step", "baseline")  # a payload's header: the rest is what the component draws


def _script(element_id: str, data: Any) -> str:
    return f'<script type="application/json" id="{element_id}">{json_script(data)}</script>'


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _over_budget(trace, sizes: dict[int, int], total: int, max_bytes: int) -> None:
    """Raise `widgets.bounds.RenderLimitError` once the report is over `max_bytes`,
    naming its largest steps."""
    big = sorted(sizes, key=lambda i: -sizes[i])[:3]
    names = ", ".join(
        f"#{i} {clip(trace.steps[i].name, 60)} ({sizes[i] / 2**20:,.1f} MiB)" for i in big
    )
    check_budget(
        total,
        max_bytes,
        f"the HTML report of {len(trace.steps):,} steps (written so far: {len(sizes):,})",
        f"the largest steps are {names}. Narrow it: fewer steps (a shorter pipeline, or "
        "trace[i].to_html / passlens show for one step), or raise the budget with "
        "to_html(..., max_bytes=N) for a trace you trust.",
    )


def report_html(
    trace,
    report=None,
    max_boxes: int = MAX_BOXES,
    title: str = "",
    progress=None,
    max_bytes: int = MAX_REPORT_BYTES,
) -> str:
    """The whole report as one HTML string (see the module docstring); `progress`: per
    step, as `explorer.progress.Job` shows it (a callback gets `(done, total,
    step name)`). Past `max_bytes` (about: characters) it raises
    `widgets.bounds.RenderLimitError`, naming the largest steps, rather than writing
    a report no browser opens. The cyclic garbage collector is paused meanwhile: a report of
    10,000-node steps makes millions of objects, all kept or freed by their counts, which the
    collector would walk again and again (with every other object of the process)."""
    with collector_paused():
        return _report_html(trace, report, max_boxes, title, progress, max_bytes)


def _report_html(trace, report, max_boxes, title, progress, max_bytes) -> str:
    from explorer.progress import Job
    from widgets.graph_assets import graph_css, graph_js
    from widgets.graph_data import graph_payload

    store = _Store()
    graphs: list[str] = []  # payload scripts, one per distinct graph of a step
    same_graph: dict[bytes, int] = {}  # digest of a payload (its header aside) -> its script
    steps_data: list[dict[str, Any]] = []
    owners: dict[int, int] = {}  # step index -> index of the step whose graph it shows
    # what the timeline's and header's badges read (no op counts: no diff made for them)
    summary = [summary_row(s, ops=False) for s in trace.steps]
    rows_html = []
    shown = views.views_for(trace, report)
    step_views = [v for v in shown if v.scope == "step"]

    job = Job(progress, "writing the report", len(trace.steps), callback=progress)
    try:
        sizes: dict[int, int] = {}  # about the characters each step adds
        total = 0
        for s, row in zip(trace.steps, summary, strict=True):
            job.advance(s.name)
            stored = store.size
            prev = s.previous
            plain = s.status == "unchanged" and prev is not None and prev.index in owners
            entry: dict[str, Any] = {
                "name": clip(s.name),
                "status": s.status,
                "depth": s.depth,
                "plain": plain,
                "error": "",
                "prev": prev.index if prev is not None else None,
            }
            if plain:
                owner = owners[prev.index]
                owners[s.index] = owner
                entry["owner"] = owner
                entry["graph"] = steps_data[owner]["graph"]
            else:
                owners[s.index] = s.index
                entry["owner"] = s.index
                payload = graph_payload(s, prev, report, max_boxes)
                head = {k: payload[k] for k in _HEAD}
                body = json_script({k: v for k, v in payload.items() if k not in _HEAD})
                digest = hashlib.sha1(body.encode("utf-8", "surrogatepass")).digest()
                shared = same_graph.get(digest)
                if shared is not None:  # the very graph of an earlier step (its header aside)
                    entry["graph"] = shared
                    sizes[s.index] = 0
                else:
                    entry["graph"] = same_graph[digest] = len(graphs)
                    text = json_script(head)[:-1] + ("," + body[1:] if len(body) > 2 else "}")
                    graphs.append(
                        f'<script type="application/json" id="pl-g{len(graphs)}">{text}</script>'
                    )
                    sizes[s.index] = len(graphs[-1])
            entry["header"] = views.header_html(s, row, report, notes=False)  # as the stepper's
            entry["panes"] = {v.key: store.add(views.step_html(v, s, report)) for v in step_views}
            if report is not None:
                entry["finding"] = finding_line(report, s)
                if entry["finding"]:  # what the line shows; the whole of it on a click
                    entry["summary"] = finding_line(report, s, short=True)
            if s.failed:
                err = f"{type(s.error).__name__}: {s.error}".rstrip(": ")
                where = f" (in @{s.failed_function})" if s.failed_function else ""
                err = err if len(err) <= MAX_TRACEBACK_CHARS else err[:MAX_TRACEBACK_CHARS] + "..."
                entry["error"] = f"{s.name} failed{where}: {err}\n{traceback_text(s)}"
            steps_data.append(entry)
            rows_html.append(views.timeline_row_html(s, row, report))
            texts = (entry["header"], entry["error"], entry.get("finding", ""), rows_html[-1])
            sizes[s.index] = sizes.get(s.index, 0) + store.size - stored + sum(map(len, texts))
            total += sizes[s.index] + 200
            if total > max_bytes:
                _over_budget(trace, sizes, total, max_bytes)
    finally:  # (closed on an error too: its timer stops drawing it)
        job.close()

    failure = trace.failure
    data = {
        "steps": steps_data,
        "start": views.start_index(trace, report),
        "panes": [v.key for v in step_views],
        "tabs": [v.key for v in shown],
    }
    css = (
        TOPBAR_CSS
        + (_STATIC / "report.css").read_text()
        + FRAME_CSS
        + graph_css()
        + TABLE_CSS
        + MAP_CSS
    )
    # the tables' sorting, shared by every table instead of inline in each header
    js = f"function plSort(th){{(function(){{{SORT_JS}}}).call(th)}}\n"
    js += frame_js() + "\n" + graph_js() + "\n" + (_STATIC / "report.js").read_text()
    pipeline = trace.pipeline or "trace"
    name = title or f"passlens: {_short(pipeline, 40)}"
    meta = (
        f"{len(trace.steps)} steps · {esc(trace.frontend or 'IR')} · pipeline "
        f"<code title='{esc(pipeline)}'>{esc(_short(pipeline, 60))}</code>"
    )
    if failure is not None:
        meta += f" · <b>failed at #{failure.index} {esc(failure.name)}</b>"
    opaque = trace.opaque_ops() if hasattr(trace, "opaque_ops") else []
    if opaque:  # ops without a converter, run by their framework: say so up front
        names = ", ".join(f"{r['target']} ×{r['count']} ({r['runner']})" for r in opaque)
        meta += (
            f" · <span class='pl-opaque-ops' title='opaque ops (no converter; their framework "
            f"computes their values): {esc(names)}'>{len(opaque)} opaque op(s): "
            f"{esc(_short(names, 80))}</span>"
        )
    banner = banner_html(report)  # the first failure: a click opens its numerics
    panes = "".join(_pane_html(v, trace, report, k == 0) for k, v in enumerate(shown))
    if total + len(panes) > max_bytes:  # the trace's views (the error and parameter maps)
        _over_budget(trace, sizes, total + len(panes), max_bytes)
    tabs = tab_bar_html(shown, shown[0].key if shown else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(name)}</title>
<style>{css}</style></head>
<body>
<header class="pl-topbar"><h1 title="{esc(title or pipeline)}">{esc(name)}</h1>
<span class="meta">{meta}</span>{banner}</header>
<div id="pl-app">
<nav id="pl-timeline"><label><input type="checkbox" id="pl-hide"> hide unchanged passes</label>
{"".join(rows_html)}
</nav>
<main id="pl-main">
<div id="pl-toolbar"><button id="pl-prev" title="previous step (←)">◀ prev</button>
<button id="pl-next" title="next step (→)">next ▶</button><div id="pl-head"></div></div>
<div id="pl-finding"></div><div id="pl-error"></div>
<div id="pl-tabs" class="pl-tabs">{tabs}</div>
{panes}
</main></div>
{store.html()}{"".join(graphs)}
{_script("pl-data", data)}
<script>{js}</script>
</body></html>
"""


def _pane_html(view, trace, report, on: bool) -> str:
    """The pane of a view in the page: the graph's host, an empty pane of a step view (filled
    from the step's templates), or a trace view's whole HTML."""
    cls = "pl-pane pl-on" if on else "pl-pane"
    if view.scope == "graph":
        return f'<div class="{cls}" id="pl-pane-{view.key}"><div id="pl-graph"></div></div>'
    if view.scope == "step":
        return f'<div class="{cls} pl-step-pane" id="pl-pane-{view.key}"></div>'
    html = views.trace_html(view, trace, report)
    return f'<div class="{cls} pl-map-pane" id="pl-pane-{view.key}">{html}</div>'


_STEP_IDS = iter(range(1, 1 << 62))


def step_html(step, baseline=None, report=None, max_boxes: int = MAX_BOXES) -> str:
    """One step's graph (diff-coloured against `baseline`) as an HTML snippet that draws
    the graph component in place: what `Step._repr_html_` shows in Jupyter (its scripts
    run in a trusted notebook; elsewhere the snippet says so)."""
    from widgets.graph_view import graph_css, graph_data, graph_js

    data = graph_data(step, baseline, report, max_boxes)
    uid = f"plstep{next(_STEP_IDS)}"
    js = graph_js()
    title = f"#{step.index} {step.name}" + (
        f" against #{baseline.index} {baseline.name}" if baseline is not None else ""
    )
    return (
        f"<div class='pl-step-view'><div style='font:600 13px sans-serif;margin:2px 0'>"
        f"{esc(title)}</div>"
        f"<style>{graph_css()}</style>"
        f"<div id='{uid}' style='height:560px;border:1px solid #ddd'>"
        "<p style='font:12px sans-serif;color:#777;padding:8px'>The graph is drawn by a script: "
        "trust the notebook, or use <code>trace.stepper()</code> / <code>trace.to_html()</code>."
        f"</p></div>{_script(uid + '-data', data)}"
        f"<script>(function(){{{js}\nconst d=JSON.parse(document.getElementById('{uid}-data')"
        f".textContent);const el=document.getElementById('{uid}');el.textContent='';"
        "PasslensGraph.create(el,{}).setData(d.after,d.before);})();</script></div>"
    )


def write_html(
    trace,
    path,
    report=None,
    max_boxes: int = MAX_BOXES,
    progress=None,
    max_bytes: int = MAX_REPORT_BYTES,
) -> int:
    """Write the report of `trace` (and of a check `report`, if given) to `path`;
    returns the file's size in bytes. `max_boxes`: how many boxes a step's graph opens
    with (groups are collapsed, finest first, until it fits); `progress`: per step (see
    `explorer.progress`); `max_bytes`: the report's budget (past it, a
    `widgets.bounds.RenderLimitError` and no file)."""
    text = report_html(
        trace, report=report, max_boxes=max_boxes, progress=progress, max_bytes=max_bytes
    )
    data = text.encode("utf-8")
    Path(path).write_bytes(data)
    return len(data)


__all__ = ["finding_line", "report_html", "step_html", "write_html"]
