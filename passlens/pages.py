"""The frame of the published notebook pages (passlens/notebooks.py, `make notebooks-html`):
links to the previous and the next page, the bugs page and the glossary; a header saying what a
page teaches, what to know first and the versions it was built with; and the glossary, whose
terms each page links at their first use in its prose."""

from __future__ import annotations

import re
import sys
from html import escape as html_escape
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
BUGS_PAGE = "bugs.html"  # docs/bugs.md, published beside the notebooks' pages

PAGE_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
    "code,pre{font-family:ui-monospace,monospace;font-size:90%}"
    "pre{background:#f6f8fa;padding:.75rem;overflow:auto}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem}"
)

# ===== the pages' frame: navigation, a header, a glossary ========================================

GLOSSARY_PAGE = "glossary.html"

# notebook -> (what you will learn, what to know first); the header of its page
GUIDE: dict[str, tuple[str, str]] = {
    "00_tour": (
        "how passlens records every step of a model's conversion, and how to read the summary, "
        "a step, its diff and the check",
        "PyTorch; nothing about compilers",
    ),
    "01_linear_weight_bloat": (
        "how a needless broadcast and constant folding copied a weight once per batch row, and "
        "how the parameter diff and the check point at the step",
        "the tour (00)",
    ),
    "02_torch_to_ir": (
        "how a PyTorch model becomes IR: the FX graph, ATen ops, provenance, symbolic sizes and "
        "operators without a converter",
        "the tour (00)",
    ),
    "03_squeeze_dynamic_to_static": (
        "how an ONNX frontend's If broadcast put 13 into a shape, and why the step that shows a "
        "wrong shape is not always the step that made it",
        "the tour (00); ONNX export from PyTorch",
    ),
    "04_lift_transform_params": (
        "how to read passlens IR by hand, and why a pass that changes a signature must be "
        "compared through the new calling convention",
        "the tour (00)",
    ),
    "05_lazy_transform_params": (
        "how a failing pass is recorded (the exception, the module, the binding), two "
        "workarounds and a fix",
        "notebook 04",
    ),
    "06_reduce_and_error_map": (
        "which layer went wrong first (the error map) and how to reduce a finding to a case "
        "small enough to file",
        "the tour (00) and notebook 01",
    ),
    "07_tvm": (
        "the same tools on Apache TVM's own Relax passes, and what the Relax IR looks like",
        "notebooks 01, 04 and 05",
    ),
    "08_torch_compile": (
        "torch.compile's stages (Dynamo, AOTAutograd, Inductor), how to find a wrong pass among "
        "them, and what torch's own tools answer",
        "the tour (00); torch.compile as a user",
    ),
    "09_onnxruntime": (
        "ONNX Runtime's graph optimizer step by step, and a fusion that ignores keepdims",
        "the tour (00); ONNX export from PyTorch",
    ),
    "10_your_first_pass": (
        "how to write a pass of your own, run it, find its bug, fix it and run it again",
        "the tour (00) and notebook 04's IR",
    ),
    "11_iree": (
        "how IREE compiles a torch model through MLIR, phase by phase and pass by pass, and how "
        "the check's bisection names the pass whose option changed the numbers",
        "the tour (00); notebook 09's check of every step helps",
    ),
}

