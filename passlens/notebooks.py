"""`make notebooks-html`: the notebooks executed and published as static HTML, readable with
no kernel, no network and no widget manager.

Each notebook runs top to bottom in a fresh `python3` kernel (nbclient) and is converted with
nbconvert's HTML exporter:

- cells tagged `hide` (a notebook's own assertions: its tests, not its lesson) are left out;
- images a markdown cell shows (`img/stepper.png`, the screenshot under a stepper cell) are
  embedded, so one HTML file stands on its own;
- widget outputs are left out with the notebook's widget state: no kernel drives them in a
  static page (the page would load a widget manager from a CDN and still show an empty box).
  A notebook puts a screenshot in a markdown cell under each widget it shows; a progress bar
  (an `HBox` holding an `IntProgress`, shown while a job runs) has nothing to show;
- no script is loaded from the network: the template's require.js and MathJax are left out
  (no notebook uses math, and nothing on the page needs a module loader);
- the code cells are numbered 1, 2, 3 ... as shown (the hidden cells leave no gaps), and the
  machine's paths (the repository's folder, the Python installation's) are written relative;
- docs/bugs.md, which every notebook links, is published beside them as `bugs.html` and the
  notebooks' links to it point there.

    .venv/bin/python -m passlens.notebooks [--out build/notebooks] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import tempfile
import time
from html import escape as html_escape
from html import unescape as html_unescape
from pathlib import Path

from passlens.pages import (
    BUGS_PAGE,
    FRAME_STYLE,
    GLOSSARY_PAGE,
    PAGE_STYLE,
    all_pages,
    framed,
    glossary_html,
    glossary_links,
    nav_html,
)

HIDE_TAG = "hide"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ROOT = NOTEBOOKS.parent
BUGS = ROOT / "docs" / "bugs.md"
_PROGRESS_MODELS = {"IntProgressModel", "FloatProgressModel"}


def execute(nb, cwd: Path, timeout: int = 300) -> str | None:
    """Run `nb` in place in a fresh python3 kernel with `cwd` as its working directory;
    None when every cell ran, else which cell failed, its source and the error."""
    from nbclient import NotebookClient

    from passlens.demo import describe_failure

    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    try:
        client.execute()
    except Exception as e:  # a failed cell, a timeout or a dead kernel
        return describe_failure(nb, e)
    return None


def _widget_models(nb) -> dict:
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {})
    return state.get("state", {}) if isinstance(state, dict) else {}


def is_progress_bar(nb, output) -> bool:
    """Whether a widget output is a progress bar (an HBox with an IntProgress or FloatProgress
    among its children, as `explorer.progress` shows while a job runs)."""
    models = _widget_models(nb)
    view = output.get("data", {}).get(WIDGET_VIEW) or {}
    model = models.get(view.get("model_id"), {})
    if model.get("model_name") != "HBoxModel":
        return False
    children = model.get("state", {}).get("children", [])
    ids = [c.removeprefix("IPY_MODEL_") for c in children if isinstance(c, str)]
    return any(models.get(i, {}).get("model_name") in _PROGRESS_MODELS for i in ids)


def widget_cells(nb) -> list[int]:
    """Indices of the code cells that show a widget other than a progress bar (a stepper):
    in a static page each needs a screenshot in the markdown cell below it."""
    out = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        views = [o for o in cell.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]
        if any(not is_progress_bar(nb, o) for o in views):
            out.append(k)
    return out


_LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")


def _relink(source: str, folder: Path, page_dir: Path) -> str:
    """Markdown links of a notebook in `folder`, for its page in `page_dir`: a sibling
    notebook becomes its page (`01_x.ipynb` -> `01_x.html`), any other relative link
    points to the same file from the page's folder (docs/bugs.md to its page, `bugs.html`,
    published beside); absolute links and images (embedded) are kept."""

    def fix(m: re.Match) -> str:
        target = m.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return m.group(0)
        start = m.start()
        if start > 0 and source.rfind("![", 0, start) > source.rfind("]", 0, start):
            return m.group(0)  # the closing bracket of an image: embedded, not a link
        path = folder / target
        if path.suffix == ".ipynb" and path.parent.resolve() == folder.resolve():
            new = path.with_suffix(".html").name
        elif path.resolve() == BUGS.resolve():
            new = BUGS_PAGE
        else:
            new = os.path.relpath(path, page_dir)
        return m.group(1) + new.replace(os.sep, "/") + m.group(3)

    return _LINK.sub(fix, source)


def _machine_paths() -> list[tuple[str, str]]:
    """(path, what to write instead) for the folders of this machine a page must not show:
    the repository (its files named from its root) and the Python installation."""
    pairs = [(str(ROOT) + os.sep, "")]
    for prefix in {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.__file__))}:
        if prefix and prefix != os.sep:
            pairs.append((prefix + os.sep, "<python>" + os.sep))
    home = os.path.expanduser("~")
    if home and home != os.sep:
        pairs.append((home + os.sep, "~" + os.sep))
    return sorted(pairs, key=lambda p: -len(p[0]))  # the longest (most specific) first


def _without_machine_paths(text: str, pairs: list[tuple[str, str]]) -> str:
    for path, instead in pairs:
        text = text.replace(path, instead)
    return text


def _scrub_output(output, pairs) -> None:
    if output.get("output_type") == "stream":
        output["text"] = _without_machine_paths(output.get("text", ""), pairs)
    elif output.get("output_type") == "error":
        lines = output.get("traceback", [])
        output["traceback"] = [_without_machine_paths(t, pairs) for t in lines]
        output["evalue"] = _without_machine_paths(output.get("evalue", ""), pairs)
    data = output.get("data", {})
    for kind in ("text/plain", "text/html"):
        if isinstance(data.get(kind), str):
            data[kind] = _without_machine_paths(data[kind], pairs)


def static_copy(
    nb, folder: Path | None = None, page_dir: Path | None = None, glossary: bool = False
):
    """A copy of an executed notebook for a static page: widget outputs and the widget state
    left out (the cells tagged `hide` are left out by the exporter), the shown code cells
    numbered 1, 2, 3 ..., this machine's paths written relative; with `folder` (the
    notebook's) and `page_dir` (the page's), relative links relinked for the page; with
    `glossary`, the first use of each glossary term in the prose linked to its entry."""
    nb = copy.deepcopy(nb)
    seen: set[str] = set()
    nb.metadata.pop("widgets", None)
    pairs = _machine_paths()
    shown = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})]
            for o in cell.outputs:
                _scrub_output(o, pairs)
            if HIDE_TAG in cell.get("metadata", {}).get("tags", []):
                continue
            if cell.get("execution_count") is not None:
                shown += 1
                cell.execution_count = shown
                for o in cell.outputs:
                    if o.get("output_type") == "execute_result":
                        o["execution_count"] = shown
        elif cell.cell_type == "markdown":
            if folder is not None and page_dir is not None:
                cell.source = _relink(cell.source, folder, page_dir)
            if glossary and HIDE_TAG not in cell.get("metadata", {}).get("tags", []):
                cell.source = glossary_links(cell.source, seen)
    return nb


# the template's scripts from a CDN: require.js and MathJax (a src on the network), MathJax's
# configuration, and the loader that imports mermaid from a CDN when a page has a diagram
_NETWORK_SCRIPT = re.compile(
    r"""<script\b[^>]*\bsrc=["']https?://[^"']*["'][^>]*>\s*</script>\s*"""
    r"""|<script\b[^>]*type=["']text/x-mathjax-config["'][^>]*>.*?</script>\s*"""
    r"""|<script\b[^>]*>(?:(?!</script>).)*?\bimport\((?:(?!</script>).)*?https?://.*?</script>\s*""",
    re.DOTALL | re.IGNORECASE,
)


