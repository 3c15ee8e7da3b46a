"""The top bar's line about a check, shared by the HTML report and the Panel app: the run's
first failure (kind, step, the message's headline, how many more), wrapped to two lines at
most and then cut, its whole line in its title; or that the check found nothing.

`banner_html` is the line, `TOPBAR_CSS` (`static/banner.css`) lays out a top bar of
`pl-topbar` class: its `meta` one line cut with `…`, its `pl-banner` the rest of the width,
two lines at most. Each page colours them (the report's `static/report.css`, the app's
`widgets.app`).
"""

from __future__ import annotations

from pathlib import Path

from widgets import views
from widgets.escape import esc
from widgets.findings import finding_summary, problems_of

TOPBAR_CSS = (Path(__file__).parent / "static" / "banner.css").read_text()


def finding_line(report, step=None, short: bool = False) -> str:
    """One line about a check's findings (of `step`, or the first failure of the run);
    `short`: with the message's summary (`widgets.findings.finding_summary`; for the
    run, its headline) instead of the whole of it."""
    if report is None:
        return ""
    if step is None:
        first = getattr(report, "first_failure", None)
        if first is None:
            return ""
        n = sum(1 for f in report.findings if f.is_failure)
        more = f" (+{n - 1} more)" if n > 1 else ""
        if short:
            return views.finding_banner(first) + more
        return f"{first.kind} at #{first.step.index} {first.step.name}: {first.message}{more}"
    found = problems_of(report, step)
    if not found:
        return ""
    f = found[0]
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    message = str(getattr(f, "message", ""))
    text = finding_summary(message) if short else message
    return f"{getattr(f, 'kind', '')}: {text}{more}"


def _nbsp_ellipsis(text: str) -> str:
    """`text` with the `…` of a summary kept on the line of the word before it (the line
    wraps, at most twice: a lone `…` must not take the second line)."""
    return text.replace(" …", "\u00a0…")


def banner_html(report, link: bool = True) -> str:
    """The line about a check `report` (`id` and class `pl-banner`), "" without one: its
    first failure's headline, its whole line in its title; with `link`, a link to the
    failure's step (`data-step`: the report's script opens its numerics); "✓ check: no
    findings" where there is none."""
    if report is None:
        return ""
    line = finding_line(report)
    if not line:
        return "<span id='pl-banner' class='pl-banner pl-ok'>✓ check: no findings</span>"
    text = esc(_nbsp_ellipsis(finding_line(report, short=True)))
    if not link:
        return f"<span id='pl-banner' class='pl-banner' title='{esc(line)}'>⚠ {text}</span>"
    k = report.first_failure.step.index
    return (
        f"<a id='pl-banner' class='pl-banner' href='#step-{k}' data-step='{k}' "
        f"title='{esc(line)}'>⚠ {text}</a>"
    )


__all__ = ["TOPBAR_CSS", "banner_html", "finding_line"]
