"""A finding in a step's header (issue 43): a summary that wraps instead of a 600-character
line cut with "...", the whole message a click away, and the view opening on the node the
header names first."""

import html
import re

from explorer.summary import summary_row
from widgets.findings import finding_headline, finding_summary, problems_of
from widgets.graph_data import graph_payload
from widgets.report import report_html
from widgets.views import finding_html, header_html


def first_named(text: str) -> str:
    """The first name in backquotes."""
    return re.search(r"`([^`]+)`", text).group(1)


def test_a_summary_is_the_headline_and_first_reason():
    message = (
        "after p, parameter bytes grew 1 kB -> 9 kB (+8 kB, 9.0x): `a.w.copy` is 1 × 4 = 4 "
        "copies of `a.w` (4 x 1 kB = 4 kB); `b.w.copy` is 4 copies of `b.w`; and 3 more"
    )
    summary = finding_summary(message)
    assert summary == (
        "after p, parameter bytes grew 1 kB -> 9 kB (+8 kB, 9.0x): `a.w.copy` is 1 × 4 = 4 "
        "copies of `a.w` (4 x 1 kB = 4 kB) …"
    )
    assert finding_headline(message) == "after p, parameter bytes grew 1 kB -> 9 kB (+8 kB, 9.0x) …"
    assert finding_summary("one reason only") == "one reason only"  # nothing more: no "…"
    # a "; " inside a name is not a reason's end
    assert finding_summary("`x; y` grew; z") == "`x; y` grew …"
    # a first reason over the limit: cut at a space, not inside a name, and marked
    long = "grew: " + " ".join(f"`module.{k}.weight`" for k in range(60))
    cut = finding_summary(long, limit=100)
    assert len(cut) <= 102 and cut.endswith(" …") and cut.count("`") % 2 == 0


def test_the_header_names_the_node_the_view_opens_on(bloat_checked):
    trace, report = bloat_checked
    step = trace["fold-constant"]
    (finding,) = problems_of(report, step)
    named = first_named(finding_summary(finding.message))
    # the copy that grew most (features.3.0's, x4), named first: not the first in the graph
    assert named == "features.3.0.block.3.weight.permute_dims.broadcast_to"
    payload = graph_payload(step, step.previous, report)
    assert payload["nodes"][payload["focus"]]["id"] == "$" + named
    in_graph = [payload["nodes"][i]["id"] for i in payload["changes"]]
    first_copy = next(i for i in in_graph if i.endswith(".broadcast_to"))
    assert first_copy != "$" + named  # what the view opened on before: features.1.0's
    # the report opens on that step, with that payload
    page = report_html(trace, report)
    assert re.search(r'"start": ?(\d+)', page).group(1) == str(step.index)


def test_the_header_wraps_a_summary_and_holds_the_whole_message(bloat_checked):
    trace, report = bloat_checked
    step = trace["fold-constant"]
    (finding,) = problems_of(report, step)
    assert len(finding.message) > 500  # the line that was cut with "..."
    head = header_html(step, summary_row(step, ops=False), report)
    assert "nowrap" not in head and "ellipsis" not in head
    summary = re.search(r"<span class='pl-finding-summary'>(.*?)</span>", head).group(1)
    assert len(summary) < 300 and first_named(summary) == first_named(finding.message)
    full = re.search(r"<div class='pl-finding-full'[^>]*>(.*?)</div>", head).group(1)
    assert html.unescape(full) == finding.message  # the whole of it, on a click
    assert finding_html(finding) in head and "<details class='pl-finding'" in head