# (term, its anchor, what it means); a page links the first use of each in its prose
GLOSSARY: tuple[tuple[str, str, str], ...] = (
    (
        "IR",
        "ir",
        "Intermediate representation: the program as the compiler holds it between the "
        "model and machine code. Each pass reads IR and writes IR.",
    ),
    (
        "ATen",
        "aten",
        "PyTorch's core operator library (`aten.addmm`, `aten.var_mean`, ...): what "
        "torch.export and AOTAutograd reduce a model's Python to.",
    ),
    (
        "FX",
        "fx",
        "torch.fx, PyTorch's graph format in Python: a list of nodes, each a call "
        "(placeholder, call_function, output). Dynamo and torch.export produce FX graphs.",
    ),
    (
        "TorchScript",
        "torchscript",
        "PyTorch's older way to capture a model (`torch.jit`); the "
        "legacy ONNX exporter and Relay's PyTorch frontend read it.",
    ),
    (
        "Dynamo",
        "dynamo",
        "torch.compile's front end: it reads a model's Python bytecode as it runs "
        "and records the tensor operations into an FX graph.",
    ),
    (
        "AOTAutograd",
        "aotautograd",
        "torch.compile's second stage: it traces Dynamo's graph down to "
        "ATen ops (and, for training, the backward graph).",
    ),
    (
        "Inductor",
        "inductor",
        "torch.compile's default backend: FX passes on the ATen graph, then "
        "lowering to loops, a scheduler that fuses them, and generated C++ or Triton code.",
    ),
    (
        "Relay",
        "relay",
        "Apache TVM's former graph-level IR and its frontends, removed in TVM 0.20.",
    ),
    ("Relax", "relax", "Apache TVM's current graph-level IR (`tvm.relax`), printed as TVMScript."),
    (
        "opset",
        "opset",
        "An ONNX operator-set version: which operators, and which version of each, a "
        "model may use (`opset_version=17`).",
    ),
    (
        "ONNX",
        "onnx",
        "Open Neural Network Exchange: a file format for models, a graph of "
        "standard operators, read by ONNX Runtime and by compilers' ONNX frontends.",
    ),
    (
        "freezing",
        "freezing",
        "Inductor's `freezing` option: weights are treated as constants of the "
        "graph, so passes may fold and rewrite them (some CPU rewrites run only then).",
    ),
    (
        "constant folding",
        "constant-folding",
        "A pass that computes ahead of time every op whose "
        "inputs are all constants and stores the result as a new constant.",
    ),
    (
        "MLIR",
        "mlir",
        "A compiler infrastructure of the LLVM project: IR made of operations from dialects, "
        "with SSA values between them and regions nested inside them. IREE is built on it.",
    ),
    (
        "dialect",
        "dialect",
        "In MLIR, a namespace of operations and types (`torch.`, `linalg.`, `arith.`, "
        "`flow.`, `stream.`, `hal.` ...); a pipeline lowers a program from dialect to dialect.",
    ),
    (
        "phase",
        "phase",
        "One of the named parts of IREE's pipeline (`input`, `abi`, `global-optimization`, "
        "`dispatch-creation`, `flow`, `stream`, ... `vm`): what iree-compile's `--compile-to` "
        "and `--compile-from` name.",
    ),
    (
        "dispatch",
        "dispatch",
        "In IREE, a piece of the program compiled into one kernel that the runtime "
        "launches (a `flow.dispatch`).",
    ),
    (
        "broadcast",
        "broadcast",
        "Stretching a tensor's dims of size 1 (and missing leading dims) to "
        "another shape, aligned from the right, as numpy does.",
    ),
)


def glossary_links(source: str, seen: set[str], target: str = GLOSSARY_PAGE) -> str:
    """Markdown `source` with the first use of each glossary term not in `seen` linked to
    its entry (in prose only: code, links, images, headings and HTML are left as they are)."""
    protected = re.compile(
        r"```.*?```|`[^`\n]*`|!?\[[^\]]*\]\([^)]*\)|<[^>\n]+>|^#+ [^\n]*$", re.DOTALL | re.MULTILINE
    )
    parts: list[tuple[str, bool]] = []
    at = 0
    for m in protected.finditer(source):
        parts.append((source[at : m.start()], False))
        parts.append((m.group(0), True))
        at = m.end()
    parts.append((source[at:], False))
    for term, anchor, _ in GLOSSARY:
        if term in seen:
            continue
        word = re.compile(rf"(?<![\w/#.-]){re.escape(term)}(?![\w-])")
        for k, (text, fixed) in enumerate(parts):
            m = None if fixed else word.search(text)
            if m is None:
                continue
            link = f"[{m.group(0)}]({target}#{anchor})"
            parts[k : k + 1] = [(text[: m.start()], False), (link, True), (text[m.end() :], False)]
            seen.add(term)
            break
    return "".join(text for text, _ in parts)


def versions() -> list[tuple[str, str]]:
    """(package, version) of what the pages were built with: Python and the packages the
    notebooks import, those installed."""
    from importlib.metadata import PackageNotFoundError, version

    found = [("Python", sys.version.split()[0])]
    packages = ("passlens", "torch", "transformers", "onnx", "onnxruntime", "apache-tvm",
                "iree-base-compiler", "iree-turbine")  # fmt: skip
    for package in packages:
        try:
            found.append((package, version(package)))
        except PackageNotFoundError:
            continue
    return found


