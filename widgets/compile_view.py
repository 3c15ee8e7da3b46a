"""The compile tab of a torch.compile trace: what tlparse shows, beside the passes.

One pane for the whole trace (a `scope="trace"` view of `widgets.views`), from the
trace's `compile_info` (`explorer.inductor.compile_log`): a row per frame Dynamo
compiled (its compile id, graph, guard count, time, and why it was restarted, recompiled or
broken), then per frame

- why: the guard of the earlier compile that failed (a recompile), the restart reasons, the
  graph break;
- the output code's kernels, each with its code (folded under its name: its definition and
  the line that calls it), the post-grad FX nodes it computes and the Dynamo nodes and source
  lines those came from; a node is a link (`data-step`, `data-node`)
  that opens its step with the node selected, in the report, the stepper and the Panel app;
- the compile-time breakdown from torch's own counters (`compilation_metrics`: entire frame,
  backend, Inductor, codegen), the seconds passlens recorded for its pass groups (post-grad
  passes, ...) and torch's `dynamo_timed` regions;
- Dynamo's guards (the guard manager's tree, one guard a line).

Everything shown came from torch's log: every text is escaped here.
"""

from __future__ import annotations

from widgets.escape import esc

COMPILE_CSS = """
.pl-compile{font:12px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;
max-height:calc(100vh - 140px);overflow:auto;padding-right:6px}
.pl-compile h4{margin:14px 0 4px;font-size:13px}
.pl-compile table{border-collapse:collapse;margin:2px 0 6px}
.pl-compile th,.pl-compile td{border:1px solid #e0e0e0;padding:2px 6px;text-align:left;
vertical-align:top}
.pl-compile th{background:#f5f5f5;font-weight:600}
.pl-compile td.pl-num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.pl-compile [data-step]{cursor:pointer}
.pl-compile span.pl-node{color:#1565c0;text-decoration:none;font-family:ui-monospace,monospace;
margin-right:6px;white-space:nowrap}
.pl-compile span.pl-node:hover,.pl-compile .pl-cf-link:hover{text-decoration:underline}
.pl-compile .pl-cf-link{color:#1565c0}
.pl-compile .pl-why{color:#b71c1c}
.pl-compile .pl-brk{color:#e65100}
.pl-compile .pl-bar{display:inline-block;height:9px;background:#86b8de;vertical-align:middle}
.pl-compile pre{background:#fafafa;border:1px solid #eee;padding:6px;max-height:420px;
overflow:auto;font:11px/1.35 ui-monospace,monospace;white-space:pre}
.pl-compile code{font:11px ui-monospace,monospace}
.pl-compile details pre{color:#333}
.pl-compile .pl-kcode pre{max-width:640px}
.pl-compile summary{cursor:pointer}
.pl-compile .pl-kcode summary{white-space:nowrap}
.pl-compile .pl-src{color:#555;font-family:ui-monospace,monospace;font-size:11px}
"""

MAX_REASON = 600  # characters of a reason shown in the frames' table (the whole one below)


def has_compile_info(trace, report=None) -> bool:
    """`when` of the compile tab: a trace torch.compile recorded (or read from its file)."""
    info = getattr(trace, "compile_info", None)
    return bool(info and info.get("frames"))


def _step_attr(trace, index) -> str:
    """`data-step='i'` for a step of `trace` (nothing for an index it does not have)."""
    if isinstance(index, int) and 0 <= index < len(trace.steps):
        return f" data-step='{index}'"
    return ""


def _node(trace, step, name: str) -> str:
    attr = _step_attr(trace, step)
    if not attr:
        return f"<code>{esc(name)}</code>"
    return (
        f"<span class='pl-node' role='link'{attr} data-node='{esc(name)}' "
        f"title='select {esc(name)} in step #{step}'>{esc(name)}</span>"
    )


def _seconds(x: float) -> str:
    return f"{x:.3f} s" if x >= 0.01 else f"{x * 1000:.2f} ms"


def _why(f: dict) -> str:
    parts = [f"recompiled: {r}" for r in f["recompile_reasons"]]
    parts += [f"restarted: {r.strip().splitlines()[0]}" for r in f["restart_reasons"] if r.strip()]
    if f["fail"]:
        parts.append(f"failed: {f['fail']}")
    return "; ".join(parts)


