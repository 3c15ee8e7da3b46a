"""The ``rewrites`` view of a step: the rules its pass applied, with counts, and every rule
application (matched nodes before, produced nodes after); a click on a rule shows only its
rewrites (a click on "all rules" shows them all again).

Self-contained HTML (the filter is an inline handler that works on row numbers, never on
names), so the report, the Jupyter stepper and the Panel app show the same piece. Every name
is escaped; long lists are cut (:data:`MAX_ROWS` rewrites, :data:`MAX_SHOWN_NAMES` names a
cell).
"""

from __future__ import annotations

import html

from explorer.rewrites import rule_counts
from widgets.escape import esc

MAX_ROWS = 1000
MAX_SHOWN_NAMES = 8
MAX_NAME_CHARS = 120

# show the rewrites of the clicked rule (data-rule: its row number; "" for all); the click
# stays here (a front end's click on a table row opens the node of its first cell)
_FILTER_JS = (
    "event.stopPropagation();var b=this.closest('.pl-rewrites'),k=this.dataset.rule;"
    "b.querySelectorAll('tr[data-r]').forEach(function(t){"
    "t.style.display=(k===''||t.dataset.r===k)?'':'none'});"
    "b.querySelectorAll('tr[data-rule]').forEach(function(t){"
    "t.style.background=t.dataset.rule===k?'#e3f2fd':''});"
    "var n=b.querySelector('.pl-rw-shown');if(n)n.textContent=this.dataset.label"
)
_FILTER = f'onclick="{html.escape(_FILTER_JS)}"'
_ROW = "cursor:pointer"


_GONE = (
    "<span style='color:#999' title='not in that step&#x27;s graph: a later rule of the "
    "same pass replaced it'>{}</span>"
)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _names(names, cut: int = 0, graph=None) -> str:
    shown = [
        esc(n, MAX_NAME_CHARS)
        if graph is None or n in graph.nodes
        else _GONE.format(esc(n, MAX_NAME_CHARS))
        for n in names[:MAX_SHOWN_NAMES]
    ]
    more = len(names) - MAX_SHOWN_NAMES + cut
    if more > 0:
        shown.append(f"<span style='color:#888'>+{more} more</span>")
    return ", ".join(shown) or "<span style='color:#888'>-</span>"


def _nested(step) -> list:
    """The passes nested in ``step`` that applied rules, in order."""
    trace = step.trace
    if trace is None or not step.children:
        return []
    out, todo = [], list(step.children)
    while todo:
        s = trace.steps[todo.pop(0)]
        if s.rewrites:
            out.append(s)
        todo[:0] = s.children
    return out


def rewrites_html(step, report=None) -> str:
    """The rewrites view of ``step`` (see the module docstring); ``report`` is not used (a
    view of the registry of :mod:`widgets.views` takes it)."""
    rewrites = list(getattr(step, "rewrites", ()) or ())
    if not rewrites:
        if step.kind != "pass":
            what = "the source graph" if step.kind == "source" else "the import"
            note = f"This step is {what}: rewrites are recorded for passes."
        else:
            note = f"#{step.index} {esc(step.name)} applied no rewrite rule."
        nested = _nested(step)
        if nested:
            items = "".join(
                f"<li>#{s.index} {esc(s.name)}: {_plural(len(s.rewrites), 'rewrite')} by "
                f"{_plural(len(rule_counts(s.rewrites)), 'rule')}</li>"
                for s in nested[:MAX_ROWS]
            )
            note += f" Its nested passes did:<ul>{items}</ul>"
        return f"<div class='pl-rewrites pl-note' style='font:13px sans-serif'>{note}</div>"
    counts = rule_counts(rewrites)
    number = {rule: k for k, rule in enumerate(counts)}
    total = len(rewrites)
    all_label = f"all {_plural(total, 'rewrite')}"
    rule_rows = [
        f"<tr data-rule='' data-label='{esc(all_label)}' {_FILTER} "
        f"style='{_ROW};background:#e3f2fd'><td><i>all rules</i></td>"
        f"<td class='num'>{total}</td></tr>"
    ]
    for rule, n in counts.items():
        label = f"{_plural(n, 'rewrite')} by {rule}"
        rule_rows.append(
            f"<tr data-rule='{number[rule]}' data-label='{esc(label, 400)}' {_FILTER} "
            f"style='{_ROW}' title='show only this rule&#x27;s rewrites'>"
            f"<td>{esc(rule, 400)}</td><td class='num'>{n}</td></tr>"
        )
    before = step.previous
    was = before.graph if before is not None else None
    body = []
    for r in rewrites[:MAX_ROWS]:
        root = (r.produced or r.matched or ("",))[0]
        graph = step.graph if r.produced else was
        body.append(
            f"<tr data-r='{number[r.rule]}' title='click: show this node on the graph'>"
            f"<td>{_names((root,), 0, graph) if root else '-'}</td>"
            f"<td>{esc(r.rule, 400)}</td><td>{_names(r.matched, 0, was)}</td>"
            f"<td>{_names(r.produced[1:], r.cut, step.graph)}</td></tr>"
        )
    more = (
        f"<p style='color:#888'>+{total - MAX_ROWS} more rewrites not listed</p>"
        if total > MAX_ROWS
        else ""
    )
    before_name = f"#{before.index} {esc(before.name)}" if before is not None else "the step before"
    return (
        "<div class='pl-rewrites' style='font:13px sans-serif'>"
        f"<p><b>#{step.index} {esc(step.name)}</b> applied {_plural(total, 'rewrite')} by "
        f"{_plural(len(counts), 'rule')}. Click a rule to list only its rewrites.</p>"
        "<table class='pl-table pl-rules'><thead><tr><th>rule</th><th>count</th></tr></thead>"
        f"<tbody>{''.join(rule_rows)}</tbody></table>"
        f"<p>Showing <span class='pl-rw-shown'>{esc(all_label)}</span>: each rewrite's node "
        f"(what it produced; what it matched when it produced nothing), the nodes it matched in "
        f"{before_name} and the other nodes it produced (ids as the graph's details name them; "
        "grey: gone by the end of the pass).</p>"
        "<table class='pl-table pl-rewrite-list'><thead><tr><th>node</th><th>rule</th>"
        "<th>matched</th><th>also produced</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{more}</div>"
    )


__all__ = ["MAX_ROWS", "rewrites_html"]