def notebook_title(nb) -> str:
    """The first heading of a notebook, as plain text (links kept as their text)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    text = re.sub(r"\(\[([^\]]*)\]\([^)]*\)\)|\[([^\]]*)\]\([^)]*\)", "", line[2:])
                    return re.sub(r"\s+", " ", text.replace("`", "")).strip()
    return ""


def nav_html(pages: list[tuple[str, str]], current: str | None) -> str:
    """Links to the previous and the next page (`pages`: (stem, title) in reading order), the
    bugs page and the glossary."""
    esc = html_escape
    stems = [s for s, _ in pages]
    links = []
    k = stems.index(current) if current in stems else None
    if k is not None and k > 0:
        s, t = pages[k - 1]
        links.append(f"<a rel='prev' href='{esc(s)}.html'>← {esc(t)}</a>")
    if k is None and pages:  # the bugs page or the glossary: where the pages start
        links.append(f"<a href='{esc(pages[0][0])}.html'>start: {esc(pages[0][1])}</a>")
    links.append(f"<a href='{BUGS_PAGE}'>the bugs (docs/bugs.md)</a>")
    links.append(f"<a href='{GLOSSARY_PAGE}'>glossary</a>")
    if k is not None and k + 1 < len(pages):
        s, t = pages[k + 1]
        links.append(f"<a rel='next' href='{esc(s)}.html'>{esc(t)} →</a>")
    return "<nav class='pl-nav'>" + " · ".join(links) + "</nav>"


def header_html(stem: str) -> str:
    """What the page teaches, what to know first, and the versions it was built with."""
    esc = html_escape
    learn, before = GUIDE.get(stem, ("", ""))
    built = ", ".join(f"{name} {v}" for name, v in versions())
    rows = []
    if learn:
        rows.append(f"<p><b>What you will learn:</b> {esc(learn)}.</p>")
    if before:
        rows.append(f"<p><b>Prerequisites:</b> {esc(before)}.</p>")
    rows.append(f"<p><b>Versions</b> (this page was built with): {esc(built)}.</p>")
    return "<header class='pl-header'>" + "".join(rows) + "</header>"


FRAME_STYLE = (
    "<style>.pl-nav{font:14px/1.6 system-ui,sans-serif;margin:.5rem 0;padding:.4rem .8rem;"
    "background:#f6f8fa;border-radius:4px}.pl-header{font:15px/1.5 system-ui,sans-serif;"
    "margin:.5rem 0 1rem;padding:.5rem .8rem;border-left:4px solid #4a7bd0;background:#f3f6fc}"
    ".pl-header p{margin:.2rem 0}</style>"
)


def framed(page: str, stem: str, pages: list[tuple[str, str]]) -> str:
    """A notebook's page with the navigation at its top and bottom and the header under the
    top one (inside the template's `<main>`)."""
    nav = nav_html(pages, stem)
    top = FRAME_STYLE + nav + header_html(stem)
    page = re.sub(r"<main>", lambda m: m.group(0) + top, page, count=1)
    return re.sub(r"</main>", lambda m: nav + m.group(0), page, count=1)


def glossary_html(pages: list[tuple[str, str]]) -> str:
    """The glossary as one static page: each term with the anchor the pages link to."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    items = "".join(
        f"<dt id='{anchor}'><b>{html_escape(term)}</b></dt><dd>{markdown2html_mistune(text)}</dd>"
        for term, anchor, text in GLOSSARY
    )
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Glossary</title>"
        f"<style>{PAGE_STYLE}</style>{FRAME_STYLE}</head><body>\n{nav_html(pages, None)}"
        f"<h1>Glossary</h1><p>The words the notebooks use before they explain them; each page "
        f"links a term's first use here.</p><dl>{items}</dl>\n</body></html>\n"
    )


def all_pages() -> list[tuple[str, str]]:
    """(stem, title) of every notebook in notebooks/, in reading order."""
    import nbformat

    return [
        (p.stem, notebook_title(nbformat.read(p, as_version=4)) or p.stem)
        for p in sorted(NOTEBOOKS.glob("*.ipynb"))
    ]