def _summary(trace, frames: list) -> str:
    rows = []
    for f in frames:
        total = next((s for label, s in f["times"] if label.startswith("entire frame")), None)
        graph = _step_attr(trace, f["import_step"])
        name = f"{f['code']} ({f['file'].rsplit('/', 1)[-1]}:{f['line']})"
        title = f"<span class='pl-cf-link'{graph}>{esc(name)}</span>" if graph else esc(name)
        brk = "graph break" if f["graph_break"] else ""
        rows.append(
            f"<tr><td>{esc(f['id'])}</td><td>{title}</td>"
            f"<td class='pl-num'>{'' if f['ops'] is None else f['ops']}</td>"
            f"<td class='pl-num'>{'' if f['guard_count'] is None else f['guard_count']}</td>"
            f"<td class='pl-num'>{'' if total is None else _seconds(total)}</td>"
            f"<td class='pl-num'>{len(f['kernels'])}</td>"
            f"<td><span class='pl-why'>{esc(_why(f), MAX_REASON)}</span> "
            f"<span class='pl-brk'>{brk}</span></td></tr>"
        )
    return (
        "<table class='pl-cf-frames'><thead><tr><th>compile id</th><th>frame</th><th>ops</th>"
        "<th>guards</th><th>compile time</th><th>kernels</th><th>why compiled again / "
        "restarted</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _times(f: dict) -> str:
    rows = [("torch", label, s) for label, s in f["times"]]
    rows += [("passlens (recorded)", label, s) for label, s in f["recorded"]]
    if not rows:
        return ""
    top = max(s for _, _, s in rows) or 1.0
    body = "".join(
        f"<tr><td>{esc(label)}</td><td class='pl-num'>{_seconds(s)}</td>"
        f"<td><span class='pl-bar' style='width:{max(1, round(240 * s / top))}px'></span></td>"
        f"<td style='color:#666'>{esc(who)}</td></tr>"
        for who, label, s in rows
    )
    events = "".join(
        f"<tr><td><code>{esc(name)}</code></td><td class='pl-num'>{_seconds(s)}</td></tr>"
        for name, s in f["events"]
    )
    more = (
        f"<details><summary>torch's timed regions ({len(f['events'])})</summary><table>"
        f"<thead><tr><th>dynamo_timed region</th><th>seconds</th></tr></thead>"
        f"<tbody>{events}</tbody></table></details>"
        if events
        else ""
    )
    return (
        "<table class='pl-cf-times'><thead><tr><th>compile time</th><th>seconds</th><th></th>"
        f"<th>from</th></tr></thead><tbody>{body}</tbody></table>{more}"
    )


MAX_KERNEL_LINES = 300  # lines of a kernel's code shown under it (the whole code: the IR tab)


def kernel_code(lines: list[str], name: str, line: int | None) -> str:
    """A kernel's text from the output code: its definition (`name = async_compile...`
    to the closing `\'\'\')`), if the code defines it, and the line that calls it."""
    out: list[str] = []
    start = next((i for i, t in enumerate(lines) if t.startswith(f"{name} = ")), None)
    if start is not None:
        for t in lines[start : start + MAX_KERNEL_LINES]:
            out.append(t)
            if t.rstrip().endswith("''')") and len(out) > 1:
                break
    if line is not None and 0 < line <= len(lines):
        out.append(f"# line {line}, where it is called:")
        out.append(lines[line - 1].strip())
    return "\n".join(out)


def _output_code(trace, f: dict) -> list[str]:
    i = f["codegen_step"]
    if not isinstance(i, int) or not 0 <= i < len(trace.steps):
        return []
    try:
        return trace.steps[i].texts.get("output code", "").splitlines()
    except Exception:  # a module that cannot give its texts: the table without the code
        return []


def _kernels(trace, f: dict) -> str:
    if not f["kernels"]:
        return "<p class='pl-map-note'>No kernel provenance logged for this graph.</p>"
    rows = []
    code = _output_code(trace, f)
    for k in f["kernels"]:
        post = "".join(_node(trace, f["codegen_step"], n) for n in k["nodes"])
        pre = "".join(_node(trace, f["import_step"], n) for n in k["pre"])
        src = "<br>".join(esc(s) for s in k["sources"])
        line = "" if k["line"] is None else str(k["line"])
        rows.append(
            f"<tr class='pl-kernel'><td>{_kernel_cell(code, k)}</td>"
            f"<td class='pl-num'>{line}</td><td>{post}</td><td>{pre}</td>"
            f"<td class='pl-src'>{src}</td></tr>"
        )
    return (
        "<table class='pl-cf-kernels'><thead><tr><th>kernel</th><th>output code line</th>"
        "<th>FX nodes (post-grad, at inductor codegen)</th><th>Dynamo nodes</th>"
        "<th>source</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _folded(cls: str, what: str, text: str) -> str:
    """A long text from torch as its first line, the whole of it folded beneath."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return (
        f"<details class='{cls}'><summary>{what}: {esc(first, MAX_REASON)}</summary>"
        f"<pre>{esc(text, None)}</pre></details>"
    )


def _kernel_cell(code: list[str], k: dict) -> str:
    text = kernel_code(code, k["name"], k["line"]) if code else ""
    if not text:
        return f"<code>{esc(k['name'])}</code>"
    return (
        f"<details class='pl-kcode'><summary><code>{esc(k['name'])}</code></summary>"
        f"<pre>{esc(text, None)}</pre></details>"
    )


def _frame(trace, f: dict) -> str:
    graph = _step_attr(trace, f["import_step"])
    head = f"{f['id']} {f['code']} ({f['file'].rsplit('/', 1)[-1]}:{f['line']})"
    title = f"<span class='pl-cf-link'{graph}>{esc(head)}</span>" if graph else esc(head)
    why = "".join(
        f"<div class='pl-why'>recompiled: guard failed: {esc(r)}</div>"
        for r in f["recompile_reasons"]
    )
    for r in f["restart_reasons"]:
        why += _folded("pl-why", "restarted", r)
    if f["graph_break"]:
        why += _folded("pl-brk", "graph break", f["graph_break"])
    if f["fail"]:
        why += f"<div class='pl-why'>failed: {esc(f['fail'])}</div>"
    if f["graph"] is None:
        why += "<div class='pl-map-note'>No FX graph: Dynamo compiled nothing for it.</div>"
    guards = f["guards"]
    n = f["guard_count"]
    guard_html = (
        f"<details class='pl-cf-guards'><summary>Dynamo's guards ({'' if n is None else n}"
        f"{' guards, ' if n is not None else ''}{guards.count(chr(10)) + 1} lines)</summary>"
        f"<pre>{esc(guards, None)}</pre></details>"
        if guards
        else "<p class='pl-map-note'>No guards logged.</p>"
    )
    kernels = _kernels(trace, f) if f["graph"] is not None else ""
    return (
        f"<section class='pl-cf' id='pl-cf-{esc(f['id'])}'><h4>{title}</h4>{why}"
        f"{kernels}{_times(f)}{guard_html}</section>"
    )


def compile_html(trace, report=None) -> str:
    """The compile tab (module docstring)."""
    info = getattr(trace, "compile_info", None) or {}
    frames = info.get("frames") or []
    if not frames:
        return "<p class='pl-map-note'>torch.compile logged nothing for this trace.</p>"
    recompiles = sum(1 for f in frames if f["recompile_reasons"])
    breaks = sum(1 for f in frames if f["graph_break"])
    guards = sum(f["guard_count"] or 0 for f in frames)
    head = (
        f"<div class='pl-map-head'><b>{len(frames)}</b> frames compiled · <b>{recompiles}</b> "
        f"recompiles · <b>{breaks}</b> graph breaks · <b>{guards}</b> guards. A node opens its "
        "step with it selected.</div>"
    )
    body = "".join(_frame(trace, f) for f in frames)
    return (
        f"<div class='pl-map pl-compile'><style>{COMPILE_CSS}</style>{head}"
        f"{_summary(trace, frames)}{body}</div>"
    )


__all__ = ["COMPILE_CSS", "compile_html", "has_compile_info", "kernel_code"]