def without_network_scripts(page: str) -> str:
    """`page` without a `<script>` loaded from the network (a page that stands alone)."""
    return _NETWORK_SCRIPT.sub("", page)


def to_html(
    nb,
    images: Path = NOTEBOOKS,
    page_dir: Path | None = None,
    name: str | None = None,
    pages: list[tuple[str, str]] | None = None,
) -> str:
    """An executed notebook as one static HTML page (nbconvert's lab template): cells tagged
    `hide` left out, widget outputs left out, markdown images read from `images` (the
    notebooks' folder) and embedded; with `page_dir` (where the page goes), relative links
    relinked from there (a sibling notebook to its page). With `name` (the notebook's stem)
    it is a published page: links to the previous and next of `pages` ((stem, title) in
    reading order; default every notebook's), the bugs page and the glossary at its top and
    bottom, a header (what you will learn, prerequisites, the versions it was built with), and
    each glossary term linked at its first use."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    exporter.register_preprocessor(
        TagRemovePreprocessor(remove_cell_tags={HIDE_TAG}, enabled=True), enabled=True
    )
    body, _ = exporter.from_notebook_node(
        static_copy(nb, images, page_dir, glossary=name is not None),
        resources={"metadata": {"path": str(images)}},
    )
    if name is not None:
        body = framed(body, name, pages if pages is not None else all_pages())
    return without_network_scripts(body)


def _slug(heading: str) -> str:
    """The anchor a code host gives a Markdown heading (what the notebooks link to)."""
    text = re.sub(r"<[^>]+>", "", heading)
    return re.sub(r"[^\w\- ]", "", html_unescape(text).strip().lower()).replace(" ", "-")


def bugs_html(path: Path = BUGS, pages: list[tuple[str, str]] | None = None) -> str:
    """docs/bugs.md as one static HTML page (no script), each heading with the anchor the
    notebooks link to; links to the notebooks point to their pages beside it, and it ends with
    a link to every page (`pages`: (stem, title); default every notebook's)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    text = path.read_text(encoding="utf-8")
    body = markdown2html_mistune(text)
    body = re.sub(r'<a class="anchor-link"[^>]*>.*?</a>', "", body)  # nbconvert's own anchors

    def anchor(m: re.Match) -> str:
        return f'<h{m.group(1)} id="{_slug(m.group(2))}">{m.group(2)}</h{m.group(1)}>'

    body = re.sub(r"<h([1-6])[^>]*>(.*?)</h\1>", anchor, body, flags=re.DOTALL)
    body = re.sub(r'href="(?:\.\./)?notebooks/([\w-]+)\.ipynb', r'href="\1.html', body)
    title = re.search(r"<h1[^>]*>(.*?)</h1>", body, re.DOTALL)
    name = re.sub(r"<[^>]+>", "", title.group(1)) if title else "docs/bugs.md"
    pages = pages if pages is not None else all_pages()
    items = "".join(
        f"<li><a href='{html_escape(s)}.html'>{html_escape(t or s)}</a></li>" for s, t in pages
    )
    listing = f"<h2 id='the-notebooks-pages'>The notebooks' pages</h2><ul>{items}</ul>"
    nav = nav_html(pages, None)
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{name}</title>"
        f"<style>{PAGE_STYLE}</style>{FRAME_STYLE}</head><body>\n{nav}{body}\n{listing}"
        f"{nav}\n</body></html>\n"
    )


