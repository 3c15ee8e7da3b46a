"""The `rewrites` view of a step: the rules its pass applied, with counts, and every rule
application (matched nodes before, produced nodes after); choosing a rule shows only its
rewrites ("all rules" shows them all again).

Self-contained HTML: the filter is a radio button per rule in the view's own form and CSS
that works on rule numbers (`:has`), no script and no name in a selector, so the report,
the Jupyter stepper and the Panel app show the same piece. Every name
is escaped; long lists are cut (`MAX_ROWS` rewrites, `MAX_RULE_ROWS` rules,
`MAX_SHOWN_NAMES` names a cell, `MAX_NAME_CHARS` characters a name), with a note.
"""

from __future__ import annotations

from explorer.rewrites import rule_counts, rule_doc
from widgets.escape import esc

MAX_ROWS = 1000
MAX_SHOWN_NAMES = 8
MAX_NAME_CHARS = 120

MAX_FILTERED_RULES = 200  # rules one can choose to filter by (the rest are listed)
MAX_RULE_ROWS = 1000  # rules listed (a file can name a million)


def _filter_css(n: int) -> str:
    """The filter, in CSS alone (no handler, no name: rule numbers): the chosen radio of the
    view's form hides the other rules' rows and their line of "Showing ..."."""
    css = [
        ".pl-rw-rules{border-collapse:collapse;font:12px/1.4 system-ui,sans-serif;margin:4px 0}",
        ".pl-rw-rules td,.pl-rw-rules th{padding:2px 8px;border-bottom:1px solid #eee;"
        "text-align:left}",
        ".pl-rw-rules th{background:#f5f5f5}.pl-rw-rules td.num{text-align:right}",
        ".pl-rw-rules label{cursor:pointer;display:block}.pl-rw-doc{color:#555}",
        ".pl-rw-rules tr:has(input:checked){background:#e3f2fd}",
    ]
    for k in ["all", *range(n)]:
        chosen = f'.pl-rewrites:has(input[value="{k}"]:checked)'
        if k != "all":
            css.append(f'{chosen} tr[data-r]:not([data-r="{k}"]){{display:none}}')
        css.append(f'{chosen} .pl-rw-shown:not([data-k="{k}"]){{display:none}}')
    return "<style>" + "".join(css) + "</style>"


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
    """The passes nested in `step` that applied rules, in order."""
    trace = step.trace
    if trace is None or not step.children:
        return []
    out, todo = [], list(reversed(step.children))  # a stack, in order: no recursion
    while todo:
        s = trace.steps[todo.pop()]
        if s.rewrites:
            out.append(s)
        todo.extend(reversed(s.children))
    return out


def rewrites_html(step, report=None) -> str:
    """The rewrites view of `step` (see the module docstring); `report` is not used (a
    view of the registry of `widgets.views` takes it)."""
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
            if len(nested) > MAX_ROWS:
                items += f"<li>+{len(nested) - MAX_ROWS} more passes not listed</li>"
            note += f" Its nested passes did:<ul>{items}</ul>"
        return f"<div class='pl-rewrites pl-note' style='font:13px sans-serif'>{note}</div>"
    counts = rule_counts(rewrites)
    compiler = getattr(step.trace, "compiler", "passlens")  # whose rules: its adapter's docs
    number = {rule: k for k, rule in enumerate(counts)}
    total = len(rewrites)
    all_label = f"all {_plural(total, 'rewrite')}"
    filtered = list(counts)[:MAX_FILTERED_RULES]
    radio = "<input type='radio' name='rule' value='{}'{}> "
    rule_rows = [
        f"<tr><td><label>{radio.format('all', ' checked')}<i>all rules</i></label></td>"
        f"<td class='num'>{total}</td><td></td></tr>"
    ]
    shown = [f"<span class='pl-rw-shown' data-k='all'>{esc(all_label)}</span>"]
    for rule, n in list(counts.items())[:MAX_RULE_ROWS]:
        k = number[rule]
        choose = radio.format(k, "") if k < MAX_FILTERED_RULES else ""
        rule_rows.append(
            f"<tr><td><label>{choose}{esc(rule, 400)}</label></td><td class='num'>{n}</td>"
            f"<td class='pl-rw-doc'>{esc(rule_doc(rule, compiler), 400)}</td></tr>"
        )
        if k < MAX_FILTERED_RULES:
            label = f"{_plural(n, 'rewrite')} by {rule}"
            shown.append(f"<span class='pl-rw-shown' data-k='{k}'>{esc(label, 400)}</span>")
    if len(counts) > MAX_RULE_ROWS:
        rule_rows.append(
            f"<tr><td colspan='3' style='color:#888'>+{len(counts) - MAX_RULE_ROWS} more rules "
            "not listed</td></tr>"
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
        f"<form class='pl-rewrites' style='font:13px sans-serif'>{_filter_css(len(filtered))}"
        f"<p><b>#{step.index} {esc(step.name)}</b> applied {_plural(total, 'rewrite')} by "
        f"{_plural(len(counts), 'rule')}. Choose a rule to list only its rewrites.</p>"
        "<table class='pl-rw-rules'><thead><tr><th>rule</th><th>count</th>"
        "<th>what it does</th></tr></thead>"
        f"<tbody>{''.join(rule_rows)}</tbody></table>"
        f"<p>Showing {''.join(shown)}: each rewrite's node "
        f"(what it produced; what it matched when it produced nothing), the nodes it matched in "
        f"{before_name} and the other nodes it produced (ids as the graph's details name them; "
        "grey: gone by the end of the pass).</p>"
        "<table class='pl-table pl-rewrite-list'><thead><tr><th>node</th><th>rule</th>"
        "<th>matched</th><th>also produced</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{more}</form>"
    )


__all__ = ["MAX_ROWS", "rewrites_html"]
