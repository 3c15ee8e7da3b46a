"""What the widgets show of a check report's findings: which findings are about a step
(`findings_of`), which of them are problems (`problems_of`, counted on the badges
of the timeline and the summary), and the marks they and the diff put on the graph payload's
nodes (`graph_marks`). The tables, the badges and the graph all read findings here, and
what a kind of finding is (its severity, its marks) from the check's registry of kinds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import explorer.check  # noqa: F401 (registers the kinds of finding)
from explorer.check.registry import kind_of, severity_of
from explorer.fmt import signed_bytes
from explorer.graph import GraphModel, GraphNode

if TYPE_CHECKING:
    from explorer.diff import Diff
    from widgets.boxes import Entry


def findings_of(report, step, kinds: Iterable[str] | None = None) -> list:
    """A check report's findings about `step` (of the given kinds; a finding's `step` may
    be a Step or an index). The report is used through its `findings` only."""
    if report is None:
        return []
    kinds = set(kinds) if kinds is not None else None
    out = []
    for f in getattr(report, "findings", None) or []:
        fs = getattr(f, "step", None)
        same = (
            fs is step
            or (isinstance(fs, int) and fs == step.index)
            or (
                getattr(fs, "index", None) == step.index
                and getattr(fs, "trace", None) is step.trace
            )
        )
        if same and (kinds is None or getattr(f, "kind", None) in kinds):
            out.append(f)
    return out


def problems_of(report, step) -> list:
    """The findings about `step` that are problems (not info such as a signature change)."""
    return [
        f
        for f in findings_of(report, step)
        if getattr(f, "is_failure", severity_of(getattr(f, "kind", "")) != "info")
    ]


def _node_id(target, graph: GraphModel) -> str | None:
    """The graph node id of what a finding names: an id, a graph node or an IR object."""
    if isinstance(target, str):
        return target
    if isinstance(target, GraphNode):
        return target.id
    node = graph.node_of(target)
    return node.id if node is not None else None


def finding_nodes(f, graph: GraphModel) -> list[str]:
    """The ids of `graph`'s nodes the finding `f` names (the ones it has in `graph`)."""
    ids = (_node_id(n, graph) for n in getattr(f, "nodes", None) or [])
    return [i for i in ids if i is not None]


def named_first(report, step, index: dict[str, int], graph: GraphModel) -> int | None:
    """The payload index (`index`: by node id) of the first node the step's first problem
    names (the finding the header names first; the next one when it names no node of
    `graph`), or None: where the view opens, so that the header and the view are about the
    same node (a param-bloat names the copy that grew most first, not the first in the
    graph)."""
    for f in problems_of(report, step):
        for node_id in finding_nodes(f, graph):
            if node_id in index:
                return index[node_id]
    return None


# a finding's summary in a header: its first reason, at most this many characters
SUMMARY_CHARS = 240


def finding_summary(message: str, limit: int = SUMMARY_CHARS) -> str:
    """What a header shows of a finding's `message`: up to its first `; ` outside
    backquotes (the headline and its first reason: a param-bloat's growth and the copy that
    grew most, not the other copies), cut at a space before `limit` characters; with `…`
    where more follows (the whole message is shown beside it, on a click). A name in
    backquotes is never cut in two unless it alone is over the limit."""
    text = message.strip()
    end, quoted = len(text), False
    for k, c in enumerate(text):
        if c == "`":
            quoted = not quoted
        elif c == ";" and not quoted and text[k + 1 : k + 2] == " ":
            end = k
            break
    first = text[:end].rstrip()
    if len(first) > limit:
        cut = first.rfind(" ", 0, limit)
        # not inside a name in backquotes, where a space before it allows
        ticks = first[:cut].count("`") if cut > 0 else 0
        if ticks % 2:
            before = first.rfind("`", 0, cut)
            cut = first.rfind(" ", 0, before) if first.rfind(" ", 0, before) > 0 else cut
        first = first[: cut if cut > 0 else limit].rstrip(" ,:;")
    return first if first == text else first + " …"


def finding_headline(message: str, limit: int = SUMMARY_CHARS) -> str:
    """The headline of a finding's `message` for a one-line banner: its summary
    (`finding_summary`) up to the first `: ` outside backquotes (a param-bloat's
    "parameter bytes grew A -> B (+C, 4.6x)", without the copies it names)."""
    summary = finding_summary(message, limit)
    quoted = False
    for k, c in enumerate(summary):
        if c == "`":
            quoted = not quoted
        elif c == ":" and not quoted and summary[k + 1 : k + 2] == " " and k > 0:
            return summary[:k] + " …"
    return summary


def graph_marks(
    step,
    report,
    diff: Diff | None,
    entries: list[Entry],
    index: dict[str, int],
    graph: GraphModel,
) -> tuple[dict[int, str], set[int], dict[int, float]]:
    """Badges, red outlines and per-node errors of the graph payload's nodes (`entries`,
    by their `index` of keys; `graph` is the step's): from the `diff` against the
    baseline (a parameter that made the total grow, a broadcast copy) and from the check
    `report`, if any."""
    marks: dict[int, str] = {}
    bad: set[int] = set()
    errors: dict[int, float] = {}
    params = graph.params

    def node_of_param(name: str) -> int | None:
        p = params.get(name)
        return index.get(p.node_id) if p is not None else None

    if diff is not None:
        pd = diff.params
        for c in pd.broadcast:
            i = node_of_param(c.name)
            if i is not None:
                # inside its module's frame the source needs no module path
                group = entries[i].group
                source = c.source
                if group and source.startswith(group + "."):
                    source = source[len(group) + 1 :]
                marks[i] = f"×{c.copies} copies of {source}"
        for g in pd.growth:
            i = node_of_param(g.name)
            if i is not None:
                bad.add(i)
                marks.setdefault(i, f"{signed_bytes(g.delta)} ({g.reason})")
    for f in findings_of(report, step):
        kind = kind_of(getattr(f, "kind", ""))
        for target, label in kind.marks(f) if kind is not None else ():
            i = index.get(_node_id(target, graph))
            if i is not None:
                bad.add(i)
                marks.setdefault(i, label)
        for e in (getattr(f, "details", None) or {}).get("node_errors", []):
            node = graph.node_of(getattr(e, "node", None))
            i = index.get(node.id) if node is not None else None
            rel = getattr(e, "max_rel", None)
            if i is not None and rel is not None and math.isfinite(rel):
                errors[i] = max(errors.get(i, 0.0), float(rel))
            elif i is not None and rel is not None and not math.isnan(rel):
                errors[i] = 1e30  # infinitely far: the top of the colour scale
    return marks, bad, errors


__all__ = [
    "SUMMARY_CHARS",
    "finding_headline",
    "finding_nodes",
    "finding_summary",
    "findings_of",
    "graph_marks",
    "named_first",
    "problems_of",
]