def publish(paths: list[Path], out: Path) -> int:
    """Execute each notebook and write `out/<name>.html`; returns a process exit code (1 when
    a notebook failed: the others are still written)."""
    import nbformat

    from passlens.demo import kernel_problem

    problem = kernel_problem()
    if problem:
        print(f"notebooks-html: {problem}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    pages = all_pages()
    bugs = out / BUGS_PAGE
    bugs.write_text(bugs_html(pages=pages), encoding="utf-8")
    print(f"{bugs} (docs/bugs.md, which the notebooks link)", flush=True)
    glossary = out / GLOSSARY_PAGE
    glossary.write_text(glossary_html(pages), encoding="utf-8")
    print(f"{glossary} (the terms the pages link at their first use)", flush=True)
    failed = 0
    for path in paths:
        start = time.perf_counter()
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory() as cwd:  # what a notebook writes stays out of the repo
            failure = execute(nb, Path(cwd))
        if failure:
            failed += 1
            print(f"{path.name}: FAILED\n{failure}", file=sys.stderr)
            continue
        target = out / (path.stem + ".html")
        page = to_html(nb, images=path.parent, page_dir=out, name=path.stem, pages=pages)
        target.write_text(page, encoding="utf-8")
        seconds = time.perf_counter() - start
        print(f"{target} ({target.stat().st_size / 1e6:.1f} MB, {seconds:.0f} s)", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--out", type=Path, default=Path("build/notebooks"))
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print(f"notebooks-html: no notebook at {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    return publish(paths, args.out)


if __name__ == "__main__":
    sys.exit(main())
