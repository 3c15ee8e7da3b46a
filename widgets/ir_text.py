"""A step's IR text (:func:`ir_text_html`; after legalize-ops and codegen also its loop IR,
LLVM IR and assembly) and the IR diff of two steps (:func:`text_diff_html`), as HTML."""

from __future__ import annotations

from explorer.diff import Diff
from widgets.escape import esc

# Characters of a backend text (LLVM IR, assembly) shown in HTML; the rest is cut with a note.
MAX_BACKEND_TEXT = 400_000


def ir_text_html(step) -> str:
    """The step's IR text; the binding a failed pass failed on marked. After legalize-ops
    also the loop IR of its kernels (open), after codegen the LLVM IR and the assembly
    (folded), each cut at MAX_BACKEND_TEXT characters."""
    failed = step.failed_line
    lines = step.text.splitlines()
    out = []
    for i, line in enumerate(lines):
        cls = " class='pl-failed-line'" if i == failed else ""
        out.append(f"<span{cls}>{esc(line)}</span>")
    html = "<pre class='pl-ir'>" + "\n".join(out) + "</pre>"
    if getattr(step, "backend_stage", None) is None:
        return html
    parts = [f"<details open><summary>graph IR</summary>{html}</details>"]
    for name, text in step.texts.items():
        if name == "IR":
            continue
        note = ""
        if len(text) > MAX_BACKEND_TEXT:
            note = (
                f"<p class='pl-note'>{esc(name)}: first {MAX_BACKEND_TEXT:,} of {len(text):,} "
                f"characters; all of it: <code>{esc(f'step.texts[{name!r}]')}</code> or "
                f"<code>passlens show TRACE --step {step.index} --view '{esc(name)}'</code></p>"
            )
            text = text[:MAX_BACKEND_TEXT]
        opened = " open" if name == "loop IR" else ""
        parts.append(
            f"<details{opened}><summary>{esc(name)}</summary>{note}"
            f"<pre class='pl-ir'>{esc(text)}</pre></details>"
        )
    return "".join(parts)


_DIFF_CLASS = {"delete": "pl-del", "insert": "pl-ins", "replace": "pl-rep", "equal": ""}


def text_diff_html(d: Diff, mode: str = "both", context: int = 3) -> str:
    """The IR diff as HTML: ``side-by-side`` (two columns, runs of equal lines cut to
    ``context`` lines), ``unified``, or ``both``."""
    if mode not in ("both", "side-by-side", "unified"):
        raise ValueError(f"mode must be 'both', 'side-by-side' or 'unified', not {mode!r}")
    if d.identical or not d.text_diff:
        return f"<p class='pl-note'>{esc(d.headline())}: the IR text is the same.</p>"
    parts = []
    if mode in ("both", "side-by-side"):
        rows = []
        ln = rn = 0
        for left, right, tag in d.side_by_side(context=context):
            if tag == "skip":
                skipped = int(left.split()[1]) if left and left.split()[1].isdigit() else 0
                ln += skipped
                rn += skipped
                rows.append(f"<tr class='pl-skip'><td></td><td colspan='3'>{esc(left)}</td></tr>")
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
                f"<td{lcls}>{esc(left or '')}</td>"
                f"<td class='ln'>{rn if right is not None else ''}</td>"
                f"<td{rcls}>{esc(right or '')}</td></tr>"
            )
        parts.append(
            "<table class='pl-diff pl-side-by-side'><colgroup><col style='width:3.5em'><col>"
            "<col style='width:3.5em'><col></colgroup>" + "".join(rows) + "</table>"
        )
    if mode in ("both", "unified"):
        out = []
        for line in d.text_diff.splitlines():
            if line.startswith(("+++", "---")):
                out.append(f"<b>{esc(line)}</b>\n")
            elif line.startswith("@@"):
                out.append(f"<span class='pl-hunk'>{esc(line)}</span>")
            elif line.startswith("+"):
                out.append(f"<span class='pl-ins'>{esc(line)}</span>")
            elif line.startswith("-"):
                out.append(f"<span class='pl-del'>{esc(line)}</span>")
            else:
                out.append(esc(line) + "\n")
        parts.append("<pre class='pl-unified'>" + "".join(out) + "</pre>")
    return "".join(parts)


__all__ = ["MAX_BACKEND_TEXT", "ir_text_html", "text_diff_html"]
