"""A step's IR text (`ir_text_html`; after legalize-ops and codegen also its loop IR,
LLVM IR and assembly) and the IR diff of two steps (`text_diff_html`), as HTML."""

from __future__ import annotations

from explorer.diff import Diff
from widgets.escape import esc

# Characters of any text a view shows (graph IR, loop IR, LLVM IR, assembly); the rest is cut
# with a note saying how to get all of it. A module text of a million lines fits in a 14 KB
# trace file: every view (stepper, Panel app, report) shows at most this much of it.
MAX_TEXT_CHARS = 400_000
MAX_BACKEND_TEXT = MAX_TEXT_CHARS  # the earlier name
MAX_TRACEBACK_CHARS = 20_000  # of a failed pass's traceback
MAX_LINE_CHARS = 4000  # of one line of the IR diff (its 10,000 lines are not cut otherwise)


def cut_text(text: str, limit: int, what: str, whole: str) -> tuple[str, str]:
    """`text` cut to `limit` characters (at a line's end when there is one) and the note
    saying so, as HTML (empty when nothing was cut); `whole` says how to get all of it."""
    if len(text) <= limit:
        return text, ""
    shown = text[:limit]
    end = shown.rfind("\n")
    if end > limit // 2:
        shown = shown[:end]
    note = (
        f"<p class='pl-note'>{esc(what)}: the first {len(shown):,} of {len(text):,} characters "
        f"({text.count(chr(10), len(shown)):,} more lines); all of it: {whole}</p>"
    )
    return shown, note


def _whole(step, name: str) -> str:
    attr = "step.text" if name == "IR" else f"step.texts[{name!r}]"
    return (
        f"<code>{esc(attr)}</code> or <code>passlens show TRACE --step {step.index}"
        + ("" if name == "IR" else f" --view '{esc(name)}'")
        + "</code>"
    )


def ir_text_html(step) -> str:
    """The step's IR text; the binding a failed pass failed on marked. After legalize-ops
    also the loop IR of its kernels (open), after codegen the LLVM IR and the assembly
    (folded); each cut at MAX_TEXT_CHARS characters, with a note."""
    failed = step.failed_line
    shown, note = cut_text(step.text, MAX_TEXT_CHARS, "the IR", _whole(step, "IR"))
    lines = shown.splitlines()
    out = []
    for i, line in enumerate(lines):
        cls = " class='pl-failed-line'" if i == failed else ""
        out.append(f"<span{cls}>{esc(line, None)}</span>")  # (the text is cut)
    html = note + "<pre class='pl-ir'>" + "\n".join(out) + "</pre>"
    if getattr(step, "backend_stage", None) is None:
        return html
    parts = [f"<details open><summary>graph IR</summary>{html}</details>"]
    for name, text in step.texts.items():
        if name == "IR":
            continue
        text, note = cut_text(text, MAX_TEXT_CHARS, name, _whole(step, name))
        opened = " open" if name == "loop IR" else ""
        parts.append(
            f"<details{opened}><summary>{esc(name)}</summary>{note}"
            f"<pre class='pl-ir'>{esc(text, None)}</pre></details>"
        )
    return "".join(parts)


_DIFF_CLASS = {"delete": "pl-del", "insert": "pl-ins", "replace": "pl-rep", "equal": ""}


def text_diff_html(d: Diff, mode: str = "both", context: int = 3) -> str:
    """The IR diff as HTML: `side-by-side` (two columns, runs of equal lines cut to
    `context` lines), `unified`, or `both`."""
    if mode not in ("both", "side-by-side", "unified"):
        raise ValueError(f"mode must be 'both', 'side-by-side' or 'unified', not {mode!r}")
    if d.text_same:  # (the unified diff is made only when it is shown)
        return f"<p class='pl-note'>{esc(d.headline())}: the IR text is the same.</p>"
    parts = [f"<p class='pl-note'>{esc(d.text_diff_note)}</p>"] if d.text_diff_note else []
    if mode in ("both", "side-by-side"):
        rows = []
        ln = rn = 0
        for left, right, tag in d.side_by_side(context=context):
            if tag == "skip":
                skipped = int(left.split()[1]) if left and left.split()[1].isdigit() else 0
                ln += skipped
                rn += skipped
                skip = esc(left, MAX_LINE_CHARS)
                rows.append(f"<tr class='pl-skip'><td></td><td colspan='3'>{skip}</td></tr>")
                continue
            cls = f" class='{_DIFF_CLASS[tag]}'" if _DIFF_CLASS[tag] else ""
            lcls = cls if left is not None else ""
            rcls = cls if right is not None else ""
            if left is not None:
                ln += 1
            if right is not None:
                rn += 1
            rows.append(
                f"<tr><td class='ln'>{ln if left is not None else ''}</td>"
                f"<td{lcls}>{esc(left or '', MAX_LINE_CHARS)}</td>"
                f"<td class='ln'>{rn if right is not None else ''}</td>"
                f"<td{rcls}>{esc(right or '', MAX_LINE_CHARS)}</td></tr>"
            )
        parts.append(
            "<table class='pl-diff pl-side-by-side'><colgroup><col style='width:3.5em'><col>"
            "<col style='width:3.5em'><col></colgroup>" + "".join(rows) + "</table>"
        )
    if mode in ("both", "unified"):
        out = []
        for line in d.text_diff.splitlines():
            if line.startswith(("+++", "---")):
                out.append(f"<b>{esc(line, MAX_LINE_CHARS)}</b>\n")
            elif line.startswith("@@"):
                out.append(f"<span class='pl-hunk'>{esc(line, MAX_LINE_CHARS)}</span>")
            elif line.startswith("+"):
                out.append(f"<span class='pl-ins'>{esc(line, MAX_LINE_CHARS)}</span>")
            elif line.startswith("-"):
                out.append(f"<span class='pl-del'>{esc(line, MAX_LINE_CHARS)}</span>")
            else:
                out.append(esc(line, MAX_LINE_CHARS) + "\n")
        parts.append("<pre class='pl-unified'>" + "".join(out) + "</pre>")
    return "".join(parts)


def traceback_text(step) -> str:
    """A failed pass's traceback for a view, cut at MAX_TRACEBACK_CHARS (its end kept: the
    innermost frames say where it failed), with a line saying how to get all of it."""
    tb = step.traceback or ""
    if len(tb) <= MAX_TRACEBACK_CHARS:
        return tb
    return (
        f"[the last {MAX_TRACEBACK_CHARS:,} of {len(tb):,} characters of the traceback; all of "
        f"it: trace[{step.index}].traceback or passlens show TRACE --step {step.index}]\n"
        + tb[-MAX_TRACEBACK_CHARS:]
    )


__all__ = [
    "MAX_BACKEND_TEXT",
    "MAX_TEXT_CHARS",
    "MAX_TRACEBACK_CHARS",
    "cut_text",
    "ir_text_html",
    "text_diff_html",
    "traceback_text",
]
